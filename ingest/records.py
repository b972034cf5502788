"""What every importer produces: a review in reviews.json's shape, its source key and its edit time."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import zoneinfo
from dataclasses import dataclass
from typing import Any

import jsonschema_rs

MAX_TEXT = 20_000
ULID_PATTERN = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_FRACTION = re.compile(r"(\.\d{6})\d+")  # Python parses at most microseconds; Google writes nanoseconds


# Dates a review may carry: none before the web had reviews, none after tomorrow in the business's zone
# (a row dated 9999-12-31 made analyze build a million months; one dated 0001-01-01 a 2 MB home page).
EARLIEST_DATE = dt.date(1995, 1, 1)


class InputError(ValueError):
    """An export cannot be imported: the message names the file and the record."""


@dataclass(frozen=True)
class Imported:
    """One review read from an export, before merging."""

    review: dict[str, Any]  # reviews.json's shape, id included
    updated_at: str  # the source's last edit (RFC 3339 UTC), "" when it says none: newest wins
    where: str = ""  # the record in its file ("line 4", "reviews[2]"), for errors
    # Fields the export did not give (a CSV without a source or verified column): an existing review keeps
    # its own value for them, so importing a narrower file never rewrites what a wider one said.
    unknown: frozenset[str] = frozenset()
    # Ids this review had under earlier versions of reviewsd, taken over when one of them is in reviews.json.
    former_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A record the import leaves out on purpose, and why."""

    reason: str


def review_id(source: str, source_key: str) -> str:
    """The reviewsd id of a source's review: a ULID-shaped hash: the same review, the same id."""
    number = int.from_bytes(hashlib.sha256(f"{source}\x1f{source_key}".encode()).digest()[:16], "big")
    return "".join(_CROCKFORD[(number >> shift) & 31] for shift in range(125, -1, -5))  # 128 bits: 0-7 first


def display_author(name: str | None, style: str) -> str:
    """How an imported author is shown: "first-initial" (Jane D.), "first" (Jane) or "full"."""
    parts = (name or "").split()
    if not parts:
        return "Anonymous"
    if style == "full":
        shown = " ".join(parts)
    elif style == "first" or len(parts) == 1:
        shown = parts[0]
    else:
        shown = f"{parts[0]} {parts[-1][0].upper()}."
    return shown[:200]


def parse_timestamp(value: str) -> dt.datetime:
    """An RFC 3339 timestamp (Z or offset, any fraction) as an aware UTC datetime; ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a timestamp (a string like 2026-03-01T06:30:00Z)")
    try:
        moment = dt.datetime.fromisoformat(value.strip())  # 3.11 reads Z and nanoseconds (Google's) too
    except ValueError:
        try:
            moment = dt.datetime.fromisoformat(_FRACTION.sub(r"\1", value.strip()).replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value[:40]!r} is not an RFC 3339 timestamp") from None
    if moment.tzinfo is None:
        raise ValueError(f"{value[:40]!r} has no time zone")
    try:
        return moment.astimezone(dt.timezone.utc)
    except OverflowError:  # year 1 with a positive offset, year 9999 with a negative one
        raise ValueError(f"{value[:40]!r} is out of range") from None


def checked_date(day: dt.date, zone: zoneinfo.ZoneInfo, name: str = "date") -> str:
    """`day` as YYYY-MM-DD when it lies from 1995 to tomorrow in the business's time zone; else ValueError."""
    tomorrow = dt.datetime.now(zone).date() + dt.timedelta(days=1)
    if not EARLIEST_DATE <= day <= tomorrow:
        raise ValueError(
            f"{name} {day.isoformat()} is outside {EARLIEST_DATE.isoformat()} to {tomorrow.isoformat()}"
        )
    return day.isoformat()


def local_date(value: str, zone: zoneinfo.ZoneInfo, name: str = "date") -> str:
    """The date (YYYY-MM-DD) a timestamp falls on in the business's time zone, within the sane range."""
    moment = parse_timestamp(value)
    try:
        day = moment.astimezone(zone).date()
    except OverflowError:
        raise ValueError(f"{name} {value[:40]!r} is out of range") from None
    return checked_date(day, zone, name)


def utc_text(value: str) -> str:
    return parse_timestamp(value).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def folded(text: str | None) -> str:
    """Text as identity sees it: whitespace runs as one space, case folded."""
    return " ".join((text or "").split()).casefold()


def clean_text(text: str | None) -> str | None:
    """Review text as stored: stripped, None when empty."""
    if text is not None and not isinstance(text, str):
        raise ValueError(f"a {type(text).__name__} where text belongs")
    text = (text or "").strip()
    return text or None


def make_review(
    *,
    rid: str,
    author: str,
    rating: int,
    date: str,
    text: str | None,
    source: str,
    source_url: str | None = None,
    avatar: str | None = None,
    reply: str | None = None,
    reply_date: str | None = None,
    verified: bool = False,
    updated_at: str | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """A review in reviews.json's shape; a reply dated before the review is dated the review's day.

    An optional URL that cannot be served (not http(s), too long, not a URL) is dropped, with a line in
    `warnings`: one bad avatar never refuses a file."""
    reply = clean_text(reply)
    owner_reply = None
    if reply is not None:
        owner_reply = {"text": reply[:MAX_TEXT], "date": max(reply_date or date, date)}
    review = {
        "id": rid,
        "author": author,
        "author_avatar_url": usable_url(avatar, "author avatar URL", warnings),
        "rating": rating,
        "date": date,
        "text": text,
        "source": source,
        "source_url": usable_url(source_url, "source URL", warnings),
        "owner_reply": owner_reply,
        "verified": verified,
    }
    if updated_at is not None:  # only an edited review has it: a file of unedited ones stays as it was
        review["updated_at"] = updated_at
    return review


def edit_time(created: str, updated: str | None) -> str | None:
    """The time of the source's last edit (RFC 3339 UTC, to the second), when there was one after creation."""
    if not updated:
        return None
    moment = parse_timestamp(updated)
    if moment <= parse_timestamp(created):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


MAX_URL = 2048
# The rule review.schema.json gives the URL fields (format uri, http or https), checked as the server will.
_URL_RULE = jsonschema_rs.Draft202012Validator(
    {"type": "string", "format": "uri", "pattern": "^https?://[^\\s]+$", "maxLength": MAX_URL},
    validate_formats=True,
)


def usable_url(url: Any, name: str, warnings: list[str] | None) -> str | None:
    """`url` when reviews.json can hold it (http or https, no spaces, at most 2,048 characters), else None."""
    if url is None or url == "":
        return None
    if _URL_RULE.is_valid(url):
        return url
    if warnings is not None:
        warnings.append(
            f"{name} {str(url)[:60]!r} dropped (not an http(s) URL of at most {MAX_URL} characters)"
        )
    return None
