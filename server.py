"""Production HTTP/1.1 server for any WSGI app, built on werkzeug's serving machinery.

Why not ``werkzeug.serving`` as is: its handler sends ``Connection: close`` on
every response, drains the socket for 10 ms after each request, listens with a
backlog of 128 and starts one unbounded thread per connection.  This module
keeps werkzeug's handler class (subclassed) and stream helpers but replaces the
connection handling:

* one selector thread owns every connection that is not running a request: it
  accepts, reads request heads without blocking (so slow or idle clients cost
  a buffer, not a thread), enforces the head/idle deadlines and the size limits;
* a fixed pool of worker threads runs requests whose head is complete; after a
  keep-alive response the connection goes back to the selector;
* the per-request path is lean: the head is parsed from the buffered bytes
  with plain string operations and the response head and first body block go
  out in one ``send``;
* a response the client reads slower than we write (a large body, a slow
  link) is finished by the selector thread as the client reads, so no worker
  waits for a download.

``run()`` adds what a systemd service needs: socket activation, the notify
protocol (READY/RELOADING/STOPPING/WATCHDOG), signal handling and graceful stop.
"""

from __future__ import annotations

import collections
import io
import json
import logging
import os
import queue
import re
import select
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from email.utils import formatdate
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from werkzeug.serving import DechunkedInput, WSGIRequestHandler
from werkzeug.wsgi import LimitedStream

from logs import direct_info_handler

__all__ = [
    "RequestHandler",
    "Server",
    "make_server",
    "run",
    "notify",
    "notify_ready",
    "notify_reloading",
    "notify_stopping",
    "watchdog_interval",
    "start_watchdog",
    "activated_socket",
]

WSGIApp = Callable[[dict, Callable[..., Any]], Iterable[bytes]]

log = logging.getLogger("reviewsd.server")
access_log = logging.getLogger("reviewsd.access")

MAX_REQUEST_LINE = 8192  # bytes, without CRLF; longer -> 414
MAX_HEADER_BYTES = 32768  # all header lines together; more -> 431
MAX_HEADER_LINES = 100  # more -> 431
LINGER_SECONDS = 2.0  # how long a closing connection may still send us bytes
LINGER_BYTES = 1 << 20  # and how many we discard before giving up
DRAIN_BODY_MAX = 65536  # unread request body we still read to keep the connection
MAX_PIPELINED = 16  # requests a worker serves in a row before yielding the connection
SD_LISTEN_FDS_START = 3

# Connection states (who owns it and which deadline applies).
_HEAD, _IDLE, _LINGER, _BUSY, _SEND = "head", "idle", "linger", "busy", "send"
# What a worker wants done with a connection when it hands it back.
_KEEP, _CLOSED, _LINGERING = "keep", "closed", "lingering"

_is_token = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z").match
_HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection")
)
_REASONS = {
    400: "Bad Request",
    408: "Request Timeout",
    413: "Content Too Large",
    414: "URI Too Long",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    505: "HTTP Version Not Supported",
}
_SLUGS = {
    400: "bad_request",
    408: "request_timeout",
    413: "body_too_large",
    414: "uri_too_long",
    431: "request_header_fields_too_large",
    500: "internal_server_error",
    501: "not_implemented",
    505: "http_version_not_supported",
}
_CONTROL_CHARS = str.maketrans({c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]})


