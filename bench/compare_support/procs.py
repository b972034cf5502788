"""Processes the benchmarks start (reviewsd the same way in
each), the shared benchmark lock, small /proc readers."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Sequence

LOCK_PATH = Path("/tmp/reviewsd-bench.lock")
ROOT = Path(__file__).resolve().parents[2]  # the repository
# The line reviewsd logs once it is READY (text or JSON log format alike); group 1 is the base URL.
LISTENING = r"listening on (http://127\.0\.0\.1:\d+)"


class StartError(RuntimeError):
    """A process we started did not become ready; the message carries its log tail."""


@dataclass
class Child:
    """One started process; its stdout and stderr go to `log` (a file, so nothing of ours drains a pipe)."""

    name: str
    proc: subprocess.Popen
    log: Path
    stop_signal: int = signal.SIGTERM
    _offset: int = field(default=0, repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match[str]:
        """Poll the log for a line matching `pattern` (10 ms steps); StartError on exit or timeout."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with open(self.log, "rb") as f:
            while True:
                f.seek(self._offset)
                data = f.read()
                end = data.rfind(b"\n") + 1  # complete lines only
                at = 0
                for line in data[:end].split(b"\n")[:-1]:
                    at += len(line) + 1
                    found = regex.search(line.decode("utf-8", "replace"))
                    if found:
                        self._offset += at  # the next wait starts after this line
                        return found
                self._offset += end
                if self.proc.poll() is not None:
                    raise StartError(f"{self.name} exited with status {self.proc.returncode}:\n{self.tail()}")
                if time.monotonic() > deadline:
                    raise StartError(
                        f"{self.name}: no line matching {pattern!r} within {timeout:.0f} s:\n{self.tail()}"
                    )
                if not end:
                    time.sleep(0.01)

    def skip_log(self) -> None:
        """Later wait_for_line calls look only at what is logged from now on."""
        self._offset = self.log.stat().st_size

    def trim_log(self, keep_below: int = 64 << 20) -> None:
        """The access log of a long run would fill /tmp; children append, so truncating is safe."""
        if self.log.stat().st_size > keep_below:
            os.truncate(self.log, 0)
            self._offset = 0

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


class Processes:
    """Starts children and stops every one of them, by PID, newest first, whatever happens."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.children: list[Child] = []
        self.started = 0  # numbers the log files: a restarted server must not find its old "listening" line

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        pass_fds: Sequence[int] = (),
        stop_signal: int = signal.SIGTERM,
    ) -> Child:
        self.started += 1
        log = self.log_dir / f"{name}.{self.started}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=tuple(pass_fds),
            )
        child = Child(name, proc, log, stop_signal)
        self.children.append(child)
        return child

    def stop(self, child: Child, grace: float = 15.0) -> None:
        if child.proc.poll() is None:
            try:
                os.kill(child.pid, child.stop_signal)
                child.proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.kill(child.pid, signal.SIGKILL)
                child.proc.wait(5)
            except ProcessLookupError:
                pass
        if child in self.children:
            self.children.remove(child)

    def stop_all(self) -> None:
        for child in reversed(list(self.children)):
            try:
                self.stop(child)
            except Exception as exc:  # keep stopping the others
                print(f"  could not stop {child.name} (pid {child.pid}): {exc}")

    def __enter__(self) -> "Processes":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_all()


def start_reviewsd(
    procs: Processes,
    options: Sequence[str],
    *,
    name: str = "reviewsd",
    timeout: float = 300.0,
    root: Path = ROOT,
) -> tuple[Child, str, float]:
    """`python reviewsd.py --host 127.0.0.1 --port 0 OPTIONS`:
    (child, base URL, seconds until its READY line).

    Every benchmark starts the server this way, so each measures the same thing: the
    script as the unit runs it, its log in a file (a pipe nobody drains would stall it).
    """
    argv = [sys.executable, str(root / "reviewsd.py"), "--host", "127.0.0.1", "--port", "0", *options]
    started = time.perf_counter()
    child = procs.start(name, argv, cwd=root)
    try:
        base = child.wait_for_line(LISTENING, timeout).group(1)
    except StartError:
        procs.stop(child)
        raise
    return child, base, time.perf_counter() - started


def hold_bench_lock(timeout: float) -> IO | None:
    """Take /tmp/reviewsd-bench.lock so no other benchmark runs at the same time.

    When the caller already holds it (`flock /tmp/reviewsd-bench.lock bench/compare`
    passes the locked descriptor down), taking it again through a new open file
    would wait forever, so an inherited descriptor on that file counts as held.
    """
    target = os.path.realpath(LOCK_PATH)
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                print(f"bench lock: {LOCK_PATH} is held by the caller")
                return None
        except OSError:
            continue
    handle = open(LOCK_PATH, "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return handle
    except BlockingIOError:
        print(
            f"bench lock: waiting for {LOCK_PATH} (another benchmark is running; at most {timeout:.0f} s)",
            flush=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(1.0)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            continue
    handle.close()
    raise SystemExit(f"bench lock: {LOCK_PATH} still held after {timeout:.0f} s; giving up")


def proc_status_kb(pid: int, field_name: str) -> int:
    """A field of /proc/PID/status in kB (VmRSS, VmHWM), or 0 when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its direct children (nginx and gunicorn serve from children)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for one in [pid, *_children(pid)]:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except (OSError, IndexError, ValueError):
            continue
    return total


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(c) for c in task.read_text().split()]
        except OSError:
            continue
    return found


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])
