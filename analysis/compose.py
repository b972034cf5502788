"""The FAQ answers, the summary and the pull quote: composed from counted figures and quoted sentences
of real reviews, never written freely (pure)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .english import month_name, plural
from .matcher import labels_by_group
from .review import ReviewAnalysis
from .thresholds import MARGIN, MIN_COUNT, trend_is_said

FAQ_GROUPS = ("aspects", "topics", "services", "problems")


def _pct(part: int, whole: int) -> int:
    return round(100 * part / whole) if whole else 0


def _verb(count: int, singular: str, plural: str) -> str:
    """The verb agreeing with a count: "1 review mentions", "2 reviews mention"."""
    return singular if count == 1 else plural


def pull_quote(analyses: Sequence[ReviewAnalysis]) -> dict[str, str] | None:
    """The most positive sentence of a 5-star review that may be quoted (quotes.pull_candidate); ties go to
    the newest review. None when no sentence qualifies."""
    best: tuple | None = None
    for analysis in analyses:
        if analysis.pull is None:
            continue
        score, text = analysis.pull
        key = (score, analysis.review["date"], analysis.review["id"])
        if best is None or key > best[0]:
            best = (key, text, analysis.review["id"])
    return None if best is None else {"text": best[1], "review_id": best[2]}


def _about(profile: Any, record_id: str) -> tuple[str, str] | None:
    """(group, label) of the record an FAQ's `about` names."""
    groups = labels_by_group(profile)
    for group in FAQ_GROUPS:
        for record in groups[group]:
            if record["id"] == record_id:
                return group, record["label"]
    return None


def _quote_for(
    analyses: Sequence[ReviewAnalysis], keys: list[tuple[str, str]], sentiment: str
) -> tuple[str, str] | None:
    """(sentence, review id): from the newest review counted with that sentiment for one of the records, its
    sentence the model rates that way most surely (quotes.best_quotes); None if no review has one."""
    for analysis in analyses:  # newest first
        for group, record_id in keys:
            decision = analysis.mentions.get(group, {}).get(record_id)
            if decision is None or decision.sentiment != sentiment:
                continue
            best = analysis.quotes.get((group, record_id, sentiment))
            if best is not None:
                return best[1], analysis.review["id"]
    return None


def faq_entry(
    question: str, about: Sequence[str], analyses: Sequence[ReviewAnalysis], profile: Any
) -> dict[str, Any] | None:
    """An answer from counts (reviews naming any of the records) and up to two quotes; None if none do."""
    found = [
        (group, record_id, label)
        for record_id in about
        if (hit := _about(profile, record_id))
        for group, label in [hit]
    ]
    keys = [(group, record_id) for group, record_id, _ in found]
    counts = {"positive": 0, "neutral": 0, "negative": 0}
    for analysis in analyses:
        sentiments = [analysis.mentions.get(g, {}).get(r) for g, r in keys]
        sentiments = [d.sentiment for d in sentiments if d is not None]
        if sentiments:  # one vote per review: its first record's mention in `about` order
            counts[sentiments[0]] += 1
    total = sum(counts.values())
    if not total:
        return None
    labels = " or ".join(label.lower() for _, _, label in found)
    mention = _verb(total, "mentions", "mention")
    answer = (
        f"{plural(total, 'review')} {mention} {labels}: {counts['positive']} positive, "
        f"{counts['neutral']} neutral, {counts['negative']} negative."
    )
    majority = max(counts, key=lambda s: (counts[s], s == "positive", s == "neutral"))
    quotes = [_quote_for(analyses, keys, majority)]
    minority = "negative" if majority == "positive" else "positive"
    if counts[minority]:
        quotes.append(_quote_for(analyses, keys, minority))
    review_ids = []
    for quote, sentiment in zip(quotes, (majority, minority)):
        if quote is not None:  # each quote says which side it stands for
            answer += f" A {sentiment} review said: “{quote[0]}”"
            review_ids.append(quote[1])
    return {"question": question, "answer": answer, "review_ids": review_ids}


