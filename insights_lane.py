"""The insights lane: insights.json's half of a data load, built in a helper process.

On two cores, insights.json's half of a build (parse, validate, encode, index: about
40% of it) runs in a helper process while the server builds reviews.json's half. The
helper is a fresh interpreter (`python insights_lane.py PATH [--answer-fd N]`), not a fork: a fork of a
serving process would inherit its threads' locks and its sockets. It reads the file
itself and answers with the sha256 of the bytes it read, so the server uses what it
built only when those are the bytes the server read; it builds only insights.json
without a problem of its own. Otherwise, and whenever it fails, the server builds that
half as it does without a lane, so every problem is reported the same way.

This module imports nothing heavy, so that `python reviewsd.py` can start a lane
before its own imports (`start_early`): a first start then spends no time with one
core idle. The building itself is dataset.py's (`build_insights_half`).
"""

from __future__ import annotations

import atexit
import logging
import mmap
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

log = logging.getLogger("reviewsd.data")

INSIGHTS_FILE = "insights.json"
MIN_BYTES = 4 << 20  # below about 20,000 reviews, starting the helper costs more than it saves
TIMEOUT = 300.0


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def lane_command(path: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), str(path)]


class InsightsLane:
    """A helper process building insights.json's half of a build.

    It writes its answer to an anonymous file the server made for it, not to a pipe: a
    pipe holds 64 KiB, so a helper done first would wait, its 26 MB answer (for 100,000
    reviews) unwritten, until the server came to read it, and that copy would be on the
    server's critical path. With the file it writes at once and exits.
    """

    def __init__(self, process: subprocess.Popen, answer_fd: int):
        self.process = process
        self._answer_fd: int | None = answer_fd

    @classmethod
    def start(cls, path: Path | None, size: int) -> "InsightsLane | None":
        """The helper for the file at `path` of `size` bytes, or None where it would not pay.

        None for a small file, on one CPU, for data made in memory (no path), and under
        a server that embeds Python (uWSGI, mod_wsgi), where sys.executable is that server.
        """
        if path is None or size < MIN_BYTES or usable_cpus() < 2:
            return None
        if not Path(sys.executable or "").name.startswith("python"):
            return None
        answer_fd = None
        try:
            answer_fd = _answer_file()
            process = subprocess.Popen([*lane_command(path), ANSWER_FD_OPTION, str(answer_fd)],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       pass_fds=(answer_fd,))
        except OSError as exc:
            if answer_fd is not None:
                os.close(answer_fd)
            log.warning("could not start the insights lane (%s); building insights.json in this process", exc)
            return None
        log.debug("building insights.json in a helper process, pid %d", process.pid)
        return cls(process, answer_fd)

    @classmethod
    def for_file(cls, path: Path | None, size: int) -> "InsightsLane | None":
        """The lane started early for this file (see start_early), else a new one (or None, as `start`)."""
        early = _started_early.pop(_key(path), None) if path is not None else None
        if early is None:
            return cls.start(path, size)
        log.debug("took the insights lane started early, pid %d", early.process.pid)
        return early

    def result(self, sha256: str) -> tuple | None:
        """What the helper built from the bytes whose sha256 this is, or None when the caller must build it."""
        try:
            _, err = self.process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            log.warning("the insights lane took over %g s; building insights.json in this process", TIMEOUT)
            return None
        answer = self._answer() if self.process.returncode == 0 else None
        if answer is None:
            log.warning("the insights lane failed (exit status %s%s); building insights.json in this process: %s",
                        self.process.returncode, ", no answer" if self.process.returncode == 0 else "",
                        err.decode("utf-8", "replace").strip()[-2000:])
            return None
        verdict, read_sha256, *built = answer
        if read_sha256 != sha256:
            verdict, built = "not built", ["the file changed since it was read"]
        if verdict != "built":
            log.debug("the insights lane did not build (%s); building insights.json in this process", built[0])
            return None
        return tuple(built)

    def _answer(self) -> Any:
        """What the helper wrote to its answer file, unpickled (once; the file is closed after); None if nothing.

        Unpickled from the file's pages mapped in, not from a copy read out first: the 26 MB
        answer for 100,000 reviews is copied once instead of twice.
        """
        fd, self._answer_fd = self._answer_fd, None
        if fd is None:
            return None
        try:
            size = os.fstat(fd).st_size
            if not size:
                return None
            with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as answer:
                return pickle.loads(answer)  # from our own helper, which read our own file
        finally:
            os.close(fd)  # and with it the file

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()
        if self._answer_fd is not None:
            os.close(self._answer_fd)
            self._answer_fd = None


ANSWER_FD_OPTION = "--answer-fd"


def _answer_file() -> int:
    """A descriptor of an anonymous file: in memory where Linux has memfd_create, else an unlinked temporary file."""
    try:
        return os.memfd_create("reviewsd-insights-lane", os.MFD_CLOEXEC)
    except (AttributeError, OSError):  # not Linux, or a seccomp filter that forbids it
        import tempfile  # here: this module stays light (see start_early)

        fd, name = tempfile.mkstemp(prefix="reviewsd-insights-lane-")
        os.unlink(name)
        return fd


# --------------------------------------------------------------------------- started early

_started_early: dict[str, InsightsLane] = {}  # by resolved path, until a load takes it (for_file)


def _key(path: Path) -> str:
    return str(Path(path).resolve())


def start_early(data_dir: Path, skip_if: Path | None = None) -> None:
    """Start the lane for data_dir's insights.json now, for the first load to take, unless `skip_if` exists.

    Called by `python reviewsd.py` before its imports, when nothing else runs yet;
    `skip_if` is the build cache, from which a restart on unchanged data loads
    without building. A lane nobody takes is stopped at exit (or by `discard_early`).
    """
    if skip_if is not None and skip_if.exists():
        return
    path = Path(data_dir) / INSIGHTS_FILE
    try:
        size = path.stat().st_size
    except OSError:
        return  # the load reports it
    lane = InsightsLane.start(path, size)
    if lane is not None:
        _started_early[_key(path)] = lane


def discard_early() -> None:
    """Stop the lanes started early that no load took."""
    while _started_early:
        _started_early.popitem()[1].close()


atexit.register(discard_early)


# --------------------------------------------------------------------------- the helper's side


def main(argv: Sequence[str]) -> int:
    """`PATH [--answer-fd N]`: build, then write ("built", sha256, *EntryBuild) or ("not built", sha256, why)
    as a pickle to descriptor N (default: stdout)."""
    import gc

    gc.disable()  # a short-lived process making millions of objects
    from dataset import build_insights_half  # here: the server's side of this module stays light

    if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != ANSWER_FD_OPTION):
        sys.stderr.write(f"usage: insights_lane.py PATH [{ANSWER_FD_OPTION} N]\n")
        return 2
    answer: Any = build_insights_half(Path(argv[0]))
    with open(int(argv[2]) if len(argv) == 3 else sys.stdout.fileno(), "wb", closefd=len(argv) == 3) as out:
        out.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
