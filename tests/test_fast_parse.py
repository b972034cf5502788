"""Shortcuts of the first start, each against the plain way it replaces.

insights.json's per_review taken as the file writes it (dataset.written_as_encoded)
against encoding it; the newest-first order and the reply rule against the plain sort
and loop.
"""

from __future__ import annotations

import json
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