class _HTTPError(Exception):
    """A request the server answers itself (bad syntax, limits)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _body_size(response: bytes) -> int:
    return len(response) - response.index(b"\r\n\r\n") - 4


def error_response(code: int, message: str) -> bytes:
    """A complete `Connection: close` response with the project's JSON error body."""
    # Compact, like every body of the app (dataset.encode_json), which this module does not import.
    body = json.dumps({"error": _SLUGS.get(code, "error"), "message": message}, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")
    head = (
        f"HTTP/1.1 {code} {_REASONS.get(code, '')}\r\n"
        f"Date: {_http_date()}\r\nServer: {RequestHandler.server_version}\r\n"
        "Content-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


_date_cache: tuple[int, str] = (0, "")


def _http_date() -> str:
    # formatdate costs a few microseconds: compute it once per second.
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache = (now, formatdate(now, usegmt=True))
    return _date_cache[1]


def _scan_head(conn: RequestHandler) -> int:
    """End offset of a complete, acceptable request head in conn.buf; 0 if incomplete; -status if over a limit."""
    buf = conn.buf
    if buf[:1] in (b"\r", b"\n"):  # RFC 9112 2.2: ignore empty lines before a request
        del buf[: len(buf) - len(buf.lstrip(b"\r\n"))]
        conn.scan = 0
    nl = buf.find(b"\n")
    if nl < 0:  # no request line yet (+1: its CR may already be here)
        return -414 if len(buf) > MAX_REQUEST_LINE + 1 else 0
    if nl - (buf[nl - 1] == 13) > MAX_REQUEST_LINE:
        return -414
    i = buf.find(b"\n\r\n", conn.scan)
    j = buf.find(b"\n\n", conn.scan)
    if i < 0 and j < 0:
        if len(buf) - nl - 1 > MAX_HEADER_BYTES + 4:
            return -431
        conn.scan = max(0, len(buf) - 2)  # resume the search where it stopped
        return 0
    end = min(i + 3 if i >= 0 else len(buf) + 3, j + 2 if j >= 0 else len(buf) + 2)
    if end - nl - 1 > MAX_HEADER_BYTES + 4 or buf.count(b"\n", nl + 1, end) - 1 > MAX_HEADER_LINES:
        return -431
    conn.head_end = end
    return end


class _EmptyInput:
    """wsgi.input for requests without a body: shared, stateless, never blocks."""

    def read(self, size: int = -1) -> bytes:
        return b""

    def readline(self, size: int = -1) -> bytes:
        return b""

    def readlines(self, hint: int = -1) -> list[bytes]:
        return []

    def readinto(self, b: Any) -> int:
        return 0

    def readable(self) -> bool:
        return True

    def __iter__(self) -> Any:
        return iter(())

    def close(self) -> None:
        pass


_EMPTY_INPUT = _EmptyInput()


class _Body(io.RawIOBase):
    """wsgi.input: the connection's buffered bytes, then the socket, ending after `length` bytes.

    The whole body must arrive within socket_timeout, so a client trickling a
    body cannot hold a worker for longer than that.  length=None means
    unbounded (the inner stream of a chunked body).
    """

    def __init__(self, conn: RequestHandler, length: int | None, expect_continue: bool) -> None:
        self._conn = conn
        self.left = length
        self._continue = expect_continue
        self._deadline = 0.0

    def readable(self) -> bool:
        return True

    @property
    def awaiting_continue(self) -> bool:
        """The client asked for 100 Continue and has not been sent it: it may be holding the body back."""
        return self._continue

    def abandon(self) -> None:
        """Never send 100 Continue: the final response went first (the connection then closes)."""
        self._continue = False
        self.left = 0

    def _fill(self) -> bool:
        conn = self._conn
        if self._continue:  # the client waits for this before sending the body
            self._continue = False
            conn._send(b"HTTP/1.1 100 Continue\r\n\r\n")
        if not self._deadline:
            self._deadline = time.monotonic() + conn.server.socket_timeout
        return conn._recv_more(self._deadline)

    def _take(self, n: int) -> bytes:
        buf = self._conn.buf
        if not buf and not self._fill():
            if self.left is not None:
                self.left = 0
            self._conn.body_eof = True
            return b""
        data = bytes(buf[:n])
        del buf[:n]
        if self.left is not None:
            self.left -= len(data)
        return data

    def _room(self, size: int | None) -> int:
        room = self.left if self.left is not None else 1 << 62
        return room if size is None or size < 0 else min(room, size)

    def readinto(self, b: Any) -> int:
        room = self._room(len(b))
        if not room:  # at the end (or asked for nothing): never block on the socket
            return 0
        data = self._take(room)
        b[: len(data)] = data
        return len(data)

    def read(self, size: int | None = -1) -> bytes:
        want = self._room(size)
        parts = []
        while want > 0:
            data = self._take(min(want, 1 << 20))
            if not data:
                break
            parts.append(data)
            want -= len(data)
        return b"".join(parts)

    readall = read

    def readline(self, size: int | None = -1) -> bytes:
        want = self._room(size)
        parts = []
        while want > 0:
            buf = self._conn.buf
            nl = buf.find(b"\n", 0, want)
            data = self._take(nl + 1 if nl >= 0 else min(want, max(len(buf), 1)))
            if not data:
                break
            parts.append(data)
            want -= len(data)
            if data.endswith(b"\n"):
                break
        return b"".join(parts)

    def discard(self, limit: int) -> bool:
        """Read and drop the rest of the body if it is at most `limit` bytes; True if done."""
        if self.left is None or self.left > limit:
            return False
        while self.left:
            if not self._take(self.left):
                return False
        return True


class RequestHandler(WSGIRequestHandler):
    """One instance per connection; a worker calls handle() once the request head is buffered.

    Unlike socketserver handlers, construction does not serve: the server owns
    the connection's life cycle and calls handle() for each readable burst of
    requests.  werkzeug's run_wsgi and make_environ are replaced because they
    hard-code `Connection: close`, drain the socket after every request and
    read the raw socket for bodies.
    """

    protocol_version = "HTTP/1.1"
    server_version = "reviewsd"  # werkzeug makes this a property returning its own version

    def __init__(self, request: socket.socket, client_address: Any, server: Server) -> None:
        self.request = self.connection = request
        self.client_address = client_address
        self.server = server
        self.buf = bytearray()
        self.scan = 0
        self.head_end = 0
        self.state = _HEAD
        self.action = _KEEP
        self.registered = 0  # the selector events the socket is registered for; 0: not registered
        self.close_connection = False
        self.unsent: memoryview | None = None  # a response's last bytes, for the selector thread to send
        self._unsent_log: tuple[int, int, float] | None = None  # its access line's status, size, start
        self._held_body: _Body | None = None  # the request's body as read from the socket, if any
        self._poll: Any = None
        self._base_environ = server.base_environ(client_address)

    # -- the connection ----------------------------------------------------

    def handle(self) -> None:
        """Serve the buffered request and any complete pipelined ones; sets self.action."""
        self.close_connection = False
        self.linger = False
        for _ in range(MAX_PIPELINED):
            self.handle_one_request()
            if self.close_connection or self.unsent is not None:
                break
            if _scan_head(self) > 0:  # a pipelined request is already buffered
                continue
            if self.buf or not self._await_next():
                break
        if self.close_connection:
            self.action = _LINGERING if (self.linger or self.buf) else _CLOSED
        else:
            self.action = _KEEP

    def handle_one_request(self) -> None:
        """Parse the buffered head, run the app, write the response, log it."""
        start = time.perf_counter()
        head = self.buf[: self.head_end]
        del self.buf[: self.head_end]
        self.scan = self.head_end = 0
        self.environ = self.command = None
        self._io_failed = False
        self.body_eof = False
        try:
            self.environ = self.make_environ(head)
        except _HTTPError as e:
            self._reply_error(e.code, e.message, start)
            return
        except UnicodeError:
            self._reply_error(400, "malformed request head", start)
            return
        try:
            self.run_wsgi()
        except Exception as e:  # run_wsgi only lets errors through when the client's I/O failed
            if not self._io_failed:
                raise
            self._drop(e)
        if not self.close_connection:
            try:
                self._finish_body()
            except OSError as e:
                self._drop(e)
        if self.unsent is not None:  # logged once the selector thread has sent it (or given up)
            self._unsent_log = (self._status_code, self._bytes, start)
        else:
            self.log_request(self._status_code, self._bytes, start)

    def _await_next(self) -> bool:
        """Wait briefly for this client's next request; True if a complete head arrived.

        A client on keep-alive usually sends its next request within a few
        hundred microseconds; catching it here skips the hand-back to the
        selector thread (epoll_ctl, wake-up, queue) that costs more than the
        request itself.  Server.may_wait_for_next() keeps this from
        delaying other clients.
        """
        server = self.server
        if not server.may_wait_for_next():
            return False
        try:
            if self._poll is None:
                self._poll = select.poll()
                self._poll.register(self.connection, select.POLLIN)
            if not self._poll.poll(server.next_request_wait_ms):
                return False
            data = self.connection.recv(65536)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as e:
            self._drop(e)
            return False
        finally:
            server.done_waiting()
        if not data:
            self.close_connection = True  # the client closed its side
            return False
        self.buf += data
        return _scan_head(self) > 0

    def _drop(self, error: BaseException) -> None:
        # The client is gone or too slow: close without lingering, nothing left to say.
        self.close_connection = True
        self.linger = False
        self.buf.clear()
        self.connection_dropped(error, self.environ)

    def _finish_body(self) -> None:
        body = self._input
        if self.body_eof:
            self.close_connection = True
        elif isinstance(body, _Body):
            if not body.discard(DRAIN_BODY_MAX):
                self.close_connection = self.linger = True
        elif body is not _EMPTY_INPUT and not getattr(self._dechunked, "_done", True):
            self.close_connection = self.linger = True

    def _recv_more(self, deadline: float) -> bool:
        """Append bytes from the socket to self.buf before `deadline`; False at EOF."""
        sock = self.connection
        try:
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("request body timed out") from None
                sock.settimeout(remaining)
                try:
                    data = sock.recv(65536)
                finally:
                    sock.settimeout(0.0)
        except OSError:
            self._io_failed = True
            raise
        self.buf += data
        return bool(data)

    def _send(self, data: bytes, *, head: bytes = b"", last: bool = False) -> None:
        """Send `head` then `data`; the rest of a response's `last` write goes to the selector thread."""
        # Non-blocking first: almost always the whole response fits in the
        # socket buffer and this is a single syscall (a timeout socket would
        # poll() before every send).
        sock = self.connection
        try:
            try:
                sent = sock.sendmsg([head, data]) if head else sock.send(data)
            except BlockingIOError:
                sent = 0
            if head:
                if sent < len(head):
                    self._send_waiting(memoryview(head)[sent:])
                    sent = 0
                else:
                    sent -= len(head)
            if sent < len(data):
                if last and not self.server.stopping:
                    # The client reads slower than we write (a large body, a slow
                    # link): the selector thread sends the rest as the client takes
                    # it, so this worker is free for other requests.
                    self.unsent = memoryview(data)[sent:]
                    return
                self._send_waiting(memoryview(data)[sent:])
        except OSError:
            self._io_failed = True
            raise

    def _send_waiting(self, data: memoryview) -> None:
        sock = self.connection
        sock.settimeout(self.server.socket_timeout)
        try:
            sock.sendall(data)
        finally:
            sock.settimeout(0.0)

    def send_unsent(self) -> int:
        """Send what the socket takes now of `unsent` (non-blocking); returns the bytes sent.

        Once all of it is sent, `unsent` is None and the access line is written.
        """
        unsent = self.unsent
        assert unsent is not None
        total = len(unsent)
        try:
            for _ in range(4):  # bounded: one client must not hold the selector thread
                unsent = unsent[self.connection.send(unsent):]
                if not unsent:
                    break
        except (BlockingIOError, InterruptedError):
            pass
        finally:
            self.unsent = unsent
        if not unsent:
            self.log_unsent()
            self.unsent = None
        return total - len(unsent)

    def flush_unsent(self) -> None:
        """Send `unsent` waiting for the client (on a stop, when no selector loop runs); closes on failure."""
        assert self.unsent is not None
        try:
            self._send_waiting(self.unsent)
            self.unsent = self.unsent[len(self.unsent):]
        except OSError as e:
            self.close_connection = True
            self.action = _CLOSED
            self.connection_dropped(e, self.environ)
        self.log_unsent()
        self.unsent = None

    def log_unsent(self) -> None:
        """The access line of a response whose end the selector thread sent (size: the bytes that went)."""
        if self._unsent_log is not None:
            code, size, start = self._unsent_log
            self._unsent_log = None
            self.log_request(code, size - (len(self.unsent) if self.unsent is not None else 0), start)

    def _reply_error(self, code: int, message: str, start: float) -> None:
        self.close_connection = self.linger = True
        response = error_response(code, message)
        body_size = _body_size(response)
        self._status_code, self._bytes = code, 0
        try:
            self._send(response)
        except OSError:
            body_size = 0
        self.log_request(code, body_size, start)

    # -- the request head --------------------------------------------------

    def make_environ(self, head: bytes | bytearray = b"") -> dict:  # type: ignore[override]
        """The WSGI environ for a request head (request line + headers + blank line)."""
        lines = head.decode("latin-1").split("\n")
        method, target, version = self._parse_request_line(lines[0])
        environ = self._base_environ.copy()
        self._add_headers(environ, lines)
        if self._v11 and "HTTP_HOST" not in environ:
            raise _HTTPError(400, "missing Host header")
        self._set_target(environ, target)
        environ["REQUEST_METHOD"] = method
        environ["SERVER_PROTOCOL"] = version
        self.environ, self.command = environ, method  # a refusal of the body is logged with them
        environ["wsgi.input"] = self._make_input(environ)
        self._set_keep_alive(environ.get("HTTP_CONNECTION"))
        self.command, self.path, self.request_version = method, target, version
        return environ

    def _parse_request_line(self, line: str) -> tuple[str, str, str]:
        if line.endswith("\r"):
            line = line[:-1]
        parts = line.split(" ")
        if len(parts) != 3 or not _is_token(parts[0]) or not parts[1]:
            raise _HTTPError(400, "malformed request line")
        version = parts[2]
        if version == "HTTP/1.1":
            self._v11 = True
        elif version == "HTTP/1.0":
            self._v11 = False
        elif re.fullmatch(r"HTTP/1\.\d", version):
            self._v11 = True  # a later 1.x minor version is served as 1.1
        elif re.fullmatch(r"HTTP/\d\.\d", version):
            raise _HTTPError(505, "only HTTP/1.x is supported")
        else:
            raise _HTTPError(400, "malformed request line")
        return parts[0], parts[1], version

    @staticmethod
    def _add_headers(environ: dict, lines: list[str]) -> None:
        for line in lines[1:-2]:  # the head ends with a blank line and the text after the last LF
            if line.endswith("\r"):
                line = line[:-1]
            name, sep, value = line.partition(":")
            if not sep or not _is_token(name):  # also rejects obs-fold and "Name :"
                raise _HTTPError(400, "malformed header line")
            value = value.strip(" \t")
            if "\r" in value or "\0" in value:
                raise _HTTPError(400, "control character in header value")
            if "_" in name:
                continue  # like werkzeug: X_Forwarded_For must not impersonate X-Forwarded-For
            key = name.upper().replace("-", "_")
            if key in ("CONTENT_LENGTH", "CONTENT_TYPE"):
                if key == "CONTENT_LENGTH" and environ.get(key, value) != value:
                    raise _HTTPError(400, "conflicting Content-Length headers")
                environ[key] = value
                continue
            key = "HTTP_" + key
            old = environ.get(key)
            if old is None:
                environ[key] = value
            elif key == "HTTP_HOST":
                raise _HTTPError(400, "more than one Host header")
            else:
                environ[key] = f"{old},{value}"

    @staticmethod
    def _set_target(environ: dict, target: str) -> None:
        if target[0] != "/":
            if target == "*" or "://" in target:  # OPTIONS * / absolute-form
                url = urlsplit(target)
                if url.netloc:
                    environ["HTTP_HOST"] = url.netloc
                target = (url.path or "*") + ("?" + url.query if url.query else "")
            else:
                raise _HTTPError(400, "malformed request target")
        path, _, query = target.partition("?")
        if "%" in path:  # the WSGI "bytes as latin-1" convention, as werkzeug expects
            path = unquote_to_bytes(path).decode("latin-1")
        environ["PATH_INFO"] = path
        environ["QUERY_STRING"] = query
        environ["REQUEST_URI"] = environ["RAW_URI"] = target

    def _make_input(self, environ: dict) -> Any:
        self._dechunked = None
        self._held_body = None
        te = environ.get("HTTP_TRANSFER_ENCODING")
        cl = environ.get("CONTENT_LENGTH")
        expect = self._v11 and environ.get("HTTP_EXPECT", "").lower() == "100-continue"
        if te is not None:
            if cl is not None:  # a classic request-smuggling vector behind a proxy
                raise _HTTPError(400, "both Content-Length and Transfer-Encoding")
            if te.strip(" \t").lower() != "chunked":
                raise _HTTPError(501, "unsupported Transfer-Encoding")
            if not self._v11:
                raise _HTTPError(400, "Transfer-Encoding in an HTTP/1.0 request")
            self._held_body = _Body(self, None, expect)
            self._dechunked = DechunkedInput(self._held_body)
            self._input = LimitedStream(self._dechunked, self.server.max_body, is_max=True)
        elif cl is not None and cl != "0":
            if not (cl.isascii() and cl.isdigit()):
                raise _HTTPError(400, "invalid Content-Length")
            length = int(cl)
            if length > self.server.max_body:
                raise _HTTPError(413, f"request body over {self.server.max_body} bytes")
            if length:
                self._input = self._held_body = _Body(self, length, expect)
            else:
                self._input = _EMPTY_INPUT
        else:
            self._input = _EMPTY_INPUT
        return self._input

    def _set_keep_alive(self, header: str | None) -> None:
        tokens = {t.strip(" \t") for t in header.lower().split(",")} if header else ()
        if self._v11:
            self.close_connection = "close" in tokens
        else:
            self.close_connection = "keep-alive" not in tokens

    # -- the response ------------------------------------------------------

    def run_wsgi(self) -> None:
        """Call the app and write its response (keep-alive aware)."""
        self._status = self._headers = None
        self._headers_sent = False
        self._chunked = False
        self._left = None
        self._bytes = 0
        self._status_code = 500
        self._length_hint = None
        try:
            self._execute()
        except Exception:
            if self._io_failed:
                raise
            log.exception("error in WSGI app for %s %s", self.command, self.path)
            self.close_connection = True
            if not self._headers_sent:
                self._status_code, self._bytes = 500, 0
                self._send(error_response(500, "internal server error"))

    def _execute(self) -> None:
        result = self.server.app(self.environ, self.start_response)
        try:
            if type(result) is list and len(result) == 1:
                self._length_hint = len(result[0])  # frame it with Content-Length, not chunks
            for data in result:
                if data:
                    self.write(data)
            if not self._headers_sent:
                self.write(b"")
            if self._chunked:
                self._send(b"0\r\n\r\n")
            elif self._left:
                self.close_connection = True  # shorter than its Content-Length: framing is lost
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

    def start_response(self, status: str, headers: list, exc_info: Any = None) -> Callable[[bytes], None]:
        """The WSGI start_response callable."""
        if exc_info:
            try:
                if self._headers_sent:
                    raise exc_info[1].with_traceback(exc_info[2])
            finally:
                exc_info = None
        elif self._status is not None:
            raise AssertionError("start_response called twice")
        self._status, self._headers = status, headers
        return self.write

    def write(self, data: bytes) -> None:
        """The WSGI write callable: sends one block (with the head, before the first block)."""
        if not self._headers_sent:
            head = self._response_head()
            self._headers_sent = True
            if len(data) <= 65536:  # one send for head and body: the common case
                if data:
                    head += self._frame(data)
                self._send(head, last=self._left == 0)
                return
            # A large body is not worth copying onto the head: one sendmsg takes both.
            self._send(self._frame(data), head=head, last=self._left == 0)
            return
        if data:
            framed = self._frame(data)
            if framed:  # nothing after a body that has all its Content-Length
                self._send(framed, last=self._left == 0)

    def _frame(self, data: bytes) -> bytes:
        if self._left is not None:
            if len(data) > self._left:
                data = data[: self._left]  # never send more than Content-Length promised
                self.close_connection = True
            self._left -= len(data)
        elif not self._body_allowed:
            return b""
        self._bytes += len(data)
        if self._chunked:
            return b"%x\r\n%b\r\n" % (len(data), data)
        return data

    def _response_head(self) -> bytes:
        status = self._status
        if status is None:
            raise AssertionError("write() before start_response")
        code = self._status_code = int(status[:3])
        parts = ["HTTP/1.1 ", status if len(status) > 3 else status + " ", "\r\n"]
        length = self._add_response_headers(parts, framed=code >= 200 and code != 204)
        self._set_framing(code, length, parts)
        if self._held_body is not None and self._held_body.awaiting_continue:
            # Answered before the app read the body the client holds back for a 100 Continue: whether
            # it sends it anyway is up to the client, so this connection cannot carry another request
            # (RFC 9110 10.1.1). Closed after a linger that drops whatever comes; no 100 after this.
            self._held_body.abandon()
            self.close_connection = self.linger = True
        if self.close_connection or self.server.stopping:
            self.close_connection = True
            parts.append("Connection: close\r\n")
        elif not self._v11:
            parts.append("Connection: keep-alive\r\n")
        parts.append("\r\n")
        text = "".join(parts)
        # One check for the whole head instead of one per header: the only CR
        # and LF allowed are the line ends we wrote (one per part after the
        # first two), so a header value cannot inject lines.
        if text.count("\n") != len(parts) - 2 or text.count("\r") != len(parts) - 2:
            raise ValueError("CR or LF in a response header")
        return text.encode("latin-1")

    def _add_response_headers(self, parts: list[str], framed: bool) -> int | None:
        length = None
        seen_date = seen_server = False
        for name, value in self._headers:
            lname = name.lower()
            if lname == "content-length":
                if not framed:  # RFC 9110 8.6: never on a 1xx or 204, whatever the app says
                    continue
                length = int(value)
            elif lname in _HOP_BY_HOP:  # framing and persistence are the server's job
                if lname == "connection" and "close" in value.lower():
                    self.close_connection = True
                continue
            elif lname == "date":
                seen_date = True
            elif lname == "server":
                seen_server = True
            parts.append(f"{name}: {value}\r\n")
        if not seen_date:
            parts.append(f"Date: {_http_date()}\r\n")
        if not seen_server:
            parts.append(f"Server: {self.server_version}\r\n")
        return length

    def _set_framing(self, code: int, length: int | None, parts: list[str]) -> None:
        self._body_allowed = not (
            self.command == "HEAD" or code < 200 or code == 204 or code == 304
        )
        if not self._body_allowed:
            return
        if length is None and self._length_hint is not None:
            length = self._length_hint
            parts.append(f"Content-Length: {length}\r\n")
        if length is not None:
            self._left = length
        elif self._v11:
            self._chunked = True
            parts.append("Transfer-Encoding: chunked\r\n")
        else:
            self.close_connection = True  # HTTP/1.0 without a length: the body ends at close

    # -- logging -----------------------------------------------------------

    def log_request(self, code: int | str = "-", size: int | str = "-", start: float | None = None) -> None:  # type: ignore[override]
        """One access-log line; the fields are also record attributes for structured formatters."""
        if not access_log.isEnabledFor(logging.INFO):
            return
        duration_ms = round((time.perf_counter() - start) * 1000, 3) if start is not None else 0.0
        environ = self.environ or {}
        # Read after the app ran: the app may name the client (X-Forwarded-For
        # from a trusted proxy) in "reviewsd.client" or rewrite REMOTE_ADDR like ProxyFix.
        client = (environ.get("reviewsd.client") or environ.get("REMOTE_ADDR")
                  or self._base_environ.get("REMOTE_ADDR", "-"))
        method = getattr(self, "command", None) or "-"
        path = environ.get("REQUEST_URI") or "-"
        if not path.isprintable():
            path = path.translate(_CONTROL_CHARS)
        message = '%s "%s %s" %s %s %.1fms' % (client, method, path, code, size, duration_ms)
        direct = direct_info_handler(access_log)
        if direct is not None:  # the same line without a LogRecord: a fifth of a 304's cost otherwise
            direct.write_info(access_log.name, message, time.time())
            return
        # makeRecord + handle is Logger.info without the caller lookup (a stack walk
        # per request) that no access line prints.
        extra = {"method": method, "path": path, "status": code, "bytes": size,
                 "duration_ms": duration_ms, "client": client}
        access_log.handle(access_log.makeRecord(access_log.name, logging.INFO, __file__, 0, message, (), None,
                                                extra=extra))

    def log_message(self, format: str, *args: Any) -> None:
        log.info(format, *args)

    def log_error(self, format: str, *args: Any) -> None:
        log.error(format, *args)


def listen(host: str, port: int, backlog: int = 1024) -> socket.socket:
    """The socket-activated listening socket, or a new one bound to host:port."""
    return activated_socket() or _listen(host, port, backlog)


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)  # the kernel caps it at net.core.somaxconn
    except BaseException:
        sock.close()
        raise
    return sock


def _set_send_buffer(sock: socket.socket, size: int) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
    # Linux reports twice the size (the other half is for its bookkeeping) and caps it at net.core.wmem_max.
    factor = 2 if sys.platform.startswith("linux") else 1
    got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) // factor
    if got < size:  # not a fault: stock kernels cap it at 208 KiB
        log.info("send buffer of %d bytes asked, the kernel gave %d (net.core.wmem_max caps it)", size, got)


