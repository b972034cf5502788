"""HTTP representations computed once per data load, and the answers built from them.

A `Payload` holds a body in both content-codings (identity and gzip), each with
its own strong ETag and its complete header list, so that answering a GET, a HEAD
or a 304 is a lookup plus werkzeug's conditional-request check.
"""

from __future__ import annotations

import hashlib
import struct
import threading
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

from werkzeug.datastructures import Accept
from werkzeug.http import HTTP_STATUS_CODES, http_date, parse_accept_header
from werkzeug.sansio.http import is_resource_modified

from dataset import encode_json, shared_pool

JSON = "application/json; charset=utf-8"
FEED_JSON = "application/feed+json; charset=utf-8"
ATOM = "application/atom+xml; charset=utf-8"
CACHE_CONTROL = "public, max-age=60"
# Headers every read response carries (CORS and caching), added in this one place.
READ_HEADERS: tuple[tuple[str, str], ...] = (
    ("Cache-Control", CACHE_CONTROL),
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Expose-Headers", "ETag, Last-Modified, Link"),
)
GZIP_MIN_BYTES = 512
Headers = list[tuple[str, str]]
# A plain WSGI answer: status line, headers, body (what the app's handlers return instead of a Response).
Triple = tuple[str, Headers, bytes]
# RFC 9110's reason phrases where werkzeug's table keeps older names; a werkzeug Response
# would also upper-case them ("202 ACCEPTED").
_REASON_PHRASES = {**HTTP_STATUS_CODES, 413: "Content Too Large", 414: "URI Too Long"}


def status_line(status: int) -> str:
    """The WSGI status of a plain answer, as "202 Accepted"."""
    return f"{status} {_REASON_PHRASES.get(status, 'Unknown')}"


@dataclass(frozen=True)
class Variant:
    """One content-coding of a payload: body, strong ETag and the headers to send with it."""

    body: bytes
    etag: str  # quoted, e.g. "\"3f2a...\""
    headers: tuple[tuple[str, str], ...]  # for 200 and HEAD
    not_modified_headers: tuple[tuple[str, str], ...]  # for 304


@dataclass(frozen=True)
class Payload:
    identity: Variant
    gzipped: "Variant | PendingVariant | None"
    content_type: str
    last_modified: datetime | None

    def variant(self, accept_encoding: str | None) -> "Variant | PendingVariant":
        if self.gzipped is not None and accept_encoding and accepts_gzip(accept_encoding):
            return self.gzipped
        return self.identity

    def settled(self) -> "Payload":
        """This payload with its gzip variant complete (waiting for the compression if still running)."""
        if isinstance(self.gzipped, PendingVariant):
            return replace(self, gzipped=self.gzipped.finished())
        return self


def strong_etag(body: bytes, suffix: str = "") -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + suffix + '"'


def make_payload(
    body: bytes,
    content_type: str,
    last_modified: datetime | None = None,
    extra_headers: Sequence[tuple[str, str]] = (),
    etag: str | None = None,
    compress: bool = True,
    precomputed: "Precomputed | None" = None,
    wait: bool = True,
) -> Payload:
    """Encode a body once for every request that will ask for it.

    `etag` overrides the hash of the body (for bodies too large to hash per
    request); the gzip variant gets the same tag with a `-gzip` suffix, because
    the two codings are different representations (RFC 9110 8.8.3).
    `precomputed` (for this body) supplies the tag and the gzip bytes; with `wait`
    False and its compression still running, the gzip variant is a PendingVariant.
    """
    if precomputed is not None and compress:
        tag = precomputed.etag()
        pending = not wait and precomputed.compressing() and len(body) >= GZIP_MIN_BYTES
        compressed = None if pending else precomputed.compressed()
    else:
        tag, pending = etag or strong_etag(body), False
        compressed = gzip_body(body) if compress else None
    common: Headers = [("Content-Type", content_type), *READ_HEADERS, *extra_headers]
    if last_modified is not None:
        common.append(("Last-Modified", http_date(last_modified)))
    gzipped: Variant | PendingVariant | None = None
    if compress:
        common.append(("Vary", "Accept-Encoding"))
        gzip_tag, gzip_headers = tag[:-1] + '-gzip"', common + [("Content-Encoding", "gzip")]
        if pending:
            assert precomputed is not None
            gzipped = PendingVariant(gzip_tag, gzip_headers, precomputed.compressed)
        elif compressed is not None:
            gzipped = _variant(compressed, gzip_tag, gzip_headers)
    return Payload(_variant(body, tag, common), gzipped, content_type, last_modified)


