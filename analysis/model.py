"""The trained model, applied in pure Python: aspect detection heads, mention polarity, staff references.

The weights are data (analysis/model.json.gz, written by tools/train_model.py from corpus/): linear models
whose scores are a sum of weights over a sentence's features, so each decision can list the features that
weighed most (what --explain prints)."""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Mapping, Sequence

import orjson

MODEL_FILE = "model.json.gz"
CLASSES = ("negative", "neutral", "positive")


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    z = math.exp(x)
    return z / (1 + z)


@dataclass(frozen=True)
class Polarity:
    """A mention's sentiment, the model's probability for it, and the features that pushed it there."""

    sentiment: str
    confidence: float
    reasons: tuple[tuple[str, float, float], ...]  # (feature, its value, its push toward `sentiment`)
    words_confidence: float = 1.0  # its probability from the words alone, the stars left out


class Model:
    """The weights of one trained model, ready to apply."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.info = data["info"]
        detect = data["detect"]
        self.heads: tuple[str, ...] = tuple(detect["heads"])
        self.head_index = {head: i for i, head in enumerate(self.heads)}
        self.head_bias: tuple[float, ...] = tuple(detect["bias"])
        self.threshold: float = detect["threshold"]
        # a preset term counts while the head's probability reaches this (models before 2.2: any)
        self.term_bar: float = detect.get("term_bar", 0.0)
        # the same for a term of two or more words (models before 3.1: the term bar)
        self.phrase_bar: float = detect.get("phrase_bar", self.term_bar)
        # feature -> [head index, weight, head index, weight, ...], as the file has them: a tuple per pair
        # took 27 of the loaded model's 117 MiB (and 0.13 s to make), for _heads_for only; without them,
        # analyze's summed PSS at 100,000 reviews with four workers 928 -> 872 MiB.
        self.head_weights: dict[str, Sequence] = detect["weights"]
        polarity = data["polarity"]
        self.classes: tuple[str, ...] = tuple(polarity["classes"])
        self.polarity_bias: tuple[float, ...] = tuple(polarity["bias"])
        self.polarity_weights: dict[str, Sequence[float]] = polarity["weights"]
        self.one_vs_rest = polarity.get("scores") == "one-vs-rest"  # models before 3.3: one multinomial model
        self.star_features = frozenset(f for f in self.polarity_weights if f.startswith("stars:"))
        if self.classes != CLASSES:
            raise ValueError(f"{MODEL_FILE}: classes {self.classes} are not {CLASSES}")
        staff = data["staff"]
        self.staff_bias: float = staff["bias"]
        self.staff_weights: dict[str, float] = staff["weights"]

    def detect(self, features: Sequence[str], aspects: tuple[str, ...]) -> dict[str, float]:
        """Probability that the sentence talks about each of `aspects` that has a head."""
        heads, bias, weights = self._heads_for(aspects)
        totals = list(bias)
        for feature in set(features):
            for index, weight in weights.get(feature, ()):
                totals[index] += weight
        return {head: _sigmoid(total) for head, total in zip(heads, totals)}

    def prepare(self, aspects: tuple[str, ...]) -> None:
        """Make what detect() needs for these aspects now: before analyze forks its workers, so that they
        share it (each made its own copy: 50 to 70 MiB a worker with model 2.9)."""
        self._heads_for(aspects)

    @lru_cache(maxsize=8)
    def _heads_for(self, aspects: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[float, ...], dict]:
        """The heads of these aspects, their biases, and feature -> ((position, weight), ...) for them only:
        made once per profile, so that a sentence's features meet only the heads the profile uses."""
        heads = tuple(a for a in aspects if a in self.head_index)
        position = {self.head_index[head]: n for n, head in enumerate(heads)}
        weights = {}
        for feature, flat in self.head_weights.items():
            kept = tuple((position[i], w) for i, w in zip(flat[0::2], flat[1::2]) if i in position)
            if kept:
                weights[feature] = kept
        return heads, tuple(self.head_bias[self.head_index[h]] for h in heads), weights

    def polarity(self, features: Mapping[str, float], reasons: int = 0) -> Polarity:
        """The most probable sentiment of a mention; with `reasons`, that many strongest features for it."""
        # three classes, summed in locals: this loop and detect()'s are analyze's hottest, about a tenth each
        negative, neutral, positive = self.polarity_bias
        weights_of = self.polarity_weights.get
        for feature, value in features.items():
            weights = weights_of(feature)
            if weights is not None:
                negative += weights[0] * value
                neutral += weights[1] * value
                positive += weights[2] * value
        totals = [negative, neutral, positive]
        stars = [0.0, 0.0, 0.0]
        for feature in self.star_features.intersection(features):
            for k, weight in enumerate(self.polarity_weights[feature]):
                stars[k] += weight * features[feature]
        top = max(range(len(totals)), key=lambda k: totals[k])
        words = [total - star for total, star in zip(totals, stars)]
        confidence = self._probabilities(totals)[top]
        words_confidence = self._probabilities(words)[top]
        pushes: tuple[tuple[str, float, float], ...] = ()
        if reasons:
            # a feature's push: its weight for the winner over its weight for the runner-up, so that the
            # pushes and the biases sum to the winner's score over the runner-up's. Over the mean
            # of the other two, the 5 stars of a happy review showed as a reason for a neutral reading (229
            # of the bundled sample's 1,424 mentions), where they argued for positive
            runner_up = max((k for k in range(len(totals)) if k != top), key=lambda k: totals[k])

            def push(weights: Sequence[float], value: float) -> float:
                return value * (weights[top] - weights[runner_up])

            found = [
                (f, v, self.polarity_weights[f]) for f, v in features.items() if f in self.polarity_weights
            ]
            ranked = sorted(
                ((feature, value, push(weights, value)) for feature, value, weights in found),
                key=lambda r: (-abs(r[2]), r[0]),
            )
            pushes = tuple(r for r in ranked if abs(r[2]) >= 0.05)[:reasons]
        return Polarity(self.classes[top], confidence, pushes, words_confidence)

    def _probabilities(self, scores: Sequence[float]) -> list[float]:
        """Each sentiment's probability from its score: a binary model per sentiment (models from 3.3) gives
        each its own (a sigmoid), shared out to sum to 1; one multinomial model, a softmax of the scores."""
        if self.one_vs_rest:
            each = [_sigmoid(score) for score in scores]
        else:
            peak = max(scores)
            each = [math.exp(score - peak) for score in scores]
        total = sum(each)
        return [share / total for share in each]

    def staff_reference(self, features: Sequence[str]) -> float:
        """Probability that a staff member's name found in a sentence means that staff member."""
        total = self.staff_bias + sum(self.staff_weights.get(f, 0.0) for f in features)
        return _sigmoid(total)


@cache
def shipped_model() -> Model:
    """The model shipped in the package (read once)."""
    raw = resources.files(__package__).joinpath(MODEL_FILE).read_bytes()
    return Model(orjson.loads(gzip.decompress(raw)))  # orjson: 0.13 s where json takes 0.25 s
