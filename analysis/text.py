"""Text as the analyzer sees it: sentences, and each sentence folded to plain lower-case tokens."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Split on whitespace after . ! ? … only; lines are split first (a regex for "whitespace around a newline"
# rescans runs of tabs from every position: quadratic on a 20,000-character review of tabs).
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_ABBREVIATION = re.compile(
    r"(?:^|\s)(?:dr|dra|drs|mr|mrs|ms|st|jr|sr|prof|vs|approx|e\.g|i\.e|[a-z])\.$", re.I
)
_QUOTES = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'", "–": " ", "—": " ", "-": " ", "/": " "})
_NOT_TOKEN = re.compile(r"[^a-z0-9',;!?$]+")
_PUNCT = re.compile(r"([,;!?$])")
_EDGE_APOSTROPHES = re.compile(r"(?<![a-z0-9])'|'(?![a-z0-9])")


def fold(text: str) -> str:
    """Lower case, accents and punctuation gone, single spaces: "Ramírez's, 5/5!" -> "ramirez's , 5 5 !".

    The characters , ; ! ? $ stay as tokens of their own: clause breaks, emphasis, and price."""
    text = text.casefold().translate(_QUOTES)
    if not text.isascii():  # most review text is ASCII: skip the decomposition there (a third of the time)
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = _EDGE_APOSTROPHES.sub(" ", _NOT_TOKEN.sub(" ", text))
    return " ".join(_PUNCT.sub(r" \1 ", text).split())


def split_sentences(text: str | None) -> list[str]:
    """The sentences of a review text, as written (stripped); none for a rating-only review."""
    if not text:
        return []
    sentences: list[
        list[str]
    ] = []  # each sentence's parts, joined at the end (adding to a string: quadratic)
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
