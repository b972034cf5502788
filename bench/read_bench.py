#!/usr/bin/env python3
"""Read-path benchmark: start reviewsd on a generated data set and measure it.

Prints start-up time to READY, resident memory, and for the feed, a 304 answer
and three typical searches: requests/s, p50 and p99 over keep-alive connections
from 127.0.0.1, plus in-process search latency. Bounded in time and count; it
stops the server it started.

    python bench/read_bench.py                 # 100,000 reviews, 2,000 requests per case
    python bench/read_bench.py --reviews 10000 --requests 500 --connections 4
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from compare_support.procs import Processes, proc_status_kb, start_reviewsd  # noqa: E402

CASES = [
    ("feed", "/api/feed.json", {}),
    ("304", "/api/feed.json", {"If-None-Match": None}),
    ("search selective", "/api/reviews/search?rating=2&mentions_technician=TECH&limit=20", {}),
    ("search broad", "/api/reviews/search?min_rating=1&limit=20", {}),
    ("search no hits", "/api/reviews/search?query=zzqxj-no-such-text&limit=20", {}),
]


def generate(reviews: int, out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "generate_data.py"),
            "--reviews",
            str(reviews),
            "--out",
            str(out),
        ],
        check=True,
        timeout=600,
    )


def load(
    host: str, port: int, path: str, headers: dict, total: int, connections: int
) -> tuple[float, list[float]]:
    """`total` GETs over `connections` keep-alive connections; (requests/s, latencies in ms)."""
    per_connection = max(1, total // connections)
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list[str] = []

    def worker() -> None:
        conn = http.client.HTTPConnection(host, port, timeout=30)
        mine = []
        for _ in range(per_connection):
            t0 = time.perf_counter()
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            mine.append((time.perf_counter() - t0) * 1000)
            if response.status not in (200, 304):
                errors.append(str(response.status))
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(connections)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise SystemExit(f"{len(errors)} errors, e.g. {errors[:3]}")
    return len(latencies) / elapsed, latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def in_process(data_dir: Path) -> list[tuple[str, float, float]]:
    """p50/p99 of run_search without HTTP, per case (milliseconds)."""
    from reviewsd_app.reviews import dataset as ds
    from reviewsd_app.reviews import search

    data = ds.load_dataset(data_dir)
    tech = next(iter(data.technicians.values()))["name"]
    newest = data.reviews[0]["date"]
    cases = {
        "rating + technician": {"rating": 2, "mentions_technician": tech},
        "narrow date range": {"since": newest, "until": newest},
        "broad (min_rating 1)": {"min_rating": 1},
        "substring, no hits": {"query": "zzqxj-no-such-text"},
        "substring, common word": {"query": "back"},
    }
    rows = []
    for name, args in cases.items():
        times = []
        for _ in range(200):
            t0 = time.perf_counter()
            search.run_search(data, args)
            times.append((time.perf_counter() - t0) * 1000)
        rows.append((name, statistics.median(times), percentile(times, 0.99)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reviews", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=2000, help="requests per case")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=8, help="server worker threads")
    parser.add_argument("--data-dir", help="use this data directory instead of generating one")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(args.data_dir) if args.data_dir else Path(tmp) / "data"
        if not args.data_dir:
            t0 = time.perf_counter()
            generate(args.reviews, data_dir)
            print(f"generated {args.reviews} reviews in {time.perf_counter() - t0:.1f} s")
        size = sum(f.stat().st_size for f in data_dir.glob("*.json")) / 1e6
        with Processes(Path(tmp)) as procs:
            server, base, ready = start_reviewsd(
                procs,
                [
                    "--data-dir",
                    str(data_dir),
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
            )
            host, port = base.removeprefix("http://").rsplit(":", 1)
            rss_start = proc_status_kb(server.pid, "VmRSS") / 1024
            print(
                f"data files {size:.1f} MB; start-up to listening {ready:.2f} s; RSS after start "
                f"{rss_start:.0f} MB"
            )
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            conn.request("GET", "/api/feed.json")
            feed = conn.getresponse()
            etag = feed.getheader("ETag")
            feed.read()
            conn.request("GET", "/insights.json")
            tech = json.loads(conn.getresponse().read())["entities"]["technicians"][0]["name"]
            conn.close()
            print(
                f"\n{'case':<18} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}   ({args.requests} requests, "
                f"{args.connections} connections)"
            )
            for name, path, headers in CASES:
                headers = {k: (etag if v is None else v) for k, v in headers.items()}
                path = path.replace("TECH", tech.replace(" ", "%20"))
                load(host, int(port), path, headers, min(200, args.requests), args.connections)  # warm-up
                rate, latencies = load(host, int(port), path, headers, args.requests, args.connections)
                print(
                    f"{name:<18} {rate:>8.0f} {statistics.median(latencies):>8.2f} "
                    f"{percentile(latencies, 0.99):>8.2f}"
                )
            print(f"\nRSS after load {proc_status_kb(server.pid, 'VmRSS') / 1024:.0f} MB")
        print(f"\nin-process search on {args.reviews} reviews ({'p50 ms':>7} {'p99 ms':>7})")
        for name, p50, p99 in in_process(data_dir):
            print(f"  {name:<24} {p50:>7.3f} {p99:>7.3f}")


if __name__ == "__main__":
    main()
