#!/usr/bin/env python3
"""Mixed-traffic soak test: the real reviewsd under steady load while slow and idle clients hang on.

Starts `python reviewsd.py --port 0` on 127.0.0.1 (the bundled data/, `--data-dir DIR`, or a
set of `--reviews N` generated first), then for `--duration` seconds:

* `--connections` keep-alive connections, one thread each, spread over `--processes` client
  processes (so the client is not held back by one GIL), send a weighted mix (MIX below): the
  four documents, searches (selective, broad, substring, invalid -> 400), since/{date},
  conditional GETs that send the ETag back (-> 304), and MCP (initialize once per connection,
  then tools/call search_reviews and get_business with the Mcp-Session-Id header);
* `--slow` connections from one asyncio process the whole time: three quarters trickle a
  request head about one byte a second, so the server's 10 s header timeout answers 408 and
  closes them (one in five trickles a short head fast enough to be served instead); one quarter
  idle (connect and say nothing, or make one request and stay open on keep-alive) until the
  server closes them. Each reconnects at once.

It prints the server command, a sample every 10 s (the server's RSS and threads from
/proc/PID/status, requests/s, errors, slow-connection closes), requests/s, p50/p99/max
latency and errors per kind of request, what happened to the slow connections, CPU used by
server and client (they share the machine's cores), a summary of the server's log, and two
verdicts: no errors on the normal connections, and RSS over the last third of the samples not
rising by more than 5 %. The exit status is 0 only if both hold.

Bounded: loopback only (the server on 127.0.0.1, clients from 127.0.0.2 to 127.0.0.17), at most an
hour; it stops the server it started, by PID. Take the
shared lock for runs longer than 20 s so that two benchmarks do not compete for the CPU:

    python bench/load_mixed.py --duration 15                      # a quick check
    flock /tmp/reviewsd-bench.lock python bench/load_mixed.py --duration 300
    flock /tmp/reviewsd-bench.lock python bench/load_mixed.py --reviews 100000 --threads 16
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import math
import multiprocessing as mp
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Callable, NamedTuple
from urllib.parse import quote, urlencode

from compare_support.procs import Processes, cpu_seconds, proc_status_kb, start_reviewsd

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"  # never anything else: this script only loads a server it started itself
# Clients connect from 127.0.0.2 up, one of CLIENT_ADDRESSES loopback addresses each (Linux routes all of
# 127/8 to lo): from one address, they would meet --max-connections-per-client (100) and be refused.
CLIENT_ADDRESSES = 16


def source_address(n: int) -> tuple[str, int]:
    """The local address connection `n` comes from."""
    return (f"127.0.0.{2 + n % CLIENT_ADDRESSES}", 0)


MAX_DURATION = 3600
SAMPLE_EVERY = 10.0
CLIENT_TIMEOUT = 10.0  # a normal request without an answer this long counts as an error (a stall)
DISTURBED = " (not idle: the figures are lower than on a quiet machine)"
MEMORY_TOLERANCE = 5.0  # per cent the RSS may rise over the last third of the samples
PROTOCOL = "2025-06-18"
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
DOCUMENTS = {
    "reviews.json": "/reviews.json",
    "insights.json": "/insights.json",
    "feed.json": "/api/feed.json",
    "feed.xml": "/feed.xml",
}

# Request kinds on the normal connections and their weights (they add up to 100, so percentages).
# Conditional GETs weigh most: pollers of feeds and since/{date} are the bulk of a public read API.
MIX = {
    "reviews.json": 5,
    "insights.json": 4,
    "feed.json": 6,
    "feed.xml": 6,
    "search selective": 10,
    "search broad": 6,
    "search substring": 8,
    "invalid -> 400": 5,
    "since/{date}": 10,
    "conditional -> 304": 20,
    "mcp search_reviews": 12,
    "mcp get_business": 8,
}
SETUP_KINDS = ("mcp initialize", "mcp initialized")  # once per connection, before the mix
WORDS = (
    "pain",
    "back",
    "wait",
    "front desk",
    "insurance",
    "massage",
    "friendly",
    "RAMÍREZ",
    "zzqxj-no-such-text",
)
INVALID = (  # every one must be answered 400
    "/api/reviews/search?rating=9",
    "/api/reviews/search?limit=0",
    "/api/reviews/search?colour=red",
    "/api/reviews/search?since=2025-02-30",
    "/api/reviews/search?since=2026-01-01&until=2025-01-01",
    "/api/reviews/search?rating=5&rating=4",
    "/api/reviews/search?min_rating=high",
    "/api/reviews/search?query=",
    "/api/reviews/since/2025-02-30",
    "/api/reviews/since/yesterday",
)


# --------------------------------------------------------------------------- the server


class ServerProcess:
    """reviewsd as a child process, started as every benchmark
    starts it; its log (the access log) in a file."""

    def __init__(self, procs: Processes, data_dir: Path, work: Path, threads: int) -> None:
        self.procs = procs
        self.child, base, _ = start_reviewsd(
            procs,
            ["--data-dir", str(data_dir), "--state-dir", str(work / "state"), "--threads", str(threads)],
            timeout=120,
        )
        self.command = [str(arg) for arg in self.child.proc.args]
        self.pid = self.child.pid
        self.port = int(base.rsplit(":", 1)[1])
        self.log_path = self.child.log

    def status(self, field_name: str) -> int:
        """A numeric field of /proc/PID/status (VmRSS in kB, Threads)."""
        return proc_status_kb(self.pid, field_name)

    def rss_mb(self) -> float:
        return self.status("VmRSS") / 1024

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def stop(self) -> int | None:
        """SIGTERM (graceful stop, up to 10 s of drain), SIGKILL if it does not exit; its exit status."""
        self.procs.stop(self.child, grace=30)
        return self.child.proc.returncode


@dataclass
class LogSummary:
    lines: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    durations: array = field(default_factory=lambda: array("d"))  # server-side ms, from the access log
    slowest: str = ""
    problems: Counter[str] = field(default_factory=Counter)  # ERROR / WARNING / Traceback lines
    examples: list[str] = field(default_factory=list)


ACCESS_LINE = re.compile(rb' INFO reviewsd\.access: \S+ "[^"]*" (\d{3}) \S+ ([0-9.]+)ms')


def summarize_log(path: Path) -> LogSummary:
    """Status counts of the access log and any ERROR/WARNING/Traceback lines (text log format)."""
    summary, slowest = LogSummary(), -1.0
    with open(path, "rb") as lines:
        for line in lines:
            summary.lines += 1
            match = ACCESS_LINE.search(line)
            if match:
                summary.statuses[match.group(1).decode()] += 1
                if match.group(1) == b"408":
                    continue  # refused by the selector thread, logged without a duration
                duration = float(match.group(2))
                if duration > slowest:
                    slowest, summary.slowest = duration, line.decode(errors="replace").rstrip()[:200]
                summary.durations.append(duration)
                continue
            for word in (b" ERROR ", b" WARNING ", b"Traceback"):
                if word in line:
                    summary.problems[word.decode().strip()] += 1
                    if len(summary.examples) < 8:
                        summary.examples.append(line.decode(errors="replace").rstrip()[:300])
    return summary


def prepare_data(args: argparse.Namespace, work: Path) -> tuple[Path, str]:
    """The data directory to serve and a description of it."""
    if args.reviews:
        out = work / "data"
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "tools" / "generate_data.py"),
                "--reviews",
                str(args.reviews),
                "--out",
                str(out),
            ],
            check=True,
            timeout=900,
            stdout=subprocess.DEVNULL,
        )
        return out, f"generated, {args.reviews} reviews ({time.perf_counter() - started:.1f} s to generate)"
    data_dir = Path(args.data_dir)
    count = len(json.loads((data_dir / "reviews.json").read_bytes())["reviews"])
    return data_dir, f"{data_dir}, {count} reviews"


# --------------------------------------------------------------------------- what the clients send


@dataclass(frozen=True)
class Plan:
    """What every client process needs to build its requests (picklable for spawn)."""

    port: int
    technicians: tuple[str, ...]  # names and ids, as a client may use either
    services: tuple[str, ...]  # labels and ids
    first_day: int  # date ordinals of the data's range
    last_day: int
    etags: tuple[tuple[str, bool, str], ...]  # (path, gzip?, ETag) that the server gave us


class Request(NamedTuple):
    kind: str
    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None
    expect: int  # the status that counts as success


def discover(port: int) -> Plan:
    """Learn names, dates and ETags from the server, as a real client would before polling."""
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    conn.request("GET", "/insights.json")
    insights = json.loads(conn.getresponse().read())
    entities = insights["entities"]
    technicians = [t[k] for t in entities["technicians"] for k in ("name", "id")]
    services = [s[k] for s in entities["services"] for k in ("label", "id")]
    first, last = (date.fromisoformat(insights["date_range"][k]) for k in ("earliest", "latest"))
    paths = [*DOCUMENTS.values(), *(f"/api/reviews/since/{last - timedelta(days=d)}" for d in (0, 7, 30, 90))]
    etags = []
    for path in paths:
        for gzip in (False, True):
            conn.request("GET", path, headers={"Accept-Encoding": "gzip"} if gzip else {})
            response = conn.getresponse()
            response.read()
            if response.status != 200 or not response.getheader("ETag"):
                sys.exit(f"discovery: GET {path} answered {response.status} without an ETag")
            etags.append((path, gzip, response.getheader("ETag", "")))
    conn.close()
    return Plan(port, tuple(technicians), tuple(services), first.toordinal(), last.toordinal(), tuple(etags))


def random_day(plan: Plan, rng: random.Random, recent: bool = False) -> str:
    # Incremental-sync clients mostly ask for recent dates; a few start from anywhere in the range.
    first = plan.last_day - 30 if recent else plan.first_day
    return date.fromordinal(rng.randint(max(first, plan.first_day), plan.last_day)).isoformat()


def selective_args(plan: Plan, rng: random.Random) -> dict[str, Any]:
    pick = rng.randrange(3)
    if pick == 0:
        return {"rating": rng.randint(1, 5), "mentions_technician": rng.choice(plan.technicians), "limit": 20}
    if pick == 1:
        return {"mentions_service": rng.choice(plan.services), "min_rating": 4, "limit": 20}
    since = date.fromisoformat(random_day(plan, rng))
    return {"since": since.isoformat(), "until": (since + timedelta(days=30)).isoformat(), "limit": 20}


def broad_args(plan: Plan, rng: random.Random) -> dict[str, Any]:
    return rng.choice(
        [
            {"min_rating": 1, "limit": 100},
            {"limit": 100},
            {"since": date.fromordinal(plan.first_day).isoformat(), "limit": 50},
        ]
    )


def substring_args(plan: Plan, rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {"query": rng.choice(WORDS), "limit": 20}
    if rng.random() < 0.3:
        args["min_rating"] = 4
    return args


def get(
    kind: str, path: str, rng: random.Random, expect: int = 200, headers: dict[str, str] | None = None
) -> Request:
    headers = dict(headers or {})
    if rng.random() < 0.5:  # half the clients accept gzip, as browsers and feed readers do
        headers.setdefault("Accept-Encoding", "gzip")
    return Request(kind, "GET", path, headers, None, expect)


def search(kind: str, args: dict[str, Any], rng: random.Random) -> Request:
    return get(kind, "/api/reviews/search?" + urlencode(args, quote_via=quote), rng)


def conditional(plan: Plan, rng: random.Random) -> Request:
    path, gzip, etag = rng.choice(plan.etags)
    headers = {"If-None-Match": etag, "Accept-Encoding": "gzip" if gzip else "identity"}
    return Request("conditional -> 304", "GET", path, headers, None, 304)


def mcp(kind: str, session: str, method: str, params: dict[str, Any] | None, expect: int = 200) -> Request:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if expect == 200:  # a request; without an id it is a notification (202)
        message["id"] = 1
    headers = dict(MCP_HEADERS)
    if session:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": PROTOCOL})
    return Request(kind, "POST", "/mcp", headers, json.dumps(message).encode(), expect)


def tool_call(kind: str, session: str, name: str, arguments: dict[str, Any]) -> Request:
    return mcp(kind, session, "tools/call", {"name": name, "arguments": arguments})


Builder = Callable[[Plan, random.Random, str], Request]
BUILDERS: dict[str, Builder] = {
    **{kind: (lambda p, r, s, path=path, kind=kind: get(kind, path, r)) for kind, path in DOCUMENTS.items()},
    "search selective": lambda p, r, s: search("search selective", selective_args(p, r), r),
    "search broad": lambda p, r, s: search("search broad", broad_args(p, r), r),
    "search substring": lambda p, r, s: search("search substring", substring_args(p, r), r),
    "invalid -> 400": lambda p, r, s: get("invalid -> 400", r.choice(INVALID), r, 400),
    "since/{date}": lambda p, r, s: get(
        "since/{date}", f"/api/reviews/since/{random_day(p, r, r.random() < 0.9)}", r
    ),
    "conditional -> 304": lambda p, r, s: conditional(p, r),
    "mcp search_reviews": lambda p, r, s: tool_call(
        "mcp search_reviews",
        s,
        "search_reviews",
        r.choice((selective_args, broad_args, substring_args))(p, r) | {"limit": r.choice((5, 10, 20))},
    ),
    "mcp get_business": lambda p, r, s: tool_call("mcp get_business", s, "get_business", {}),
}
assert set(BUILDERS) == set(MIX)


def check(request: Request, status: int, body: bytes) -> str | None:
    """Why this answer is wrong, or None."""
    if status != request.expect:
        return f"HTTP {status} (expected {request.expect}): {body[:120]!r}"
    if request.method == "POST" and request.expect == 200:
        try:
            reply = json.loads(body)
        except ValueError:
            return f"not JSON: {body[:120]!r}"
        if "error" in reply:
            return f"JSON-RPC error {reply['error']}"
        if reply.get("result", {}).get("isError"):
            return f"tool error {str(reply['result'].get('content'))[:160]}"
    return None


# --------------------------------------------------------------------------- normal connections


class Client:
    """One keep-alive connection, driven by one thread until the deadline."""

    def __init__(self, slot: int, plan: Plan, counters: Any, started: float) -> None:
        self.slot, self.plan, self.counters, self.started = slot, plan, counters, started
        self.rng = random.Random(slot)  # reproducible mix per connection
        self.conn = http.client.HTTPConnection(
            HOST, plan.port, timeout=CLIENT_TIMEOUT, source_address=source_address(slot)
        )
        self.session = ""
        self.latencies: defaultdict[str, array] = defaultdict(lambda: array("d"))
        self.errors: Counter[str] = Counter()
        self.first_error_at: dict[str, float] = {}
        self.server_closes = 0  # responses with Connection: close (http.client reconnects)

    def run(self, deadline: float) -> None:
        kinds, weights = list(MIX), list(MIX.values())
        while time.monotonic() < deadline:
            if not self.session:
                self.start_session()
                continue
            kind = self.rng.choices(kinds, weights)[0]
            self.exchange(BUILDERS[kind](self.plan, self.rng, self.session))
        self.conn.close()

    def start_session(self) -> None:
        """MCP initialize + notifications/initialized; the session is used by every later MCP call."""
        answer = self.exchange(
            mcp(
                "mcp initialize",
                "",
                "initialize",
                {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "load_mixed", "version": "1"},
                },
            )
        )
        session = answer.getheader("Mcp-Session-Id") if answer else None
        if not session:
            time.sleep(0.1)  # already counted as an error; do not spin
            return
        self.session = session
        self.exchange(mcp("mcp initialized", session, "notifications/initialized", None, expect=202))

    def exchange(self, request: Request) -> http.client.HTTPResponse | None:
        """Send one request and read the whole answer; record its latency or the error."""
        started = time.perf_counter()
        try:
            self.conn.request(request.method, request.path, body=request.body, headers=request.headers)
            response = self.conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.conn.close()  # the next request opens a new connection
            self.fail(request.kind, f"{type(exc).__name__}: {exc}")
            return None
        self.latencies[request.kind].append((time.perf_counter() - started) * 1000)
        self.counters[2 * self.slot] += 1
        if response.will_close:
            self.server_closes += 1
        problem = check(request, response.status, body)
        if problem:
            self.fail(request.kind, problem)
            if response.status == 404 and request.method == "POST":
                self.session = ""  # session gone: initialize again
            return None
        return response

    def fail(self, kind: str, message: str) -> None:
        key = f"{kind}: {message}"
        self.errors[key] += 1
        self.first_error_at.setdefault(key, time.monotonic() - self.started)
        self.counters[2 * self.slot + 1] += 1


@dataclass
class LoadResult:
    """What one client process measured (sent to the parent through a queue)."""

    latencies: dict[str, array] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    first_error_at: dict[str, float] = field(default_factory=dict)
    server_closes: int = 0

    def add(self, other: LoadResult | Client) -> None:
        for kind, values in other.latencies.items():
            self.latencies.setdefault(kind, array("d")).extend(values)
        self.errors.update(other.errors)
        for key, at in other.first_error_at.items():
            self.first_error_at[key] = min(at, self.first_error_at.get(key, at))
        self.server_closes += other.server_closes


def load_process(
    first_slot: int,
    count: int,
    plan: Plan,
    duration: float,
    start: Any,
    deadline: Any,
    counters: Any,
    results: Any,
) -> None:
    """Client process: `count` connections, one thread each
    (http.client blocks, threads overlap the waits)."""
    start.wait(120)
    clients = [Client(first_slot + i, plan, counters, deadline.value - duration) for i in range(count)]
    threads = [threading.Thread(target=c.run, args=(deadline.value,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = LoadResult()
    for client in clients:
        result.add(client)
    results.put(("load", result))


# --------------------------------------------------------------------------- slow connections


class Answer(NamedTuple):
    data: bytes  # what the server sent before closing (first 64 KiB)
    reset: bool  # the connection ended with a reset instead of a close
    first_at: float  # monotonic time of the first byte from the server (or of the close)
    closed_at: float


@dataclass
class SlowResult:
    """Outcomes of the slow connections: expected ones, timings, and anything unexpected."""

    outcomes: Counter[str] = field(default_factory=Counter)
    seconds: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    unexpected: Counter[str] = field(default_factory=Counter)


async def read_until_close(reader: asyncio.StreamReader, limit: float = 60.0) -> Answer:
    data, first_at, reset = b"", 0.0, False
    try:
        async with asyncio.timeout(limit):
            while chunk := await reader.read(65536):
                first_at = first_at or time.monotonic()
                data = (data + chunk)[:65536]
    except (ConnectionResetError, BrokenPipeError):
        reset = True
    except TimeoutError:
        return Answer(data, False, first_at, 0.0)  # closed_at 0: never closed
    now = time.monotonic()
    return Answer(data, reset, first_at or now, now)


async def trickle(
    port: int, rng: random.Random, result: SlowResult, live: Any, in_time: bool, source: tuple[str, int]
) -> None:
    """Send a request head byte by byte: slowloris (about 1 byte/s) must get 408, a short fast head a 200."""
    if in_time:  # 25 bytes at <= 0.35 s: complete within the 10 s header timeout
        head, pace = b"GET /healthz HTTP/1.0\r\n\r\n", (0.25, 0.35)
        expect, outcome = b" 200 ", "slow but in time: served"
    else:
        head = f"GET /api/reviews/search?rating=5 HTTP/1.1\r\nHost: {HOST}\r\nUser-Agent: trickle\r\n\r\n"
        head = head.encode()
        pace, expect, outcome = (0.8, 1.2), b" 408 ", "trickling: 408 at header timeout"
    opened = time.monotonic()
    reader, writer = await asyncio.open_connection(HOST, port, local_addr=source)
    try:
        answer = asyncio.ensure_future(read_until_close(reader))
        for byte in head:
            if answer.done():
                break
            try:
                writer.write(bytes([byte]))
                await writer.drain()
            except OSError:
                break
            await asyncio.wait({answer}, timeout=rng.uniform(*pace))
        got = await answer
    finally:
        writer.close()
    classify(result, live, outcome, got, expect, got.first_at - opened)


async def idle(port: int, result: SlowResult, live: Any, silent: bool, source: tuple[str, int]) -> None:
    """An idle connection: silent (closed at the header timeout) or after one request (at keep-alive's)."""
    opened = time.monotonic()
    reader, writer = await asyncio.open_connection(HOST, port, local_addr=source)
    try:
        if silent:
            got = await read_until_close(reader)
            classify(
                result, live, "idle, nothing sent: closed at header timeout", got, b"", got.closed_at - opened
            )
            return
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
        await writer.drain()
        got = await read_until_close(reader)
        classify(
            result,
            live,
            "idle after a request: closed at keep-alive timeout",
            got,
            b" 200 ",
            got.closed_at - got.first_at,
        )
    finally:
        writer.close()


def classify(result: SlowResult, live: Any, outcome: str, got: Answer, expect: bytes, seconds: float) -> None:
    """Count the expected outcome with its timing, or describe what happened instead."""
    status_line = got.data.split(b"\r\n", 1)[0]
    fine = not got.reset and got.closed_at and (expect in status_line if expect else not got.data)
    if fine:
        result.outcomes[outcome] += 1
        result.seconds[outcome].append(seconds)
        live[0] += 1
        return
    what = "no close within 60 s" if not got.closed_at else "reset" if got.reset else "closed"
    result.unexpected[f"{outcome.split(':')[0]}: {what}, got {status_line[:60]!r}"] += 1
    live[1] += 1


async def slow_connection(index: int, port: int, result: SlowResult, live: Any) -> None:
    """One slow connection slot, reconnecting for as long as it runs (cancelled at the deadline)."""
    rng = random.Random(10_000 + index)
    await asyncio.sleep(rng.uniform(0, 10))  # spread them so the timeouts do not all fire together
    cycle = 0
    while True:
        cycle += 1
        try:
            source = source_address(index)
            if index % 4 == 3:
                await idle(port, result, live, silent=cycle % 2 == 1, source=source)
            else:
                await trickle(port, rng, result, live, in_time=index % 5 == 0, source=source)
        except OSError as exc:
            result.unexpected[f"connect/send: {type(exc).__name__}: {exc}"] += 1
            live[1] += 1
            await asyncio.sleep(1)


async def run_slow(count: int, port: int, deadline: float, live: Any) -> SlowResult:
    result = SlowResult()
    tasks = [asyncio.create_task(slow_connection(i, port, result, live)) for i in range(count)]
    await asyncio.sleep(max(0.0, deadline - time.monotonic()))
    for task in tasks:
        task.cancel()  # connections still in progress are not counted
    await asyncio.gather(*tasks, return_exceptions=True)
    return result


def slow_process(count: int, port: int, start: Any, deadline: Any, live: Any, results: Any) -> None:
    """Client process for all slow connections: they are mostly waiting, one event loop is plenty."""
    start.wait(120)
    result = asyncio.run(run_slow(count, port, deadline.value, live))
    results.put(("slow", result))


# --------------------------------------------------------------------------- running it


class Sample(NamedTuple):
    t: float
    rss_mb: float
    threads: int
    requests: int
    errors: int
    slow_closed: int
    slow_unexpected: int


@dataclass
class Run:
    samples: list[Sample]
    elapsed: float
    load: LoadResult
    slow: SlowResult
    server_cpu: float
    client_cpu: float  # the client processes and this one
    machine_cpu: float  # every process on the machine, from /proc/stat


def split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def run_load(args: argparse.Namespace, plan: Plan, server: ServerProcess) -> Run:
    """Start the client processes, sample the server every 10 s until the deadline, collect the results."""
    ctx = mp.get_context("spawn")  # clients start clean: no copy of this process's threads or sockets
    processes = max(1, min(args.processes, args.connections))
    start = ctx.Barrier(processes + (1 if args.slow else 0) + 1)
    deadline = ctx.Value("d", 0.0, lock=False)
    counters = ctx.Array("q", 2 * args.connections, lock=False)  # per connection: requests, errors
    live = ctx.Array("q", 2, lock=False)  # slow connections: expected closes, unexpected outcomes
    results = ctx.Queue()
    workers, slot = [], 0
    for count in split(args.connections, processes):
        shared = (start, deadline, counters, results)
        workers.append(ctx.Process(target=load_process, args=(slot, count, plan, args.duration, *shared)))
        slot += count
    if args.slow:
        workers.append(
            ctx.Process(target=slow_process, args=(args.slow, plan.port, start, deadline, live, results))
        )
    for worker in workers:
        worker.start()
    cpu_before, client_before, machine_before = server.cpu_seconds(), client_seconds(), machine_seconds()
    t0 = time.monotonic()
    deadline.value = t0 + args.duration
    start.wait(120)
    samples = sample_until(server, t0, args.duration, counters, live)
    collected = [results.get(timeout=CLIENT_TIMEOUT + 120) for _ in workers]  # before join: queues must drain
    elapsed = time.monotonic() - t0
    server_cpu, machine_cpu = server.cpu_seconds() - cpu_before, machine_seconds() - machine_before
    for worker in workers:
        worker.join(30)
        if worker.is_alive():
            worker.terminate()
            worker.join(5)
    load, slow = LoadResult(), SlowResult()
    for tag, result in collected:
        if tag == "load":
            load.add(result)
        else:
            slow = result
    return Run(
        samples,
        min(elapsed, args.duration),
        load,
        slow,
        server_cpu,
        client_seconds() - client_before,
        machine_cpu,
    )


def client_seconds() -> float:
    """CPU seconds of this process and its waited-for children (the client processes, once joined)."""
    return sum(
        u.ru_utime + u.ru_stime
        for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def machine_seconds() -> float:
    """CPU seconds every process on the machine has used (/proc/stat, all but idle and iowait)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def take_sample(server: ServerProcess, t: float, counters: Any, live: Any) -> Sample:
    values = counters[:]
    return Sample(
        t, server.rss_mb(), server.status("Threads"), sum(values[0::2]), sum(values[1::2]), live[0], live[1]
    )


def sample_until(server: ServerProcess, t0: float, duration: float, counters: Any, live: Any) -> list[Sample]:
    """One sample now, every SAMPLE_EVERY seconds, and one at the end; printed as they are taken."""
    print(
        f"\n{'t s':>5} {'RSS MB':>7} {'threads':>7} {'req/s':>7} {'errors':>6} {'slow closed':>11} "
        f"{'slow unexpected':>15}",
        flush=True,
    )
    samples = [take_sample(server, 0.0, counters, live)]
    print_sample(samples[0], None)
    marks = [min(k * SAMPLE_EVERY, duration) for k in range(1, math.ceil(duration / SAMPLE_EVERY) + 1)]
    for mark in marks:
        time.sleep(max(0.0, t0 + mark - time.monotonic()))
        samples.append(take_sample(server, mark, counters, live))
        print_sample(samples[-1], samples[-2])
    return samples


def print_sample(sample: Sample, previous: Sample | None) -> None:
    rate = (
        f"{(sample.requests - previous.requests) / (sample.t - previous.t):7.0f}" if previous else f"{'-':>7}"
    )
    print(
        f"{sample.t:5.0f} {sample.rss_mb:7.1f} {sample.threads:7d} {rate} {sample.errors:6d} "
        f"{sample.slow_closed:11d} {sample.slow_unexpected:15d}",
        flush=True,
    )


# --------------------------------------------------------------------------- the report


def percentile(values: list[float] | array, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def memory_trend(samples: list[Sample]) -> tuple[float, list[Sample]] | None:
    """Rise of the least-squares line through the last third
    of the samples under load, in per cent of its start.

    The sample at t=0 (before any load) is left out; None if fewer than 3 samples remain (run too short).
    """
    loaded = [s for s in samples if s.t > 0]
    tail = loaded[-max(3, len(loaded) // 3) :]
    if len(tail) < 3:
        return None
    n = len(tail)
    mean_t = sum(s.t for s in tail) / n
    mean_m = sum(s.rss_mb for s in tail) / n
    var_t = sum((s.t - mean_t) ** 2 for s in tail)
    slope = sum((s.t - mean_t) * (s.rss_mb - mean_m) for s in tail) / var_t
    start = mean_m + slope * (tail[0].t - mean_t)
    return 100 * slope * (tail[-1].t - tail[0].t) / start, tail


def print_kinds(run: Run) -> None:
    errors_by_kind = Counter({kind: 0 for kind in run.load.latencies})
    for key, count in run.load.errors.items():
        errors_by_kind[key.split(": ", 1)[0]] += count
    print(
        f"\n{'kind':<20} {'share':>6} {'requests':>9} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>8} "
        f"{'errors':>6}"
    )
    everything = array("d")
    for kind in [*SETUP_KINDS, *MIX]:
        values = run.load.latencies.get(kind, array("d"))
        everything.extend(values)
        share = f"{MIX[kind]}%" if kind in MIX else "setup"
        print(
            f"{kind:<20} {share:>6} {len(values):>9} {len(values) / run.elapsed:>7.1f} "
            f"{percentile(values, 0.5):>7.2f} {percentile(values, 0.99):>7.2f} "
            f"{max(values, default=0):>8.1f} {errors_by_kind[kind]:>6}"
        )
    print(
        f"{'all':<20} {'':>6} {len(everything):>9} {len(everything) / run.elapsed:>7.1f} "
        f"{percentile(everything, 0.5):>7.2f} {percentile(everything, 0.99):>7.2f} "
        f"{max(everything, default=0):>8.1f} {sum(run.load.errors.values()):>6}"
    )


def print_errors(run: Run) -> None:
    total = sum(run.load.errors.values())
    print(f"\nerrors on the normal connections: {total}")
    for key, count in run.load.errors.most_common(10):
        print(f"  {count:>6} x  {key}  (first at t={run.load.first_error_at[key]:.1f} s)")
    if run.load.server_closes:
        print(f"  responses with Connection: close from the server: {run.load.server_closes}")


def print_slow(run: Run, args: argparse.Namespace) -> None:
    idle = args.slow // 4
    print(
        f"\nslow connections ({args.slow}: {args.slow - idle} trickling a request head, {idle} idle; "
        "closes by the server's timeouts are expected, not errors):"
    )
    for outcome, count in sorted(run.slow.outcomes.items()):
        seconds = run.slow.seconds[outcome]
        print(
            f"  {count:>6}  {outcome:<52} after {sum(seconds) / len(seconds):5.1f} s on average, "
            f"{max(seconds):5.1f} s at most"
        )
    print(f"  {sum(run.slow.unexpected.values()):>6}  unexpected outcomes")
    for key, count in run.slow.unexpected.most_common(5):
        print(f"  {count:>6} x  {key}")


def print_server(server: ServerProcess, run: Run, exit_status: int | None, log: LogSummary) -> None:
    start, end = run.samples[0], run.samples[-1]
    rss = [s.rss_mb for s in run.samples]
    print(
        f"\nserver RSS: start {start.rss_mb:.1f} MB, end {end.rss_mb:.1f} MB, "
        f"min {min(rss):.1f}, max {max(rss):.1f} ({len(rss)} samples every {SAMPLE_EVERY:.0f} s)"
    )
    print(f"server threads: start {start.threads}, end {end.threads}")
    others = max(0.0, run.machine_cpu - run.server_cpu - run.client_cpu)
    print(
        f"CPU (the client and the server share this machine's {os.cpu_count()} cores; latencies include "
        f"client queueing): server {run.server_cpu / run.elapsed:.2f} cores, client processes "
        f"{run.client_cpu / run.elapsed:.2f} cores, other processes on the machine "
        f"{others / run.elapsed:.2f} cores{DISTURBED if others / run.elapsed > 0.1 else ''}"
    )
    statuses = ", ".join(f"{code}: {n}" for code, n in sorted(log.statuses.items()))
    print(f"server log: {log.lines} lines; access log statuses {statuses}")
    # Time inside the server (head parsed -> response written): the rest of a client latency is queueing.
    print(
        f"server-side time per request (access log): p50 {percentile(log.durations, 0.5):.2f} ms, "
        f"p99 {percentile(log.durations, 0.99):.2f} ms, max {max(log.durations, default=0):.1f} ms"
    )
    print(f"  slowest: {log.slowest}")
    print(f"server log problems: {dict(log.problems) or 'none'}; exit status after SIGTERM: {exit_status}")
    for line in log.examples:
        print(f"  {line}")


def print_verdicts(run: Run) -> bool:
    errors = sum(run.load.errors.values())
    print(f"\nverdict, errors: {errors} -> {'PASS' if errors == 0 else 'FAIL'}")
    trend = memory_trend(run.samples)
    if trend is None:
        print(
            f"verdict, memory: run too short to judge (needs 3 samples under load, {3 * SAMPLE_EVERY:.0f} s)"
        )
        return errors == 0
    rise, tail = trend
    memory_ok = rise <= MEMORY_TOLERANCE
    print(
        f"verdict, memory: RSS over the last third of the samples (t={tail[0].t:.0f}-{tail[-1].t:.0f} s, "
        f"{tail[0].rss_mb:.1f} -> {tail[-1].rss_mb:.1f} MB) trends {rise:+.1f}% "
        f"({'stable: not more than' if memory_ok else 'GROWING: more than'} {MEMORY_TOLERANCE:.0f}%) "
        f"-> {'PASS' if memory_ok else 'FAIL'}"
    )
    return errors == 0 and memory_ok


def print_header(args: argparse.Namespace, server: ServerProcess, data: str) -> None:
    processes = max(1, min(args.processes, args.connections))
    per = "/".join(str(n) for n in sorted(set(split(args.connections, processes))))
    print(
        f"reviewsd mixed load: {args.duration:.0f} s; {args.connections} keep-alive connections "
        f"({processes} client processes x {per} threads); {args.slow} slow connections (1 asyncio process)"
    )
    print(f"server (pid {server.pid}, port {server.port}): {' '.join(server.command)}")
    print(
        "  every other option at its default, as in reviewsd.service: WebSub hub on, data reload check every "
        "2 s, text access log on stderr (written to a file)"
    )
    print(f"data: {data}")
    print(f"machine: {os.cpu_count()} CPUs, shared by the server and the client processes")
    print("mix: " + ", ".join(f"{kind} {weight}%" for kind, weight in MIX.items()))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help=f"seconds of load (max {MAX_DURATION})")
    parser.add_argument("--connections", type=int, default=64, help="normal keep-alive connections")
    parser.add_argument(
        "--processes", type=int, default=4, help="client processes sharing the normal connections"
    )
    parser.add_argument("--slow", type=int, default=200, help="slow connections (trickling or idle)")
    parser.add_argument("--threads", type=int, default=8, help="server worker threads (reviewsd --threads)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--reviews", type=int, help="generate a data set of this many reviews and serve it")
    source.add_argument(
        "--data-dir", default=str(ROOT / "data"), help="data to serve (default: the bundled data/)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.duration <= MAX_DURATION:
        parser.error(f"--duration must be within 1..{MAX_DURATION} s")
    if not (1 <= args.connections <= 1000 and 0 <= args.slow <= 800 and 1 <= args.processes <= 32):
        parser.error(
            "--connections 1..1000, --slow 0..800 and --processes 1..32 (the server allows 1000 connections)"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="load-mixed-") as tmp:
        data_dir, data = prepare_data(args, Path(tmp))
        with Processes(Path(tmp)) as procs:
            server = ServerProcess(procs, data_dir, Path(tmp), args.threads)
            print_header(args, server, data)
            try:
                run = run_load(args, discover(server.port), server)
            finally:
                exit_status = server.stop()
        print_kinds(run)
        print_errors(run)
        print_slow(run, args)
        print_server(server, run, exit_status, summarize_log(server.log_path))
        ok = print_verdicts(run)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
