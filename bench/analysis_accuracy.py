"""Accuracy of `reviewsd analyze`: the trained model beside the previous lexicon method and the stars alone,
against human labels, in one run.

    python bench/analysis_accuracy.py [--corpus sample|cv|curve|passes|semeval|all] [--folds 5]
                                      [--semeval FILE] [--jobs N]

Needs the `train` extra for `cv` and `curve` (the model is retrained on each fold's training reviews, its
fits in --jobs processes: the usable CPUs by default; the figures are the same whatever the number).

Figures, each over (review, record) pairs with a record's sentiment in a review given by the stated rule
(analysis.review.aggregate_mentions: the heavier of positive and negative mentions, each label weighing 1,
neutral on a tie), and, on the corpus, over (sentence, record) pairs too:
  detection   precision, recall, F1 of the aspects found
  polarity    of the aspects both found and labelled, the share whose sentiment agrees
  people      F1 of the staff found, and the share of found, labelled staff whose sentiment agrees
Methods:
  model       what `analyze` does: the shipped model (`sample`), or one trained on the other folds (`cv`)
  lexicon     the previous method (reviewsd-lexicon 1.0): terms and names, the lexicon's clause, then
              sentence, then stars (never for people)
  stars       terms and names as the lexicon method; every sentiment from the stars (4-5 positive, 3 neutral)
Corpora: `sample`: the bundled sample (data/) with its business.toml, against its held-out labels
(corpus/held-out/, labelled by the guideline like the corpus, never trained on); `cv`: the labelled corpus
(corpus/, docs/corpus.md), k-fold by review, the model never trained or tuned on the fold it is scored on;
`curve`: the learning curve; `passes`: each of the two labelling passes scored the same way against the
settled labels (what one careful human reader scores); `semeval`: a file in
the SemEval-2014 Task 4 XML shape (--semeval or $SEMEVAL2014_RESTAURANTS_TEST), restaurant preset.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from reviewsd_app.analysis import features as feature_module  # noqa: E402
from reviewsd_app.analysis import review as review_module  # noqa: E402
from reviewsd_app.analysis.batch import analyse_reviews, usable_cores  # noqa: E402
from reviewsd_app.analysis.features import clause_bounds  # noqa: E402
from reviewsd_app.analysis.lexicon import Scorer, compound, label  # noqa: E402
from reviewsd_app.analysis.matcher import Match, Matcher  # noqa: E402
from reviewsd_app.analysis.model import Model, shipped_model  # noqa: E402
from reviewsd_app.analysis.quotes import OPPOSITES  # noqa: E402
from reviewsd_app.analysis.review import (  # noqa: E402
    STAFF_GROUP,
    STAR_LABELS,
    ScoredSentence,
    aggregate_mentions,
    score_sentence,
)
from reviewsd_app.analysis.text import split_sentences  # noqa: E402
from reviewsd_app.authoring.presets import render_preset  # noqa: E402
from reviewsd_app.authoring.profile import Profile, load_profile, parse_profile  # noqa: E402
from reviewsd_app.cli.commands import jobs_count  # noqa: E402

Labels = dict[str, dict[str, str]]  # unit id -> record id -> sentiment


@dataclass
class Units:
    """Texts to analyse, each with its stars and its true aspects and people."""

    inputs: list[dict] = field(default_factory=list)  # id, rating, date, text
    aspects: Labels = field(default_factory=dict)
    people: Labels = field(default_factory=dict)
    profiles: dict[str, Profile] = field(default_factory=dict)  # unit id -> the business's profile
    # unit id -> each labelled sentence's text and its labels, {(group, record id): sentiment}: what a quote
    # of that sentence is checked against (whole reviews only)
    sentences: dict[str, list[tuple[str, dict[tuple[str, str], str]]]] = field(default_factory=dict)


# --- the three methods: unit inputs + profile -> (aspects, people) -----------------------------------


def model_method(model: Model, kept: dict[str, Any] | None = None) -> Callable:
    """What analyze decides; each review's analysis goes into `kept` too, if given (for its quotes)."""

    def predict(inputs: list[dict], profile: Profile) -> tuple[Labels, Labels]:
        aspects, people = {}, {}
        for a in analyse_reviews(inputs, profile, model):
            if kept is not None:
                kept[a.review["id"]] = a
            aspects[a.review["id"]] = {k: d.sentiment for k, d in a.mentions.get("aspects", {}).items()}
            people[a.review["id"]] = {k: d.sentiment for k, d in a.mentions.get("technicians", {}).items()}
        return aspects, people

    return predict


