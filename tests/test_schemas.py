"""The data files' validator (jsonschema-rs) against the reference implementation (python-jsonschema).

Generated documents, valid and broken one place at a time, must get the same verdict from
both, so that the fast validator cannot drift from what the schemas say.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from support.factories import SPEC_STRATEGY, Spec, make_docs

from reviewsd_app.reviews.dataset import SCHEMAS, validator

ORACLE_REGISTRY = Registry().with_resources(
    (schema["$id"], Resource.from_contents(schema)) for schema in SCHEMAS.values()
)


def oracle(name: str) -> Draft202012Validator:
    return Draft202012Validator(
        SCHEMAS[name], registry=ORACLE_REGISTRY, format_checker=Draft202012Validator.FORMAT_CHECKER
    )


def test_the_oracle_checks_every_format_the_schemas_use() -> None:
    used = set()
    for schema in SCHEMAS.values():
        text = json.dumps(schema)
        used |= {f for f in ("date", "date-time", "uri", "email", "uuid") if f'"format": "{f}"' in text}
    assert used <= set(Draft202012Validator.FORMAT_CHECKER.checkers)  # uri needs rfc3986-validator installed


SPECS = st.lists(SPEC_STRATEGY, min_size=1, max_size=4)

# Strings near what the formats and patterns accept, so that broken values are often almost right.
NEAR_MISSES = st.sampled_from(
    [
        "2025-01-01",
        "2025-02-30",
        "2025-1-01",
        "07/03/2025",
        "2025-01-01T00:00:00Z",
        "2026-11-15T08:00:00+01:00",
        "2026-11-15 08:00:00Z",
        "https://example.org/a",
        "not a uri",
        "http://ex ample.org",
        "mailto:x@example.org",
        "",
        "01J00000000000000000000000",
        "pain-relief",
        "Pain Relief",
        "positive",
        "neutral",
        "google",
        "\x00",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-10, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | NEAR_MISSES
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def places(node: Any, path: tuple = ()) -> list[tuple]:
    """Every path into a document (the root too)."""
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += places(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += places(value, (*path, index))
    return found


def broken(doc: Any, data: st.DataObject) -> Any:
    """`doc` with a few places changed: replaced, removed, or given an extra key."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(0, 3), label="changes")):
        path = data.draw(st.sampled_from(places(doc)), label="place")
        if not path:
            continue
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        how = data.draw(st.sampled_from(["replace", "remove", "extra key"]), label="how")
        if how == "replace":
            parent[path[-1]] = data.draw(VALUES, label="value")
        elif how == "remove":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[data.draw(st.text(max_size=6), label="key")] = data.draw(VALUES, label="value")
    return doc


def documents(name: str, specs: list[Spec]) -> Any:
    reviews_doc, insights_doc = make_docs(specs)
    return {
        "review.schema.json": reviews_doc["reviews"][0],
        "reviews.schema.json": reviews_doc,
        "insights.schema.json": insights_doc,
    }[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["review.schema.json", "reviews.schema.json", "insights.schema.json"])
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(specs=SPECS, data=st.data())
def test_jsonschema_rs_judges_as_python_jsonschema(name: str, specs: list[Spec], data: st.DataObject) -> None:
    doc = documents(name, specs)
    assert validator(name).is_valid(doc) and oracle(name).is_valid(doc)
    changed = broken(doc, data)
    expected = oracle(name).is_valid(changed)
    assert validator(name).is_valid(changed) is expected
    errors = list(validator(name).iter_errors(changed))
    assert bool(errors) is not expected  # the explanation agrees with the verdict


@pytest.mark.parametrize(
    "field, value",
    [
        ("date", "2025-02-30"),
        ("date", "2025-1-01"),
        ("rating", 5.0),
        ("rating", 6),
        ("source_url", "not a uri"),
        ("source_url", "https://example.org/r/1"),
        ("author_avatar_url", "http://ex ample.org"),
        ("text", None),
        ("owner_reply", {"text": "Thanks", "date": "2025-13-01"}),
    ],
)
def test_edge_cases_are_judged_alike(field: str, value: Any) -> None:
    review = documents("review.schema.json", [Spec()])
    review[field] = value
    assert validator("review.schema.json").is_valid(review) is oracle("review.schema.json").is_valid(review)
