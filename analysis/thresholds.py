"""From how many reviews the insights say something in words: pure and without imports, so that the pages read
it without loading the model."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

# "Most praised", "most criticised" and "most named" are said only of a record with at least MIN_COUNT such
# mentions and MARGIN more than the next one; otherwise the lead is too small to publish. The pages show a
# person's or a service's share of positive reviews and score only from MIN_COUNT reviews on.
MIN_COUNT = 3
MARGIN = 2
# A trend's direction is said in words only when at least this many months of its window have reviews: a line
# through two months' averages is not a trend ("declining" after three reviews in two months).
TREND_MIN_MONTHS = 3


def trend_is_said(monthly: Sequence[Mapping[str, Any]], trend: Mapping[str, Any] | None) -> bool:
    """Whether the summary and the pages put the trend into words: published, and over TREND_MIN_MONTHS
    months with reviews or more."""
    if trend is None:  # [publish] trend = false
        return False
    window = monthly[-trend["window_months"] :]
    return sum(1 for month in window if month["review_count"]) >= TREND_MIN_MONTHS
