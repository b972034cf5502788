"""HTTP representations computed once per data load, and the answers built from them.

A `Payload` holds a body in both content-codings (identity and gzip), each with
its own strong ETag and its complete header list, so that answering a GET, a HEAD
or a 304 is a lookup plus werkzeug's conditional-request check.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import queue
import threading
import zlib
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from werkzeug.datastructures import Accept
from werkzeug.http import http_date, parse_accept_header
from werkzeug.sansio.http import is_resource_modified

from dataset import encode_json

log = logging.getLogger("reviewsd.payloads")

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
    return etag_of(hashlib.sha256(body), suffix)


def etag_of(sha256: Any, suffix: str = "") -> str:
    """The strong ETag of a body whose sha256 object this is (hashed whole or piece by piece)."""
    return '"' + sha256.hexdigest()[:32] + suffix + '"'


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
        tag, compressed = precomputed.result(body)
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


def gzip_body(body: bytes) -> bytes | None:
    """The gzip coding of a body (None below GZIP_MIN_BYTES, where it is not worth it)."""
    coder = _GzipCoder()
    coder.feed(body)
    return coder.finish()


class _GzipCoder:
    """gzip_body for a body that arrives in pieces: the same bytes, compressed as they come.

    The level depends on the whole body's size (gzip_level), so pieces are held until
    they reach the size from which the level cannot change; zlib's output does not
    depend on how its input is split, so this is gzip.compress(body, level, mtime=0).
    """

    def __init__(self) -> None:
        self._held: list[bytes | memoryview] = []
        self._size = 0
        self._stream: Any = None  # a zlib compressor, once the level is known
        self._out: list[bytes] = []

    def feed(self, piece: bytes | memoryview) -> None:
        if self._stream is not None:
            self._out.append(self._stream.compress(piece))
            return
        self._held.append(piece)
        self._size += len(piece)
        if self._size >= _SIZE_FOR_LARGE_LEVEL:
            self._stream = zlib.compressobj(gzip_level(self._size), zlib.DEFLATED, 31)  # 31: a gzip header, mtime 0
            self._out += map(self._stream.compress, self._held)
            self._held = []

    def finish(self) -> bytes | None:
        if self._stream is not None:
            self._out.append(self._stream.flush())
            return b"".join(self._out)
        if self._size < GZIP_MIN_BYTES:
            return None
        return gzip.compress(b"".join(self._held), compresslevel=gzip_level(self._size), mtime=0)


class Precomputed:
    """A body's strong ETag and gzip coding, computed on a thread while the body is being made.

    Feed it the body's pieces as they are encoded (`feed`, then `close`), or the whole
    body (`Precomputed.of(body)`). hashlib and zlib release the GIL, so on a second core
    this overlaps the rest of a data load. `result()` waits for it; should the thread
    fail, `result(body)` computes inline.
    """

    def __init__(self) -> None:
        self._pieces: queue.SimpleQueue[bytes | memoryview | None] = queue.SimpleQueue()
        self._result: tuple[str, bytes | None] | None = None
        self._thread: threading.Thread | None = threading.Thread(target=self._run, name="precompute-body", daemon=True)
        self._thread.start()

    @classmethod
    def of(cls, body: bytes) -> "Precomputed":
        started = cls()
        started.feed(body)
        started.close()
        return started

    @classmethod
    def finished(cls, etag: str, compressed: bytes | None) -> "Precomputed":
        """One whose work was done before (read back from the build cache)."""
        done = cls.__new__(cls)
        done._result, done._thread = (etag, compressed), None
        return done

    def feed(self, piece: bytes | memoryview) -> None:
        self._pieces.put(piece)

    def close(self) -> None:
        """The body is complete (also call it when making it failed: the thread waits for this)."""
        self._pieces.put(None)

    def _run(self) -> None:
        digest, coder = hashlib.sha256(), _GzipCoder()
        piece: bytes | memoryview | None = b""
        try:
            while (piece := self._pieces.get()) is not None:
                digest.update(piece)
                coder.feed(piece)
            self._result = (etag_of(digest), coder.finish())
        except Exception:  # MemoryError, say: result(body) computes it inline
            log.warning("computing a body's ETag and gzip coding on its thread failed", exc_info=True)
            while piece is not None:  # let go of what is still coming
                piece = self._pieces.get()

    def result(self, body: bytes | None = None) -> tuple[str, bytes | None]:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._result is None:
            if body is None:
                raise RuntimeError("the ETag and gzip thread failed, and the body is not at hand")
            self._result = (strong_etag(body), gzip_body(body))
        return self._result


def gzip_level(size: int) -> int:
    """9 for small bodies (the feeds); 6 from 64 KiB, where 9 costs several times the CPU for about 1% less.

    Since-answers are compressed when first asked for, so their cost is a request's latency.
    """
    return 9 if size < _SIZE_FOR_LARGE_LEVEL else 6


_SIZE_FOR_LARGE_LEVEL = 64 << 10


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
