"""Issue 39: precomputed answers served on the selector thread that read them, never waiting for a client."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any
from urllib.parse import urlencode

from polling import wait_until
from support.http import WAIT, connect, read_response, serving
from support.hub import FakeOutbound, form

from reviewsd_app.httpserver import server
from reviewsd_app.httpserver.parser import Request

PRECOMPUTED = frozenset({"/feed", "/big"})
BIG = 8 << 20  # larger than what loopback's socket buffers take at once (send_buffer below bounds ours)
SHARED = bytes(range(256)) * (BIG // 256)


def slow_reader(srv: server.Server, path: str) -> socket.socket:
    """A client that asks for `path` and reads none of it (a small receive buffer: the rest waits with us)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(WAIT)
    sock.connect(srv.server_address[:2])
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    return sock


def request(method: str = "GET", path: str = "/feed", body: bytes | None = None) -> Request:
    return Request(method, path, "HTTP/1.1", [], "t", path, "", True, False, body)


def test_only_bodiless_reads_of_precomputed_paths_are_answered_here() -> None:
    precomputed = PRECOMPUTED.__contains__
    assert server.answers_here(request(), precomputed, stopping=False)
    assert server.answers_here(request("HEAD"), precomputed, stopping=False)
    assert not server.answers_here(request(path="/search"), precomputed, stopping=False)
    assert not server.answers_here(request("POST"), precomputed, stopping=False)
    assert not server.answers_here(request(body=b"x"), precomputed, stopping=False)
    assert server.answers_here(request(body=b""), precomputed, stopping=False)  # Content-Length: 0
    assert not server.answers_here(request(), precomputed, stopping=True)
    assert not server.answers_here(request(), None, stopping=False)


