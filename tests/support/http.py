"""Raw HTTP against the real server: a server in a thread, a socket, a response read by hand."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

from reviewsd_app.httpserver import server

WAIT = 5.0  # upper bound for anything that should happen "promptly"


def echo_app(environ: dict, start_response: Any) -> list[bytes]:
    """Reports what it saw, reading the whole body."""
    body = environ["wsgi.input"].read()
    out = json.dumps(
        {
            "method": environ["REQUEST_METHOD"],
            "path": environ["PATH_INFO"],
            "query": environ["QUERY_STRING"],
            "port": environ["REMOTE_PORT"],
            "len": len(body),
            "host": environ.get("HTTP_HOST"),
        }
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


@contextlib.contextmanager
def serving(app: Any = echo_app, **options: Any) -> Iterator[server.Server]:
    srv = server.make_server(app, "127.0.0.1", 0, **options)
    try:
        yield srv
    finally:
        srv.shutdown(0.5)


def connect(srv: server.Server) -> socket.socket:
    sock = socket.create_connection(srv.server_address[:2], timeout=WAIT)
    return sock


def read_response(f: Any, head: bool = False) -> tuple[int, dict[str, str], bytes]:
    """Parse one response from a buffered socket file."""
    status_line = f.readline()
    assert status_line, "connection closed before a response"
    code = int(status_line.split()[1])
    headers: dict[str, str] = {}
    while (line := f.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if head or code < 200 or code in (204, 304):
        return code, headers, b""
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while (size := int(f.readline().strip(), 16)) > 0:
            body += f.read(size)
            f.readline()
        f.readline()
        return code, headers, body
    if "content-length" in headers:
        return code, headers, f.read(int(headers["content-length"]))
    return code, headers, f.read()


def exchange(srv: server.Server, data: bytes) -> tuple[int, dict[str, str], bytes]:
    with connect(srv) as sock:
        sock.sendall(data)
        return read_response(sock.makefile("rb"))


def closed_within(sock: socket.socket, timeout: float) -> bool:
    """True if the peer closes (EOF or reset) within `timeout`, discarding what it sends."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(65536):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
    return False


def assert_json_error(response: tuple[int, dict[str, str], bytes], code: int, slug: str) -> None:
    status, headers, body = response
    assert status == code
    assert headers["content-type"] == "application/json; charset=utf-8"
    assert headers["connection"] == "close"
    payload = json.loads(body)
    assert payload["error"] == slug and payload["message"]
