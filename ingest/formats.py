"""One parser per export format: a parsed document (or CSV text) in, Imported and Skipped records out."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import zoneinfo
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping
from urllib.parse import quote

from .records import (
    MAX_TEXT,
    ULID_PATTERN,
    Imported,
    InputError,
    Skipped,
    checked_date,
    clean_text,
    display_author,
    edit_time,
    folded,
    local_date,
    make_review,
    review_id,
    utc_text,
)

GOOGLE_STARS = {"ONE": 1, "TWO": 2, "THREE": 3, "FOUR": 4, "FIVE": 5}
CSV_REQUIRED = ("author", "rating", "date", "text")
CSV_OPTIONAL = ("id", "source", "source_url", "reply", "reply_date", "verified", "updated", "title")
# The names spreadsheets and the platforms' exports give the columns (matched after _header_key).
CSV_SYNONYMS = {
    synonym: canonical
    for canonical, synonyms in {
        "author": (
            "author",
            "name",
            "reviewer",
            "reviewer name",
            "user",
            "user name",
            "customer",
            "customer name",
            "display name",
            "consumer name",
        ),
        "rating": ("rating", "stars", "star rating", "score", "review stars", "review rating"),
        "date": (
            "date",
            "created",
            "created at",
            "review date",
            "date created",
            "published",
            "published at",
            "review created",
            "time",
        ),
        "text": (
            "text",
            "review",
            "review text",
            "comment",
            "comments",
            "body",
            "content",
            "review content",
            "review body",
        ),
        "id": ("id", "review id"),
        "source": ("source", "platform", "site"),
        "source_url": ("source url", "url", "link", "review url", "review link"),
        "reply": (
            "reply",
            "owner reply",
            "response",
            "owner response",
            "business response",
            "reply text",
            "reply content",
            "company reply",
            "company reply content",
        ),
        "reply_date": ("reply date", "response date", "replied at", "reply created", "company reply date"),
        "verified": ("verified", "is verified"),
        "updated": ("updated", "updated at", "edited", "modified", "review updated"),
        "title": ("title", "review title", "headline", "subject"),
    }.items()
    for synonym in synonyms
}
CSV_DELIMITERS = (",", ";", "\t")
_RATING = re.compile("[1-5]")
CSV_DEFAULT_SOURCE = "other"
# Columns only Trustpilot's own CSV export has: its rows' source is trustpilot, and its review ids are
# the ones Trustpilot's JSON carries, so both exports of a review are one review.
TRUSTPILOT_CSV_COLUMNS = {"business unit id", "review consumer user id", "webshop name"}
_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0", ""}
_SOURCE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ORIGINAL = "(Original)"
_TRANSLATED = "(Translated by Google)"


@dataclass(frozen=True)
class Context:
    """What a parser needs from the profile and the command line, and the name to quote in errors."""

    file: str
    zone: zoneinfo.ZoneInfo
    author_style: str
    date_format: str | None = None  # --date-format, for CSV dates such as 03/09/2024
    warnings: list[str] = field(default_factory=list)  # what was dropped, one line each

    def warn(self, where: str, lines: list[str]) -> None:
        self.warnings.extend(f"{self.file}: {where}: {line}" for line in lines)


def _fail(ctx: Context, record: str, message: str) -> InputError:
    return InputError(f"{ctx.file}: {record}: {message}")


_KINDS = {str: "a string", dict: "an object", bool: "true or false", int: "an integer", list: "a list"}


def _kind(value: Any) -> str:
    return "null" if value is None else _KINDS.get(type(value), f"a {type(value).__name__}")


def _get(item: Mapping[str, Any], key: str, kind: type, required: bool = False) -> Any:
    """item[key] when it is of `kind` (None when absent or null and not required); ValueError otherwise."""
    value = item.get(key)
    if value is None:
        if required:
            raise ValueError(f"{key} is missing")
        return None
    if type(value) is not kind:  # bool is an int to isinstance; not here
        raise ValueError(f"{key} is {_kind(value)}, not {_KINDS[kind]}")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where} is {_kind(value)}, not an object")
    return value


def _reviews_list(doc: Mapping[str, Any], ctx: Context) -> list:
    reviews = doc.get("reviews")
    if reviews is None:
        return []
    if not isinstance(reviews, list):
        raise _fail(ctx, "reviews", f"is {_kind(reviews)}, not a list")
    return reviews


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
    for index, item in enumerate(_reviews_list(doc, ctx)):
        where = f"reviews[{index}]"
        warnings: list[str] = []
        try:
            record = _google_review(_object(item, "the review"), ctx, where, warnings)
        except ValueError as error:
            raise _fail(ctx, where, f"not a Google review: {error}") from None
        ctx.warn(where, warnings)
        yield record


def _google_review(
    item: Mapping[str, Any], ctx: Context, where: str, warnings: list[str]
) -> Imported | Skipped:
    stars = _get(item, "starRating", str, required=True)
    if stars not in GOOGLE_STARS:
        if stars == "STAR_RATING_UNSPECIFIED":
            return Skipped(stars)  # no rating, nothing to publish
        raise ValueError(f"starRating {stars[:40]!r} is not ONE to FIVE")
    key = _get(item, "reviewId", str) or _get(item, "name", str, required=True).rsplit("/", 1)[-1]
    if not key:
        raise ValueError("reviewId is empty")
    text = original_text(_get(item, "comment", str))
    if _too_long(text):
        return Skipped("text over 20,000 characters")
    reviewer = _object(item.get("reviewer") or {}, "reviewer")
    name = None if _get(reviewer, "isAnonymous", bool) else _get(reviewer, "displayName", str)
    reply = _object(item.get("reviewReply") or {}, "reviewReply")
    reply_time = _get(reply, "updateTime", str) or _get(reply, "createTime", str)
    created = _get(item, "createTime", str, required=True)
    updated = _get(item, "updateTime", str)
    review = make_review(
        rid=review_id("google", key),
        author=display_author(name, ctx.author_style),
        rating=GOOGLE_STARS[stars],
        date=local_date(created, ctx.zone, "createTime"),
        text=text,
        source="google",
        avatar=reviewer.get("profilePhotoUrl"),
        reply=original_text(_get(reply, "comment", str)),
        reply_date=local_date(reply_time, ctx.zone, "reviewReply.updateTime") if reply_time else None,
        updated_at=edit_time(created, updated),
        warnings=warnings,
    )
    return Imported(review, utc_text(updated or created), where)


def parse_trustpilot(doc: Mapping[str, Any], ctx: Context) -> Iterator[Imported | Skipped]:
    """Trustpilot's business-unit reviews JSON: stars, title and text, companyReply."""
    for index, item in enumerate(_reviews_list(doc, ctx)):
        where = f"reviews[{index}]"
        warnings: list[str] = []
        try:
            record = _trustpilot_review(_object(item, "the review"), ctx, where, warnings)
        except ValueError as error:
            raise _fail(ctx, where, f"not a Trustpilot review: {error}") from None
        ctx.warn(where, warnings)
        yield record


