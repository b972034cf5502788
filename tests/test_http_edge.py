"""The HTTP edge (issue 19): raw sockets against a real server on 127.0.0.1, one test per rule.

The tests of the issue's rules failed on the server before issue 19 (5e7e892): it read
bodies on its workers, decoded chunks with werkzeug's DechunkedInput and int(x, 16), served
lower-case methods, kept fragments and control bytes in targets, took any Host, and had no cap
per client.  A few cases here held already and stay as guards: a comma-listed Content-Length,
Transfer-Encoding on HTTP/1.0, a trailing space in the request line, HTTP/3.0, a bare CR, a space
before the first field, absolute-form and OPTIONS *, and the JSON bodies of 400/413/414/431/505.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from typing import Any

import pytest
from polling import wait_until  # noqa: E402
from support.http import (
    WAIT,
    assert_json_error,
    closed_within,
    connect,
    exchange,
    read_response,  # noqa: E402
    serving,
)

ATTACKER = "127.0.0.2"  # all of 127.0.0.0/8 is loopback on Linux: a second client address


def ignore_body(environ: dict, start_response: Any) -> list[bytes]:
    """Answers without reading wsgi.input; reports the method and path."""
    out = json.dumps(
        {
            "method": environ["REQUEST_METHOD"],
            "path": environ["PATH_INFO"],
            "host": environ.get("HTTP_HOST"),
            "len": environ.get("CONTENT_LENGTH"),
        }
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


def only_response(srv: Any, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """The one response to `data`, after which the server must close the connection."""
    with connect(srv) as sock:
        sock.sendall(data)
        f = sock.makefile("rb")
        response = read_response(f)
        assert f.read() == b""  # nothing more: no second response to smuggled bytes
        return response


def get_from(address: tuple, source: str = "127.0.0.1", timeout: float = WAIT) -> int:
    with socket.create_connection(address[:2], timeout=timeout, source_address=(source, 0)) as sock:
        sock.sendall(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n")
        return read_response(sock.makefile("rb"))[0]


# -- no worker waits on a client -------------------------------------------------------------


def test_stalled_bodies_hold_no_worker() -> None:
    # Issue 19, repro 1: with the bodies read on the workers, 8 stalled bodies stopped the server for 30 s.
    with serving(ignore_body, threads=2, body_timeout=60) as srv:
        stalled = [connect(srv) for _ in range(40)]
        try:
            for sock in stalled:
                sock.sendall(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            assert wait_until(lambda: sum(c.state == "body" for c in list(srv._conns)) == len(stalled))
            for _ in range(5):  # served at once, every time (a 2 s timeout; the old server made it wait 30 s)
                assert get_from(srv.server_address, timeout=2.0) == 200
        finally:
            for sock in stalled:
                sock.close()


def test_a_stalled_body_gets_a_408_one_warning_and_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with serving(ignore_body, body_timeout=0.3) as srv, connect(srv) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        assert_json_error(read_response(sock.makefile("rb")), 408, "request_timeout")
        assert closed_within(sock, WAIT)
    server_lines = [r for r in caplog.records if r.name == "reviewsd.server" and r.levelno >= logging.WARNING]
    assert [r.levelname for r in server_lines] == ["WARNING"]
    assert "408" in server_lines[0].getMessage() and not any(r.exc_info for r in caplog.records)


def test_a_stalled_chunked_body_gets_a_408() -> None:
    with serving(ignore_body, body_timeout=0.3) as srv, connect(srv) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
        assert_json_error(read_response(sock.makefile("rb")), 408, "request_timeout")


def test_a_body_that_arrives_in_pieces_reaches_the_app_whole() -> None:
    seen: list[bytes] = []

    def record(environ: dict, start_response: Any) -> list[bytes]:
        seen.append(environ["wsgi.input"].read())
        start_response("204 No Content", [])
        return []

    with serving(record) as srv, connect(srv) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab")
        assert wait_until(lambda: any(c.state == "body" for c in list(srv._conns)))
        sock.sendall(b"c\r\n0\r\n\r\n")
        assert read_response(sock.makefile("rb"))[0] == 204
        assert seen == [b"abc"]


# -- framing (RFC 9112 6-7) ------------------------------------------------------------------

CHUNKED_HEAD = (
    b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def test_bytes_after_the_last_chunk_are_not_a_request() -> None:
    # Issue 19, repro 2: the old decoder ended the body before the last chunk's CRLF and served /smuggled.
    with serving(ignore_body) as srv:
        status, _, body = only_response(
            srv, CHUNKED_HEAD + b"2\r\n{}\r\n0\r\nXXGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        assert (status, json.loads(body)["error"]) == (400, "bad_request")


def test_trailer_fields_are_read_up_to_their_empty_line_and_ignored() -> None:
    with serving(ignore_body) as srv, connect(srv) as sock:
        f = sock.makefile("rb")
        sock.sendall(
            CHUNKED_HEAD + b"2\r\n{}\r\n0\r\nX-Sum: 1\r\nX-Not-A-Request: GET /smuggled HTTP/1.1\r\n\r\n"
            b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        assert [json.loads(read_response(f)[2])["path"] for _ in range(2)] == ["/mcp", "/next"]


@pytest.mark.parametrize(
    "size", [b"0x2", b"+2", b"0_2", b" 2", b"\x0b2", b"2\x0c", b"2 ", b"00000000000000002"]
)
def test_a_chunk_size_is_hex_digits_only(size: bytes) -> None:
    # Issue 19, repro 3: int(x, 16) took all of these, and the connection was kept.
    with serving(ignore_body) as srv:
        assert only_response(srv, CHUNKED_HEAD + size + b"\r\n{}\r\n0\r\n\r\n")[0] == 400


def test_a_last_chunk_of_minus_zero_is_refused() -> None:
    with serving(ignore_body) as srv:
        assert only_response(srv, CHUNKED_HEAD + b"-0\r\n\r\n")[0] == 400


def test_chunk_extensions_are_ignored() -> None:
    # Issue 19, repro 4: "2;name=value" was a 400; RFC 9112 7.1.1 says to ignore unknown extensions.
    with serving(ignore_body) as srv:
        status, headers, body = exchange(srv, CHUNKED_HEAD + b'2;name=value\r\n{}\r\n0;a="b c"\r\n\r\n')
        assert (status, json.loads(body)["len"], headers.get("connection")) == (200, "2", None)


@pytest.mark.parametrize(
    "framing",
    [
        b"Content-Length: 2\r\nContent-Length: 2",  # equal values: still refused
        b"Content-Length: 2, 2",
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity",
        b"Transfer-Encoding: chunked, gzip",
    ],
)
def test_ambiguous_framing_is_400_and_close(framing: bytes) -> None:
    with serving(ignore_body) as srv:
        assert (
            only_response(srv, b"POST / HTTP/1.1\r\nHost: x\r\n" + framing + b"\r\n\r\n{}0\r\n\r\n")[0] == 400
        )


def test_transfer_encoding_on_http10_is_400() -> None:
    with serving(ignore_body) as srv:
        assert only_response(srv, b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")[0] == 400


def test_a_chunked_body_over_max_body_is_413_as_it_arrives() -> None:
    with serving(ignore_body, max_body=10) as srv:
        response = only_response(srv, CHUNKED_HEAD + b"8\r\n01234567\r\n8\r\n")
        assert_json_error(response, 413, "body_too_large")


# -- the request line and Host (RFC 9112 3, RFC 9110 9.1) ------------------------------------


@pytest.mark.parametrize(
    "line, status",
    [
        (b"get /healthz HTTP/1.1", 501),  # issue 19, repro 6: served as GET before
        (b"Get /healthz HTTP/1.1", 501),
        (b"FOO /healthz HTTP/1.1", 501),
        (b"GET /a\x01b HTTP/1.1", 400),  # issue 19, repro 5
        (b"GET /a\x7fb HTTP/1.1", 400),
        (b"GET /healthz#frag HTTP/1.1", 400),  # issue 19, repro 7
        (b"GET * HTTP/1.1", 400),  # asterisk-form is OPTIONS' only
        (b"GET / HTTP/1.1 ", 400),
        (b"GET / HTTP/3.0", 505),
    ],
)
def test_request_line_rules(line: bytes, status: int) -> None:
    with serving(ignore_body) as srv:
        response = only_response(srv, line + b"\r\nHost: x\r\n\r\n")
        assert response[0] == status and set(json.loads(response[2])) == {"error", "message"}


@pytest.mark.parametrize("host", [b"evil.example/x", b"a b", b"a@b", b"x:y", b"a\\b"])
def test_an_invalid_host_is_400(host: bytes) -> None:
    # Issue 19, repro 8: "Host: evil.example/x" was served.
    with serving(ignore_body) as srv:
        assert only_response(srv, b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")[0] == 400


def test_absolute_form_takes_its_host_from_the_target() -> None:
    with serving(ignore_body) as srv:
        status, _, body = exchange(
            srv, b"GET http://reviews.example:8080/p?q HTTP/1.1\r\nHost: other\r\n\r\n"
        )
        assert (status, json.loads(body)["host"], json.loads(body)["path"]) == (
            200,
            "reviews.example:8080",
            "/p",
        )


def test_options_asterisk_form_is_served() -> None:
    with serving(ignore_body) as srv:
        status, _, body = exchange(srv, b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (status, json.loads(body)["path"]) == (200, "*")


@pytest.mark.parametrize(
    "data",
    [
        b"GET / HTTP/1.1\nHost: x\n\n",  # bare LF line ends
        b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\rX-B: 2\r\n\r\n",  # a bare CR
        b"GET / HTTP/1.1\r\n Host: x\r\n\r\n",  # whitespace before the first field
    ],
)
def test_line_ends_are_crlf_only(data: bytes) -> None:
    with serving(ignore_body) as srv:
        assert only_response(srv, data)[0] == 400


# -- connection caps -------------------------------------------------------------------------


def open_from(srv: Any, source: str, n: int, head: bytes = b"") -> list[socket.socket]:
    socks = []
    for _ in range(n):
        sock = socket.create_connection(srv.server_address[:2], timeout=WAIT, source_address=(source, 0))
        if head:
            try:
                sock.sendall(head)
            except OSError:  # already closed by the server: over the cap
                pass
        socks.append(sock)
    return socks


@pytest.mark.parametrize("head", [b"", b"GET / HTTP/1.1\r\nHost:"])
def test_one_address_holding_2000_connections_does_not_delay_another(head: bytes) -> None:
    # Issue 19, repro 9: the old server had only a total cap, which one address could fill.
    with serving(ignore_body, max_connections=1000, max_connections_per_client=100) as srv:
        held = open_from(srv, ATTACKER, 2000, head)
        try:
            assert wait_until(lambda: srv._per_client.get(ATTACKER) == 100)
            for _ in range(10):
                assert get_from(srv.server_address, timeout=2.0) == 200
        finally:
            for sock in held:
                sock.close()


def test_at_the_per_client_cap_the_clients_idle_connections_go_first() -> None:
    with serving(ignore_body, max_connections_per_client=3) as srv:
        socks = open_from(srv, ATTACKER, 3)
        try:
            socks[0].sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # now idle on keep-alive
            assert read_response(socks[0].makefile("rb"))[0] == 200
            assert wait_until(lambda: any(c.state == "idle" for c in list(srv._conns)))
            assert (
                get_from(srv.server_address, ATTACKER) == 200
            )  # a fourth: room made by closing the idle one
            assert closed_within(socks[0], WAIT)
            assert get_from(srv.server_address) == 200  # another address is not capped by this one
        finally:
            for sock in socks:
                sock.close()


def test_over_the_per_client_cap_without_idle_ones_the_new_connection_is_closed() -> None:
    with serving(ignore_body, max_connections_per_client=2) as srv:
        socks = open_from(srv, ATTACKER, 2, b"GET / HTTP/1.1\r\n")
        try:
            assert wait_until(lambda: srv._per_client.get(ATTACKER) == 2)
            with socket.create_connection(
                srv.server_address[:2], timeout=WAIT, source_address=(ATTACKER, 0)
            ) as extra:
                assert closed_within(extra, WAIT)
        finally:
            for sock in socks:
                sock.close()


def test_trusted_proxies_have_no_per_client_cap() -> None:
    import ipaddress

    with serving(
        ignore_body, max_connections_per_client=2, trusted_proxies=[ipaddress.ip_network("127.0.0.2/32")]
    ) as srv:
        socks = open_from(srv, ATTACKER, 5, b"GET / HTTP/1.1\r\n")
        try:
            assert wait_until(lambda: srv._per_client.get(ATTACKER) == 5)
        finally:
            for sock in socks:
                sock.close()


# -- every refusal: the JSON error body ------------------------------------------------------


@pytest.mark.parametrize(
    "data, status, slug",
    [
        (b"GET / HTTP/1.1\r\n\r\n", 400, "bad_request"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n", 413, "body_too_large"),
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
        (
            b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"b" * 40000 + b"\r\n\r\n",
            431,
            "request_header_fields_too_large",
        ),
        (b"get / HTTP/1.1\r\nHost: x\r\n\r\n", 501, "not_implemented"),
        (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version_not_supported"),
    ],
)
def test_every_refusal_has_the_json_error_body(data: bytes, status: int, slug: str) -> None:
    with serving(ignore_body, max_body=1000) as srv:
        assert_json_error(exchange(srv, data), status, slug)


def test_many_stalled_bodies_and_a_client_served_meanwhile_from_threads() -> None:
    # The same as the first test with the stalled clients on their own thread, still sending.
    with serving(ignore_body, threads=2, body_timeout=60) as srv:
        stop = threading.Event()
        stalled = [connect(srv) for _ in range(30)]

        def trickle() -> None:
            for sock in stalled:
                sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            while not stop.wait(0.05):  # pacing of the attacker, not synchronisation
                for sock in stalled:
                    sock.sendall(b"x")

        feeder = threading.Thread(target=trickle)
        feeder.start()
        try:
            assert wait_until(lambda: sum(c.state == "body" for c in list(srv._conns)) == len(stalled))
            for _ in range(5):
                assert get_from(srv.server_address, timeout=2.0) == 200
        finally:
            stop.set()
            feeder.join(WAIT)
            for sock in stalled:
                sock.close()
