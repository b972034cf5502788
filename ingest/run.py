"""`reviewsd import`: read export files, merge them into DIR/reviews.json, write it atomically."""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..authoring.files import (
    dumps,
    read_json,
    utc_timestamp,
    write_atomically,
)
from ..authoring.profile import Profile
from ..authoring.schemas import schema_errors
from ..reviews.files import DEFAULT_MAX_FILE_BYTES
from ..reviews.problems import REVIEWS_FILE
from . import detect, formats
from .merge import MergeResult, aggregate_rating, merge
from .records import Imported, InputError, Skipped
from .sources import KNOWN, export_sources

STATE_FILE = ".reviewsd-import.json"  # review id -> its source's last edit time, so the newest edit wins
_BOMS = ((b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))  # Excel's "Unicode text" is UTF-16


@dataclass(frozen=True)
class ReadOptions:
    """How to read the files: --encoding and --date-format."""

    encoding: str | None = None
    date_format: str | None = None


def decode_text(name: str, data: bytes, encoding: str | None) -> str:
    """A text export's characters: UTF-8 (a BOM is dropped), UTF-16 with a BOM, or --encoding's."""
    if encoding is not None:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as error:
            raise InputError(f"{name}: not {encoding} text (byte {error.start})") from None
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError as error:
                raise InputError(f"{name}: not UTF-16 text (byte {error.start})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(
            f"{name}: neither JSON nor UTF-8 text (byte {error.start}); if it was saved in another "
            "encoding, name it with --encoding (e.g. --encoding cp1252 for Excel on Windows)"
        ) from None


def parse_source(
    name: str,
    data: bytes,
    profile: Profile,
    options: ReadOptions = ReadOptions(),
    warnings: list[str] | None = None,
) -> list[Imported | Skipped]:
    """Every record of one file, the format detected from its content; InputError naming file and record."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    if doc is not None:
        return parse_document(name, doc, profile, warnings)
    ctx = _context(name, profile, options)
    text = decode_text(name, data, options.encoding)
    first_line = text.split("\n", 1)[0]
    if detect.detect_csv(text) is None and not any(d in first_line for d in formats.CSV_DELIMITERS):
        raise InputError(f"{name}: not a known export; expected {KNOWN}")
    return _checked(name, list(formats.parse_csv(text, ctx)), ctx, warnings)


def parse_document(
    name: str,
    doc: Any,
    profile: Profile,
    warnings: list[str] | None = None,
    kind: str | None = None,
) -> list[Imported | Skipped]:
    """The records of a parsed JSON export, its format detected (or `kind`, "google" or "trustpilot", for
    what an API sent); InputError naming the source and the record."""
    ctx = _context(name, profile, ReadOptions())
    kind = kind or detect.detect_document(doc)
    if not isinstance(doc, dict):
        raise InputError(f"{name}: JSON, but not a reviews export; expected {KNOWN}")
    if kind == detect.GOOGLE:
        records = list(formats.parse_google(doc, ctx))
    elif kind == detect.TRUSTPILOT:
        records = list(formats.parse_trustpilot(doc, ctx))
    else:
        raise InputError(f"{name}: JSON, but not a reviews export; expected {KNOWN}")
    return _checked(name, records, ctx, warnings)


def _context(name: str, profile: Profile, options: ReadOptions) -> formats.Context:
    zone = zoneinfo.ZoneInfo(profile.time_zone)
    return formats.Context(name, zone, profile.author_display, options.date_format)


def _checked(
    name: str, records: list[Imported | Skipped], ctx: formats.Context, warnings: list[str] | None
) -> list[Imported | Skipped]:
    _refuse_conflicts(name, records)
    if warnings is not None:
        warnings += ctx.warnings
    return records


def _refuse_conflicts(name: str, records: list[Imported | Skipped]) -> None:
    """One file holding one review twice, with different content and no edit time to choose by, is
    refused: keeping either would lose the other without a word."""
    seen: dict[str, Imported] = {}
    for record in records:
        if isinstance(record, Skipped):
            continue
        rid = record.review["id"]
        other = seen.get(rid)
        if other is None or record.updated_at > other.updated_at:
            seen[rid] = record
        if other is not None and other.updated_at == record.updated_at and other.review != record.review:
            raise InputError(
                f"{name}: {record.where}: the same review as {other.where} (same source id, or same "
                "author, date and text) with different content; remove the wrong one, or add an "
                "`updated` column that says which is newer"
            )


def read_records(
    paths: list[Path],
    profile: Profile,
    options: ReadOptions = ReadOptions(),
    warnings: list[str] | None = None,
) -> list[Imported | Skipped]:
    records: list[Imported | Skipped] = []
    for path in paths:
        for name, data in export_sources(Path(path)):
            records += parse_source(name, data, profile, options, warnings)
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


def import_files(
    data_dir: Path,
    paths: list[Path],
    profile: Profile,
    options: ReadOptions = ReadOptions(),
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> MergeResult:
    """Merge the exports into DIR/reviews.json and write it; nothing is written if any input is bad, or
    if the file would be over the server's size limit (`max_bytes`)."""
    warnings: list[str] = []
    records = read_records(paths, profile, options, warnings)
    return merge_records(Path(data_dir), records, profile, warnings, max_bytes)


def merge_records(
    data_dir: Path,
    records: list[Imported | Skipped],
    profile: Profile,
    warnings: list[str] | None = None,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> MergeResult:
    """Merge records (from files, or from `reviewsd sync`) into DIR/reviews.json and write it atomically."""
    doc, state = _existing(data_dir)
    business = profile.business_block((doc or {}).get("business"))
    if business is None:
        raise InputError(
            f"{data_dir}: business.toml has no [business] and there is no reviews.json to keep "
            "one from; write one with `reviewsd init --preset NAME`"
        )
    result = merge((doc or {}).get("reviews", []), state, records)
    result.warnings = list(warnings or [])
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
    result.business_changed = doc is not None and doc.get("business") != business
    if doc is None or any(
        doc.get(key) != new_doc[key] for key in ("business", "aggregate_rating", "reviews")
    ):
        encoded = dumps(new_doc)
        if len(encoded) > max_bytes:
            raise InputError(
                f"{data_dir / REVIEWS_FILE}: would be {len(encoded):,} bytes, over the server's limit of "
                f"{max_bytes:,} (--max-data-file-bytes); split the business, or raise the limit"
            )
        write_atomically(data_dir / REVIEWS_FILE, encoded)
    write_atomically(data_dir / STATE_FILE, dumps(result.updated_at))
    return result
