"""A sans-IO HTTP/1.1 request parser (RFC 9112): bytes in, complete requests or an HTTPError out.

No sockets, no threads, no clock: the server feeds what it reads and takes each request once its head *and*
its body are complete, so the WSGI app never reads from a client. Every refusal is one exception type,
HTTPError, carrying the status to answer; after one the connection must close (the parser is spent). Where
RFC 9112 leaves a choice, the parser takes the strict one: the clause is beside each check, and
docs/security.md lists every refusal.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "HTTPError",
    "Request",
    "RequestParser",
    "MAX_REQUEST_LINE",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_LINES",
]

MAX_REQUEST_LINE = 8192  # bytes, without CRLF; longer -> 414
MAX_HEADER_BYTES = 32768  # all header lines together (and so the trailer section); more -> 431
MAX_HEADER_LINES = 100  # more -> 431
MAX_REMEMBERED_HEAD = 2048  # characters: a head a connection keeps to compare the next one with
MAX_CHUNK_LINE = 4096  # a chunk-size line with its extensions; longer -> 400
# Empty lines ignored before a request line (RFC 9112 2.2 asks a server to ignore at least one); more -> 400.
MAX_LEADING_EMPTY_LINES = 8

# RFC 9110 9.1, PATCH (RFC 5789) and QUERY (IANA-registered): the app routes them (405 where a path has
# no such method). CONNECT needs a tunnel: not implemented, like every other method (501).
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH", "QUERY"))

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_is_token = re.compile(_TOKEN + r"\Z").match
# In a head, after the CRLFs are counted: controls other than HTAB (RFC 9110 5.5, RFC 9112 3.2).
_has_control = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]").search
_has_bare_lf = re.compile(rb"(?<!\r)\n").search
_is_version = re.compile(r"HTTP/([0-9])\.[0-9]\Z").match
# RFC 3986 host [":" port]: IP-literal, or reg-name / IPv4address (unreserved, pct-encoded, sub-delims).
_is_host = re.compile(r"(?:\[[0-9A-Za-z:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?\Z").match
_absolute_form = re.compile(r"([A-Za-z][A-Za-z0-9+\-.]*)://([^/?]*)(.*)\Z", re.S).match
# RFC 9112 7.1: chunk-size [ chunk-ext ], chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ).
_QUOTED = rb'"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"'
_TOKEN_B = _TOKEN.encode()
_chunk_line = re.compile(
    rb"([0-9A-Fa-f]{1,16})(?:[ \t]*;[ \t]*"
    + _TOKEN_B
    + rb"(?:[ \t]*=[ \t]*(?:"
    + _TOKEN_B
    + rb"|"
    + _QUOTED
    + rb"))?)*\Z"
).match
_field_line = re.compile(rb"(" + _TOKEN_B + rb"):[ \t]*[^\x00-\x08\x0a-\x1f\x7f]*\Z").match


class HTTPError(Exception):
    """A request the server refuses; `status` is the code to answer with, then close."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.method: str | None = None  # of the refused request, once its request line was read
        self.target: str | None = None


class Request(NamedTuple):
    """One complete request: the head as parsed, the body as decoded."""

    method: str
    target: str  # as sent
    version: str  # "HTTP/1.1" or "HTTP/1.0" (a later 1.x minor version is served as 1.1)
    headers: list[tuple[str, str]]  # names as sent, values without surrounding whitespace
    host: str | None  # the Host header, or the authority of an absolute-form target
    path: str  # still percent-encoded; "*" for OPTIONS *
    query: str
    keep_alive: bool
    expect_continue: bool
    body: bytes | None  # None: the request had no body framing at all


_Head = tuple[
    Request, int | None
]  # a parsed head whose body is still to read, and the body's length (None: chunked)


