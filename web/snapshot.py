"""Snapshots: one version of everything served, its responses encoded and compressed once per data load.

The store (reviews/dataset.py's DataStore) builds one with `build_snapshot` for every data version and
swaps it in whole, so a request, a tool call or a hub delivery reads one version from start to end.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import islice
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from werkzeug.http import http_date

from ..config import Config
from ..pages import (
    PAGE_HEADERS,
    WIDGET_HEADERS,
    Site,
    WidgetOptions,
    render_home,
    render_review,
    render_review_not_found,
    render_widget,
)
from ..pages.render import HOME_REVIEWS
from ..reviews.dataset import Dataset
from ..reviews.search import SincePage, since_result_parts
from ..surface import ATOM_FEED, HOME, HUB, INSIGHTS_JSON, JSON_FEED, OPENAPI, REVIEWS_JSON, TOPICS
from . import feeds
from .gzip_slices import SegmentedDeflate, gzip_slice, segment
from .payloads import ATOM, FEED_JSON, JSON, READ_HEADERS, LateGzip, Payload, make_payload, sliced_payload

FEED_LENGTH = 50
TOPIC_PATHS = TOPICS  # the name callers used before surface.py declared the topics
# Review permalinks and widget variants kept per snapshot, each rendered when first asked.
PAGE_CACHE_ENTRIES = 1024
HTML = PAGE_HEADERS[0][1]  # text/html; charset=utf-8


def last_modified(generated_at: str, now: datetime) -> datetime:
    """A data file's generated_at as Last-Modified, but never after `now` (RFC 9110 8.8.2.1: a
    modification time in the future, from a producer whose clock runs ahead, is replaced by now)."""
    return min(datetime.fromisoformat(generated_at.replace("Z", "+00:00")), now)


def _deflate_stream(dataset: Dataset) -> SegmentedDeflate:
    """The reviews' shared deflate stream, made by the first gzip since answer of a data version (0.1 s at
    10,000 reviews) and kept with its dataset."""
    return segment(dataset.reviews_document, dataset.review_offsets)


def link_header(config: Config, topic_path: str) -> str:
    return f'<{config.url(HUB)}>; rel="hub", <{config.url(topic_path)}>; rel="self"'


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One version of everything served: the dataset, its precomputed responses, the pages rendered so far."""

    dataset: Dataset
    payloads: Mapping[str, Payload]
    site: Site
    review_missing: bytes = b""  # the 404 page of /reviews/{id} for an unknown id
    _since_headers: tuple[tuple[str, str], ...] = ()  # a since answer's, but its ETag and length
    _pages: OrderedDict[object, Payload] = field(default_factory=OrderedDict)  # bounded in entries
    _widgets: OrderedDict[object, Payload] = field(default_factory=OrderedDict)  # at most 150 variants
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def topic(self, path: str) -> Payload:
        return self.payloads[path]

    def since(self, page: SincePage, gzip: bool = False) -> Payload:
        """The answer holding `page` (search.since_page: every review since a date, or one page of them): a
        slice of the newest-first /reviews.json body, so any date costs microseconds and no memory of its own
        (it was built and cached per date: 0.5 s and 50 MB at 100,000 reviews). Tagged by this data version
        and the range, which with the date fix the rest of the body. With `gzip`, the gzip coding too, made
        mostly of a view of the body's shared deflate stream (web/gzip_slices.py)."""
        reviews = self.payloads[REVIEWS_JSON]
        paged = "-p" if page.paged else ""
        etag = f'{reviews.identity.etag[:-1]}-{page.since}-{page.count}-{page.start}-{page.stop}{paged}"'
        prefix, view, suffix = since_result_parts(self.dataset, page)
        if not gzip:
            return sliced_payload((prefix, view, suffix), etag, self._since_headers, reviews.last_modified)
        offsets = self.dataset.review_offsets
        start, stop = (offsets[page.start], offsets[page.stop] - 1) if page.stop > page.start else (0, 0)
        gzipped = gzip_slice(prefix, start, stop, suffix, self.dataset.derived(_deflate_stream))
        return sliced_payload(
            (prefix, view, suffix), etag, self._since_headers, reviews.last_modified, gzipped_parts=gzipped
        )

    def review_page(self, review_id: str) -> Payload | None:
        """The permalink page of one review (None if there is no such review), rendered when first asked.

        Rendering every page at load would cost about 14 s at 100,000 reviews; a permalink is 0.14 ms.
        """
        position = self.dataset.position_of.get(review_id)
        if position is None:
            return None
        return self._page(
            ("review", review_id),
            lambda: page_payload(
                render_review(self.dataset.reviews[position], pages_document(self.dataset, ()), self.site),
                PAGE_HEADERS,
                self.payloads[REVIEWS_JSON].last_modified,
            ),
        )

    def has_review_page(self, review_id: str) -> bool:
        """Whether that permalink page is rendered already (a lookup; an evicted one is rendered again)."""
        return ("review", review_id) in self._pages

    def widget(self, options: WidgetOptions) -> Payload:
        """/widget with these options, rendered when first asked (150 possible variants), kept apart from the
        permalinks so that a sweep over review ids cannot evict them (issue 39: 8,578 to 1,560 req/s)."""
        return self._page(options, lambda: widget_payload(self, options), self._widgets)

    def _page(
        self, key: object, render: Callable[[], Payload], pages: OrderedDict[object, Payload] | None = None
    ) -> Payload:
        pages = self._pages if pages is None else pages
        with self._lock:
            if key in pages:
                pages.move_to_end(key)
                return pages[key]
        payload = render()
        with self._lock:
            pages[key] = payload
            if len(pages) > PAGE_CACHE_ENTRIES:
                pages.popitem(last=False)
        return payload

    def compress_late(self) -> None:
        """Make the data files' gzip codings that `gzip_later` left for later; identity is served until
        they are made."""
        for payload in self.payloads.values():
            if isinstance(payload.gzipped, LateGzip):
                payload.gzipped.compress()


