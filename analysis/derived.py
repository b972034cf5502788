"""Insights from reviews.json alone, for a server started before `reviewsd analyze` has run."""

from __future__ import annotations

from typing import Any

import orjson

from ..authoring.profile import Profile
from ..reviews.validation import REVIEWS_VALIDATOR
from .run import MODEL, build_insights

DERIVED_MODEL = f"{MODEL}; derived at load from reviews.json alone (no business.toml): run `reviewsd analyze`"


def derived_insights(reviews_content: bytes) -> bytes | None:
    """insights.json's bytes for these reviews with an empty profile (counts, ratings, sentiment, the
    monthly trend; no aspects, people or services), or None when reviews.json is not valid: the load
    then says why. Dated with reviews.json's generated_at, so the same reviews give the same bytes."""
    try:
        doc: Any = orjson.loads(reviews_content)
    except orjson.JSONDecodeError:
        return None
    if not REVIEWS_VALIDATOR.is_valid(doc):
        return None
    insights = build_insights(doc, Profile(), doc["generated_at"])
    insights["model"] = DERIVED_MODEL
    return orjson.dumps(insights)
