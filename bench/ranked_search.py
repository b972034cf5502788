#!/usr/bin/env python3
"""Ranked search (`q`) in process: the index build on first use, then p50/p99 of run_search per query.

Usage: python bench/ranked_search.py [--reviews 10000]. Generates the data with tools/generate_data.py
(deterministic) in a temporary folder, loads it, and prints milliseconds; the issue's bar is p99 < 20 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from read_bench import generate, percentile  # noqa: E402

QUERIES = {
    "complaint sentence": {"q": "What do people complain about most?"},
    "complaints, last 3 months": {"q": "complaints", "since": "SINCE"},
    "two common words": {"q": "great adjustment"},
    "aspect name, 1-2 stars": {"q": "front desk", "max_rating": 2},
    "person's name": {"q": "what do people say about Patel"},
    "no such word": {"q": "zzqxj"},
    "q as a filter, newest": {"q": "billing", "sort": "newest"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    from reviewsd_app.reviews import dataset as ds
    from reviewsd_app.reviews import ranked, search

    with tempfile.TemporaryDirectory() as tmp:
        generate(args.reviews, Path(tmp))
        data = ds.load_dataset(tmp)
    since = data.dates_ascending[-1][:8] + "01"  # the newest month, two more before it
    year, month = int(since[:4]), int(since[5:7]) - 2
    since = f"{year - (month < 1)}-{(month - 1) % 12 + 1:02d}-01"
    t0 = time.perf_counter()
    ranked.word_index(data)
    built = (time.perf_counter() - t0) * 1000
    print(f"{len(data.reviews)} reviews; index built on first use in {built:.0f} ms")
    print(f"{'query':<28} {'p50 ms':>8} {'p99 ms':>8} {'matched':>8}")
    for name, query in QUERIES.items():
        query = {k: since if v == "SINCE" else v for k, v in query.items()}
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            page = search.run_search(data, query)
            times.append((time.perf_counter() - t0) * 1000)
        p50, p99 = statistics.median(times), percentile(times, 0.99)
        print(f"{name:<28} {p50:8.2f} {p99:8.2f} {page.matched:8d}")


if __name__ == "__main__":
    main()
