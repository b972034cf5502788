"""Tests for server.py: real sockets on 127.0.0.1, tiny WSGI apps of their own, bounded waits."""

from __future__ import annotations

import contextlib
import gc
import http.client
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until
from support.http import (
    WAIT,
    assert_json_error,
    closed_within,
    connect,
    exchange,
    read_response,
    serving,
)

from reviewsd_app.httpserver import server, service
from reviewsd_app.httpserver.parser import MAX_REQUEST_LINE, Request

REPO = Path(__file__).resolve().parents[1]

# -- tiny apps ---------------------------------------------------------------------


def chunks_app(environ: dict, start_response: Any) -> Iterator[bytes]:
    """No Content-Length: the server must frame it."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    yield b"hello "
    yield b"world"


class Gate:
    """An app that blocks in /slow until released, so a request can be held in flight."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, environ: dict, start_response: Any) -> list[bytes]:
        if environ["PATH_INFO"] == "/slow":
            self.started.set()
            self.release.wait(WAIT * 2)
        start_response("200 OK", [("Content-Length", "4")])
        return [b"done"]


# -- raw HTTP helpers --------------------------------------------------------------


class Fetched:
    """A finished response from get(): status, header lookup, body; the connection is closed."""

    def __init__(self, resp: http.client.HTTPResponse) -> None:
        self.status, self.headers, self.body = resp.status, resp.headers, resp.read()

    def getheader(self, name: str) -> str | None:
        return self.headers.get(name)


def get(host_port: tuple, path: str = "/") -> Fetched:
    conn = http.client.HTTPConnection(*host_port[:2], timeout=WAIT)
    try:
        conn.request("GET", path)
        return Fetched(conn.getresponse())
    finally:
        conn.close()


# -- keep-alive and framing --------------------------------------------------------


def test_keep_alive_two_requests_on_one_connection() -> None:
    with serving() as srv:
        conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=WAIT)
        ports = []
        for path in ("/a", "/b?x=1"):
            conn.request("GET", path)
            resp = conn.getresponse()
            assert resp.status == 200
            assert resp.getheader("Connection") is None
            ports.append(json.loads(resp.read())["port"])
        assert ports[0] == ports[1]  # same TCP connection on the server side
        conn.close()


def test_http10_without_keep_alive_gets_close() -> None:
    with serving() as srv, connect(srv) as sock:
        sock.sendall(b"GET /old HTTP/1.0\r\n\r\n")
        code, headers, body = read_response(sock.makefile("rb"))
        assert code == 200 and headers["connection"] == "close"
        assert json.loads(body)["path"] == "/old"
        assert closed_within(sock, WAIT)


def test_http10_keep_alive_when_asked() -> None:
    with serving() as srv, connect(srv) as sock:
        f = sock.makefile("rb")
        for _ in range(2):
            sock.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            code, headers, _ = read_response(f)
            assert code == 200 and headers["connection"] == "keep-alive"


def test_client_connection_close_is_honoured() -> None:
    with serving() as srv, connect(srv) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        code, headers, _ = read_response(sock.makefile("rb"))
        assert code == 200 and headers["connection"] == "close"
        assert closed_within(sock, WAIT)


def test_response_without_length_is_chunked_and_connection_reusable() -> None:
    with serving(chunks_app) as srv:
        conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=WAIT)
        for _ in range(2):
            conn.request("GET", "/")
            resp = conn.getresponse()
            assert resp.getheader("Transfer-Encoding") == "chunked"
            assert resp.read() == b"hello world"
        conn.close()


def test_http10_response_without_length_ends_at_close() -> None:
    with serving(chunks_app) as srv:
        code, headers, body = exchange(srv, b"GET / HTTP/1.0\r\n\r\n")
        assert code == 200 and body == b"hello world"
        assert "transfer-encoding" not in headers and headers["connection"] == "close"


