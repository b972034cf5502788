"""The data files as bytes and JSON: reading them (size checked first, regular files only), parsing them
(orjson, json's messages where it refuses), and the one JSON encoding of every body."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from .problems import INSIGHTS_FILE, REVIEWS_FILE, DataError, Problem

DATA_FILES = (REVIEWS_FILE, INSIGHTS_FILE)
# The largest data file read: about 5 times the reviews.json of 100,000 reviews (50 MB). Parsing
# takes several times a file's size in memory, so a runaway file is refused before it is read.
DEFAULT_MAX_FILE_BYTES = 256 << 20


@dataclass(frozen=True)
class RawFile:
    name: str
    content: bytes
    sha256: str


def read_file(data_dir: Path, name: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> RawFile:
    """The file's bytes, refused (rule `size`) when over `max_bytes` before anything is read."""
    path = Path(data_dir) / name
    try:
        # O_NONBLOCK: opening a FIFO waits for a writer, forever (the reload thread, then a SIGHUP's reload
        # on the main thread, which SIGTERM then waited behind). Only a regular file is read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as file:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise DataError([Problem(name, "$", "regular-file", f"{path} is {_file_kind(info.st_mode)}")])
            os.set_blocking(fd, True)
            size = info.st_size
            # Over the limit by its stat, nothing is read; a file that grew since is read one byte
            # past it, no further.
            content = b"" if size > max_bytes else file.read(max_bytes + 1)
    except OSError as exc:
        raise DataError(
            [Problem(name, "$", "readable", f"cannot read {path}: {exc.strerror or exc}")]
        ) from None
    size = max(size, len(content))
    if size > max_bytes:
        raise DataError(
            [
                Problem(
                    name,
                    "$",
                    "size",
                    f"{size:,} bytes is over the limit of {max_bytes:,} bytes (--max-data-file-bytes)",
                )
            ]
        )
    return RawFile(name, content, hashlib.sha256(content).hexdigest())


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
    kinds += ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((kind for test, kind in kinds if test(mode)), "a special file") + ", not a regular file"


def read_data_dir(
    data_dir: Path,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    derive_insights: Callable[[bytes], bytes | None] | None = None,
) -> tuple[RawFile, RawFile]:
    """Both files; without insights.json, `derive_insights(reviews.json's bytes)` stands in for it if given
    (and does not return None)."""
    reviews = read_file(data_dir, REVIEWS_FILE, max_bytes)
    try:
        return reviews, read_file(data_dir, INSIGHTS_FILE, max_bytes)
    except DataError:
        if derive_insights is None or os.path.lexists(Path(data_dir) / INSIGHTS_FILE):
            raise
        content = derive_insights(reviews.content)
        if content is None:
            raise
        return reviews, RawFile(INSIGHTS_FILE, content, hashlib.sha256(content).hexdigest())


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")  # json.loads accepts NaN and Infinity; JSON does not


def loads_data(text: str | bytes) -> Any:
    """JSON as it comes in (data files, MCP bodies); ValueError (or RecursionError) where it is not JSON."""
    return json.loads(text, parse_constant=_refuse_constant)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a parse, then back as it was.

    A parse makes a container per JSON object and array and no cycles, which the collector would walk again
    and again: the two files parse in 0.4 instead of 1.3 s at 100,000 reviews, 28 instead of 48 ms at 10,000.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_json(raw: RawFile) -> Any:
    """The parsed file, or DataError saying why it is not JSON.

    orjson parses the bytes, where json first makes a str of the file (four bytes a character once one emoji
    is in it): at 100,000 reviews a peak 100 MB lower, a reload's 2.4 instead of 2.8 times the steady state.
    json, stricter only about lone surrogates and nesting, says where what orjson refuses is not JSON. orjson
    reads an integer beyond 64 bits as the nearest float (RFC 8259, section 6); no count here nears one.
    """
    try:
        with collector_paused():
            return orjson.loads(raw.content)
    except orjson.JSONDecodeError:
        pass
    try:
        return loads_data(raw.content.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError([Problem(raw.name, "$", "utf-8", f"not UTF-8 at byte {exc.start}")]) from None
    except json.JSONDecodeError as exc:
        # json's messages end "starting at" where they name a place: the place completes them.
        reason = exc.msg if exc.msg.endswith(" at") else exc.msg + " at"
        where = f"line {exc.lineno} column {exc.colno}"
        raise DataError(
            [Problem(raw.name, "$", "json", f"not valid JSON ({reason} {where}); half-written?")]
        ) from None
    except (
        ValueError,
        RecursionError,
    ) as exc:  # NaN or Infinity, an integer of over 4,300 digits, deep nesting
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise DataError(
            [Problem(raw.name, "$", "json", f"not valid JSON for this server ({reason})")]
        ) from None


# Built once (json.dumps builds one per call). Bodies are trees (parsed JSON, documents built here), so the
# cycle check that costs a dict insert per container is skipped.
# allow_nan=False: a number too large for a float (1e400 reads as inf) must not go out as Infinity.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=False)


def encode_json(value: Any) -> bytes:
    """The one JSON encoding of every body: compact UTF-8."""
    return _ENCODER.encode(value).encode("utf-8")
