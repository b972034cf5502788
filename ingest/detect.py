"""Which export a file or parsed document is, from its content alone (pure; reads at most one file)."""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path
from typing import Any

import orjson

from .formats import CSV_REQUIRED, csv_columns, sniff_delimiter
from .sources import folder_review_files, is_review_member, open_regular, read_capped

GOOGLE, TRUSTPILOT, CSV, GOOGLE_TAKEOUT = "google", "trustpilot", "csv", "google-takeout"
DESCRIPTIONS = {
    GOOGLE: "a Google Business Profile reviews export",
    TRUSTPILOT: "a Trustpilot reviews export",
    CSV: "a CSV of reviews",
    GOOGLE_TAKEOUT: "a Google Takeout export",
}


def _first_review(doc: Any) -> dict | None:
    if isinstance(doc, dict) and isinstance(doc.get("reviews"), list) and doc["reviews"]:
        first = doc["reviews"][0]
        return first if isinstance(first, dict) else None
    return None


def detect_document(doc: Any) -> str | None:
    """ "google", "trustpilot" or None for a parsed JSON document. An export with an empty "reviews"
    list counts as Google's (a Takeout location without reviews): it imports nothing either way."""
    first = _first_review(doc)
    if first is None:
        return GOOGLE if isinstance(doc, dict) and doc.get("reviews") == [] else None
    if "starRating" in first:
        return GOOGLE
    if "stars" in first and ("consumer" in first or "createdAt" in first):
        return TRUSTPILOT
    return None


def detect_csv(text: str) -> str | None:
    """ "csv" when the first line is a header (comma, semicolon or tab) naming author, rating, date and
    text, or their synonyms."""
    first_line = text.split("\n", 1)[0].rstrip("\r")
    try:
        header = next(csv.reader([first_line], delimiter=sniff_delimiter(first_line)), [])
    except csv.Error:
        return None
    return CSV if set(CSV_REQUIRED) <= set(csv_columns(header).values()) else None


def takeout_review_files(path: Path) -> list[str]:
    """Names of the reviews*.json files inside a Takeout folder or .zip (where Business Profile puts them)."""
    if path.is_dir():
        return [str(p) for p in folder_review_files(path)]
    stream, _ = open_regular(path)
    with stream, zipfile.ZipFile(stream) as archive:
        return sorted(n for n in archive.namelist() if is_review_member(n))


def detect_export(path_or_doc: Any) -> str | None:
    """ "google", "google-takeout", "trustpilot", "csv" or None: the export this path or document looks like.

    `reviewsd check` can call it on a file it refuses, to say: this looks like ...; run `reviewsd import`."""
    if not isinstance(path_or_doc, (str, Path)):
        return detect_document(path_or_doc)
    path = Path(path_or_doc)
    try:
        if path.is_dir():
            return GOOGLE_TAKEOUT if takeout_review_files(path) else None
        stream, size = open_regular(path)
        with stream:
            if zipfile.is_zipfile(stream):
                return GOOGLE_TAKEOUT if takeout_review_files(path) else None
            stream.seek(0)
            data = read_capped(stream, str(path))
    except (OSError, ValueError, zipfile.BadZipFile):  # InputError is a ValueError
        return None
    try:
        return detect_document(orjson.loads(data))
    except orjson.JSONDecodeError:
        pass
    try:
        return detect_csv(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return None


def import_hint(path: Path) -> str | None:
    """The line `check` prints for a file that looks like an export, or None."""
    kind = detect_export(path)
    return None if kind is None else f"this looks like {DESCRIPTIONS[kind]}; run `reviewsd import {path}`"
