"""HTTP representations computed once per data load, and the answers built from them.

A `Payload` holds a body in both content-codings, each with its own strong ETag and complete header
list, so that answering a GET, a HEAD or a 304 is a lookup plus werkzeug's conditional-request check.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from werkzeug.datastructures import Accept
from werkzeug.http import http_date, parse_accept_header
from werkzeug.sansio.http import is_resource_modified

from ..reviews.dataset import encode_json
from ..surface import GZIP_MIN_BYTES, READ_HEADERS  # noqa: F401 (GZIP_MIN_BYTES: importable from here)
from .responses import Headers, Parts, Triple

JSON = "application/json; charset=utf-8"
FEED_JSON = "application/feed+json; charset=utf-8"
ATOM = "application/atom+xml; charset=utf-8"


@dataclass(frozen=True)
class Variant:
    """One content-coding of a payload: body, strong ETag and the headers to send with it."""

    body: bytes | Parts
    etag: str  # quoted, e.g. "\"3f2a...\""
    headers: tuple[tuple[str, str], ...]  # for 200 and HEAD
    not_modified_headers: tuple[tuple[str, str], ...]  # for 304


@dataclass(frozen=True)
class Payload:
    identity: Variant
    gzipped: "Variant | LateGzip | None"
    content_type: str
    last_modified: datetime | None

    def variant(self, accept_encoding: str | None) -> Variant:
        gzipped = self.gzipped.variant if isinstance(self.gzipped, LateGzip) else self.gzipped
        if gzipped is not None and accept_encoding and accepts_gzip(accept_encoding):
            return gzipped
        return self.identity


@dataclass(eq=False)
class LateGzip:
    """A gzip variant made later (`compress()`, on a first start after READY); until then, identity is served.

    Identity, with its own ETag and `Vary: Accept-Encoding`, answers a gzip request just as well
    (RFC 9110 12.5.3).
    """

    body: bytes  # the identity body, to compress
    etag: str
    headers: Headers
    variant: Variant | None = None

    def compress(self) -> None:
        if self.variant is None:
            self.variant = _variant(gzip_body(self.body), self.etag, self.headers)


def make_payload(
    body: bytes,
    content_type: str,
    last_modified: datetime | None = None,
    extra_headers: Sequence[tuple[str, str]] = (),
    gzip_later: bool = False,
) -> Payload:
    """Encode a body once for every request that will ask for it, strongly tagged by its hash."""
    tag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    common: Headers = [("Content-Type", content_type), *READ_HEADERS, *extra_headers]
    if last_modified is not None:
        common.append(("Last-Modified", http_date(last_modified)))
    common.append(("Vary", "Accept-Encoding"))
    gzipped: Variant | LateGzip | None = None
    if len(body) >= GZIP_MIN_BYTES:
        gzip_tag = tag[:-1] + '-gzip"'  # the two codings are different representations (RFC 9110 8.8.3)
        gzip_headers = common + [("Content-Encoding", "gzip")]
        gzipped = (
            LateGzip(body, gzip_tag, gzip_headers)
            if gzip_later
            else _variant(gzip_body(body), gzip_tag, gzip_headers)
        )
    return Payload(_variant(body, tag, common), gzipped, content_type, last_modified)


def sliced_payload(
    parts: Parts,
    etag: str,
    headers: Sequence[tuple[str, str]],
    last_modified: datetime | None,
    gzipped_parts: Parts | None = None,
) -> Payload:
    """A payload whose body is parts, mostly a view of a shared body: made per request in microseconds, with
    no copy of the view; and its gzip coding, if given, in parts likewise (web/gzip_slices.py)."""
    content_type = next(value for name, value in headers if name == "Content-Type")
    gzipped = None
    if gzipped_parts is not None:
        gzip_headers = [*headers, ("Content-Encoding", "gzip")]
        gzipped = _variant(gzipped_parts, etag[:-1] + '-gzip"', gzip_headers)
    return Payload(_variant(parts, etag, list(headers)), gzipped, content_type, last_modified)


def body_length(body: bytes | memoryview | Parts) -> int:
    return sum(map(len, body)) if type(body) is tuple else len(body)


def gzip_body(body: bytes) -> bytes:
    """The gzip coding of a body (mtime 0, so equal bodies give equal bytes).

    Level 9 for small bodies (the feeds); 6 from 64 KiB, where 9 costs several times the CPU for about 1% less
    (since-answers are compressed when first asked for, so their cost is a request's latency).
    """
    return gzip.compress(body, compresslevel=9 if len(body) < 64 << 10 else 6, mtime=0)


# What a 304 repeats of a 200's headers.
NOT_MODIFIED_HEADERS = frozenset(
    {
        "Cache-Control",
        "Vary",
        "ETag",
        "Last-Modified",
        "Access-Control-Allow-Origin",
        "Access-Control-Expose-Headers",
        "Link",
    }
)


def _variant(body: bytes, etag: str, headers: Headers) -> Variant:
    with_tag = [*headers, ("ETag", etag)]
    return Variant(
        body,
        etag,
        tuple(with_tag + [("Content-Length", str(body_length(body)))]),
        tuple((k, v) for k, v in with_tag if k in NOT_MODIFIED_HEADERS),
    )


@lru_cache(maxsize=512)
def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding value allows gzip (q > 0).

    RFC 9110 12.5.3: "x-gzip" is "gzip", and "*" stands only for the codings not listed, so
    `gzip;q=0, *` refuses gzip.
    """
    accept = parse_accept_header(accept_encoding, Accept)
    listed = [quality for coding, quality in accept if coding.lower() in ("gzip", "x-gzip")]
    return max(listed or [quality for coding, quality in accept if coding == "*"] or [0]) > 0


def is_not_modified(environ: Mapping[str, Any], variant: Variant, last_modified: datetime | None) -> bool:
    """RFC 9110 13.1: If-None-Match (weak comparison, lists, *) wins over If-Modified-Since."""
    inm = environ.get("HTTP_IF_NONE_MATCH")
    ims = environ.get("HTTP_IF_MODIFIED_SINCE")
    if inm is None and ims is None:
        return False
    if inm == variant.etag:  # what a cache sends back: skip parsing
        return True
    return not is_resource_modified(
        http_if_none_match=inm,
        http_if_modified_since=None if inm is not None else ims,
        etag=variant.etag,
        last_modified=last_modified,
    )


def answer(environ: Mapping[str, Any], payload: Payload) -> Triple:
    """Status, headers and body for a GET of a precomputed payload (the app drops bodies for HEAD)."""
    variant = payload.variant(environ.get("HTTP_ACCEPT_ENCODING"))
    if is_not_modified(environ, variant, payload.last_modified):
        return "304 Not Modified", list(variant.not_modified_headers), b""
    body = variant.body
    # A view: the body is the payload's, shared by every request for it, not this request's output.
    return "200 OK", list(variant.headers), body if type(body) is tuple else memoryview(body)


def error_document(code: str, message: str, issues: Iterable[Mapping[str, Any]] | None = None) -> bytes:
    """The one error body: {"error", "message"} and, for invalid parameters, "issues"."""
    document: dict[str, Any] = {"error": code, "message": message}
    if issues is not None:
        document["issues"] = list(issues)
    return encode_json(document)
