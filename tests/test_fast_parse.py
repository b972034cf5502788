"""Shortcuts of the first start, each against the plain way it replaces.

insights.json's per_review taken as the file writes it (dataset.written_as_encoded)
against encoding it; the newest-first order and the reply rule against the plain sort
and loop.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dataset
import generate_data
from dataset import DataError, RawFile, newest_first, parse_json, replies_after_reviews


def raw_file(content: bytes) -> RawFile:
    return RawFile("insights.json", content, "not hashed")


def parsed_or_problems(parse: Any, content: bytes) -> Any:
    try:
        return ("doc", parse(raw_file(content)))
    except DataError as exc:
        return ("problems", [str(problem) for problem in exc.problems])


KEYED = st.lists(st.fixed_dictionaries({"date": st.sampled_from(["2025-01-01", "2025-01-02"]),
                                        "id": st.sampled_from(["A", "B", "C"]), "n": st.integers()}), max_size=8)


@settings(max_examples=300, deadline=None)
@given(KEYED, st.booleans())
def test_newest_first_is_the_stable_sort(reviews: list, presorted: bool) -> None:
    if presorted:
        reviews = sorted(reviews, key=lambda r: (r["date"], r["id"]), reverse=True)
    expected = sorted(reviews, key=lambda r: (r["date"], r["id"]), reverse=True)
    assert [id(r) for r in newest_first(reviews)] == [id(r) for r in expected]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["2025-01-02", "2025-01-03"]),
                          st.none() | st.sampled_from(["2025-01-01", "2025-01-02", "2025-01-04"])), max_size=6))
def test_replies_after_reviews_is_the_plain_rule(pairs: list) -> None:
    reviews = [{"date": date, "owner_reply": None if reply is None else {"date": reply}} for date, reply in pairs]
    expected = all(reply is None or reply >= date for date, reply in pairs)
    assert replies_after_reviews(reviews, [date for date, _ in pairs]) is expected


# --------------------------------------------------------------------------- insights.json's per_review as written

SLUG = st.sampled_from(["pain-relief", "dr-ana", "x", "caf\u00e9", "a\U0001f64f"])
MENTIONS = st.fixed_dictionaries({
    "aspects": st.lists(st.fixed_dictionaries({"id": SLUG, "sentiment": st.sampled_from(["positive", "negative"])}),
                        max_size=3),
    "technicians": st.lists(SLUG, max_size=2), "services": st.lists(SLUG, max_size=2),
    "problems": st.lists(SLUG, max_size=2), "service_areas": st.lists(SLUG, max_size=1),
    "topics": st.lists(SLUG, max_size=1),
})
PER_REVIEW = st.dictionaries(st.text(alphabet="0123456789ABC", min_size=1, max_size=3), MENTIONS, max_size=5)


def written_forms(per_review: dict) -> list[bytes]:
    """per_review written as the encoder writes it, and in ways it does not (each still the same JSON)."""
    compact = json.dumps(per_review, separators=(",", ":"), ensure_ascii=False)
    forms = [compact, json.dumps(per_review, ensure_ascii=False), json.dumps(per_review, separators=(",", ":")),
             json.dumps(per_review, indent=1), compact.replace('"x"', '"\\u0078"')]
    if per_review:
        first = next(iter(per_review))
        # a key written twice: the parse keeps the last value, at the first key's place
        forms.append(compact[:-1] + "," + json.dumps(first) + ":" + json.dumps(per_review[first], separators=(",", ":"),
                                                                               ensure_ascii=False) + "}")
        forms.append(compact.replace('"aspects":', '"aspects":[],"aspects":', 1))
    return [form.encode("utf-8") for form in forms]


@settings(max_examples=200, deadline=None)
@given(PER_REVIEW)
def test_per_review_as_written_is_used_exactly_when_it_is_its_encoding(per_review: dict) -> None:
    for written in written_forms(per_review):
        parsed = json.loads(written)
        encoded = dataset.encode_json(parsed)
        assert dataset.written_as_encoded(written, parsed) is (written == encoded)
        doc = {"version": 1, "per_review": parsed, "summary": "ok"}
        assert dataset._encode_insights(doc, written) == dataset._encode_insights(doc)


@pytest.mark.parametrize("pretty", [False, True])
def test_per_review_as_generated_is_used_when_written_compact(pretty: bool) -> None:
    """The case the shortcut is for: generate_data.py's compact files (the bundled data is indented)."""
    content = generate_data.dumps(generate_data.generate(300, 7, date(2026, 11, 15), 1.0)[1], pretty)
    doc, written = dataset.parse_insights(raw_file(content))
    assert doc == json.loads(content) and written is not None
    assert dataset.written_as_encoded(written, doc["per_review"]) is not pretty


