"""reviews.json parsed run by run (dataset.parse_reviews) gives exactly what json.loads gives, or its error.

The runs are cut a few bytes apart here (the server cuts every 16 KB), so that every
document is cut between most of its reviews, and where a text holds the bytes of a cut.
"""

from __future__ import annotations

import json
import operator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dataset
import generate_data
from dataset import DataError, RawFile, newest_first, parse_json, parse_reviews, replies_after_reviews

# Texts that put a cut's bytes, brackets, quotes and escapes inside strings, and wide characters.
AWKWARD = st.sampled_from(['},{', '"},{"id":"x"}', '}, {', '}\n,\n{', '\\', '"', '[', ']', '"reviews":[',
                           'NaN', '\u00e9', '\U0001f64f', '\u2028', '\x00', '\ud800'])
TEXT = st.lists(AWKWARD | st.text(max_size=8), max_size=6).map("".join)
REVIEW = st.fixed_dictionaries({
    "id": st.text(alphabet="0123456789ABC", min_size=1, max_size=4),
    "date": st.sampled_from(["2025-01-01", "2025-01-02", "2024-12-31"]),
    "text": st.none() | TEXT,
    "owner_reply": st.none() | st.fixed_dictionaries({"text": TEXT, "date": st.sampled_from(["2025-01-01", "2025-01-03"])}),
    "rating": st.integers(1, 5),
})
HEAD = st.fixed_dictionaries({"business": st.fixed_dictionaries({"name": TEXT}), "generated_at": TEXT})
STYLES = [
    {"separators": (",", ":"), "ensure_ascii": False},
    {"separators": (",", ":"), "ensure_ascii": True},
    {"indent": 2, "ensure_ascii": False},
    {"indent": "\t", "separators": (" , ", " : ")},
]


def raw_file(content: bytes) -> RawFile:
    return RawFile("reviews.json", content, "not hashed")


def document(head: dict, reviews: list, where: int) -> dict:
    """head's keys with "reviews" at position `where`."""
    items = list(head.items())
    items.insert(min(where, len(items)), ("reviews", reviews))
    return dict(items)


def parsed_or_problems(parse: Any, content: bytes) -> Any:
    try:
        return ("doc", parse(raw_file(content)))
    except DataError as exc:
        return ("problems", [str(problem) for problem in exc.problems])


@pytest.fixture
def tiny_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset, "_RUN_BYTES", 1)


def encodable(doc: dict, style: dict) -> bytes | None:
    try:
        return json.dumps(doc, **style).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate with ensure_ascii=False
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(HEAD, st.lists(REVIEW, max_size=8), st.integers(0, 2), st.sampled_from(STYLES), st.integers(1, 64))
def test_any_document_parses_as_json_loads_parses_it(tiny_runs: None, head: dict, reviews: list, where: int,
                                                      style: dict, run_bytes: int) -> None:
    dataset._RUN_BYTES = run_bytes
    content = encodable(document(head, reviews, where), style)
    if content is None:
        return
    result = parse_reviews(raw_file(content))
    expected = json.loads(content)
    assert result == expected
    assert list(result) == list(expected)  # the keys in the file's order


def plain_document(count: int) -> dict:
    return document({"business": {"name": "Café"}, "generated_at": "2026-11-15T06:00:00Z"},
                    [{"id": f"R{i}", "text": f"visit {i} \U0001f64f", "owner_reply": None} for i in range(count)], 1)


@pytest.mark.parametrize("style", STYLES)
def test_a_plain_document_is_parsed_by_runs(tiny_runs: None, style: dict) -> None:
    """The fast path is taken (not only its fallback) for files written compact, indented or spaced."""
    content = json.dumps(plain_document(5), **style).encode("utf-8")
    layout = dataset.review_runs(content)
    assert layout is not None and len(layout[1]) == 4  # cut between each two of the five reviews
    assert dataset._parsed_by_runs(content) == json.loads(content)


@pytest.mark.parametrize("content", [
    # a cut's bytes inside a text: that run does not parse
    b'{"reviews":[{"text":"a},{b"},{"text":"c"}],"x":1}',
    # the first "reviews":[ is not the top-level key
    b'{"business":{"reviews":[{"a":1},{"b":2}]},"reviews":[{"c":3}]}',
    # the top-level "reviews" given twice: the last counts, as for json.loads
    b'{"reviews":[{"a":1},{"b":2}],"reviews":[{"c":3}]}',
    b'{"reviews":7,"reviews":[{"c":3},{"d":4}]}',
    # arrays of objects after the reviews: a cut past the array's end
    b'{"reviews":[{"a":1},{"b":2}],"more":[{"c":3},{"d":4}]}',
])
def test_documents_that_defeat_a_shortcut_still_parse_as_json_loads_parses_them(tiny_runs: None,
                                                                                 content: bytes) -> None:
    assert parse_reviews(raw_file(content)) == json.loads(content)


@pytest.mark.parametrize("content", [
    b'{"business":{"x":NaN},"reviews":[{"a":1},{"b":2}]}',
    b'{"business":{"x":-Infinity},"reviews":[{"a":1},{"b":2}]}',
    b'{"reviews":[{"a":1},{"b":Infinity}]}',
    b'{"reviews":[{"a":1},{"b":"\xff"}]}',
    b'\xef\xbb\xbf{"reviews":[{"a":1},{"b":2}]}',
    b'{"reviews":[{"a":1},{"b":2}]',
    b'{"reviews":[{"a":1},{"b":2}]}}',
    b'{"reviews":[{"a":1},{"b":2}],}',
    b'{"reviews":[{"a":1},{"b":2}]} x',
    b'{"reviews":[{"a":1},,{"b":2}]}',
    b'{"reviews":[{"a":1},{"b":2},]}',
    b'["reviews":[{"a":1},{"b":2}]]',
    b'{"reviews":[{"a":1},{"b":' + b"9" * 5000 + b'}]}',
    b'{"reviews":[{"a":1},{"b":' + b"[" * 5000 + b"]" * 5000 + b'}]}',
])
def test_what_is_not_json_for_this_server_is_refused_as_parse_json_refuses_it(tiny_runs: None,
                                                                             content: bytes) -> None:
    assert parsed_or_problems(parse_reviews, content) == parsed_or_problems(parse_json, content)
    assert parsed_or_problems(parse_json, content)[0] == "problems"


def test_the_bundled_data_parses_by_runs() -> None:
    content = (Path(__file__).resolve().parent.parent / "data" / "reviews.json").read_bytes()
    assert dataset._parsed_by_runs(content) == json.loads(content)


KEYED = st.lists(st.fixed_dictionaries({"date": st.sampled_from(["2025-01-01", "2025-01-02"]),
                                        "id": st.sampled_from(["A", "B", "C"]), "n": st.integers()}), max_size=8)


@settings(max_examples=300, deadline=None)
@given(KEYED, st.booleans())
def test_newest_first_is_the_stable_sort(reviews: list, presorted: bool) -> None:
    if presorted:
        reviews = sorted(reviews, key=operator.itemgetter("date", "id"), reverse=True)
    expected = sorted(reviews, key=operator.itemgetter("date", "id"), reverse=True)
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


@pytest.mark.parametrize("content", [b'{"per_review":{"A":NaN}}', b'{"x":NaN,"per_review":{}}', b'{"per_review":{}',
                                     b'{"per_review":{"A":"\xff"}}', b'\xef\xbb\xbf{"per_review":{}}'])
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
