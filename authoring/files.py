"""Reading and atomically replacing the JSON files of a data directory."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson


def utc_timestamp(now: dt.datetime | None = None) -> str:
    """RFC 3339 in UTC, to the second, as the schemas' `generated_at` wants it."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return now.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_json(path: Path) -> Any:
    """A JSON file's value; OSError or orjson.JSONDecodeError (a ValueError) as raised."""
    return orjson.loads(Path(path).read_bytes())


def dumps(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one rename: a reader sees the old file or the new one, never half."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)  # mkstemp makes 0600; the service user must read it
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
