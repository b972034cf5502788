"""One parser per export format: a parsed document (or CSV text) in, Imported and Skipped records out."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import zoneinfo
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from .records import (
    MAX_TEXT,
    ULID_PATTERN,
    Imported,
    InputError,
    Skipped,
    clean_text,
    display_author,
    local_date,
    make_review,
    review_id,
    utc_text,
)

GOOGLE_STARS = {"ONE": 1, "TWO": 2, "THREE": 3, "FOUR": 4, "FIVE": 5}
CSV_REQUIRED = ("author", "rating", "date", "text")
CSV_OPTIONAL = ("id", "source", "source_url", "reply", "reply_date", "verified")
CSV_DEFAULT_SOURCE = "other"
_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0", ""}
_SOURCE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ORIGINAL = "(Original)"
_TRANSLATED = "(Translated by Google)"


@dataclass(frozen=True)
class Context:
    """What a parser needs from the profile, and the name to quote in errors."""

    file: str
    zone: zoneinfo.ZoneInfo
    author_style: str


def _fail(ctx: Context, record: str, message: str) -> InputError:
    return InputError(f"{ctx.file}: {record}: {message}")


def original_text(comment: str | None) -> str | None:
    """A Google comment without Google's translation: "(Translated by Google) X (Original) Y" keeps Y."""
    if comment is None:
        return None
    if _ORIGINAL in comment:
        return clean_text(comment.split(_ORIGINAL, 1)[1])
    if _TRANSLATED in comment:
        return clean_text(comment.split(_TRANSLATED, 1)[0])
    return clean_text(comment)


def _too_long(text: str | None) -> bool:
    return text is not None and len(text) > MAX_TEXT


def parse_google(doc: Mapping[str, Any], ctx: Context) -> Iterator[Imported | Skipped]:
    """Google Business Profile: an API reviews.list response or a Takeout reviews.json (same review shape)."""
    for index, item in enumerate(doc.get("reviews") or []):
        where = f"reviews[{index}]"
        try:
            yield _google_review(item, ctx)
        except (KeyError, TypeError, ValueError) as error:
            raise _fail(ctx, where, f"not a Google review ({type(error).__name__}: {error})") from None


def _google_review(item: Mapping[str, Any], ctx: Context) -> Imported | Skipped:
    stars = item["starRating"]
    if stars not in GOOGLE_STARS:
        return Skipped(str(stars))  # STAR_RATING_UNSPECIFIED: no rating, nothing to publish
    key = item.get("reviewId") or item["name"].rsplit("/", 1)[-1]
    text = original_text(item.get("comment"))
    if _too_long(text):
        return Skipped("text over 20,000 characters")
    reviewer = item.get("reviewer") or {}
    name = None if reviewer.get("isAnonymous") else reviewer.get("displayName")
    reply = item.get("reviewReply") or {}
    reply_time = reply.get("updateTime") or reply.get("createTime")
    review = make_review(
        rid=review_id("google", key),
        author=display_author(name, ctx.author_style),
        rating=GOOGLE_STARS[stars],
        date=local_date(item["createTime"], ctx.zone),
        text=text,
        source="google",
        avatar=reviewer.get("profilePhotoUrl"),
        reply=original_text(reply.get("comment")),
        reply_date=local_date(reply_time, ctx.zone) if reply_time else None,
    )
    return Imported(review, utc_text(item.get("updateTime") or item["createTime"]))


def parse_trustpilot(doc: Mapping[str, Any], ctx: Context) -> Iterator[Imported | Skipped]:
    """Trustpilot's business-unit reviews JSON: stars, title and text, companyReply."""
    for index, item in enumerate(doc.get("reviews") or []):
        try:
            yield _trustpilot_review(item, ctx)
        except (KeyError, TypeError, ValueError) as error:
            raise _fail(
                ctx, f"reviews[{index}]", f"not a Trustpilot review ({type(error).__name__}: {error})"
            ) from None


def _title_and_text(title: str | None, text: str | None) -> str | None:
    """Trustpilot's title and text as one text; a title that only repeats the text's start is dropped."""
    title, text = clean_text(title), clean_text(text)
    if title and text and text.startswith(title.rstrip(".… ")):
        return text
    return clean_text("\n\n".join(part for part in (title, text) if part))