class ThreadApp:
    """Says which thread answered; /big is a view of a shared body larger than the socket buffers."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def is_precomputed(self, path: str) -> bool:
        return path in PRECOMPUTED

    def __call__(self, environ: dict, start_response: Any) -> list[Any]:
        path = environ["PATH_INFO"]
        if path == "/slow":  # holds the one worker until released
            self.release.wait(WAIT)
        body: Any = memoryview(SHARED) if path == "/big" else threading.current_thread().name.encode()
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]


def test_precomputed_answers_come_from_the_selector_thread_and_the_rest_from_workers() -> None:
    with serving(ThreadApp()) as srv, connect(srv) as sock:
        sock.sendall(b"GET /feed HTTP/1.1\r\nHost: t\r\n\r\nGET /other HTTP/1.1\r\nHost: t\r\n\r\n")
        f = sock.makefile("rb")
        assert read_response(f)[2] == b"reviewsd-selector"
        assert read_response(f)[2].startswith(b"reviewsd-worker-")


def test_a_long_pipeline_of_precomputed_requests_is_answered_in_order() -> None:
    count = 3 * server.MAX_ANSWERED_HERE + 1  # past the run the selector answers, a worker takes over
    with serving(ThreadApp()) as srv, connect(srv) as sock:
        sock.sendall(b"".join(b"GET /feed HTTP/1.1\r\nHost: t\r\n\r\n" for _ in range(count)))
        sock.sendall(b"HEAD /feed HTTP/1.1\r\nHost: t\r\n\r\nGET /other HTTP/1.1\r\nHost: t\r\n\r\n")
        f = sock.makefile("rb")
        threads = {read_response(f)[2] for _ in range(count)}
        assert b"reviewsd-selector" in threads
        code, headers, body = read_response(f, head=True)
        assert code == 200 and body == b""
        assert read_response(f)[2].startswith(b"reviewsd-worker-")


def test_a_client_not_reading_a_precomputed_answer_stalls_neither_the_selector_nor_its_workers() -> None:
    app = ThreadApp()
    with serving(app, threads=1, send_buffer=65536) as srv:
        readers = [slow_reader(srv, "/big") for _ in range(3)]  # each answer left mostly unsent
        busy = connect(srv)
        try:
            busy.sendall(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")  # the one worker is held
            with connect(srv) as sock:
                sock.settimeout(2.0)
                sock.sendall(b"GET /feed HTTP/1.1\r\nHost: t\r\n\r\n")
                assert read_response(sock.makefile("rb"))[2] == b"reviewsd-selector"
            assert wait_until(lambda: sum(1 for c in srv._conns if c.unsent) == 3, WAIT)
            assert srv.buffered_output == 0  # views of a shared body: nothing counted
            app.release.set()
            assert read_response(busy.makefile("rb"))[0] == 200
        finally:
            app.release.set()
            for sock in [*readers, busy]:
                sock.close()


def test_a_precomputed_answer_larger_than_the_socket_buffers_arrives_whole() -> None:
    with serving(ThreadApp(), send_buffer=65536) as srv:
        sock = socket.create_connection(srv.server_address[:2], timeout=WAIT)
        with sock:
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\nGET /feed HTTP/1.1\r\nHost: t\r\n\r\n")
            f = sock.makefile("rb")
            code, headers, body = read_response(f)
            assert code == 200 and len(body) == BIG and body == SHARED
            assert read_response(f)[2] == b"reviewsd-selector"


def test_the_app_names_its_payloads_and_the_review_pages_already_rendered(app: Any) -> None:
    from werkzeug.test import Client

    review_id = next(iter(app.store.current.dataset.position_of))
    assert app.is_precomputed("/api/feed.json") and app.is_precomputed("/")
    assert not app.is_precomputed("/api/reviews/search")
    assert app.is_precomputed("/healthz")  # built from memory
    assert not app.is_precomputed(f"/reviews/{review_id}")  # rendered by a worker when first asked
    assert Client(app).get(f"/reviews/{review_id}").status_code == 200
    assert app.is_precomputed(f"/reviews/{review_id}")
    assert not app.is_precomputed("/reviews/no-such-review")


def test_the_app_calls_precomputed_every_path_its_fast_path_answers_from_a_payload(app: Any) -> None:
    """One rule for both: a payload's path with one trailing slash is answered from the payload by __call__,
    so the server answers it on the selector thread too (it went to the workers before)."""
    from werkzeug.test import Client

    client = Client(app)
    for path, payload in app.store.current.payloads.items():
        # (the test client would read "///" as a URL with a host: the root's variants are left out)
        for variant in (path, path + "/", path + "//") if path != "/" else (path,):
            from_payload = client.get(variant).headers.get("ETag") == payload.identity.etag
            assert app.is_precomputed(variant) == from_payload, variant
    assert app.is_precomputed("/api/feed.json/")
    assert not app.is_precomputed("/api/feed.json//")


def test_a_sweep_over_review_pages_does_not_evict_the_widget(app: Any, monkeypatch: Any) -> None:
    from werkzeug.test import Client

    from reviewsd_app.web import snapshot

    monkeypatch.setattr(snapshot, "PAGE_CACHE_ENTRIES", 2)
    client = Client(app)
    widget = app.store.current._widgets
    assert client.get("/widget?count=3").status_code == 200 and len(widget) == 1
    first = next(iter(widget.values()))
    for review_id in list(app.store.current.dataset.position_of)[:5]:  # more pages than the cache holds
        assert client.get(f"/reviews/{review_id}").status_code == 200
    assert len(app.store.current._pages) == 2
    assert next(iter(widget.values())) is first  # the variant rendered once, still kept


def test_a_request_begun_behind_one_answered_here_has_the_head_deadline() -> None:
    with serving(ThreadApp(), header_timeout=0.3) as srv, connect(srv) as sock:
        sock.sendall(b"GET /feed HTTP/1.1\r\nHost: t\r\n\r\nGET /fe")  # the second never ends
        f = sock.makefile("rb")
        assert read_response(f)[2] == b"reviewsd-selector"
        code, _, body = read_response(f)
        assert code == 408 and b"request_timeout" in body


def test_healthz_answers_at_once_while_the_hub_store_is_held_and_every_worker_waits(make_hub: Any) -> None:
    """/healthz is answered on the selector thread from what the hub holds in memory: not behind a worker
    (it waited 2.3-2.6 s under bench/attacks.py stall-output), nor behind the hub store's lock, which a write
    to a locked database holds for up to SQLite's timeout (10 s)."""
    app = make_hub(FakeOutbound())
    subscription = urlencode(form()).encode()
    with serving(app, threads=1) as srv, connect(srv) as hub_client, connect(srv) as prober:
        with app.hub.db._lock:  # as a write to a locked database holds it
            hub_client.sendall(  # the one worker takes it, then waits for the store's lock
                b"POST /api/websub/hub HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded"
                b"\r\nContent-Length: %d\r\n\r\n%s" % (len(subscription), subscription)
            )
            prober.settimeout(5.0)  # the lock is held until the answer comes, or this runs out
            prober.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            code, headers, body = read_response(prober.makefile("rb"))
        assert code == 200 and headers["cache-control"] == "no-store"
        document = json.loads(body)
        assert document["status"] == "ok" and document["hub"]["subscriptions"] == 0
        assert read_response(hub_client.makefile("rb"))[0] == 202  # served once the lock was let go


