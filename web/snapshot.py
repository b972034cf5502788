"""Snapshots: one version of everything served, its responses encoded and compressed once per data load.

The store (reviews/dataset.py's DataStore) builds one with `build_snapshot` for every data version and
swaps it in whole, so a request, a tool call or a hub delivery reads one version from start to end.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Mapping

from ..config import Config
from ..mcpserver.card import AI_CATALOG_PATH, SERVER_CARD, SERVER_CARD_PATHS, ai_catalog, server_card
from ..reviews.dataset import Dataset, encode_json
from ..reviews.search import SincePage, since_result_json
from . import feeds
from .feeds import HUB_PATH, OPENAPI_PATH
from .payloads import ATOM, FEED_JSON, JSON, LateGzip, Payload, make_payload

FEED_LENGTH = 50
TOPIC_PATHS = ("/feed.xml", "/api/feed.json", "/reviews.json")
SINCE_CACHE_ENTRIES = 64
SINCE_CACHE_BYTES = 64 << 20


def last_modified(generated_at: str, now: datetime) -> datetime:
    """A data file's generated_at as Last-Modified, but never after `now` (RFC 9110 8.8.2.1: a
    modification time in the future, from a producer whose clock runs ahead, is replaced by now)."""
    return min(datetime.fromisoformat(generated_at.replace("Z", "+00:00")), now)


def link_header(config: Config, topic_path: str) -> str:
    return f'<{config.url(HUB_PATH)}>; rel="hub", <{config.url(topic_path)}>; rel="self"'


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One version of everything served: the dataset, its precomputed responses and the since-answers last asked."""

    dataset: Dataset
    payloads: Mapping[str, Payload]
    _since: OrderedDict[SincePage, Payload] = field(
        default_factory=OrderedDict
    )  # bounded in entries and bytes
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def topic(self, path: str) -> Payload:
        return self.payloads[path]

    def since(self, page: SincePage) -> Payload:
        """The answer holding `page` (search.since_page: every review since a date, or one page of them)."""
        with self._lock:
            if page in self._since:
                self._since.move_to_end(page)
                return self._since[page]
        payload = make_payload(
            since_result_json(self.dataset, page), JSON, self.payloads["/reviews.json"].last_modified
        )
        with self._lock:
            self._since[page] = payload
            while len(self._since) > 1 and (
                len(self._since) > SINCE_CACHE_ENTRIES or self._since_bytes() > SINCE_CACHE_BYTES
            ):
                self._since.popitem(last=False)
        return payload

    def _since_bytes(self) -> int:
        return sum(
            len(p.identity.body) + (len(p.gzipped.body) if p.gzipped else 0) for p in self._since.values()
        )

    def compress_late(self) -> None:
        """Make the data files' gzip codings left for later by `gzip_later` (identity is served until then)."""
        for payload in self.payloads.values():
            if isinstance(payload.gzipped, LateGzip):
                payload.gzipped.compress()


def discovery_bodies(dataset: Dataset, config: Config) -> dict[str, tuple[bytes, str, None, bool]]:
    """The MCP server card at both its paths, and the AI Catalog listing it: what discovery reads."""
    base = config.public_base_url
    card = encode_json(server_card(dataset.business, base))
    catalog = encode_json(ai_catalog(dataset.business, base, config.url(OPENAPI_PATH)))
    return {
        **{path: (card, SERVER_CARD, None, False) for path in SERVER_CARD_PATHS},
        AI_CATALOG_PATH: (catalog, JSON, None, False),
    }


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
        **discovery_bodies(dataset, config),
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
    return Snapshot(dataset, {**payloads, OPENAPI_PATH: openapi})
