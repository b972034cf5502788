"""One review analysed: its sentences read, the records it names, and each mention's sentiment with what
decided it (what --explain prints).

Aspects that the shipped model has a head for are detected by that head (which also weighs the profile's
terms for them); other aspects, and services, problems, areas and topics, by their terms; staff by their
names, unless the words around a name say it is someone else ("my friend Tom"). Every mention's sentiment
comes from the polarity model over the clause around it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from .features import (
    PRONOUN_PERSON,
    detection_features,
    names_replaced,
    polarity_features,
    pronoun_index,
    staff_context,
    staff_reference_features,
    tokens_of,
)
from .lexicon import Scorer, compound, label
from .matcher import Match, Matcher
from .model import Model, Polarity
from .text import Folded, fold_sentence, split_sentences

STAR_LABELS = {1: "negative", 2: "negative", 3: "neutral", 4: "positive", 5: "positive"}
# Their terms' own words count for the lexicon ("dirty"); names and problems count 0.
OWN_VALENCE_GROUPS = frozenset({"aspects"})
STAFF_GROUP = "technicians"
STAFF_REFERENCE_BAR = 0.5  # a staff name means that staff member when the model says so above this
# How much a mention counts in its record's decision (aggregate_mentions). The labels count every mention
# alike, so that a praise and a complaint tie (neutral), and so does analyze, but for a mention the model is
# unsure talks about the record: a preset aspect's term under its head's bar, or its head under SURE_BAR.
# Those count half. Aspect polarity on the corpus (5-fold, fixed settings, folds 1 to 5): weighing each
# mention by its head's probability (model 3.4) 0.872 / 0.880 / 0.877 / 0.879 / 0.878; every model-found
# mention 1, 0.878 / 0.887 / 0.885 / 0.888 / 0.885; 1 from 0.75 (chosen on the first fold; 0.6 to 0.8 are
# within 0.001 of it on the other four), 0.881 / 0.888 / 0.886 / 0.890 / 0.887. A staff member's "he" or
# "she" counts 1 too: a half up to model 3.4, chosen when people polarity was the same either way; now 1 is
# +0.004 to +0.007 a fold.
SURE_BAR = 0.75
UNSURE_WEIGHT = 0.5


@dataclass(frozen=True)
class ScoredSentence:
    """A sentence: folded, its tokens as the model sees them, each token's lexicon valence, the lexicon's
    score, and the records the profile's terms name in it."""

    text: str
    folded: Folded
    tokens: tuple[str, ...]
    values: tuple[float, ...]
    score: float
    matches: tuple[Match, ...]


@dataclass(frozen=True)
class Mention:
    """One sentence's mention of a record: how it was found, the clause read, and its polarity."""

    group: str
    id: str
    sentence: int  # index in ReviewAnalysis.sentences
    found_by: str  # "model" (with its probability), "term 'x'", "name 'x'"
    span: tuple[int, int] | None  # the tokens that name it; None when only the model found it
    polarity: Polarity
    sure: float = 1.0  # how sure the model is that the sentence is about the record: its head's probability
    by_pronoun: bool = False  # a staff member's "he"/"she" after a sentence naming them: never quoted

    @property
    def weight(self) -> float:
        """How much it counts in its record's decision: 1, or half when the model is unsure of it."""
        return 1.0 if self.sure >= SURE_BAR else UNSURE_WEIGHT