@pytest.mark.parametrize("content", [
    b'{"per_review":{"A":{}},"x":1}',
    b'{"faq":{"per_review":{"A":{}}},"per_review":{"B":{}}}',
    b'{"per_review":{"A":{}},"per_review":{"B":{}}}',
    b'{"per_review":7,"per_review":{"B":{}}}',
    b'{"per_review" : {"A":{}} , "t":"caf\xc3\xa9 \xf0\x9f\x99\x8f"}',
    b'{"t":"caf\xc3\xa9","per_review":{"A":{"k":"\xf0\x9f\x99\x8f"}},"u":"\xc3\xa9"}',
])
def test_insights_parse_as_json_loads_parses_them_with_per_review_as_written(content: bytes) -> None:
    doc, written = dataset.parse_insights(raw_file(content))
    assert doc == json.loads(content)
    if written is not None:
        assert json.loads(written) == doc["per_review"]
        head, _, tail = content.partition(written)
        assert json.loads(head + b"NaN" + tail, parse_constant=lambda _: "slot")["per_review"] == "slot"


@pytest.mark.parametrize("content", [
    b'{"per_review":{"A":NaN}}', b'{"x":NaN,"per_review":{}}', b'{"x":-Infinity,"per_review":{}}',
    b'{"per_review":{}', b'{"per_review":{}}}', b'{"per_review":{},}', b'{"per_review":{}} x', b'["per_review":{}]',
    b'{"per_review":{"A":"\xff"}}', b'\xef\xbb\xbf{"per_review":{}}', b'{"per_review":{"A":' + b"9" * 5000 + b'}}',
    b'{"per_review":{"A":' + b"[" * 5000 + b"]" * 5000 + b'}}',
])
def test_insights_that_are_not_json_are_refused_as_parse_json_refuses_them(content: bytes) -> None:
    assert parsed_or_problems(lambda raw: dataset.parse_insights(raw)[0], content) == parsed_or_problems(parse_json,
                                                                                                        content)
    assert parsed_or_problems(parse_json, content)[0] == "problems"


def test_the_schema_fixes_what_written_as_encoded_counts_on() -> None:
    """written_as_encoded counts seven keys per entry and two per aspect, and sees no numbers: the schema's shape."""
    insights = dataset.SCHEMAS["insights.schema.json"]
    mentions = insights["$defs"]["review_mentions"]
    assert mentions["additionalProperties"] is False and sorted(mentions["required"]) == sorted(mentions["properties"])
    assert len(mentions["required"]) == 6
    aspect = mentions["properties"]["aspects"]["items"]
    assert aspect["additionalProperties"] is False and sorted(aspect["required"]) == sorted(aspect["properties"]) == [
        "id", "sentiment"]
    assert "number" not in json.dumps(mentions) and "integer" not in json.dumps(mentions)


# --------------------------------------------------------------------------- reviews.json's reviews as written

REVIEW_KEYS = list(dataset.SCHEMAS["review.schema.json"]["properties"])
ODD_TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from('"\\/\n\t\x00\x08\x0b\x1f\x7f\u00e9\u2028\U0001f64f'),
                   max_size=8)
REVIEW = st.fixed_dictionaries({
    "id": ODD_TEXT, "author": ODD_TEXT, "author_avatar_url": st.none() | ODD_TEXT, "rating": st.integers(-2, 7),
    "date": ODD_TEXT, "text": st.none() | ODD_TEXT, "source": ODD_TEXT, "source_url": st.none() | ODD_TEXT,
    "owner_reply": st.none() | st.fixed_dictionaries({"text": ODD_TEXT, "date": ODD_TEXT}),
    "verified": st.booleans(),
})


class OneWayOff:
    """Writes JSON as encode_json does but for its decision number `off`, taken another way (the same value
    or, for a key written twice, the parse's), `how` choosing among the other ways."""

    def __init__(self, off: int, how: int):
        self.off, self.how, self.decisions = off, how, 0

    def other(self) -> bool:
        self.decisions += 1
        return self.decisions - 1 == self.off

    def value(self, value: Any) -> str:
        space = " \n"[self.how % 2] if self.other() else ""
        if isinstance(value, dict):
            items = list(value.items())
            if len(items) > 1 and self.other():
                items[0], items[1] = items[1], items[0]
            members = [(f"{self.string(key)}:null," if self.other() else "") + f"{self.string(key)}:{self.value(item)}"
                       for key, item in items]
            return space + "{" + ",".join(members) + "}"
        if isinstance(value, str):
            return space + self.string(value)
        if isinstance(value, int) and not isinstance(value, bool) and self.other():
            return space + [f"{value}.0", f"{value}e0", "-0" if value == 0 else f"{value}.00"][self.how % 3]
        return space + json.dumps(value)

    def string(self, text: str) -> str:
        written = []
        for char in text:
            encoded = json.dumps(char, ensure_ascii=False)[1:-1]
            if self.other():
                utf16 = char.encode("utf-16-be")
                escaped = "".join(f"\\u{int.from_bytes(utf16[i:i + 2], 'big'):04x}" for i in range(0, len(utf16), 2))
                encoded = ["\\/" if char == "/" else escaped, escaped.upper().replace("\\U", "\\u")][self.how % 2]
            written.append(encoded)
        return '"' + "".join(written) + '"'