def gzip_body(body: bytes, pool: ThreadPoolExecutor | None = None) -> bytes | None:
    """The gzip coding of a body (None below GZIP_MIN_BYTES, where it is not worth it).

    A body over GZIP_BLOCK bytes is compressed block by block, each block with the
    32 KiB before it as the dictionary and ended by a sync flush, so that the blocks'
    outputs joined are one deflate stream (as pigz makes it): on a `pool`, the blocks
    compress in parallel (zlib releases the GIL). About 40 bytes larger per block than
    one deflate of the whole; a body of one block is exactly zlib's deflate of it.
    """
    if len(body) < GZIP_MIN_BYTES:
        return None
    level, view = gzip_level(len(body)), memoryview(body)
    starts = range(0, len(body), GZIP_BLOCK)
    blocks = [view[at:at + GZIP_BLOCK] for at in starts]
    dictionaries = [bytes(view[max(0, at - _WINDOW):at]) for at in starts]
    flushes = [zlib.Z_SYNC_FLUSH] * (len(blocks) - 1) + [zlib.Z_FINISH]
    deflated = (pool.map if pool is not None else map)(_deflate, blocks, dictionaries, flushes, [level] * len(blocks))
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + bytes([_XFL.get(level, 0), 255])  # no name, mtime 0, OS unknown
    return b"".join([header, *deflated, struct.pack("<LL", zlib.crc32(body), len(body) & 0xFFFFFFFF)])


GZIP_BLOCK = 4 << 20
_WINDOW = 32 << 10  # how far back deflate looks: the dictionary a block starts with
_XFL = {9: 2, 1: 4}  # the gzip header's "extra flags" byte for a level, as zlib and Python's gzip set it


def _deflate(block: memoryview, dictionary: bytes, flush: int, level: int) -> bytes:
    """Raw deflate of one block, primed with the bytes before it."""
    primed = {"zdict": dictionary} if dictionary else {}
    coder = zlib.compressobj(level, zlib.DEFLATED, -15, **primed)  # -15: raw deflate, no header of its own
    return coder.compress(block) + coder.flush(flush)


class Precomputed:
    """A body's strong ETag and gzip coding, computed on threads from the moment the body exists.

    hashlib and zlib release the GIL, so on other cores this overlaps the rest of a data
    load, and the gzip blocks compress in parallel. The compression waits for
    `compress_after` when given (see ReviewsApp: a first start's READY need not wait for
    it). `etag()` waits for the hash only, `compressed()` for the gzip coding too (each
    computed inline if its thread failed).
    """

    def __init__(self, body: bytes, compress_after: threading.Event | None = None):
        self._body: bytes | None = body
        self._tag: Future[str] = shared_pool().submit(strong_etag, body)
        self._gzip: Future[bytes | None] = Future()
        # Its own thread, not the pool's: gzip_body waits for the blocks it gives the pool.
        threading.Thread(target=self._compress, args=(body, compress_after), name="precompute-body", daemon=True).start()

    @classmethod
    def finished(cls, etag: str, compressed: bytes | None) -> "Precomputed":
        """One whose work was done before (read back from the build cache)."""
        done = cls.__new__(cls)
        done._body, done._tag, done._gzip = None, Future(), Future()
        done._tag.set_result(etag)
        done._gzip.set_result(compressed)
        return done

    def _compress(self, body: bytes, after: threading.Event | None) -> None:
        if after is not None:
            after.wait()
        try:
            self._gzip.set_result(gzip_body(body, shared_pool()))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            self._gzip.set_exception(exc)

    def etag(self) -> str:
        self._tag = _recovered(self._tag, lambda: strong_etag(self._retained_body()))
        return self._tag.result()

    def compressed(self) -> bytes | None:
        self._gzip = _recovered(self._gzip, lambda: gzip_body(self._retained_body()))
        if self._tag.done() and self._tag.exception() is None:
            self._body = None  # the payload keeps the body; this object need not
        return self._gzip.result()

    def compressing(self) -> bool:
        """Whether the gzip coding is still being made."""
        return not self._gzip.done()

    def result(self) -> tuple[str, bytes | None]:
        return self.etag(), self.compressed()

    def _retained_body(self) -> bytes:
        if self._body is None:
            raise RuntimeError("Precomputed: its work failed after the body was dropped")
        return self._body