def _lexicon_decide(group: str, evidence: list[tuple[float, float]], rating: int) -> str:
    """reviewsd-lexicon 1.0's rule: the clause, else the sentence, else the stars (never for people)."""
    clause = sum(c for c, _ in evidence)
    if label(clause) != "neutral":
        return label(clause)
    sentence = sum(s for _, s in evidence)
    if label(sentence) != "neutral":
        return label(sentence)
    return "neutral" if group == "technicians" else STAR_LABELS[rating]


def _term_clauses(
    review: Mapping, matcher: Matcher, scorer: Scorer
) -> Iterator[tuple[Match, float, ScoredSentence]]:
    """(match, the lexicon's score of its clause, the scored sentence) for each term and name the profile
    finds in the review."""
    for text in split_sentences(review["text"]):
        sentence = score_sentence(text, matcher, scorer)
        tokens = sentence.folded.tokens
        for match in sentence.matches:
            start, end = clause_bounds(tokens, match.first, match.last)
            yield match, compound(sum(sentence.values[start:end]), tokens[start:end].count("!")), sentence


def _term_evidence(review: Mapping, matcher: Matcher, scorer: Scorer) -> dict[tuple[str, str], list]:
    evidence: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for match, clause, sentence in _term_clauses(review, matcher, scorer):
        evidence.setdefault((match.group, match.id), []).append((clause, sentence.score))
    return evidence


def lexicon_method(inputs: list[dict], profile: Profile, stars_only: bool = False) -> tuple[Labels, Labels]:
    matcher, scorer = Matcher(profile), Scorer.for_overrides(profile.sentiment_overrides)
    aspects: Labels = {}
    people: Labels = {}
    for review in inputs:
        aspects[review["id"]], people[review["id"]] = {}, {}
        for (group, record_id), evidence in _term_evidence(review, matcher, scorer).items():
            if stars_only:
                sentiment = STAR_LABELS[review["rating"]]
            else:
                sentiment = _lexicon_decide(group, evidence, review["rating"])
            if group == "aspects":
                aspects[review["id"]][record_id] = sentiment
            elif group == "technicians":
                people[review["id"]][record_id] = sentiment
    return aspects, people


def stars_method(inputs: list[dict], profile: Profile) -> tuple[Labels, Labels]:
    return lexicon_method(inputs, profile, stars_only=True)


def lexicon_quotes(
    review: Mapping, matcher: Matcher, scorer: Scorer
) -> dict[tuple[str, str, str], tuple[float, str]]:
    """The plain baseline's quotes, shaped as analyze's: (group, record, side) -> (strength, sentence), the
    sentence naming the record (by a term or a name) whose clause the lexicon reads that way most strongly."""
    best: dict[tuple[str, str, str], tuple[float, str]] = {}
    for match, clause, sentence in _term_clauses(review, matcher, scorer):
        side = label(clause)
        key = (match.group, match.id, side)
        if side != "neutral" and abs(clause) > best.get(key, (0.0, ""))[0]:
            best[key] = (abs(clause), sentence.text)
    return best


# --- scoring -------------------------------------------------------------------------------------------


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    agree: int = 0

    def add(self, truth: Labels, found: Labels) -> None:
        for unit, true in truth.items():
            got = found.get(unit, {})
            hits = set(true) & set(got)
            self.tp += len(hits)
            self.fp += len(set(got) - set(true))
            self.fn += len(set(true) - set(got))
            self.agree += sum(true[k] == got[k] for k in hits)

    def include(self, other: Counts) -> None:
        """Add another set of units' counts to these."""
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.agree += other.agree

    def f1(self) -> float:
        return 2 * self.tp / (2 * self.tp + self.fp + self.fn) if self.tp else 0.0

    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp else 0.0

    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp else 0.0

    def polarity(self) -> float:
        return self.agree / self.tp if self.tp else 0.0


