"""`reviewsd import`: read export files, merge them into DIR/reviews.json, write it atomically."""

from __future__ import annotations

import zipfile
import zoneinfo
from pathlib import Path
from typing import Any, Iterator

import orjson

from ..authoring.files import (
    dumps,
    read_json,
    utc_timestamp,
    write_atomically,
)
from ..authoring.profile import Profile
from ..authoring.schemas import schema_errors
from ..reviews.problems import REVIEWS_FILE
from . import detect, formats
from .merge import MergeResult, aggregate_rating, merge
from .records import Imported, InputError, Skipped

STATE_FILE = ".reviewsd-import.json"  # review id -> its source's last edit time, so the newest edit wins
KNOWN = (
    "a Google Business Profile or Trustpilot reviews JSON, a Takeout folder or .zip, or a CSV "
    "with author,rating,date,text"
)


def _sources(path: Path) -> Iterator[tuple[str, bytes]]:
    """(name for errors, content) of each file an argument stands for: itself, or a Takeout's."""
    if path.is_dir():
        names = detect.takeout_review_files(path)
        if not names:
            raise InputError(f"{path}: no reviews*.json in this folder; expected {KNOWN}")
        for name in names:
            yield name, Path(name).read_bytes()
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = detect.takeout_review_files(path)
            if not names:
                raise InputError(f"{path}: no reviews*.json in this archive; expected {KNOWN}")
            for name in names:
                yield f"{path}!{name}", archive.read(name)
    else:
        yield str(path), path.read_bytes()


def parse_source(name: str, data: bytes, profile: Profile) -> list[Imported | Skipped]:
    """Every record of one file, the format detected from its content; InputError naming file and record."""
    ctx = formats.Context(name, zoneinfo.ZoneInfo(profile.time_zone), profile.author_display)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    if doc is not None:
        kind = detect.detect_document(doc)
        if kind == detect.GOOGLE:
            return list(formats.parse_google(doc, ctx))
        if kind == detect.TRUSTPILOT:
            return list(formats.parse_trustpilot(doc, ctx))
        raise InputError(f"{name}: JSON, but not a reviews export; expected {KNOWN}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{name}: neither JSON nor UTF-8 text (byte {error.start})") from None
    if detect.detect_csv(text) is None and "," not in text.split("\n", 1)[0]:
        raise InputError(f"{name}: not a known export; expected {KNOWN}")
    return list(formats.parse_csv(text, ctx))


def read_records(paths: list[Path], profile: Profile) -> list[Imported | Skipped]:
    records: list[Imported | Skipped] = []
    for path in paths:
        try:
            for name, data in _sources(Path(path)):
                records += parse_source(name, data, profile)
        except (OSError, zipfile.BadZipFile) as error:
            raise InputError(f"{path}: cannot be read: {error}") from None
    return records


def _existing(data_dir: Path) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The current reviews.json (or None) and the remembered edit times."""
    doc = state = None
    try:
        doc = read_json(data_dir / REVIEWS_FILE)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as error:
        raise InputError(f"{data_dir / REVIEWS_FILE}: cannot be read: {error}") from None
    try:
        state = read_json(data_dir / STATE_FILE)
    except (OSError, ValueError):
        state = {}  # lost or damaged: imports still work; an older export may then win one tie
    return doc, state if isinstance(state, dict) else {}


def import_files(data_dir: Path, paths: list[Path], profile: Profile) -> MergeResult:
    """Merge the exports into DIR/reviews.json and write it; nothing is written if any input is bad."""
    data_dir = Path(data_dir)
    records = read_records(paths, profile)
    doc, state = _existing(data_dir)
    business = profile.business_block((doc or {}).get("business"))
    if business is None:
        raise InputError(
            f"{data_dir}: business.toml has no [business] and there is no reviews.json to keep "
            "one from; write one with `reviewsd init --preset NAME`"
        )
    result = merge((doc or {}).get("reviews", []), state, records)
    new_doc = {
        "business": business,
        "aggregate_rating": aggregate_rating(result.reviews),
        "generated_at": utc_timestamp(),
        "reviews": result.reviews,
    }
    problems = schema_errors("reviews.schema.json", new_doc)
    if problems:
        raise InputError(
            f"{data_dir / REVIEWS_FILE}: the merged file would be invalid: " + "; ".join(problems)
        )
    if doc is None or any(
        doc.get(key) != new_doc[key] for key in ("business", "aggregate_rating", "reviews")
    ):
        write_atomically(data_dir / REVIEWS_FILE, dumps(new_doc))
    write_atomically(data_dir / STATE_FILE, dumps(result.updated_at))
    return result
