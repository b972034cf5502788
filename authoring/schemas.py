"""The data files' JSON Schemas (schemas/), for checking what we write before writing it."""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema_rs

from ..reviews.dataset import validator
from ..reviews.problems import json_path
from ..reviews.validation import schema_message


@cache
def _validator(name: str) -> jsonschema_rs.Validator:
    return validator(name)


def schema_errors(name: str, doc: Any, limit: int = 5) -> list[str]:
    """Up to `limit` `$.path: message` lines for a document against schemas/NAME, as `reviewsd check`
    says them."""
    errors = []
    for error in _validator(name).iter_errors(doc):
        errors.append(f"{json_path(error.instance_path)}: {schema_message(error)}")
        if len(errors) == limit:
            break
    return errors
