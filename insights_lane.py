"""The insights lane: insights.json's half of a data load, built in a helper process.

On two cores, insights.json's half of a build (parse, validate, encode, index: about
40% of it) runs in a helper process while the server builds reviews.json's half; where
reviews.json is large enough, the helper first builds the back of its reviews too, as
much as ends both processes together (dataset.build_reviews_back_of). The helper is a
fresh interpreter (`python insights_lane.py INSIGHTS [--reviews REVIEWS --back-from
OFFSET] [--answer-fd N [--back-fd M]]`), not a fork: a
fork of a serving process would inherit its threads' locks and its sockets. It reads
the files itself and answers with the sha256 of the bytes it read, so the server uses
what it built only when those are the bytes the server read; it builds only data
without a problem of its own. Otherwise, and whenever it fails, the server builds that
part as it does without a lane, so every problem is reported the same way.

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
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

log = logging.getLogger("reviewsd.data")

REVIEWS_FILE = "reviews.json"
INSIGHTS_FILE = "insights.json"
MIN_BYTES = 4 << 20  # below about 20,000 reviews, starting the helper costs more than it saves
TIMEOUT = 300.0
# The helper's time for a byte of insights.json over the time for a byte of reviews.json
# (building 100,000 reviews' insights.json, 20 MB, took 1.45 s, their reviews.json, 50 MB,
# 2.2 s; less where its reviews are taken as the file writes them, see
# dataset.reviews_written_as_encoded), set to what ended both processes together in bench
# runs on generated files (1.6 to 1.9 did alike; 1.4 left the server waiting 0.1 s for the
# helper, 2.1 the other way): the server also joins the two shares and starts first.
LANE_COST_RATIO = 1.75
BACK_MIN_BYTES = 1 << 20  # a smaller back saves less than joining it costs


def back_search_start(reviews_size: int, insights_size: int) -> int | None:
    """Where the search for the gap that starts reviews.json's back begins; None where a back would not pay.

    The helper's own work is insights.json, at LANE_COST_RATIO times the cost of a byte of
    reviews.json: a back of (reviews - ratio x insights) / 2 bytes ends both processes together.
    """
    back = int((reviews_size - LANE_COST_RATIO * insights_size) / 2)
    return reviews_size - back if back >= BACK_MIN_BYTES else None


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def lane_command(path: Path, back: tuple[Path, int] | None = None) -> list[str]:
    """The helper's command line for insights.json at `path` and, to build reviews.json's back too,
    `back`: that file's path and where the search for the back's comma begins (back_search_start)."""
    return [sys.executable, str(Path(__file__).resolve()), str(path),
            *([REVIEWS_OPTION, str(back[0]), BACK_FROM_OPTION, str(back[1])] if back is not None else [])]


def _back(reviews: Path | None, insights_size: int) -> tuple[Path, int] | None:
    """reviews.json's path and where its back's search begins, where a back would pay."""
    try:
        start = None if reviews is None else back_search_start(reviews.stat().st_size, insights_size)
    except OSError:
        return None  # the load reports it
    return None if start is None else (reviews, start)


class InsightsLane:
    """A helper process building insights.json's half of a build, and reviews.json's back.

    It writes each answer to an anonymous file the server made for it, not to a pipe: a
    pipe holds 64 KiB, so a helper done first would wait, its 26 MB answer (for 100,000
    reviews) unwritten, until the server came to read it, and that copy would be on the
    server's critical path. With the files it writes at once and goes on. Once an answer
    is written it says so with one byte on its stdout (BACK_WRITTEN, INSIGHTS_WRITTEN), so
    the server can take reviews.json's back while the helper builds insights.json, and
    need not wait for the helper to end (its memory given back) to take the last answer.
    """

    def __init__(self, process: subprocess.Popen, answer_fds: dict[bytes, int]):
        self.process = process
        self._answer_fds = answer_fds  # by the byte that says the answer is written; closed once read
        self._answers: dict[bytes, Any] = {}  # the answers read, by that byte
        self._stderr = b""  # the end of what it wrote there
        self._deadline = time.monotonic() + TIMEOUT
        self._ended = False  # ended, failed or given up on: no more answers will come

    @classmethod
    def start(cls, path: Path | None, size: int, reviews: Path | None = None) -> "InsightsLane | None":
        """The helper for insights.json at `path` of `size` bytes, or None where it would not pay.

        With `reviews`, the path of reviews.json, it also builds that file's back where that pays.

        None for a small file, on one CPU, for data made in memory (no path), and under
        a server that embeds Python (uWSGI, mod_wsgi), where sys.executable is that server.
        """
        if path is None or size < MIN_BYTES or usable_cpus() < 2:
            return None
        if not Path(sys.executable or "").name.startswith("python"):
            return None
        back = _back(reviews, size)
        answer_fds: dict[bytes, int] = {}
        try:
            answer_fds[INSIGHTS_WRITTEN] = _answer_file()
            command = [*lane_command(path, back), ANSWER_FD_OPTION, str(answer_fds[INSIGHTS_WRITTEN])]
            if back is not None:
                answer_fds[BACK_WRITTEN] = _answer_file()
                command += [BACK_FD_OPTION, str(answer_fds[BACK_WRITTEN])]
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, pass_fds=tuple(answer_fds.values()))
        except OSError as exc:
            for fd in answer_fds.values():
                os.close(fd)
            log.warning("could not start the insights lane (%s); building insights.json in this process", exc)
            return None
        log.debug("building insights.json in a helper process, pid %d", process.pid)
        return cls(process, answer_fds)

    @classmethod
    def for_file(cls, path: Path | None, size: int, reviews: Path | None = None) -> "InsightsLane | None":
        """The lane started early for this file (see start_early), else a new one (or None, as `start`)."""
        early = _started_early.pop(_key(path), None) if path is not None else None
        if early is None:
            return cls.start(path, size, reviews)
        log.debug("took the insights lane started early, pid %d", early.process.pid)
        return early

    def insights_half(self, sha256: str) -> tuple | None:
        """What the helper built of insights.json from the bytes whose sha256 this is, or None when the caller must."""
        answer = self._answer(INSIGHTS_WRITTEN)
        if answer is None:
            return None
        verdict, read_sha256, *built = answer
        if read_sha256 != sha256:
            verdict, built = "not built", ["the file changed since it was read"]
        if verdict != "built":
            log.debug("the insights lane did not build (%s); building insights.json in this process", built[0])
            return None
        return tuple(built)

    def reviews_back(self, comma: int, sha256: str) -> tuple | None:
        """The back of reviews.json the helper built from the bytes after `comma`, whose sha256 this is, or None."""
        answer = self._answer(BACK_WRITTEN)
        if answer is None:
            return None
        verdict, *built = answer
        if verdict == "built" and built[:2] != [comma, sha256]:
            verdict, built = "not built", ["the file changed since it was read"]
        if verdict != "built":
            log.debug("the insights lane did not build reviews.json's back (%s)", built[0])
            return None
        return tuple(built[2:])

    def _answer(self, written: bytes) -> Any:
        """The answer the helper says with `written` it has written, waiting for it; None where none will come."""
        if written not in self._answers and written not in self._answer_fds:
            return None  # not asked of this helper
        while written not in self._answers and not self._ended:
            said = self._next_word()
            if said in self._answer_fds:
                self._answers[said] = self._read_answer(said)
        return self._answers.get(written)

    def _next_word(self) -> bytes | None:
        """The next byte on the helper's stdout (its stderr kept meanwhile); None once it ends, fails or times out."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            selector.register(self.process.stderr, selectors.EVENT_READ)
            while True:
                ready = selector.select(max(0.0, self._deadline - time.monotonic()))
                if not ready:
                    return self._timed_out()
                for key, _ in ready:
                    if key.fileobj is self.process.stderr:  # read as it comes: a full pipe would stop the helper
                        chunk = os.read(key.fd, 65536)
                        if not chunk:
                            selector.unregister(self.process.stderr)
                        self._stderr = (self._stderr + chunk)[-4000:]
                        continue
                    word = os.read(key.fd, 1)
                    if not word:
                        return self._ended_by_itself()
                    return word

    def _ended_by_itself(self) -> None:
        """The helper closed its stdout: it is ending; warn where it failed before its last answer."""
        try:
            _, err = self.process.communicate(timeout=max(0.0, self._deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return self._timed_out()
        self._stderr += err
        if self.process.returncode != 0 or INSIGHTS_WRITTEN not in self._answers:
            log.warning("the insights lane failed (exit status %s%s); building insights.json in this process: %s",
                        self.process.returncode, ", no answer" if self.process.returncode == 0 else "",
                        self._stderr.decode("utf-8", "replace").strip()[-2000:])
        return self._end()

    def _timed_out(self) -> None:
        log.warning("the insights lane took over %g s; building insights.json in this process", TIMEOUT)
        return self._end()

    def _end(self) -> None:
        self._ended = True
        return None

    def _read_answer(self, written: bytes) -> Any:
        """What the helper wrote to that answer file, unpickled (the file is closed after); None if nothing.

        Unpickled from the file's pages mapped in, not from a copy read out first: the 26 MB
        answer for 100,000 reviews is copied once instead of twice.
        """
        fd = self._answer_fds.pop(written)
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
        while self._answer_fds:
            os.close(self._answer_fds.popitem()[1])


ANSWER_FD_OPTION = "--answer-fd"
BACK_FD_OPTION = "--back-fd"
REVIEWS_OPTION = "--reviews"
BACK_FROM_OPTION = "--back-from"
INSIGHTS_WRITTEN, BACK_WRITTEN = b"I", b"B"  # what the helper says on its stdout once it wrote that answer


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
    lane = InsightsLane.start(path, size, Path(data_dir) / REVIEWS_FILE)
    if lane is not None:
        _started_early[_key(path)] = lane


def discard_early() -> None:
    """Stop the lanes started early that no load took."""
    while _started_early:
        _started_early.popitem()[1].close()


atexit.register(discard_early)


# --------------------------------------------------------------------------- the helper's side


USAGE = (f"usage: insights_lane.py INSIGHTS [{REVIEWS_OPTION} REVIEWS {BACK_FROM_OPTION} OFFSET] "
         f"[{ANSWER_FD_OPTION} N [{BACK_FD_OPTION} M]]\n")


def main(argv: Sequence[str]) -> int:
    """`INSIGHTS [--reviews REVIEWS --back-from OFFSET] [--answer-fd N [--back-fd M]]`: build, write each answer.

    With --reviews, reviews.json's back first (dataset.build_reviews_back_of, its comma the
    first at or after OFFSET), written to descriptor M; then insights.json's answer, ("built",
    sha256, *EntryBuild) or ("not built", sha256, why), to descriptor N; each followed by
    its byte on stdout (BACK_WRITTEN, INSIGHTS_WRITTEN). Without descriptors both answers
    go to stdout, in that order, and nothing else.
    """
    import gc

    gc.disable()  # a short-lived process making millions of objects
    options = dict(zip(argv[1::2], argv[2::2]))
    if (len(argv) % 2 != 1 or len(options) != len(argv) // 2
            or not set(options) <= {REVIEWS_OPTION, BACK_FROM_OPTION, ANSWER_FD_OPTION, BACK_FD_OPTION}
            or not all(options.get(n, "0").isdigit() for n in (BACK_FROM_OPTION, ANSWER_FD_OPTION, BACK_FD_OPTION))
            or (REVIEWS_OPTION in options) != (BACK_FROM_OPTION in options)
            or (BACK_FD_OPTION in options) != (ANSWER_FD_OPTION in options and REVIEWS_OPTION in options)):
        sys.stderr.write(USAGE)
        return 2
    # Imported here: the server's side stays light.
    from dataset import build_insights_half, build_reviews_back_of, keep_freed_memory

    keep_freed_memory()  # the process ends with the build

    insights = Path(argv[0])
    if REVIEWS_OPTION in options:
        _write_answer(build_reviews_back_of(Path(options[REVIEWS_OPTION]), int(options[BACK_FROM_OPTION])),
                      options.get(BACK_FD_OPTION), BACK_WRITTEN)
    _write_answer(build_insights_half(insights), options.get(ANSWER_FD_OPTION), INSIGHTS_WRITTEN)
    return 0


def _write_answer(answer: Any, fd: str | None, written: bytes) -> None:
    """Pickle the answer to descriptor `fd`, then say `written` on stdout; to stdout without a descriptor."""
    with open(int(fd) if fd is not None else sys.stdout.fileno(), "wb", closefd=fd is not None) as out:
        out.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    if fd is not None:
        os.write(sys.stdout.fileno(), written)


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stderr.flush()
    # The answers are written; freeing the build's millions of objects one by one on the way
    # out would only take a core from the server for nothing.
    os._exit(status)
