"""Two rules of the linters tools/lint-openapi runs (Spectral's oas3-unused-component, Redocly's
no-required-schema-properties-undefined), checked here without Node.js so that a change cannot break them
unseen."""

from __future__ import annotations

from typing import Any, Iterator

from reviewsd_app.openapi import build_openapi

DOCUMENT = build_openapi("https://reviews.example.com")


def schemas_in(node: Any) -> Iterator[dict]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from schemas_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from schemas_in(item)


def referenced_names(node: Any) -> set[str]:
    """The component schemas `node` refers to directly."""
    prefix = "#/components/schemas/"
    return {
        schema["$ref"][len(prefix) :].split("/")[0]
        for schema in schemas_in(node)
        if isinstance(schema.get("$ref"), str) and schema["$ref"].startswith(prefix)
    }


def test_every_component_schema_is_referenced() -> None:
    components = DOCUMENT["components"]["schemas"]
    outside = {key: value for key, value in DOCUMENT.items() if key != "components"}
    reached = referenced_names([outside, DOCUMENT["components"]["responses"]])
    waiting = list(reached)
    while waiting:  # what the referenced schemas refer to is used too
        for name in referenced_names(components[waiting.pop()]) - reached:
            reached.add(name)
            waiting.append(name)
    assert sorted(set(components) - reached) == []


def test_every_required_property_is_defined() -> None:
    undefined = []
    for schema in schemas_in(DOCUMENT["components"]["schemas"]):
        required, properties = schema.get("required"), schema.get("properties")
        if isinstance(required, list) and "allOf" not in schema and "$ref" not in schema:
            undefined += [name for name in required if name not in (properties or {})]
    assert undefined == []