METHODS = ("model", "lexicon", "stars")
QUOTED_GROUPS = ("aspects", "technicians")


@dataclass
class QuoteCounts:
    """Of the sentences a method would quote for a record's side (per review, record and side, positive or
    negative), how many the labels give that record that side, and how many the opposite side; per group."""

    quoted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(QUOTED_GROUPS, 0))
    agree: dict[str, int] = field(default_factory=lambda: dict.fromkeys(QUOTED_GROUPS, 0))
    opposite: dict[str, int] = field(default_factory=lambda: dict.fromkeys(QUOTED_GROUPS, 0))

    def add(self, quotes: Mapping[tuple[str, str, str], tuple[float, str]], labelled: Sequence) -> None:
        for (group, record_id, side), (_, text) in quotes.items():
            if group not in self.quoted or side == "neutral":
                continue
            labelled_sides = {found.get((group, record_id)) for found in _labels_of(text, labelled)}
            self.quoted[group] += 1
            if side in labelled_sides:
                self.agree[group] += 1
            elif OPPOSITES[side] in labelled_sides:
                self.opposite[group] += 1

    def share(self, group: str, counts: dict[str, int]) -> float:
        return counts[group] / self.quoted[group] if self.quoted[group] else 0.0


def _labels_of(text: str, labelled: Sequence[tuple[str, dict]]) -> list[dict]:
    """The labels of the sentence quoted: analyze splits the review again, so the labelled sentence that is
    the quote, or else those that hold it or that it holds."""
    same = [found for sentence, found in labelled if sentence == text]
    if same:
        return same
    return [found for sentence, found in labelled if text in sentence or sentence in text]


def run_methods(
    units: Units,
    model: Model,
    results: dict[str, tuple[Counts, Counts]],
    quotes: dict[str, QuoteCounts] | None = None,
) -> None:
    """Add each method's counts over these units (grouped by profile) to `results`; with `quotes`, the model's
    quotes and the lexicon baseline's, checked against the sentences' labels."""
    by_profile: dict[int, list[dict]] = defaultdict(list)
    profiles = {}
    for unit in units.inputs:
        profile = units.profiles[unit["id"]]
        by_profile[id(profile)].append(unit)
        profiles[id(profile)] = profile
    analyses: dict[str, Any] = {}  # each review's analysis, kept only when its quotes are scored
    kept = analyses if quotes is not None else None
    predictors = {"model": model_method(model, kept), "lexicon": lexicon_method, "stars": stars_method}
    for name in METHODS:
        aspect_counts, people_counts = results.setdefault(name, (Counts(), Counts()))
        for key, inputs in by_profile.items():
            found_aspects, found_people = predictors[name](inputs, profiles[key])
            ids = [u["id"] for u in inputs]
            aspect_counts.add({i: units.aspects[i] for i in ids}, found_aspects)
            people_counts.add({i: units.people[i] for i in ids}, found_people)
    if quotes is None:
        return
    for key, inputs in by_profile.items():
        matcher = Matcher(profiles[key])
        scorer = Scorer.for_overrides(profiles[key].sentiment_overrides)
        for unit in inputs:
            labelled = units.sentences.get(unit["id"], [])
            quotes.setdefault("model", QuoteCounts()).add(analyses[unit["id"]].quotes, labelled)
            quotes.setdefault("lexicon", QuoteCounts()).add(lexicon_quotes(unit, matcher, scorer), labelled)


def print_quotes(quotes: Mapping[str, QuoteCounts]) -> None:
    print("  quotes: of the sentences each method would quote for a record's side (per review, record")
    print("  and side), the share labelled that side for that record, the share labelled the opposite")
    print(f"  {'method':<8} {'aspects':>9} {'opposite':>9} {'of':>7} {'people':>9} {'opposite':>9} {'of':>7}")
    for name, counts in quotes.items():
        row = []
        for group in QUOTED_GROUPS:
            row.append(
                f"{counts.share(group, counts.agree):9.3f} {counts.share(group, counts.opposite):9.3f} "
                f"{counts.quoted[group]:7d}"
            )
        print(f"  {name:<8} " + " ".join(row))


