"""Small, valid data sets built from simple review specs, for tests.

`make_docs(specs)` returns a (reviews_doc, insights_doc) pair that passes the
schemas and every cross-file rule, whatever the specs; `write_docs` puts them
in a directory the way the data pipeline would.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Sequence

from hypothesis import strategies as st

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
TECHNICIANS = [
    {"id": "dr-maya-patel", "name": "Dr. Maya Patel", "label": "Dr. Maya Patel", "role": "Chiropractor"},
    {
        "id": "dr-sofia-ramirez",
        "name": "Dr. Sofía Ramírez",
        "label": "Dr. Sofía Ramírez",
        "role": "Chiropractor",
    },
    {"id": "liam-oconnor", "name": "Liam O'Connor", "label": "Liam O'Connor", "role": "Massage therapist"},
]
SERVICES = [
    {"id": "spinal-adjustment", "label": "Spinal adjustment", "description": "Manual adjustment."},
    {"id": "massage-therapy", "label": "Massage therapy", "description": "Therapeutic massage."},
    {"id": "prenatal-care", "label": "Prenatal chiropractic care", "description": "Care in pregnancy."},
]
AREAS = [{"id": "riverbend", "label": "Riverbend"}, {"id": "old-town", "label": "Old Town"}]
ASPECTS = [("pain-relief", "Pain relief"), ("wait-time", "Wait time")]


def ulid(n: int, date: str = "2025-01-01") -> str:
    """A valid, distinct ULID-shaped id for the n-th review."""
    digits = []
    value = n * 10**9 + int(date.replace("-", ""))
    for _ in range(25):
        digits.append(CROCKFORD[value % 32])
        value //= 32
    return "0" + "".join(reversed(digits))


@dataclass
class Spec:
    rating: int = 5
    date: str = "2025-01-01"
    text: str | None = "Great care."
    technicians: Sequence[str] = ()
    services: Sequence[str] = ()
    reply: bool = False
    id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def make_review(index: int, spec: Spec) -> dict[str, Any]:
    return {
        "id": spec.id or ulid(index, spec.date),
        "author": f"Patient {index}",
        "author_avatar_url": None,
        "rating": spec.rating,
        "date": spec.date,
        "text": spec.text,
        "source": "google",
        "source_url": None,
        "owner_reply": {"text": "Thank you!", "date": spec.date} if spec.reply else None,
        "verified": True,
        **spec.extra,
    }


def _sentiment(rating: int) -> str:
    return "positive" if rating >= 4 else "neutral" if rating == 3 else "negative"


def _entity(record: dict[str, Any], mentions: list[str], sentiments: dict[str, str]) -> dict[str, Any]:
    ids = [rid for rid in mentions]
    counts = {s: sum(1 for rid in ids if sentiments[rid] == s) for s in ("positive", "neutral", "negative")}
    total = len(ids)
    return {
        **record,
        "mention_count": total,
        "positive_count": counts["positive"],
        "neutral_count": counts["neutral"],
        "negative_count": counts["negative"],
        "score": round((counts["positive"] - counts["negative"]) / total, 3) if total else 0,
        "example_review_ids": ids[:3],
    }


def make_docs(specs: Sequence[Spec], generated_at: str = "2026-11-15T06:00:00Z") -> tuple[dict, dict]:
    reviews = [make_review(i, spec) for i, spec in enumerate(specs)]
    reviews.sort(key=lambda r: (r["date"], r["id"]), reverse=True)
    by_id = {r["id"]: (r, spec) for r, spec in zip([make_review(i, s) for i, s in enumerate(specs)], specs)}
    ratings = [r["rating"] for r in reviews]
    reviews_doc = {
        "business": {
            "id": "test-clinic",
            "name": "Test Clinic & Spine",
            "category": "Chiropractor",
            "description": "A clinic for tests.",
            "url": "https://clinic.example",
            "telephone": "+1 503 555 0100",
            "address": {
                "street_address": "1 Main St",
                "locality": "Riverbend",
                "region": "OR",
                "postal_code": "97000",
                "country": "US",
            },
            "geo": {"latitude": 45.5, "longitude": -122.6},
            "opening_hours": [{"days": ["mo", "tu"], "opens": "08:00", "closes": "18:00"}],
            "service_areas": AREAS,
            "services": SERVICES,
        },
        "aggregate_rating": {
            "rating_value": round(sum(ratings) / len(ratings), 2) if ratings else 0,
            "review_count": len(ratings),
            "best_rating": 5,
            "worst_rating": 1,
            "distribution": {str(s): ratings.count(s) for s in range(1, 6)},
        },
        "generated_at": generated_at,
        "reviews": reviews,
    }
    sentiments = {rid: _sentiment(r["rating"]) for rid, (r, _) in by_id.items()}
    per_review = {
        rid: {
            "aspects": [{"id": "pain-relief", "sentiment": sentiments[rid]}] if r["text"] else [],
            "technicians": list(dict.fromkeys(spec.technicians)),
            "services": list(dict.fromkeys(spec.services)),
            "problems": [],
            "service_areas": [],
            "topics": [],
        }
        for rid, (r, spec) in by_id.items()
    }

    def mentioning(group: str, entity_id: str) -> list[str]:
        return [rid for rid, m in per_review.items() if entity_id in m[group]]

    aspects = []
    for aspect_id, label in ASPECTS:
        ids = [rid for rid, m in per_review.items() if any(a["id"] == aspect_id for a in m["aspects"])]
        record = _entity({"id": aspect_id, "label": label}, ids, sentiments)
        record["positive_pct"] = round(100 * record["positive_count"] / len(ids), 1) if ids else 0
        record["top_phrases"] = []
        aspects.append(record)
    dates = sorted(r["date"] for r in reviews)
    insights_doc = {
        "version": 1,
        "generated_at": generated_at,
        "model": "test",
        "review_count": len(per_review),
        "date_range": {"earliest": dates[0] if dates else None, "latest": dates[-1] if dates else None},
        "overall_sentiment": {"score": 0.5, "positive_pct": 80, "neutral_pct": 10, "negative_pct": 10},
        "aspects": aspects,
        "entities": {
            "technicians": [_entity(t, mentioning("technicians", t["id"]), sentiments) for t in TECHNICIANS],
            "services": [
                _entity({"id": s["id"], "label": s["label"]}, mentioning("services", s["id"]), sentiments)
                for s in SERVICES
            ],
            "problems": [],
            "service_areas": [_entity(dict(a), [], sentiments) for a in AREAS],
        },
        "topics": [],
        "temporal": {
            "monthly": [],
            "trend": {"direction": "stable", "slope_per_month": 0, "window_months": 12},
        },
        "per_review": per_review,
        "faq": [],
        "summary": "Test summary.",
        "pull_quote": None,
    }
    return reviews_doc, insights_doc


def write_docs(data_dir: Path, reviews_doc: Any, insights_doc: Any) -> None:
    """Write both files atomically (temp file, then rename), as the pipeline should."""
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, doc in (("insights.json", insights_doc), ("reviews.json", reviews_doc)):
        tmp = data_dir / f".{name}.tmp"
        tmp.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
        os.replace(tmp, data_dir / name)


def plain(value: Any) -> Any:
    """A dataset attribute as plain values, so that two datasets compare with ==."""
    from array import array

    from reviewsd_app.reviews.dataset import EncodedMentions, EncodedReviews

    if isinstance(value, EncodedReviews):
        return [plain(review) for review in value]
    if isinstance(value, EncodedMentions):
        return {key: plain(entry) for key, entry in value.items()}
    if isinstance(value, array):
        return value.tolist()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def dataset_state(dataset: Any) -> dict[str, Any]:
    """Everything a Dataset holds, as plain values (but what Dataset.derived made from it, and its lock)."""
    return {name: plain(value) for name, value in vars(dataset).items() if not name.startswith("_derived")}


# Any small valid review, for the property tests.
SPEC_STRATEGY = st.builds(
    Spec,
    rating=st.integers(1, 5),
    date=st.dates(date(2020, 1, 1), date(2026, 12, 31)).map(date.isoformat),
    text=st.one_of(st.none(), st.text(min_size=1, max_size=30)),
    technicians=st.lists(st.sampled_from([t["id"] for t in TECHNICIANS]), max_size=2, unique=True),
    services=st.lists(st.sampled_from([s["id"] for s in SERVICES]), max_size=2, unique=True),
    reply=st.booleans(),
)