def _trustpilot_review(item: Mapping[str, Any], ctx: Context) -> Imported | Skipped:
    stars = item["stars"]
    if not isinstance(stars, int) or not 1 <= stars <= 5:
        raise ValueError(f"stars {stars!r} is not 1 to 5")
    text = _title_and_text(item.get("title"), item.get("text"))
    if _too_long(text):
        return Skipped("text over 20,000 characters")
    reply = item.get("companyReply") or {}
    reply_time = reply.get("updatedAt") or reply.get("createdAt")
    verified = item.get("isVerified")
    if verified is None:
        verified = item.get("reviewVerificationLevel") == "verified"
    key = str(item["id"])
    review = make_review(
        rid=review_id("trustpilot", key),
        author=display_author((item.get("consumer") or {}).get("displayName"), ctx.author_style),
        rating=stars,
        date=local_date(item["createdAt"], ctx.zone),
        text=text,
        source="trustpilot",
        source_url=f"https://www.trustpilot.com/reviews/{key}",
        reply=reply.get("text"),
        reply_date=local_date(reply_time, ctx.zone) if reply_time else None,
        verified=bool(verified),
    )
    return Imported(review, utc_text(item.get("updatedAt") or item["createdAt"]))


def parse_csv(text: str, ctx: Context) -> Iterator[Imported | Skipped]:
    """CSV with a header row: author, rating, date, text required; id, source, source_url, reply, reply_date,
    verified optional."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [name.strip().lower() for name in next(reader, [])]
    missing = [name for name in CSV_REQUIRED if name not in header]
    if missing:
        raise _fail(ctx, "line 1", f"the header lacks {', '.join(missing)} (needs {', '.join(CSV_REQUIRED)})")
    unknown = [name for name in header if name not in CSV_REQUIRED + CSV_OPTIONAL]
    if unknown:
        raise _fail(
            ctx, "line 1", f"unknown column {unknown[0]!r} (known: {', '.join(CSV_REQUIRED + CSV_OPTIONAL)})"
        )
    for row in reader:
        where = f"line {reader.line_num}"
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise _fail(ctx, where, f"{len(row)} fields, the header has {len(header)}")
        try:
            yield _csv_review(dict(zip(header, row)), ctx)
        except ValueError as error:
            raise _fail(ctx, where, str(error)) from None


def _csv_date(value: str, name: str, ctx: Context) -> str:
    value = value.strip()
    if _DATE.match(value):
        try:
            return dt.date.fromisoformat(value).isoformat()  # a real calendar date
        except ValueError:
            raise ValueError(f"{name} {value!r} is not a date on the calendar") from None
    try:
        return local_date(value, ctx.zone)
    except ValueError:
        raise ValueError(f"{name} {value!r} is not a date (YYYY-MM-DD) or an RFC 3339 timestamp") from None


def _csv_rating(value: str) -> int:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number.is_integer() or not 1 <= number <= 5:
        raise ValueError(f"rating {value!r} is not a whole number from 1 to 5")
    return int(number)


def _csv_verified(value: str) -> bool:
    folded = value.strip().lower()
    if folded not in _TRUE | _FALSE:
        raise ValueError(f"verified {value!r} is not true or false")
    return folded in _TRUE


def _csv_review(row: Mapping[str, str], ctx: Context) -> Imported | Skipped:
    author = row["author"].strip()
    if not author:
        raise ValueError("author is empty")
    date = _csv_date(row["date"], "date", ctx)
    text = clean_text(row["text"])
    if _too_long(text):
        return Skipped("text over 20,000 characters")
    source = (row.get("source") or "").strip() or CSV_DEFAULT_SOURCE
    if not _SOURCE.match(source):
        raise ValueError(f"source {source!r} is not lower-case letters, digits, _ or - (e.g. yelp)")
    given_id = (row.get("id") or "").strip()
    if ULID_PATTERN.match(given_id):
        rid = given_id  # already a reviewsd id: kept, so a CSV written from reviews.json round-trips
    else:
        rid = review_id(source, given_id or f"{author}\x1f{date}")
    reply_date = (row.get("reply_date") or "").strip()
    review = make_review(
        rid=rid,
        author=display_author(author, ctx.author_style),
        rating=_csv_rating(row["rating"]),
        date=date,
        text=text,
        source=source,
        source_url=(row.get("source_url") or "").strip() or None,
        reply=row.get("reply"),
        reply_date=_csv_date(reply_date, "reply_date", ctx) if reply_date else None,
        verified=_csv_verified(row.get("verified") or ""),
    )
    return Imported(review, "")
