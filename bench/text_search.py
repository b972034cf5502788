#!/usr/bin/env python3
"""Substring search (`query`) in process: p50/p99 of run_search per query and the longest the GIL is held.

    .venv/bin/python bench/text_search.py [--reviews 10000,100000] [--root DIR]

Generates the data with tools/generate_data.py (deterministic) in a temporary folder and loads it. The
GIL column is the longest gap a thread that wakes every 0.5 ms saw while the searches ran, with the
server's switch interval: the longest a search keeps every other request of the server waiting (its
selector thread answers the feed between such gaps; a C call longer than the interval holds on). --root
loads the package of another checkout (a `git worktree` of main), so before and after print the same rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from read_bench import generate, percentile  # noqa: E402

QUERIES = {
    "e, lowest": {"query": "e", "sort": "lowest", "limit": 100},
    "e, oldest": {"query": "e", "sort": "oldest", "limit": 100},
    "e, newest": {"query": "e", "limit": 100},
    "adjustment, highest": {"query": "adjustment", "sort": "highest"},
    "front desk, 2 stars": {"query": "front desk", "rating": 2},
    "no such word": {"query": "zzqxj"},
}


def load_package(root: Path) -> None:
    """Import `root` as the package reviewsd_app (as `python reviewsd.py` does)."""
    spec = importlib.util.spec_from_file_location(
        "reviewsd_app", root / "__init__.py", submodule_search_locations=[str(root)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules["reviewsd_app"] = package
    spec.loader.exec_module(package)


class GilWatch:
    """A thread waking every 0.5 ms; `longest` is its longest gap between wakes since reset()."""

    def __init__(self) -> None:
        self.longest, self.stop = 0.0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        last = time.perf_counter()
        while not self.stop.is_set():
            time.sleep(0.0005)
            now = time.perf_counter()
            self.longest, last = max(self.longest, now - last), now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", default="10000,100000", help="sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    load_package(args.root.resolve())
    from reviewsd_app.httpserver.server import SWITCH_INTERVAL
    from reviewsd_app.reviews import dataset as ds
    from reviewsd_app.reviews import search

    sys.setswitchinterval(SWITCH_INTERVAL)  # as the server runs: a thread waits at most this for the GIL
    print(f"package: {args.root.resolve()}; GIL switch interval {SWITCH_INTERVAL * 1000:g} ms")
    for size in map(int, args.reviews.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            generate(size, Path(tmp))
            data = ds.load_dataset(tmp)
        search.run_search(data, {"query": "warm up"})  # whatever is built on first use
        print(f"{len(data.reviews):,} reviews")
        print(f"  {'query':<22} {'p50 ms':>8} {'p99 ms':>8} {'GIL ms':>8} {'matched':>8}")
        for name, query in QUERIES.items():
            watch = GilWatch()
            watch.thread.start()
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                page = search.run_search(data, query)
                times.append((time.perf_counter() - t0) * 1000)
            watch.stop.set()
            watch.thread.join()
            p50, p99 = statistics.median(times), percentile(times, 0.99)
            print(f"  {name:<22} {p50:8.2f} {p99:8.2f} {watch.longest * 1000:8.2f} {page.matched:8d}")


if __name__ == "__main__":
    main()
