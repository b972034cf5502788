"""Text as the analyzer sees it: sentences, and each sentence folded to plain lower-case tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..reviews.words import fold

# Split on whitespace after . ! ? … only; lines are split first (a regex for "whitespace around a newline"
# rescans runs of tabs from every position: quadratic on a 20,000-character review of tabs).
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_ABBREVIATION = re.compile(
    r"(?:^|\s)(?:dr|dra|drs|mr|mrs|ms|st|jr|sr|prof|vs|approx|e\.g|i\.e|[a-z])\.$", re.I
)


def split_sentences(text: str | None) -> list[str]:
    """The sentences of a review text, as written (stripped); none for a rating-only review."""
    if not text:
        return []
    # each sentence's parts, joined at the end (adding to a string: quadratic)
    sentences: list[list[str]] = []
    for line in text.split("\n"):
        previous = ""  # the last part, not the sentence it joined: searching that again is quadratic
        for part in _SENTENCE_END.split(line):
            part = part.strip()
            if not part:
                continue
            if previous and _ABBREVIATION.search(previous):  # "Dr. Patel": not a sentence end
                sentences[-1].append(part)
            else:
                sentences.append([part])
            previous = part
    return [" ".join(parts) for parts in sentences]


@dataclass(frozen=True)
class Folded:
    """One sentence folded: the folded string and its tokens."""

    text: str
    tokens: tuple[str, ...]


def fold_sentence(sentence: str) -> Folded:
    folded = fold(sentence)
    return Folded(folded, tuple(folded.split(" ")) if folded else ())
