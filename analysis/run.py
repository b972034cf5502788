"""`reviewsd analyze`: reviews.json + business.toml -> insights.json, and --explain for one review."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..authoring.files import (
    dumps,
    read_json,
    utc_timestamp,
    write_atomically,
)
from ..authoring.profile import Profile
from ..authoring.schemas import schema_errors
from ..reviews.files import collector_paused
from ..reviews.problems import INSIGHTS_FILE, REVIEWS_FILE
from . import aggregate, compose
from .batch import AnalysisError, analyse_reviews
from .explain import format_explanation

METHOD_VERSION = "3.13"  # 3.13: 3.8's code trained on corpus rounds 1 to 40 (history: docs/analysis.md)
EXPLAIN_REASONS = 4  # features --explain lists per decision
MODEL = (
    f"reviewsd-model {METHOD_VERSION}: linear models trained on reviewsd's own labelled corpus (aspect "
    "detection heads with the profile's terms, clause polarity with negation, contrast, VADER 3.3.2 lexicon "
    "scores and the stars as features), applied in pure Python"
)


# The word for the people reviews name, by the trade the profile's aspects belong to (the first found).
PEOPLE_LABELS = (
    ({"food", "drinks", "ambience"}, "Staff"),
    ({"punctuality", "quality-of-work", "professionalism"}, "Technicians"),
    ({"customer-service", "selection", "quality"}, "Staff"),
)
DEFAULT_PEOPLE_LABEL = "Practitioners"


def people_label(profile: Profile) -> str:
    """[publish] people_label, else the word the profile's trade uses: a restaurant's "Staff"."""
    if profile.publish.get("people_label"):
        return profile.publish["people_label"]
    ids = {aspect["id"] for aspect in profile.aspects}
    return next((word for trade, word in PEOPLE_LABELS if ids & trade), DEFAULT_PEOPLE_LABEL)


def build_insights(
    reviews_doc: Mapping[str, Any], profile: Profile, generated_at: str, jobs: int = 1
) -> dict[str, Any]:
    """insights.json for these reviews: the same input gives the same output, but for `generated_at`, with
    any number of jobs."""
    analyses = analyse_reviews(reviews_doc["reviews"], profile, jobs=jobs, for_insights=True)
    show_people = profile.publish.get("people", True)
    if not show_people:  # [publish] people = false: no per-person figure anywhere, per_review included
        for analysis in analyses:
            analysis.mentions.pop("technicians", None)
    tallies = aggregate.tally(analyses)
    aspects = aggregate.aspect_records(analyses, profile, tallies)
    entities = {
        group: aggregate.entity_records(profile, group, tallies)
        if show_people or group != "technicians"
        else []
        for group in ("technicians", "services", "problems", "service_areas")
    }
    months = aggregate.monthly(analyses)
    trend = aggregate.trend(months) if profile.publish.get("trend", True) else None
    overall = aggregate.overall_sentiment(analyses)
    dates = [a.review["date"] for a in analyses]
    faq = [compose.rating_faq(reviews_doc["business"]["name"], analyses)]
    faq += [compose.faq_entry(entry["question"], entry["about"], analyses, profile) for entry in profile.faq]
    return {
        "version": profile.taxonomy_version,
        "generated_at": generated_at,
        "model": MODEL,
        "review_count": len(analyses),
        "date_range": {"earliest": min(dates, default=None), "latest": max(dates, default=None)},
        "overall_sentiment": overall,
        "aspects": aspects,
        "entities": entities,
        "topics": aggregate.entity_records(profile, "topics", tallies),
        "temporal": {"monthly": months, "trend": trend},
        "per_review": aggregate.per_review(analyses, profile),
        "faq": [entry for entry in faq if entry is not None],
        "summary": compose.summary(analyses, aspects, entities["technicians"], months, trend, overall),
        "people_label": people_label(profile),
        "pull_quote": compose.pull_quote(analyses),
    }


def _read_reviews(data_dir: Path) -> dict[str, Any]:
    path = Path(data_dir) / REVIEWS_FILE
    try:
        doc = read_json(path)
    except FileNotFoundError:
        raise AnalysisError(f"{path}: not found; run `reviewsd import FILE...` first") from None
    except (OSError, ValueError) as error:
        raise AnalysisError(f"{path}: cannot be read: {error}") from None
    problems = schema_errors("reviews.schema.json", doc)
    if problems:
        raise AnalysisError(f"{path}: not a valid reviews.json ({'; '.join(problems)}); see `reviewsd check`")
    return doc


def analyze_dir(data_dir: Path, profile: Profile, jobs: int = 1) -> str:
    """Write DIR/insights.json from DIR/reviews.json, analysing in up to `jobs` processes; the one line to
    print."""
    reviews_doc = _read_reviews(data_dir)
    services = {s["id"] for s in reviews_doc["business"]["services"]}
    areas = {a["id"] for a in reviews_doc["business"]["service_areas"]}
    missing = [s["id"] for s in profile.services if s["id"] not in services]
    missing += [a["id"] for a in profile.service_areas if a["id"] not in areas]
    if missing:
        raise AnalysisError(
            f"{Path(data_dir) / REVIEWS_FILE}: its business lacks {', '.join(missing)} from "
            "business.toml; run `reviewsd import` (with no files it rewrites the business block)"
        )
    # Analysing makes no reference cycles (a collection after build_insights frees nothing), but each pass
    # of the collector walks every analysis made so far: 10,000 reviews in 4.45 s with it, 3.55 s without
    # (alternating runs). Only the offline command pauses it: the server builds insights beside other threads.
    with collector_paused():
        insights = build_insights(reviews_doc, profile, utc_timestamp(), jobs)
    problems = schema_errors("insights.schema.json", insights)
    if problems:  # our bug, not the user's: say so rather than write a file the server refuses
        raise AnalysisError(f"internal error: the insights do not match the schema: {'; '.join(problems)}")
    write_atomically(Path(data_dir) / INSIGHTS_FILE, dumps(insights))
    mentioned = sum(1 for entry in insights["per_review"].values() if entry["aspects"])
    return (
        f"{Path(data_dir) / INSIGHTS_FILE}: {insights['review_count']} reviews analysed, {mentioned} mention "
        f"an aspect; overall score {insights['overall_sentiment']['score']:+.3f}"
    )


def explain_review(data_dir: Path, profile: Profile, review_id: str) -> str:
    """What --explain prints: per sentence the matched terms and scores, per mention the deciding rule."""
    reviews_doc = _read_reviews(data_dir)
    review = next((r for r in reviews_doc["reviews"] if r["id"] == review_id), None)
    if review is None:
        raise AnalysisError(f"{Path(data_dir) / REVIEWS_FILE}: no review with id {review_id}")
    [analysis] = analyse_reviews([review], profile, reasons=EXPLAIN_REASONS) or [None]
    if analysis is None:
        return f"review {review_id} is hidden by business.toml's hide_reviews\n"
    return format_explanation(analysis)
