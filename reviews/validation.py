"""The JSON Schemas of schemas/ (loaded once, resolvable by $id): what a document breaks in one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import jsonschema_rs

from .problems import Problem, json_path

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"  # the package root's schemas/

SCHEMA_FILES = ("reviews.schema.json", "insights.schema.json", "search-params.schema.json")


def _load_schemas() -> dict[str, dict]:
    schemas = {p.name: json.loads(p.read_text("utf-8")) for p in sorted(SCHEMA_DIR.glob("*.schema.json"))}
    if missing := [name for name in SCHEMA_FILES if name not in schemas]:
        # The modules copied without schemas/ (an install ships them: pyproject's package-data).
        raise RuntimeError(
            f"reviewsd's JSON Schemas are missing ({', '.join(missing)} not in {SCHEMA_DIR}): "
            "install reviewsd with `pip install .` (or run it from its source tree) "
            "as the README says"
        )
    return schemas


SCHEMAS: Mapping[str, dict] = _load_schemas()
REGISTRY = jsonschema_rs.Registry([(schema["$id"], schema) for schema in SCHEMAS.values()])


def validator(schema_file: str) -> jsonschema_rs.Validator:
    """A draft 2020-12 validator of one of the files in schemas/, formats checked, every file of schemas/
    resolvable by its $id."""
    return jsonschema_rs.Draft202012Validator(SCHEMAS[schema_file], registry=REGISTRY, validate_formats=True)


REVIEWS_VALIDATOR = validator("reviews.schema.json")
INSIGHTS_VALIDATOR = validator("insights.schema.json")
SEARCH_PARAMS_SCHEMA = SCHEMAS["search-params.schema.json"]


def schema_problems(file: str, doc: Any, schema_validator: jsonschema_rs.Validator) -> list[Problem]:
    """Every place `doc` breaks its schema (none when it is valid), ordered by place."""
    try:
        if schema_validator.is_valid(doc):
            return []
    except ValueError:  # jsonschema-rs reads at most a few hundred levels of nesting
        return [Problem(file, "$", "schema", "nests too deeply to validate")]
    found = [
        (list(e.instance_path), schema_keyword(e), schema_message(e))
        for e in schema_validator.iter_errors(doc)
    ]
    found.sort(key=lambda error: (list(map(str, error[0])), error[1]))
    return [
        Problem(file, json_path(path), f"schema:{keyword}", _short(message))
        for path, keyword, message in found
    ]


def schema_message(error: jsonschema_rs.ValidationError) -> str:
    """What an error says, an enum's options all named: jsonschema-rs names two and counts the rest ("is
    not one of "he", "she" or 4 other candidates"), which leaves whoever wrote the value guessing."""
    if error.kind.name == "enum":
        options = ", ".join(json.dumps(option, ensure_ascii=False) for option in error.kind.options)
        return f"{json.dumps(error.instance, ensure_ascii=False)} is not one of {options}"
    return error.message


def schema_keyword(error: jsonschema_rs.ValidationError) -> str:
    """The keyword an error breaks ("type", "format", ...): the last name on its schema path."""
    return next((part for part in reversed(error.schema_path) if isinstance(part, str)), "")


def _short(message: str) -> str:
    return message if len(message) <= 300 else message[:299] + "…"
