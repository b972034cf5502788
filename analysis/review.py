"""One review analysed: its sentences scored, the records it names, and each mention's sentiment with the
rule that decided it (what --explain prints)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .lexicon import CLAUSE_BREAKS, Scorer, compound, label
from .matcher import Match, Matcher
from .text import Folded, fold_sentence, split_sentences

STAR_LABELS = {1: "negative", 2: "negative", 3: "neutral", 4: "positive", 5: "positive"}
SENTIMENT_GROUPS = (
    "aspects",
    "services",
    "problems",
    "service_areas",
    "topics",
)  # stars decide where words don't
OWN_VALENCE_GROUPS = frozenset(
    {"aspects"}
)  # their terms' own words count ("dirty"); names and problems don't


@dataclass(frozen=True)
class ScoredSentence:
    """A sentence, its folded tokens, each token's valence, and the records it names."""

    text: str
    folded: Folded
    values: tuple[float, ...]
    score: float
    matches: tuple[Match, ...]

    def clause_score(self, match: Match) -> float:
        """The score of the clause (between commas, semicolons and contrast words) holding a match."""
        tokens = self.folded.tokens
        start = match.first
        while start > 0 and tokens[start - 1] not in CLAUSE_BREAKS:
            start -= 1
        end = match.last + 1
        while end < len(tokens) and tokens[end] not in CLAUSE_BREAKS:
            end += 1
        return compound(sum(self.values[start:end]), tokens[start:end].count("!"))


@dataclass(frozen=True)
class Decision:
    """One mention's sentiment and why."""

    sentiment: str
    rule: str
    score: float = 0.0


@dataclass
class ReviewAnalysis:
    """Everything the aggregates and --explain need from one review."""

    review: Mapping[str, Any]
    sentences: list[ScoredSentence]
    text_score: float  # mean sentence score; 0 without text
    score: float  # -1..1: stars and text together
    sentiment: str
    mentions: dict[str, dict[str, Decision]] = field(default_factory=dict)  # group -> id -> decision
    phrases: dict[str, list[str]] = field(default_factory=dict)  # aspect id -> phrases
    quotes: dict[tuple[str, str], str] = field(default_factory=dict)  # (group, id) -> first sentence


def score_sentence(text: str, matcher: Matcher, scorer: Scorer) -> ScoredSentence:
    folded = fold_sentence(text)
    matches = tuple(matcher.matches(folded))
    silenced = frozenset(
        i for m in matches if m.group not in OWN_VALENCE_GROUPS for i in range(m.first, m.last + 1)
    )
    values = scorer.contributions(folded.tokens, silenced)
    return ScoredSentence(
        text, folded, tuple(values), compound(sum(values), folded.tokens.count("!")), matches
    )


def review_sentiment(rating: int, text_score: float, has_text: bool) -> tuple[float, str]:
    """A review's score (stars scaled to -1..1, averaged with its text) and label (stars; text breaks 3)."""
    stars = (rating - 3) / 2
    score = (stars + text_score) / 2 if has_text else stars
    sentiment = STAR_LABELS[rating]
    if rating == 3 and has_text:
        sentiment = label(text_score)
    return score, sentiment


def _decide(group: str, scores: list[tuple[float, float]], rating: int) -> Decision:
    """The clause decides; a neutral clause defers to its sentence; a neutral sentence to the stars, except
    for people, who are judged by the words about them only."""
    clause_total = sum(clause for clause, _ in scores)
    if label(clause_total) != "neutral":
        return Decision(label(clause_total), "clause words", round(clause_total, 3))
    sentence_total = sum(sentence for _, sentence in scores)
    if label(sentence_total) != "neutral":
        return Decision(label(sentence_total), "sentence words", round(sentence_total, 3))
    if group in SENTIMENT_GROUPS:
        return Decision(STAR_LABELS[rating], f"neutral words; {rating} stars decide", 0.0)
    return Decision("neutral", "neutral words about them (stars never decide for people)", 0.0)


def _phrase(sentence: ScoredSentence, match: Match) -> str:
    """An aspect's phrase: its term, with the word before it when that word carries sentiment."""
    tokens = sentence.folded.tokens
    term = " ".join(tokens[match.first : match.last + 1])
    if (
        match.first > 0
        and sentence.values[match.first - 1] != 0
        and sentence.values[match.first : match.last + 1] == (0.0,) * (match.last + 1 - match.first)
    ):
        return f"{tokens[match.first - 1]} {term}"
    return term


def analyse_review(review: Mapping[str, Any], matcher: Matcher, scorer: Scorer) -> ReviewAnalysis:
    sentences = [score_sentence(text, matcher, scorer) for text in split_sentences(review["text"])]
    text_score = sum(s.score for s in sentences) / len(sentences) if sentences else 0.0
    score, sentiment = review_sentiment(review["rating"], text_score, bool(sentences))
    evidence: dict[tuple[str, str], list[tuple[float, float]]] = {}
    result = ReviewAnalysis(review, sentences, text_score, score, sentiment)
    for sentence in sentences:
        for match in sentence.matches:
            key = (match.group, match.id)
            evidence.setdefault(key, []).append((sentence.clause_score(match), sentence.score))
            result.quotes.setdefault(key, sentence.text)
            if match.group == "aspects":
                result.phrases.setdefault(match.id, []).append(_phrase(sentence, match))
    for (group, record_id), scores in evidence.items():
        result.mentions.setdefault(group, {})[record_id] = _decide(group, scores, review["rating"])
    return result


def apply_corrections(analysis: ReviewAnalysis, corrections: list[Mapping[str, Any]]) -> None:
    """business.toml's [[corrections]] for this review: suppress a mention, or set its sentiment."""
    for correction in corrections:
        group, record_id = correction["group"], correction["id"]
        if correction.get("suppress"):
            analysis.mentions.get(group, {}).pop(record_id, None)
        elif "sentiment" in correction:
            analysis.mentions.setdefault(group, {})[record_id] = Decision(
                correction["sentiment"], "corrected in business.toml"
            )
