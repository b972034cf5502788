"""Text as the analyzer sees it: sentences, and each sentence folded to plain lower-case tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..reviews.words import fold

# A sentence ends at whitespace after . ! ? or … (and any quote or bracket closing after it: 'she said it
# was "normal." It was not.'), or after an emoji when the next word starts with a capital ("runs 😂 She
# remembers"). On the corpus, splitting only after . ! ? … merged 1,145 pairs of its labelled sentences into
# one, and read the clause of one for the other's record. Lines are split first (a regex for "whitespace
# around a newline" rescans runs of tabs from every position: quadratic on a 20,000-character review of
# tabs); only whitespace right after one of those characters is a candidate, so a run of them costs nothing.
_CLOSERS = "\"'”’»)]"
_EMOJI = "\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff"
_CANDIDATE_END = re.compile(f"(?<=[.!?…{re.escape(_CLOSERS)}{_EMOJI}])\\s+")
_ABBREVIATION = re.compile(
    r"(?:^|[\s\"'“‘(])(?:dr|dra|drs|mr|mrs|ms|st|jr|sr|prof|vs|approx|e\.g|i\.e|[a-hj-z])\.$", re.I
)
# These, an ellipsis and a closing quote or bracket end a sentence only before a capital: "at 5:40 a.m. and"
# goes on, "at 5 a.m. Then" ends; after a plain "." a lower-case word starts one ("great. will go back").
_BEFORE_CAPITAL = re.compile(r"(?:^|\s)(?:[ap]\.m|co|inc|ltd|etc)\.$", re.I)
_WORDLESS = re.compile(r"\W*")  # emoji and punctuation only: "Best dentist!! 😊" keeps its emoji


def _ends_sentence(part: str, following: str) -> bool:
    """Whether the whitespace between a part of a line and the next ends a sentence."""
    stripped = part.rstrip(_CLOSERS)
    closed = stripped != part  # a quote or bracket closes after it
    if stripped.endswith((".", "!", "?", "…")):
        if _ABBREVIATION.search(stripped):  # "Dr. Patel"
            return False
        if following[:1].islower():  # '"how did we do?" email', "looked... okay", "at 5:40 a.m. and"
            ellipsis = stripped.endswith(("…", "..."))
            return not (closed or ellipsis or _BEFORE_CAPITAL.search(stripped))
        return True
    return not closed and following[:1].isupper()  # after an emoji


def split_sentences(text: str | None) -> list[str]:
    """The sentences of a review text, as written (stripped); none for a rating-only review."""
    if not text:
        return []
    # each sentence's parts, joined at the end (adding to a string: quadratic)
    sentences: list[list[str]] = []
    for line in text.split("\n"):
        previous = ""  # the last part, not the sentence it joined: searching that again is quadratic
        for part in _CANDIDATE_END.split(line):
            part = part.strip()
            if not part:
                continue
            # an emoji alone after "!!" is that sentence's own
            if previous and (not _ends_sentence(previous, part) or _WORDLESS.fullmatch(part)):
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