def test_head_has_no_body_and_keeps_framing() -> None:
    with serving() as srv, connect(srv) as sock:
        f = sock.makefile("rb")
        sock.sendall(b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n")
        code, headers, _ = read_response(f, head=True)
        assert code == 200 and int(headers["content-length"]) > 0
        sock.sendall(b"GET /next HTTP/1.1\r\nHost: t\r\n\r\n")
        assert json.loads(read_response(f)[2])["path"] == "/next"


def test_pipelined_requests_answered_in_order() -> None:
    with serving() as srv, connect(srv) as sock:
        sock.sendall(b"GET /1 HTTP/1.1\r\nHost: t\r\n\r\nGET /2 HTTP/1.1\r\nHost: t\r\n\r\n")
        f = sock.makefile("rb")
        assert [json.loads(read_response(f)[2])["path"] for _ in range(2)] == ["/1", "/2"]


@pytest.mark.parametrize("pipelined", [False, True])
def test_many_requests_on_one_connection_are_all_answered(pipelined: bool) -> None:
    # More than a worker serves in a row (connection.MAX_PIPELINED): the rest go back to the
    # selector thread, none lost; one at a time, each arrives while the worker waits for the next.
    requests = [b"GET /%d HTTP/1.1\r\nHost: t\r\n\r\n" % i for i in range(40)]
    with serving() as srv, connect(srv) as sock:
        f = sock.makefile("rb")
        if pipelined:
            sock.sendall(b"".join(requests))
        paths = []
        for request in requests:
            if not pipelined:
                sock.sendall(request)
            paths.append(json.loads(read_response(f)[2])["path"])
        assert paths == [f"/{i}" for i in range(40)]


def test_percent_encoded_path_and_query() -> None:
    with serving() as srv:
        body = json.loads(get(srv.server_address, "/caf%C3%A9/x?q=a%20b").body)
        assert body["path"] == "/café/x".encode().decode("latin-1")  # WSGI's latin-1 convention
        assert body["query"] == "q=a%20b"


# -- limits ------------------------------------------------------------------------


def test_request_line_over_8k_is_414() -> None:
    with serving() as srv:
        long_path = "/" + "a" * 9000
        response = exchange(srv, f"GET {long_path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        assert_json_error(response, 414, "uri_too_long")


def test_refusal_is_logged_with_its_status_and_body_size(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="reviewsd.access")
    with serving() as srv:
        status, _, body = exchange(srv, f"GET /{'a' * 9000} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        assert wait_until(lambda: any(r.name == "reviewsd.access" for r in caplog.records))
    record = next(r for r in caplog.records if r.name == "reviewsd.access")
    assert (record.status, record.bytes) == (414, len(body)) and status == 414


def test_request_line_of_exactly_8k_passes() -> None:
    with serving() as srv:
        path = "/" + "a" * (MAX_REQUEST_LINE - len("GET / HTTP/1.1"))
        line = f"GET {path} HTTP/1.1"
        assert len(line) == MAX_REQUEST_LINE
        assert exchange(srv, f"{line}\r\nHost: t\r\n\r\n".encode())[0] == 200


def test_request_line_limit_holds_while_the_line_arrives_in_pieces() -> None:
    line = ("GET /" + "a" * (MAX_REQUEST_LINE - len("GET / HTTP/1.1")) + " HTTP/1.1").encode()
    with serving() as srv, connect(srv) as sock:
        sock.sendall(line + b"\r")  # exactly at the limit, LF not yet sent
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(1)  # no premature 414
        sock.settimeout(WAIT)
        sock.sendall(b"\nHost: t\r\n\r\n")
        assert read_response(sock.makefile("rb"))[0] == 200


def test_body_readinto_at_the_end_does_not_block() -> None:
    def read_twice(environ: dict, start_response: Any) -> list[bytes]:
        stream, buf = environ["wsgi.input"], bytearray(10)
        first = stream.readinto(buf)
        second = stream.readinto(buf)  # nothing left: must return 0, not wait for more
        out = f"{first},{second}".encode()
        start_response("200 OK", [("Content-Length", str(len(out)))])
        return [out]

    with serving(read_twice) as srv:
        response = exchange(srv, b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
        assert response[2] == b"3,0"


def test_headers_over_32k_are_431() -> None:
    with serving() as srv:
        response = exchange(srv, b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + b"b" * 33000 + b"\r\n\r\n")
        assert_json_error(response, 431, "request_header_fields_too_large")


def test_more_than_100_header_lines_are_431() -> None:
    with serving() as srv:

        def request(n: int) -> bytes:
            return (
                b"GET / HTTP/1.1\r\nHost: t\r\n"
                + b"".join(b"X-%d: v\r\n" % i for i in range(n - 1))
                + b"\r\n"
            )

        assert exchange(srv, request(100))[0] == 200
        assert_json_error(exchange(srv, request(101)), 431, "request_header_fields_too_large")


def test_body_over_max_body_is_413_before_reading_it() -> None:
    with serving(max_body=1000) as srv, connect(srv) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\n\r\n")  # body never sent
        assert_json_error(read_response(sock.makefile("rb")), 413, "body_too_large")


def test_413_is_logged_with_method_and_path(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="reviewsd.access")
    with serving(max_body=1000) as srv:
        exchange(srv, b"POST /upload?x=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\n\r\n")
        assert wait_until(lambda: any(r.name == "reviewsd.access" for r in caplog.records))
    record = next(r for r in caplog.records if r.name == "reviewsd.access")
    assert (record.method, record.path, record.status) == ("POST", "/upload?x=1", 413)


def test_413_is_readable_while_the_client_still_sends_its_body() -> None:
    # The server lingers after answering so the client gets the 413, not a reset.
    with serving(max_body=1000) as srv, connect(srv) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 200000\r\n\r\n" + b"x" * 200000)
        assert read_response(sock.makefile("rb"))[0] == 413


def test_body_exactly_at_max_body_passes() -> None:
    with serving(max_body=1000) as srv:
        response = exchange(srv, b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n" + b"x" * 1000)
        assert response[0] == 200 and json.loads(response[2])["len"] == 1000


def test_expect_100_continue() -> None:
    with serving() as srv, connect(srv) as sock:
        f = sock.makefile("rb")
        sock.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        assert read_response(f)[0] == 100
        sock.sendall(b"hello")
        code, _, body = read_response(f)
        assert code == 200 and json.loads(body)["len"] == 5


def test_chunked_request_body() -> None:
    with serving() as srv, connect(srv) as sock:
        f = sock.makefile("rb")
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        )
        assert json.loads(read_response(f)[2])["len"] == 11
        sock.sendall(b"GET /again HTTP/1.1\r\nHost: t\r\n\r\n")  # still in sync
        assert json.loads(read_response(f)[2])["path"] == "/again"


def test_unread_body_is_skipped_before_the_next_request() -> None:
    def ignore_body(environ: dict, start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    with serving(ignore_body) as srv, connect(srv) as sock:
        f = sock.makefile("rb")
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789"
            b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
        )
        assert [read_response(f)[2] for _ in range(2)] == [b"ok", b"ok"]


def test_a_204_goes_out_without_content_length_even_when_the_app_sets_one() -> None:
    def no_content(environ: dict, start_response: Any) -> list[bytes]:
        start_response("204 No Content", [("Content-Length", "0"), ("X-Kept", "yes")])
        return [b""]

    with serving(no_content) as srv, connect(srv) as sock:
        f = sock.makefile("rb")
        sock.sendall(b"OPTIONS / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n")
        for _ in range(2):  # the connection stays in step after it
            code, headers, body = read_response(f)
            assert (code, body, headers["x-kept"], "content-length" in headers) == (204, b"", "yes", False)


@pytest.mark.parametrize(
    "framing, body",
    [
        (b"Content-Length: 5", b"hello"),
        (b"Transfer-Encoding: chunked", b"5\r\nhello\r\n0\r\n\r\n"),
    ],
)
def test_100_continue_comes_from_the_server_before_the_app_runs(framing: bytes, body: bytes) -> None:
    # The server reads bodies itself, so it asks for the body (100) and the app sees it whole;
    # the final answer never precedes a 100, whatever the app does.
    def ignore_body(environ: dict, start_response: Any) -> list[bytes]:
        start_response("405 Method Not Allowed", [("Content-Length", "2")])
        return [b"no"]

    with serving(ignore_body) as srv, connect(srv) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n" + framing + b"\r\n\r\n")
        f = sock.makefile("rb")
        assert read_response(f)[0] == 100
        sock.sendall(body)
        assert read_response(f)[0::2] == (405, b"no")
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")  # still in step
        assert read_response(f)[0::2] == (405, b"no")


def test_no_100_continue_for_a_body_over_max_body() -> None:
    with serving(max_body=10) as srv, connect(srv) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
        f = sock.makefile("rb")
        assert_json_error(read_response(f), 413, "body_too_large")


@pytest.mark.parametrize(
    "request_bytes, code",
    [
        (b"GET / HTTP/1.1\r\n\r\n", 400),  # HTTP/1.1 without Host
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1e3\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n folded\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost : t\r\n\r\n", 400),
        (b"GET /  HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET nopath HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 400),  # chunked is not final
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
    ],
)
def test_malformed_requests_get_json_errors(request_bytes: bytes, code: int) -> None:
    with serving() as srv:
        status, headers, body = exchange(srv, request_bytes)
        assert status == code and headers["connection"] == "close"
        assert set(json.loads(body)) == {"error", "message"}


# -- errors and logging ------------------------------------------------------------


def test_app_exception_is_500_json(caplog: pytest.LogCaptureFixture) -> None:
    def broken(environ: dict, start_response: Any) -> list[bytes]:
        raise RuntimeError("boom")

    with serving(broken) as srv:
        assert_json_error(exchange(srv, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"), 500, "internal_server_error")
    assert any("boom" in (r.exc_text or "") for r in caplog.records if r.name == "reviewsd.server")


def test_header_injection_from_app_is_refused() -> None:
    def injector(environ: dict, start_response: Any) -> list[bytes]:
        start_response("200 OK", [("X-A", "1\r\nSet-Cookie: evil=1"), ("Content-Length", "0")])
        return [b""]

    with serving(injector) as srv:
        status, headers, _ = exchange(srv, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        assert status == 500 and "set-cookie" not in headers


def test_access_log_record_carries_fields(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="reviewsd.access")
    with serving() as srv:
        assert get(srv.server_address, "/logged?page=2").status == 200
        # the record is emitted just after the response is sent
        assert wait_until(lambda: any(r.name == "reviewsd.access" for r in caplog.records))
    record = next(r for r in caplog.records if r.name == "reviewsd.access")
    assert (record.method, record.path, record.status, record.client) == (
        "GET",
        "/logged?page=2",
        200,
        "127.0.0.1",
    )
    assert record.bytes > 0 and record.duration_ms >= 0
    assert "/logged?page=2" in record.getMessage()


def test_access_log_uses_the_client_the_app_names(caplog: pytest.LogCaptureFixture) -> None:
    def behind_proxy(environ: dict, start_response: Any) -> list[bytes]:
        environ["reviewsd.client"] = environ["HTTP_X_FORWARDED_FOR"]  # the app decided to trust it
        start_response("204 No Content", [])
        return []

    caplog.set_level(logging.INFO, logger="reviewsd.access")
    with serving(behind_proxy) as srv:
        exchange(srv, b"GET / HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 203.0.113.7\r\n\r\n")
        assert wait_until(lambda: any(r.name == "reviewsd.access" for r in caplog.records))
    record = next(r for r in caplog.records if r.name == "reviewsd.access")
    assert (record.client, record.status, record.bytes) == ("203.0.113.7", 204, 0)


# -- slow, idle and many clients ---------------------------------------------------


def open_many(srv: server.Server, n: int) -> list[socket.socket]:
    return [socket.create_connection(srv.server_address[:2], timeout=WAIT) for _ in range(n)]


@pytest.mark.slow
def test_slow_clients_do_not_stop_a_normal_client() -> None:
    baseline = threading.active_count()
    with serving(threads=4, max_connections_per_client=0) as srv:
        slow = open_many(srv, 200)
        stop = threading.Event()
        head = b"GET /slow-client HTTP/1.1\r\nHost: t\r\nX-Pad: " + b"p" * 200 + b"\r\n\r\n"

        def trickle() -> None:  # one byte per connection every 0.2 s
            for i in range(len(head)):
                for sock in slow:
                    sock.send(head[i : i + 1])
                if stop.wait(0.2):
                    return

        feeder = threading.Thread(target=trickle)
        feeder.start()
        try:
            until = time.monotonic() + 1.5  # several trickle rounds
            for _ in range(100):
                start = time.monotonic()
                assert get(srv.server_address).status == 200
                assert time.monotonic() - start < 1.0
                assert threading.active_count() <= baseline + 4 + 2  # workers + selector + feeder
                if start > until:
                    break
                stop.wait(0.05)  # pacing between probes, not synchronisation
        finally:
            stop.set()
            feeder.join(WAIT)
            for sock in slow:
                sock.close()


def test_header_timeout_closes_a_stalled_connection() -> None:
    with serving(header_timeout=0.3) as srv, connect(srv) as sock, connect(srv) as silent:
        sock.sendall(b"GET / HTTP/1.1\r\nHost:")
        assert read_response(sock.makefile("rb"))[0] == 408
        assert closed_within(sock, WAIT)
        assert closed_within(silent, WAIT)  # never sent a byte: closed without a response


def test_idle_keep_alive_connection_is_closed_after_keepalive_timeout() -> None:
    with serving(keepalive_timeout=0.4) as srv, connect(srv) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        read_response(sock.makefile("rb"))
        start = time.monotonic()
        assert closed_within(sock, WAIT)
        assert time.monotonic() - start >= 0.3  # kept open while merely idle


def test_threads_stay_bounded_with_300_idle_connections() -> None:
    baseline = threading.active_count()
    with serving(threads=4, max_connections_per_client=0) as srv:
        idle = open_many(srv, 300)
        try:
            for sock in idle[:150]:  # half of them become idle keep-alive connections
                sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            for sock in idle[:150]:
                assert read_response(sock.makefile("rb"))[0] == 200
            assert threading.active_count() <= baseline + 4 + 1
            start = time.monotonic()
            assert get(srv.server_address).status == 200
            assert time.monotonic() - start < 1.0
        finally:
            for sock in idle:
                sock.close()


def test_at_max_connections_the_longest_idle_is_closed() -> None:
    with serving(max_connections=3) as srv:
        idle = open_many(srv, 3)
        try:
            for n, sock in enumerate(idle, 1):
                sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                read_response(sock.makefile("rb"))
                # The worker hands the connection back after the client has its answer:
                # wait for it, so that idle[0] is the longest idle one.
                assert wait_until(lambda: len(srv._timers[server._IDLE]) == n)
            assert get(srv.server_address).status == 200
            assert closed_within(idle[0], WAIT)
        finally:
            for sock in idle:
                sock.close()


def test_at_max_connections_without_idle_ones_new_clients_wait() -> None:
    with serving(max_connections=2) as srv:
        busy = open_many(srv, 2)
        try:
            for sock in busy:
                sock.sendall(b"GET / HTTP/1.1\r\n")  # partial heads: not idle, not evictable
            with connect(srv) as waiting:
                waiting.sendall(b"GET /late HTTP/1.1\r\nHost: t\r\n\r\n")
                waiting.settimeout(0.3)
                with pytest.raises(TimeoutError):
                    waiting.recv(1)  # sits in the listen backlog
                busy[0].close()
                waiting.settimeout(WAIT)
                assert json.loads(read_response(waiting.makefile("rb"))[2])["path"] == "/late"
        finally:
            for sock in busy:
                sock.close()


# -- graceful shutdown -------------------------------------------------------------


def refuses_connections(address: tuple) -> bool:
    try:
        socket.create_connection(address[:2], timeout=0.5).close()
    except OSError:
        return True
    return False


def test_graceful_shutdown_finishes_in_flight_and_refuses_new() -> None:
    gate = Gate()
    srv = server.make_server(gate, "127.0.0.1", 0, threads=2)
    address = srv.server_address
    idle = connect(srv)
    idle.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
    read_response(idle.makefile("rb"))
    result: dict[str, Any] = {}

    def slow_request() -> None:
        resp = get(address, "/slow")
        result["status"], result["connection"], result["body"] = (
            resp.status,
            resp.getheader("Connection"),
            resp.body,
        )

    client = threading.Thread(target=slow_request)
    client.start()
    assert gate.started.wait(WAIT)
    stopper = threading.Thread(target=srv.shutdown, args=(5.0,))
    stopper.start()
    try:
        assert wait_until(lambda: refuses_connections(address))
        assert closed_within(idle, WAIT)  # idle keep-alive connections are closed at once
        assert stopper.is_alive()  # still waiting for the in-flight request
    finally:
        gate.release.set()
        client.join(WAIT)
        stopper.join(WAIT)
        idle.close()
    assert not stopper.is_alive()
    assert result == {"status": 200, "connection": "close", "body": b"done"}


@pytest.mark.slow
def test_shutdown_closes_requests_that_outlive_the_grace() -> None:
    gate = Gate()
    srv = server.make_server(gate, "127.0.0.1", 0, threads=2)
    try:
        with connect(srv) as sock:
            sock.sendall(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            assert gate.started.wait(WAIT)
            start = time.monotonic()
            srv.shutdown(0.3)
            assert time.monotonic() - start < 3.0
            assert closed_within(sock, WAIT)
    finally:
        gate.release.set()


# -- large responses: the selector thread sends what the client reads slowly --------


BIG = bytes(range(256)) * 65536  # 16 MiB
SMALL_BUFFER = 65536  # the server's send buffer: BIG never fits, whatever the machine's autotuning allows


class BigApp:
    """/big answers BIG (Content-Length framed, one block), anything else b"small"."""

    def __init__(self) -> None:
        self.closing = threading.Event()  # set when a /big result's close() starts
        self.hold_close: threading.Event | None = None  # if set, close() waits for it

    def __call__(self, environ: dict, start_response: Any) -> Any:
        body = BIG if environ["PATH_INFO"] == "/big" else b"small"
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return _Result(self, body) if body is BIG else [body]


class _Result(list):
    def __init__(self, app: BigApp, body: bytes) -> None:
        super().__init__([body])
        self.app = app

    def close(self) -> None:
        self.app.closing.set()
        if self.app.hold_close is not None:
            self.app.hold_close.wait(WAIT)


def slow_reader(srv: server.Server) -> socket.socket:
    """A connection with a small receive buffer that reads only when the test says so."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    sock.settimeout(WAIT)
    sock.connect(srv.server_address[:2])
    return sock


def held_by_selector(srv: server.Server) -> bool:
    """True once a response's rest waits in the selector thread for its client to read."""
    return any(conn.state == server._SEND for conn in list(srv._conns))


def access_records(caplog: pytest.LogCaptureFixture, path: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "reviewsd.access" and r.path == path]


def test_a_client_reading_a_large_body_slowly_does_not_hold_a_worker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="reviewsd.access")
    with (
        serving(BigApp(), send_buffer=SMALL_BUFFER, threads=1, socket_timeout=60.0) as srv,
        slow_reader(srv) as sock,
    ):
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        assert wait_until(lambda: held_by_selector(srv))
        # The only worker is free: before, it sat in sendall until this client read or 60 s passed.
        assert get(srv.server_address, "/other").body == b"small"
        assert access_records(caplog, "/big") == []  # logged when sent, not when handed over
        f = sock.makefile("rb")
        code, headers, body = read_response(f)
        assert (code, int(headers["content-length"])) == (200, len(BIG))
        assert body == BIG
        assert wait_until(lambda: access_records(caplog, "/big"))
        (record,) = access_records(caplog, "/big")
        assert (record.status, record.bytes) == (200, len(BIG))
        sock.sendall(b"GET /after HTTP/1.1\r\nHost: t\r\n\r\n")  # the connection is kept
        assert read_response(f)[2] == b"small"


def test_pipelined_requests_after_a_large_body_are_answered_in_order() -> None:
    with serving(BigApp(), send_buffer=SMALL_BUFFER, threads=1) as srv, slow_reader(srv) as sock:
        sock.sendall(
            b"GET /big HTTP/1.1\r\nHost: t\r\n\r\nGET /1 HTTP/1.1\r\nHost: t\r\n\r\n"
            b"GET /big HTTP/1.1\r\nHost: t\r\n\r\nGET /2 HTTP/1.1\r\nHost: t\r\n\r\n"
        )
        assert wait_until(lambda: held_by_selector(srv))
        f = sock.makefile("rb")
        assert [read_response(f)[2] for _ in range(4)] == [BIG, b"small", BIG, b"small"]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        b"GET /big HTTP/1.0\r\n\r\n",
    ],
)
def test_a_large_body_on_a_closing_connection_is_sent_whole_then_closed(request_bytes: bytes) -> None:
    with serving(BigApp(), send_buffer=SMALL_BUFFER) as srv, slow_reader(srv) as sock:
        sock.sendall(request_bytes)
        assert wait_until(lambda: held_by_selector(srv))
        f = sock.makefile("rb")
        code, headers, body = read_response(f)
        assert (code, headers["connection"], body == BIG) == (200, "close", True)
        assert f.read() == b""  # closed right after the body


def test_a_large_body_before_a_linger_is_sent_whole_then_closed() -> None:
    # Bytes after a request that closes the connection: it lingers after the response
    # (discarding them) so the client can read it all.
    with serving(BigApp(), send_buffer=SMALL_BUFFER) as srv, slow_reader(srv) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n")
        assert wait_until(lambda: held_by_selector(srv))
        f = sock.makefile("rb")
        code, headers, body = read_response(f)
        assert (code, body == BIG) == (200, True)
        assert closed_within(sock, WAIT)


def test_a_client_that_stops_reading_is_dropped_after_the_socket_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="reviewsd.access")
    with serving(BigApp(), send_buffer=SMALL_BUFFER, socket_timeout=0.3) as srv, slow_reader(srv) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        assert wait_until(lambda: access_records(caplog, "/big"))
        (record,) = access_records(caplog, "/big")
        assert record.status == 200 and 0 < record.bytes < len(BIG)  # what went, not what was meant to
        assert wait_until(lambda: not srv._conns)
        assert closed_within(sock, WAIT)


@pytest.mark.slow
def test_a_slow_but_steady_reader_gets_a_body_that_takes_longer_than_the_socket_timeout() -> None:
    # socket_timeout bounds each wait for the client to read, not the whole download.
    with serving(BigApp(), send_buffer=SMALL_BUFFER, socket_timeout=1.0) as srv, slow_reader(srv) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        assert wait_until(lambda: held_by_selector(srv))
        f = sock.makefile("rb")
        start = time.monotonic()
        code, headers, _ = read_response(f, head=True)
        body = bytearray()
        while len(body) < len(BIG) and (piece := f.read(min(1 << 20, len(BIG) - len(body)))):
            body += piece
            time.sleep(0.1)  # the client's pace (a slow link), not synchronisation
        assert time.monotonic() - start > 1.0
        assert body == BIG


def test_a_stop_finishes_a_large_body_the_client_is_still_reading() -> None:
    srv = server.make_server(BigApp(), "127.0.0.1", 0, send_buffer=SMALL_BUFFER, threads=1)
    stopper = threading.Thread(target=srv.shutdown, args=(WAIT,))
    with slow_reader(srv) as sock:
        try:
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            assert wait_until(lambda: held_by_selector(srv))
            stopper.start()
            assert wait_until(lambda: refuses_connections(srv.server_address))
            f = sock.makefile("rb")
            assert read_response(f)[2] == BIG
            assert f.read() == b""  # then closed: the server is stopping
        finally:
            stopper.join(WAIT * 2)
    assert not stopper.is_alive()


def test_a_stop_gives_up_a_large_body_nobody_reads_after_the_grace() -> None:
    srv = server.make_server(
        BigApp(), "127.0.0.1", 0, send_buffer=SMALL_BUFFER, threads=1, socket_timeout=60.0
    )
    with slow_reader(srv) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        assert wait_until(lambda: held_by_selector(srv))
        start = time.monotonic()
        srv.shutdown(0.3)
        assert time.monotonic() - start < 3.0
        assert closed_within(sock, WAIT)


def test_a_large_body_handed_over_after_the_stop_began_is_still_sent_whole() -> None:
    # The stop starts (the listener is closed) before the worker hands the rest over: the
    # selector thread's drain sends it as the client reads, as its loop would have.
    app = BigApp()
    app.hold_close = threading.Event()
    srv = server.make_server(app, "127.0.0.1", 0, threads=1, send_buffer=SMALL_BUFFER)
    stopper = threading.Thread(target=srv.shutdown, args=(WAIT,))
    with slow_reader(srv) as sock:
        try:
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            assert app.closing.wait(WAIT)  # handed over, the worker is still in the result's close()
            stopper.start()
            assert wait_until(lambda: refuses_connections(srv.server_address))
            app.hold_close.set()
            f = sock.makefile("rb")
            assert read_response(f)[2] == BIG
            assert f.read() == b""
        finally:
            app.hold_close.set()
            stopper.join(WAIT * 2)
    assert not stopper.is_alive()


def send_buffer_of(sock: socket.socket) -> int:
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)


def test_the_send_buffer_is_set_on_the_listener_and_inherited_by_each_connection() -> None:
    with serving(send_buffer=65536) as srv, connect(srv) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        read_response(sock.makefile("rb"))
        (conn,) = list(srv._conns)
        doubled = 2 if sys.platform.startswith("linux") else 1  # Linux reports twice what was asked
        assert send_buffer_of(conn.connection) == send_buffer_of(srv.socket) == 65536 * doubled


def test_without_a_send_buffer_the_kernel_sizes_it() -> None:
    with socket.socket() as fresh, serving() as srv:
        assert send_buffer_of(srv.socket) == send_buffer_of(fresh)


def test_a_send_buffer_the_kernel_caps_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="reviewsd.server")
    with serving(send_buffer=1 << 30):
        pass
    assert any(
        "send buffer of 1073741824 bytes asked, the kernel gave" in r.getMessage() for r in caplog.records
    )


# -- systemd: notify, watchdog, socket activation (subprocesses) ----------------------


SCRIPT = textwrap.dedent("""
    import os, sys
    from reviewsd_app.httpserver import server

    def app(environ, start_response):
        body = ("pid=%d listen_fds=%s" % (os.getpid(), os.environ.get("LISTEN_FDS"))).encode()
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]

    def on_reload():
        print("reloaded", flush=True)

    def on_stop():
        print("stopped", flush=True)

    def on_ready():
        print("ready", flush=True)
        raise RuntimeError("a failing after-READY hook")  # logged; serving goes on

    sys.exit(server.run(app, host="127.0.0.1", port={port}, threads=2, shutdown_grace=2.0,
                        on_reload=on_reload, on_stop=on_stop, on_ready=on_ready))
""")


def write_script(tmp_path: Path, port: int = 0) -> Path:
    path = tmp_path / "serve.py"
    path.write_text(SCRIPT.format(repo=str(REPO), port=port))
    return path


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LISTEN_", "NOTIFY_SOCKET", "WATCHDOG_"))}
    env.update(extra)
    return env


@contextlib.contextmanager
def child(args: list[str], env: dict[str, str], **kwargs: Any) -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=WAIT)


class NotifyListener:
    """The systemd side of sd_notify: an AF_UNIX datagram socket in the abstract namespace."""

    def __init__(self) -> None:
        self.name = f"@reviewsd-test-{uuid.uuid4().hex}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.name[1:])
        self.seen: list[str] = []

    def expect(self, prefix: str, timeout: float = WAIT) -> dict[str, str]:
        """The next message starting with `prefix` (others are recorded and skipped)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                message = self.sock.recv(4096).decode()
            except TimeoutError:
                break
            self.seen.append(message)
            if message.startswith(prefix):
                return dict(line.split("=", 1) for line in message.splitlines())
        raise AssertionError(f"no {prefix!r} message; saw {self.seen}")

    def close(self) -> None:
        self.sock.close()


def test_notify_protocol_reload_watchdog_and_stop(tmp_path: Path) -> None:
    listener = NotifyListener()
    env = clean_env(NOTIFY_SOCKET=listener.name, WATCHDOG_USEC="200000")
    try:
        with child([sys.executable, str(write_script(tmp_path))], env) as proc:
            ready = listener.expect("READY=1")
            url = ready["STATUS"].removeprefix("listening on http://")
            host, port = url.rsplit(":", 1)
            assert get((host, int(port))).status == 200
            listener.expect("WATCHDOG=1")
            proc.send_signal(signal.SIGHUP)
            reloading = listener.expect("RELOADING=1")
            assert (
                abs(int(reloading["MONOTONIC_USEC"]) - time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)
                < 60e6
            )
            listener.expect("READY=1")
            proc.send_signal(signal.SIGTERM)
            listener.expect("STOPPING=1")
            assert proc.wait(timeout=WAIT * 2) == 0
            out = proc.stdout.read().decode()
            assert out.split() == ["ready", "reloaded", "stopped"]
            assert "the work after READY failed" in proc.stderr.read().decode()
    finally:
        listener.close()


def test_socket_activation_uses_fd_3_and_clears_the_environment(tmp_path: Path) -> None:
    listen = socket.socket()
    listen.bind(("127.0.0.1", 0))
    listen.listen(16)
    address = listen.getsockname()
    # exec keeps the pid, so the wrapper can set LISTEN_PID to its own pid, as systemd does.
    wrapper = (
        "import os, sys; os.dup2(int(sys.argv[1]), 3); "
        "os.environ.update(LISTEN_FDS='1', LISTEN_PID=str(os.getpid())); "
        "os.execv(sys.executable, [sys.executable, sys.argv[2]])"
    )
    script = write_script(tmp_path, port=1)  # port 1 would fail to bind: proves fd 3 is used
    args = [sys.executable, "-c", wrapper, str(listen.fileno()), str(script)]
    with child(args, clean_env(), pass_fds=(listen.fileno(),)) as proc:
        listen.close()
        resp = get(address)
        body = resp.body.decode()
        assert resp.status == 200
        assert body == f"pid={proc.pid} listen_fds=None"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=WAIT * 2) == 0


def test_notify_helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert service.notify("READY=1") is False
    path = tmp_path / "n.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(WAIT)
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))
        assert service.notify_ready("up") is True
        assert sock.recv(4096) == b"READY=1\nSTATUS=up"
        assert service.notify("STOPPING=1") is True
        assert sock.recv(4096) == b"STOPPING=1"


@pytest.mark.slow
def test_health_follows_the_selector_loop() -> None:
    with serving() as srv:
        assert srv.healthy(5.0)
        srv._heartbeat -= 10.0  # as if the loop had been stuck for 10 s
        assert not srv.healthy(5.0)
        assert wait_until(lambda: srv.healthy(5.0))  # the loop beats at least once a second


def test_watchdog_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    assert service.watchdog_interval() is None
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    assert service.watchdog_interval() == 15.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid() + 1))
    assert service.watchdog_interval() is None
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert service.watchdog_interval() == 15.0


def test_an_idle_keep_alive_connection_keeps_no_request_body() -> None:
    body = b"x" * 500_000
    with serving() as srv:
        with connect(srv) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            assert read_response(sock.makefile("rb"))[0] == 200
            assert wait_until(lambda: len(srv._timers[server._IDLE]) == 1)  # handed back, idle
            (conn,) = list(srv._conns)
            assert conn.environ is None  # nor does any request the worker was handed hold the 500 KB body:
            assert not [
                r for r in gc.get_objects() if isinstance(r, Request) and r.body and len(r.body) == len(body)
            ]


def test_server_options_come_from_the_config_by_name() -> None:
    from reviewsd_app.config import Config
    from reviewsd_app.httpserver.options import ServerOptions

    config = Config(threads=3, max_body=4096, port=0, trusted_proxies="10.0.0.0/8")
    options = ServerOptions.from_config(config, shutdown_grace=2.0)
    assert (options.threads, options.max_body, options.port, options.shutdown_grace) == (3, 4096, 0, 2.0)
    assert [str(network) for network in options.trusted_proxies] == ["10.0.0.0/8"]
    assert options.backlog == ServerOptions.backlog  # not an option of the command: the server's default
