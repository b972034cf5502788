"""Start-up against a bare json.load of the same files, alternated; then memory and a reload's peak.

    python bench/startup.py --data-dir /tmp/big [--rounds 7] [--checkout DIR]

Each round times `python -c` json.load of reviews.json and insights.json, then `python
reviewsd.py` from its start to READY (the "listening on" line) with an empty state directory,
in turn, so that the ratio is taken pair by pair while the machine's speed drifts. The last
server then gets one reload (SIGHUP after a change to insights.json): its resident memory
before, and its peak during the reload (VmHWM, reset first). Issue 21's targets: READY within
2x json.load at 100,000 reviews, under 350 MB, a reload's peak under 2.5x the steady state.
`--checkout` times another checkout's reviewsd.py (e.g. an older commit's, via git worktree).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def json_load_seconds(data: Path) -> float:
    code = (
        f"import json; json.load(open({str(data / 'reviews.json')!r}, 'rb')); "
        f"json.load(open({str(data / 'insights.json')!r}, 'rb'))"
    )
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.monotonic() - started


def start_to_ready(checkout: Path, data: Path, state: Path) -> tuple[subprocess.Popen, float]:
    started = time.monotonic()
    server = subprocess.Popen(
        [
            sys.executable,
            str(checkout / "reviewsd.py"),
            "--port",
            "0",
            "--data-dir",
            str(data),
            "--state-dir",
            str(state),
            "--reload-interval",
            "0",
            "--no-hub",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    for line in server.stderr:
        if "listening on" in line:
            return server, time.monotonic() - started
    raise RuntimeError(f"reviewsd exited before READY ({server.wait()})")


def status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def reload_peak(server: subprocess.Popen, data: Path) -> tuple[float, float]:
    """(resident MB before, peak MB during) one reload of changed data."""
    steady = status_mb(server.pid, "VmRSS")
    Path(f"/proc/{server.pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    with open(data / "insights.json", "ab") as file:
        file.write(b"\n")  # other bytes, the same data
    server.send_signal(signal.SIGHUP)
    assert server.stderr is not None
    for line in server.stderr:
        if "data reloaded" in line or "reload refused" in line:
            break
    return steady, status_mb(server.pid, "VmHWM")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--checkout", type=Path, default=ROOT)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="reviewsd-startup-"))
    data = work / "data"
    shutil.copytree(args.data_dir, data)
    loads, readies, server = [], [], None
    try:
        for _ in range(args.rounds):
            if server is not None:
                server.terminate()
                server.wait()
            loads.append(json_load_seconds(data))
            shutil.rmtree(work / "state", ignore_errors=True)
            server, seconds = start_to_ready(args.checkout, data, work / "state")
            readies.append(seconds)
        assert server is not None
        ratios = sorted(r / j for r, j in zip(readies, loads))
        print(
            f"json.load of both files: median {statistics.median(loads):.2f} s "
            f"({', '.join(f'{t:.2f}' for t in loads)})"
        )
        print(
            f"reviewsd to READY:       median {statistics.median(readies):.2f} s "
            f"({', '.join(f'{t:.2f}' for t in readies)})"
        )
        print(
            f"READY / json.load, pair by pair: median {statistics.median(ratios):.2f} "
            f"(min {ratios[0]:.2f}, max {ratios[-1]:.2f}; target 2)"
        )
        steady, peak = reload_peak(server, data)
        print(
            f"resident after READY {steady:.0f} MB (target 350); a reload's peak {peak:.0f} MB, "
            f"{peak / steady:.2f}x (target 2.5)"
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