def print_table(title: str, results: Mapping[str, tuple[Counts, Counts]]) -> None:
    aspects, people = next(iter(results.values()))  # every row counts the same labels
    print(
        f"{title}: {aspects.tp + aspects.fn} labelled aspect pairs, {people.tp + people.fn} labelled people"
    )
    heads = ("precision", "recall", "F1", "polarity", "people F1", "people pol")
    print(f"  {'method':<8} " + " ".join(f"{head:>9}" for head in heads))
    for name, (a, p) in results.items():
        print(
            f"  {name:<8} {a.precision():9.3f} {a.recall():9.3f} {a.f1():9.3f} {a.polarity():9.3f} "
            f"{p.f1():9.3f} {p.polarity():9.3f}"
        )


# --- the bundled sample ---------------------------------------------------------------------------------


def sample_units() -> Units:
    """The bundled sample (data/reviews.json) against its held-out labels (corpus/held-out/sample-*.jsonl:
    labelled twice by the guideline and adjudicated, never trained on), read with its business.toml (the
    chiropractic preset's aspects, the clinic's staff)."""
    import train_model

    profile = load_profile(ROOT / "data", required=True)
    person_ids = {p["name"]: p["id"] for p in profile.practitioners}
    labelled = train_model.load_corpus(sorted((ROOT / "corpus" / "held-out").glob("sample-*.jsonl")))
    truth = {review["id"]: review for review in labelled}
    reviews = json.loads((ROOT / "data" / "reviews.json").read_text("utf-8"))["reviews"]
    units = Units()
    for review in reviews:
        sentences = truth[review["id"]]["sentences"] if review["id"] in truth else []
        units.inputs.append(review)
        units.aspects[review["id"]] = _aggregated(sentences, "aspects", {})
        units.people[review["id"]] = _aggregated(sentences, "people", person_ids)
        units.profiles[review["id"]] = profile
        units.sentences[review["id"]] = _sentence_labels(sentences, person_ids)
    return units


def _aggregated(sentences: Sequence[dict], group: str, ids: Mapping[str, str]) -> dict[str, str]:
    """A review's labels for one group: each record's sentence labels by the stated rule."""
    votes: dict[str, list[str]] = defaultdict(list)
    for sentence in sentences:
        for key, polarity in sentence.get(group, {}).items():
            votes[ids.get(key, key)].append(polarity)
    return {key: aggregate_mentions(found) for key, found in votes.items()}


def _sentence_labels(sentences: Sequence[dict], ids: Mapping[str, str]) -> list[tuple[str, dict]]:
    """Each sentence's text and labels, {(group, record id): sentiment}, staff under their ids."""
    labelled = []
    for sentence in sentences:
        found = {("aspects", key): polarity for key, polarity in sentence.get("aspects", {}).items()}
        for name, polarity in sentence.get("people", {}).items():
            found[(STAFF_GROUP, ids.get(name, name))] = polarity
        labelled.append((sentence["text"], found))
    return labelled


def run_sample(args: argparse.Namespace) -> None:
    results: dict[str, tuple[Counts, Counts]] = {}
    quotes: dict[str, QuoteCounts] = {}
    run_methods(sample_units(), shipped_model(), results, quotes)
    print_table("bundled sample (320 reviews, held-out labels, its business.toml, shipped model)", results)
    print_quotes(quotes)


# --- the corpus, cross-validated ----------------------------------------------------------------------


def corpus_units(reviews: Sequence[dict], by_sentence: bool) -> Units:
    """The corpus reviews as units: whole reviews (labels aggregated by the stated rule) or sentences."""
    import train_model

    units = Units()
    profiles: dict[str, Profile] = {}
    for review in reviews:
        key = review["trade"] + json.dumps(review.get("staff", []), sort_keys=True)
        profile = profiles.setdefault(key, train_model.review_profile(review))
        ids = {p["name"]: train_model.slug(p["name"]) for p in review.get("staff", [])}
        pieces = (
            [(f"{review['id']}/{n}", [s]) for n, s in enumerate(review["sentences"])]
            if by_sentence
            else [(review["id"], review["sentences"])]
        )
        for unit_id, sentences in pieces:
            text = " ".join(s["text"] for s in sentences)
            units.inputs.append(
                {"id": unit_id, "rating": review["rating"], "date": "2026-01-01", "text": text}
            )
            units.aspects[unit_id] = _aggregated(sentences, "aspects", {})
            units.people[unit_id] = _aggregated(sentences, "people", ids)
            units.profiles[unit_id] = profile
            if not by_sentence:
                units.sentences[unit_id] = _sentence_labels(sentences, ids)
    return units