class Server:
    """HTTP/1.1 keep-alive server: one selector thread plus a fixed pool of worker threads.

    Who holds what: a connection waiting for (or trickling) its request head
    or idling on keep-alive costs only a buffer in the selector thread; a
    worker takes it once the head is complete and gives it back after the
    response.  Deadlines: the head must arrive within `header_timeout` of its
    first byte (of accept() for a new connection: 408 if partly received,
    else a silent close); an idle keep-alive connection is closed after
    `keepalive_timeout`; a body must arrive, and each response write must
    complete, within `socket_timeout`.

    Large responses: when a response's last write does not fit in the socket's
    send buffer, the worker hands the rest to the selector thread, which sends it
    as the client reads (a worker never waits for a slow reader); the client
    must take some of it every `socket_timeout`. `send_buffer` (bytes, set on
    the listening socket and inherited by each connection; 0 leaves it to the
    kernel's autotuning) bounds what waits in the kernel per connection: on
    loopback, behind a proxy on the same host, a bounded buffer keeps a large
    body in the CPU cache between our write and the reader's read.

    Connection cap: at `max_connections` open connections the server first
    closes the longest-idle keep-alive connection; if none is idle it stops
    calling accept() until one closes or turns idle, so new clients wait in
    the listen backlog instead of being reset.
    """

    handler_class = RequestHandler
    next_request_wait_ms = 3  # see RequestHandler._await_next

    def __init__(
        self,
        app: WSGIApp,
        host: str = "127.0.0.1",
        port: int = 8080,
        *,
        sock: socket.socket | None = None,
        threads: int = 8,
        backlog: int = 1024,
        socket_timeout: float = 30.0,
        keepalive_timeout: float = 15.0,
        header_timeout: float = 10.0,
        max_body: int = 1 << 20,
        max_connections: int = 1000,
        send_buffer: int = 0,
    ) -> None:
        self.app = app
        self.socket = sock if sock is not None else _listen(host, port, backlog)
        self.socket.setblocking(False)
        if send_buffer:
            _set_send_buffer(self.socket, send_buffer)
        self.server_address = self.socket.getsockname()
        self.threads = threads
        self.socket_timeout = socket_timeout
        self.keepalive_timeout = keepalive_timeout
        self.header_timeout = header_timeout
        self.max_body = max_body
        self.max_connections = max_connections
        self.stopping = False
        self._grace = 10.0
        self._draining = False
        self._lock = threading.Lock()
        self._all_closed = threading.Condition(self._lock)
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._returned: collections.deque = collections.deque()
        self._conns: set[RequestHandler] = set()
        self._timers: dict[str, collections.OrderedDict] = {
            _HEAD: collections.OrderedDict(), _IDLE: collections.OrderedDict(),
            _LINGER: collections.OrderedDict(), _SEND: collections.OrderedDict(),
        }
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wake_pending = False
        self._accepting = False
        self._accept_retry_at = 0.0
        self._workers: list[threading.Thread] = []
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._stopped = threading.Event()
        self._heartbeat = self._progress = time.monotonic()
        self._hard_stop = False
        self._waiting = 0
        self._max_waiting = max(1, threads // 2)
        self._environ = self._environ_template()

    # -- public ------------------------------------------------------------

    def serve_forever(self) -> None:
        """Run the selector loop in this thread until shutdown() has drained everything."""
        self._thread = self._thread or threading.current_thread()
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._resume_accept()
        for i in range(self.threads):
            worker = threading.Thread(target=self._work, name=f"reviewsd-worker-{i}", daemon=True)
            worker.start()
            self._workers.append(worker)
        self._started.set()
        try:
            self._loop()
        finally:
            self._drain()
            self._stopped.set()

    def start(self) -> Server:
        """Serve in a background thread and return once it is accepting."""
        self._thread = threading.Thread(target=self.serve_forever, name="reviewsd-selector", daemon=True)
        self._thread.start()
        self._started.wait()
        return self

    def shutdown(self, grace: float = 10.0) -> None:
        """Stop accepting, close idle connections, give in-flight requests `grace` seconds, then close all."""
        self._grace = grace
        self.stopping = True
        self._wake()
        if self._thread is None:  # never served
            self.server_close()
        elif self._thread is not threading.current_thread():
            self._stopped.wait()

    def server_close(self) -> None:
        """Release the listening socket and the selector (serve_forever does this itself)."""
        for obj in (self.socket, self._wake_r, self._wake_w, self._sel):
            obj.close()

    def healthy(self, max_age: float) -> bool:
        """False if the selector loop stalled or queued requests found no worker for `max_age` seconds."""
        now = time.monotonic()
        if now - self._heartbeat > max_age:
            return False
        return self._jobs.empty() or now - self._progress <= max_age

    def may_wait_for_next(self) -> bool:
        """May a worker wait for its connection's next request? (Nothing queued, half the pool stays free.)"""
        if self.stopping or not self._jobs.empty():
            return False
        with self._lock:
            if self._waiting >= self._max_waiting:
                return False
            self._waiting += 1
            return True

    def done_waiting(self) -> None:
        with self._lock:
            self._waiting -= 1

    def base_environ(self, client_address: Any) -> dict:
        """The per-connection part of the WSGI environ."""
        environ = self._environ.copy()
        if isinstance(client_address, tuple) and client_address:
            environ["REMOTE_ADDR"] = str(client_address[0])
            environ["REMOTE_PORT"] = str(client_address[1])
        return environ

    # -- selector thread ---------------------------------------------------

    def _environ_template(self) -> dict:
        address = self.server_address
        name, port = (address[0], str(address[1])) if isinstance(address, tuple) else (str(address), "")
        return {
            "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
            "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
            "wsgi.input_terminated": True,  # our wsgi.input ends at the body's end
            "SERVER_SOFTWARE": RequestHandler.server_version, "SCRIPT_NAME": "",
            "SERVER_NAME": name, "SERVER_PORT": port, "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "0",
        }

    def _loop(self) -> None:
        select = self._sel.select
        while not self.stopping:
            now = self._heartbeat = time.monotonic()
            for key, _ in select(self._next_timeout(now)):
                conn = key.data
                try:
                    if conn is None:
                        self._on_wake()
                    elif conn is self:
                        self._accept()
                    elif conn.state == _SEND:
                        self._on_writable(conn)
                    else:
                        self._on_readable(conn)
                except Exception:
                    log.exception("selector error")
                    if isinstance(conn, RequestHandler):
                        self._close(conn)
            self._expire(time.monotonic())

    def _next_timeout(self, now: float) -> float:
        timeout = 1.0  # also the heartbeat the watchdog looks at
        for timers in self._timers.values():
            if timers:
                timeout = min(timeout, next(iter(timers.values())) - now)
        if not self._accepting and self._accept_retry_at:
            timeout = min(timeout, self._accept_retry_at - now)
        return max(timeout, 0.0)

    def _expire(self, now: float) -> None:
        for state, timers in self._timers.items():
            while timers:
                conn, deadline = next(iter(timers.items()))
                if deadline > now:
                    break
                if state == _HEAD and conn.buf:
                    self._reject(conn, 408, "request head not received in time")
                elif state == _SEND:
                    self._give_up_sending(conn, TimeoutError("response not read in time"))
                else:
                    self._close(conn)
        if self._accept_retry_at and now >= self._accept_retry_at:
            self._accept_retry_at = 0.0
            self._resume_accept()

    def _accept(self) -> None:
        for i in range(64):  # bounded so a connect storm cannot starve the other sockets
            # At the cap, evict only on the first round, when a pending
            # connection is known to exist (the listener is level-triggered).
            if len(self._conns) >= self.max_connections and (i or not self._make_room()):
                return
            try:
                sock, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # EMFILE and friends: back off instead of spinning
                log.warning("accept failed: %s", e)
                self._pause_accept(retry_in=0.5)
                return
            self._add(sock, address)

    def _add(self, sock: socket.socket, address: Any) -> None:
        sock.setblocking(False)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # we coalesce writes ourselves
        conn = self.handler_class(sock, address, self)
        self._conns.add(conn)
        self._watch(conn, _HEAD, self.header_timeout)

    def _make_room(self) -> bool:
        idle = self._timers[_IDLE]
        if idle:
            self._close(next(iter(idle)))  # the longest-idle keep-alive connection
            return True
        self._pause_accept()
        return False

    def _pause_accept(self, retry_in: float = 0.0) -> None:
        if self._accepting:
            self._sel.unregister(self.socket)
            self._accepting = False
        if retry_in:
            self._accept_retry_at = time.monotonic() + retry_in

    def _resume_accept(self) -> None:
        if not self._accepting and not self.stopping and not self._accept_retry_at:
            self._sel.register(self.socket, selectors.EVENT_READ, self)
            self._accepting = True

    def _watch(self, conn: RequestHandler, state: str, timeout: float, events: int = selectors.EVENT_READ) -> None:
        timers = self._timers.get(conn.state)
        if timers is not None:
            timers.pop(conn, None)
        conn.state = state
        self._timers[state][conn] = time.monotonic() + timeout  # last in the order: the latest deadline
        if not conn.registered:
            self._sel.register(conn.connection, events, conn)
        elif conn.registered != events:
            self._sel.modify(conn.connection, events, conn)
        conn.registered = events

    def _unwatch(self, conn: RequestHandler) -> None:
        timers = self._timers.get(conn.state)
        if timers is not None:
            timers.pop(conn, None)
        if conn.registered:
            self._sel.unregister(conn.connection)
            conn.registered = 0

    def _close(self, conn: RequestHandler) -> None:
        self._unwatch(conn)
        conn.connection.close()
        self._forget(conn)

    def _forget(self, conn: RequestHandler) -> None:
        self._conns.discard(conn)
        conn.state = _CLOSED
        if not self._accepting and len(self._conns) < self.max_connections:
            self._resume_accept()

    def _on_readable(self, conn: RequestHandler) -> None:
        try:
            data = conn.connection.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(conn)
        elif conn.state == _LINGER:
            conn.scan += len(data)  # discarded; counted so a firehose cannot keep us here
            if conn.scan > LINGER_BYTES:
                self._close(conn)
        else:
            if conn.state == _IDLE:
                self._watch(conn, _HEAD, self.header_timeout)
            conn.buf += data
            self._examine(conn)

    def _examine(self, conn: RequestHandler) -> None:
        status = _scan_head(conn)
        if status > 0:
            self._dispatch(conn)
        elif status == -414:
            self._reject(conn, 414, f"request line over {MAX_REQUEST_LINE} bytes")
        elif status == -431:
            self._reject(conn, 431, f"request headers over {MAX_HEADER_BYTES} bytes or {MAX_HEADER_LINES} lines")

    def _dispatch(self, conn: RequestHandler) -> None:
        self._unwatch(conn)
        conn.state = _BUSY
        self._jobs.put(conn)

    def _reject(self, conn: RequestHandler, code: int, message: str) -> None:
        """Answer from the selector thread (non-blocking) and linger so the client can read it."""
        response = error_response(code, message)
        try:
            conn.connection.send(response)
            conn.connection.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(conn)
            return
        conn.environ = conn.command = None
        conn.log_request(code, _body_size(response))
        conn.buf.clear()
        conn.scan = 0
        self._watch(conn, _LINGER, LINGER_SECONDS)

    def _wake(self) -> None:
        if not self._wake_pending:
            self._wake_pending = True
            try:
                self._wake_w.send(b"\0")
            except OSError:  # full (already awake) or closed (stopped)
                pass

    def _on_wake(self) -> None:
        try:
            self._wake_r.recv(4096)
        except OSError:
            pass
        # Clear before draining: a worker appends first and checks the flag second.
        self._wake_pending = False
        returned = self._returned
        while returned:
            self._take_back(returned.popleft())

    def _take_back(self, conn: RequestHandler) -> None:
        if conn.unsent is not None:
            self._watch(conn, _SEND, self.socket_timeout, selectors.EVENT_WRITE)
            self._on_writable(conn)  # the client may have read some since the worker tried
        elif conn.action == _CLOSED:
            self._forget(conn)
        elif conn.action == _LINGERING:
            conn.buf.clear()
            conn.scan = 0
            self._watch(conn, _LINGER, LINGER_SECONDS)
        elif conn.buf:  # a partial (or refused) pipelined request
            self._watch(conn, _HEAD, self.header_timeout)
            self._examine(conn)
        else:
            self._watch(conn, _IDLE, self.keepalive_timeout)
            if not self._accepting:
                self._resume_accept()  # an idle connection can now make room

    def _on_writable(self, conn: RequestHandler) -> None:
        try:
            sent = conn.send_unsent()
        except OSError as e:
            self._give_up_sending(conn, e)
            return
        if conn.unsent is not None:
            if sent:  # the client read: a new deadline
                self._watch(conn, _SEND, self.socket_timeout, selectors.EVENT_WRITE)
            return
        if self._draining:  # nothing lingers or idles any more
            conn.action = _CLOSED
        if self._after_response(conn) == _CLOSED:
            self._close(conn)
        else:
            self._take_back(conn)

    def _after_response(self, conn: RequestHandler) -> str:
        """Settle the action for a connection whose response is all sent: closed on a stop, FIN sent if lingering."""
        action = conn.action
        if action == _KEEP and self.stopping:
            action = _CLOSED
        elif action == _LINGERING:
            try:
                conn.connection.shutdown(socket.SHUT_WR)  # FIN after the response, keep reading
            except OSError:
                action = _CLOSED
        conn.action = action
        return action

    def _give_up_sending(self, conn: RequestHandler, error: BaseException) -> None:
        conn.connection_dropped(error, conn.environ)
        conn.log_unsent()
        conn.unsent = None
        self._close(conn)

    # -- workers -----------------------------------------------------------

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            conn = jobs.get()
            if conn is None:
                return
            self._progress = time.monotonic()
            if self._hard_stop:
                conn.close_connection, conn.action = True, _CLOSED
            else:
                try:
                    conn.handle()
                except Exception:
                    log.exception("error serving %s", conn.client_address)
                    conn.action = _CLOSED
            self._release(conn)

    def _release(self, conn: RequestHandler) -> None:
        if conn.unsent is not None:
            with self._lock:
                if not self._draining:
                    self._returned.append(conn)  # the selector thread sends the rest, then does the action
                    self._wake()
                    return
            conn.flush_unsent()  # stopping: no selector loop runs any more
        if self._after_response(conn) == _CLOSED:
            try:
                conn.connection.close()
            except OSError:  # the descriptor is released all the same
                pass
        with self._lock:
            if not self._draining:
                self._returned.append(conn)
                self._wake()
                return
            conn.connection.close()
            self._conns.discard(conn)
            self._all_closed.notify_all()

    # -- stopping ----------------------------------------------------------

    def _drain(self) -> None:
        """After the loop: close what is idle, wait up to the grace for workers, then close the rest."""
        deadline = time.monotonic() + self._grace
        with self._lock:
            self._draining = True
        self.socket.close()
        for conn in list(self._conns):
            if conn.state not in (_BUSY, _SEND):
                self._close(conn)
        while self._returned:
            conn = self._returned.popleft()
            if conn.unsent is not None:
                self._take_back(conn)
            else:
                conn.connection.close()
                self._conns.discard(conn)
        self._finish_sending(deadline)
        if not self._wait_idle(deadline):
            self._hard_stop = True
            for conn in list(self._conns):
                try:
                    conn.connection.shutdown(socket.SHUT_RDWR)  # unblocks a worker stuck on this client
                except OSError:
                    pass
            self._wait_idle(time.monotonic() + 1.0)
        for _ in self._workers:
            self._jobs.put(None)
        for worker in self._workers:
            worker.join(timeout=max(0.0, deadline + 1.0 - time.monotonic()))
        self._wake_r.close()
        self._wake_w.close()
        self._sel.close()

    def _finish_sending(self, deadline: float) -> None:
        """On a stop: send the responses the selector thread holds, until they are sent or the grace ends."""
        sending = self._timers[_SEND]
        while sending and time.monotonic() < deadline:
            wait = min(deadline, next(iter(sending.values()))) - time.monotonic()
            for key, _ in self._sel.select(max(0.0, wait)):
                if key.data is None:
                    self._on_wake()
                elif isinstance(key.data, RequestHandler) and key.data.state == _SEND:
                    self._on_writable(key.data)
            self._expire(time.monotonic())
        for conn in list(sending):
            self._give_up_sending(conn, TimeoutError("server stopped"))

    def _wait_idle(self, deadline: float) -> bool:
        with self._all_closed:
            return self._all_closed.wait_for(
                lambda: not self._conns, timeout=max(0.0, deadline - time.monotonic())
            )


def make_server(app: WSGIApp, host: str = "127.0.0.1", port: int = 0, **options: Any) -> Server:
    """A Server already serving in a background thread (server.server_address, server.shutdown(grace))."""
    return Server(app, host, port, **options).start()


# -- systemd integration ------------------------------------------------------


def activated_socket() -> socket.socket | None:
    """The socket systemd passed us (fd 3) if LISTEN_PID is us; clears the LISTEN_* variables."""
    pid = os.environ.get("LISTEN_PID", "")
    fds = os.environ.get("LISTEN_FDS", "")
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)  # so child processes do not think they were activated
    if not (pid.isdigit() and int(pid) == os.getpid() and fds.isdigit() and int(fds) >= 1):
        return None
    os.set_inheritable(SD_LISTEN_FDS_START, False)
    return socket.socket(fileno=SD_LISTEN_FDS_START)