class RequestParser:
    """One connection's stream of requests: feed() it the bytes read, and take each complete request
    from next_request()."""

    def __init__(self, max_body: int = 1 << 20) -> None:
        self.max_body = max_body
        self.buf = bytearray()  # what is not consumed yet
        self.pending: Request | None = None  # a head whose body is not complete yet
        self._scan = 0  # where the search for the end of the head resumes
        self._length: int | None = None
        self._body = bytearray()  # chunked: the data so far (one buffer: chunks of 1 byte cost 1 byte each)
        self._size = 0
        self._empty_lines = 0  # ignored before the request line now arriving
        self._chunk_left = -1  # chunked: data bytes left in this chunk (-1: a size line is next)
        self._trailer = -1  # chunked: trailer bytes seen after the last chunk (-1: not there yet)
        self._last: tuple[str, _Head] | None = None  # the last head parsed and what it gave (see _parse_head)

    def feed(self, data: bytes) -> None:
        self.buf += data

    @property
    def started(self) -> bool:
        """Whether some of a next request has arrived (buffered bytes, or a head waiting for its body)."""
        return bool(self.buf) or self.pending is not None

    def next_request(self) -> Request | None:
        """The next complete request, or None if it has not all arrived (HTTPError if it is refused)."""
        if self.pending is None:
            head = self._take_head()
            if head is None:
                return None
            request, length = head
            if length == 0:
                return request
            self.pending = request
            self._length, self._body, self._size = length, bytearray(), 0
            self._chunk_left = self._trailer = -1
        body = self._take_body()
        if body is None:
            return None
        request = self.pending._replace(body=body)
        self.pending = None
        return request

    # -- the head (RFC 9112 2-5) ------------------------------------------

    def _take_head(self) -> _Head | None:
        buf = self.buf
        if buf[:2] == b"\r\n":  # 2.2: empty lines before a request line are ignored, a few
            self._skip_empty_lines()
        end = buf.find(b"\r\n\r\n", self._scan)
        line_end = buf.find(b"\r\n", 0, MAX_REQUEST_LINE + 2)
        if line_end < 0 and len(buf) > MAX_REQUEST_LINE + 1:  # +1: its CR may be here already
            raise HTTPError(414, f"request line over {MAX_REQUEST_LINE} bytes")
        # The header lines so far, of a head still arriving too (less 2 bytes that may begin its blank line).
        if line_end >= 0 and (end if end >= 0 else len(buf) - 2) - line_end - 2 > MAX_HEADER_BYTES:
            raise HTTPError(431, f"request headers over {MAX_HEADER_BYTES} bytes")
        if end < 0:
            if _has_bare_lf(
                buf, max(0, self._scan - 1)
            ):  # it would otherwise wait for a CRLF that never comes
                raise HTTPError(400, "bare LF in the request head")
            self._scan = max(0, len(buf) - 3)
            return None
        self._scan = self._empty_lines = 0
        text = buf[:end].decode("latin-1")
        del buf[: end + 4]
        return self._parse_head(text)

    def _skip_empty_lines(self) -> None:
        buf, skipped = self.buf, 0
        while (
            buf[skipped : skipped + 2] == b"\r\n"
            and self._empty_lines + skipped // 2 <= MAX_LEADING_EMPTY_LINES
        ):
            skipped += 2
        self._empty_lines += skipped // 2
        del buf[:skipped]
        if self._empty_lines > MAX_LEADING_EMPTY_LINES:
            raise HTTPError(400, f"more than {MAX_LEADING_EMPTY_LINES} empty lines before a request line")

    def _parse_head(self, text: str) -> _Head:
        # A keep-alive client mostly sends the same head again (a poll with its If-None-Match, a proxy's
        # health check): parsing is a function of the text, so the last result is reused, 0.3 us against 2.6
        # (issue 39). Short heads only: what a connection keeps stays small.
        last = self._last
        if last is not None and last[0] == text:
            return last[1]
        head = self._parse_head_anew(text)
        if len(text) <= MAX_REMEMBERED_HEAD:
            self._last = (text, head)
        return head

    def _parse_head_anew(self, text: str) -> _Head:
        lines = text.split("\r\n")
        crlfs = len(lines) - 1
        # CRLF only, here as in chunk lines and trailers: 2.2 allows
        # a bare LF; refusing keeps hops reading one message.
        if text.count("\r") != crlfs or text.count("\n") != crlfs:
            raise HTTPError(400, "bare CR or LF in the request head")
        if _has_control(text):
            raise HTTPError(400, "control character in the request head")
        if crlfs > MAX_HEADER_LINES:
            raise HTTPError(431, f"more than {MAX_HEADER_LINES} header lines")
        method, target, version, v11 = _parse_request_line(lines[0])
        try:
            return self._parse_fields(method, target, version, v11, lines)
        except HTTPError as e:  # the server logs a refusal with the request it refused
            e.method, e.target = method, target
            raise

    def _parse_fields(self, method: str, target: str, version: str, v11: bool, lines: list[str]) -> _Head:
        headers = []
        host = length = codings = connection = expect = None
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not _is_token(
                name
            ):  # also obs-fold, "Name :" and a space before the first (5.1, 5.2, 2.2)
                raise HTTPError(400, "malformed header line")
            value = value.strip(" \t")
            headers.append((name, value))
            lname = name.lower()
            if lname == "host":
                if host is not None:
                    raise HTTPError(400, "more than one Host header")
                host = value
            elif lname == "content-length":
                if length is not None:  # 6.3, even with equal values
                    raise HTTPError(400, "more than one Content-Length header")
                if not (value.isascii() and value.isdigit() and len(value) <= 18):
                    raise HTTPError(400, "invalid Content-Length")
                length = int(value)
            elif lname == "transfer-encoding":
                codings = value if codings is None else f"{codings},{value}"
            elif lname == "connection":
                connection = value if connection is None else f"{connection},{value}"
            elif lname == "expect":
                expect = value
        if host is not None and not _is_host(host):
            raise HTTPError(400, "invalid Host header")
        if v11 and host is None:
            raise HTTPError(400, "missing Host header")
        path, query, authority = _parse_target(method, target)
        if authority is not None:  # 3.2.2: the target's authority wins over Host
            host = authority
        body_length = _body_length(length, codings, v11)
        if body_length is not None and body_length > self.max_body:
            raise HTTPError(413, f"request body over {self.max_body} bytes")
        tokens = {t.strip(" \t") for t in connection.lower().split(",")} if connection else ()
        keep_alive = "close" not in tokens if v11 else "keep-alive" in tokens
        expect_continue = v11 and expect is not None and expect.lower() == "100-continue"
        request = Request(
            method,
            target,
            version,
            headers,
            host,
            path,
            query,
            keep_alive,
            expect_continue,
            None if length is None and codings is None else b"",
        )
        return request, body_length

    # -- the body (RFC 9112 6-7) ------------------------------------------

    def _take_body(self) -> bytes | None:
        if self._length is None:
            return bytes(self._body) if self._take_chunks() else None
        if len(self.buf) < self._length:
            return None
        body = bytes(self.buf[: self._length])
        del self.buf[: self._length]
        return body

    def _take_chunks(self) -> bool:
        """Consume chunks, the last chunk and the trailer section; True once all of them are in."""
        buf = self.buf
        while True:
            if self._trailer >= 0:
                return self._take_trailer()
            if self._chunk_left < 0:
                line = self._take_line(MAX_CHUNK_LINE, "chunk-size line")
                if line is None:
                    return False
                match = _chunk_line(line)
                if match is None:
                    raise HTTPError(400, "malformed chunk-size line")
                size = int(match.group(1), 16)
                if self._size + size > self.max_body:
                    raise HTTPError(413, f"request body over {self.max_body} bytes")
                self._size += size
                if size == 0:
                    self._trailer = 0
                    continue
                self._chunk_left = size
            if len(buf) < self._chunk_left + 2:
                return False
            end = self._chunk_left
            if buf[end : end + 2] != b"\r\n":
                raise HTTPError(400, "chunk data not followed by CRLF")
            self._body += buf[:end]
            del buf[: end + 2]
            self._chunk_left = -1

    def _take_trailer(self) -> bool:
        """The trailer section (7.1.2): its fields are parsed and ignored; True once it has ended."""
        while True:
            line = self._take_line(MAX_HEADER_BYTES - self._trailer, "trailer section", too_long=431)
            if line is None:
                return False
            if not line:
                return True
            self._trailer += len(line) + 2
            if not _field_line(line):
                raise HTTPError(400, "malformed trailer field")

    def _take_line(self, limit: int, what: str, too_long: int = 400) -> bytes | None:
        """The next CRLF-terminated line without its CRLF, or None if it has not all arrived."""
        buf = self.buf
        nl = buf.find(b"\n", 0, limit + 2)
        if nl < 0:
            if len(buf) > limit + 1:
                raise HTTPError(too_long, f"{what} too long")
            return None
        if nl == 0 or buf[nl - 1] != 13:
            raise HTTPError(400, f"bare LF in a {what}")
        line = bytes(buf[: nl - 1])
        del buf[: nl + 1]
        if b"\r" in line:
            raise HTTPError(400, f"bare CR in a {what}")
        return line


