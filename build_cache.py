"""The last accepted build, kept in the state directory so that a restart on unchanged data skips it.

Building 100,000 reviews (parse, validate, encode, index, compress) takes seconds of CPU;
what it makes is about 110 MB of bytes: the Dataset's `Parts` plus the ETag and gzip
coding of /reviews.json and /insights.json. `BuildCache.load` stands in front of
`dataset_from_files`: when the file in the state directory was made from data files with
the same sha256, by the same code, schemas, Python and jsonschema, the Dataset is made
from it instead; otherwise the data are built as usual and the result is written on a
thread, replacing the file. The file is

    reviewsd build cache 1\\n
    {header as JSON}\\n
    every value's bytes, in the header's order

The header holds the key, each value's name and length, the ETags, and the sha256 of all
the bytes after it. A file that belongs to other data or code is simply replaced; one that
is cut short, longer than its header says or whose digest differs is ignored with a
warning, and the data are built from the data files. The digest catches damage, not an
attacker who can write to the state directory (who could as well change the hub's database).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import tempfile
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Mapping

import dataset
import payloads
import schema_compiler
from config import BUILD_CACHE_FILE
from dataset import SCHEMA_DIR, Dataset, Parts, Prepare, RawFile, dataset_from_files
from payloads import Precomputed

log = logging.getLogger("reviewsd.build_cache")

CACHE_FILE = BUILD_CACHE_FILE
MAGIC = b"reviewsd build cache 2\n"  # 2: the sha256 covers the header too
_MAX_HEADER = 1 << 20
STALE_WRITE = 600.0  # seconds after which a temporary file is a dead process's, not a write in progress
_GZIP = "gzip:"


def code_fingerprint() -> str:
    """sha256 of everything that shapes a build besides the data: code, schemas, Python, jsonschema."""
    digest = hashlib.sha256()
    for module in (dataset, payloads, schema_compiler, sys.modules[__name__]):
        digest.update(Path(str(module.__file__)).read_bytes())
    for schema in sorted(SCHEMA_DIR.glob("*.json")):
        digest.update(schema.name.encode() + b"\0" + schema.read_bytes())
    digest.update(f"{sys.version}\0{metadata.version('jsonschema')}".encode())
    return digest.hexdigest()


class BuildCache:
    """`load` for a DataStore: the data from the cache file when it matches, else a build that refills it."""

    def __init__(self, directory: Path | str, fingerprint: str | None = None):
        self.path = Path(directory) / CACHE_FILE
        self.fingerprint = fingerprint or code_fingerprint()
        self._write_lock = threading.Lock()
        # One write at a time, and at most one build waiting for it: each holds a whole build's bytes,
        # and only the newest matters (a slow or stuck state disk must not pile them up in memory).
        self._slot = threading.Lock()
        self._saver: threading.Thread | None = None
        self._waiting: tuple[str, Parts, Mapping[str, Any]] | None = None

    def key(self, reviews_sha256: str, insights_sha256: str) -> str:
        return hashlib.sha256(f"{MAGIC!r}\0{self.fingerprint}\0{reviews_sha256}\0{insights_sha256}".encode()).hexdigest()

    def load(self, reviews_raw: RawFile, insights_raw: RawFile, prepare: Prepare | None = None) -> Dataset:
        """A Dataset for these files, as `dataset_from_files` makes it (DataError when they are refused).

        `prepare` must be `Precomputed` (or None): the cache keeps what it computes.
        """
        started = time.perf_counter()

        def key() -> str:  # waits for the files' hashes, which a first start (no cache file) parses alongside
            return self.key(reviews_raw.sha256, insights_raw.sha256)

        found = self.read(key)
        if found is not None:
            parts, etags, compressed = found
            prepared = None if prepare is None else {
                name: Precomputed.finished(etag, compressed.get(name)) for name, etag in etags.items()}
            loaded = Dataset.from_parts(parts, reviews_raw.sha256, insights_raw.sha256, prepared)
            log.info("data taken from the build cache %s in %.2f s (data files, code and schemas unchanged)",
                     self.path, time.perf_counter() - started, extra={"event": "build_cache_used"})
            return loaded
        return dataset_from_files(reviews_raw, insights_raw, prepare,
                                  on_parts=lambda parts, prepared: self._save_later(key(), parts, prepared))

    def read(self, key: str | Callable[[], str]) -> tuple[Parts, dict[str, str], dict[str, bytes]] | None:
        """(parts, ETag by file, gzip coding by file) from the cache file, or None when it does not serve `key`.

        `key` may be a function, called only when there is a cache file to compare it with.
        """
        try:
            with open(self.path, "rb") as file:
                if file.readline(len(MAGIC)) != MAGIC:
                    raise ValueError("it is not a reviewsd build cache")
                header = json.loads(file.readline(_MAX_HEADER))
                if header.get("key") != (key if isinstance(key, str) else key()):
                    log.info("the build cache %s is for other data or code; building from the data files", self.path)
                    return None
                digest, named = _header_digest(header), {}
                for name, length in header["values"]:
                    named[name] = value = file.read(length)
                    if len(value) != length:
                        raise ValueError("it is cut short")
                    digest.update(value)
                if file.read(1):
                    raise ValueError("it is longer than its header says")
            if digest.hexdigest() != header["sha256"]:
                raise ValueError("its bytes do not match their sha256")
            compressed = {name[len(_GZIP):]: named.pop(name) for name in list(named) if name.startswith(_GZIP)}
            return Parts.unflatten(header["per_review_span"], named), dict(header["etags"]), compressed
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("the build cache %s is ignored (%s); building from the data files", self.path, exc,
                        extra={"event": "build_cache_ignored"})
            return None

    def wait_saved(self, timeout: float | None = None) -> bool:
        """Wait for the writes started or waiting so far; True when none is left."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._slot:
                saver = self._saver
            if saver is None:
                return True
            saver.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if saver.is_alive():
                return False

    def _save_later(self, key: str, parts: Parts, prepared: Mapping[str, Any]) -> None:
        # On a thread: the write waits for the gzip work and should not delay serving.
        with self._slot:
            self._waiting = (key, parts, prepared)  # replaces a build still waiting: only the newest is kept
            if self._saver is None:
                self._saver = threading.Thread(target=self._save_waiting, name="build-cache-save", daemon=True)
                self._saver.start()

    def _save_waiting(self) -> None:
        while True:
            with self._slot:
                job, self._waiting = self._waiting, None
                if job is None:
                    self._saver = None
                    return
            self._save(*job)

    def _save(self, key: str, parts: Parts, prepared: Mapping[str, Any]) -> None:
        try:
            self.write(key, parts, {name: value.result() for name, value in prepared.items()
                                    if isinstance(value, Precomputed)})
        except Exception as exc:  # a cache must never take the server down
            log.warning("the build cache %s could not be written: %s", self.path, exc,
                        extra={"event": "build_cache_unwritten"})

    def write(self, key: str, parts: Parts, precomputed: Mapping[str, tuple[str, bytes | None]]) -> None:
        """Replace the cache file atomically (a crash leaves the old file or the new one, never half of one)."""
        started = time.perf_counter()
        span, named = parts.flatten()
        values = [*named.items(), *((_GZIP + name, gz) for name, (_, gz) in precomputed.items() if gz is not None)]
        header = {"key": key, "per_review_span": span, "etags": {name: tag for name, (tag, _) in precomputed.items()},
                  "values": [[name, len(value)] for name, value in values]}
        digest = _header_digest(header)
        for _, value in values:
            digest.update(value)
        header["sha256"] = digest.hexdigest()
        with self._write_lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            for stale in self.path.parent.glob(CACHE_FILE + ".*.tmp"):
                # Left by a process killed mid-write; a recent one may be another server's write in progress.
                with contextlib.suppress(OSError):
                    if time.time() - stale.stat().st_mtime > STALE_WRITE:
                        stale.unlink()
            with tempfile.NamedTemporaryFile(dir=self.path.parent, prefix=CACHE_FILE + ".", suffix=".tmp",
                                             delete=False) as file:
                try:
                    file.write(MAGIC + json.dumps(header, separators=(",", ":")).encode() + b"\n")
                    for _, value in values:
                        file.write(value)
                    file.flush()
                    os.fsync(file.fileno())
                except BaseException:
                    os.unlink(file.name)
                    raise
            os.replace(file.name, self.path)
            _sync_directory(self.path.parent)
        size = sum(len(value) for _, value in values)
        log.info("build cache written: %s, %.0f MB in %.2f s", self.path, size / 1e6, time.perf_counter() - started,
                 extra={"event": "build_cache_written"})


def _header_digest(header: Mapping[str, Any]) -> Any:
    """A sha256 started with the header (all but its own sha256): ETags and lengths are checked too."""
    core = {name: value for name, value in header.items() if name != "sha256"}
    return hashlib.sha256(json.dumps(core, sort_keys=True, separators=(",", ":")).encode())


def _sync_directory(directory: Path) -> None:
    """Make a rename in `directory` durable (where the platform allows opening a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
