"""insights.json's figures, counted from the per-review analyses (pure)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Mapping, Sequence

from .matcher import labels_by_group
from .review import ReviewAnalysis

MAX_EXAMPLES = 3
MAX_PHRASES = 5
TREND_WINDOW_MONTHS = 12
STABLE_SLOPE = 0.01  # stars a month below which the trend is "stable"
SENTIMENTS = ("positive", "neutral", "negative")
MENTION_GROUPS = ("aspects", "technicians", "services", "problems", "service_areas", "topics")


def newest_first(analyses: Sequence[ReviewAnalysis]) -> list[ReviewAnalysis]:
    return sorted(analyses, key=lambda a: (a.review["date"], a.review["id"]), reverse=True)


def per_review(analyses: Sequence[ReviewAnalysis], profile: Any) -> dict[str, dict[str, Any]]:
    """per_review: each review's mentions, in the profile's order of records, each with its sentiment."""
    position = {
        (group, r["id"]): n
        for group, records in labels_by_group(profile).items()
        for n, r in enumerate(records)
    }
    entries = {}
    for analysis in analyses:
        entry: dict[str, Any] = {group: [] for group in MENTION_GROUPS}
        sentiments: dict[str, dict[str, str]] = {}
        for group in MENTION_GROUPS:
            decisions = analysis.mentions.get(group)
            if not decisions:
                continue
            ordered = sorted(decisions, key=lambda record_id: position[(group, record_id)])
            if group == "aspects":
                entry[group] = [
                    {"id": aspect_id, "sentiment": decisions[aspect_id].sentiment} for aspect_id in ordered
                ]
            else:
                entry[group] = ordered
                sentiments[group] = {record_id: decisions[record_id].sentiment for record_id in ordered}
        if sentiments:
            entry["sentiments"] = sentiments
        entries[analysis.review["id"]] = entry
    return entries


def tally(analyses: Sequence[ReviewAnalysis]) -> dict[tuple[str, str], tuple[Counter[str], list[str]]]:
    """(group, id) -> sentiment counts of its mentions, and the ids of the reviews naming it, newest first."""
    found: dict[tuple[str, str], tuple[Counter[str], list[str]]] = {}
    for analysis in analyses:  # already newest first
        for group, decisions in analysis.mentions.items():
            for record_id, decision in decisions.items():
                counts, ids = found.setdefault((group, record_id), (Counter(), []))
                counts[decision.sentiment] += 1
                ids.append(analysis.review["id"])
    return found


def _figures(counts: Counter[str], ids: list[str]) -> dict[str, Any]:
    total = sum(counts.values())
    return {
        "mention_count": total,
        "positive_count": counts["positive"],
        "neutral_count": counts["neutral"],
        "negative_count": counts["negative"],
        "score": round((counts["positive"] - counts["negative"]) / total, 3) if total else 0,
        "example_review_ids": ids[:MAX_EXAMPLES],
    }


def _top_phrases(analyses: Sequence[ReviewAnalysis], aspect_id: str) -> list[str]:
    counts = Counter(phrase for a in analyses for phrase in a.phrases.get(aspect_id, ()))
    return [
        phrase for phrase, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:MAX_PHRASES]
    ]


def aspect_records(
    analyses: Sequence[ReviewAnalysis], profile: Any, tallies: Mapping
) -> list[dict[str, Any]]:
    records = []
    for aspect in profile.aspects:
        counts, ids = tallies.get(("aspects", aspect["id"]), (Counter(), []))
        figures = _figures(counts, ids)
        total = figures["mention_count"]
        records.append(
            {
                "id": aspect["id"],
                "label": aspect["label"],
                **figures,
                "positive_pct": round(100 * counts["positive"] / total, 1) if total else 0,
                "top_phrases": _top_phrases(analyses, aspect["id"]),
            }
        )
    return records


def entity_records(profile: Any, group: str, tallies: Mapping) -> list[dict[str, Any]]:
    records = []
    for record in labels_by_group(profile)[group]:
        counts, ids = tallies.get((group, record["id"]), (Counter(), []))
        if group == "technicians":
            head = {
                "id": record["id"],
                "name": record["name"],
                "label": record.get("label") or record["name"],
                "role": record.get("role", ""),
            }
        else:
            head = {"id": record["id"], "label": record["label"]}
        records.append({**head, **_figures(counts, ids)})
    return records


def overall_sentiment(analyses: Sequence[ReviewAnalysis]) -> dict[str, Any]:
    total = len(analyses)
    if not total:
        return {"score": 0, "positive_pct": 0, "neutral_pct": 0, "negative_pct": 0}
    counts = Counter(a.sentiment for a in analyses)
    return {
        "score": round(sum(a.score for a in analyses) / total, 3),
        **{f"{s}_pct": round(100 * counts[s] / total, 1) for s in SENTIMENTS},
    }


def _month_span(first: str, last: str) -> list[str]:
    year, month = int(first[:4]), int(first[5:7])
    months = []
    while f"{year:04d}-{month:02d}" <= last:
        months.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return months


def monthly(analyses: Sequence[ReviewAnalysis]) -> list[dict[str, Any]]:
    """One entry per calendar month from the first review's to the last's; null figures for empty months."""
    by_month: dict[str, list[ReviewAnalysis]] = defaultdict(list)
    for analysis in analyses:
        by_month[analysis.review["date"][:7]].append(analysis)
    if not by_month:
        return []
    entries = []
    for month in _month_span(min(by_month), max(by_month)):
        found = by_month.get(month, [])
        entries.append(
            {
                "month": month,
                "review_count": len(found),
                "average_rating": round(sum(a.review["rating"] for a in found) / len(found), 2)
                if found
                else None,
                "sentiment_score": round(sum(a.score for a in found) / len(found), 3) if found else None,
            }
        )
    return entries


def trend(months: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Least-squares slope of the monthly average rating over the last 12 months (empty months skipped)."""
    window = list(months[-TREND_WINDOW_MONTHS:])
    points = [(x, m["average_rating"]) for x, m in enumerate(window) if m["average_rating"] is not None]
    slope = 0.0
    if len(points) >= 2:
        mean_x = sum(x for x, _ in points) / len(points)
        mean_y = sum(y for _, y in points) / len(points)
        spread = sum((x - mean_x) ** 2 for x, _ in points)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    slope = round(slope, 4)
    direction = "stable" if abs(slope) < STABLE_SLOPE else ("improving" if slope > 0 else "declining")
    return {"direction": direction, "slope_per_month": slope, "window_months": TREND_WINDOW_MONTHS}