def _title_and_text(title: str | None, text: str | None) -> str | None:
    """Trustpilot's title and text as one text; a title that only repeats the text's start is dropped."""
    title, text = clean_text(title), clean_text(text)
    if title and text and text.startswith(title.rstrip(".… ")):
        return text
    return clean_text("\n\n".join(part for part in (title, text) if part))


def _trustpilot_review(
    item: Mapping[str, Any], ctx: Context, where: str, warnings: list[str]
) -> Imported | Skipped:
    stars = item.get("stars")
    if type(stars) is not int or not 1 <= stars <= 5:
        raise ValueError(f"stars {str(stars)[:40]!r} is not an integer from 1 to 5")
    text = _title_and_text(_get(item, "title", str), _get(item, "text", str))
    if _too_long(text):
        return Skipped("text over 20,000 characters")
    reply = _object(item.get("companyReply") or {}, "companyReply")
    reply_time = _get(reply, "updatedAt", str) or _get(reply, "createdAt", str)
    verified = _get(item, "isVerified", bool)
    if verified is None:
        verified = item.get("reviewVerificationLevel") == "verified"
    key = item.get("id")
    if type(key) not in (str, int) or not str(key).strip():
        raise ValueError("id is missing")
    key = str(key).strip()
    consumer = _object(item.get("consumer") or {}, "consumer")
    created = _get(item, "createdAt", str, required=True)
    updated = _get(item, "updatedAt", str)
    review = make_review(
        rid=review_id("trustpilot", key),
        author=display_author(_get(consumer, "displayName", str), ctx.author_style),
        rating=stars,
        date=local_date(created, ctx.zone, "createdAt"),
        text=text,
        source="trustpilot",
        source_url=f"https://www.trustpilot.com/reviews/{quote(key, safe='')}",
        reply=_get(reply, "text", str),
        reply_date=local_date(reply_time, ctx.zone, "companyReply.updatedAt") if reply_time else None,
        verified=verified,
        updated_at=edit_time(created, updated),
        warnings=warnings,
    )
    return Imported(review, utc_text(updated or created), where)