@dataclass(frozen=True)
class StaffBefore:
    """The role words of the staff the last sentence naming any named, and the staff the sentence just
    before named, with the pronouns business.toml gives them (None where it gives none): who a "he" or
    "she" may mean."""

    roles: tuple[tuple[str, ...], ...] = ()
    named: tuple[tuple[str, str | None], ...] = ()

    def after(
        self,
        named_ids: list[str],
        roles: Mapping[str, tuple[str, ...]],
        pronouns: Mapping[str, str] | None = None,
    ) -> StaffBefore:
        """What the next sentence sees once a sentence named these staff (in order): them; when it named
        none, the same role words and nobody for a "he" or "she". The guideline labels a pronoun only in
        the sentence right after the name (docs/corpus.md); read further on, "She was right." three
        sentences later counted for her (people polarity on the corpus, 5-fold: +0.003)."""
        if not named_ids:
            return StaffBefore(self.roles, ())
        named_roles = tuple(roles[i] for i in named_ids if i in roles)
        declared = pronouns or {}
        return StaffBefore(named_roles, tuple((i, declared.get(i)) for i in named_ids))

    def meant_by(self, pronoun: str) -> str | None:
        """The staff member a "he" or "she" means: the one the sentence before named, unless business.toml
        gives them other pronouns; of several it named, the one business.toml gives this pronoun, if only
        one has it ("Jen booked me with Dr. Hale. He was great.": Dr. Hale, if he is "he" and Jen is not).
        Of the corpus's 309 sentences with a "he" or "she" right after one naming two staff, the labels give
        it to the last named in 121, the first in 57 and neither in 130: no order alone would do."""
        person = PRONOUN_PERSON.get(pronoun)
        if len(self.named) == 1:
            staff_id, declared = self.named[0]
            return staff_id if declared in (None, person) else None
        declaring = [staff_id for staff_id, declared in self.named if declared == person]
        return declaring[0] if len(declaring) == 1 else None


@dataclass(frozen=True)
class Decision:
    """A record's sentiment in one review, and why."""

    sentiment: str
    rule: str
    confidence: float = 0.0


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
    found: list[Mention] = field(default_factory=list)  # every mention, in sentence order
    rejected: list[tuple[int, Match, float]] = field(default_factory=list)  # names read as someone else

    # Chosen once it is analysed (quotes.py), so the insights need not keep its sentences:
    # (group, record id, sentiment) -> (how sure, sentence), and its pull quote candidate (score, sentence)
    quotes: dict[tuple[str, str, str], tuple[float, str]] = field(default_factory=dict)
    pull: tuple[float, str] | None = None

    def for_insights(self) -> ReviewAnalysis:
        """A copy with only what the insights read: its review, decisions, phrases, quotes and scores; not its
        sentences, the mentions found in them or the names rejected (what --explain reads)."""
        return replace(self, sentences=[], found=[], rejected=[])


def score_sentence(text: str, matcher: Matcher, scorer: Scorer) -> ScoredSentence:
    folded = fold_sentence(text)
    matches = tuple(matcher.matches(folded))
    silenced = frozenset(
        i for m in matches if m.group not in OWN_VALENCE_GROUPS for i in range(m.first, m.last + 1)
    )
    values = scorer.contributions(folded.tokens, silenced)
    return ScoredSentence(
        text,
        folded,
        tuple(tokens_of(text, folded.tokens)),
        tuple(values),
        compound(sum(values), folded.tokens.count("!")),
        matches,
    )


def review_sentiment(rating: int, text_score: float, has_text: bool) -> tuple[float, str]:
    """A review's score (stars scaled to -1..1, averaged with its text) and label (stars; text breaks 3)."""
    stars = (rating - 3) / 2
    score = (stars + text_score) / 2 if has_text else stars
    sentiment = STAR_LABELS[rating]
    if rating == 3 and has_text:
        sentiment = label(text_score)
    return score, sentiment


def aggregate_mentions(sentiments: list[str], weights: list[float] | None = None) -> str:
    """A record's sentiment in a review from its mentions' sentiments: the heavier of positive and negative
    (each mention weighs 1 unless `weights` says otherwise); neutral when they tie (mixed) or when no
    mention is polar."""
    positive = negative = 0.0
    for sentiment, weight in zip(sentiments, weights or [1.0] * len(sentiments)):
        if sentiment == "positive":
            positive += weight
        elif sentiment == "negative":
            negative += weight
    if positive > negative:
        return "positive"
    return "negative" if negative > positive else "neutral"


def _phrase(sentence: ScoredSentence, match: Match, written: Mapping[str, str]) -> str:
    """An aspect's phrase: its term (as `written` has it when the words are the term itself, not a plural),
    with the word before it when that word carries sentiment."""
    tokens = sentence.folded.tokens
    term = " ".join(tokens[match.first : match.last + 1])
    if term == match.term:
        term = written.get(term, term)
    if (
        match.first > 0
        and sentence.values[match.first - 1] != 0
        and sentence.values[match.first : match.last + 1] == (0.0,) * (match.last + 1 - match.first)
    ):
        return f"{tokens[match.first - 1]} {term}"
    return term


