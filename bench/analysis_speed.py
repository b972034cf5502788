"""Speed of `reviewsd analyze` and `reviewsd import` at the sizes in issue 28's targets.

    python bench/analysis_speed.py [--sizes 10000,100000] [--jobs 1,2] [--import-rows 100000] [--memory]

Analyze: tools/generate_data.py's reviews (chiropractic preset), analyze_dir timed from reading reviews.json
to writing insights.json, in one process and in as many as `reviewsd analyze` uses by default (the CPUs
this process may use, at most 4), one after the other on the same reviews.
Import: a CSV of that many rows (written first, not timed) into an empty data directory.
Targets (2 cores): analyze 10,000 reviews <= 5 s, 100,000 <= 60 s; import 100,000 CSV rows <= 10 s.
Pathological texts (--pathological): one review of tabs, of "Dr. " repeated, of one aspect term repeated,
each at 5,000, 10,000 and 20,000 characters: linear time shows as times that double with the length.
Many terms: 1,000 sample reviews with the preset's aspects and 5,000 extra terms.
Long reviews (--long N): N reviews of 20,000 characters, `reviewsd analyze` in a process of its own per --jobs
value: its time and the peak memory of its largest process.
Memory (--memory): `reviewsd analyze` over --sizes reviews in a process of its own per --jobs value, and the
peak of the summed PSS of it and its workers (each process's share of the pages it touches; read from
/proc/PID/smaps_rollup every 50 ms, so Linux only): what counts against a systemd unit's MemoryMax=.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reviewsd_app.analysis.batch import analyse_reviews, default_jobs
from reviewsd_app.analysis.model import shipped_model
from reviewsd_app.analysis.run import analyze_dir
from reviewsd_app.authoring.files import dumps, read_json
from reviewsd_app.authoring.presets import render_preset, write_starter
from reviewsd_app.authoring.profile import load_profile, parse_profile
from reviewsd_app.ingest.records import review_id
from reviewsd_app.ingest.run import import_files

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_PROFILE = ROOT / "data" / "business.toml"  # the generated reviews name its staff, services and towns


def generate(count: int, out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "generate_data.py"),
            "--reviews",
            str(count),
            "--out",
            str(out),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def time_analyze(count: int, work: Path, jobs: list[int]) -> None:
    data = work / f"analyze-{count}"
    generate(count, data)
    (data / "insights.json").unlink()
    profile = parse_profile(SAMPLE_PROFILE.read_text("utf-8"))
    size = (data / "reviews.json").stat().st_size
    for processes in jobs:
        started = time.perf_counter()
        line = analyze_dir(data, profile, jobs=processes)
        seconds = time.perf_counter() - started
        print(
            f"analyze {count:>7,} reviews ({size / 1e6:.1f} MB), --jobs {processes}: {seconds:6.2f} s  "
            f"({line.split(': ', 1)[1]})"
        )


def time_import(rows: int, work: Path) -> None:
    source = work / f"reviews-{rows}.csv"
    reviews = (
        read_json(work / f"analyze-{rows}" / "reviews.json")["reviews"]
        if (work / f"analyze-{rows}").is_dir()
        else None
    )
    if reviews is None:
        generate(rows, work / "import-source")
        reviews = read_json(work / "import-source" / "reviews.json")["reviews"]
    with source.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["author", "rating", "date", "text", "source"])
        for number, review in enumerate(reviews[:rows]):
            writer.writerow(
                [
                    f"{review['author']} {number}",
                    review["rating"],
                    review["date"],
                    review["text"] or "",
                    review["source"],
                ]
            )
    target = work / "import-target"
    write_starter(target, "chiropractic")
    profile = load_profile(target)
    started = time.perf_counter()
    result = import_files(target, [source], profile)
    seconds = time.perf_counter() - started
    print(
        f"import  {rows:>7,} CSV rows ({source.stat().st_size / 1e6:.1f} MB): {seconds:6.2f} s  "
        f"({result.summary()})"
    )


def time_pathological() -> None:
    profile = parse_profile(render_preset("restaurant"))
    texts = {"tabs": "\t", "Dr. repeated": "Dr. ", "a term repeated": "wait ", "a word": "x"}
    for name, unit in texts.items():
        figures = []
        for length in (5_000, 10_000, 20_000):
            review = {
                "id": "a",
                "rating": 3,
                "date": "2026-01-01",
                "text": "Fine. " + unit * (length // len(unit)),
            }
            started = time.perf_counter()
            analyse_reviews([review], profile)
            figures.append(f"{length:>6,} chars {time.perf_counter() - started:6.3f} s")
        print(f"one review of {name:<16} " + "; ".join(figures))
    sample = read_json(ROOT / "data" / "reviews.json")["reviews"]
    reviews = [{**r, "id": f"{n:026d}"} for n in range(4) for r in sample][:1000]
    base = SAMPLE_PROFILE.read_text("utf-8")
    extra = (
        '[[aspects]]\nid = "many"\nlabel = "Many"\nterms = ['
        + ", ".join(f'"term{n} word{n % 50}"' for n in range(5000))
        + "]\n"
    )
    for label, text in (("preset terms", base), ("+5,000 terms", base + extra)):
        started = time.perf_counter()
        analyse_reviews(reviews, parse_profile(text))
        print(f"1,000 sample reviews, {label:<13} {time.perf_counter() - started:6.2f} s")


def analyze_command(data: Path, processes: int) -> list[str]:
    """`reviewsd analyze` over one data directory in `processes` processes, as a user would run it."""
    script = str(ROOT / "reviewsd.py")
    return [sys.executable, script, "analyze", "--data-dir", str(data), "--jobs", str(processes)]


def time_long_reviews(count: int, jobs: list[int], work: Path) -> None:
    """`reviewsd analyze` over `count` reviews of 20,000 characters (the sample's texts run together), in a
    process of its own per --jobs value: its time and the peak resident memory of its largest process."""
    sample = read_json(ROOT / "data" / "reviews.json")
    texts = [r["text"] for r in sample["reviews"] if r["text"]]
    reviews = []
    for number in range(count):
        parts, length, at = [], 0, number
        while length < 20_000:
            parts.append(texts[at % len(texts)])
            length += len(parts[-1]) + 1
            at += 7
        template = sample["reviews"][number % len(sample["reviews"])]
        reviews.append({**template, "id": review_id("long", str(number)), "text": " ".join(parts)[:20_000]})
    data = work / f"long-{count}"
    data.mkdir()
    (data / "reviews.json").write_bytes(dumps({**sample, "reviews": reviews}))
    (data / "business.toml").write_bytes(SAMPLE_PROFILE.read_bytes())
    for processes in jobs:
        command = analyze_command(data, processes)
        # a process of its own around each run: its children's peak is this run's alone
        measure = (
            "import resource, subprocess, sys, time; started = time.perf_counter(); "
            "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
            "print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        shown = subprocess.run([sys.executable, "-c", measure, *command], check=True, capture_output=True)
        seconds, peak_kib = shown.stdout.split()
        print(
            f"analyze {count:,} reviews of 20,000 characters, --jobs {processes}: {float(seconds):6.2f} s, "
            f"largest process {int(peak_kib) / 1024:.0f} MiB"
        )


def _process_tree(pid: int) -> list[int]:
    found = [pid]
    for each in found:
        try:
            for task in os.listdir(f"/proc/{each}/task"):
                children = Path(f"/proc/{each}/task/{task}/children").read_text()
                found += [int(child) for child in children.split()]
        except OSError:  # it ended while read
            pass
    return found


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure_memory(counts: list[int], jobs: list[int], work: Path) -> None:
    """Peak summed PSS of `reviewsd analyze` and its workers, per size and --jobs value."""
    for count in counts:
        data = work / f"memory-{count}"
        generate(count, data)
        (data / "business.toml").write_bytes(SAMPLE_PROFILE.read_bytes())
        for processes in jobs:
            started = time.perf_counter()
            child = subprocess.Popen(analyze_command(data, processes), stdout=subprocess.DEVNULL)
            peak = 0
            while child.poll() is None:
                peak = max(peak, sum(_pss_kib(pid) for pid in _process_tree(child.pid)))
                time.sleep(0.05)  # a sample, not a synchronisation: the loop ends when the child does
            print(
                f"analyze {count:>7,} reviews, --jobs {processes}: peak summed PSS {peak / 1024:.0f} MiB "
                f"({time.perf_counter() - started:.1f} s, exit {child.returncode})"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="review counts to analyze, comma-separated")
    parser.add_argument(
        "--jobs",
        default=",".join(str(n) for n in sorted({1, default_jobs()})),
        help="analyze's process counts to time, comma-separated (default: 1 and analyze's default)",
    )
    parser.add_argument("--import-rows", type=int, default=100_000)
    parser.add_argument("--pathological", action="store_true", help="only the pathological texts and terms")
    parser.add_argument("--memory", action="store_true", help="only analyze's summed PSS, with its workers")
    parser.add_argument(
        "--long", type=int, metavar="N", help="only N reviews of 20,000 characters, with each --jobs value"
    )
    args = parser.parse_args(argv)
    jobs = [int(processes) for processes in args.jobs.split(",")]
    sizes = [int(size) for size in args.sizes.split(",") if size]
    if args.pathological:
        time_pathological()
        return 0
    if args.long:
        with tempfile.TemporaryDirectory(prefix="reviewsd-speed-") as work:
            time_long_reviews(args.long, jobs, Path(work))
        return 0
    if args.memory:
        with tempfile.TemporaryDirectory(prefix="reviewsd-speed-") as work:
            measure_memory(sizes, jobs, Path(work))
        return 0
    started = time.perf_counter()
    shipped_model()  # once per process: every figure below would otherwise count it but the first
    print(f"the shipped model loads in {time.perf_counter() - started:.2f} s (not in the analyze figures)")
    with tempfile.TemporaryDirectory(prefix="reviewsd-speed-") as work:
        for count in sizes:
            time_analyze(count, Path(work), jobs)
        if args.import_rows:
            time_import(args.import_rows, Path(work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