def folds(reviews: Sequence[dict], k: int) -> list[list[dict]]:
    ordered = sorted(reviews, key=lambda r: r["id"])
    return [ordered[i::k] for i in range(k)]


def cross_validate(
    reviews: Sequence[dict], k: int, fraction: float = 1.0, choose: bool = True, jobs: int = 1
) -> dict:
    import train_model

    results: dict[str, Any] = {"review": {}, "sentence": {}, "quotes": {}, "folds": []}
    parts = folds(reviews, k)
    for held_out in range(k):
        training = [r for i, part in enumerate(parts) if i != held_out for r in part]
        training = training[: max(1, round(len(training) * fraction))]
        model = Model(train_model.train(training, choose=choose, jobs=jobs))
        this_fold: dict[str, tuple[Counts, Counts]] = {}
        run_methods(corpus_units(parts[held_out], by_sentence=False), model, this_fold, results["quotes"])
        for name, (aspects, people) in this_fold.items():
            all_aspects, all_people = results["review"].setdefault(name, (Counts(), Counts()))
            all_aspects.include(aspects)
            all_people.include(people)
        results["folds"].append(this_fold["model"])
        run_methods(corpus_units(parts[held_out], by_sentence=True), model, results["sentence"])
    return results


def print_fold_spread(by_fold: Sequence[tuple[Counts, Counts]]) -> None:
    """The model's lowest and highest figure over the held-out folds: how far one figure moves with the
    reviews it is taken on, beside the distance to a target."""
    figures = {
        "F1": [aspects.f1() for aspects, _ in by_fold],
        "polarity": [aspects.polarity() for aspects, _ in by_fold],
        "people pol": [people.polarity() for _, people in by_fold],
    }
    spread = ", ".join(f"{name} {min(values):.3f} to {max(values):.3f}" for name, values in figures.items())
    print(f"  the model on each fold alone: {spread}")


def corpus_reviews() -> list[dict]:
    import train_model

    return train_model.load_corpus(train_model.corpus_paths())


def run_cv(args: argparse.Namespace) -> None:
    reviews = corpus_reviews()
    results = cross_validate(reviews, args.folds, jobs=args.jobs)
    title = f"corpus, {args.folds}-fold cross-validation by review ({len(reviews)} reviews)"
    print_table(f"{title}, per review", results["review"])
    print_fold_spread(results["folds"])
    print_quotes(results["quotes"])
    print_table(f"{title}, per sentence", results["sentence"])


def without_lexicon(function: Callable) -> Callable:
    """polarity_features without the lexicon's scores: what the model is worth without VADER's lexicon."""

    def stripped(*args: Any, **kwargs: Any) -> dict[str, float]:
        return {k: v for k, v in function(*args, **kwargs).items() if not k.startswith("lex:")}

    return stripped


def run_curve(args: argparse.Namespace) -> None:
    reviews = corpus_reviews()
    print(f"learning curve: {args.folds}-fold CV by review on {len(reviews)} reviews, per review")
    print(f"  {'training share':<22} {'F1':>6} {'polarity':>9} {'people pol':>11}")
    for fraction in (0.25, 0.5, 1.0):
        cross_validated = cross_validate(reviews, args.folds, fraction, choose=False, jobs=args.jobs)
        results = cross_validated["review"]["model"]
        print(
            f"  {fraction:>5.0%} of training folds  {results[0].f1():6.3f} {results[0].polarity():9.3f} "
            f"{results[1].polarity():11.3f}"
        )
    import train_model

    original = feature_module.polarity_features
    patched = without_lexicon(original)
    train_model.polarity_features = review_module.polarity_features = patched  # the ablation only
    try:
        results = cross_validate(reviews, args.folds, choose=False, jobs=args.jobs)["review"]["model"]
    finally:
        train_model.polarity_features = review_module.polarity_features = original
    print(
        f"  {'100%, no lexicon':<22} {results[0].f1():6.3f} {results[0].polarity():9.3f} "
        f"{results[1].polarity():11.3f}"
    )


