"""The polarity model mention by mention: the share of the corpus's labelled mentions (an aspect or a person
in a sentence) whose sentiment it reads as labelled, k-fold by review, for aspects and people apart, beside
two plain readings of the same mentions, in one run. Where docs/analysis.md's per-mention figures come from:
a variant of the model's form is an option.

    python bench/polarity_mentions.py [--folds 5] [--jobs N] [--c 1.0] [--scaled ac:,pre:,s:,aw:]
                                      [--prune 0.05,0.1] [--leave-out PREFIXES | --in-training PREFIXES]

A new corpus round's effect on the reviews before it, in the same folds: `--leave-out ae,af` reads the corpus
without the reviews whose ids start "ae-" or "af-", `--in-training ae,af` puts those reviews in every training
fold and scores only the others.

Needs the `train` extra. The folds are analysis_accuracy.py's (reviews in id order, dealt out in turn). In
each, the vocabulary, the Naive Bayes ratios and the regressions come from its training mentions only, made as
tools/train_model.py makes them (one binary regression per sentiment over the scaled words, at --c), and the
held-out mentions are read with the weights as the model file keeps them: rounded, and those under a --prune
bar left out (each bar from the same fits). Readings beside it: the review's stars alone (4-5 positive,
3 neutral, 1-2 negative) and the sign of the lexicon's score of the mention's clause. This reads the
polarity model alone, on the mentions the labels name: analysis_accuracy.py --corpus cv scores what analyze
makes of whole reviews. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "bench"))

from analysis_accuracy import corpus_reviews, folds  # noqa: E402

from reviewsd_app.analysis.batch import usable_cores  # noqa: E402
from reviewsd_app.analysis.review import STAR_LABELS  # noqa: E402

LEXICON_SIGNS = {"lex:clause+": "positive", "lex:clause0": "neutral", "lex:clause-": "negative"}
KINDS = ("aspect", "person")


def kind_of(features: dict[str, float]) -> str:
    return "person" if "kind:person" in features else "aspect"


def id_prefix(review: dict[str, Any]) -> str:
    return review["id"].split("-")[0]


def stars_reading(features: dict[str, float]) -> str:
    [stars] = [f for f in features if f.startswith("stars:") and "|" not in f]
    return STAR_LABELS[int(stars.removeprefix("stars:"))]


def lexicon_reading(features: dict[str, float]) -> str:
    [sign] = [f for f in features if f in LEXICON_SIGNS]
    return LEXICON_SIGNS[sign]


def model_readings(
    rows: Sequence[dict[str, float]],
    labels: Sequence[str],
    fold_of: Sequence[int],
    k: int,
    c: float,
    scaled_prefixes: tuple[str, ...],
    bars: Sequence[float],
    jobs: int,
) -> dict[float, list[str]]:
    """Each prune bar's reading of every mention, by the model trained on the other folds."""
    import numpy as np
    from fitting import Fit, matrix, run_fits
    from train_model import _round, _scaled_columns, _vocabulary

    matrices: dict[str, Any] = {}
    fits = []
    for held_out in range(k):
        training = [i for i in range(len(rows)) if fold_of[i] != held_out]
        vocabulary = _vocabulary(rows[i] for i in training)
        features = sorted(vocabulary, key=vocabulary.get)
        matrices[f"rows {held_out}"] = matrix(rows, vocabulary).tocsr()
        matrices[f"scaled {held_out}"] = _scaled_columns(features, scaled_prefixes)
        train_labels = tuple(labels[i] for i in training)
        fit = Fit(f"rows {held_out}", tuple(training), train_labels, c, True, scaled=f"scaled {held_out}")
        fits.append(fit)
    fitted = run_fits(fits, matrices, jobs)
    readings = {bar: [""] * len(rows) for bar in bars}
    for held_out, result in enumerate(fitted):
        test = [i for i in range(len(rows)) if fold_of[i] == held_out]
        test_rows = matrices[f"rows {held_out}"][test]
        rounded = np.vectorize(_round)(result.coef)
        intercept = np.vectorize(_round)(result.intercept)
        for bar in bars:
            kept = np.abs(rounded).max(axis=0) >= bar  # the trainer's rule for the file (POLARITY_PRUNE)
            scores = test_rows @ (rounded * kept).T + intercept
            for i, best in zip(test, scores.argmax(axis=1)):
                readings[bar][i] = result.classes[best]
    return readings


def main(argv: list[str] | None = None) -> int:
    from train_model import FIXED_POLARITY_C, POLARITY_PRUNE, SCALED_PREFIXES, examples

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=usable_cores(), help="processes for the fits")
    parser.add_argument("--c", type=float, default=FIXED_POLARITY_C, help="the regressions' regularisation")
    parser.add_argument(
        "--scaled", default=",".join(SCALED_PREFIXES), help="prefixes of the features scaled, comma-separated"
    )
    parser.add_argument("--prune", default=str(POLARITY_PRUNE), help="bars under which weights are left out")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--leave-out", default="", help="id prefixes of reviews left out, comma-separated")
    chosen.add_argument(
        "--in-training", default="", help="id prefixes of reviews in every training fold, never scored"
    )
    args = parser.parse_args(argv)
    scaled = tuple(p for p in args.scaled.split(",") if p)
    bars = [float(bar) for bar in args.prune.split(",")]
    left_out = {prefix for prefix in args.leave_out.split(",") if prefix}
    always_trained = {prefix for prefix in args.in_training.split(",") if prefix}

    reviews = [review for review in corpus_reviews() if id_prefix(review) not in left_out]
    scored = [review for review in reviews if id_prefix(review) not in always_trained]
    fold_by_id = {review["id"]: n for n, part in enumerate(folds(scored, args.folds)) for review in part}
    found = examples(reviews).polarity
    rows = [features for _, features, _ in found]
    labels = [label for _, _, label in found]
    # -1: a fold never held out, so in every training fold
    fold_of = [fold_by_id.get(reviews[index]["id"], -1) for index, _, _ in found]
    kinds = [kind_of(features) for features in rows]
    count = Counter(kind for kind, fold in zip(kinds, fold_of) if fold >= 0)
    print(f"polarity per mention, {args.folds}-fold by review on {len(scored):,} reviews")
    if always_trained:
        print(f"  and {len(reviews) - len(scored):,} more in every training fold ({args.in_training})")
    mentions, of_aspects, of_people = sum(count.values()), count["aspect"], count["person"]
    print(f"  {mentions:,} labelled mentions: {of_aspects:,} of aspects, {of_people:,} of people")
    print(f"  {'reading':<60} {'aspects':>8} {'people':>8}")
    readings = model_readings(rows, labels, fold_of, args.folds, args.c, scaled, bars, args.jobs)
    named = {
        f"model: C {args.c:g}, scaled {' '.join(scaled) or 'none'}, weights from {bar:g}": readings[bar]
        for bar in bars
    }
    named["the stars alone"] = [stars_reading(features) for features in rows]
    named["the lexicon's score of the clause"] = [lexicon_reading(features) for features in rows]
    for name, read in named.items():
        right: Counter[str] = Counter()
        for kind, guess, label, fold in zip(kinds, read, labels, fold_of):
            if fold >= 0 and guess == label:
                right[kind] += 1
        shares = " ".join(f"{right[kind] / count[kind]:8.4f}" for kind in KINDS)
        print(f"  {name:<60} {shares}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
