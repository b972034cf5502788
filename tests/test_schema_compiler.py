"""schema_compiler: the compiled predicates against jsonschema itself.

Every test compares ``compile_schema(...)(doc)`` with ``Draft202012Validator(...,
format_checker=FORMAT_CHECKER).is_valid(doc)`` on the bundled data, on documents made by
mutating it (hypothesis), on pinned edge cases and on small synthetic schemas for the
keywords the bundled schemas do not use yet.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
from pathlib import Path
from typing import Any, Callable

import pytest
import referencing
import referencing.jsonschema
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import schema_compiler
from schema_compiler import SchemaCompileError, compile_schema

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS: dict[str, dict] = {
    p.name: json.loads(p.read_text("utf-8")) for p in sorted((ROOT / "schemas").glob("*.schema.json"))
}
SCHEMA_FILES = sorted(SCHEMAS)
REVIEWS = json.loads((ROOT / "data" / "reviews.json").read_text("utf-8"))
INSIGHTS = json.loads((ROOT / "data" / "insights.json").read_text("utf-8"))



# SCHEMA_FUZZ_SCALE=20 multiplies every example budget, for a long run by hand.
FUZZ_SCALE = int(os.environ.get("SCHEMA_FUZZ_SCALE", "1"))


def fuzz(examples: int) -> settings:
    return settings(max_examples=examples * FUZZ_SCALE, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def reference_validator(schemas: dict[str, dict], name: str) -> Draft202012Validator:
    """The validator dataset.py builds: draft 2020-12, a registry of all files, formats on."""
    registry = referencing.Registry().with_resources(
        (s["$id"], referencing.jsonschema.DRAFT202012.create_resource(s)) for s in schemas.values()
    )
    return Draft202012Validator(schemas[name], registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER)


COMPILED = {name: compile_schema(name, SCHEMAS) for name in SCHEMA_FILES}
REFERENCE = {name: reference_validator(SCHEMAS, name) for name in SCHEMA_FILES}


def agree(compiled: Callable[[Any], bool], reference: Draft202012Validator, doc: Any) -> bool:
    """Assert that both judge `doc` alike; return the verdict.

    Where jsonschema raises instead of judging, the fast path must say False (so that the
    caller falls back to jsonschema)."""
    got = compiled(doc)
    assert type(got) is bool
    try:
        expected = reference.is_valid(doc)
    except Exception:
        expected = False
    assert got == expected, f"compiled says {got}, jsonschema says {expected} for {doc!r:.2000}"
    return got


def same_verdict(name: str, doc: Any) -> bool:
    return agree(COMPILED[name], REFERENCE[name], doc)


# ---------------------------------------------------------------- base documents (small, valid)


def _small_reviews() -> dict:
    doc = copy.deepcopy(REVIEWS)
    rs = doc["reviews"]
    picks = [next(r for r in rs if r["owner_reply"]), next(r for r in rs if r["text"] is None),
             next(r for r in rs if r["author_avatar_url"] is None)]
    doc["reviews"] = picks
    return doc


def _small_insights() -> dict:
    doc = copy.deepcopy(INSIGHTS)
    for key in ("aspects", "topics", "faq"):
        doc[key] = doc[key][:2]
    for key in doc["entities"]:
        doc["entities"][key] = doc["entities"][key][:2]
    doc["temporal"]["monthly"] = doc["temporal"]["monthly"][:3]
    busiest = sorted(doc["per_review"].items(), key=lambda kv: -sum(map(len, kv[1].values())))
    doc["per_review"] = dict(busiest[:3])
    return doc


SMALL_REVIEWS = _small_reviews()
REVIEW = SMALL_REVIEWS["reviews"][0]
BASES: dict[str, Any] = {
    "reviews.schema.json": SMALL_REVIEWS,
    "insights.schema.json": _small_insights(),
    "review.schema.json": REVIEW,
    "search-result.schema.json": {"matched": 7, "returned": 2, "reviews": SMALL_REVIEWS["reviews"][:2]},
    "since-result.schema.json": {"since": "2024-02-29", "count": 1, "reviews": SMALL_REVIEWS["reviews"][1:2]},
    "error.schema.json": {
        "error": "invalid_parameters", "message": "Invalid parameters.",
        "issues": [{"path": ["limit", 0], "code": "type", "message": "must be an integer"},
                   {"path": [], "code": "date_order", "message": "since after until"}],
    },
    "search-params.schema.json": {
        "rating": 5, "min_rating": 3.5, "since": "2024-01-01", "until": "2024-12-31", "query": "back",
        "mentions_technician": "Dr. Maya Patel", "mentions_service": "spinal-adjustment", "limit": 20,
    },
}


def test_every_schema_file_has_a_base_document() -> None:
    assert sorted(BASES) == SCHEMA_FILES


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_base_documents_are_valid(name: str) -> None:
    assert same_verdict(name, BASES[name]) is True


def test_bundled_data_judged_alike() -> None:
    assert same_verdict("reviews.schema.json", REVIEWS) is True
    assert same_verdict("insights.schema.json", INSIGHTS) is True
    for review in REVIEWS["reviews"]:
        assert COMPILED["review.schema.json"](review) is True


# ---------------------------------------------------------------- the environment

# The compiler delegates `format` to FORMAT_CHECKER, so it follows the environment by
# construction; this pins what the environment is, so a change (say rfc3987 installed,
# which turns "uri" checks on for every URL field) is noticed and its cost re-measured.


def _formats_used(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["format"]} if isinstance(node.get("format"), str) else set()
        return found.union(*(_formats_used(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_formats_used(v) for v in node))
    return set()


def test_format_environment_assumptions() -> None:
    checkers = Draft202012Validator.FORMAT_CHECKER.checkers
    used = _formats_used(SCHEMAS)
    assert used == {"date", "date-time", "uri"}
    assert {f for f in used if f in checkers} == {"date", "date-time"}, "uri checking needs rfc3987"
    assert importlib.util.find_spec("rfc3339_validator"), "what makes jsonschema check date-time"
    assert not importlib.util.find_spec("rfc3987"), "what would make jsonschema check uri"

    assert checkers["date-time"][0]("2026-02-30T00:00:00Z") is False
    assert checkers["date-time"][0]("2024-02-29t00:00:00z") is True  # jsonschema upper()s first
    assert Draft202012Validator.FORMAT_CHECKER.conforms("not a uri at all", "uri")


# ---------------------------------------------------------------- pinned edge cases


def _with(doc: Any, path: tuple, value: Any) -> Any:
    doc = copy.deepcopy(doc)
    if not path:
        return value
    target = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return doc


ULID = "01M7GPWA271JJVNAP7QPZKT05S"
NAN, INF = float("nan"), float("inf")

EDGE_CASES: list[tuple[str, tuple, Any, bool]] = [
    # integer: bool is not an integer, integral floats are
    ("review.schema.json", ("rating",), True, False),
    ("review.schema.json", ("rating",), 5.0, True),
    ("review.schema.json", ("rating",), 5, True),
    ("review.schema.json", ("rating",), 4.5, False),
    ("review.schema.json", ("rating",), 6, False),
    ("review.schema.json", ("rating",), NAN, False),
    ("review.schema.json", ("rating",), INF, False),
    ("review.schema.json", ("rating",), "5", False),
    # dates: pattern + date.fromisoformat
    ("review.schema.json", ("date",), "2026-02-30", False),
    ("review.schema.json", ("date",), "2024-02-29", True),
    ("review.schema.json", ("date",), "2023-02-29", False),
    ("review.schema.json", ("date",), "2024-01-01\n", False),  # pattern's $ allows it, format does not
    ("review.schema.json", ("date",), "2024-13-01", False),
    ("review.schema.json", ("date",), "", False),
    ("since-result.schema.json", ("since",), "2024-02-29", True),
    ("since-result.schema.json", ("since",), "2024-2-29", False),
    ("since-result.schema.json", ("since",), "２０２４-01-01", False),  # \d is ASCII-only there
    ("since-result.schema.json", ("since",), 20240229, False),
    # ULIDs: Crockford base 32 excludes I, L, O, U; first char 0-7
    ("review.schema.json", ("id",), ULID, True),
    *[("review.schema.json", ("id",), ULID[:-1] + c, False) for c in "ILOU"],
    ("review.schema.json", ("id",), "8" + ULID[1:], False),
    ("review.schema.json", ("id",), ULID.lower(), False),
    ("review.schema.json", ("id",), ULID + "\n", True),  # re.search with $: as jsonschema does
    ("review.schema.json", ("id",), ULID[:-1], False),
    # lengths count code points
    ("review.schema.json", ("text",), "", False),
    ("review.schema.json", ("text",), None, True),
    ("review.schema.json", ("text",), "x" * 20000, True),
    ("review.schema.json", ("text",), "x" * 20001, False),
    ("review.schema.json", ("text",), "\U0001f64f" * 20000, True),
    ("review.schema.json", ("author",), "é" * 200, True),
    ("review.schema.json", ("author",), "é" * 201, False),
    ("review.schema.json", ("owner_reply",), None, True),
    ("review.schema.json", ("owner_reply",), {"text": "Thanks", "date": "2024-02-30"}, False),
    ("review.schema.json", ("verified",), 1, False),
    ("review.schema.json", ("source",), "google", True),
    ("review.schema.json", ("source",), "Google", False),
    # "uri" is not checked in this environment: only the pattern applies
    ("review.schema.json", ("source_url",), "https://exa mple.com/ <not a uri>", True),
    ("review.schema.json", ("source_url",), "ftp://example.com/", False),
    # const / enum: True != 1, 1 == 1.0
    ("reviews.schema.json", ("aggregate_rating", "best_rating"), 5.0, True),
    ("reviews.schema.json", ("aggregate_rating", "worst_rating"), True, False),
    ("reviews.schema.json", ("aggregate_rating", "worst_rating"), 1.0, True),
    ("reviews.schema.json", ("aggregate_rating", "rating_value"), NAN, True),  # NaN passes bounds there
    ("reviews.schema.json", ("aggregate_rating", "rating_value"), INF, False),
    ("reviews.schema.json", ("aggregate_rating", "rating_value"), True, False),
    ("reviews.schema.json", ("aggregate_rating", "distribution", "5"), 2**64, True),
    ("reviews.schema.json", ("business", "opening_hours", 0, "days"), ["mo", "mo"], False),
    ("reviews.schema.json", ("business", "opening_hours", 0, "days"), [], False),
    ("reviews.schema.json", ("business", "opening_hours", 0, "days"), ["su"], True),
    ("reviews.schema.json", ("business", "opening_hours", 0, "closes"), "24:00", True),
    ("reviews.schema.json", ("business", "opening_hours", 0, "opens"), "24:00", False),
    ("reviews.schema.json", ("business", "geo", "latitude"), -90, True),
    ("reviews.schema.json", ("business", "geo", "latitude"), 90.000001, False),
    # date-time: the pattern wants an upper-case T and Z; the format checks the calendar
    ("reviews.schema.json", ("generated_at",), "2026-11-15T06:30:00Z", True),
    ("reviews.schema.json", ("generated_at",), "2026-11-15t06:30:00z", False),
    ("reviews.schema.json", ("generated_at",), "2026-11-15T06:30:00+02:00", False),
    ("reviews.schema.json", ("generated_at",), "2026-11-15T06:30:00.123456Z", True),
    ("reviews.schema.json", ("generated_at",), "2026-02-29T00:00:00Z", False),
    ("reviews.schema.json", ("generated_at",), "2024-02-29T00:00:00Z", True),
    ("reviews.schema.json", ("generated_at",), "2024-02-29T24:00:00Z", False),
    ("insights.schema.json", ("overall_sentiment", "score"), -1.0, True),
    ("insights.schema.json", ("overall_sentiment", "score"), -1.0001, False),
    ("insights.schema.json", ("pull_quote",), None, True),
    ("insights.schema.json", ("trend",), "stable", False),
    ("insights.schema.json", ("temporal", "trend", "direction"), "stable", True),
    ("insights.schema.json", ("temporal", "trend", "direction"), "Stable", False),
    ("insights.schema.json", ("date_range", "earliest"), None, True),
    ("insights.schema.json", ("date_range", "earliest"), "2023-02-29", False),
    ("error.schema.json", ("issues", 0, "path"), [True], False),
    ("error.schema.json", ("issues", 0, "path"), [1.0, "x"], True),
    ("error.schema.json", ("issues", 0, "path"), [1.5], False),
    ("search-params.schema.json", ("limit",), True, False),
    ("search-params.schema.json", ("limit",), 20.0, True),
    ("search-params.schema.json", ("min_rating",), 1, True),
    ("search-params.schema.json", ("min_rating",), False, False),
    ("search-params.schema.json", ("query",), "", False),
    ("search-params.schema.json", ("query",), "日本語", True),
    ("search-params.schema.json", ("mentions_service",), "x" * 201, False),
    ("search-params.schema.json", (), {}, True),
    ("search-params.schema.json", (), [], False),
]


@pytest.mark.parametrize(("name", "path", "value", "expected"), EDGE_CASES)
def test_edge_cases(name: str, path: tuple, value: Any, expected: bool) -> None:
    assert same_verdict(name, _with(BASES[name], path, value)) is expected


def test_per_review_keys_and_id_lists() -> None:
    base = BASES["insights.schema.json"]
    key, mentions = next(iter(base["per_review"].items()))
    for bad_key in (key[:-1] + "I", key[:-1] + "u", key.lower(), "", key + "0"):
        assert same_verdict("insights.schema.json", _with(base, ("per_review",), {bad_key: mentions})) is False
    duplicated = dict(mentions, topics=["pain-relief", "pain-relief"])
    assert same_verdict("insights.schema.json", _with(base, ("per_review", key), duplicated)) is False
    assert same_verdict("insights.schema.json", _with(base, ("per_review",), {})) is True


def test_verdict_cache_saturation_keeps_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    # The string memos step aside once full; verdicts must not change across that switch.
    monkeypatch.setattr(schema_compiler._StringMemo, "LIMIT", 8)
    compiled = compile_schema("review.schema.json", SCHEMAS)
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    for n in range(120):
        review = dict(REVIEW, id=ULID[:-2] + alphabet[n % 36] + alphabet[n // 36],
                      date=f"2024-02-{n % 32:02d}", source=["google", "yelp", "Bad", ""][n % 4])
        for _ in range(2):  # the second time from the cache, if any
            assert compiled(review) == REFERENCE["review.schema.json"].is_valid(review), review


# ---------------------------------------------------------------- mutation fuzzing

EDGE_STRINGS = [
    "", " ", "a", "x" * 20001, "é", "日本語", "\U0001f64f", "ß", "\u212a", "\x00", "null", "5",
    "2024-02-29", "2023-02-29", "2026-02-30", "2026-13-01", "2026-00-10", "0000-01-01", "2024-01-01\n",
    "2024-1-01", "२०२४-01-01", "2026-11", "2026-13", "08:00", "24:00", "23:60",
    "2026-11-15T06:30:00Z", "2026-11-15t06:30:00z", "2026-11-15T06:30:00+02:00", "2026-11-15T06:30:00.5Z",
    "2026-02-29T00:00:00Z", "0000-01-01T00:00:00Z", "2026-11-15 06:30:00Z", "2026-11-15T06:30:00Z\n",
    ULID, ULID[:-1] + "I", ULID[:-1] + "L", ULID[:-1] + "O", ULID[:-1] + "U", "8" + ULID[1:], ULID.lower(),
    "pain-relief", "pain--relief", "-pain", "Pain", "a" * 80, "a" * 81, "mo", "su", "xx",
    "positive", "neutral", "improving", "https://example.com/", "http://x", "ftp://x", "https://exa mple",
    "google", "_google", "g" * 40, "g" * 41, "+1 555 123 4567", "+12345", "DE", "de",
]
EDGE_NUMBERS = [
    0, 1, -1, 2, 5, 6, 5.0, 5.5, 1.0, 0.0, -0.0, 0.5, 4.999, 100, 100.0, 100.5, 101, -90, 90.5, -180.5,
    2**63, -(2**63), 10**30, 1e308, -1e308, 1e-300, NAN, INF, -INF, True, False, None,
]
KEYS = sorted({k for s in BASES.values() if isinstance(s, dict) for k in s} | {"id", "text", "date", "", "extra"})

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=10,
)
edge_values = st.sampled_from(EDGE_STRINGS + EDGE_NUMBERS)
any_value = st.one_of(edge_values, json_values, edge_values)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += _paths(v, prefix + (i,))
    return found


def _get(doc: Any, path: tuple) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _retyped(value: Any, pick: int) -> Any:
    """The same content as another JSON type (5 -> 5.0 / "5" / True, "x" -> ["x"], ...)."""
    options: list[Any]
    if isinstance(value, bool):
        options = [int(value), float(value), str(value).lower(), None]
    elif isinstance(value, int):
        options = [float(value), str(value), bool(value), [value]]
    elif isinstance(value, float):
        options = [int(value) if math.isfinite(value) else 0, str(value), [value], None]
    elif isinstance(value, str):
        options = [len(value), None, [value], {value: value}, value.upper(), value[:-1]]
    elif isinstance(value, list):
        options = [{str(i): v for i, v in enumerate(value)}, value[:1], None, len(value)]
    elif isinstance(value, dict):
        options = [list(value.values()), list(value), None, {}]
    else:
        options = ["", 0, False, [], {}]
    return options[pick % len(options)]


def _mutate(doc: Any, data: st.DataObject) -> Any:
    path = data.draw(st.sampled_from(_paths(doc)), label="path")
    node = _get(doc, path)
    op = data.draw(st.sampled_from(["replace", "edge", "delete", "add_key", "rename_key", "duplicate", "retype",
                                    "transplant"]), label="op")
    if op == "delete" and path:
        parent = _get(doc, path[:-1])
        del parent[path[-1]]
        return doc
    if op == "add_key" and isinstance(node, dict):
        node[data.draw(st.sampled_from(KEYS) | st.text(max_size=6), label="key")] = data.draw(any_value)
        return doc
    if op == "rename_key" and isinstance(node, dict) and node:
        old = data.draw(st.sampled_from(sorted(node)), label="old key")
        node[data.draw(st.sampled_from(EDGE_STRINGS + KEYS), label="new key")] = node.pop(old)
        return doc
    if op == "duplicate" and isinstance(node, list) and node:
        node.insert(data.draw(st.integers(0, len(node))), copy.deepcopy(data.draw(st.sampled_from(node))))
        return doc
    if op == "retype":
        value = _retyped(node, data.draw(st.integers(0, 5), label="retype"))
    elif op == "transplant":  # a value from elsewhere in the document: often the right type
        value = copy.deepcopy(_get(doc, data.draw(st.sampled_from(_paths(doc)), label="from")))
    elif op == "edge":
        value = data.draw(edge_values)
    else:
        value = data.draw(any_value)
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


@pytest.mark.parametrize("name", SCHEMA_FILES)
@fuzz(300)
@given(data=st.data())
def test_mutated_documents_judged_alike(name: str, data: st.DataObject) -> None:
    doc = copy.deepcopy(BASES[name])
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        doc = _mutate(doc, data)
    same_verdict(name, doc)


# ---------------------------------------------------------------- search params, directly

PARAM_NAMES = sorted(SCHEMAS["search-params.schema.json"]["properties"])
param_values = st.one_of(any_value, st.integers(-2, 120), st.floats(0, 6), st.text(max_size=3))


@fuzz(300)
@given(st.dictionaries(st.sampled_from(PARAM_NAMES + ["page", "sort", ""]), param_values, max_size=5))
@example({"limit": True})
@example({"limit": 1.0, "rating": 5.0})
@example({"min_rating": NAN})
@example({"rating": INF})
@example({"since": "2024-02-29", "until": "2023-02-29"})
@example({"query": "x" * 200, "mentions_technician": "x" * 201})
def test_search_params_generated(params: dict) -> None:
    same_verdict("search-params.schema.json", params)


@fuzz(200)
@given(json_values)
def test_search_params_arbitrary_values(value: Any) -> None:
    same_verdict("search-params.schema.json", value)


# ---------------------------------------------------------------- keywords the bundled schemas do not use

SYNTHETIC: list[dict] = [
    {"type": ["integer", "string"], "minimum": 2, "maxLength": 3},
    {"type": []},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
    {"multipleOf": 3},
    {"multipleOf": 0.5},
    {"multipleOf": 0.1},
    {"enum": [1, True, "a", None, [1, 2], {"a": 1}, 1.5, [False]]},
    {"enum": ["a", "b"]},
    {"enum": []},
    {"const": 1},
    {"const": True},
    {"const": "a"},
    {"const": None},
    {"const": [1, {"a": False}]},
    {"const": {"a": 1, "b": [0]}},
    {"uniqueItems": True},
    {"type": "array", "uniqueItems": True, "items": {"type": ["integer", "boolean", "number"]}},
    {"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
    {"prefixItems": [{"type": "integer"}], "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    {"items": False},
    {"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3},
    {"contains": {"type": "string"}, "minContains": 0},
    {"contains": {"const": None}},
    {"patternProperties": {"^a": {"type": "integer"}, "b$": {"type": "string"}}, "additionalProperties": False},
    {"properties": {"a": {"type": "integer"}}, "patternProperties": {"^a": {"minimum": 3}},
     "additionalProperties": {"type": "boolean"}},
    {"properties": {"a": True, "b": False}, "required": ["a"]},
    {"properties": {"a": {"type": "string"}}, "required": ["a", "zz"], "additionalProperties": False},
    {"propertyNames": {"maxLength": 2, "pattern": "^[a-c]"}, "minProperties": 1, "maxProperties": 3},
    {"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["d"]}}},
    {"allOf": [{"minimum": 0}, {"multipleOf": 3}]},
    {"anyOf": [{"type": "string"}, {"minimum": 10}]},
    {"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 3}]},
    {"oneOf": [{"minLength": 2}, {"pattern": "a"}]},
    {"not": {"type": ["string", "null"]}},
    {"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}},
    {"if": {"minimum": 5}, "then": {"multipleOf": 2}},
    {"format": "date-time"},
    {"format": "date"},
    {"format": "uri"},
    {"format": "ipv4"},
    {"format": "email"},
    {"$defs": {"node": {"type": "object", "additionalProperties": False, "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
     "$ref": "#/$defs/node"},
    {"type": ["object", "integer"], "properties": {"a": {"$ref": "#"}, "b": {"$ref": "#/properties/a"}}},
    {"$ref": "#/$defs/a", "maximum": 3, "$defs": {"a": {"minimum": 1}}},
    # Closed objects (run as straight-line code): required and optional properties, tables
    # accepting several types, always and never, a cached string check.
    {"type": "object", "additionalProperties": False, "required": ["a", "v"], "properties": {
        "a": {"type": ["integer", "string"], "minimum": 2, "maxLength": 2}, "b": {"type": "boolean"},
        "c": {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "null"}]}, "d": True, "ab": False,
        "v": {"type": "string", "format": "date"}, "kids": {"type": "object", "additionalProperties": False,
                                                             "properties": {"a": {"const": 1}}}}},
    {"additionalProperties": False, "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
     "required": ["b"]},
    {"items": {"$ref": "other.schema.json#/$defs/x"}},
]
OTHER = {"$id": "https://reviewsd.invalid/schemas/other.schema.json", "$defs": {"x": {"type": "string", "format": "date"}}}

small_keys = st.sampled_from(["a", "b", "c", "d", "ab", "ba", "v", "kids", "zz", "abc"])
small_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.floats() | st.sampled_from([0.5, 0.3, 1.5, 3.0, 9.0])
    | st.text(max_size=4) | edge_values,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(small_keys | st.text(max_size=2), inner, max_size=4),
    max_leaves=12,
)


def _synthetic(schema: dict) -> tuple[Callable[[Any], bool], Draft202012Validator]:
    key = json.dumps(schema, sort_keys=True)
    if key not in _SYNTHETIC_CACHE:
        _SYNTHETIC_CACHE[key] = _build_synthetic(schema)
    return _SYNTHETIC_CACHE[key]


_SYNTHETIC_CACHE: dict[str, tuple[Callable[[Any], bool], Draft202012Validator]] = {}


def _build_synthetic(schema: dict) -> tuple[Callable[[Any], bool], Draft202012Validator]:
    schema = {"$id": "https://reviewsd.invalid/schemas/t.schema.json", **schema}
    schemas = {"t.schema.json": schema, "other.schema.json": OTHER}
    return compile_schema("t.schema.json", schemas), reference_validator(schemas, "t.schema.json")


@pytest.mark.parametrize("schema", SYNTHETIC, ids=lambda s: json.dumps(s)[:60])
@fuzz(60)
@given(value=small_values)
@example(value=[1, True])
@example(value=[1, 1.0])
@example(value=[[1], [True]])
@example(value=[{"a": 1}, {"a": 1.0}])
@example(value=[NAN, NAN])
@example(value=[1, NAN, 1])
@example(value={"a": 1, "b": "x"})
@example(value={"v": 1, "kids": [{"v": 2, "kids": []}, {"v": True}]})
def test_synthetic_keywords(schema: dict, value: Any) -> None:
    agree(*_synthetic(schema), value)


def test_shared_nan_object_in_unique_items() -> None:
    # json.loads shares one NaN object, and jsonschema's equal() starts with `is`.
    value = json.loads("[NaN, NaN]")
    assert agree(*_synthetic({"uniqueItems": True}), value) is False


def test_non_json_python_values_follow_jsonschema_types() -> None:
    import enum
    from collections import OrderedDict
    from decimal import Decimal

    class Color(enum.IntEnum):
        RED = 3

    class Text(str):
        pass

    cases = [
        ({"type": "integer", "minimum": 2}, Color.RED),
        ({"type": "number", "maximum": 2}, Decimal("1.5")),
        ({"type": "string", "pattern": "^a"}, Text("abc")),
        ({"enum": ["abc"]}, Text("abc")),
        ({"type": "object", "required": ["a"], "additionalProperties": False,
          "properties": {"a": {"type": "integer"}}}, OrderedDict(a=1)),
        ({"type": "array", "items": {"type": "integer"}}, (1, 2)),  # a tuple is not an array
    ]
    for schema, value in cases:
        agree(*_synthetic(schema), value)


# ---------------------------------------------------------------- compile-time errors


@pytest.mark.parametrize("schema", [
    {"type": "string", "frobnicate": True},
    {"properties": {"a": {"unevaluatedProperties": False}}},
    {"items": {"$dynamicRef": "#meta"}},
    {"type": "strung"},
    {"$ref": "missing.schema.json"},
    {"$ref": "#/$defs/nowhere"},
    {"$ref": "#anchor"},
    {"minLength": -1},
    {"pattern": 5},
    {"allOf": []},
])
def test_unsupported_schemas_raise(schema: dict) -> None:
    with pytest.raises(SchemaCompileError):
        _synthetic(schema)


def test_unknown_keyword_in_a_referenced_file_raises() -> None:
    schemas = copy.deepcopy(SCHEMAS)
    schemas["review.schema.json"]["properties"]["rating"]["multipleOff"] = 1
    with pytest.raises(SchemaCompileError, match="multipleOff"):
        compile_schema("reviews.schema.json", schemas)


def test_cyclic_refs_compile_and_validate() -> None:
    compiled, reference = _synthetic({"$ref": "#/$defs/a", "$defs": {"a": {"type": "array", "items": {"$ref": "#"}}}})
    deep: Any = []
    for _ in range(50):
        deep = [deep, []]
    for value in ([], [[]], [[], [[1]]], deep, [deep, 1]):
        agree(compiled, reference, value)


def test_closed_objects_run_as_straight_line_code() -> None:
    """The loop version is replaced in every table once the tables are complete (the verdicts are the
    synthetic and data tests'); an object whose required names are not all properties keeps the loop."""
    straight = {"$id": "https://reviewsd.invalid/schemas/s.schema.json", "type": "object",
                "additionalProperties": False, "required": ["a"],
                "properties": {"a": {"type": "integer"}, "b": {"$ref": "#"}}}
    looped = {**straight, "$id": "https://reviewsd.invalid/schemas/l.schema.json", "required": ["a", "zz"]}
    compiler = schema_compiler._Compiler({"s.schema.json": straight, "l.schema.json": looped})
    node = compiler.compile_file("s.schema.json")
    assert node.table[dict].__qualname__ == "closed_object"  # generated, not _closed_object's loop
    assert node.check({"a": 1, "b": {"a": 2}}) and not node.check({"a": 1, "b": {"a": "2"}})
    assert not node.check({"a": 1, "c": 1}) and not node.check({"b": {"a": 1}})
    loop = schema_compiler._Compiler({"l.schema.json": looped}).compile_file("l.schema.json").table[dict]
    assert loop.__qualname__ == "_closed_object.<locals>.closed_object"