def is_full_name(match: Match) -> bool:
    return " " in match.term


def aspect_phrases(sentence: ScoredSentence) -> dict[str, Match]:
    """The first match of each aspect the sentence names by a term of two or more words (the phrase bar's)."""
    phrases: dict[str, Match] = {}
    for match in sentence.matches:
        if match.group == "aspects" and match.last > match.first:
            phrases.setdefault(match.id, match)
    return phrases


def sentence_mentions(
    number: int,
    sentence: ScoredSentence,
    aspect_ids: tuple[str, ...],
    model: Model,
    stars: int,
    reasons: int = 0,
    roles: Mapping[str, tuple[str, ...]] | None = None,
    before: StaffBefore = StaffBefore(),
) -> tuple[list[Mention], list[tuple[int, Match, float]]]:
    """The mentions in one sentence, each with its polarity; and the staff names read as someone else.
    `roles`: each staff member's role words; `before`: the staff the sentences before it named."""
    tokens = sentence.tokens
    found: list[Mention] = []
    rejected = []
    first_match: dict[tuple[str, str], Match] = {}
    for match in sentence.matches:
        first_match.setdefault((match.group, match.id), match)
    staff: list[tuple[Match, str]] = []
    for (group, record_id), match in first_match.items():
        if group == STAFF_GROUP:
            features = staff_reference_features(tokens, match.first, match.last, is_full_name(match))
            probability = model.staff_reference(features)
            if probability < STAFF_REFERENCE_BAR:
                rejected.append((number, match, probability))
            else:
                staff.append((match, record_id))
    named = [roles[record_id] for _, record_id in staff if roles and record_id in roles]
    term_hits = [m.id for m in sentence.matches if m.group == "aspects"]
    context = staff_context(named, before.roles, tokens)
    words = names_replaced(tokens, staff_names(sentence))
    heads = model.detect(detection_features(words, term_hits, context), aspect_ids)

    def add(
        group: str,
        record_id: str,
        found_by: str,
        span: tuple[int, int] | None,
        sure: float = 1.0,
        by_pronoun: bool = False,
    ) -> None:
        polarity = model.polarity(mention_features(sentence, words, group, record_id, span, stars), reasons)
        found.append(Mention(group, record_id, number, found_by, span, polarity, sure, by_pronoun))

    phrases = aspect_phrases(sentence)
    for aspect_id in aspect_ids:
        match = first_match.get(("aspects", aspect_id))
        phrase = phrases.get(aspect_id)
        if aspect_id in heads:
            probability = heads[aspect_id]
            if probability >= model.threshold:
                found_by = f"model, {probability:.0%} sure"
                add("aspects", aspect_id, found_by, _span(match), probability)
            elif phrase is not None and probability >= model.phrase_bar:
                add("aspects", aspect_id, f"term '{phrase.term}'", _span(phrase), probability)
            elif match is not None and probability >= model.term_bar:
                add("aspects", aspect_id, f"term '{match.term}'", _span(match), probability)
        elif match is not None:
            add("aspects", aspect_id, f"term '{match.term}'", _span(match))
    accepted = {record_id for _, record_id in staff}
    for (group, record_id), match in first_match.items():
        if group == "aspects":
            continue
        if group == STAFF_GROUP:
            if record_id in accepted:
                add(group, record_id, f"name '{match.term}'", _span(match))
        else:
            add(group, record_id, f"term '{match.term}'", _span(match))
    names_staff = any(group == STAFF_GROUP for group, _ in first_match)
    pronoun_at = pronoun_index(tokens)
    if pronoun_at is not None and not names_staff:
        meant = before.meant_by(tokens[pronoun_at])
        if meant is not None:
            found_by = f"'{tokens[pronoun_at]}' after the sentence naming them"
            add(STAFF_GROUP, meant, found_by, (pronoun_at, pronoun_at), by_pronoun=True)
    return found, rejected