# --- SemEval-2014 XML -----------------------------------------------------------------------------------

SEMEVAL_CATEGORIES = ("food", "service", "price", "ambience")  # misc has no counterpart in a preset
PRESET_TO_SEMEVAL = {"drinks": "food"}  # SemEval's food covers drinks; location has no category


def run_semeval(args: argparse.Namespace) -> None:
    import xml.etree.ElementTree as ElementTree

    path = args.semeval or os.environ.get("SEMEVAL2014_RESTAURANTS_TEST")
    if not path or not Path(path).is_file():
        print("SemEval XML: not run: pass --semeval FILE (or set SEMEVAL2014_RESTAURANTS_TEST)")
        return
    profile = parse_profile(render_preset("restaurant"))
    units = Units()
    for number, sentence in enumerate(ElementTree.parse(path).getroot().iter("sentence")):
        unit_id = f"s{number}"
        units.inputs.append(
            {"id": unit_id, "rating": 3, "date": "2014-01-01", "text": sentence.findtext("text")}
        )
        labels = {c.get("category"): c.get("polarity") for c in sentence.iter("aspectCategory")}
        units.aspects[unit_id] = {
            c: p for c, p in labels.items() if c in SEMEVAL_CATEGORIES and p != "conflict"
        }
        units.people[unit_id] = {}
        units.profiles[unit_id] = profile
    results: dict[str, tuple[Counts, Counts]] = {}
    original = {"model": model_method(shipped_model()), "lexicon": lexicon_method, "stars": stars_method}
    for name, predict in original.items():
        found, _ = predict(units.inputs, profile)
        mapped = {
            u: {
                PRESET_TO_SEMEVAL.get(a, a): s
                for a, s in got.items()
                if PRESET_TO_SEMEVAL.get(a, a) in SEMEVAL_CATEGORIES
            }
            for u, got in found.items()
        }
        counts = Counts()
        counts.add(units.aspects, mapped)
        results[name] = (counts, Counts())
    print_table(f"SemEval XML {Path(path).name} (stars unknown: every sentence rated 3)", results)


def run_passes(args: argparse.Namespace) -> None:
    """Each labelling pass scored like a method against the settled labels: how far one careful human
    reader is from them, the ceiling to read the model's figures against."""
    import train_model

    settled = {review["id"]: review for review in corpus_reviews()}
    results: dict[str, tuple[Counts, Counts]] = {}
    for number in (1, 2):
        aspect_counts, people_counts = results.setdefault(f"pass {number}", (Counts(), Counts()))
        for path in sorted((train_model.CORPUS / "passes").glob(f"*.pass{number}.jsonl")):
            for review in train_model.load_corpus([path]):
                final = settled.get(review["id"])
                if final is None:  # a held-out part's pass: not the corpus
                    continue
                ids = {p["name"]: train_model.slug(p["name"]) for p in final.get("staff", [])}
                unit = review["id"]
                aspect_counts.add(
                    {unit: _aggregated(final["sentences"], "aspects", {})},
                    {unit: _aggregated(review["sentences"], "aspects", {})},
                )
                people_counts.add(
                    {unit: _aggregated(final["sentences"], "people", ids)},
                    {unit: _aggregated(review["sentences"], "people", ids)},
                )
    print_table(
        f"each labelling pass against the settled labels ({len(settled)} reviews), per review", results
    )


RUNNERS = {
    "sample": run_sample,
    "cv": run_cv,
    "curve": run_curve,
    "passes": run_passes,
    "semeval": run_semeval,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=[*RUNNERS, "all"], default="all")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--semeval", type=Path)
    parser.add_argument(
        "--jobs", type=jobs_count, default=usable_cores(), help="processes fitting a fold's model"
    )
    args = parser.parse_args(argv)
    for name, run in RUNNERS.items():
        if args.corpus in (name, "all"):
            run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