def notify(message: str) -> bool:
    """Send one sd_notify datagram to $NOTIFY_SOCKET; False if unset or it failed."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address[0] == "@":
        address = "\0" + address[1:]  # abstract namespace
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(message.encode(), address)
    except OSError as e:
        log.debug("sd_notify failed: %s", e)
        return False
    return True


def log_listening(url: str, threads: int, activated: bool = False) -> None:
    """The READY line, written at once: INFO lines wait up to logs.FLUSH_INTERVAL, which is for the access log."""
    log.info("listening on %s (%d threads)%s", url, threads, " (socket activation)" if activated else "")
    for handler in logging.getLogger().handlers:
        try:
            handler.flush()
        except (OSError, ValueError):  # stderr closed or broken: serving goes on, as with the flusher
            pass


def notify_ready(status: str = "") -> bool:
    """READY=1 with an optional STATUS= line."""
    return notify("READY=1" + (f"\nSTATUS={status}" if status else ""))


def notify_reloading() -> bool:
    """RELOADING=1 with MONOTONIC_USEC (required by Type=notify-reload on systemd >= 253)."""
    usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    return notify(f"RELOADING=1\nMONOTONIC_USEC={usec}")


def notify_stopping() -> bool:
    """STOPPING=1."""
    return notify("STOPPING=1")


def watchdog_interval() -> float | None:
    """Seconds between WATCHDOG=1 pings (half of WATCHDOG_USEC), or None if not asked for us."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0 or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2e6


