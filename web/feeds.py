"""Render the review feeds: JSON Feed 1.1 and Atom (RFC 4287).

Pure functions: no I/O, no clock, no mutable module state; every date in the output comes from
the data. The Atom feed is written from the JSON Feed document, so both carry the same text.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from ..pages.display_text import isolated
from ..surface import ATOM_FEED, HUB, JSON_FEED, OPENAPI, review_page_path, review_path

JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
# The paths' names as they were before surface.py declared them (callers import them from here).
JSON_FEED_PATH, ATOM_FEED_PATH, HUB_PATH, OPENAPI_PATH = JSON_FEED, ATOM_FEED, HUB, OPENAPI
ATOM_NS = "http://www.w3.org/2005/Atom"
LANGUAGE = "en"
# Atom requires feed-level <updated>; with no reviews there is no date in the data, so an empty feed uses the
# Unix epoch (fixed, so output stays stable).
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


def review_url(base_url: str, review_id: str) -> str:
    """URL of one review in the API; also the feeds' stable item/entry id."""
    return base_url.rstrip("/") + review_path(review_id)


def review_page_url(base_url: str, review_id: str) -> str:
    """URL of one review's page for people (its permalink): the feeds' item `url` and rel=alternate link."""
    return base_url.rstrip("/") + review_page_path(review_id)


def xml_safe(text: str) -> str:
    """Remove every character XML 1.0 forbids (the same text goes to both feeds)."""
    return _XML_FORBIDDEN.sub("", text)


def _rfc3339(day: date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def _second(timestamp: str) -> str:
    """An RFC 3339 UTC timestamp to the second (2026-03-02T06:30:00Z), the form the feeds' dates share."""
    return timestamp[:19] + "Z"


def _item(review: Mapping, base_url: str) -> dict:
    """One JSON Feed item; every string taken from the data goes through xml_safe()."""
    rating = int(review["rating"])
    if not 1 <= rating <= 5:
        raise ValueError(f"rating must be 1-5, got {rating!r}")
    stars = "\u2605" * rating + "\u2606" * (5 - rating)
    author = xml_safe(review["author"])
    author = author if author.strip() else "Anonymous"
    review_id = xml_safe(review["id"])
    url = review_url(base_url, review_id)  # the item id: stable, as it was before the pages existed
    text = xml_safe(review.get("text") or "")
    published = date.fromisoformat(review["date"])
    item: dict = {
        "id": url,
        "url": review_page_url(base_url, review_id),
        "title": f"{stars} {rating}/5 from {isolated(author)}",  # a direction override ends at the name
        "content_text": text if text.strip() else f"Rated {rating} out of 5. No written review.",
        "date_published": _rfc3339(published),
    }
    modified = []  # the owner's reply and the source's last edit: the later of them, if after publishing
    reply = review.get("owner_reply")
    if reply and xml_safe(reply["text"]).strip():  # a blank reply is left out
        replied = date.fromisoformat(reply["date"])
        item["content_text"] += f"\n\nReply from the owner ({replied.isoformat()}): {xml_safe(reply['text'])}"
        modified.append(_rfc3339(replied))
    if review.get("updated_at"):
        modified.append(_second(review["updated_at"]))
    if modified and max(modified) > item["date_published"]:  # RFC 3339 UTC of one form: text order is time
        item["date_modified"] = max(modified)
    author_object = {"name": author}
    if review.get("author_avatar_url") is not None:
        author_object["avatar"] = xml_safe(review["author_avatar_url"])
    item["authors"] = [author_object]
    source_url = review.get("source_url")
    if source_url is not None:
        source_url = item["external_url"] = xml_safe(source_url)
    item["_reviewsd"] = {
        "about": base_url + OPENAPI_PATH,
        "rating": rating,
        "source": xml_safe(review["source"]),
        "source_url": source_url,
        "verified": bool(review["verified"]),
        "review_id": review_id,
    }
    return item


def _json_feed(reviews: Sequence[Mapping], site: FeedSite) -> dict:
    """The JSON Feed 1.1 document with one item per review, in input order."""
    base = xml_safe(site.base_url.rstrip("/"))
    home = xml_safe(site.business["url"])
    description = xml_safe(site.business.get("description") or "")
    return {
        "version": JSON_FEED_VERSION,
        "title": f"{xml_safe(site.business['name'])}: latest reviews",
        "home_page_url": home,
        "feed_url": base + JSON_FEED_PATH,
        **({"description": description} if description else {}),
        "language": LANGUAGE,
        "authors": [{"name": xml_safe(site.business["name"]), "url": home}],
        "hubs": [{"type": "WebSub", "url": base + HUB_PATH}],
        "items": [_item(r, base) for r in reviews],
    }


def render_json_feed(reviews: Sequence[Mapping], site: FeedSite) -> bytes:
    return json.dumps(_json_feed(reviews, site), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrib: str) -> ET.Element:
    """Append a child element (the Atom namespace is the document default)."""
    child = ET.SubElement(parent, tag, attrib)
    child.text = text
    return child


def render_atom_feed(reviews: Sequence[Mapping], site: FeedSite) -> bytes:
    """Atom (RFC 4287) feed document (UTF-8) with one entry per review, in input order."""
    doc = _json_feed(reviews, site)
    atom_url = xml_safe(site.base_url.rstrip("/")) + ATOM_FEED_PATH
    # Unqualified tags under an explicit default xmlns: no "ns0:" prefixes and no change to ElementTree's
    # process-wide prefix registry.
    feed = ET.Element("feed", {"xmlns": ATOM_NS, "xml:lang": LANGUAGE})
    _sub(feed, "id", atom_url)
    _sub(feed, "title", doc["title"], type="text")
    if "description" in doc:
        _sub(feed, "subtitle", doc["description"], type="text")
    # RFC 3339 dates of one format: the greatest string is the newest date
    _sub(
        feed,
        "updated",
        max(
            (item.get("date_modified", item["date_published"]) for item in doc["items"]),
            default=EMPTY_FEED_UPDATED,
        ),
    )
    author = _sub(feed, "author")
    _sub(author, "name", doc["authors"][0]["name"])
    _sub(author, "uri", doc["home_page_url"])
    _sub(feed, "link", rel="self", type="application/atom+xml", href=atom_url)
    _sub(feed, "link", rel="hub", href=doc["hubs"][0]["url"])
    _sub(feed, "link", rel="alternate", type="text/html", href=doc["home_page_url"])
    _sub(feed, "generator", "reviewsd")
    for item in doc["items"]:
        entry = _sub(feed, "entry")
        _sub(entry, "id", item["id"])
        _sub(entry, "title", item["title"], type="text")
        _sub(entry, "updated", item.get("date_modified", item["date_published"]))
        _sub(entry, "published", item["date_published"])
        _sub(_sub(entry, "author"), "name", item["authors"][0]["name"])
        _sub(entry, "link", rel="alternate", type="text/html", href=item["url"])
        _sub(entry, "link", rel="alternate", type="application/json", href=item["id"])
        if "external_url" in item:
            _sub(entry, "link", rel="related", href=item["external_url"])
        _sub(entry, "category", term=f"rating-{item['_reviewsd']['rating']}")
        _sub(entry, "content", item["content_text"], type="text")
    body = ET.tostring(feed, encoding="unicode")
    # ElementTree leaves CR raw in text, which parsers would read back as LF; it never writes a CR of its own,
    # so every raw CR here comes from the data.
    return ('<?xml version="1.0" encoding="utf-8"?>\n' + body.replace("\r", "&#13;")).encode("utf-8")