def in_schema_order(review: dict) -> bool:
    reply = review["owner_reply"]
    return list(review) == REVIEW_KEYS and (reply is None or list(reply) == ["text", "date"])


@settings(max_examples=500, deadline=None)
@given(st.lists(REVIEW, min_size=1, max_size=3), st.integers(-1, 120), st.integers(0, 5))
def test_reviews_as_written_are_taken_exactly_where_they_are_their_encoding(reviews: list, off: int, how: int) -> None:
    """Written as encode_json writes them, or one thing written another way: whitespace, an escape, a key
    twice or out of the schema's order, an integer as a float or -0. Taken as written only where that is
    their encoding (with no float, and keys as the schema orders them); the body the same either way."""
    writer = OneWayOff(off, how)
    written = ",".join(writer.value(review) for review in reviews).encode("utf-8")
    parsed = json.loads(b"[" + written + b"]")
    encoded = b",".join(map(dataset.encode_json, parsed))
    plain = all(in_schema_order(review) and type(review["rating"]) is int for review in parsed)
    assert dataset.reviews_written_as_encoded(written) is (written == encoded and plain)
    assert dataset._encode_list(b"[", parsed, b"]", memoryview(written)) == dataset._encode_list(b"[", parsed, b"]")


@pytest.mark.parametrize("rating, taken", [("5", True), ("0", True), ("-1", True), ("10", True), ("-0", False),
                                           ("5.0", False), ("5e0", False), ("50e-1", False), ("5.00", False)])
def test_a_number_is_taken_as_written_only_as_an_integer_written_as_encoded(rating: str, taken: bool) -> None:
    review = {key: None for key in REVIEW_KEYS} | {"id": "a", "author": "b", "date": "c", "source": "d",
                                                  "verified": True}
    written = dataset.encode_json(review | {"rating": 7}).replace(b'"rating":7', b'"rating":' + rating.encode())
    parsed = json.loads(b"[" + written + b"]")
    assert dataset.reviews_written_as_encoded(written) is taken
    assert dataset._encode_list(b"[", parsed, b"]", memoryview(written)) == dataset._encode_list(b"[", parsed, b"]")


def test_a_string_matches_as_encode_json_writes_it_and_no_other_way() -> None:
    for char in [*map(chr, range(0x80)), "\u00e9", "\u2028", "\ufeff", "\U0001f64f"]:
        encoded = dataset.encode_json(char)
        texts = {encoded.decode("utf-8"), json.dumps(char), f'"\\u{ord(char):04x}"', f'"\\u{ord(char):04X}"',
                 f'"{char}"', '"\\/"'}
        for text in texts:
            assert (re.fullmatch(dataset._ENCODED_STRING, text.encode("utf-8")) is not None) is (
                text.encode("utf-8") == encoded), (char, text)


@pytest.mark.parametrize("layout", [{"separators": (",", ":")}, {}, {"indent": 1}])
def test_reviews_as_generated_are_taken_when_written_compact(layout: dict, verdicts: list[bool]) -> None:
    """The case the shortcut is for: generate_data.py's compact files, whose reviews are newest first and last."""
    doc = generate_data.generate(300, 7, date(2026, 11, 15), 1.0)[0]
    compact = layout == {"separators": (",", ":")}
    content = json.dumps(doc, ensure_ascii=False, **layout).encode("utf-8") + b"\n"
    assert (content == generate_data.dumps(doc, False)) is compact
    part = dataset._ReviewsPart.encode(json.loads(content), dataset._before_document_end(content))
    assert verdicts == ([True] if compact else [])  # the other keys are not written as encoded either
    assert part == dataset._ReviewsPart.encode(doc)
    assert part.body == content[:-1] or not compact


@pytest.mark.parametrize("head", [b'{"business": {', b'{"generated_at":"2026-01-01T00:00:00Z","business":{'])
def test_reviews_after_a_head_written_otherwise_are_not_looked_at(head: bytes, verdicts: list[bool]) -> None:
    """Where the other keys are not written as encoded, where the reviews start is not known for sure."""
    doc = generate_data.generate(30, 7, date(2026, 11, 15), 1.0)[0]
    content = generate_data.dumps(doc, False).replace(b'{"business":{', head, 1)
    parsed = json.loads(content)
    assert dataset._ReviewsPart.encode(parsed, dataset._before_document_end(content)) == dataset._ReviewsPart.encode(
        parsed)
    assert verdicts == []


def test_reviews_written_otherwise_after_a_head_as_encoded_are_encoded(verdicts: list[bool]) -> None:
    doc = generate_data.generate(30, 7, date(2026, 11, 15), 1.0)[0]
    content = generate_data.dumps(doc, False)
    reviews = content.index(b'"reviews":[')
    assert b"\xc3\xa9" in content[reviews:]  # an é in some review
    content = content[:reviews] + content[reviews:].replace(b"\xc3\xa9", b"\\u00e9")
    parsed = json.loads(content)
    assert parsed == doc
    part = dataset._ReviewsPart.encode(parsed, dataset._before_document_end(content))
    assert verdicts == [False]
    assert part == dataset._ReviewsPart.encode(doc)