def start_watchdog(healthy: Callable[[float], bool] | None = None) -> threading.Event | None:
    """Ping WATCHDOG=1 every WATCHDOG_USEC/2 while healthy(timeout) holds; set the returned Event to stop."""
    interval = watchdog_interval()
    if interval is None:
        return None
    stop = threading.Event()

    def ping() -> None:
        while not stop.wait(interval):
            if healthy is None or healthy(interval * 2):
                notify("WATCHDOG=1")
            else:
                log.error("not healthy: withholding the watchdog ping")

    threading.Thread(target=ping, name="reviewsd-watchdog", daemon=True).start()
    return stop


# -- entry point ---------------------------------------------------------------


def run(
    app: WSGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    threads: int = 8,
    backlog: int = 1024,
    socket_timeout: float = 30.0,
    keepalive_timeout: float = 15.0,
    header_timeout: float = 10.0,
    max_body: int = 1 << 20,
    max_connections: int = 1000,
    send_buffer: int = 0,
    shutdown_grace: float = 10.0,
    on_reload: Callable[[], Any] | None = None,
    on_stop: Callable[[], Any] | None = None,
    on_ready: Callable[[], Any] | None = None,
    ready_status: str = "",
    sock: socket.socket | None = None,
    reload_pending: threading.Event | None = None,
) -> int:
    """Serve `app` until SIGTERM/SIGINT (graceful), reloading on SIGHUP; returns the exit code.

    Call it from the main thread (signal handling).  0 after a clean stop; 1 if
    it could not listen, the serve loop died or on_stop raised; 130 after SIGINT (Ctrl-C).  `sock` is a
    listening socket from `listen()` (so the caller can learn the port first);
    without it, run() takes the socket-activated one or binds host:port.
    `on_ready` runs once on this thread right after READY=1: work that serving need not wait for.
    `reload_pending`, set by the caller's own SIGHUP handler before this took over, reloads after it.
    """
    if not logging.getLogger().handlers:  # nobody configured logging: journald reads stderr
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    activated = sock is None and os.environ.get("LISTEN_FDS") is not None
    try:
        sock = sock or activated_socket()
        server = Server(
            app, host, port, sock=sock, threads=threads, backlog=backlog, socket_timeout=socket_timeout,
            keepalive_timeout=keepalive_timeout, header_timeout=header_timeout, max_body=max_body,
            max_connections=max_connections, send_buffer=send_buffer,
        )
    except OSError as e:
        log.error("cannot listen on %s:%s: %s", host, port, e)
        return 1
    with _SignalPipe((signal.SIGHUP, signal.SIGTERM, signal.SIGINT)) as signals:
        server.start()
        url = _url(server.server_address)
        log_listening(url, threads, activated)
        notify_ready(ready_status or f"listening on {url}")
        if on_ready is not None:
            try:
                on_ready()
            except Exception:  # serving goes on: what it would have done is not needed to serve
                log.exception("the work after READY failed")
        if reload_pending is not None and reload_pending.is_set():
            log.info("a SIGHUP came during start-up")
            _reload(on_reload)
        watchdog = start_watchdog(server.healthy)
        try:
            return _wait_for_signals(server, signals, shutdown_grace, on_reload, on_stop)
        finally:
            if watchdog is not None:
                watchdog.set()