class Document(NamedTuple):
    """A body served as it is at a path of its own (a part's document the snapshot precomputes for it)."""

    body: bytes
    content_type: str


def no_documents(dataset: Dataset) -> Mapping[str, Document]:
    return {}


def build_snapshot(
    dataset: Dataset,
    config: Config,
    openapi: Payload,
    gzip_later: bool = False,
    documents: Callable[[Dataset], Mapping[str, Document]] = no_documents,
) -> Snapshot:
    """Encode and compress every static body of this data version, once: the data files, the feeds, `/`, and
    the `documents` other parts serve (MCP discovery); the OpenAPI document's is the same for all."""
    now = datetime.now(timezone.utc)
    reviews_modified = last_modified(dataset.reviews_doc["generated_at"], now)
    insights_modified = last_modified(dataset.insights_doc["generated_at"], now)
    feed_site = feeds.FeedSite(config.public_base_url, dataset.business)
    newest = dataset.reviews[:FEED_LENGTH]
    bodies = {
        REVIEWS_JSON: (dataset.reviews_document, JSON, reviews_modified, gzip_later),
        INSIGHTS_JSON: (dataset.insights_document, JSON, insights_modified, gzip_later),
        JSON_FEED: (feeds.render_json_feed(newest, feed_site), FEED_JSON, reviews_modified, False),
        ATOM_FEED: (feeds.render_atom_feed(newest, feed_site), ATOM, reviews_modified, False),
        **{path: (doc.body, doc.content_type, None, False) for path, doc in documents(dataset).items()},
    }
    payloads = {
        path: make_payload(
            body,
            ctype,
            modified,
            [("Link", link_header(config, path))] if path in TOPIC_PATHS else [],
            gzip_later=later,
        )
        for path, (body, ctype, modified, later) in bodies.items()
    }
    site = Site(config.public_base_url)
    home = render_home(pages_document(dataset, dataset.reviews[:HOME_REVIEWS]), dataset.insights_doc, site)
    payloads[HOME] = page_payload(home, PAGE_HEADERS, max(reviews_modified, insights_modified))
    since_headers = (
        ("Content-Type", JSON),
        *READ_HEADERS,
        ("Last-Modified", http_date(reviews_modified)),
        ("Vary", "Accept-Encoding"),
    )
    missing = render_review_not_found(pages_document(dataset, ()), site)
    return Snapshot(
        dataset,
        {**payloads, OPENAPI: openapi},
        site,
        review_missing=missing,
        _since_headers=since_headers,
    )


def pages_document(dataset: Dataset, reviews: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """reviews.json's document as the page renderers read it, with only the `reviews` a page shows."""
    return {**dataset.reviews_doc, "reviews": list(reviews)}


def page_payload(body: bytes, headers: Sequence[tuple[str, str]], modified: datetime | None) -> Payload:
    """A page precomputed like the JSON answers (ETag, 304, gzip), with the page's security headers."""
    return make_payload(body, HTML, modified, [h for h in headers if h[0] != "Content-Type"])


def widget_payload(snapshot: Snapshot, options: WidgetOptions) -> Payload:
    dataset = snapshot.dataset
    # The reviews are newest first: the first `count` rated high enough are the widget's.
    kept = (p for p, rating in enumerate(dataset.ratings) if rating >= options.min_rating)
    reviews = [dataset.reviews[p] for p in islice(kept, options.count)]
    body = render_widget(pages_document(dataset, reviews), options, snapshot.site)
    return page_payload(body, WIDGET_HEADERS, snapshot.payloads[REVIEWS_JSON].last_modified)
