"""What every importer produces: a review in reviews.json's shape, its source key and its edit time."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import zoneinfo
from dataclasses import dataclass
from typing import Any

MAX_TEXT = 20_000
ULID_PATTERN = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_FRACTION = re.compile(r"(\.\d{6})\d+")  # Python parses at most microseconds; Google writes nanoseconds


class InputError(ValueError):
    """An export cannot be imported: the message names the file and the record."""


@dataclass(frozen=True)
class Imported:
    """One review read from an export, before merging."""

    review: dict[str, Any]  # reviews.json's shape, id included
    updated_at: str  # the source's last edit (RFC 3339 UTC), "" when it says none: newest wins


@dataclass(frozen=True)
class Skipped:
    """A record the import leaves out on purpose, and why."""

    reason: str


def review_id(source: str, source_key: str) -> str:
    """The reviewsd id of a source's review: a ULID-shaped hash: the same review, the same id."""
    number = int.from_bytes(hashlib.sha256(f"{source}\x1f{source_key}".encode()).digest()[:16], "big")
    return "".join(
        _CROCKFORD[(number >> shift) & 31] for shift in range(125, -1, -5)
    )  # 128 bits: first char 0-7


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
    """An RFC 3339 timestamp (Z or offset, any fraction) as an aware datetime; ValueError otherwise."""
    moment = dt.datetime.fromisoformat(_FRACTION.sub(r"\1", value.strip()).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return moment


def local_date(value: str, zone: zoneinfo.ZoneInfo) -> str:
    """The date (YYYY-MM-DD) a timestamp falls on in the business's time zone."""
    return parse_timestamp(value).astimezone(zone).date().isoformat()


def utc_text(value: str) -> str:
    return parse_timestamp(value).astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def clean_text(text: str | None) -> str | None:
    """Review text as stored: stripped, None when empty."""
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
) -> dict[str, Any]:
    """A review in reviews.json's shape; a reply dated before the review is dated the review's day."""
    reply = clean_text(reply)
    owner_reply = None
    if reply is not None:
        owner_reply = {"text": reply[:MAX_TEXT], "date": max(reply_date or date, date)}
    return {
        "id": rid,
        "author": author,
        "author_avatar_url": avatar if _is_http(avatar) else None,
        "rating": rating,
        "date": date,
        "text": text,
        "source": source,
        "source_url": source_url if _is_http(source_url) else None,
        "owner_reply": owner_reply,
        "verified": verified,
    }


def _is_http(url: str | None) -> bool:
    return bool(url) and re.match(r"^https?://\S+$", url) is not None
