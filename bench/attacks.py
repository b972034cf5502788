#!/usr/bin/env python3
"""Attack figures (issue 31): what each kind of abusive client costs the server, and other clients.

    .venv/bin/python bench/attacks.py --data-dir DIR          # DIR: tools/generate_data.py --reviews 100000
    .venv/bin/python bench/attacks.py --data-dir DIR --readers 20 --only readers   # an older checkout

Starts `python reviewsd.py --no-hub` of this checkout on 127.0.0.1 and prints, section by section:

  since     wrk req/s (16 connections, --seconds each) of GET /api/feed.json and of
            GET /api/reviews/since/<the oldest date> (every review: the largest answer), and their ratio;
  readers   the server's RSS before and after --readers slow readers of each endpoint's largest answer
            (since/<an old date, a different one per reader>, /reviews.json, search limit=100): each
            connection asks once, reads 1 byte, then nothing; RSS is read once every answer is out
            (the output budget may hold some back: those wait, as they should);
  trickle   10 loopback addresses (127.0.0.2-11) hold 100 connections each, every one trickling
            request heads (a byte every 80 ms, the next request's first byte sent with the end of
            the last); then the time a normal client on 127.0.0.1 takes to get 3 answers
            (at most 10 s each);
  blank     feed req/s while 4 connections send CRLF without end, and without them;
  stall-output  (issue 39) --stallers connections from 127.0.0.2 ask /reviews?limit=100&sort=oldest (the
            oldest 100 reviews are padded to about 19,000 characters: about 2 MB of HTML each) and read
            nothing; meanwhile a normal client's /healthz and feed latencies (--probes each, 10) and the
            feed's wrk rate against the rate without them;
  stall-cpu (issue 39) 5 clients (127.0.0.2-6) each asking query=e&sort=lowest&limit=100 one after
            another; meanwhile the same probes and feed rate (against the mean of the unloaded rates
            measured before and after), and how their searches were answered;
  sweep     (issue 39) /widget's wrk rate alone, and while 4 clients ask for review pages of ids taken in
            turn over every review (each page rendered once and evicting another).

--root DIR runs the reviewsd.py of another checkout (a `git worktree` of main) on the same data, so the
two stalls can be printed before and after a change; run both within minutes on a shared machine.

Everything runs on loopback, bounded in time (each wait has a deadline), and the server is stopped by
PID. Clients come from 127.0.0.2 and up (per-client caps count addresses).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from compare_support import wrk
from compare_support.procs import (
    ROOT,
    Processes,
    cpu_seconds,
    hold_bench_lock,
    proc_status_kb,
    start_reviewsd,
)

WAIT = 30.0


def rss_mb(pid: int) -> float:
    return proc_status_kb(pid, "VmRSS") / 1024


def settle_rss(pid: int, seconds: float = 10.0) -> float:
    """RSS once it stops moving (two readings 0.5 s apart within 1 MB), or after `seconds`."""
    deadline, last = time.monotonic() + seconds, rss_mb(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = rss_mb(pid)
        if abs(now - last) < 1:
            return now
        last = now
    return last


def get_json(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=WAIT) as response:
        return json.load(response)


def oldest_dates(base: str, count: int) -> list[str]:
    """`count` distinct dates from the oldest on: each since answer holds nearly every review."""
    dates = sorted({review["date"] for review in get_json(base, "/reviews.json")["reviews"]})
    return [dates[i % len(dates)] for i in range(count)]


def recent_and_oldest(base: str) -> list[str]:
    """The oldest date, and the date from which about 50 reviews (the feed's count) are newer."""
    dates = [review["date"] for review in get_json(base, "/reviews.json")["reviews"]]  # newest first
    return [dates[-1], dates[min(49, len(dates) - 1)]]


def section_since(base: str, pid: int, seconds: int, script: Path, dates: list[str]) -> None:
    """Each since answer against the precomputed body of its size: a recent date's (about the feed's
    50 reviews) against /api/feed.json, the oldest date's (every review) against /reviews.json."""
    rows = [
        ("/api/feed.json", "/api/feed.json"),
        (f"/api/reviews/since/{dates[-1]}", "/api/feed.json"),
        ("/reviews.json", "/reviews.json"),
        (f"/api/reviews/since/{dates[0]}", "/reviews.json"),
    ]
    measured: dict[str, wrk.WrkResult] = {}
    for path, anchor in rows:
        cpu = cpu_seconds(pid)
        result = wrk.run(base + path, connections=16, seconds=seconds, script=script, timeout_s=30)
        result = dataclasses.replace(result, server_cpu_s=cpu_seconds(pid) - cpu)
        measured[path] = result
        size = result.bytes / max(1, result.requests)
        ratio = "" if path == anchor else f", {result.rps / measured[anchor].rps:.0%} of {anchor}'s"
        print(
            f"since: {path} ({size / 1e3:,.0f} KB) {result.rps:,.0f} req/s, p99 {result.p99_ms:.1f} ms, "
            f"server CPU {result.cpu_us_per_request:,.0f} us/request{ratio}"
        )


def slow_reader(port: int, source: str, path: str) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(WAIT)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
    return sock


def section_readers(base: str, port: int, pid: int, readers: int, dates: list[str]) -> None:
    endpoints = {
        "since/<old date>": [f"/api/reviews/since/{date}" for date in dates],
        "/reviews.json": ["/reviews.json"] * readers,
        "search limit=100": ["/api/reviews/search?min_rating=1&limit=100"] * readers,
    }
    for name, paths in endpoints.items():
        before = settle_rss(pid)
        socks = []
        try:
            for i, path in enumerate(paths[:readers]):
                socks.append(slow_reader(port, f"127.0.0.{2 + i // 100}", path))
            for sock in socks:
                sock.recv(1)  # the answer has started
            after = settle_rss(pid)
            print(
                f"readers: {readers} slow readers of {name}: RSS {before:.0f} -> {after:.0f} MB "
                f"(+{after - before:.0f} MB, {(after - before) / readers * 1024:.0f} KB each)"
            )
        except OSError as exc:
            print(f"readers: {name}: {len(socks)} readers connected, then {type(exc).__name__}: {exc}")
        finally:
            for sock in socks:
                sock.close()


def section_trickle(port: int) -> None:
    stop = threading.Event()
    socks: list[socket.socket] = []
    for address in range(2, 12):
        for _ in range(100):
            try:
                sock = socket.create_connection(
                    ("127.0.0.1", port), timeout=5, source_address=(f"127.0.0.{address}", 0)
                )
            except OSError:
                continue
            sock.setblocking(False)
            socks.append(sock)
    request = b"GET /healthz HTTP/1.1\r\nHost: bench\r\nX-Pad: " + b"p" * 60 + b"\r\n\r\n"

    def trickle() -> None:  # every connection: one byte every 80 ms, the whole request in about 8 s
        position = 0
        while not stop.wait(0.08):
            byte = request[position % len(request) : position % len(request) + 1]
            for sock in socks:
                try:
                    sock.send(byte)
                    sock.recv(65536)
                except OSError:
                    pass
            position += 1

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        time.sleep(2.0)  # let them settle into trickling
        times = []
        for _ in range(3):
            started = time.monotonic()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                    sock.sendall(b"GET /api/feed.json HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
                    answered = sock.recv(12).startswith(b"HTTP/1.1 200")
            except OSError:
                answered = False
            times.append(f"{time.monotonic() - started:.2f} s" if answered else "not answered in 10 s")
        print(
            f"trickle: {len(socks)} trickling connections from 10 addresses; "
            f"a normal client: {', '.join(times)}"
        )
    finally:
        stop.set()
        thread.join(5)
        for sock in socks:
            sock.close()


def section_blank(base: str, port: int, seconds: int, script: Path) -> None:
    quiet = wrk.run(base + "/api/feed.json", connections=16, seconds=seconds, script=script)
    stop = threading.Event()

    def blank(source: str) -> None:
        while not stop.is_set():
            try:
                with socket.create_connection(
                    ("127.0.0.1", port), timeout=5, source_address=(source, 0)
                ) as sock:
                    while not stop.is_set():
                        sock.sendall(b"\r\n" * 32768)
            except OSError:
                stop.wait(0.01)  # refused and closed: connect again

    threads = [threading.Thread(target=blank, args=(f"127.0.0.{20 + i}",), daemon=True) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        loud = wrk.run(base + "/api/feed.json", connections=16, seconds=seconds, script=script)
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    print(
        f"blank: /api/feed.json {quiet.rps:,.0f} req/s; "
        f"with 4 connections sending CRLF forever {loud.rps:,.0f} req/s"
    )


def padded_copy(data_dir: Path, work: Path, count: int = 100, size: int = 19_000) -> Path:
    """The data with its `count` oldest reviews' texts repeated to about `size` characters (under the
    schema's 20,000): what a stalled reader of /reviews?sort=oldest&limit=100 leaves unread is ~2 MB."""
    out = work / "padded"
    out.mkdir()
    for name in ("business.toml", "insights.json"):
        if (data_dir / name).exists():
            (out / name).write_bytes((data_dir / name).read_bytes())
    document = json.loads((data_dir / "reviews.json").read_bytes())
    oldest = sorted(document["reviews"], key=lambda review: (review["date"], review["id"]))[:count]
    for review in oldest:
        text = review.get("text") or "Long review."
        review["text"] = (text + " ") * (size // (len(text) + 1))
    (out / "reviews.json").write_text(json.dumps(document))
    return out


PROBE_TIMEOUT = 3.0  # seconds: a probe not answered by then counts as unanswered


def probe(port: int, path: str) -> float | None:
    """Seconds a new connection from 127.0.0.1 takes to get the status line of `path` (None: not in time)."""
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=PROBE_TIMEOUT) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".encode())
            if not sock.recv(12).startswith(b"HTTP/1.1 200"):
                return None
    except OSError:
        return None
    return time.monotonic() - started


def probes(port: int, count: int) -> str:
    """`count` probes (--probes) of /healthz and of the feed, 0.1 s apart: the median and the slowest (with
    100 or fewer, the slowest is the p99)."""
    lines = []
    for path in ("/healthz", "/api/feed.json"):
        times = []
        for _ in range(count):
            times.append(probe(port, path))
            time.sleep(0.1)
        answered = sorted(t for t in times if t is not None)
        late = (
            f", {count - len(answered)} not answered in {PROBE_TIMEOUT:g} s" if len(answered) < count else ""
        )
        if answered:
            lines.append(
                f"{path} median {answered[len(answered) // 2] * 1000:.1f} ms, slowest "
                f"{answered[-1] * 1000:.0f} ms{late}"
            )
        else:
            lines.append(f"{path}: none of {count} answered in {PROBE_TIMEOUT:g} s")
    return "; ".join(lines)


def section_stall_output(
    base: str, port: int, seconds: int, script: Path, stallers: int, probe_count: int
) -> None:
    quiet = wrk.run(base + "/api/feed.json", connections=16, seconds=seconds, script=script)
    socks = []
    try:
        for _ in range(stallers):
            socks.append(slow_reader(port, "127.0.0.2", "/reviews?limit=100&sort=oldest"))
        time.sleep(2.0)  # their answers are made and left unread
        probed = probes(port, probe_count)
        loud = wrk.run(base + "/api/feed.json", connections=16, seconds=seconds, script=script)
    finally:
        for sock in socks:
            sock.close()
    print(
        f"stall-output: {stallers} non-readers of /reviews?limit=100&sort=oldest (~2 MB each) from one "
        f"address: {probed}; feed {loud.rps:,.0f} req/s against {quiet.rps:,.0f} without them "
        f"({loud.rps / max(1.0, quiet.rps):.0%}), p99 {loud.p99_ms:.1f} ms"
    )


def section_stall_cpu(base: str, port: int, seconds: int, script: Path, probe_count: int) -> None:
    quiet = wrk.run(base + "/api/feed.json", connections=16, seconds=seconds, script=script)
    stop = threading.Event()
    statuses: dict[str, int] = {}
    path = "/api/reviews/search?query=e&sort=lowest&limit=100"

    def search(source: str) -> None:
        while not stop.is_set():
            try:
                with socket.create_connection(
                    ("127.0.0.1", port), timeout=30, source_address=(source, 0)
                ) as s:
                    s.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".encode())
                    status = s.recv(12)[9:12].decode() or "closed"
                    while s.recv(65536):
                        pass
            except OSError as exc:
                status = type(exc).__name__
            statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=search, args=(f"127.0.0.{2 + i}",), daemon=True) for i in range(5)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)
        probed = probes(port, probe_count)
        loud = wrk.run(base + "/api/feed.json", connections=16, seconds=seconds, script=script)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    # The unloaded rate again, after: the machine's other load moves it between windows (9,200 to 16,900
    # req/s in one session), so the loaded rate is set against the mean of the windows either side of it.
    after = wrk.run(base + "/api/feed.json", connections=16, seconds=seconds, script=script)
    unloaded = (quiet.rps + after.rps) / 2
    print(
        f"stall-cpu: 5 clients searching query=e&sort=lowest&limit=100 in turn: {probed}; feed "
        f"{loud.rps:,.0f} req/s against {unloaded:,.0f} without them ({quiet.rps:,.0f} before, "
        f"{after.rps:,.0f} after: {loud.rps / max(1.0, unloaded):.0%}), p99 {loud.p99_ms:.1f} ms; "
        f"their answers: {dict(sorted(statuses.items()))}"
    )


def section_sweep(base: str, port: int, seconds: int, script: Path) -> None:
    ids = [review["id"] for review in get_json(base, "/reviews.json")["reviews"]]
    quiet = wrk.run(base + "/widget?count=3", connections=16, seconds=seconds, script=script)
    stop = threading.Event()
    swept = [0]

    def sweep(first: int) -> None:
        position = first
        while not stop.is_set():
            try:
                with urllib.request.urlopen(f"{base}/reviews/{ids[position % len(ids)]}", timeout=WAIT) as r:
                    r.read()
            except OSError:
                pass
            swept[0] += 1
            position += 4

    threads = [threading.Thread(target=sweep, args=(i,), daemon=True) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        loud = wrk.run(base + "/widget?count=3", connections=16, seconds=seconds, script=script)
    finally:
        stop.set()
        for thread in threads:
            thread.join(WAIT)
    print(
        f"sweep: /widget?count=3 {quiet.rps:,.0f} req/s alone; {loud.rps:,.0f} req/s "
        f"({loud.rps / max(1.0, quiet.rps):.0%}) while 4 clients swept {swept[0]:,} review pages"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="data to serve (100,000 reviews for the figures)")
    parser.add_argument("--readers", type=int, default=1000, help="slow readers per endpoint (at most 1000)")
    parser.add_argument("--seconds", type=int, default=5, help="seconds per wrk run")
    parser.add_argument(
        "--only",
        default="since,readers,trickle,blank,stall-output,stall-cpu,sweep",
        help="sections, comma-separated",
    )
    parser.add_argument("--probes", type=int, default=10, help="probes of /healthz and the feed per stall")
    parser.add_argument("--stallers", type=int, default=60, help="non-reading connections in stall-output")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose reviewsd.py runs")
    args = parser.parse_args()
    readers = min(args.readers, 1000)
    lock = hold_bench_lock(600)
    with tempfile.TemporaryDirectory(prefix="reviewsd-attacks-") as work:
        procs = Processes(Path(work))
        try:
            sections = args.only.split(",")
            data_dir = Path(args.data_dir)
            if "stall-output" in sections:
                data_dir = padded_copy(data_dir, Path(work))
            child, base, _ = start_reviewsd(
                procs,
                ["--no-hub", "--reload-interval", "0", "--data-dir", str(data_dir), "--log-format", "json"],
                root=args.root.resolve(),
            )
            port = int(base.rsplit(":", 1)[1])
            script = wrk.write_script(Path(work))
            dates = oldest_dates(base, readers) if "readers" in sections else []
            print(f"server pid {child.pid} ({args.root.resolve()}), RSS at start {rss_mb(child.pid):.0f} MB")
            if "since" in sections:
                section_since(base, child.pid, args.seconds, script, recent_and_oldest(base))
            if "readers" in sections:
                section_readers(base, port, child.pid, readers, dates)
            if "trickle" in sections:
                section_trickle(port)
            if "blank" in sections:
                section_blank(base, port, args.seconds, script)
            if "stall-output" in sections:
                section_stall_output(base, port, args.seconds, script, args.stallers, args.probes)
            if "stall-cpu" in sections:
                section_stall_cpu(base, port, args.seconds, script, args.probes)
            if "sweep" in sections:
                section_sweep(base, port, args.seconds, script)
            print(f"server RSS at the end {rss_mb(child.pid):.0f} MB")
        finally:
            procs.stop_all()
    if lock is not None:
        lock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
