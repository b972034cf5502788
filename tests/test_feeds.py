"""Tests for feeds.py: JSON Feed 1.1 and Atom (RFC 4287) rendering."""

from __future__ import annotations

import json
import re
import xml.dom.minidom
import xml.etree.ElementTree as ET
import xml.parsers.expat
from collections.abc import Iterator, Mapping
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewsd_app.pages.display_text import isolated
from reviewsd_app.web import feeds
from reviewsd_app.web.feeds import FeedSite, render_atom_feed, render_json_feed, review_url, xml_safe

ROOT = Path(__file__).resolve().parent.parent
A = "{http://www.w3.org/2005/Atom}"
BASE = "https://reviews.example.com"
BUSINESS = {
    "id": "spine-and-co",
    "name": "Spine & Co Chiropractic",
    "category": "Chiropractor",
    "description": "A fictional chiropractic clinic.",
    "url": "https://clinic.example.com",
    "telephone": "+1 555 0100 123",
    "address": {
        "street_address": "1 Main St",
        "locality": "Springfield",
        "region": "IL",
        "postal_code": "62701",
        "country": "US",
    },
    "geo": {"latitude": 39.8, "longitude": -89.6},
    "opening_hours": [{"days": ["mo", "tu"], "opens": "09:00", "closes": "17:00"}],
    "service_areas": [{"id": "springfield", "label": "Springfield"}],
    "services": [{"id": "adjustment", "label": "Adjustment", "description": "Spinal adjustment."}],
}
SITE = FeedSite(BASE, BUSINESS)
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ULID_RE = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
RFC3339_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
HOSTILE = {
    "cdata_end": "before ]]> after ]]>",
    "script": "<script>alert(1)</script>",
    "ampersands": "Tom & Jerry &amp; &#0; &lt;",
    "controls": "a\x00b\x01c\x0bd\x1fe\x0cf\x08g",
    "lone_surrogates": "x\ud800y\udfffz\udbff",
    "nonchars": "p\ufffeq\uffffr",
    "emoji": "Great 👍🏽 visit 🧘‍♀️ 10/10 🦴",
    "rtl": "שלום, טיפול מצוין \u202bمرحبا\u202c",
    "quotes": 'Dr. "Bones" O\'Neil <b>&</b>',
    "whitespace": "  lead\ttab\nnew\r\nline\rcr  ",
    "very_long": ("Long review ]]> <x> & \x00 é 👍 " * 700)[:20000],
}


# ---------------------------------------------------------------- helpers


def ulid(n: int) -> str:
    """A ULID-shaped id (26 Crockford base32 chars, first 0-7) for integer n."""
    chars = []
    for _ in range(25):
        n, digit = divmod(n, 32)
        chars.append(CROCKFORD[digit])
    value = "01" + "".join(reversed(chars))[1:]
    assert ULID_RE.match(value), value
    return value


def make_review(n: int = 1, **overrides: Any) -> dict:
    """A schema-shaped review; keyword arguments replace fields."""
    review = {
        "id": ulid(n),
        "author": f"Author {n}.",
        "author_avatar_url": None,
        "rating": 5,
        "date": "2025-03-01",
        "text": f"Review number {n}.",
        "source": "google",
        "source_url": None,
        "owner_reply": None,
        "verified": True,
    }
    review.update(overrides)
    return review


def is_xml_char(c: str) -> bool:
    """XML 1.0 Char production (section 2.2), written out independently of feeds.py."""
    cp = ord(c)
    return (
        cp in (0x9, 0xA, 0xD) or 0x20 <= cp <= 0xD7FF or 0xE000 <= cp <= 0xFFFD or 0x10000 <= cp <= 0x10FFFF
    )


def strip_forbidden(text: str) -> str:
    return "".join(c for c in text if is_xml_char(c))


def expected_content(review: Mapping) -> str:
    """The documented content_text / atom:content for one review."""
    body = strip_forbidden(review["text"] or "")
    if not body.strip():
        body = f"Rated {review['rating']} out of 5. No written review."
    reply = review["owner_reply"]
    if reply and strip_forbidden(reply["text"]).strip():
        body += f"\n\nReply from the owner ({reply['date']}): {strip_forbidden(reply['text'])}"
    return body


