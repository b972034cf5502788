"""Figures for a date range, counted from the per-review mentions of the reviews dated in it: what the
aspect, practitioner, service and summary tools answer with since/until, and compare_periods.

insights.json's records are all-time; a range's figures are recounted here, each with the ids of the reviews
it rests on, so anyone can check them. A per_review entry names a practitioner or service by id, or (as the
analysis may write it) as {id, sentiment}: sentiment is counted where the entry says it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .dataset import Dataset

GROUPS = ("aspects", "technicians", "services")
MAX_REVIEW_IDS = 50  # per record: the newest; `mention_count` says how many there are


@dataclass
class Tally:
    """One record's mentions within a range: sentiment counts (where known) and the reviews, newest first."""

    sentiments: Counter[str] = field(default_factory=Counter)
    positions: list[int] = field(default_factory=list)

    def figures(self, dataset: Dataset) -> dict[str, Any]:
        total = len(self.positions)
        counted = sum(self.sentiments.values())
        out: dict[str, Any] = {"mention_count": total}
        if counted:
            positive, negative = self.sentiments["positive"], self.sentiments["negative"]
            out |= {
                "positive_count": positive,
                "neutral_count": self.sentiments["neutral"],
                "negative_count": negative,
                "score": round((positive - negative) / counted, 3),
            }
        out["average_rating"] = (
            round(sum(dataset.ratings[p] for p in self.positions) / total, 2) if total else None
        )
        out["review_ids"] = [dataset.ids[p] for p in self.positions[:MAX_REVIEW_IDS]]
        return out


def _mentioned(entry: Any) -> tuple[str, str | None]:
    """(record id, sentiment or None) of one mention in a per_review list."""
    if isinstance(entry, str):
        return entry, None
    return entry["id"], entry.get("sentiment")


def tally(dataset: Dataset, lo: int, hi: int, groups: Iterable[str] = GROUPS) -> dict[str, dict[str, Tally]]:
    """Per group, per record id: its Tally over the reviews at positions [lo, hi)."""
    per_review = dataset.insights_doc["per_review"]
    found: dict[str, dict[str, Tally]] = {group: {} for group in groups}
    for pos in range(lo, hi):
        entry = per_review.get(dataset.ids[pos])
        if entry is None:
            continue
        for group, records in found.items():
            for mention in entry.get(group, ()):
                record_id, sentiment = _mentioned(mention)
                counted = records.setdefault(record_id, Tally())
                counted.positions.append(pos)
                if sentiment is not None:
                    counted.sentiments[sentiment] += 1
    return found


def record_tally(dataset: Dataset, group: str, record_id: str, positions: Sequence[int]) -> Tally:
    """One record's Tally over `positions` (the reviews mentioning it within a range, newest first)."""
    per_review = dataset.insights_doc["per_review"]
    counted = Tally(positions=list(positions))
    for pos in positions:
        for mention in per_review[dataset.ids[pos]].get(group, ()):
            found, sentiment = _mentioned(mention)
            if found == record_id and sentiment is not None:
                counted.sentiments[sentiment] += 1
    return counted


def period_head(dataset: Dataset, since: str | None, until: str | None) -> dict[str, Any]:
    """The range, its review count, average rating and count per star."""
    lo, hi = dataset.window(since, until)
    stars = Counter(dataset.ratings[lo:hi])
    count = hi - lo
    return {
        "since": since,
        "until": until,
        "review_count": count,
        "average_rating": round(sum(r * n for r, n in stars.items()) / count, 2) if count else None,
        "rating_counts": {str(star): stars.get(star, 0) for star in range(1, 6)},
    }


def labels(dataset: Dataset, group: str) -> Mapping[str, str]:
    """Record id -> its label (a practitioner's name), for the records of a group."""
    if group == "aspects":
        return {a["id"]: a["label"] for a in dataset.insights_doc["aspects"]}
    if group == "technicians":
        return {t["id"]: t["name"] for t in dataset.technicians.values()}
    named = {s["id"]: s["label"] for s in dataset.services.values()}
    return named | {s["id"]: s["label"] for s in dataset.business["services"]}


def period_summary(dataset: Dataset, since: str | None, until: str | None) -> dict[str, Any]:
    """The range's head and, per group, each record mentioned in it with its figures, most mentioned first."""
    lo, hi = dataset.window(since, until)
    out = period_head(dataset, since, until)
    for group, records in tally(dataset, lo, hi).items():
        named = labels(dataset, group)
        rows = [
            {"id": record_id, "label": named.get(record_id, record_id), **counted.figures(dataset)}
            for record_id, counted in records.items()
        ]
        out[group] = sorted(rows, key=lambda row: (-row["mention_count"], row["id"]))
    return out


MOVED = 5  # aspects listed by compare_periods: those whose score moved most


def compare(dataset: Dataset, current: tuple[str, str], previous: tuple[str, str]) -> dict[str, Any]:
    """Two ranges side by side: their heads, the change in rating and volume, and the aspects whose score
    moved most (mentioned in both), each with the newest review of the current range that shows the move."""
    heads = [period_head(dataset, *current), period_head(dataset, *previous)]
    tallies = [
        tally(dataset, *dataset.window(*span), groups=("aspects",))["aspects"] for span in (current, previous)
    ]
    named = labels(dataset, "aspects")
    moved = []
    for aspect_id in tallies[0].keys() & tallies[1].keys():
        now, before = (t[aspect_id].figures(dataset) for t in tallies)
        if "score" not in now or "score" not in before:
            continue
        change = round(now["score"] - before["score"], 3)
        mood = "negative" if change < 0 else "positive"
        quote = _quote(dataset, tallies[0][aspect_id].positions, aspect_id, mood)
        moved.append(
            {
                "id": aspect_id,
                "label": named.get(aspect_id, aspect_id),
                "score_change": change,
                "current": {k: v for k, v in now.items() if k != "review_ids"},
                "previous": {k: v for k, v in before.items() if k != "review_ids"},
                "example_review_id": quote,
            }
        )
    moved.sort(key=lambda row: (-abs(row["score_change"]), row["id"]))
    rating_change = None
    if heads[0]["average_rating"] is not None and heads[1]["average_rating"] is not None:
        rating_change = round(heads[0]["average_rating"] - heads[1]["average_rating"], 2)
    return {
        "current": heads[0],
        "previous": heads[1],
        "average_rating_change": rating_change,
        "review_count_change": heads[0]["review_count"] - heads[1]["review_count"],
        "aspects_moved": moved[:MOVED],
    }


def _quote(dataset: Dataset, positions: Sequence[int], aspect_id: str, mood: str) -> str | None:
    """The newest review among `positions` with a `mood` mention of the aspect and a text, else None."""
    per_review = dataset.insights_doc["per_review"]
    for pos in positions:
        if not dataset.texted[pos]:
            continue
        for mention in per_review[dataset.ids[pos]]["aspects"]:
            if mention["id"] == aspect_id and mention.get("sentiment") == mood:
                return dataset.ids[pos]
    return None
