"""HTTP representations computed once per data load, and the answers built from them.

A `Payload` holds a body in both content-codings (identity and gzip), each with
its own strong ETag and its complete header list, so that answering a GET, a HEAD
or a 304 is a lookup plus werkzeug's conditional-request check.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from werkzeug.datastructures import Accept
from werkzeug.http import http_date, parse_accept_header
from werkzeug.sansio.http import is_resource_modified

from dataset import encode_json

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
    gzipped: Variant | None
    content_type: str
    last_modified: datetime | None

    def variant(self, accept_encoding: str | None) -> Variant:
        if self.gzipped is not None and accept_encoding and accepts_gzip(accept_encoding):
            return self.gzipped
        return self.identity


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
) -> Payload:
    """Encode a body once for every request that will ask for it.

    `etag` overrides the hash of the body (for bodies too large to hash per
    request); the gzip variant gets the same tag with a `-gzip` suffix, because
    the two codings are different representations (RFC 9110 8.8.3).
    `precomputed` (for this body) supplies the tag and the gzip bytes.
    """
    if precomputed is not None and compress:
        tag, compressed = precomputed.result()
    else:
        tag, compressed = etag or strong_etag(body), gzip_body(body) if compress else None
    common: Headers = [("Content-Type", content_type), *READ_HEADERS, *extra_headers]
    if last_modified is not None:
        common.append(("Last-Modified", http_date(last_modified)))
    gzipped = None
    if compress:
        common.append(("Vary", "Accept-Encoding"))
        if compressed is not None:
            gzipped = _variant(compressed, tag[:-1] + '-gzip"', common + [("Content-Encoding", "gzip")])
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


_pool: list[ThreadPoolExecutor] = []  # made on first use, then shared by every load
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    """The threads that hash bodies and compress gzip blocks, for every load of the process.

    Only tasks that never wait run on it. New threads for each load take malloc arenas
    that keep freed memory: over five loads of 100,000 reviews, resident memory grew by
    about 7 MB a load that way, and by about 3 MB (as with one thread per body) with these.
    """
    with _pool_lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="precompute"))
        return _pool[0]


def _deflate(block: memoryview, dictionary: bytes, flush: int, level: int) -> bytes:
    """Raw deflate of one block, primed with the bytes before it."""
    primed = {"zdict": dictionary} if dictionary else {}
    coder = zlib.compressobj(level, zlib.DEFLATED, -15, **primed)  # -15: raw deflate, no header of its own
    return coder.compress(block) + coder.flush(flush)


class Precomputed:
    """A body's strong ETag and gzip coding, computed on threads from the moment the body exists.

    hashlib and zlib release the GIL, so on other cores this overlaps the rest of a data
    load, and the gzip blocks compress in parallel. `result()` waits for it (and
    computes inline if the thread failed).
    """

    def __init__(self, body: bytes):
        self._body: bytes | None = body
        self._result: tuple[str, bytes | None] | None = None
        self._thread: threading.Thread | None = threading.Thread(target=self._run, name="precompute-body", daemon=True)
        self._thread.start()

    @classmethod
    def finished(cls, etag: str, compressed: bytes | None) -> "Precomputed":
        """One whose work was done before (read back from the build cache)."""
        done = cls.__new__(cls)
        done._body, done._result, done._thread = None, (etag, compressed), None
        return done

    def _run(self) -> None:
        body = self._body
        if body is not None:
            pool = _shared_pool()
            tag = pool.submit(strong_etag, body)
            self._result = (tag.result(), gzip_body(body, pool))

    def result(self) -> tuple[str, bytes | None]:
        if self._thread is not None:
            self._thread.join()
        if self._result is None and self._body is not None:
            self._result = (strong_etag(self._body), gzip_body(self._body))
        self._body = None  # the payload keeps the body; this object need not
        if self._result is None:
            raise RuntimeError("Precomputed.result() after the body was dropped")
        return self._result


def gzip_level(size: int) -> int:
    """9 for small bodies (the feeds); 6 from 64 KiB, where 9 costs several times the CPU for about 1% less.

    Since-answers are compressed when first asked for, so their cost is a request's latency.
    """
    return 9 if size < 64 << 10 else 6


def _variant(body: bytes, etag: str, headers: Headers) -> Variant:
    with_tag = [*headers, ("ETag", etag)]
    not_modified = [(k, v) for k, v in with_tag if k in ("Cache-Control", "Vary", "ETag", "Last-Modified",
                                                           "Access-Control-Allow-Origin",
                                                           "Access-Control-Expose-Headers", "Link")]
    return Variant(body, etag, tuple(with_tag + [("Content-Length", str(len(body)))]), tuple(not_modified))


@lru_cache(maxsize=512)
def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding value allows gzip (q > 0), parsed by werkzeug."""
    accept = parse_accept_header(accept_encoding, Accept)
    return accept.quality("gzip") > 0 or (accept.quality("x-gzip") > 0)


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


def answer(environ: Mapping[str, Any], payload: Payload) -> tuple[str, Headers, bytes]:
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
