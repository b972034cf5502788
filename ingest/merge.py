"""Merging imported reviews into reviews.json's list: the same id once, the newest edit wins (pure)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import orjson

from .records import Imported, Skipped, folded


@dataclass
class MergeResult:
    """The merged reviews, the edit times to remember, and what changed."""

    reviews: list[dict[str, Any]]
    updated_at: dict[str, str]
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)  # optional fields dropped, columns ignored
    business_changed: bool = False  # the business block differs from the one reviews.json had

    def summary(self) -> str:
        skipped = sum(self.skipped.values())
        reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(self.skipped.items()))
        return f"{self.new} new, {self.updated} updated, {self.unchanged} unchanged, {skipped} skipped" + (
            f" ({reasons})" if reasons else ""
        )


def _rank(updated_at: str, review: Mapping[str, Any]) -> tuple[str, int, bytes]:
    """Which version of a review wins: the later edit; for equal edit times, the one that says more (a
    source other than the default, a reply, a URL, verified), then the larger encoding, so the result does
    not depend on the order of the files."""
    says = sum(
        (
            review["source"] != "other",
            review["owner_reply"] is not None,
            review["source_url"] is not None,
            review["verified"],
        )
    )
    return updated_at, says, orjson.dumps(review, option=orjson.OPT_SORT_KEYS)


def _same_words(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a["date"] == b["date"] and folded(a["text"]) == folded(b["text"])


def merge(
    existing: Sequence[Mapping[str, Any]],
    known_updated_at: Mapping[str, str],
    records: Iterable[Imported | Skipped],
) -> MergeResult:
    """Existing reviews plus imported records; `known_updated_at` is what earlier imports remembered."""
    by_id = {review["id"]: dict(review) for review in existing}
    updated_at = {rid: known_updated_at.get(rid, "") for rid in by_id}
    result = MergeResult([], {})
    touched: set[str] = set()
    for record in records:
        if isinstance(record, Skipped):
            result.skipped[record.reason] += 1
            continue
        review = record.review
        rid = review["id"]
        if rid not in by_id:  # the id an earlier version gave this review, when that review is here
            for former in record.former_ids:
                if former in by_id and _same_words(by_id[former], review):
                    rid, review = former, {**review, "id": former}
                    break
        touched.add(rid)
        current = by_id.get(rid)
        if current is not None and record.unknown:
            review = {**review, **{name: current[name] for name in record.unknown}}
        if current is None or _rank(record.updated_at, review) > _rank(updated_at[rid], current):
            by_id[rid], updated_at[rid] = review, record.updated_at
    original = {review["id"]: review for review in existing}
    for rid in sorted(touched):
        if rid not in original:
            result.new += 1
        elif by_id[rid] == original[rid]:
            result.unchanged += 1
        else:
            result.updated += 1
    result.reviews = sorted(by_id.values(), key=lambda r: (r["date"], r["id"]), reverse=True)
    result.updated_at = {rid: stamp for rid, stamp in sorted(updated_at.items()) if stamp}
    return result


def aggregate_rating(reviews: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """reviews.json's aggregate_rating, recomputed from the reviews."""
    counts = Counter(review["rating"] for review in reviews)
    mean = sum(review["rating"] for review in reviews) / len(reviews) if reviews else 0
    return {
        "rating_value": round(mean, 2),
        "review_count": len(reviews),
        "best_rating": 5,
        "worst_rating": 1,
        "distribution": {star: counts.get(int(star), 0) for star in "12345"},
    }
