"""Aspect detection and polarity accuracy of `reviewsd analyze`, beside a plain baseline, in one run.

    python bench/analysis_accuracy.py [--corpus sample|semeval|all]

Review-level aspect detection: precision, recall and F1 of the set of aspect ids each review mentions;
polarity accuracy: of the aspects both found and true, the share whose sentiment (positive, neutral,
negative) agrees. The baseline matches the same preset terms as whole words and labels an aspect with
VADER's own analyzer (vaderSentiment's SentimentIntensityAnalyzer) over the sentences naming it, the
usual "keyword + VADER per sentence" method, with no stars, clauses or overrides.

Corpora: (a) the bundled sample (data/), whose generator recorded the truth in data/insights.json,
with the chiropractic preset; (b) SemEval-2014 Task 4 restaurants (test split), human-labelled
aspect categories, with the restaurant preset, when a copy is found (see semeval_corpus()).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Iterable, Mapping

from reviewsd_app.analysis.lexicon import label
from reviewsd_app.analysis.matcher import Matcher
from reviewsd_app.analysis.run import analyse_reviews
from reviewsd_app.analysis.text import fold_sentence, split_sentences
from reviewsd_app.authoring.presets import render_preset
from reviewsd_app.authoring.profile import Profile, parse_profile

ROOT = Path(__file__).resolve().parent.parent

Truth = dict[str, dict[str, str]]  # review id -> aspect id -> sentiment


def reviewsd_predictions(reviews: list[Mapping], profile: Profile) -> Truth:
    return {
        a.review["id"]: {aspect: d.sentiment for aspect, d in a.mentions.get("aspects", {}).items()}
        for a in analyse_reviews(reviews, profile)
    }


def baseline_predictions(reviews: list[Mapping], profile: Profile) -> Truth:
    """Keyword match (the preset's terms, whole words) + VADER's compound over the sentences naming it."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    vader = SentimentIntensityAnalyzer()
    aspects_only = Profile(aspects=profile.aspects)
    matcher = Matcher(aspects_only)
    predictions: Truth = {}
    for review in reviews:
        totals: dict[str, float] = {}
        for sentence in split_sentences(review["text"]):
            named = {m.id for m in matcher.matches(fold_sentence(sentence))}
            if named:
                score = vader.polarity_scores(sentence)["compound"]
                for aspect in named:
                    totals[aspect] = totals.get(aspect, 0.0) + score
        predictions[review["id"]] = {aspect: label(total) for aspect, total in totals.items()}
    return predictions


def score(truth: Truth, predicted: Truth, aspects: Iterable[str] | None = None) -> dict[str, float]:
    """Detection precision, recall, F1 over (review, aspect) pairs; polarity accuracy on the hits."""
    keep = set(aspects) if aspects is not None else None
    tp = fp = fn = agree = 0
    for review_id, true in truth.items():
        found = predicted.get(review_id, {})
        true_ids = {a for a in true if keep is None or a in keep}
        found_ids = {a for a in found if keep is None or a in keep}
        tp += len(true_ids & found_ids)
        fp += len(found_ids - true_ids)
        fn += len(true_ids - found_ids)
        agree += sum(true[a] == found[a] for a in true_ids & found_ids)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "polarity": agree / tp if tp else 0.0,
        "pairs": tp + fn,
    }


def report(
    name: str, truth: Truth, reviews: list[Mapping], profile: Profile, aspects: Iterable[str] | None = None
) -> dict[str, dict[str, float]]:
    results = {}
    for method, predict in (("reviewsd", reviewsd_predictions), ("baseline", baseline_predictions)):
        results[method] = score(truth, predict(reviews, profile), aspects)
    print(f"{name}: {len(reviews)} reviews, {results['reviewsd']['pairs']} true (review, aspect) pairs")
    print(f"  {'method':<10} {'precision':>9} {'recall':>7} {'F1':>6} {'polarity':>9}")
    for method, r in results.items():
        print(f"  {method:<10} {r['precision']:9.3f} {r['recall']:7.3f} {r['f1']:6.3f} {r['polarity']:9.3f}")
    return results


