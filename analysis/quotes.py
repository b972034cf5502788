"""Which sentences of a review the insights may quote: for an FAQ answer, the sentence the model rates a
record's way most surely; for the pull quote, the most positive sentence of a 5-star review. Chosen once per
review once it is analysed, so the insights keep these instead of every sentence (pure)."""

from __future__ import annotations

import re
from typing import Sequence

from .lexicon import CONTRASTS, label
from .model import Polarity
from .review import STAFF_GROUP, Mention, ScoredSentence

PULL_QUOTE_MIN, PULL_QUOTE_MAX = 40, 200  # characters
PULL_QUOTE_MIN_SCORE = 0.5
# A quote must be a sentence the model itself rates with the sentiment it is quoted for, this sure or more,
# both with the review's stars and from its words alone; and one it is this sure is about the record at all
# (found by a head this sure, by a name, or by a term of a record no head reads). Without that bar, 17.5% of
# the corpus's quotable aspect sentences (20,828, cross-validated with the regularisation fixed) were not
# labelled that way for that aspect, mostly why the customer came ("I needed help with neck pain." as praise
# of pain relief); with it 8.5% of 16,071 (the bundled sample: 20.6% of 417, then 12.9% of 380).
QUOTE_CONFIDENCE = 0.8
# A quote speaks for one side, and a sentence with a contrast ("but", "though", "however"...) holds both:
# "It's a bit pricey without a membership, but not out of line." was a negative review's quote. Leaving them
# out halves the quotes labelled the opposite side on the corpus (aspects 1.2% -> 0.5%, people 0.9% -> 0.4%,
# cross-validated with the regularisation fixed), for 9% fewer quotable aspect sentences.
QUOTE_MAX = 240
# Characters a quote should not carry into a page: markup, controls, invisible direction marks.
_UNQUOTABLE = re.compile(r"[<>&\x00-\x1f\x7f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
OPPOSITES = {"positive": "negative", "negative": "positive"}

QuoteKey = tuple[str, str, str]  # (group, record id, sentiment)


def quotable(text: str) -> bool:
    return not _UNQUOTABLE.search(text) and len(text) <= QUOTE_MAX


def _sure(polarity: Polarity) -> float:
    """How sure the model is of a mention's sentiment both with the stars and from the words alone."""
    return min(polarity.confidence, polarity.words_confidence)


def naming_staff(found: Sequence[Mention]) -> frozenset[int]:
    """The sentences that name a staff member (not by "he" or "she"): with [publish] people = false, no
    quote is one of them, so that the insights' own choice of words never singles one out."""
    return frozenset(m.sentence for m in found if m.group == STAFF_GROUP and not m.by_pronoun)


def best_quotes(
    sentences: Sequence[ScoredSentence], found: Sequence[Mention], left_out: frozenset[int] = frozenset()
) -> dict[QuoteKey, tuple[float, str]]:
    """(group, record, sentiment) -> (how sure, sentence) of the review's sentence most surely rated that way
    for the record, QUOTE_CONFIDENCE or more, in a mention found that surely; a mention by "he"/"she" is no
    quote, nor a sentence with a contrast, nor one whose lexicon score leans the other way (the model can be
    sure and wrong: "The prices are a bargain at lunch." read as a complaint, and a public quote needs both
    readers), nor a sentence numbered in `left_out`."""
    best: dict[QuoteKey, tuple[float, str]] = {}
    for mention in found:
        sentiment = mention.polarity.sentiment
        sentence = sentences[mention.sentence]
        if mention.by_pronoun or mention.sentence in left_out or mention.sure < QUOTE_CONFIDENCE:
            continue
        if not CONTRASTS.isdisjoint(sentence.tokens):
            continue
        if label(sentence.score) == OPPOSITES.get(sentiment):
            continue
        sure = _sure(mention.polarity)
        if sure < QUOTE_CONFIDENCE or not quotable(sentence.text):
            continue
        key = (mention.group, mention.id, sentiment)
        best[key] = max(best.get(key, (sure, sentence.text)), (sure, sentence.text))
    return best


def pull_candidate(
    rating: int,
    sentences: Sequence[ScoredSentence],
    found: Sequence[Mention],
    left_out: frozenset[int] = frozenset(),
) -> tuple[float, str] | None:
    """(lexicon score, sentence) of a 5-star review's most positive sentence that may be the pull quote:
    score PULL_QUOTE_MIN_SCORE or more, PULL_QUOTE_MIN to PULL_QUOTE_MAX characters, quotable, not numbered
    in `left_out`, and every mention in it rated positive QUOTE_CONFIDENCE sure or more; the first of
    equals. None if none is."""
    if rating != 5:
        return None
    # one pass over the mentions, not one per sentence: time stays linear in a long review
    doubted = set(left_out)
    for mention in found:
        if mention.polarity.sentiment != "positive" or _sure(mention.polarity) < QUOTE_CONFIDENCE:
            doubted.add(mention.sentence)
    best: tuple[float, str] | None = None
    for number, sentence in enumerate(sentences):
        text, score = sentence.text, sentence.score
        if score < PULL_QUOTE_MIN_SCORE or not PULL_QUOTE_MIN <= len(text) <= PULL_QUOTE_MAX:
            continue
        if not quotable(text) or number in doubted:
            continue
        if best is None or round(score, 6) > best[0]:
            best = (round(score, 6), text)
    return best