def _url(address: Any) -> str:
    if not isinstance(address, tuple):
        return f"unix:{address}"
    host = f"[{address[0]}]" if ":" in address[0] else address[0]
    return f"http://{host}:{address[1]}"


def _wait_for_signals(
    server: Server, signals: _SignalPipe, grace: float,
    on_reload: Callable[[], Any] | None, on_stop: Callable[[], Any] | None,
) -> int:
    while True:
        for signum in signals.wait(timeout=1.0):
            if signum == signal.SIGHUP:
                _reload(on_reload)
            elif signum in (signal.SIGTERM, signal.SIGINT):
                failed = _stop(server, grace, on_stop, signal.Signals(signum).name)
                return failed or (130 if signum == signal.SIGINT else 0)  # Ctrl-C: the shell's 128 + SIGINT
        if server._stopped.is_set():  # the selector thread died: let systemd restart us
            log.error("server loop ended unexpectedly")
            return _stop(server, 0.0, on_stop, "failure") or 1


def _reload(on_reload: Callable[[], Any] | None) -> None:
    notify_reloading()
    log.info("reloading")
    status = "reloaded"
    try:
        if on_reload is not None:
            on_reload()
    except Exception:
        log.exception("reload failed; still serving the previous state")
        status = "reload failed, serving the previous state"
    notify_ready(status)


