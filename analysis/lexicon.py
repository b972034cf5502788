"""Sentence sentiment from VADER's lexicon (shipped in the vaderSentiment package), read directly.

We read `vader_lexicon.txt` and VADER's negation and booster word lists, and score tokens ourselves:
VADER's own analyzer re-tokenizes every text and runs at about a fifth of the speed the 100,000-review
target needs, and we need per-token contributions (for clauses, for --explain, for neutralizing the
words of names). The rules follow VADER's: boosters, negation within three words, "but", emphasis."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Mapping, Sequence

from vaderSentiment.vaderSentiment import (  # module constants; importing reads no file
    BOOSTER_DICT,
    NEGATE,
)

from ..reviews.words import fold

LEXICON_PACKAGE = "vaderSentiment"
LEXICON_FILE = "vader_lexicon.txt"
NEGATION_FACTOR = -0.74  # VADER's N_SCALAR
EMPHASIS_PER_MARK = 0.292  # VADER's per-"!" amplification, up to 4 marks
ALPHA = 15  # VADER's normalization constant: compound = s / sqrt(s^2 + 15)
NEUTRAL_BAND = 0.05  # |compound| below this is neutral (VADER's recommended threshold)
NEGATIONS = frozenset(NEGATE) | {"no", "never", "nobody", "hardly"}
CONTRASTS = frozenset({"but", "however", "although", "though", "yet", "whereas", "except"})
CLAUSE_BREAKS = CONTRASTS | {",", ";"}
# Where VADER's general-purpose lexicon misreads review prose: words that are mostly not praise here.
# "honestly" (+2.0) and "well" (+1.1) are discourse markers ("honestly, no relief", "as well"); "care" (+2.2)
# is what a clinic provides ("prenatal care"); "pretty" (+2.2) is mostly a booster ("pretty slow").
NOT_SENTIMENT = frozenset({"honestly", "well", "care", "pretty"})
BOOSTERS = {**BOOSTER_DICT, "pretty": 0.293}  # VADER's booster increment


@cache
def vader_lexicon() -> dict[str, float]:
    """token -> mean valence (-4 to 4), from the installed vaderSentiment package."""
    text = resources.files(LEXICON_PACKAGE).joinpath(LEXICON_FILE).read_text("utf-8")
    lexicon = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            lexicon[parts[0]] = float(parts[1])
    return lexicon


def compound(total: float, marks: int = 0) -> float:
    """VADER's normalization of a summed valence to -1..1 (with emphasis from "!" marks)."""
    if total == 0:
        return 0.0
    total += math.copysign(min(marks, 4) * EMPHASIS_PER_MARK, total)
    return total / math.sqrt(total * total + ALPHA)


def label(score: float) -> str:
    if score >= NEUTRAL_BAND:
        return "positive"
    return "negative" if score <= -NEUTRAL_BAND else "neutral"


@dataclass(frozen=True)
class Scorer:
    """Token contributions for one profile: VADER's lexicon plus the profile's phrase overrides."""

    words: Mapping[str, float]
    phrases: Mapping[str, tuple[tuple[tuple[str, ...], float], ...]]  # first token -> (tokens, valence)

    @classmethod
    def for_overrides(cls, overrides: Mapping[str, float]) -> "Scorer":
        words = {word: valence for word, valence in vader_lexicon().items() if word not in NOT_SENTIMENT}
        phrases: dict[str, list[tuple[tuple[str, ...], float]]] = {}
        for phrase, valence in overrides.items():
            tokens = tuple(fold(phrase).split())
            if len(tokens) == 1:
                words[tokens[0]] = float(valence)
            elif tokens:
                phrases.setdefault(tokens[0], []).append((tokens, float(valence)))
        ordered = {first: tuple(sorted(found, key=lambda p: -len(p[0]))) for first, found in phrases.items()}
        return cls(words, ordered)

    def override_at(self, tokens: Sequence[str], i: int) -> tuple[tuple[str, ...], float] | None:
        """The longest override phrase starting at token i, and its valence."""
        for phrase, valence in self.phrases.get(tokens[i], ()):
            if tuple(tokens[i : i + len(phrase)]) == phrase:
                return phrase, valence
        return None

    def contributions(self, tokens: Sequence[str], silenced: frozenset[int] = frozenset()) -> list[float]:
        """Each token's valence in context; `silenced` tokens (names, problems) count 0."""
        values = [0.0] * len(tokens)
        covered: set[int] = set(silenced)
        for i in range(len(tokens)):
            override = None if i in covered else self.override_at(tokens, i)
            if override is not None:
                values[i] = override[1]  # an override is the profile's word: no negation or booster applies
                covered.update(range(i, i + len(override[0])))
        for i, token in enumerate(tokens):
            if i in covered or token in NEGATIONS:
                continue
            valence = self.words.get(token)
            if valence is None or (token == "kind" and tokens[i + 1 : i + 2] == ("of",)):
                continue
            values[i] = self._in_context(tokens, i, valence)
        self._apply_contrast(tokens, values)
        return values

    @staticmethod
    def _in_context(tokens: Sequence[str], i: int, valence: float) -> float:
        for distance in (1, 2, 3):
            if i - distance < 0:
                break
            boost = BOOSTERS.get(tokens[i - distance])
            if boost:
                valence += math.copysign(boost * (1, 0.95, 0.9)[distance - 1], valence)
        previous = tokens[max(0, i - 3) : i]
        if any(word in NEGATIONS or word.endswith("n't") for word in previous):
            valence *= NEGATION_FACTOR
        return valence

    @staticmethod
    def _apply_contrast(tokens: Sequence[str], values: list[float]) -> None:
        """VADER's "but" rule: what comes before weighs half, what comes after one and a half."""
        if "but" not in tokens:
            return
        cut = tokens.index("but")
        for i in range(len(values)):
            values[i] *= 0.5 if i < cut else 1.5
