#!/usr/bin/env python3
"""MCP benchmark: tool-call round trips and session set-up against a real reviewsd.

Starts `python reviewsd.py --port 0` on a data directory (or uses `--url` of a server
already running on 127.0.0.1), then, for a 2025-06-18 session and for a 2026-07-28
client (stateless: `_meta` and the MCP headers on every request, no session):

1. on ONE keep-alive connection, N sequential `tools/call search_reviews`
   ({"rating": 5, "limit": 10}): calls/s, p50, p99;
2. M times, on a fresh connection each, what a new client pays before its first answer:
   2025, `initialize`, `notifications/initialized` and the first `tools/call` (each
   session is DELETEd afterwards, outside the timing); 2026, the `tools/call` alone.

Bounded (defaults: 2,000 calls, 200 rounds, loopback only); stops the server it
started, by PID.

    python bench/mcp_bench.py
    python bench/mcp_bench.py --calls 5000 --rounds 500 --data-dir data
    python bench/mcp_bench.py --url http://127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from compare_support.procs import Processes, start_reviewsd

ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = ("127.0.0.1", "localhost", "::1")
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
SEARCH = {"name": "search_reviews", "arguments": {"rating": 5, "limit": 10}}
MAX_CALLS, MAX_ROUNDS = 100_000, 10_000
MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcp_bench", "version": "1"},
}


def modern_request(request_id: int, method: str, params: dict[str, Any]) -> tuple[dict, dict[str, str]]:
    """A 2026-07-28 request and its headers: _meta in the params, the method and name mirrored."""
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**params, "_meta": MODERN_META},
    }, headers


class McpConnection:
    """One HTTP/1.1 keep-alive connection speaking MCP's JSON responses (a 2025 session, or 2026-07-28)."""

    def __init__(self, host: str, port: int, modern: bool = False):
        self.conn = http.client.HTTPConnection(host, port, timeout=30)
        self.session: str | None = None
        self.modern = modern
        self.next_id = 0

    def send(self, message: dict[str, Any], extra: dict[str, str] | None = None) -> tuple[int, dict | None]:
        headers = {**HEADERS, **(extra or {})}
        if self.session:
            headers.update({"Mcp-Session-Id": self.session, "MCP-Protocol-Version": "2025-06-18"})
        self.conn.request("POST", "/mcp", body=json.dumps(message).encode(), headers=headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.getheader("Mcp-Session-Id"):
            self.session = response.getheader("Mcp-Session-Id")
        return response.status, json.loads(body) if body else None

    def request(self, method: str, params: dict[str, Any]) -> dict:
        self.next_id += 1
        if self.modern:
            status, reply = self.send(*modern_request(self.next_id, method, params))
        else:
            status, reply = self.send(
                {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
            )
        if status != 200 or reply is None or "error" in reply or reply["result"].get("isError"):
            raise SystemExit(f"{method} failed: HTTP {status} {reply}")
        return reply["result"]

    def start_session(self) -> None:
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "mcp_bench", "version": "1"},
            },
        )
        status, _ = self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if status != 202:
            raise SystemExit(f"notifications/initialized answered {status}")

    def end_session(self) -> None:
        self.conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": self.session or ""})
        self.conn.getresponse().read()

    def close(self) -> None:
        self.conn.close()


def timed(count: int, action: Callable[[], None]) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return times


def report(label: str, unit: str, times: list[float]) -> None:
    ordered = sorted(times)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    print(
        f"{label:<44} {len(times) / sum(times):>9.0f} {unit}/s   p50 {p50:7.2f} ms   p99 {p99:7.2f} ms"
        f"   (n={len(times)})"
    )


def bench_calls(host: str, port: int, calls: int, modern: bool) -> list[float]:
    conn = McpConnection(host, port, modern)
    if not modern:
        conn.start_session()
    conn.request("tools/call", SEARCH)  # warm-up
    times = timed(calls, lambda: conn.request("tools/call", SEARCH))
    if not modern:
        conn.end_session()
    conn.close()
    return times


def bench_rounds(host: str, port: int, rounds: int, modern: bool) -> list[float]:
    times = []
    for _ in range(rounds):
        conn = McpConnection(host, port, modern)
        started = time.perf_counter()
        if not modern:
            conn.start_session()
        conn.request("tools/call", SEARCH)
        times.append(time.perf_counter() - started)
        if not modern:
            conn.end_session()
        conn.close()
    return times


def loopback_url(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in LOOPBACK:
        raise SystemExit(f"--url must be http on 127.0.0.1/localhost, got {url!r}")
    return parts.hostname, parts.port or 80


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="base URL of a running reviewsd on 127.0.0.1 (default: start one)")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data", help="data for the server it starts")
    parser.add_argument("--threads", type=int, default=8, help="server worker threads")
    parser.add_argument(
        "--calls", type=int, default=2000, help=f"tool calls on one connection (max {MAX_CALLS})"
    )
    parser.add_argument(
        "--rounds", type=int, default=200, help=f"fresh-connection sessions (max {MAX_ROUNDS})"
    )
    args = parser.parse_args(argv)
    if not (1 <= args.calls <= MAX_CALLS and 1 <= args.rounds <= MAX_ROUNDS):
        parser.error("--calls and --rounds must be positive and within the bounds above")
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp, Processes(Path(tmp)) as procs:
        if args.url:
            url, started = args.url.rstrip("/").removesuffix("/mcp"), ""
        else:
            server, url, _ = start_reviewsd(
                procs,
                [
                    "--data-dir",
                    str(args.data_dir),
                    "--state-dir",
                    str(Path(tmp) / "state"),
                    "--threads",
                    str(args.threads),
                    "--reload-interval",
                    "0",
                    "--no-hub",
                    "--log-format",
                    "json",
                ],
                timeout=60,
            )
            started = f" (pid {server.pid}, data {args.data_dir})"
        host, port = loopback_url(url)
        print(f"server {url}{started}")
        report(
            "2025 tools/call search_reviews, 1 keep-alive conn",
            "calls",
            bench_calls(host, port, args.calls, False),
        )
        report(
            "2025 initialize+initialized+1st call, new conn",
            "rounds",
            bench_rounds(host, port, args.rounds, False),
        )
        report(
            "2026 tools/call search_reviews, 1 keep-alive conn",
            "calls",
            bench_calls(host, port, args.calls, True),
        )
        report(
            "2026 first call (no session), new conn", "rounds", bench_rounds(host, port, args.rounds, True)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
