"""One writer at a time in a data directory: the lock `import`, `analyze` and `sync` hold while they write.

Two imports at once each read the old reviews.json and each wrote their own merge: one was lost. The lock
is flock(2) on DIR/.reviewsd.lock, so it goes with the process (kill -9 included); the file names the
holder, so a refused command says who writes. Holding the lock, a command also removes the temporary files
an interrupted write left (`.reviews.json.XXXX.tmp`): no other writer can be making them."""

from __future__ import annotations

import datetime as dt
import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

LOCK_FILE = ".reviewsd.lock"
# The files commands write with authoring.files.write_atomically, whose temporaries are .NAME.XXXX.tmp.
WRITTEN_FILES = ("reviews.json", "insights.json", ".reviewsd-import.json", ".reviewsd-sync.json")


class LockedError(OSError):
    """Another command is writing the data directory; the message names it."""


def stale_temporaries(data_dir: Path) -> list[Path]:
    """Temporary files an interrupted write left in the data directory."""
    found = []
    for name in WRITTEN_FILES:
        found += sorted(Path(data_dir).glob(f".{name}.*.tmp"))
    return found


@contextmanager
def data_dir_lock(data_dir: Path, command: str) -> Iterator[list[Path]]:
    """Hold DIR's write lock (LockedError at once if another command holds it); yields the stale
    temporary files it removed."""
    path = Path(data_dir) / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another command"
            raise LockedError(
                f"{data_dir} is being written by {holder}; try again when it has finished"
            ) from None
        since = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"reviewsd {command} (pid {os.getpid()}, since {since})\n".encode(), 0)
        removed = []
        for temporary in stale_temporaries(data_dir):
            try:
                temporary.unlink()
                removed.append(temporary)
            except FileNotFoundError:
                pass
        try:
            yield removed
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing releases the lock