def _recovered(future: Future, compute: Callable[[], Any]) -> Future:
    """`future` once it is done; if it failed, a done one with the value computed here instead."""
    if future.exception() is None:
        return future
    recovered: Future = Future()
    recovered.set_result(compute())
    return recovered


class PendingVariant:
    """The gzip variant of a body whose compression is still running (on a first start, after READY).

    Its ETag and 304 headers are known at once, so a conditional request that matches
    is answered without waiting; a request for the body waits for the compression,
    and then gets the same bytes and headers as once it has finished.
    """

    def __init__(self, etag: str, headers: Headers, compressed: Callable[[], bytes | None]):
        self.etag = etag
        self.not_modified_headers = _not_modified_headers([*headers, ("ETag", etag)])
        self._headers = headers
        self._compressed: Callable[[], bytes | None] | None = compressed
        self._finished: Variant | None = None
        self._lock = threading.Lock()

    @property
    def body(self) -> bytes:
        return self.finished().body

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        return self.finished().headers

    def finished(self) -> Variant:
        """The complete variant, waiting for the compression the first time."""
        if self._finished is None:
            with self._lock:
                if self._finished is None and self._compressed is not None:
                    compressed = self._compressed()
                    assert compressed is not None  # only bodies of GZIP_MIN_BYTES or more are pending
                    self._finished, self._compressed = _variant(compressed, self.etag, self._headers), None
        return self._finished


def gzip_level(size: int) -> int:
    """9 for small bodies (the feeds); 6 from 64 KiB, where 9 costs several times the CPU for about 1% less.

    Since-answers are compressed when first asked for, so their cost is a request's latency.
    """
    return 9 if size < 64 << 10 else 6


def _variant(body: bytes, etag: str, headers: Headers) -> Variant:
    with_tag = [*headers, ("ETag", etag)]
    return Variant(body, etag, tuple(with_tag + [("Content-Length", str(len(body)))]), _not_modified_headers(with_tag))


NOT_MODIFIED_HEADERS = frozenset({"Cache-Control", "Vary", "ETag", "Last-Modified", "Access-Control-Allow-Origin",
                                   "Access-Control-Expose-Headers", "Link"})


def _not_modified_headers(headers: Headers) -> tuple[tuple[str, str], ...]:
    """What a 304 repeats of a 200's headers."""
    return tuple((k, v) for k, v in headers if k in NOT_MODIFIED_HEADERS)


@lru_cache(maxsize=512)
def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding value allows gzip (q > 0), parsed by werkzeug.

    RFC 9110 12.5.3: "x-gzip" is "gzip", and "*" stands only for codings not listed,
    so `gzip;q=0, *` refuses gzip.
    """
    accept = parse_accept_header(accept_encoding, Accept)
    listed = [quality for coding, quality in accept if coding.lower() in ("gzip", "x-gzip")]
    return max(listed or [quality for coding, quality in accept if coding == "*"] or [0]) > 0


def is_not_modified(environ: Mapping[str, Any], variant: "Variant | PendingVariant", last_modified: datetime | None) -> bool:
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
    return "200 OK", list(variant.headers), variant.body


def error_document(code: str, message: str, issues: Iterable[Mapping[str, Any]] | None = None) -> bytes:
    """The one error body: {"error", "message"} and, for invalid parameters, "issues"."""
    document: dict[str, Any] = {"error": code, "message": message}
    if issues is not None:
        document["issues"] = list(issues)
    return encode_json(document)
