"""Snapshots: one version of everything served, its responses encoded and compressed once per data load.

The store (reviews/dataset.py's DataStore) builds one with `build_snapshot` for every data version and
swaps it in whole, so a request, a tool call or a hub delivery reads one version from start to end.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Mapping

from werkzeug.http import http_date

from ..config import Config
from ..reviews.dataset import Dataset
from ..reviews.search import since_result_parts, since_window
from . import feeds
from .feeds import HUB_PATH, OPENAPI_PATH
from .payloads import ATOM, FEED_JSON, JSON, READ_HEADERS, LateGzip, Payload, make_payload, sliced_payload

FEED_LENGTH = 50
TOPIC_PATHS = ("/feed.xml", "/api/feed.json", "/reviews.json")


def last_modified(generated_at: str, now: datetime) -> datetime:
    """A data file's generated_at as Last-Modified, but never after `now` (RFC 9110 8.8.2.1: a
    modification time in the future, from a producer whose clock runs ahead, is replaced by now)."""
    return min(datetime.fromisoformat(generated_at.replace("Z", "+00:00")), now)


def link_header(config: Config, topic_path: str) -> str:
    return f'<{config.url(HUB_PATH)}>; rel="hub", <{config.url(topic_path)}>; rel="self"'


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One version of everything served: the dataset and its precomputed responses."""

    dataset: Dataset
    payloads: Mapping[str, Payload]
    _since_headers: tuple[tuple[str, str], ...] = ()  # a since answer's, but its ETag and length

    def topic(self, path: str) -> Payload:
        return self.payloads[path]

    def since(self, date: str) -> Payload:
        """The since answer: a slice of the newest-first /reviews.json body, so any date costs microseconds
        and no memory of its own (it was built and cached per date: 0.5 s and 50 MB at 100,000 reviews)."""
        lo, hi = since_window(self.dataset, date)
        return self.since_range(date, hi - lo, lo, hi)

    def since_range(self, date: str, count: int, start: int, stop: int) -> Payload:
        """The since answer holding the reviews at positions [start, stop) of the `count` dated on or after
        `date`; tagged by this data version and the range, since the date fixes the rest of the body."""
        reviews = self.payloads["/reviews.json"]
        etag = f'{reviews.identity.etag[:-1]}-{date}-{count}-{start}-{stop}"'
        parts = since_result_parts(self.dataset, date, count, start, stop)
        return sliced_payload(parts, etag, self._since_headers, reviews.last_modified)

    def compress_late(self) -> None:
        """Make the data files' gzip codings left for later by `gzip_later` (identity is served until then)."""
        for payload in self.payloads.values():
            if isinstance(payload.gzipped, LateGzip):
                payload.gzipped.compress()


def build_snapshot(dataset: Dataset, config: Config, openapi: Payload, gzip_later: bool = False) -> Snapshot:
    """Encode and compress every static body of this data version, once; the OpenAPI document's is the same for all."""
    now = datetime.now(timezone.utc)
    reviews_modified = last_modified(dataset.reviews_doc["generated_at"], now)
    insights_modified = last_modified(dataset.insights_doc["generated_at"], now)
    site = feeds.FeedSite(config.public_base_url, dataset.business)
    newest = dataset.reviews[:FEED_LENGTH]
    bodies = {
        "/reviews.json": (dataset.reviews_document[0], JSON, reviews_modified, gzip_later),
        "/insights.json": (dataset.insights_document, JSON, insights_modified, gzip_later),
        "/api/feed.json": (feeds.render_json_feed(newest, site), FEED_JSON, reviews_modified, False),
        "/feed.xml": (feeds.render_atom_feed(newest, site), ATOM, reviews_modified, False),
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
    since_headers = (
        ("Content-Type", JSON),
        *READ_HEADERS,
        ("Last-Modified", http_date(reviews_modified)),
        ("Vary", "Accept-Encoding"),  # as every read answer, though a slice is always identity
    )
    return Snapshot(dataset, {**payloads, OPENAPI_PATH: openapi}, since_headers)
