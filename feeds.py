"""Render the review feeds: JSON Feed 1.1 and Atom (RFC 4287).

Pure functions: no I/O, no clock, no mutable module state. The same input
always gives the same bytes; every date in the output comes from the data.

Text rules shared by both feeds (so they always carry the same text):
- every string taken from the data goes through xml_safe(), which removes the
  characters XML 1.0 forbids (C0 controls other than TAB/LF/CR, lone
  surrogates, U+FFFE, U+FFFF);
- review text that is null, or blank once cleaned, is replaced by the sentence
  "Rated N out of 5. No written review.";
- an owner reply whose cleaned text is not blank is appended to the content as
  "\\n\\nReply from the owner (YYYY-MM-DD): <reply text>";
- an author name that is blank once cleaned is shown as "Anonymous".
A carriage return inside text survives the Atom round trip: it is written as
the character reference &#13; (a raw CR would be turned into LF by parsers).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from urllib.parse import quote

JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
JSON_FEED_PATH = "/api/feed.json"
ATOM_FEED_PATH = "/feed.xml"
HUB_PATH = "/api/websub/hub"
OPENAPI_PATH = "/.well-known/openapi.json"
ATOM_NS = "http://www.w3.org/2005/Atom"
XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>\n'
LANGUAGE = "en"
GENERATOR = "reviewsd"
ANONYMOUS = "Anonymous"
# Atom requires feed-level <updated>; with no reviews there is no date in the
# data, so an empty feed uses the Unix epoch (fixed, so output stays stable).
EMPTY_FEED_UPDATED = "1970-01-01T00:00:00Z"

# Anything outside the XML 1.0 Char production (W3C XML 1.0, section 2.2: #x9 | #xA | #xD |
# [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]), written as the complement's few ranges:
# the negated class over all of Unicode took 14 ms to compile, at every start.
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class FeedSite:
    """Where the feeds are published and whose reviews they carry."""

    base_url: str  # public base URL without trailing slash
    business: Mapping  # the `business` object of reviews.json


@dataclass(frozen=True)
class _Entry:
    """One review, reduced to the values both feeds publish."""

    id: str
    title: str
    content: str
    author: str
    avatar: str | None
    published: date
    updated: date
    rating: int
    source: str
    source_url: str | None
    verified: bool
    review_id: str


def review_url(base_url: str, review_id: str) -> str:
    """URL of one review in the API; also the feeds' stable item/entry id."""
    return f"{base_url.rstrip('/')}/api/reviews/{quote(review_id, safe='')}"


def xml_safe(text: str) -> str:
    """Remove every character XML 1.0 forbids (the same text goes to both feeds)."""
    return _XML_FORBIDDEN.sub("", text)


def _opt(value: str | None) -> str | None:
    """xml_safe() for a nullable string."""
    return None if value is None else xml_safe(value)


