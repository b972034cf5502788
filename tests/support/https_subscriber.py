"""A real HTTPS WebSub callback server for tests: programmable per path, recording every request.

    sub = HTTPSSubscriber(cert).start()          # cert from trustme: ca.issue_cert("127.0.0.1", "localhost")
    sub.set("/cb", verify="wrong")               # how /cb answers (see Behaviour)
    hub receives sub.url("/cb?id=1")
    sub.wait_for(1, path="/cb", method="POST")   # blocks until recorded, or fails after a deadline

Requests are recorded when fully read, before the behaviour runs, so a slow
callback's request is visible while it is still being answered. TLS handshakes
run on the connection's own thread, so a stuck client blocks nobody else.
The fixtures `ca`, `ca_file` and `subscriber` are importable into test modules.
"""

from __future__ import annotations

import ssl
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import trustme


@dataclass
class Behaviour:
    """How one path answers. Verification GETs and POSTs are programmed separately."""

    verify: str = "echo"  # "echo" the challenge, "wrong" body, "status" (verify_status, no body), "redirect"
    verify_status: int = 200
    redirect_to: str = ""  # Location for verify="redirect" and post_status 3xx
    post_status: int = 204
    fail_posts: int = 0  # the first N POSTs answer 500
    delay: float = 0.0  # seconds before answering a POST (ends early when the server stops)
    denied_status: int = 200  # answer to hub.mode=denied notices


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float = field(default_factory=time.monotonic)

    @property
    def params(self) -> dict[str, list[str]]:
        return parse_qs(self.query, keep_blank_values=True)

    def param(self, name: str) -> str | None:
        values = self.params.get(name)
        return values[-1] if values else None


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        record = self._record(b"")
        behaviour = self.server.owner.behaviour(record.path)
        mode = record.param("hub.mode")
        if mode == "denied":
            self._answer(behaviour.denied_status)
        elif behaviour.verify == "redirect":
            self._answer(302, headers=[("Location", behaviour.redirect_to)])
        elif behaviour.verify == "status":
            self._answer(behaviour.verify_status)
        elif behaviour.verify == "wrong":
            self._answer(200, b"not-the-challenge")
        else:
            self._answer(behaviour.verify_status, (record.param("hub.challenge") or "").encode())

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        record = self._record(self.rfile.read(length))
        behaviour = self.server.owner.behaviour(record.path)
        if behaviour.delay:
            self.server.owner.released.wait(behaviour.delay)
        if self.server.owner.take_failure(record.path):
            self._answer(500, b"failing on purpose")
        elif 300 <= behaviour.post_status < 400:
            self._answer(behaviour.post_status, headers=[("Location", behaviour.redirect_to)])
        else:
            self._answer(behaviour.post_status)

    def _record(self, body: bytes) -> Recorded:
        parts = urlsplit(self.path)
        record = Recorded(
            self.command, parts.path, parts.query, {k.lower(): v for k, v in self.headers.items()}, body
        )
        self.server.owner.add(record)
        return record

    def _answer(self, status: int, body: bytes = b"", headers: list[tuple[str, str]] = ()) -> None:
        try:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the hub went away (timeout, or killed on purpose)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, owner: "HTTPSSubscriber", address: tuple[str, int], context: ssl.SSLContext):
        self.owner = owner
        self.context = context
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        # The TLS handshake runs here, on the connection's thread, not in accept().
        request.settimeout(30)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up are part of the tests


class HTTPSSubscriber:
    """An HTTPS callback server on 127.0.0.1 in a background thread."""

    def __init__(self, cert: trustme.LeafCert, host: str = "127.0.0.1"):
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        self._server = _Server(self, (host, 0), context)
        self.host = host
        self.port = self._server.server_address[1]
        self.released = threading.Event()
        self._cond = threading.Condition()
        self._records: list[Recorded] = []
        self._behaviours: dict[str, Behaviour] = {}
        self._failures_left: dict[str, int] = {}
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="https-subscriber",
            daemon=True,
        )

    def start(self) -> "HTTPSSubscriber":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "HTTPSSubscriber":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def url(self, path_and_query: str) -> str:
        return f"https://{self.host}:{self.port}{path_and_query}"

    # ----------------------------------------------------------------- behaviour

    def set(self, path: str, **changes: Any) -> None:
        """Program how `path` answers from now on (fields of Behaviour)."""
        with self._cond:
            self._behaviours[path] = replace(self._behaviours.get(path, Behaviour()), **changes)
            if "fail_posts" in changes:
                self._failures_left[path] = changes["fail_posts"]

    def behaviour(self, path: str) -> Behaviour:
        with self._cond:
            return self._behaviours.get(path, Behaviour())

    def take_failure(self, path: str) -> bool:
        with self._cond:
            left = self._failures_left.get(path, 0)
            if left > 0:
                self._failures_left[path] = left - 1
            return left > 0

    # ----------------------------------------------------------------- records

    def add(self, record: Recorded) -> None:
        with self._cond:
            self._records.append(record)
            self._cond.notify_all()

    def requests(
        self, path: str | None = None, method: str | None = None, mode: str | None = None
    ) -> list[Recorded]:
        """Recorded requests, oldest first, filtered by path, method and hub.mode."""
        with self._cond:
            return [r for r in self._records if _matches(r, path, method, mode)]

    def wait_until(
        self, predicate: Callable[[list[Recorded]], bool], timeout: float = 10.0
    ) -> list[Recorded]:
        """All records once `predicate(records)` holds; AssertionError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(list(self._records)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"subscriber: condition not met within {timeout}s; "
                        f"got {[(r.method, r.path, r.param('hub.mode')) for r in self._records]}"
                    )
                self._cond.wait(remaining)
            return list(self._records)

    def wait_for(
        self,
        count: int,
        path: str | None = None,
        method: str | None = None,
        mode: str | None = None,
        timeout: float = 10.0,
    ) -> list[Recorded]:
        """The first `count` matching requests, once that many have arrived."""
        self.wait_until(
            lambda records: sum(_matches(r, path, method, mode) for r in records) >= count, timeout
        )
        return self.requests(path, method, mode)[:count]


def _matches(record: Recorded, path: str | None, method: str | None, mode: str | None) -> bool:
    return (
        (path is None or record.path == path)
        and (method is None or record.method == method)
        and (mode is None or record.param("hub.mode") == mode)
    )


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="session")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
def subscriber(ca: trustme.CA) -> Iterator[HTTPSSubscriber]:
    with HTTPSSubscriber(ca.issue_cert("127.0.0.1", "localhost")) as server:
        yield server
