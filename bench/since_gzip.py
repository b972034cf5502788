#!/usr/bin/env python3
"""What the gzip coding of since answers costs: per request, in process, against compressing per request.

For a generated data set (tools/generate_data.py) it prints, for a since answer from the newest, a middle
and the oldest date: the identity and gzip sizes, microseconds per answer made as the server makes it
(web/gzip_slices.py: the edges compressed, the rest a view of the shared stream), and milliseconds to
compress the same answer whole per request, as a proxy would; then the one-off cost of the shared stream
and its size beside /reviews.json's own gzip coding. Bounded: a few hundred answers per case.

    python bench/since_gzip.py                  # 10,000 reviews
    python bench/since_gzip.py --reviews 100000
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def per_call(action, calls: int) -> float:
    """The median seconds of one call of `action`, over `calls` calls."""
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=10_000)
    options = parser.parse_args()
    from reviewsd_app import reviewsd
    from reviewsd_app.reviews.search import since_page
    from reviewsd_app.web.gzip_slices import segment

    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"
        generator = [sys.executable, str(ROOT / "tools" / "generate_data.py")]
        arguments = ["--reviews", str(options.reviews), "--out", str(data)]
        subprocess.run([*generator, *arguments], check=True, timeout=900, capture_output=True)
        config = reviewsd.Config(
            data_dir=str(data), state_dir=str(Path(folder) / "state"), hub=False, reload_interval=0
        )
        app = reviewsd.create_app(config)
        snapshot = app.store.current
        dataset = snapshot.dataset
        body = dataset.reviews_document
        started = time.perf_counter()
        stream = segment(body, dataset.review_offsets)
        segment_s = time.perf_counter() - started
        whole_gzip = len(gzip.compress(body, 6, mtime=0))
        size = f"/reviews.json {len(body) / 1e6:.1f} MB, gzip {whole_gzip / 1e6:.2f} MB"
        print(f"{len(dataset.reviews):,} reviews, {size}")
        shared_mb = len(stream.compressed) / 1e6
        print(f"shared deflate stream: {segment_s * 1000:.0f} ms once per data version, {shared_mb:.2f} MB")
        print("| since | identity | gzip | gzip answer made (server) | compressed per request (proxy) |")
        print("|---|---|---|---|---|")
        dates = [dataset.reviews[0]["date"], dataset.reviews[len(dataset.reviews) // 2]["date"], "1990-01-01"]
        snapshot.since(since_page(dataset, dates[0], None, None), gzip=True)  # makes the shared stream
        for label, date in zip(["newest date", "middle date", "oldest date"], dates):
            page = since_page(dataset, date, None, None)
            identity = snapshot.since(page).identity.body
            plain = b"".join(bytes(part) for part in identity)
            zipped = snapshot.since(page, gzip=True).gzipped.body
            zipped_size = sum(len(part) for part in zipped)
            calls = 200 if len(plain) < 1e6 else 20
            served = per_call(lambda: snapshot.since(page, gzip=True), calls)
            proxy = per_call(lambda: gzip.compress(plain, 6, mtime=0), max(3, calls // 20))
            print(
                f"| {label} | {len(plain) / 1e3:,.0f} KB | {zipped_size / 1e3:,.0f} KB "
                f"| {served * 1e6:,.0f} µs | {proxy * 1e6:,.0f} µs |"
            )


if __name__ == "__main__":
    main()