def test_healthz_answers_at_once_while_the_events_store_is_held(tmp_path: Any) -> None:
    """With --notify too: the events' counts come from memory, not from SQLite behind the store's lock."""
    from support.factories import Spec, make_docs, write_docs

    from reviewsd_app import reviewsd

    write_docs(tmp_path / "data", *make_docs([Spec(rating=5, date="2025-03-01")]))
    (tmp_path / "secret").write_text("whsec_" + "A" * 32)
    (tmp_path / "secret").chmod(0o600)
    notify = tmp_path / "notify.toml"
    notify.write_text('[[webhooks]]\nurl = "https://hooks.example.com/r"\nsecret_file = "secret"\n')
    config = reviewsd.Config(
        data_dir=str(tmp_path / "data"),
        state_dir=str(tmp_path / "state"),
        reload_interval=0,
        hub=False,
        notify=str(notify),
    )
    app = reviewsd.create_app(config)
    try:
        assert wait_until(lambda: app.notifier.problem is None and app.notifier.db.seen() is not None, WAIT)
        with serving(app) as srv, connect(srv) as prober:
            with app.notifier.db._lock:  # as a write to a locked database holds it
                prober.settimeout(5.0)
                prober.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
                code, _, body = read_response(prober.makefile("rb"))
        events = json.loads(body)["events"]
        assert code == 200 and events["available"] and events["pending_deliveries"] == 0
    finally:
        app.notifier.stop(2.0)


def test_one_answer_gets_the_head_each_request_needs_though_heads_are_kept() -> None:
    """The same status and headers, asked in turn as GET, HEAD, HTTP/1.0 and with Connection: close: each
    head frames and closes as that request needs (a head once made is kept, but for its Date line)."""

    def app(environ: dict, start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain"), ("ETag", '"same"')])
        return [b"hello"]

    with serving(app) as srv, connect(srv) as sock:
        f = sock.makefile("rb")
        for _ in range(2):  # made, then kept
            sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            code, headers, body = read_response(f)
            assert (code, body, headers["content-length"], headers["server"]) == (
                200,
                b"hello",
                "5",
                "reviewsd",
            )
            assert "connection" not in headers and headers["date"].endswith(" GMT")
            sock.sendall(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n")
            code, headers, _ = read_response(f, head=True)
            assert code == 200 and "content-length" not in headers and "transfer-encoding" not in headers
        sock.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        code, headers, body = read_response(f)
        assert body == b"hello" and headers["connection"] == "keep-alive"
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        code, headers, body = read_response(f)
        assert body == b"hello" and headers["connection"] == "close"
        assert f.read() == b""  # and closed