def mention_features(
    sentence: ScoredSentence,
    words: Sequence[str],
    group: str,
    record_id: str,
    span: tuple[int, int] | None,
    stars: int,
) -> dict[str, float]:
    """A mention's polarity features, as analyze and the trainer both read them: a staff member's with the
    name (or "he"/"she") at `span` as <self>; anything else's from `words`, the sentence with every staff
    name as <staff> (names_replaced)."""
    others = other_names(sentence, record_id, group) if span else frozenset()
    if group == STAFF_GROUP:
        read = names_replaced(sentence.tokens, staff_names(sentence), span)
        return polarity_features(read, sentence.values, span, "person", stars, "", others)
    about = record_id if group == "aspects" else ""
    return polarity_features(words, sentence.values, span, "aspect", stars, about, others)


def staff_names(sentence: ScoredSentence) -> list[tuple[int, int]]:
    """Where the sentence names staff (first and last token), whoever the name turns out to mean."""
    return [(m.first, m.last) for m in sentence.matches if m.group == STAFF_GROUP]


def other_names(sentence: ScoredSentence, record_id: str, group: str) -> frozenset[int]:
    """Where the sentence names records other than this one (their first words); for a staff member, other
    staff only: "Anika was a sweetheart, but the filling she did fell out." is about Anika to the end."""
    if group == STAFF_GROUP:
        return frozenset(m.first for m in sentence.matches if m.id != record_id and m.group == STAFF_GROUP)
    return frozenset(m.first for m in sentence.matches if m.id != record_id)


def _span(match: Match | None) -> tuple[int, int] | None:
    return (match.first, match.last) if match else None


def analyse_review(
    review: Mapping[str, Any],
    matcher: Matcher,
    scorer: Scorer,
    model: Model,
    aspect_ids: tuple[str, ...],
    reasons: int = 0,
    roles: Mapping[str, tuple[str, ...]] | None = None,
    pronouns: Mapping[str, str] | None = None,
) -> ReviewAnalysis:
    """One review's sentences, mentions and decisions; with `reasons`, that many features behind each
    mention's polarity (for --explain). `roles`: each staff member's role words; `pronouns`: "he", "she" or
    "they" for those business.toml gives them (staff_pronouns)."""
    sentences = [score_sentence(text, matcher, scorer) for text in split_sentences(review["text"])]
    text_score = sum(s.score for s in sentences) / len(sentences) if sentences else 0.0
    score, sentiment = review_sentiment(review["rating"], text_score, bool(sentences))
    result = ReviewAnalysis(review, sentences, text_score, score, sentiment)
    before = StaffBefore()
    for number, sentence in enumerate(sentences):
        found, rejected = sentence_mentions(
            number, sentence, aspect_ids, model, review["rating"], reasons, roles, before
        )
        named_ids = [m.id for m in found if m.group == STAFF_GROUP and not m.by_pronoun]
        before = before.after(named_ids, roles or {}, pronouns)
        result.found += found
        result.rejected += rejected
        for match in sentence.matches:
            if match.group == "aspects" and any(m.id == match.id and m.sentence == number for m in found):
                result.phrases.setdefault(match.id, []).append(_phrase(sentence, match, matcher.written))
    by_record: dict[tuple[str, str], list[Mention]] = {}
    for mention in result.found:
        by_record.setdefault((mention.group, mention.id), []).append(mention)
    for (group, record_id), mentions in by_record.items():
        sentiments = [m.polarity.sentiment for m in mentions]
        decided = aggregate_mentions(sentiments, [m.weight for m in mentions])
        confidence = max(
            (m.polarity.confidence for m in mentions if m.polarity.sentiment == decided), default=0
        )
        rule = "its one mention"
        if len(mentions) > 1:
            weighed = [
                m.polarity.sentiment if m.weight == 1 else f"{m.polarity.sentiment} ({m.weight:.0%})"
                for m in mentions
            ]
            rule = f"{len(mentions)} mentions: " + ", ".join(weighed)
        result.mentions.setdefault(group, {})[record_id] = Decision(decided, rule, round(confidence, 3))
    return result


def apply_corrections(analysis: ReviewAnalysis, corrections: list[Mapping[str, Any]]) -> None:
    """business.toml's [[corrections]] for this review: suppress a mention, or set its sentiment."""
    for correction in corrections:
        group, record_id = correction["group"], correction["id"]
        if correction.get("suppress"):
            analysis.mentions.get(group, {}).pop(record_id, None)
        elif "sentiment" in correction:
            analysis.mentions.setdefault(group, {})[record_id] = Decision(
                correction["sentiment"], "corrected in business.toml", 1.0
            )
