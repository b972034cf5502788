"""One client connection: its request parser, the WSGI call and the response it writes.

A worker calls handle() once the selector thread (server.py) has read a request whole, head *and*
body: a worker never reads a request body from the socket.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import select
import socket
import sys
import time
from collections.abc import Callable
from email.utils import formatdate
from typing import Any, NamedTuple, Protocol
from urllib.parse import unquote_to_bytes

from ..logs import direct_info_handler
from ..web.responses import error_code, reason_phrase, with_common_headers
from .parser import HTTPError, Request, RequestParser

log = logging.getLogger("reviewsd.server")
access_log = logging.getLogger("reviewsd.access")

SERVER_NAME = "reviewsd"
MAX_PIPELINED = 16  # requests a worker serves in a row before yielding the connection
IOV_BATCH = 64  # buffers per sendmsg (Linux takes up to 1024)
# In every environ: the app may return any buffers (a memoryview: a view of a body shared by every request,
# not counted in the output budget; bytes: made for this request), several making one body, beyond PEP
# 3333's bytes.
BUFFERS_KEY = "reviewsd.buffers"

_HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection")
)
_CONTROL_CHARS = str.maketrans({c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]})


def error_response(code: int, message: str) -> bytes:
    """A complete `Connection: close` response with the project's JSON error body."""
    reason = reason_phrase(code)
    error = error_code(code, reason)
    # Compact, like every body of the app (dataset.encode_json), which this module does not import.
    body = json.dumps({"error": error, "message": message}, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )
    head = (
        f"HTTP/1.1 {code} {reason}\r\n"
        f"Date: {http_date()}\r\nServer: {SERVER_NAME}\r\n"
        "Content-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in with_common_headers(()))
        + "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


def server_environ(address: Any) -> dict:
    """The part of the WSGI environ every request to a server listening on `address` shares."""
    name, port = (address[0], str(address[1])) if isinstance(address, tuple) else (str(address), "")
    return {
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "wsgi.input_terminated": True,  # our wsgi.input ends at the body's end
        BUFFERS_KEY: True,
        "SERVER_SOFTWARE": SERVER_NAME,
        "SCRIPT_NAME": "",
        "SERVER_NAME": name,
        "SERVER_PORT": port,
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "0",
    }


def http_date() -> str:
    return _http_date(int(time.time()))


@functools.lru_cache(maxsize=1)  # formatdate costs a few microseconds: once per second
def _http_date(second: int) -> str:
    return formatdate(second, usegmt=True)


@functools.lru_cache(maxsize=1)
def _http_date_line(second: int) -> bytes:
    return f"Date: {_http_date(second)}\r\n".encode("latin-1")


@functools.lru_cache(maxsize=1024)  # names repeat across requests; bounded: they are the client's to choose
def _environ_key(name: str) -> str | None:
    if "_" in name:
        return None  # like werkzeug: X_Forwarded_For must not impersonate X-Forwarded-For
    key = name.upper().replace("-", "_")
    return key if key in ("CONTENT_LENGTH", "CONTENT_TYPE") else "HTTP_" + key


class Head(NamedTuple):
    """A response head made from a status and headers, but for its Date line, and how it frames the body."""

    start: bytes  # the status line and the app's headers
    dated: bool  # the Date line goes between start and rest (the app did not give its own)
    rest: bytes  # Server, framing, Connection, the blank line
    code: int
    body_allowed: bool
    length: int | None  # Content-Length, when the body has one
    chunked: bool
    close: bool  # the connection closes after this response


# Heads kept by status, headers and what frames the body: an answer seen before costs a lookup and the Date
# line instead of a pass over its headers (2.3 of about 23 us of CPU per precomputed answer, issue 39).
# Bounded (heads differ by ETag: a few per data version).
@functools.lru_cache(maxsize=1024)
def _head(
    status: str,
    headers: tuple[tuple[str, str], ...],
    head_only: bool,
    v11: bool,
    length_hint: int | None,
    close: bool,
) -> Head:
    """The head of a response with this status and these headers (see Head); ValueError on CR or LF in one."""
    code = int(status[:3])
    parts = ["HTTP/1.1 ", status if len(status) > 3 else status + " ", "\r\n"]
    length = None
    dated, server = True, True
    for name, value in headers:
        lname = name.lower()
        if lname == "content-length":
            if code < 200 or code == 204:  # RFC 9110 8.6: never on a 1xx or 204, whatever the app says
                continue
            length = int(value)
        elif lname in _HOP_BY_HOP:  # framing and persistence are the server's job
            if lname == "connection" and "close" in value.lower():
                close = True
            continue
        elif lname == "date":  # the app's own
            dated = False
        elif lname == "server":
            server = False
        parts.append(f"{name}: {value}\r\n")
    start = len(parts)
    if server:
        parts.append(f"Server: {SERVER_NAME}\r\n")
    body_allowed = not (head_only or code < 200 or code == 204 or code == 304)
    chunked = False
    if body_allowed:
        if length is None and length_hint is not None:
            length = length_hint
            parts.append(f"Content-Length: {length}\r\n")
        if length is None and v11:
            chunked = True
            parts.append("Transfer-Encoding: chunked\r\n")
        elif length is None:
            close = True  # HTTP/1.0 without a length: the body ends at close
    if close:
        parts.append("Connection: close\r\n")
    elif not v11:
        parts.append("Connection: keep-alive\r\n")
    parts.append("\r\n")
    text = "".join(parts)
    # One check for the whole head instead of one per header: the only CR and LF allowed are the line ends
    # we wrote (one per part after the first two), so a header value cannot inject lines.
    if text.count("\n") != len(parts) - 2 or text.count("\r") != len(parts) - 2:
        raise ValueError("CR or LF in a response header")
    return Head(
        "".join(parts[:start]).encode("latin-1"),
        dated,
        "".join(parts[start:]).encode("latin-1"),
        code,
        body_allowed,
        length if body_allowed else None,
        chunked,
        close,
    )


def unsent_size(views: list[memoryview]) -> int:
    return sum(map(len, views))


def advanced(views: list[memoryview], sent: int) -> list[memoryview]:
    """What is left of `views` once their first `sent` bytes went."""
    for i, view in enumerate(views):
        if sent < len(view):
            return [view[sent:], *views[i + 1 :]]
        sent -= len(view)
    return []


class ConnectionHost(Protocol):
    """What a connection needs of the server that accepted it (server.Server is one)."""

    app: Callable[[dict, Callable], Any]  # the WSGI application
    environ: dict  # the part of the WSGI environ every request shares
    max_body: int
    socket_timeout: float
    stopping: bool
    next_request_wait_ms: int

    def may_wait_for_next(self) -> bool: ...

    def done_waiting(self) -> None: ...


class Connection:
    """One client connection; its state and deadlines are the server's to manage."""

    def __init__(self, sock: socket.socket, client_address: Any, server: ConnectionHost) -> None:
        self.connection = sock
        self.client_address = client_address
        self.client = str(client_address[0]) if isinstance(client_address, tuple) and client_address else ""
        self.group = self.client  # who it counts against in the per-client caps (the server's to set)
        self.server = server
        self.parser = RequestParser(server.max_body)
        self.state = ""
        self.registered = 0  # the selector events the socket is registered for; 0: not registered
        self.close_connection = False
        self.linger = False
        self.lingered = 0  # bytes discarded while lingering
        self.environ: dict | None = None
        self.command: str | None = None
        # A response's last bytes, for the selector thread to send: views of its parts, in order.
        self.unsent: list[memoryview] | None = None
        # Of those, the bytes made for this request (not views of a shared body): the server's output budget.
        self.unsent_own = 0
        self.counted_output = 0  # what the server counts of it (its to update)
        self._unsent_log: tuple[int, int, float | None] = (
            0,
            0,
            None,
        )  # its access line's status, size and start
        self._at_once = False  # serving on the selector thread: no write may wait (server.answers_here)
        self._base_environ = server.environ.copy()
        if self.client:
            self._base_environ.update(REMOTE_ADDR=self.client, REMOTE_PORT=str(client_address[1]))

    def handle(self, request: Request) -> None:
        """Serve `request` and any complete requests buffered behind it."""
        for served in range(1, MAX_PIPELINED + 1):
            self.serve(request)
            if self.close_connection or self.unsent is not None or served == MAX_PIPELINED:
                break  # the next request, if any, stays in the parser for the selector thread
            request = self._next_buffered()
            if (
                request is None
                and not self.close_connection
                and not self.parser.started
                and self._await_next()
            ):
                request = self._next_buffered()
            if request is None:
                break
        if self.unsent is None:
            self.environ = None  # logged: nothing reads it again (log_unsent lets go of a handed-off one)

    def _next_buffered(self) -> Request | None:
        """The next request if it is complete in the buffer (None otherwise; a refusal is answered)."""
        try:
            return self.parser.next_request()
        except HTTPError as e:
            self.refuse(e)
            return None

    def serve(self, request: Request, at_once: bool = False) -> None:
        """Run the app on one request, write the response, log it. `at_once` (the selector thread's own
        answers): never wait for the client; what the socket does not take now is left in `unsent`."""
        start = time.perf_counter()
        self._at_once = at_once
        self.command = request.method
        self.environ = self.make_environ(request)
        self.close_connection = not request.keep_alive
        self._status = self._headers = None
        self._headers_sent = False
        self._io_failed = False
        self._chunked = False
        self._left: int | None = None
        self._bytes = 0
        self._status_code = 500
        self._length_hint: int | None = None
        try:
            try:
                self._execute()
            except Exception:
                if self._io_failed:
                    raise
                log.exception("error in WSGI app for %s %s", self.command, self.environ.get("REQUEST_URI"))
                self.close_connection = True
                if not self._headers_sent:
                    self._status_code, self._bytes = 500, 0
                    self._send(error_response(500, "internal server error"))
        except Exception as e:  # only when the client's I/O failed: nothing more to say to it
            self.drop(e)
        if self.unsent is not None:  # logged once the selector thread has sent it (or given up)
            self._unsent_log = (self._status_code, self._bytes, start)
        else:
            self.log_request(self._status_code, self._bytes, start)

    def _await_next(self) -> bool:
        """Wait briefly for this client's next request; True if bytes arrived.

        A client on keep-alive usually sends its next request within a few hundred microseconds; catching it
        here skips the hand-back to the selector thread (epoll_ctl, wake-up, queue) that costs more than the
        request itself.  Server.may_wait_for_next() keeps this from delaying other clients; the wait is a few
        milliseconds, never a body's.
        """
        server = self.server
        if not server.may_wait_for_next():
            return False
        try:
            poll = select.poll()  # made each time: 0.2 us more than one kept on the connection
            poll.register(self.connection, select.POLLIN)
            if not poll.poll(server.next_request_wait_ms):
                return False
            data = self.connection.recv(65536)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as e:
            self.drop(e)
            return False
        finally:
            server.done_waiting()
        if not data:
            self.close_connection = True  # the client closed its side
            return False
        self.parser.feed(data)
        return True

    def drop(self, error: BaseException) -> None:
        """The client left or stopped reading mid-response: close without lingering, nothing left to say."""
        self.close_connection = True
        self.linger = False
        self.parser.buf.clear()
        log.debug("connection from %s dropped: %s", self.client, error)

    def refuse(self, error: HTTPError) -> None:
        """Answer a refused request, logged with its target and method as far as they were read, then linger.

        The answer is left unsent for the selector thread, which sends it as it does a large response's rest
        (waiting up to socket_timeout for the client to read) and logs it once it went.
        """
        response = error_response(error.status, error.message)
        self.close_connection = self.linger = True
        self.environ = {"REQUEST_URI": error.target} if error.target else None
        self.command = error.method
        self.unsent = [memoryview(response)]
        self.unsent_own = len(response)
        self._unsent_log = (error.status, len(response) - response.index(b"\r\n\r\n") - 4, None)

    def _send(self, data: bytes, *, head: bytes = b"", last: bool = False) -> None:
        """Send `head` then `data`; the rest of a response's `last` write goes to the selector thread."""
        # Non-blocking first: almost always the whole response fits in the
        # socket buffer and this is a single syscall (a timeout socket would
        # poll() before every send).
        sock = self.connection
        if self._at_once and self.unsent is not None:  # behind what is already waiting, in order
            self.unsent += [view for view in (memoryview(head), memoryview(data)) if view]
            self.unsent_own += 0 if isinstance(data, memoryview) else len(data)
            return
        try:
            try:
                sent = sock.sendmsg([head, data]) if head else sock.send(data)
            except BlockingIOError:
                sent = 0
            if sent < len(head) + len(data) and self._at_once:
                left = advanced([memoryview(head), memoryview(data)], sent)
                self.unsent = [view for view in left if view]
                self.unsent_own = 0 if isinstance(data, memoryview) else len(data)
                return
            if sent < len(head):
                self._send_waiting(memoryview(head)[sent:])
                sent = len(head)
            sent -= len(head)
            if sent < len(data):
                if last and not self.server.stopping:
                    # The client reads slower than we write (a large body, a slow
                    # link): the selector thread sends the rest as the client takes
                    # it, so this worker is free for other requests.
                    self.unsent = [memoryview(data)[sent:]]
                    self.unsent_own = 0 if isinstance(data, memoryview) else len(data)
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

    def _send_parts(self, parts: list[bytes | memoryview]) -> None:
        """Send a response written in parts (its head first) without joining them; the rest, if the socket
        does not take it all now, goes to the selector thread like a large body's."""
        sock = self.connection
        own = sum(len(part) for part in parts if not isinstance(part, memoryview))
        try:
            try:
                left = advanced([memoryview(part) for part in parts if part], sock.sendmsg(parts[:IOV_BATCH]))
            except BlockingIOError:
                left = [memoryview(part) for part in parts if part]
            if not left:
                return
            if self._at_once or not self.server.stopping:
                self.unsent, self.unsent_own = left, own
                return
            for view in left:
                self._send_waiting(view)
        except OSError:
            self._io_failed = True
            raise

    def send_unsent(self) -> int:
        """Send what the socket takes now of `unsent`, without waiting; the bytes sent. The access line is
        logged once all of it went."""
        unsent = self.unsent
        total = unsent_size(unsent)
        try:
            for _ in range(4):  # bounded: one client must not hold the selector thread
                sent = (
                    self.connection.send(unsent[0])
                    if len(unsent) == 1
                    else self.connection.sendmsg(unsent[:IOV_BATCH])
                )
                unsent = advanced(unsent, sent)
                if not unsent:
                    break
        except (BlockingIOError, InterruptedError):
            pass
        finally:
            self.unsent = unsent
        if not unsent:
            self.log_unsent()
        return total - unsent_size(unsent)

    def log_unsent(self) -> None:
        """The access line of a response whose end the selector thread sent; its size is the body's bytes
        that went."""
        code, size, start = self._unsent_log
        self.log_request(code, max(0, size - unsent_size(self.unsent or [])), start)
        self.environ = None
        self.unsent = None  # what did not go is let go of
        self.unsent_own = 0

    def make_environ(self, request: Request) -> dict:
        environ = self._base_environ.copy()
        for name, value in request.headers:
            key = _environ_key(name)
            if key is None or key == "HTTP_TRANSFER_ENCODING":  # the body is decoded already
                continue
            old = environ.get(key)
            environ[key] = value if old is None or key == "CONTENT_TYPE" else f"{old},{value}"
        if request.host is not None:
            environ["HTTP_HOST"] = request.host
        path = request.path
        if "%" in path:  # the WSGI "bytes as latin-1" convention, as werkzeug expects
            path = unquote_to_bytes(path).decode("latin-1")
        environ["PATH_INFO"] = path
        environ["QUERY_STRING"] = request.query
        environ["REQUEST_URI"] = environ["RAW_URI"] = request.target
        environ["REQUEST_METHOD"] = request.method
        environ["SERVER_PROTOCOL"] = request.version
        if request.body is not None:
            environ["CONTENT_LENGTH"] = str(len(request.body))
        environ["wsgi.input"] = io.BytesIO(request.body or b"")
        self._v11 = request.version == "HTTP/1.1"
        return environ

    def _execute(self) -> None:
        result = self.server.app(self.environ, self.start_response)
        try:
            if type(result) is list and len(result) == 1:
                self._length_hint = len(result[0])  # frame it with Content-Length, not chunks
            elif type(result) is list and result:
                self._length_hint = sum(map(len, result))
                if self._write_parts(result):
                    return
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
        head = b"" if self._headers_sent else self._response_head()
        framed = self._frame(data) if data else b""
        if head and len(data) <= 65536:  # one send for head and body: the common case
            head, framed = b"", head + framed
        # A large body is not worth copying onto the head: one sendmsg takes both.
        if head or framed:  # nothing after a body that has all its Content-Length
            self._send(framed, head=head, last=self._left == 0)

    def _write_parts(self, parts: list[bytes | memoryview]) -> bool:
        """Write a whole body given in parts, each as it is (a view of a shared body stays a view); False if
        it does not fit its Content-Length, which write() then frames part by part."""
        head = self._response_head()
        if not self._body_allowed:
            self._send_parts([head])
            return True
        if self._chunked or self._left != self._length_hint:
            self._headers_sent = False  # the head is sent by the first write()
            return False
        self._left = 0
        self._bytes += self._length_hint
        self._send_parts([head, *parts])
        return True

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
        close = self.close_connection or self.server.stopping
        args = (status, tuple(self._headers), self.command == "HEAD", self._v11, self._length_hint, close)
        try:
            head = _head(*args)
        except TypeError:  # a header given as a list, not a tuple (PEP 3333 asks for tuples): made each time
            head = _head.__wrapped__(*args)
        self._status_code = head.code
        self._body_allowed = head.body_allowed
        if head.length is not None:
            self._left = head.length
        self._chunked = head.chunked
        self.close_connection = head.close
        self._headers_sent = True
        if not head.dated:
            return head.start + head.rest
        return head.start + _http_date_line(int(time.time())) + head.rest

    def log_request(self, code: int | str = "-", size: int | str = "-", start: float | None = None) -> None:
        """One access-log line; the fields are also record attributes for structured formatters."""
        if not access_log.isEnabledFor(logging.INFO):
            return
        duration_ms = round((time.perf_counter() - start) * 1000, 3) if start is not None else 0.0
        environ = self.environ or {}
        # Read after the app ran: the app may name the client (X-Forwarded-For
        # from a trusted proxy) in "reviewsd.client" or rewrite REMOTE_ADDR like ProxyFix.
        client = (
            environ.get("reviewsd.client")
            or environ.get("REMOTE_ADDR")
            or self._base_environ.get("REMOTE_ADDR", "-")
        )
        method = self.command or "-"
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
        extra = {
            "method": method,
            "path": path,
            "status": code,
            "bytes": size,
            "duration_ms": duration_ms,
            "client": client,
        }
        access_log.handle(
            access_log.makeRecord(access_log.name, logging.INFO, __file__, 0, message, (), None, extra=extra)
        )
