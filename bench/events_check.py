"""What the events' comparison costs per accepted reload, at real sizes: the baseline (first start), a reload
with no review changed, and one with 5 new reviews and 1 edit; and the database's size.

    python bench/events_check.py [--sizes 300,10000] [--rounds 5]

Runs in this process on generated data (tools/generate_data.py), the comparison called directly (the
watcher thread is not started; nothing is sent). Prints the median of `--rounds` per figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from reviewsd_app import reviewsd  # noqa: E402
from reviewsd_app.events.config import load_notify  # noqa: E402
from reviewsd_app.events.notifier import Notifier  # noqa: E402


def generator():
    spec = importlib.util.spec_from_file_location("generate_data", ROOT / "tools" / "generate_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def changed(reviews_doc: dict, insights_doc: dict, round_: int) -> tuple[dict, dict]:
    """5 new reviews (copies of the newest with new ids) and 1 edited text; insights untouched."""
    reviews = [dict(r) for r in reviews_doc["reviews"]]
    for i in range(5):
        copy = dict(reviews[0], id=f"7{round_:02d}{i:02d}" + reviews[0]["id"][5:])
        reviews.insert(0, copy)
    reviews[10]["text"] = f"Edited in round {round_}."
    doc = dict(reviews_doc, reviews=reviews)
    doc["aggregate_rating"] = dict(doc["aggregate_rating"], review_count=len(reviews))
    ratings = [r["rating"] for r in reviews]
    doc["aggregate_rating"]["rating_value"] = round(sum(ratings) / len(ratings), 2)
    doc["aggregate_rating"]["distribution"] = {str(s): ratings.count(s) for s in range(1, 6)}
    return doc, insights_doc


def measure(size: int, rounds: int, gen) -> dict[str, float]:
    figures: dict[str, list[float]] = {"baseline": [], "unchanged": [], "5 new + 1 edit": []}
    db_bytes = 0
    for round_ in range(rounds):
        with tempfile.TemporaryDirectory() as work:
            data, state = Path(work) / "data", Path(work) / "state"
            reviews_doc, insights_doc = gen.generate(size, 7, gen.DEFAULT_END_DATE, 3.5)
            gen.write_dataset(str(data), reviews_doc, insights_doc)
            notify = Path(work) / "notify.toml"
            (Path(work) / "secret").write_text("whsec_" + "A" * 44)
            (Path(work) / "secret").chmod(0o600)
            notify.write_text('[[webhooks]]\nurl = "https://hooks.example.com/r"\nsecret_file = "secret"\n')
            config = reviewsd.Config(data_dir=str(data), state_dir=str(state), reload_interval=0, hub=False)
            store = reviewsd.open_store(config)
            notifier = Notifier(store, config, load_notify(notify))
            notifier.db.open()
            for name, prepare in (
                ("baseline", None),
                ("unchanged", lambda: store.reload(force=True)),
                (
                    "5 new + 1 edit",
                    lambda: (
                        gen.write_dataset(str(data), *changed(reviews_doc, insights_doc, round_)),
                        store.reload(force=True),
                    ),
                ),
            ):
                if prepare is not None:
                    prepare()
                started = time.perf_counter()
                made = notifier.check()
                figures[name].append(time.perf_counter() - started)
                assert made == (6 if name == "5 new + 1 edit" else 0), (name, made)  # the reload was accepted
            db_bytes = (state / "events.sqlite3").stat().st_size + (
                (state / "events.sqlite3-wal").stat().st_size
                if (state / "events.sqlite3-wal").exists()
                else 0
            )
            notifier.db.close()
            notifier.outbound.close()
    return {**{k: statistics.median(v) * 1000 for k, v in figures.items()}, "db MB": db_bytes / 1e6}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="300,10000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    gen = generator()
    print(f"{'reviews':>8} {'baseline ms':>12} {'unchanged ms':>13} {'5 new+1 edit ms':>16} {'db MB':>7}")
    for size in (int(s) for s in args.sizes.split(",")):
        f = measure(size, args.rounds, gen)
        times = f"{f['baseline']:>12.1f} {f['unchanged']:>13.1f} {f['5 new + 1 edit']:>16.1f}"
        print(f"{size:>8} {times} {f['db MB']:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