def _header_key(name: str) -> str:
    """A column name as the synonyms table spells it: lower case, `_` and `-` as spaces, "(UTC)" dropped."""
    name = re.sub(r"\(.*?\)", " ", name.strip().lower().lstrip("\ufeff"))
    return " ".join(name.replace("_", " ").replace("-", " ").split())


def csv_columns(header: list[str]) -> dict[int, str]:
    """Column position -> the field it holds, for the columns a synonym names."""
    columns = {}
    for position, name in enumerate(header):
        canonical = CSV_SYNONYMS.get(_header_key(name))
        if canonical is not None:
            columns[position] = canonical
    return columns


def sniff_delimiter(first_line: str) -> str:
    """The delimiter (comma, semicolon or tab) that splits the header into the most known column names;
    comma on a tie. A spreadsheet saved in Europe writes semicolons."""
    best, best_known = ",", -1
    for delimiter in CSV_DELIMITERS:
        try:
            header = next(csv.reader([first_line], delimiter=delimiter), [])
        except csv.Error:
            continue
        known = len(set(csv_columns(header).values()))
        if known > best_known:
            best, best_known = delimiter, known
    return best


def parse_csv(text: str, ctx: Context) -> Iterator[Imported | Skipped]:
    """CSV with a header row (comma, semicolon or tab): author, rating, date, text required (or their
    synonyms); id, source, source_url, reply, reply_date, verified, updated, title optional."""
    delimiter = sniff_delimiter(text.split("\n", 1)[0].rstrip("\r"))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader, [])
    except csv.Error as error:
        raise _fail(ctx, "line 1", f"not CSV ({error})") from None
    columns = csv_columns(header)
    seen: dict[str, int] = {}
    for position, canonical in columns.items():
        if canonical in seen:
            first = header[seen[canonical]].strip()
            raise _fail(
                ctx, "line 1", f"columns {first!r} and {header[position].strip()!r} both mean {canonical}"
            )
        seen[canonical] = position
    missing = [name for name in CSV_REQUIRED if name not in seen]
    if missing:
        raise _fail(
            ctx,
            "line 1",
            f"the header lacks {', '.join(missing)} (needs {', '.join(CSV_REQUIRED)} or a synonym: "
            "see docs/analysis.md#reviewsd-import)",
        )
    trustpilot = bool(TRUSTPILOT_CSV_COLUMNS & {_header_key(name) for name in header})
    default_source = "trustpilot" if trustpilot else CSV_DEFAULT_SOURCE
    ignored = [name.strip() for position, name in enumerate(header) if position not in columns]
    if ignored:
        ctx.warnings.append(f"{ctx.file}: line 1: columns ignored: {', '.join(map(repr, ignored))[:200]}")
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise _fail(ctx, f"line {reader.line_num}", f"not CSV ({error})") from None
        where = f"line {reader.line_num}"
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise _fail(ctx, where, f"{len(row)} fields, the header has {len(header)}")
        fields = {canonical: row[position] for position, canonical in columns.items()}
        warnings: list[str] = []
        try:
            record = _csv_review(fields, ctx, where, warnings, default_source)
        except ValueError as error:
            raise _fail(ctx, where, str(error)) from None
        ctx.warn(where, warnings)
        yield record