def _stop(server: Server, grace: float, on_stop: Callable[[], Any] | None, why: str) -> int:
    notify_stopping()
    log.info("%s: stopping, up to %.1fs for in-flight requests", why, grace)
    server.shutdown(grace)
    try:
        if on_stop is not None:
            on_stop()
    except Exception:
        log.exception("on_stop failed")
        return 1
    log.info("stopped")
    return 0


class _SignalPipe:
    """Turns signals into bytes on a socketpair (signal.set_wakeup_fd).

    The Python-level handlers do nothing: the work (reload, drain, on_stop)
    runs in the main thread's normal frame, never inside a signal handler
    frame where taking a lock the interrupted code holds would deadlock.
    """

    def __init__(self, signums: tuple[int, ...]) -> None:
        self._signums = signums

    def __enter__(self) -> _SignalPipe:
        self._r, self._w = socket.socketpair()
        self._w.setblocking(False)
        self._old_fd = signal.set_wakeup_fd(self._w.fileno(), warn_on_full_buffer=False)
        self._old = {s: signal.signal(s, lambda signum, frame: None) for s in self._signums}
        return self

    def wait(self, timeout: float) -> bytes:
        """Signal numbers received, waiting up to `timeout` seconds for the first."""
        self._r.settimeout(timeout)
        try:
            return self._r.recv(64)
        except TimeoutError:
            return b""

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self._old.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._old_fd)
        self._r.close()
        self._w.close()
