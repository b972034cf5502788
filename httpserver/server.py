"""Production HTTP/1.1 server for any WSGI app: one selector thread and a fixed pool of worker threads.

The selector thread owns every connection that is not running a request: it reads request heads *and
bodies* (so a slow, idle or stalled client costs a buffer, not a thread), enforces the deadlines, the size
limits and the connection caps, and finishes the responses clients read slowly. A worker runs only complete
requests (connection.py), so none ever waits for an upload or a download. docs/internals.md has the design;
service.py is the systemd glue run() uses.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import queue
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..config import client_group, is_trusted
from . import service
from .connection import Connection, server_environ
from .options import ServerOptions
from .parser import HTTPError, Request

WSGIApp = Callable[[dict, Callable[..., Any]], Iterable[bytes]]

log = logging.getLogger("reviewsd.server")

LINGER_SECONDS = 2.0  # how long a closing connection may still send us bytes
LINGER_BYTES = 1 << 20  # and how many we discard before giving up
# At the total cap, a request that has been arriving for this long may be closed to make room: a client
# sending its request at once is never that slow, and a connection just accepted is not closed for another.
SLOW_REQUEST_SECONDS = 1.0
REFUSAL_LOG_INTERVAL = 60.0  # seconds: a client's refusals are logged once per interval, not per connection
# One client may hold this share of the output budget; past it, only its own requests wait. So at least this
# many clients must stall before the total is reached, where the slowest reader's answer is dropped.
OUTPUT_SHARES = 4
MAX_ANSWERED_HERE = 16  # pipelined requests the selector thread answers in a row before a worker takes over
# Seconds a thread waiting for the GIL waits at most (Python's default: 0.005). The selector thread gives
# the GIL up at every system call; behind a CPU-bound search (a text search over 100,000 reviews holds it
# 100 ms and more) it waited up to the interval at each (issue 39). run() sets it for the process.
SWITCH_INTERVAL = 0.001

# Connection states (who owns it and which deadline applies).
_HEAD, _BODY, _IDLE, _LINGER, _BUSY, _SEND, _CLOSED = (
    "head",
    "body",
    "idle",
    "linger",
    "busy",
    "send",
    "closed",
)
_PARKED = "parked"  # a complete request waiting for its client's buffered output to drain below its share

Precomputed = Callable[[str], bool]  # the app's is_precomputed(path): see answers_here


def answers_here(request: Request, precomputed: Precomputed | None, stopping: bool) -> bool:
    """Whether the selector thread answers `request` itself rather than handing it to a worker.

    Only a GET or HEAD without a body whose answer the app has precomputed (`precomputed(path)`, a dictionary
    lookup: a payload route, a rendered page), so the app's call is a lookup and a few header joins, and its
    write never waits (what the socket does not take now is queued, as for any slow reader). The hand-off to
    a worker and back cost two thirds of such a request's CPU (issue 39). The rest goes to the workers.
    """
    return (
        precomputed is not None
        and not stopping
        and request.method in ("GET", "HEAD")
        and not request.body
        and precomputed(request.path)
    )


def listen(host: str, port: int, backlog: int = 1024) -> socket.socket:
    """The socket-activated listening socket, or a new one bound to host:port."""
    return service.activated_socket() or _listen(host, port, backlog)


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


class OncePer:
    """Whether to log a refusal now: once per `interval` per client, so a client opening connections by the
    thousand costs a line a minute. Bounded: past `most` clients, the entries older than the interval go."""

    def __init__(self, interval: float, most: int = 10_000) -> None:
        self.interval, self.most = interval, most
        self._last: dict[str, float] = {}

    def __call__(self, client: str, now: float) -> bool:
        last = self._last.get(client)
        if last is not None and now - last < self.interval:
            return False
        if len(self._last) >= self.most:
            self._last = {c: t for c, t in self._last.items() if now - t < self.interval}
            if len(self._last) >= self.most:
                return False  # so many clients at once: their refusals are counted, not each logged
        self._last[client] = now
        return True


def _set_send_buffer(sock: socket.socket, size: int) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
    # Linux reports twice the size (the other half is for its bookkeeping) and caps it at net.core.wmem_max.
    factor = 2 if sys.platform.startswith("linux") else 1
    got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) // factor
    if got < size:  # not a fault: stock kernels cap it at 208 KiB
        log.info("send buffer of %d bytes asked, the kernel gave %d (net.core.wmem_max caps it)", size, got)


class Server:
    """HTTP/1.1 keep-alive server; its deadlines, send buffer and connection caps: docs/internals.md."""

    next_request_wait_ms = 3  # see Connection._await_next

    def __init__(
        self, app: WSGIApp, options: ServerOptions = ServerOptions(), *, sock: socket.socket | None = None
    ) -> None:
        """Listen on options' host and port, or on `sock` (a listening socket: socket activation, port 0)."""
        self.app = app
        self.options = options
        self.socket = sock if sock is not None else _listen(options.host, options.port, options.backlog)
        self.socket.setblocking(False)
        if options.send_buffer:
            _set_send_buffer(self.socket, options.send_buffer)
        self.server_address = self.socket.getsockname()
        self.threads = options.threads
        self.socket_timeout = options.socket_timeout
        self.keepalive_timeout = options.keepalive_timeout
        self.header_timeout = options.header_timeout
        self.body_timeout = options.body_timeout
        self.max_body = options.max_body
        # Bytes of responses made per request that clients have yet to read (views of shared bodies do not
        # count), in all and by client. Past its share (output_budget / OUTPUT_SHARES) a client's complete
        # requests wait (parked) until its own output drains; past the budget, the slowest readers' answers
        # are dropped. 0: no budget.
        self.output_budget = options.output_budget
        self.buffered_output = 0
        self._output_by_client: collections.Counter[str] = collections.Counter()
        self._parked: dict[str, collections.deque[tuple[Connection, Request]]] = {}
        self._precomputed: Precomputed | None = getattr(app, "is_precomputed", None)
        self.max_connections = options.max_connections
        self.max_per_client = options.max_connections_per_client
        self._trusted = tuple(options.trusted_proxies)
        self.client_prefix_v6 = options.client_prefix_v6
        # open connections by client_group (an IPv4 address, an IPv6 network)
        self._per_client: collections.Counter[str] = collections.Counter()
        self._log_refusal = OncePer(REFUSAL_LOG_INTERVAL)
        self.stopping = False
        self._grace = 10.0
        self._drained = (
            False  # set under the lock: from then on a worker closes the connection it is done with
        )
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Connection, Request] | None] = queue.SimpleQueue()
        self._returned: collections.deque = collections.deque()
        self._conns: set[Connection] = set()
        # Deadlines by state, each in the order they fall (one timeout per state, and a dict keeps its order).
        self._timers: dict[str, dict[Connection, float]] = {
            s: {} for s in (_HEAD, _BODY, _IDLE, _LINGER, _SEND)
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
        self._stopped = threading.Event()
        self._heartbeat = self._progress = time.monotonic()
        self._hard_stop = False
        self._waiting = 0
        self._max_waiting = max(1, options.threads // 2)
        self.environ = server_environ(
            self.server_address
        )  # the part of the WSGI environ every request shares

    def start(self) -> Server:
        """Start the workers and the selector thread, which accepts and serves until shutdown() has
        drained every connection."""
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._resume_accept()
        for i in range(self.threads):
            worker = threading.Thread(target=self._work, name=f"reviewsd-worker-{i}", daemon=True)
            worker.start()
            self._workers.append(worker)
        self._thread = threading.Thread(target=self._serve, name="reviewsd-selector", daemon=True)
        self._thread.start()
        return self

    def shutdown(self, grace: float = 10.0) -> None:
        """Stop accepting, close idle connections, give in-flight requests `grace` seconds, then close all."""
        self._grace = grace
        self.stopping = True
        self._wake()
        if self._thread is None:  # never served
            for obj in (self.socket, self._wake_r, self._wake_w, self._sel):
                obj.close()
        elif self._thread is not threading.current_thread():
            self._stopped.wait()

    def stopped(self) -> bool:
        """True once the selector loop has ended (after a shutdown, or because it died)."""
        return self._stopped.is_set()

    def healthy(self, max_age: float) -> bool:
        """False if the selector loop stalled or queued requests found no worker for `max_age` seconds."""
        now = time.monotonic()
        return now - self._heartbeat <= max_age and (self._jobs.empty() or now - self._progress <= max_age)

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

    # -- selector thread ---------------------------------------------------

    def _serve(self) -> None:
        try:
            while not self.stopping:
                now = self._heartbeat = time.monotonic()
                self._poll(self._next_timeout(now))
        finally:
            self._drain()
            self._stopped.set()

    def _poll(self, timeout: float) -> None:
        """Serve the sockets ready within `timeout` seconds, then the deadlines that have passed."""
        for key, _ in self._sel.select(timeout):
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
                if isinstance(conn, Connection):
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
                if state == _HEAD and conn.parser.buf:
                    self._reject(conn, HTTPError(408, "request head not received in time"))
                elif state == _BODY:
                    self._reject(
                        conn, HTTPError(408, f"request body not received within {self.body_timeout:g}s")
                    )
                elif state == _SEND:
                    self._give_up_sending(conn, TimeoutError("response not read in time"))
                else:
                    self._close(conn)
        if self._accept_retry_at and now >= self._accept_retry_at:
            self._accept_retry_at = 0.0
            self._resume_accept()

    def _accept(self) -> None:
        for i in range(64):  # bounded so a connect storm cannot starve the other sockets
            if len(self._conns) >= self.max_connections:
                # Evict only on the first round, when a pending connection is
                # known to exist (the listener is level-triggered).
                if i:
                    return
                if not self._close_idle() and not self._close_slowest():
                    self._pause_accept(retry_in=SLOW_REQUEST_SECONDS / 4)
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
            group = client_group(str(address[0]), self.client_prefix_v6)
            if not self._room_for_client(str(address[0]), group):
                self._note_refusal(group, f"over {self.max_per_client} connections: a new one closed")
                sock.close()
                return
        conn = Connection(sock, address, self)
        conn.group = client_group(conn.client, self.client_prefix_v6)
        self._per_client[conn.group] += 1
        self._conns.add(conn)
        self._watch(conn, _HEAD, self.header_timeout)

    def _room_for_client(self, client: str, group: str) -> bool:
        """Below the per-client cap, or brought below it by closing that client's longest-idle connection."""
        return (
            not self.max_per_client
            or self._per_client[group] < self.max_per_client
            or is_trusted(client, self._trusted)
            or self._close_idle(group)
        )

    def _close_idle(self, group: str | None = None) -> bool:
        """Close the longest-idle keep-alive connection (of client `group` if given); False if none idles."""
        for conn in self._timers[_IDLE]:  # longest idle first
            if group is None or conn.group == group:
                self._close(conn)
                return True
        return False

    def _close_slowest(self) -> bool:
        """At the total cap with none idle: close the connection whose request head or body has been arriving
        for the longest, the slowest to make progress (a client sending its request at once is never it).
        Trickling requests one after another, never idle, must not let a few clients hold every connection."""
        oldest: tuple[float, Connection] | None = None
        for state, timeout in ((_HEAD, self.header_timeout), (_BODY, self.body_timeout)):
            for conn, deadline in self._timers[state].items():  # the first is the oldest of its state
                if oldest is None or deadline - timeout < oldest[0]:
                    oldest = (deadline - timeout, conn)
                break
        if oldest is None or time.monotonic() - oldest[0] < SLOW_REQUEST_SECONDS:
            return False
        conn = oldest[1]
        self._note_refusal(
            conn.group,
            f"connection closed at the cap of {self.max_connections}: its request was the slowest to arrive "
            f"({time.monotonic() - oldest[0]:.1f}s)",
        )
        self._close(conn)
        return True

    def _note_refusal(self, group: str, what: str) -> None:
        """One WARNING line per client per minute, however many connections it is refused."""
        if self._log_refusal(group, time.monotonic()):
            log.warning(
                "refused %s: %s (its refusals are logged once a minute)",
                group,
                what,
                extra={"event": "client_refused", "client": group},
            )

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

    def _watch(
        self, conn: Connection, state: str, timeout: float, events: int = selectors.EVENT_READ
    ) -> None:
        self._timers.get(conn.state, {}).pop(conn, None)  # busy and closed connections have no deadline
        conn.state = state
        self._timers[state][conn] = time.monotonic() + timeout  # last in the order: the latest deadline
        if not conn.registered:
            self._sel.register(conn.connection, events, conn)
        elif conn.registered != events:
            self._sel.modify(conn.connection, events, conn)
        conn.registered = events

    def _unwatch(self, conn: Connection) -> None:
        self._timers.get(conn.state, {}).pop(conn, None)
        if conn.registered:
            self._sel.unregister(conn.connection)
            conn.registered = 0

    def _close(self, conn: Connection) -> None:
        self._unwatch(conn)
        conn.connection.close()
        if conn.counted_output:
            conn.unsent = None
            self._count_output(conn)
        if conn in self._conns:
            self._conns.discard(conn)
            self._per_client[conn.group] -= 1
            if not self._per_client[conn.group]:
                del self._per_client[conn.group]
        conn.state = _CLOSED
        if not self._accepting and len(self._conns) < self.max_connections:
            self._resume_accept()

    def _on_readable(self, conn: Connection) -> None:
        try:
            data = conn.connection.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(conn)
        elif conn.state == _LINGER:
            conn.lingered += len(data)  # discarded; counted so a firehose cannot keep us here
            if conn.lingered > LINGER_BYTES:
                self._close(conn)
        else:
            if conn.state == _IDLE:
                self._watch(conn, _HEAD, self.header_timeout)
            conn.parser.feed(data)
            self._examine(conn)

    def _examine(self, conn: Connection) -> None:
        """Answer complete precomputed requests here, dispatch any other, answer a refused one, or wait for
        the rest of it."""
        parser = conn.parser
        for answered in range(MAX_ANSWERED_HERE + 1):
            try:
                request = parser.next_request()
            except HTTPError as e:
                self._reject(conn, e)
                return
            if request is None:
                if conn.state == _BUSY:  # answered here, and the next request has begun to arrive
                    self._watch(conn, _HEAD, self.header_timeout)
                break
            if answered < MAX_ANSWERED_HERE and answers_here(request, self._precomputed, self.stopping):
                # Its deadline goes, its registration stays: the connection is back in the selector as soon
                # as it is answered (no epoll_ctl DEL and ADD, and their bookkeeping, per request).
                self._timers.get(conn.state, {}).pop(conn, None)
                self._answer_here(conn, request)
                if conn.unsent is not None or conn.close_connection or not parser.started:
                    self._take_back(conn)
                    return
                continue  # the next pipelined request
            self._unwatch(conn)
            if self._over_share(conn):  # a worker's once this client's output has drained
                conn.state = _PARKED
                self._parked.setdefault(conn.group, collections.deque()).append((conn, request))
                return
            conn.state = _BUSY
            self._jobs.put((conn, request))
            return
        if parser.pending is not None and conn.state != _BODY:
            self._watch(
                conn, _BODY, self.body_timeout
            )  # one deadline for the whole body, this once per request
            if parser.pending.expect_continue and not parser.buf:
                try:  # a 25-byte send on a connection with nothing else unsent: the socket takes it
                    conn.connection.send(b"HTTP/1.1 100 Continue\r\n\r\n")
                except OSError:
                    self._close(conn)

    def _answer_here(self, conn: Connection, request: Request) -> None:
        """Serve a precomputed answer on this thread as a worker would (the same call, log line, errors)."""
        conn.state = _BUSY
        try:
            conn.serve(request, at_once=True)
        except Exception:
            log.exception("error serving %s", conn.client_address)
            conn.close_connection, conn.linger = True, False
            conn.parser.buf.clear()
        if conn.unsent is None:
            conn.environ = None

    def _over_share(self, conn: Connection) -> bool:
        """Whether this connection's client holds more than its share of the output budget (a trusted proxy,
        many clients in one, is held to the total only)."""
        return (
            bool(self.output_budget)
            and self._output_by_client[conn.group] > self.output_budget // OUTPUT_SHARES
            and not is_trusted(conn.client, self._trusted)
        )

    def _reject(self, conn: Connection, error: HTTPError) -> None:
        self._note_refusal(conn.group, f"{error.status} {error.message}")
        conn.refuse(error)
        self._take_back(conn)  # sent like a large response's rest, then lingering so the client reads it

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
        while self._returned:
            self._take_back(self._returned.popleft())

    def _count_output(self, conn: Connection) -> None:
        """Count (or, with 0, stop counting) what this connection holds of responses made for it."""
        held = conn.unsent_own if conn.unsent is not None else 0
        self.buffered_output += held - conn.counted_output
        self._output_by_client[conn.group] += held - conn.counted_output
        conn.counted_output = held
        if not self._output_by_client[conn.group]:
            del self._output_by_client[conn.group]
        parked = self._parked.get(conn.group)
        while parked and not self._over_share(conn):
            waiting, request = parked.popleft()
            if waiting.state == _PARKED:
                waiting.state = _BUSY
                self._jobs.put((waiting, request))
        if parked is not None and not parked:
            del self._parked[conn.group]

    def _drop_slowest_readers(self) -> None:
        """Over the output budget: close the connections that read least recently, those holding answers made
        for them, until back under it. Every client's new requests go on being served; theirs are dropped."""
        while self.output_budget and self.buffered_output > self.output_budget:
            slowest = next((c for c in self._timers[_SEND] if c.counted_output), None)
            if slowest is None:
                return
            self._note_refusal(
                slowest.group,
                f"output budget of {self.output_budget} bytes full: the answer read least recently dropped",
            )
            self._give_up_sending(slowest, TimeoutError("dropped at the output budget"))

    def _take_back(self, conn: Connection) -> None:
        """A connection a worker is done with: send the rest of its response, then keep, linger or close."""
        if conn.counted_output or conn.unsent_own:
            self._count_output(conn)
        if conn.unsent is not None:
            self._watch(conn, _SEND, self.socket_timeout, selectors.EVENT_WRITE)
            self._on_writable(conn)  # the client may have read some since the worker tried
            if conn.counted_output:  # the newest in line: the slowest readers are dropped first
                self._drop_slowest_readers()
        elif not conn.close_connection and not self.stopping:
            if conn.parser.started:  # a partial pipelined request
                self._watch(conn, _HEAD, self.header_timeout)
                self._examine(conn)
            else:
                self._watch(conn, _IDLE, self.keepalive_timeout)
                self._resume_accept()  # an idle connection can now make room
        elif conn.close_connection and (conn.linger or conn.parser.buf) and not self.stopping:
            try:
                conn.connection.shutdown(socket.SHUT_WR)  # FIN after the response, keep reading
            except OSError:
                self._close(conn)
                return
            conn.parser.buf.clear()
            self._watch(conn, _LINGER, LINGER_SECONDS)
        else:
            self._close(conn)

    def _on_writable(self, conn: Connection) -> None:
        try:
            sent = conn.send_unsent()
        except OSError as e:
            self._give_up_sending(conn, e)
            return
        if conn.unsent is None:
            self._take_back(conn)
        elif sent:  # the client read: a new deadline
            self._watch(conn, _SEND, self.socket_timeout, selectors.EVENT_WRITE)

    def _give_up_sending(self, conn: Connection, error: BaseException) -> None:
        conn.drop(error)
        conn.log_unsent()
        self._close(conn)

    # -- workers -----------------------------------------------------------

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            conn, request = job
            self._progress = time.monotonic()
            if not self._hard_stop:  # else it is closed unserved, as the drain closes every connection
                try:
                    conn.handle(request)
                except Exception:
                    log.exception("error serving %s", conn.client_address)
                    conn.close_connection, conn.linger = True, False  # closed, not lingering
                    conn.parser.buf.clear()
            del job, request  # its body is not kept while this worker waits for the next
            self._release(conn)

    def _release(self, conn: Connection) -> None:
        with self._lock:
            if not self._drained:
                self._returned.append(conn)  # the selector thread sends any rest, then settles it
                self._wake()
                return
        # Only after a hard stop (which shut the socket down)
        # and the second after it: no selector loop runs now.
        if conn.unsent is not None:
            conn.log_unsent()
        conn.connection.close()

    # -- stopping ----------------------------------------------------------

    def _drain(self) -> None:
        """After the loop: close what is idle, serve the rest up to the grace, shut it down, give the workers
        1 s."""
        deadline = time.monotonic() + self._grace
        self.socket.close()
        for conn in list(self._conns):
            if conn.state not in (_BUSY, _SEND):
                self._close(conn)
        if not self._settle(deadline):
            self._hard_stop = True
            for conn in list(self._conns):
                if conn.state == _SEND:
                    self._give_up_sending(conn, TimeoutError("server stopped"))
                else:
                    with contextlib.suppress(OSError):
                        conn.connection.shutdown(socket.SHUT_RDWR)  # unblocks a worker stuck on this client
            self._settle(time.monotonic() + 1.0)
        with self._lock:
            self._drained = True
        self._on_wake()  # what the workers handed back since the last poll
        for _ in self._workers:
            self._jobs.put(None)
        for worker in self._workers:
            worker.join(timeout=max(0.0, deadline + 1.0 - time.monotonic()))
        for obj in (self._wake_r, self._wake_w, self._sel):
            obj.close()

    def _settle(self, deadline: float) -> bool:
        """On a stop: serve the connections left as the loop does, until `deadline`; True once they are
        all gone."""
        while self._conns and (now := time.monotonic()) < deadline:
            self._poll(min(self._next_timeout(now), deadline - now))
        return not self._conns


def make_server(app: WSGIApp, host: str = "127.0.0.1", port: int = 0, **options: Any) -> Server:
    """A Server already serving in a background thread (server.server_address, server.shutdown(grace));
    `options` are ServerOptions'."""
    return Server(app, ServerOptions(host=host, port=port, **options)).start()


def run(
    app: WSGIApp,
    options: ServerOptions | None = None,
    *,
    on_reload: Callable[[], Any] | None = None,
    on_stop: Callable[[], Any] | None = None,
    on_ready: Callable[[], Any] | None = None,
    ready_status: str = "",
    sock: socket.socket | None = None,
    reload_pending: threading.Event | None = None,
    **changes: Any,
) -> int:
    """Serve `app` as a systemd service until SIGTERM/SIGINT (graceful), reloading on SIGHUP; the exit code.

    Call it from the main thread (signal handling). `sock` is a listening socket from `listen()` (so the
    caller can learn the port first); without it, run() takes the socket-activated one or binds options'
    host:port; `changes` replace some of `options`. `on_ready` runs once on this thread right after READY=1:
    work that serving need not wait for. `reload_pending`, set by the caller's own SIGHUP handler before
    this took over, reloads after it. 0 after a clean stop; 130 after SIGINT (Ctrl-C); 1 if it could not
    listen, the serve loop died or on_stop raised.
    """
    logging.basicConfig(
        level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )  # to stderr, for journald
    sys.setswitchinterval(SWITCH_INTERVAL)
    options = (options or ServerOptions()).replaced(**changes)
    try:
        activated = service.activated_socket() if sock is None else None
        server = Server(app, options, sock=sock or activated)
    except OSError as e:
        log.error("cannot listen on %s:%s: %s", options.host, options.port, e)
        return 1
    with service.signal_socket((signal.SIGHUP, signal.SIGTERM, signal.SIGINT)) as signals:
        server.start()
        url = _url(server.server_address)
        service.log_listening(url, server.threads, activated is not None)
        service.notify_ready(ready_status or f"listening on {url}")
        # Serving goes on if it fails: what it would have done is not needed to serve.
        service.call_hook(on_ready, "the work after READY failed")
        if reload_pending is not None and reload_pending.is_set():
            log.info("a SIGHUP came during start-up")
            service.reload(on_reload)
        watchdog = service.start_watchdog(server.healthy)
        signals.settimeout(1.0)
        try:
            while True:
                try:
                    received = signals.recv(64)
                except TimeoutError:
                    received = b""
                for signum in received:
                    if signum == signal.SIGHUP:
                        service.reload(on_reload)
                    elif signum in (signal.SIGTERM, signal.SIGINT):
                        failed = service.stop(
                            server.shutdown, options.shutdown_grace, on_stop, signal.Signals(signum).name
                        )
                        return failed or (
                            130 if signum == signal.SIGINT else 0
                        )  # Ctrl-C: the shell's 128 + SIGINT
                if server.stopped():  # the selector thread died: let systemd restart us
                    log.error("server loop ended unexpectedly")
                    return service.stop(server.shutdown, 0.0, on_stop, "failure") or 1
        finally:
            watchdog.set()


def _url(address: Any) -> str:
    if not isinstance(address, tuple):
        return f"unix:{address}"
    host = f"[{address[0]}]" if ":" in address[0] else address[0]
    return f"http://{host}:{address[1]}"