def _csv_date(value: str, name: str, ctx: Context) -> str:
    """A CSV date: YYYY-MM-DD, an RFC 3339 timestamp, a date-time without zone (the business's local
    time), or --date-format's; within 1995 to tomorrow."""
    value = value.strip()
    if ctx.date_format:
        try:
            day = dt.datetime.strptime(value, ctx.date_format).date()
        except ValueError:
            day = None  # an ISO date or timestamp still reads
        if day is not None:
            return checked_date(day, ctx.zone, name)
    if _DATE.match(value):
        try:
            day = dt.date.fromisoformat(value)  # a real calendar date
        except ValueError:
            raise ValueError(f"{name} {value!r} is not a date on the calendar") from None
        return checked_date(day, ctx.zone, name)
    try:
        moment = dt.datetime.fromisoformat(value[:64])
    except ValueError:
        hint = " (--date-format %m/%d/%Y reads 03/09/2024)" if not ctx.date_format else ""
        shown = f"{ctx.date_format}, " if ctx.date_format else ""
        raise ValueError(
            f"{name} {value[:40]!r} is not a date ({shown}YYYY-MM-DD or an RFC 3339 timestamp){hint}"
        ) from None
    if moment.tzinfo is None:
        return checked_date(moment.date(), ctx.zone, name)  # a spreadsheet's date-time: the local time
    return local_date(value, ctx.zone, name)


def _csv_rating(value: str) -> int:
    value = value.strip()
    if not _RATING.fullmatch(value):
        raise ValueError(f"rating {value[:40]!r} is not a whole number from 1 to 5")
    return int(value)


def _csv_verified(value: str) -> bool:
    folded_value = value.strip().lower()
    if folded_value not in _TRUE | _FALSE:
        raise ValueError(f"verified {value[:40]!r} is not true or false")
    return folded_value in _TRUE


def _csv_review(
    row: Mapping[str, str],
    ctx: Context,
    where: str,
    warnings: list[str],
    default_source: str = CSV_DEFAULT_SOURCE,
) -> Imported | Skipped:
    author = " ".join(row["author"].split())
    if not author:
        raise ValueError("author is empty")
    date = _csv_date(row["date"], "date", ctx)
    title = row.get("title")
    text = _title_and_text(title, row["text"]) if title is not None else clean_text(row["text"])
    if _too_long(text):
        return Skipped("text over 20,000 characters")
    unknown = {name for name in ("source", "source_url", "verified") if not (row.get(name) or "").strip()}
    if not (row.get("reply") or "").strip():
        unknown.add("owner_reply")
    source = (row.get("source") or "").strip().lower() or default_source
    if not _SOURCE.match(source):
        shown = (row.get("source") or "").strip()[:40]
        raise ValueError(f"source {shown!r} is not letters, digits, _ or - (e.g. yelp)")
    given_id = (row.get("id") or "").strip()
    former: tuple[str, ...] = ()
    if ULID_PATTERN.match(given_id):
        rid = given_id  # already a reviewsd id: kept, so a CSV written from reviews.json round-trips
    elif given_id:
        rid = review_id(source, given_id)
    else:
        # No id: the review is its author, day and words, whatever file or source column it came in.
        rid = review_id("csv", f"{folded(author)}\x1f{date}\x1f{folded(text)}")
        former = (review_id(source, f"{author}\x1f{date}"),)  # earlier versions: author and day only
    reply_date = (row.get("reply_date") or "").strip()
    updated = (row.get("updated") or "").strip()
    updated = _csv_updated(updated, ctx) if updated else ""
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
        updated_at=updated[:19] + "Z" if updated else None,
        warnings=warnings,
    )
    return Imported(review, updated, where, frozenset(unknown), former)


def _csv_updated(value: str, ctx: Context) -> str:
    """The `updated` column as RFC 3339 UTC: a timestamp, or a date (its start in the business's zone)."""
    try:
        return utc_text(value)
    except ValueError:
        day = dt.date.fromisoformat(_csv_date(value, "updated", ctx))
        start = dt.datetime.combine(day, dt.time(), ctx.zone)
        return start.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
