"""The data files' JSON Schemas (schemas/), for checking what we write before writing it."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema_rs

from .profile import SCHEMAS

DATA_SCHEMAS = ("reviews.schema.json", "review.schema.json", "insights.schema.json")


@cache
def _validator(name: str) -> Any:
    schemas = {file: json.loads((SCHEMAS / file).read_text("utf-8")) for file in DATA_SCHEMAS}
    registry = jsonschema_rs.Registry([(schema["$id"], schema) for schema in schemas.values()])
    return jsonschema_rs.Draft202012Validator(schemas[name], registry=registry, validate_formats=True)


def schema_errors(name: str, doc: Any, limit: int = 5) -> list[str]:
    """Up to `limit` `$.path: message` lines for a document against schemas/NAME."""
    errors = []
    for error in _validator(name).iter_errors(doc):
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.instance_path)
        errors.append(f"{path}: {error.message}")
        if len(errors) == limit:
            break
    return errors
