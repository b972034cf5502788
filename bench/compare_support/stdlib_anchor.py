"""The Python floor for bench/compare: a bare standard-library `http.server`
(HTTP/1.1 keep-alive, one thread per connection) replaying pre-encoded responses.

    python stdlib_anchor.py --manifest FILE [--port 0]

The manifest (written by bench/compare from a running reviewsd) lists, per
request target and content-coding, reviewsd's exact status, headers and body,
and the headers of its 304 answer. A request is a dict lookup; a 304 is
answered when If-None-Match names the representation's ETag (exact tag or a
member of a comma-separated list). Everything but the Date header is encoded
once at start-up. No access log: this is the floor.

Prints "listening on http://127.0.0.1:PORT" on stderr once it accepts.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SMALL = 65536  # bodies up to this size go out in the same write as the head


@dataclass(frozen=True)
class Entry:
    head: bytes  # status line and headers, without Date and the blank line
    body: bytes
    etag: str | None
    not_modified_head: bytes | None


def encode_head(status: str, headers: list[list[str]]) -> bytes:
    lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers] + ["Server: reviewsd-stdlib-anchor"]
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def load(manifest: Path) -> dict[tuple[str, bool], Entry]:
    table = {}
    for item in json.loads(manifest.read_text()):
        not_modified = item.get("not_modified_headers")
        table[(item["target"], item["gzip"])] = Entry(
            head=encode_head(item["status"], item["headers"]),
            body=(manifest.parent / item["body_file"]).read_bytes(),
            etag=item.get("etag"),
            not_modified_head=encode_head("304 Not Modified", not_modified)
            if not_modified is not None
            else None,
        )
    return table


class DateLine:
    """The Date header line, formatted at most once per second."""

    def __init__(self) -> None:
        self.second = -1
        self.line = b""

    def get(self) -> bytes:
        now = int(time.time())
        if now != self.second:
            self.line = f"Date: {formatdate(now, usegmt=True)}\r\n\r\n".encode()
            self.second = now
        return self.line


def handler_class(table: dict[tuple[str, bool], Entry]) -> type[BaseHTTPRequestHandler]:
    date = DateLine()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the stdlib default, HTTP/1.0, closes every connection

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            gzip = "gzip" in (self.headers.get("Accept-Encoding") or "")
            entry = table.get((self.path, gzip)) or table.get((self.path, False))
            if entry is None:
                self.wfile.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n" + date.get())
                return
            inm = self.headers.get("If-None-Match")
            if (
                inm is not None
                and entry.not_modified_head is not None
                and (inm == entry.etag or entry.etag in (t.strip() for t in inm.split(",")))
            ):
                self.wfile.write(entry.not_modified_head + date.get())
            elif len(entry.body) <= SMALL:
                self.wfile.write(entry.head + date.get() + entry.body)
            else:
                self.wfile.write(entry.head + date.get())
                self.wfile.write(entry.body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the default 5 would drop SYNs when 64 connections open at once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--send-buffer", type=int, default=0, help="SO_SNDBUF of the listening socket (0: kernel's)"
    )
    args = parser.parse_args()
    server = Server(("127.0.0.1", args.port), handler_class(load(args.manifest)))
    if args.send_buffer:  # accepted connections inherit it
        server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.send_buffer)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