def sample_corpus() -> tuple[list[Mapping], Truth]:
    reviews = json.loads((ROOT / "data" / "reviews.json").read_text("utf-8"))["reviews"]
    insights = json.loads((ROOT / "data" / "insights.json").read_text("utf-8"))
    truth = {
        rid: {a["id"]: a["sentiment"] for a in entry["aspects"]}
        for rid, entry in insights["per_review"].items()
    }
    return reviews, truth


RUNNERS: dict[str, Callable[[], None]] = {}


def run_sample() -> None:
    reviews, truth = sample_corpus()
    report(
        "bundled sample (chiropractic preset)", truth, reviews, parse_profile(render_preset("chiropractic"))
    )


RUNNERS["sample"] = run_sample

# SemEval-2014 Task 4 (restaurants): categories food, service, price, ambience, anecdotes/miscellaneous.
SEMEVAL_CATEGORIES = ("food", "service", "price", "ambience")  # misc has no counterpart in a preset
PRESET_TO_SEMEVAL = {"drinks": "food"}  # SemEval's food covers drinks; location has no SemEval category
SEMEVAL_FILE = "Restaurants_Test_Gold.xml"


def semeval_corpus(path: Path) -> tuple[list[Mapping], Truth, Truth]:
    """Sentences as rating-3 reviews (no stars: the stars rule then says neutral), truth per sentence, and
    the conflict-labelled pairs, which count for detection but not for polarity."""
    import xml.etree.ElementTree as ElementTree

    reviews, truth, conflicts = [], {}, {}
    for number, sentence in enumerate(ElementTree.parse(path).getroot().iter("sentence")):
        rid = f"{number:026d}"
        reviews.append(
            {"id": rid, "rating": 3, "date": "2014-01-01", "text": sentence.findtext("text") or None}
        )
        labels = {c.get("category"): c.get("polarity") for c in sentence.iter("aspectCategory")}
        truth[rid] = {c: p for c, p in labels.items() if c in SEMEVAL_CATEGORIES}
        conflicts[rid] = {c: p for c, p in truth[rid].items() if p == "conflict"}
    return reviews, truth, conflicts


def _as_semeval(predicted: Truth) -> Truth:
    mapped: Truth = {}
    for rid, found in predicted.items():
        mapped[rid] = {}
        for aspect, sentiment in found.items():
            category = PRESET_TO_SEMEVAL.get(aspect, aspect)
            mapped[rid].setdefault(category, sentiment)  # food named first wins over drinks: preset order
    return mapped


def find_semeval() -> Path | None:
    """A SemEval-2014 restaurants test file: $SEMEVAL2014_RESTAURANTS_TEST, else none. No package in
    PyPI, npm or Debian was found to ship it (docs/analysis.md lists what was searched)."""
    import os

    given = os.environ.get("SEMEVAL2014_RESTAURANTS_TEST")
    return Path(given) if given and Path(given).is_file() else None


def run_semeval() -> None:
    path = find_semeval()
    if path is None:
        print(
            "SemEval-2014 restaurants: not run: set SEMEVAL2014_RESTAURANTS_TEST to a copy of "
            f"{SEMEVAL_FILE} (no PyPI, npm or Debian package ships it)"
        )
        return
    reviews, truth, conflicts = semeval_corpus(path)
    profile = parse_profile(render_preset("restaurant"))
    print(
        f"SemEval-2014 restaurants test ({path.name}, restaurant preset; {sum(map(len, conflicts.values()))} "
        "conflict labels count for detection only)"
    )
    print(f"  {'method':<10} {'precision':>9} {'recall':>7} {'F1':>6} {'polarity':>9}")
    for method, predict in (("reviewsd", reviewsd_predictions), ("baseline", baseline_predictions)):
        predicted = _as_semeval(predict(reviews, profile))
        detection = score(truth, predicted, SEMEVAL_CATEGORIES)
        clear = {rid: {c: p for c, p in t.items() if p != "conflict"} for rid, t in truth.items()}
        polarity = score(clear, predicted, SEMEVAL_CATEGORIES)["polarity"]
        print(
            f"  {method:<10} {detection['precision']:9.3f} {detection['recall']:7.3f} {detection['f1']:6.3f} "
            f"{polarity:9.3f}"
        )


RUNNERS["semeval"] = run_semeval


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=[*RUNNERS, "all"], default="all")
    args = parser.parse_args(argv)
    for name, run in RUNNERS.items():
        if args.corpus in (name, "all"):
            run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