def _parse_request_line(line: str) -> tuple[str, str, str, bool]:
    """method, target, version and whether it is HTTP/1.1 (RFC 9112 3)."""
    parts = line.split(" ")
    if len(parts) != 3 or not parts[0] or not parts[1]:
        raise HTTPError(400, "malformed request line")
    method, target, version = parts
    v11 = version == "HTTP/1.1"
    if not v11 and version != "HTTP/1.0":
        match = _is_version(version)
        if match is None:
            raise HTTPError(400, "malformed request line")
        if match.group(1) != "1":
            raise HTTPError(505, "only HTTP/1.x is supported")
        version, v11 = "HTTP/1.1", True  # a later 1.x minor version is served as 1.1 (RFC 9110 2.5)
    if method not in METHODS:
        if not _is_token(method):
            raise HTTPError(400, "malformed request line")
        raise HTTPError(501, f"method {method} is not implemented (methods are case-sensitive)")
    return method, target, version, v11


def _parse_target(method: str, target: str) -> tuple[str, str, str | None]:
    """path, query and the authority of an absolute-form target (RFC 9112 3.2)."""
    if "#" in target or not target.isascii():
        raise HTTPError(400, "malformed request target")
    authority = None
    if target[0] != "/":
        if target == "*":
            if method != "OPTIONS":
                raise HTTPError(400, "asterisk-form is only for OPTIONS")
            return "*", "", None
        match = _absolute_form(target)
        if match is None or match.group(1).lower() not in ("http", "https"):
            raise HTTPError(400, "malformed request target")
        authority, target = match.group(2), match.group(3) or "/"
        if not authority or not _is_host(authority) or target[0] not in "/?":
            raise HTTPError(400, "malformed request target")
        if target[0] == "?":
            target = "/" + target
    path, _, query = target.partition("?")
    return path, query, authority


def _body_length(length: int | None, codings: str | None, v11: bool) -> int | None:
    """The body's length in bytes, None for chunked, 0 for no body (RFC 9112 6.1-6.3)."""
    if codings is None:
        return length or 0
    if length is not None:  # the classic request-smuggling vector behind a proxy
        raise HTTPError(400, "both Content-Length and Transfer-Encoding")
    if not v11:
        raise HTTPError(400, "Transfer-Encoding in an HTTP/1.0 request")
    names = [c.strip(" \t").lower() for c in codings.split(",")]
    if names[-1] != "chunked" or names.count("chunked") != 1 or not all(map(_is_token, names)):
        raise HTTPError(400, "Transfer-Encoding must end with chunked, once")
    if len(names) > 1:  # 6.1: no other coding is implemented
        raise HTTPError(501, f"unsupported transfer coding {names[0]}")
    return None
