"""Ranked keyword search (`q`): BM25 over each review's text and owner reply, words folded as the analysis
folds them, common words left out; an aspect, practitioner or service the words name counts more, and words
of complaint ("complain", "problems") favour the reviews with negative aspect mentions.

The index is built on a dataset's first ranked search and kept with it (`Dataset.derived`). Pure otherwise:
the same words on the same data always rank the same way.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from .dataset import Dataset, fold_name
from .words import fold

# Words that say nothing about a review's content (English function words and the words of a question).
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    people customer customers client clients patient patients review reviews say says said tell told think
    thought mention mentions mentioned mentioning show find give get got most much many last month months
    week weeks year years day days recent recently lately ago since
    """.split()
)
# Words of complaint: the query asks for what went wrong.
COMPLAINT_WORDS = frozenset(
    "complain complaint complaints complained complaining problem problems issue issues negative bad worst "
    "unhappy disappointed disappointing dislike dislikes criticism criticised criticized wrong poor".split()
)
PRAISE_WORDS = frozenset(
    "praise praised praises love loved loves like liked likes positive best great happy compliments".split()
)
K1, B = 1.2, 0.75  # BM25's usual constants
NAME_BOOST = 3.0  # a review the analysis found naming the aspect, person or service a word names
MOOD_BOOST = 2.0  # a review with a mention of the sentiment asked for, times its aspect's share in the range


def stem(token: str) -> str:
    """A light suffix rule, the same for index and query: "waiting", "waited", "waits" -> "wait"."""
    token = token.removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s"):
        if len(token) - len(suffix) >= 3 and token.endswith(suffix) and not token.endswith("ss"):
            return token[: -len(suffix)]
    return token


def words(text: str) -> list[str]:
    """The searchable words of a text: folded, stemmed, stop words and punctuation out."""
    out = []
    for token in fold(text).split(" "):
        token = token.strip("'")
        if token and token.isalnum() and token not in STOP_WORDS:
            out.append(stem(token))
    return out


@dataclass(frozen=True)
class WordIndex:
    """Per word, the positions (ascending) holding it and how often; per position, its length in words."""

    postings: Mapping[str, tuple[array, array]]
    lengths: array
    average_length: float

    @classmethod
    def build(cls, texts: Iterable[str]) -> "WordIndex":
        positions: dict[str, array] = defaultdict(lambda: array("i"))
        counts: dict[str, array] = defaultdict(lambda: array("H"))
        lengths = array("i")
        for pos, text in enumerate(texts):
            found = words(text)
            lengths.append(len(found))
            for word, n in Counter(found).items():
                positions[word].append(pos)
                counts[word].append(min(n, 65_535))
        average = sum(lengths) / len(lengths) if lengths else 0.0
        return cls({word: (positions[word], counts[word]) for word in positions}, lengths, average or 1.0)

    def scores(self, asked: Sequence[str]) -> dict[int, float]:
        """BM25 of every position holding at least one of the words."""
        n, found = len(self.lengths), {}
        lengths, average = self.lengths, self.average_length
        for word in dict.fromkeys(asked):
            posting = self.postings.get(word)
            if posting is None:
                continue
            positions, counts = posting
            idf = math.log(1 + (n - len(positions) + 0.5) / (len(positions) + 0.5))
            for pos, tf in zip(positions, counts):
                norm = tf + K1 * (1 - B + B * lengths[pos] / average)
                found[pos] = found.get(pos, 0.0) + idf * tf * (K1 + 1) / norm
        return found


def word_index(dataset: Dataset) -> WordIndex:
    """The dataset's index, built on its first ranked search."""
    return dataset.derived(_build_word_index)


def _build_word_index(dataset: Dataset) -> WordIndex:
    return WordIndex.build(_searchable(dataset))


def _searchable(dataset: Dataset) -> Iterator[str]:
    for review in dataset.reviews:
        reply = review.get("owner_reply")
        yield (review["text"] or "") + ("\n" + reply["text"] if reply else "")


def rank(dataset: Dataset, q: str, window: tuple[int, int]) -> dict[int, float]:
    """The score of every review `q` matches: BM25 of its words, plus NAME_BOOST for a review the analysis
    found naming an aspect, practitioner or service a word names, plus MOOD_BOOST for complaint (or praise)
    words, weighted by how criticised (or praised) each aspect is within `window`."""
    asked = words(q)
    scores = word_index(dataset).scores(asked)
    folded = {fold_name(token) for token in fold(q).split(" ") if token.isalnum()}
    for positions in _named_positions(dataset, folded - STOP_WORDS):
        for pos in positions:
            scores[pos] = scores.get(pos, 0.0) + NAME_BOOST
    mood = "negative" if folded & COMPLAINT_WORDS else "positive" if folded & PRAISE_WORDS else None
    if mood is not None:
        _add_mood(dataset, mood, window, scores)
    return scores


def _named_positions(dataset: Dataset, folded: set[str]) -> Iterator[Sequence[int]]:
    """The positions mentioning each aspect, practitioner or service one of the words names (3 letters+)."""
    for aspect in dataset.insights_doc["aspects"]:
        names = {aspect["id"].replace("-", " "), fold_name(aspect["label"])}
        if any(word in name.split() for name in names for word in folded if len(word) >= 3):
            yield dataset.positions_by_aspect.get((aspect["id"], None), [])
    for index, lookup in (
        (dataset.positions_by_technician, dataset.technician_names),
        (dataset.positions_by_service, dataset.service_names),
    ):
        for entity, names in lookup:
            if any(word in name.split() for name in names for word in folded if len(word) >= 3):
                yield index.get(entity, [])


def _add_mood(dataset: Dataset, mood: str, window: tuple[int, int], scores: dict[int, float]) -> None:
    lo, hi = window
    within = {}
    for aspect in dataset.insights_doc["aspects"]:
        positions = dataset.positions_by_aspect.get((aspect["id"], mood), [])
        within[aspect["id"]] = [pos for pos in positions if lo <= pos < hi]
    most = max(map(len, within.values()), default=0)
    for found in within.values():
        for pos in found:
            scores[pos] = scores.get(pos, 0.0) + MOOD_BOOST * len(found) / most


def best(scores: Mapping[int, float], passes: Callable[[int], bool], limit: int) -> tuple[int, list[int]]:
    """(how many scored positions pass, the `limit` best of them: highest score, then newest)."""
    kept = [pos for pos in scores if passes(pos)]
    top = heapq.nsmallest(limit, kept, key=lambda pos: (-scores[pos], pos))
    return len(kept), top