def expected_author(review: Mapping) -> str:
    name = strip_forbidden(review["author"])
    return name if name.strip() else "Anonymous"


def expected_title(review: Mapping) -> str:
    r = review["rating"]
    # The name isolated when it could turn the title around it (tests/test_display_text.py)
    return "★" * r + "☆" * (5 - r) + f" {r}/5 from {isolated(expected_author(review))}"


def load_schema(name: str) -> dict:
    return json.loads(Path(name).read_text(encoding="utf-8"))


JSONFEED_SCHEMA = load_schema(ROOT / "tests" / "schemas" / "jsonfeed-1.1.schema.json")
JSONFEED_VALIDATOR = jsonschema.Draft202012Validator(
    JSONFEED_SCHEMA, format_checker=jsonschema.FormatChecker()
)


def strings_in(value: Any) -> Iterator[str]:
    """Every string (keys and values) inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def assert_absolute_url(url: str) -> None:
    parts = urlsplit(url)
    assert parts.scheme in ("http", "https") and parts.netloc, url


def parse_json_feed(raw: bytes) -> dict:
    """Decode strictly, validate against JSON Feed 1.1, check text and URLs."""
    assert isinstance(raw, bytes)
    feed = json.loads(raw.decode("utf-8", errors="strict"))
    JSONFEED_VALIDATOR.validate(feed)
    for text in strings_in(feed):
        assert all(is_xml_char(c) for c in text), repr(text)
    for key in ("home_page_url", "feed_url"):
        assert_absolute_url(feed[key])
    for item in feed["items"]:
        assert_absolute_url(item["url"])
        assert RFC3339_RE.match(item["date_published"])
        assert RFC3339_RE.match(item.get("date_modified", item["date_published"]))
    return feed


def strict_xml_check(raw: bytes) -> None:
    """Non-recovering XML 1.0 well-formedness checks (expat and minidom)."""
    parser = xml.parsers.expat.ParserCreate()
    parser.Parse(raw, True)
    xml.dom.minidom.parseString(raw)
    assert all(is_xml_char(c) for c in raw.decode("utf-8", errors="strict"))


def only(parent: ET.Element, tag: str) -> ET.Element:
    found = parent.findall(A + tag)
    assert len(found) == 1, f"{parent.tag} must have exactly one {tag}, has {len(found)}"
    return found[0]


def at_most_one(parent: ET.Element, tag: str) -> None:
    assert len(parent.findall(A + tag)) <= 1, tag


def links(parent: ET.Element, rel: str) -> list[ET.Element]:
    return [e for e in parent.findall(A + "link") if e.get("rel", "alternate") == rel]


def check_text_construct(element: ET.Element) -> None:
    assert element.get("type", "text") == "text"
    assert len(element) == 0, "type=text must not contain child elements"


def check_date(element: ET.Element) -> str:
    assert RFC3339_RE.match(element.text or ""), element.text
    return element.text


def check_alternates(parent: ET.Element) -> None:
    keys = [(e.get("type"), e.get("hreflang")) for e in links(parent, "alternate")]
    assert len(keys) == len(set(keys)), "duplicate alternate type/hreflang"


def check_entry(entry: ET.Element, feed_has_author: bool) -> None:
    """RFC 4287 4.1.2 requirements for one atom:entry."""
    assert_absolute_url(only(entry, "id").text)
    check_text_construct(only(entry, "title"))
    updated = check_date(only(entry, "updated"))
    for tag in ("published", "content", "rights", "source", "summary"):
        at_most_one(entry, tag)
    published = entry.find(A + "published")
    if published is not None:
        assert check_date(published) <= updated
    content = entry.find(A + "content")
    if content is None:
        assert links(entry, "alternate"), "entry without content needs rel=alternate"
    else:
        check_text_construct(content)
    check_alternates(entry)
    assert feed_has_author or entry.findall(A + "author")
    for author in entry.findall(A + "author"):
        only(author, "name")
    for link in entry.findall(A + "link"):
        assert link.get("href")
    for category in entry.findall(A + "category"):
        assert category.get("term")


def parse_atom(raw: bytes) -> ET.Element:
    """Parse strictly and check the RFC 4287 4.1.1 / 4.1.2 requirements."""
    assert isinstance(raw, bytes)
    assert raw.startswith(b'<?xml version="1.0" encoding="utf-8"?>')
    strict_xml_check(raw)
    feed = ET.fromstring(raw)
    assert feed.tag == A + "feed"
    assert not re.search(rb"<ns\d+:|xmlns:ns\d+", raw)
    assert_absolute_url(only(feed, "id").text)
    check_text_construct(only(feed, "title"))
    updated = check_date(only(feed, "updated"))
    for tag in ("subtitle", "generator", "icon", "logo", "rights"):
        at_most_one(feed, tag)
    feed_authors = feed.findall(A + "author")
    for author in feed_authors:
        only(author, "name")
    assert len(links(feed, "self")) == 1 and len(links(feed, "hub")) == 1
    check_alternates(feed)
    entries = feed.findall(A + "entry")
    for entry in entries:
        check_entry(entry, bool(feed_authors))
    if entries:
        assert updated == max(e.find(A + "updated").text for e in entries)
    return feed


def atom_entry_fields(entry: ET.Element) -> dict:
    return {
        "id": entry.find(A + "id").text,
        "title": entry.find(A + "title").text or "",
        "content": entry.find(A + "content").text or "",
        "author": entry.find(f"{A}author/{A}name").text or "",
    }


def render_both(reviews: list, site: FeedSite = SITE) -> tuple[dict, ET.Element]:
    return parse_json_feed(render_json_feed(reviews, site)), parse_atom(render_atom_feed(reviews, site))


def assert_round_trip(reviews: list, site: FeedSite = SITE) -> None:
    """Both feeds valid; each item/entry carries the documented cleaned text, in order."""
    feed, atom = render_both(reviews, site)
    entries = atom.findall(A + "entry")
    assert len(feed["items"]) == len(entries) == len(reviews)
    for review, item, entry in zip(reviews, feed["items"], entries):
        got = atom_entry_fields(entry)
        assert item["id"] == got["id"] == review_url(site.base_url, review["id"])
        assert item["content_text"] == got["content"] == expected_content(review)
        assert item["title"] == got["title"] == expected_title(review)
        assert item["authors"][0]["name"] == got["author"] == expected_author(review)


# ---------------------------------------------------------------- fixtures checks


def test_helpers_build_schema_valid_data() -> None:
    review_schema = load_schema(ROOT / "schemas" / "review.schema.json")
    doc_schema = load_schema(ROOT / "schemas" / "reviews.schema.json")
    jsonschema.Draft202012Validator(review_schema).validate(make_review(7))
    business = {"$defs": doc_schema["$defs"], "$ref": "#/$defs/business"}
    jsonschema.Draft202012Validator(business).validate(BUSINESS)
    assert len({ulid(n) for n in range(200)}) == 200


def test_jsonfeed_schema_is_valid_and_not_vacuous() -> None:
    jsonschema.Draft202012Validator.check_schema(JSONFEED_SCHEMA)
    good = {
        "version": "https://jsonfeed.org/version/1.1",
        "title": "t",
        "items": [{"id": "1", "content_text": "x", "_ext": {"about": "https://e.x/"}}],
    }
    JSONFEED_VALIDATOR.validate(good)
    bad_variants = [
        {**good, "version": "https://jsonfeed.org/version/1"},
        {k: v for k, v in good.items() if k != "title"},
        {**good, "items": [{"id": "1"}]},
        {**good, "items": [{"content_text": "x"}]},
        {**good, "unknown": 1},
        {**good, "_bad.name": {}},
        {**good, "_ext": {"a.b": 1}},
        {**good, "authors": [{}]},
        {**good, "hubs": [{"type": "WebSub"}]},
        {**good, "items": [{"id": "1", "content_text": "x", "date_published": "2025-03-01"}]},
    ]
    for bad in bad_variants:
        assert not JSONFEED_VALIDATOR.is_valid(bad), bad


@pytest.mark.parametrize(
    "doc",
    [
        b"<a>\x01</a>",
        b"<a>&#0;</a>",
        b"<a>&#xD800;</a>",
        b"<a>&#xFFFE;</a>",
        "<a>\uffff</a>".encode(),
        b"<a>\xed\xa0\x80</a>",
        b"<a>]]></a>",
        b"<a><b></a>",
    ],
)
def test_strict_xml_check_rejects_malformed(doc: bytes) -> None:
    with pytest.raises((xml.parsers.expat.ExpatError, AssertionError, UnicodeDecodeError)):
        strict_xml_check(doc)


# ---------------------------------------------------------------- small functions


def test_review_url() -> None:
    assert review_url(BASE, ulid(1)) == f"{BASE}/api/reviews/{ulid(1)}"


@pytest.mark.parametrize(
    "char",
    [
        *map(chr, [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)]),
        "\ud800",
        "\udbff",
        "\udc00",
        "\udfff",
        "\ufffe",
        "\uffff",
    ],
)
def test_xml_safe_removes_forbidden(char: str) -> None:
    assert xml_safe(f"a{char}b{char}") == "ab"


@pytest.mark.parametrize(
    "char",
    [
        "\t",
        "\n",
        "\r",
        " ",
        "\x7f",
        "\x85",
        "\ud7ff",
        "\ue000",
        "\ufdd0",
        "\ufffd",
        "\U00010000",
        "\U0001f44d",
        "\U0010ffff",
    ],
)
def test_xml_safe_keeps_allowed(char: str) -> None:
    assert xml_safe(f"a{char}b") == f"a{char}b"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=())))
def test_xml_safe_matches_xml_char_production(text: str) -> None:
    assert xml_safe(text) == strip_forbidden(text)
    assert xml_safe(xml_safe(text)) == xml_safe(text)


# ---------------------------------------------------------------- exact shapes

REPLIED = make_review(
    1,
    author="Jane D.",
    author_avatar_url="https://avatars.example.com/jane.png",
    rating=4,
    date="2025-03-01",
    text="Fixed my back.",
    source_url="https://maps.example.com/r/1",
    owner_reply={"text": "Thank you, Jane!", "date": "2025-03-04"},
    verified=True,
)
ITEM_URL = f"{BASE}/api/reviews/{ulid(1)}"
PAGE_URL = f"{BASE}/reviews/{ulid(1)}"
REPLIED_CONTENT = "Fixed my back.\n\nReply from the owner (2025-03-04): Thank you, Jane!"


def test_json_feed_exact_document() -> None:
    feed = parse_json_feed(render_json_feed([REPLIED], SITE))
    assert feed == {
        "version": "https://jsonfeed.org/version/1.1",
        "title": "Spine & Co Chiropractic: latest reviews",
        "home_page_url": "https://clinic.example.com",
        "feed_url": f"{BASE}/api/feed.json",
        "description": "A fictional chiropractic clinic.",
        "language": "en",
        "authors": [{"name": "Spine & Co Chiropractic", "url": "https://clinic.example.com"}],
        "hubs": [{"type": "WebSub", "url": f"{BASE}/api/websub/hub"}],
        "items": [
            {
                "id": ITEM_URL,
                "url": PAGE_URL,
                "title": "★★★★☆ 4/5 from Jane D.",
                "content_text": REPLIED_CONTENT,
                "date_published": "2025-03-01T00:00:00Z",
                "date_modified": "2025-03-04T00:00:00Z",
                "authors": [{"name": "Jane D.", "avatar": "https://avatars.example.com/jane.png"}],
                "external_url": "https://maps.example.com/r/1",
                "_reviewsd": {
                    "about": f"{BASE}/.well-known/openapi.json",
                    "rating": 4,
                    "source": "google",
                    "source_url": "https://maps.example.com/r/1",
                    "verified": True,
                    "review_id": ulid(1),
                },
            }
        ],
    }


def test_json_feed_encoding() -> None:
    raw = render_json_feed([REPLIED], SITE)
    assert raw.startswith(b'{"version":"https://jsonfeed.org/version/1.1","title":')
    assert "★★★★☆".encode() in raw  # ensure_ascii=False: UTF-8, not \u escapes
    compact = json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":"))
    assert raw == compact.encode("utf-8")


def test_atom_exact_document() -> None:
    raw = render_atom_feed([REPLIED], SITE)
    feed = parse_atom(raw)
    assert feed.get("{http://www.w3.org/XML/1998/namespace}lang") == "en"
    assert [child.tag[len(A) :] for child in feed] == [
        "id",
        "title",
        "subtitle",
        "updated",
        "author",
        "link",
        "link",
        "link",
        "generator",
        "entry",
    ]
    assert feed.find(A + "id").text == f"{BASE}/feed.xml"
    assert feed.find(A + "title").text == "Spine & Co Chiropractic: latest reviews"
    assert feed.find(A + "subtitle").text == "A fictional chiropractic clinic."
    assert feed.find(A + "updated").text == "2025-03-04T00:00:00Z"
    assert feed.find(f"{A}author/{A}name").text == "Spine & Co Chiropractic"
    assert feed.find(f"{A}author/{A}uri").text == "https://clinic.example.com"
    assert [dict(link.attrib) for link in feed.findall(A + "link")] == [
        {"rel": "self", "type": "application/atom+xml", "href": f"{BASE}/feed.xml"},
        {"rel": "hub", "href": f"{BASE}/api/websub/hub"},
        {"rel": "alternate", "type": "text/html", "href": "https://clinic.example.com"},
    ]
    assert feed.find(A + "generator").text == "reviewsd"
    entry = feed.find(A + "entry")
    assert [(c.tag[len(A) :], c.text, dict(c.attrib)) for c in entry if c.tag != A + "author"] == [
        ("id", ITEM_URL, {}),
        ("title", "★★★★☆ 4/5 from Jane D.", {"type": "text"}),
        ("updated", "2025-03-04T00:00:00Z", {}),
        ("published", "2025-03-01T00:00:00Z", {}),
        ("link", None, {"rel": "alternate", "type": "text/html", "href": PAGE_URL}),
        ("link", None, {"rel": "alternate", "type": "application/json", "href": ITEM_URL}),
        ("link", None, {"rel": "related", "href": "https://maps.example.com/r/1"}),
        ("category", None, {"term": "rating-4"}),
        ("content", REPLIED_CONTENT, {"type": "text"}),
    ]
    assert [(c.tag, c.text) for c in entry.find(A + "author")] == [(A + "name", "Jane D.")]


def test_rating_only_review_without_reply_or_links() -> None:
    review = make_review(2, text=None, rating=3, author_avatar_url=None, source_url=None)
    feed, atom = render_both([review])
    item = feed["items"][0]
    assert item["content_text"] == "Rated 3 out of 5. No written review."
    assert item["title"] == "★★★☆☆ 3/5 from Author 2."
    assert "date_modified" not in item and "external_url" not in item
    assert item["authors"] == [{"name": "Author 2."}]
    assert item["_reviewsd"]["source_url"] is None
    entry = atom.find(A + "entry")
    assert entry.find(A + "content").text == "Rated 3 out of 5. No written review."
    assert entry.find(A + "updated").text == entry.find(A + "published").text
    assert links(entry, "related") == []


@pytest.mark.parametrize("text", ["", "   \n\t", "\x00\x01\ud800"])
def test_blank_text_counts_as_rating_only(text: str) -> None:
    feed, _ = render_both([make_review(3, text=text, rating=2)])
    assert feed["items"][0]["content_text"] == "Rated 2 out of 5. No written review."


@pytest.mark.parametrize("author", ["\x00", " ", "\ud800\t\x01", "\ufffe\uffff"])
def test_blank_author_is_anonymous(author: str) -> None:
    feed, atom = render_both([make_review(6, author=author, rating=5)])
    assert feed["items"][0]["authors"] == [{"name": "Anonymous"}]
    assert feed["items"][0]["title"] == "★★★★★ 5/5 from Anonymous"
    assert atom.find(f"{A}entry/{A}author/{A}name").text == "Anonymous"


@pytest.mark.parametrize("reply_date", ["2025-03-01", "2025-02-27"])
def test_reply_not_after_review_sets_no_modified_date(reply_date: str) -> None:
    review = make_review(4, owner_reply={"text": "Thanks", "date": reply_date})
    feed, atom = render_both([review])
    item = feed["items"][0]
    assert "date_modified" not in item
    assert item["content_text"].endswith(f"\n\nReply from the owner ({reply_date}): Thanks")
    entry = atom.find(A + "entry")
    assert entry.find(A + "updated").text == "2025-03-01T00:00:00Z"


def test_blank_reply_is_ignored() -> None:
    review = make_review(5, owner_reply={"text": "\x00 \x01", "date": "2025-04-01"})
    feed, atom = render_both([review])
    assert feed["items"][0]["content_text"] == "Review number 5."
    assert "date_modified" not in feed["items"][0]
    assert atom.find(A + "updated").text == "2025-03-01T00:00:00Z"


def test_rating_out_of_range_is_rejected() -> None:
    for render in (render_json_feed, render_atom_feed):
        with pytest.raises(ValueError):
            render([make_review(rating=6)], SITE)


# ---------------------------------------------------------------- order, ids, determinism


def test_order_ids_and_feed_updated() -> None:
    reviews = [  # deliberately not in date order: the caller's order must be kept
        make_review(10, date="2025-01-10"),
        make_review(11, date="2025-03-05"),
        make_review(12, date="2024-12-31", owner_reply={"text": "Hi", "date": "2025-06-30"}),
    ]
    feed, atom = render_both(reviews)
    expected_ids = [review_url(BASE, r["id"]) for r in reviews]
    assert [item["id"] for item in feed["items"]] == expected_ids
    assert [e.find(A + "id").text for e in atom.findall(A + "entry")] == expected_ids
    assert atom.find(A + "updated").text == "2025-06-30T00:00:00Z"
    assert_round_trip(reviews)


def test_output_is_deterministic() -> None:
    reviews = [REPLIED, make_review(2, text=None), make_review(3, text=HOSTILE["controls"])]
    reordered = [dict(reversed(list(r.items()))) for r in reviews]
    for render in (render_json_feed, render_atom_feed):
        first = render(reviews, SITE)
        assert render(reviews, SITE) == first
        assert render(reordered, SITE) == first
        assert render(tuple(reviews), FeedSite(BASE, dict(BUSINESS))) == first


def test_empty_feeds_are_valid() -> None:
    feed, atom = render_both([])
    assert feed["items"] == []
    assert atom.findall(A + "entry") == []
    assert atom.find(A + "updated").text == feeds.EMPTY_FEED_UPDATED == "1970-01-01T00:00:00Z"
    assert render_atom_feed([], SITE) == render_atom_feed([], SITE)


def test_fifty_reviews_render_all() -> None:
    reviews = [make_review(n, rating=n % 5 + 1, date=f"2025-01-{n % 28 + 1:02d}") for n in range(50)]
    assert_round_trip(reviews)


# ---------------------------------------------------------------- hostile input


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_text_everywhere(name: str) -> None:
    text = HOSTILE[name]
    review = make_review(20, text=text, author=text[:200], owner_reply={"text": text, "date": "2025-03-02"})
    assert_round_trip([review, make_review(21, text=text, rating=1)])


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_business(name: str) -> None:
    business = {**BUSINESS, "name": HOSTILE[name][:300], "description": HOSTILE[name]}
    site = FeedSite(BASE, business)
    feed, atom = render_both([make_review(22)], site)
    assert feed["authors"][0]["name"] == atom.find(f"{A}author/{A}name").text
    assert feed["title"] == atom.find(A + "title").text
    assert feed["title"] == strip_forbidden(HOSTILE[name][:300]) + ": latest reviews"
    assert feed.get("description", "") == (atom.findtext(A + "subtitle") or "")


def test_markup_is_escaped_not_live() -> None:
    review = make_review(23, text="<script>alert(1)</script> ]]> & <![CDATA[x]]>", author="Ann &<>\"' Lee")
    raw = render_atom_feed([review], SITE)
    assert b"<script>" not in raw and b"]]>" not in raw and b"<![CDATA[" not in raw
    assert b"&lt;script&gt;alert(1)&lt;/script&gt; ]]&gt; &amp; &lt;![CDATA[x]]&gt;" in raw
    assert_round_trip([review])
    _, atom = render_both([review])
    assert atom.find(f"{A}entry/{A}author/{A}name").text == "Ann &<>\"' Lee"


def test_carriage_returns_survive_xml_parsing() -> None:
    review = make_review(24, text="a\r\nb\rc\n")
    raw = render_atom_feed([review], SITE)
    assert b"\r" not in raw and b"a&#13;\nb&#13;c\n" in raw
    assert_round_trip([review])


def test_no_forbidden_character_reaches_output() -> None:
    forbidden = "".join(chr(c) for c in [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])
    forbidden += "\ud800\udfff\ufffe\uffff"
    review = make_review(
        25,
        text=forbidden + "ok",
        author="x" + forbidden,
        owner_reply={"text": forbidden + "re", "date": "2025-04-01"},
    )
    feed, atom = render_both([review])
    assert feed["items"][0]["content_text"] == "ok\n\nReply from the owner (2025-04-01): re"
    assert atom.find(f"{A}entry/{A}author/{A}name").text == "x"


# ---------------------------------------------------------------- property

EDGE_CHARS = "\x00\x01\x0b\x1f\t\r\n\ud800\udfff\ufffe\uffff<>&]\"' "
# Full Unicode range (surrogates and controls included), plus edge characters
# that a uniform draw would rarely pick.
ANY_CHAR = st.characters(exclude_categories=()) | st.sampled_from(EDGE_CHARS)
ANY_TEXT = st.text(alphabet=ANY_CHAR, max_size=300)
REPLY = st.none() | st.fixed_dictionaries(
    {"text": ANY_TEXT, "date": st.dates(date(2000, 1, 1), date(2099, 12, 31)).map(str)}
)


@st.composite
def reviews_strategy(draw: st.DrawFn) -> list[dict]:
    count = draw(st.integers(min_value=1, max_value=3))
    return [
        make_review(
            n,
            text=draw(st.none() | ANY_TEXT),
            author=draw(
                st.text(alphabet=ANY_CHAR, min_size=1, max_size=200)
                | st.text(alphabet=EDGE_CHARS[:11] + " ", min_size=1, max_size=3)
            ),
            rating=draw(st.integers(min_value=1, max_value=5)),
            date=str(draw(st.dates(date(2000, 1, 1), date(2099, 12, 31)))),
            owner_reply=draw(REPLY),
            verified=draw(st.booleans()),
        )
        for n in range(count)
    ]


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reviews_strategy())
def test_property_both_feeds_valid_and_text_round_trips(reviews: list[dict]) -> None:
    assert_round_trip(reviews)
    feed = parse_json_feed(render_json_feed(reviews, SITE))
    atom = parse_atom(render_atom_feed(reviews, SITE))
    for review, item, entry in zip(reviews, feed["items"], atom.findall(A + "entry")):
        reply = review["owner_reply"]
        modified = (
            reply is not None
            and strip_forbidden(reply["text"]).strip() != ""
            and reply["date"] > review["date"]
        )
        assert ("date_modified" in item) == modified
        assert entry.find(A + "updated").text == item.get("date_modified", item["date_published"])
        assert item["_reviewsd"]["rating"] == review["rating"]
        assert item["_reviewsd"]["verified"] is review["verified"]


def test_the_characters_removed_from_atom_are_exactly_those_xml_forbids() -> None:
    """Every code point, against XML 1.0's Char production (section 2.2)."""

    def xml_char(c: int) -> bool:
        return (
            c in (0x9, 0xA, 0xD) or 0x20 <= c <= 0xD7FF or 0xE000 <= c <= 0xFFFD or 0x10000 <= c <= 0x10FFFF
        )

    forbidden = feeds._XML_FORBIDDEN.match
    assert [c for c in range(0x110000) if (forbidden(chr(c)) is None) != xml_char(c)] == []