def rating_faq(business_name: str, analyses: Sequence[ReviewAnalysis]) -> dict[str, Any] | None:
    """How customers rate the business, from the star ratings of every analysed review."""
    total = len(analyses)
    if not total:
        return None
    ratings = [a.review["rating"] for a in analyses]
    high, low = sum(r >= 4 for r in ratings), sum(r <= 2 for r in ratings)
    mean = sum(ratings) / total
    return {
        "question": f"How do customers rate {business_name}?",
        "answer": (
            f"{plural(total, 'review')} {_verb(total, 'averages', 'average')} {mean:.1f} of 5 stars; "
            f"{high} ({_pct(high, total)}%) {_verb(high, 'gives', 'give')} 4 or 5 stars and "
            f"{low} ({_pct(low, total)}%) {_verb(low, 'gives', 'give')} 1 or 2."
        ),
        "review_ids": [],
    }


def _mentioned(aspect: Mapping[str, Any]) -> str:
    """An aspect in "Most mentioned": its count, and its positive share only from MIN_COUNT mentions on, as
    the pages show shares ("billing and insurance (1, 0% positive)" said one complaint)."""
    if aspect["mention_count"] < MIN_COUNT:
        return f"{aspect['label'].lower()} ({aspect['mention_count']})"
    return f"{aspect['label'].lower()} ({aspect['mention_count']}, {aspect['positive_pct']:g}% positive)"


def summary(
    analyses: Sequence[ReviewAnalysis],
    aspects: Sequence[Mapping[str, Any]],
    technicians: Sequence[Mapping[str, Any]],
    months: Sequence[Mapping[str, Any]],
    trend: Mapping[str, Any] | None,
    overall: Mapping[str, Any],
) -> str:
    """A few sentences, each stating figures counted above."""
    total = len(analyses)
    if not total:
        return ""
    mean = sum(a.review["rating"] for a in analyses) / total
    first, last = month_name(months[0]["month"]), month_name(months[-1]["month"])
    period = f"in {first}" if first == last else f"from {first} to {last}"
    parts = [
        f"{plural(total, 'review')} {period}, averaging {mean:.1f} of 5 stars; "
        f"{overall['positive_pct']:g}% positive, {overall['negative_pct']:g}% negative."
    ]
    mentioned = sorted(
        (a for a in aspects if a["mention_count"]), key=lambda a: (-a["mention_count"], a["id"])
    )
    if mentioned:
        listed = ", ".join(_mentioned(aspect) for aspect in mentioned[:3])
        parts.append(f"Most mentioned: {listed}.")
        for field, words, noun in (
            ("positive_count", "Most praised", "positive mention"),
            ("negative_count", "Most criticised", "negative mention"),
        ):
            leader = clear_leader(mentioned, field)
            if leader is not None:
                parts.append(f"{words}: {leader['label'].lower()} ({plural(leader[field], noun)}).")
    top = clear_leader(technicians, "mention_count")
    if top is not None:  # staff are often named in plain narration: the positive share alone reads lukewarm
        parts.append(
            f"Most named: {top['name']} ({top['mention_count']} reviews, "
            f"{_pct(top['positive_count'], top['mention_count'])}% positive, "
            f"{_pct(top['negative_count'], top['mention_count'])}% negative)."
        )
    if trend_is_said(months, trend):
        parts.append(
            f"Ratings over the last {trend['window_months']} months: {trend['direction']} "
            f"({round(trend['slope_per_month'], 2) or 0.0:+.2f} stars a month)."
        )
    return " ".join(parts)


def clear_leader(records: Sequence[Mapping[str, Any]], field: str) -> Mapping[str, Any] | None:
    """The record with the most `field`, if it has MIN_COUNT or more and MARGIN more than the next."""
    ranked = sorted(records, key=lambda r: (-r[field], r["id"]))
    if not ranked or ranked[0][field] < MIN_COUNT:
        return None
    runner_up = ranked[1][field] if len(ranked) > 1 else 0
    return ranked[0] if ranked[0][field] - runner_up >= MARGIN else None
