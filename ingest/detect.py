"""Which export a file or parsed document is, from its content alone (pure; reads at most one file)."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path
from typing import Any

import orjson

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
    """ "csv" when the first line is a header with author, rating, date and text."""
    try:
        header = next(csv.reader(io.StringIO(text.split("\n", 1)[0])), [])
    except csv.Error:
        return None
    names = {name.strip().lower() for name in header}
    return CSV if {"author", "rating", "date", "text"} <= names else None


def takeout_review_files(path: Path) -> list[str]:
    """Names of the reviews*.json files inside a Takeout folder or .zip (where Business Profile puts them)."""
    if path.is_dir():
        return sorted(str(p) for p in path.rglob("reviews*.json"))
    with zipfile.ZipFile(path) as archive:
        return sorted(
            n for n in archive.namelist() if Path(n).name.startswith("reviews") and n.endswith(".json")
        )


def detect_export(path_or_doc: Any) -> str | None:
    """ "google", "google-takeout", "trustpilot", "csv" or None: the export this path or document looks like.

    `reviewsd check` can call it on a file it refuses, to say: this looks like ...; run `reviewsd import`."""
    if not isinstance(path_or_doc, (str, Path)):
        return detect_document(path_or_doc)
    path = Path(path_or_doc)
    try:
        if path.is_dir() or zipfile.is_zipfile(path):
            return GOOGLE_TAKEOUT if takeout_review_files(path) else None
        data = path.read_bytes()
    except (OSError, zipfile.BadZipFile):
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
