"""`reviewsd analyze`: reviews.json + business.toml -> insights.json, and --explain for one review."""

from __future__ import annotations

from collections import defaultdict
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
from ..reviews.problems import INSIGHTS_FILE, REVIEWS_FILE
from . import aggregate, compose
from .lexicon import Scorer
from .matcher import Matcher, labels_by_group
from .review import ReviewAnalysis, ScoredSentence, analyse_review, apply_corrections

METHOD_VERSION = "1.0"
MODEL = (
    f"reviewsd-lexicon {METHOD_VERSION}: VADER 3.3.2 lexicon, clause-level scoring with negation and "
    "business.toml overrides, stars where words are neutral"
)


class AnalysisError(ValueError):
    """The inputs cannot be analysed: the message names the file and what is wrong."""


def _check_corrections(profile: Profile) -> None:
    known = {group: {r["id"] for r in records} for group, records in labels_by_group(profile).items()}
    for index, correction in enumerate(profile.corrections):
        if correction["id"] not in known[correction["group"]]:
            raise AnalysisError(
                f"business.toml: corrections[{index}]: {correction['id']!r} is not one of the "
                f"profile's {correction['group']}"
            )


def analyse_reviews(reviews: list[Mapping[str, Any]], profile: Profile) -> list[ReviewAnalysis]:
    """Every review not hidden, analysed and corrected, newest first."""
    _check_corrections(profile)
    matcher, scorer = Matcher(profile), Scorer.for_overrides(profile.sentiment_overrides)
    corrections: dict[str, list] = defaultdict(list)
    for correction in profile.corrections:
        corrections[correction["review_id"]].append(correction)
    analyses = []
    for review in reviews:
        if review["id"] in profile.hide_reviews:
            continue
        analysis = analyse_review(review, matcher, scorer)
        apply_corrections(analysis, corrections.get(review["id"], []))
        analyses.append(analysis)
    return aggregate.newest_first(analyses)


def build_insights(reviews_doc: Mapping[str, Any], profile: Profile, generated_at: str) -> dict[str, Any]:
    """insights.json for these reviews: the same input gives the same output, but for `generated_at`."""
    analyses = analyse_reviews(reviews_doc["reviews"], profile)
    tallies = aggregate.tally(analyses)
    aspects = aggregate.aspect_records(analyses, profile, tallies)
    entities = {
        group: aggregate.entity_records(profile, group, tallies)
        for group in ("technicians", "services", "problems", "service_areas")
    }
    months = aggregate.monthly(analyses)
    trend = aggregate.trend(months)
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


def analyze_dir(data_dir: Path, profile: Profile) -> str:
    """Write DIR/insights.json from DIR/reviews.json; the one line to print."""
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
    insights = build_insights(reviews_doc, profile, utc_timestamp())
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
    [analysis] = analyse_reviews([review], profile) or [None]
    if analysis is None:
        return f"review {review_id} is hidden by business.toml's hide_reviews\n"
    return format_explanation(analysis, Scorer.for_overrides(profile.sentiment_overrides))


def _word_list(sentence: ScoredSentence, scorer: Scorer | None) -> str:
    """The words that carry sentiment; an override shows as its whole phrase."""
    tokens, words = sentence.folded.tokens, []
    for i, value in enumerate(sentence.values):
        if value:
            override = scorer.override_at(tokens, i) if scorer else None
            words.append(f"{' '.join(override[0]) if override else tokens[i]} {value:+.2f}")
    return ", ".join(words) or "(none with sentiment)"


def format_explanation(analysis: ReviewAnalysis, scorer: Scorer | None = None) -> str:
    review = analysis.review
    lines = [f"review {review['id']}: {review['rating']} stars, {review['date']}, {review['source']}"]
    if not analysis.sentences:
        lines.append("  no text: the stars alone give the review's sentiment; no mentions")
    for number, sentence in enumerate(analysis.sentences, 1):
        lines.append(f"sentence {number}: {sentence.text!r} score {sentence.score:+.3f}")
        lines.append(f"  words: {_word_list(sentence, scorer)}")
        for match in sentence.matches:
            lines.append(
                f"  term {match.term!r} -> {match.group} {match.id}, "
                f"clause score {sentence.clause_score(match):+.3f}"
            )
    lines.append(
        f"review sentiment: {analysis.sentiment} (score {analysis.score:+.3f}: stars "
        f"{(review['rating'] - 3) / 2:+.2f}, text {analysis.text_score:+.3f})"
    )
    for group, decisions in analysis.mentions.items():
        for record_id, decision in decisions.items():
            lines.append(
                f"  {group} {record_id}: {decision.sentiment} ({decision.rule}"
                + (f", {decision.score:+.3f})" if decision.score else ")")
            )
    return "\n".join(lines) + "\n"
