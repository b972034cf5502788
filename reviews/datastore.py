"""The reloading store: the current snapshot of the data directory, swapped atomically when the files change
(polling and SIGHUP), and its load log lines."""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Generic, NamedTuple, TypeVar

from .dataset import Dataset, dataset_from_files
from .files import DATA_FILES, DEFAULT_MAX_FILE_BYTES, read_data_dir
from .problems import DataError

log = logging.getLogger("reviewsd.data")

S = TypeVar("S")


class FileStamp(NamedTuple):
    """What a cheap stat says about one data file (size -1: missing)."""

    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int


def file_stamp(data_dir: Path) -> list[FileStamp]:
    """The data files' stamps; a change means "read them again"."""
    stats = []
    for name in DATA_FILES:
        try:
            st = os.stat(data_dir / name)
            stats.append(FileStamp(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            stats.append(FileStamp(0, -1, 0, 0))
    return stats


class DataStore(Generic[S]):
    """The current snapshot of the data, swapped atomically on reload.

    `build(dataset)` makes what the app serves. Readers take `store.current` once per request and use
    only that object, so a swap never mixes two versions. Listeners are called as `listener(old, new)`
    after each swap, on the thread that reloaded; they must not block for long.
    """

    def __init__(
        self,
        data_dir: Path | str,
        build: Callable[[Dataset], S],
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
        first_build: Callable[[Dataset], S] | None = None,
        derive_insights: Callable[[bytes], bytes | None] | None = None,
    ):
        """Load the files now (DataError if refused); `first_build`, if given, builds the first snapshot
        instead of `build` (the server defers the first snapshot's compression until it serves)."""
        self.data_dir = Path(data_dir)
        self.max_bytes = max_bytes
        self._build = build
        self._derive_insights = derive_insights  # for a directory without insights.json (read_data_dir)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[S, S], None]] = []
        self._stamp = file_stamp(self.data_dir)
        self._hashes: tuple[str, str] | None = None
        self.current: S = self._load(first_build or build)  # not None: nothing is served yet
        self.loaded_at = datetime.now(timezone.utc)
        self.last_error: DataError | None = None
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()

    def _load(self, build: Callable[[Dataset], S]) -> S | None:
        """The snapshot of the files the last stamp describes, their sizes logged; None if that snapshot
        is served already."""
        sizes = []
        for name, stamp in zip(DATA_FILES, self._stamp):
            sizes.append(f"{name} ({stamp.size / 1e6:.1f} MB)" if stamp.size >= 0 else f"{name} (missing)")
        log.info("loading %s from %s", " and ".join(sizes), self.data_dir, extra={"event": "load_started"})
        raws = list(read_data_dir(self.data_dir, self.max_bytes, self._derive_insights))
        hashes = (raws[0].sha256, raws[1].sha256)
        if hashes == self._hashes:
            return None
        started = time.monotonic()
        # Taken out of `raws`: the load frees them as it goes.
        dataset = dataset_from_files(raws.pop(0), raws.pop(0))
        took = time.monotonic() - started
        log.info(
            "loaded %d reviews in %.2f s",
            len(dataset.reviews),
            took,
            extra={"event": "load_done", "reviews": len(dataset.reviews), "seconds": round(took, 3)},
        )
        snapshot = build(dataset)
        self._hashes = hashes
        return snapshot

    def subscribe(self, listener: Callable[[S, S], None]) -> None:
        self._listeners.append(listener)

    def reload(self, force: bool = False) -> bool:
        """Load the files again if they changed; True when a new snapshot is served.

        Refused files (unreadable, not JSON, invalid) are logged, and the previous snapshot stays. Without
        `force`, files whose stat has not changed since the last attempt are not read again.
        """
        with self._lock:
            stamp = file_stamp(self.data_dir)
            if stamp == self._stamp and not force:
                return False
            self._stamp = stamp
            try:
                new = self._load(self._build)
            except DataError as exc:
                self.last_error = exc
                log.error(
                    "reload refused, still serving the previous data: %s",
                    exc,
                    extra={"event": "reload_refused", "problems": [str(p) for p in exc.problems[:20]]},
                )
                return False
            self.last_error = None
            if new is None:  # the files are back to what is served: nothing is refused now
                log.info("the data files hold what is served already")
                return False
            old, self.current = self.current, new
            self.loaded_at = datetime.now(timezone.utc)
            log.info(
                "data reloaded: reviews.json sha256 %s…, insights.json sha256 %s…",
                self._hashes[0][:12],
                self._hashes[1][:12],
                extra={"event": "reloaded"},
            )
        for listener in list(self._listeners):
            try:
                listener(old, new)
            except Exception:
                log.exception("reload listener %r failed", listener)
        return True

    def start_polling(self, interval: float) -> None:
        """Check the files every `interval` seconds on a daemon thread."""
        if interval <= 0 or self._poller is not None:
            return
        self._stop.clear()
        self._poller = threading.Thread(target=self._poll, args=(interval,), name="data-poller", daemon=True)
        self._poller.start()

    def stop_polling(self) -> None:
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
            self._poller = None

    def _poll(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.reload()
            except Exception:
                log.exception("data poll failed")