def _rfc3339(day: date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def _stars(rating: int) -> str:
    if not 1 <= rating <= 5:
        raise ValueError(f"rating must be 1-5, got {rating!r}")
    return "\u2605" * rating + "\u2606" * (5 - rating)


def _content(review: Mapping, rating: int, reply: tuple[date, str] | None) -> str:
    """The review text, or a rating-only sentence, plus the owner reply if any."""
    text = xml_safe(review.get("text") or "")
    if not text.strip():
        text = f"Rated {rating} out of 5. No written review."
    if reply is not None:
        text += f"\n\nReply from the owner ({reply[0].isoformat()}): {reply[1]}"
    return text


def _reply(review: Mapping) -> tuple[date, str] | None:
    """(date, cleaned text) of the owner reply; None when absent or blank."""
    reply = review.get("owner_reply")
    if not reply or not xml_safe(reply["text"]).strip():
        return None
    return date.fromisoformat(reply["date"]), xml_safe(reply["text"])


def _entry(review: Mapping, base_url: str) -> _Entry:
    """Reduce one review object to the cleaned values both feeds publish."""
    rating = int(review["rating"])
    author = xml_safe(review["author"])
    author = author if author.strip() else ANONYMOUS
    published = date.fromisoformat(review["date"])
    reply = _reply(review)
    url = review_url(base_url, xml_safe(review["id"]))
    return _Entry(
        id=url,
        title=f"{_stars(rating)} {rating}/5 from {author}",
        content=_content(review, rating, reply),
        author=author,
        avatar=_opt(review.get("author_avatar_url")),
        published=published,
        updated=max(published, reply[0]) if reply else published,
        rating=rating,
        source=xml_safe(review["source"]),
        source_url=_opt(review.get("source_url")),
        verified=bool(review["verified"]),
        review_id=xml_safe(review["id"]),
    )


def _feed_title(site: FeedSite) -> str:
    return f"{xml_safe(site.business['name'])}: latest reviews"


def _json_item(entry: _Entry, base_url: str) -> dict:
    """One JSON Feed item; date_modified only when the owner replied later."""
    item: dict = {"id": entry.id, "url": entry.id, "title": entry.title,
                  "content_text": entry.content,
                  "date_published": _rfc3339(entry.published)}
    if entry.updated > entry.published:
        item["date_modified"] = _rfc3339(entry.updated)
    author = {"name": entry.author}
    if entry.avatar is not None:
        author["avatar"] = entry.avatar
    item["authors"] = [author]
    if entry.source_url is not None:
        item["external_url"] = entry.source_url
    item["_reviewsd"] = {
        "about": base_url + OPENAPI_PATH, "rating": entry.rating,
        "source": entry.source, "source_url": entry.source_url,
        "verified": entry.verified, "review_id": entry.review_id,
    }
    return item


def render_json_feed(reviews: Sequence[Mapping], site: FeedSite) -> bytes:
    """JSON Feed 1.1 document (UTF-8) with one item per review, in input order."""
    base = xml_safe(site.base_url.rstrip("/"))
    name = xml_safe(site.business["name"])
    home = xml_safe(site.business["url"])
    feed: dict = {"version": JSON_FEED_VERSION, "title": _feed_title(site),
                  "home_page_url": home, "feed_url": base + JSON_FEED_PATH}
    description = xml_safe(site.business.get("description") or "")
    if description:
        feed["description"] = description
    feed["language"] = LANGUAGE
    feed["authors"] = [{"name": name, "url": home}]
    feed["hubs"] = [{"type": "WebSub", "url": base + HUB_PATH}]
    feed["items"] = [_json_item(_entry(r, base), base) for r in reviews]
    return json.dumps(feed, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrib: str) -> ET.Element:
    """Append a child element (the Atom namespace is the document default)."""
    child = ET.SubElement(parent, tag, attrib)
    child.text = text
    return child


def _atom_entry(feed: ET.Element, entry: _Entry) -> None:
    node = _sub(feed, "entry")
    _sub(node, "id", entry.id)
    _sub(node, "title", entry.title, type="text")
    _sub(node, "updated", _rfc3339(entry.updated))
    _sub(node, "published", _rfc3339(entry.published))
    _sub(_sub(node, "author"), "name", entry.author)
    _sub(node, "link", rel="alternate", href=entry.id)
    if entry.source_url is not None:
        _sub(node, "link", rel="related", href=entry.source_url)
    _sub(node, "category", term=f"rating-{entry.rating}")
    _sub(node, "content", entry.content, type="text")


def render_atom_feed(reviews: Sequence[Mapping], site: FeedSite) -> bytes:
    """Atom (RFC 4287) feed document (UTF-8) with one entry per review, in input order."""
    base = xml_safe(site.base_url.rstrip("/"))
    home = xml_safe(site.business["url"])
    entries = [_entry(r, base) for r in reviews]
    # Unqualified tags under an explicit default xmlns: no "ns0:" prefixes and
    # no change to ElementTree's process-wide prefix registry.
    feed = ET.Element("feed", {"xmlns": ATOM_NS, "xml:lang": LANGUAGE})
    _sub(feed, "id", base + ATOM_FEED_PATH)
    _sub(feed, "title", _feed_title(site), type="text")
    description = xml_safe(site.business.get("description") or "")
    if description:
        _sub(feed, "subtitle", description, type="text")
    newest = max((e.updated for e in entries), default=None)
    _sub(feed, "updated", _rfc3339(newest) if newest else EMPTY_FEED_UPDATED)
    author = _sub(feed, "author")
    _sub(author, "name", xml_safe(site.business["name"]))
    _sub(author, "uri", home)
    _sub(feed, "link", rel="self", type="application/atom+xml", href=base + ATOM_FEED_PATH)
    _sub(feed, "link", rel="hub", href=base + HUB_PATH)
    _sub(feed, "link", rel="alternate", type="text/html", href=home)
    _sub(feed, "generator", GENERATOR)
    for entry in entries:
        _atom_entry(feed, entry)
    body = ET.tostring(feed, encoding="unicode")
    # ElementTree leaves CR raw in text, which parsers would read back as LF;
    # it never writes a CR of its own, so every raw CR here comes from the data.
    return (XML_DECLARATION + body.replace("\r", "&#13;")).encode("utf-8")
