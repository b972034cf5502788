#!/usr/bin/env python3
"""Train the model `reviewsd analyze` applies, from the labelled corpus (docs/corpus.md), and write it as
analysis/model.json.gz. Needs the `train` extra (scikit-learn, numpy); `analyze` never imports them.

usage: python tools/train_model.py [--out PATH] [--jobs N] [PART.jsonl ...]   (default: every corpus/*.jsonl)

Deterministic: the same corpus gives the same file (fixed solvers, sorted features, no randomness, one BLAS
thread a process), whatever --jobs (the processes fitting the models: the usable CPUs by default).
Three linear models, each a sum of weights over a sentence's features (analysis/features.py):
  detection  one logistic regression per preset aspect: does the sentence talk about it?
  polarity   for every mention, aspect or person: negative, neutral or positive, one logistic regression
             per sentiment against the other two, from the clause around the mention, the sentence (words
             scaled by their Naive Bayes ratios), the lexicon, the stars
  staff      one logistic regression: does a staff member's name found in a sentence mean them?
Regularisation strengths are chosen by 3-fold cross-validation by review within the training data only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Iterable, Sequence

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__" and __package__ is None:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT.parent))
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "reviewsd_app", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["reviewsd_app"] = module
    spec.loader.exec_module(module)

# tools/fitting.py, beside this file
from fitting import Fit, candidate, choose_c, logistic, matrix, run_fits  # noqa: E402

from reviewsd_app.analysis.batch import usable_cores  # noqa: E402
from reviewsd_app.analysis.features import (  # noqa: E402
    detection_features,
    names_replaced,
    pronoun_index,
    role_words,
    staff_context,
    staff_reference_features,
)
from reviewsd_app.analysis.lexicon import Scorer  # noqa: E402
from reviewsd_app.analysis.matcher import Matcher  # noqa: E402
from reviewsd_app.analysis.model import CLASSES  # noqa: E402
from reviewsd_app.analysis.review import (  # noqa: E402
    StaffBefore,
    aspect_phrases,
    is_full_name,
    mention_features,
    score_sentence,
    staff_names,
)
from reviewsd_app.authoring.presets import render_preset  # noqa: E402
from reviewsd_app.authoring.profile import Profile, parse_profile  # noqa: E402
from reviewsd_app.cli.commands import jobs_count  # noqa: E402

CORPUS = ROOT / "corpus"
OUT = ROOT / "analysis" / "model.json.gz"
TRADE_PRESETS = {
    "restaurant": "restaurant",
    "dental": "dental",
    "chiropractic": "chiropractic",
    "home-services": "home-services",
    "general": "general",
}
DETECTION_C = (1.0, 3.0, 10.0)
POLARITY_C = (0.3, 1.0, 3.0)
# Without a choice (train(choose=False): the learning curve's fits), the polarity model's strength is the
# one the trainer chose for model 3.3 (0.3 until then, the choice of the grid before), the heads' their
# grid's middle.
FIXED_POLARITY_C = 1.0
FIXED_DETECTION_C = 3.0
STAFF_C = 1.0
MIN_FEATURE_COUNT = 2  # a feature seen once in the training data gets no weight
THRESHOLDS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
# Below the threshold, a preset term still counts while the head gives it at least this much: 0 lets every
# term count ("Nobody refilled our drinks." is a drinks mention), higher lets the head overrule the term.
TERM_BARS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2)
# A term of two or more words ("genuinely cares") has a bar of its own, chosen after the others, at or under
# the term bar: the lowest whose F1 is within this of the best, since the corpus cannot tell those apart
# and a phrase in a profile is its writer's deliberate words, where a word may mean something else.
PHRASE_BAR_TIE = 0.0001
# The heads' and the staff model's weights smaller than this are left out of the file: at 0.005 it was 1.5 MB
# and analyze up to a fifth slower; at 0.05, 0.84 MB and as fast as before, the same figures on the sample.
PRUNE = 0.05
# The polarity model's own bar, higher: a quarter fewer weights for 0.0002 / 0.0003 per mention (aspects /
# people; bench/polarity_mentions.py --prune 0.05,0.1), room in the file's size for a larger corpus.
POLARITY_PRUNE = 0.1
# The polarity model's word features that it scales (analysis/features.py polarity_features: an aspect's
# clause, the words before a contrast, the sentence's, the clause's named by the aspect). Read as NBSVM reads
# them, one binary model per sentiment over words scaled by their Naive Bayes ratios: per mention on the
# corpus (5-fold by review, 140,508 mentions) aspects 0.9188 -> 0.9227 and people 0.8725 -> 0.8769 against
# one multinomial model of the words as they are. A person's clause ("pc:") keeps its words as they are:
# scaled too, people 0.8740 (the same words narrate beside praise and beside a complaint).
SCALED_PREFIXES = ("ac:", "pre:", "s:", "aw:")


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


@cache
def preset_profile(trade: str) -> Profile:
    """The preset's aspects and sentiment overrides (its people and services are placeholders)."""
    profile = parse_profile(render_preset(TRADE_PRESETS[trade]))
    return Profile(aspects=profile.aspects, sentiment_overrides=profile.sentiment_overrides)


def review_profile(review: dict) -> Profile:
    preset = preset_profile(review["trade"])
    staff = tuple(
        {
            "id": slug(p["name"]),
            "name": p["name"],
            "aliases": list(p.get("aliases", [])),
            "role": p.get("role", ""),
        }
        for p in review.get("staff", [])
    )
    return Profile(
        aspects=preset.aspects, sentiment_overrides=preset.sentiment_overrides, practitioners=staff
    )


@cache
def _readers(trade: str, staff_key: str) -> tuple[Matcher, Scorer]:
    review = {"trade": trade, "staff": json.loads(staff_key)}
    profile = review_profile(review)
    return Matcher(profile), Scorer.for_overrides(profile.sentiment_overrides)


def readers(review: dict) -> tuple[Matcher, Scorer]:
    return _readers(review["trade"], json.dumps(review.get("staff", []), sort_keys=True))


@dataclass
class Examples:
    """The training rows of some reviews, each tagged with its review's index (for folds by review)."""

    detection: list[tuple[int, str, list[str], bool]]  # review, trade, features, {aspect: labelled}
    detection_labels: list[dict[str, bool]]
    detection_phrases: list[set[str]]  # the aspects a sentence names by a term of two or more words
    polarity: list[tuple[int, dict[str, float], str]]
    staff: list[tuple[int, list[str], bool]]


def aspect_span(sentence: Any, aspect: str) -> tuple[int, int] | None:
    for match in sentence.matches:
        if match.group == "aspects" and match.id == aspect:
            return match.first, match.last
    return None


def _someone_else(match: Any, not_staff: set[str]) -> bool:
    """Whether a staff name found in a sentence is labelled as someone else there ("my friend Tom")."""
    return match.term in not_staff or any(match.term in name.split() for name in not_staff)


def examples(reviews: Sequence[dict]) -> Examples:
    found = Examples([], [], [], [], [])
    for index, review in enumerate(reviews):
        matcher, scorer = readers(review)
        aspects = [a["id"] for a in preset_profile(review["trade"]).aspects]
        ids = {p["name"]: slug(p["name"]) for p in review.get("staff", [])}
        roles = {slug(p["name"]): role_words(p.get("role", "")) for p in review.get("staff", [])}
        before = StaffBefore()  # as analyze keeps it (analysis/review.py)
        for labelled in review["sentences"]:
            sentence = score_sentence(labelled["text"], matcher, scorer)
            tokens = sentence.tokens
            hits = [m.id for m in sentence.matches if m.group == "aspects"]
            not_staff = {n.lower() for n in labelled.get("not_staff", [])}
            staff_matches = [m for m in sentence.matches if m.group == "technicians"]
            # the staff it names, as analyze takes them: every name but those labelled someone else
            named_ids = list(dict.fromkeys(m.id for m in staff_matches if not _someone_else(m, not_staff)))
            named_roles = tuple(roles[i] for i in named_ids if i in roles)
            context = staff_context(named_roles, before.roles, tokens)
            pronoun_at = pronoun_index(tokens)
            referred = None  # the staff member its "he" or "she" means, as analyze reads it
            if not staff_matches and pronoun_at is not None:
                referred = before.meant_by(tokens[pronoun_at])
            before = before.after(named_ids, roles)
            words = names_replaced(tokens, staff_names(sentence))  # as analyze reads them
            found.detection.append((index, review["trade"], detection_features(words, hits, context), True))
            found.detection_labels.append({a: a in labelled.get("aspects", {}) for a in aspects})
            found.detection_phrases.append(set(aspect_phrases(sentence)))
            for aspect, polarity in labelled.get("aspects", {}).items():
                span = aspect_span(sentence, aspect)
                features = mention_features(sentence, words, "aspects", aspect, span, review["rating"])
                found.polarity.append((index, features, polarity))
            people = {ids[name]: polarity for name, polarity in labelled.get("people", {}).items()}
            seen = set()
            for match in staff_matches:
                if match.id in seen:
                    continue
                seen.add(match.id)
                features = staff_reference_features(tokens, match.first, match.last, is_full_name(match))
                if match.id in people:
                    found.staff.append((index, features, True))
                    span = (match.first, match.last)
                    pf = mention_features(sentence, words, "technicians", match.id, span, review["rating"])
                    found.polarity.append((index, pf, people[match.id]))
                elif _someone_else(match, not_staff):
                    found.staff.append((index, features, False))
            # named in a way the matcher missed: the whole sentence; by "he" or "she": from the pronoun
            for person_id, polarity in people.items():
                if person_id not in seen:
                    span = (pronoun_at, pronoun_at) if person_id == referred else None
                    pf = mention_features(sentence, words, "technicians", person_id, span, review["rating"])
                    found.polarity.append((index, pf, polarity))
    return found


def _vocabulary(rows: Iterable[Iterable[str]]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for row in rows:
        counts.update(set(row))
    kept = sorted(f for f, n in counts.items() if n >= MIN_FEATURE_COUNT)
    return {f: i for i, f in enumerate(kept)}


def _detection_bars(
    scored: Sequence[tuple[float, bool, bool, bool, tuple[int, str]]],
) -> tuple[float, float, float]:
    """The detection threshold, the term bar and the phrase bar with the best pooled out-of-fold F1 over
    every head, counted as the insights count: per (review, aspect) pair, found when one of its sentences
    is. A sentence counts as detected when the head's probability reaches the threshold, or when it names
    one of the aspect's terms and the probability reaches the term bar, or the phrase bar for a term of two
    or more words (as in `analyze`). Each scored sentence is (probability, labelled, names a term, names a
    phrase term, (its review's index, the aspect))."""
    labelled: dict[tuple[int, str], bool] = {}  # the same for every bar: a pair is labelled if a sentence is
    for _, is_labelled, _, _, pair in scored:
        labelled[pair] = labelled.get(pair, False) or is_labelled
    positives = sum(labelled.values())

    def f1_at(threshold: float, term_bar: float, phrase_bar: float) -> float:
        detected = set()
        for probability, _, term, phrase, pair in scored:
            bar = phrase_bar if phrase else term_bar
            if probability >= threshold or (term and probability >= bar):
                detected.add(pair)
        tp = sum(1 for pair in detected if labelled[pair])
        fp = len(detected) - tp
        fn = positives - tp
        return 2 * tp / (2 * tp + fp + fn) if tp else 0.0

    best = (-1.0, 0.5, 0.0)
    for threshold in THRESHOLDS:
        for term_bar in TERM_BARS:
            f1 = f1_at(threshold, term_bar, term_bar)
            if f1 > best[0] + 1e-9:
                best = (f1, threshold, term_bar)
    _, threshold, term_bar = best
    phrase_f1 = {bar: f1_at(threshold, term_bar, bar) for bar in TERM_BARS if bar <= term_bar}
    top = max(phrase_f1.values())
    phrase_bar = min(bar for bar, f1 in phrase_f1.items() if f1 >= top - PHRASE_BAR_TIE)
    return threshold, term_bar, phrase_bar


def _scaled_columns(features: Sequence[str], prefixes: tuple[str, ...] = SCALED_PREFIXES) -> Any:
    """Which of the polarity model's features are the words it scales by their Naive Bayes ratios (those
    named by `prefixes`); a person's clause words, the lexicon's scores, the stars and the rest keep their
    values."""
    import numpy as np

    return np.array([feature.startswith(prefixes) for feature in features])


def _as_dict(features: Sequence[str]) -> dict[str, float]:
    return dict.fromkeys(features, 1.0)


# The file keeps every weight to two decimals: 4.0 MB where four made 5.75, for the same figures (per mention,
# bench/polarity_mentions.py, aspects / people: 0.9225 / 0.8742, four decimals 0.9224 / 0.8742; 84 of model
# 3.7's 135,608 decisions on the corpus's reviews change). Room in the file for a larger corpus.
WEIGHT_DECIMALS = 2


def _round(value: float) -> float:
    return round(float(value), WEIGHT_DECIMALS)


def train(reviews: Sequence[dict], choose: bool = True, jobs: int = 1) -> dict[str, Any]:
    """The model's data (what analysis.model.Model reads) trained on these reviews; `jobs` processes fit
    the logistic regressions (the same data whatever the number)."""
    found = examples(reviews)
    heads = sorted({a for labels in found.detection_labels for a in labels})
    detection_rows = [_as_dict(features) for _, _, features, _ in found.detection]
    detection_vocabulary = _vocabulary(detection_rows)
    features_by_column = sorted(detection_vocabulary, key=detection_vocabulary.get)
    polarity_rows = [features for _, features, _ in found.polarity]
    polarity_labels = [label for _, _, label in found.polarity]
    polarity_groups = [index for index, _, _ in found.polarity]
    polarity_vocabulary = _vocabulary(polarity_rows)
    polarity_features = sorted(polarity_vocabulary, key=polarity_vocabulary.get)
    matrices = {
        "detection": matrix(detection_rows, detection_vocabulary),
        "polarity": matrix(polarity_rows, polarity_vocabulary),
        "polarity scaled words": _scaled_columns(polarity_features),
    }
    # Each head's rows (its trade's sentences) and labels; a head with one label only gets no model.
    head_rows: dict[str, list[int]] = {}
    head_labels: dict[str, list[bool]] = {}
    for head in heads:
        keep = [i for i, labels in enumerate(found.detection_labels) if head in labels]
        labels = [found.detection_labels[i][head] for i in keep]
        if len(set(labels)) == 2:
            head_rows[head], head_labels[head] = keep, labels
    # First every cross-validation fit that chooses a regularisation strength (the polarity model's, the
    # largest, first), then the models kept, each at its strength.
    detection_grid = DETECTION_C if choose else ()
    polarity_grid = POLARITY_C if choose else ()
    candidates = [
        candidate(
            "polarity",
            "polarity",
            range(len(polarity_rows)),
            polarity_labels,
            polarity_groups,
            c,
            multiclass=True,
            scaled="polarity scaled words",
        )
        for c in polarity_grid
    ]
    for head, keep in head_rows.items():
        groups = [found.detection[i][0] for i in keep]
        for c in detection_grid:
            candidates.append(candidate(head, "detection", keep, head_labels[head], groups, c, False))
    fits = [fit for candidate in candidates for fit, _ in candidate.folds]
    fitted = dict(zip(fits, run_fits(fits, matrices, jobs)))
    choices: dict[str, float] = {}
    out_of_fold: list[tuple[float, bool, bool, bool, tuple[int, str]]] = []
    if choose:
        polarity_candidates = [k for k in candidates if k.model == "polarity"]
        choices["polarity"], _ = choose_c(polarity_candidates, fitted, polarity_labels, True)
        for head, keep in head_rows.items():
            head_candidates = [k for k in candidates if k.model == head]
            choices[head], scored = choose_c(head_candidates, fitted, head_labels[head], False)
            term = f"term:{head}"
            for probability, is_labelled, i in scored:
                row = keep[i]
                names_term = term in detection_rows[row]
                names_phrase = head in found.detection_phrases[row]
                pair = (found.detection[row][0], head)
                out_of_fold.append((probability, is_labelled, names_term, names_phrase, pair))
    else:
        choices = {"polarity": FIXED_POLARITY_C, **dict.fromkeys(head_rows, FIXED_DETECTION_C)}
    all_polarity_rows = tuple(range(len(polarity_rows)))
    kept = [
        Fit(
            "polarity",
            all_polarity_rows,
            tuple(polarity_labels),
            choices["polarity"],
            multiclass=True,
            scaled="polarity scaled words",
        )
    ]
    kept += [
        Fit("detection", tuple(keep), tuple(head_labels[head]), choices[head], False)
        for head, keep in head_rows.items()
    ]
    polarity_model, *head_models = run_fits(kept, matrices, jobs)
    head_model = dict(zip(head_rows, head_models))
    bias, weights = [], {}
    for h, head in enumerate(heads):
        if head not in head_model:
            bias.append(-10.0)
            continue
        model = head_model[head]
        bias.append(_round(model.intercept[0]))
        for column, w in enumerate(model.coef[0]):
            if abs(w) >= PRUNE:
                weights.setdefault(features_by_column[column], []).extend([h, _round(w)])
    threshold, term_bar, phrase_bar = _detection_bars(out_of_fold) if choose else (0.4, 0.0, 0.0)
    order = [list(polarity_model.classes).index(k) for k in CLASSES]
    polarity_weights = {}
    for feature, column in polarity_vocabulary.items():
        row = [_round(polarity_model.coef[k][column]) for k in order]
        if max(abs(w) for w in row) >= POLARITY_PRUNE:
            polarity_weights[feature] = row
    staff_rows = [_as_dict(features) for _, features, _ in found.staff]
    staff_labels = [label for _, _, label in found.staff]
    staff_vocabulary = _vocabulary(staff_rows)
    staff: dict[str, Any] = {"bias": 3.0, "weights": {}}  # without both kinds of example: names mean staff
    if len(set(staff_labels)) == 2:
        staff_model = logistic(STAFF_C).fit(matrix(staff_rows, staff_vocabulary), staff_labels)
        staff = {
            "bias": _round(staff_model.intercept_[0]),
            "weights": {
                f: _round(staff_model.coef_[0][col])
                for f, col in staff_vocabulary.items()
                if abs(staff_model.coef_[0][col]) >= PRUNE
            },
        }
    return {
        "info": {
            "reviews": len(reviews),
            "sentences": len(found.detection),
            "mentions": len(found.polarity),
            "staff_names": len(found.staff),
            "regularisation": choices,
        },
        "detect": {
            "heads": heads,
            "bias": bias,
            "threshold": threshold,
            "term_bar": term_bar,
            "phrase_bar": phrase_bar,
            "weights": dict(sorted(weights.items())),
        },
        "polarity": {
            "classes": list(CLASSES),
            "scores": "one-vs-rest",
            "bias": [_round(polarity_model.intercept[k]) for k in order],
            "weights": dict(sorted(polarity_weights.items())),
        },
        "staff": staff,
    }


def load_corpus(paths: Iterable[Path]) -> list[dict]:
    reviews = []
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                reviews.append(json.loads(line))
    return reviews


def corpus_paths() -> list[Path]:
    return sorted(CORPUS.glob("*.jsonl"))


def write_model(data: dict[str, Any], out: Path) -> None:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    out.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--jobs",
        type=jobs_count,
        default=usable_cores(),
        help="processes fitting the models (default: the usable CPUs)",
    )
    parser.add_argument("parts", nargs="*", type=Path)
    args = parser.parse_args(argv)
    reviews = load_corpus(args.parts or corpus_paths())
    data = train(reviews, jobs=args.jobs)
    write_model(data, args.out)
    info = data["info"]
    print(
        f"{args.out}: trained on {info['reviews']} reviews, {info['sentences']} sentences, "
        f"{info['mentions']} labelled mentions, {info['staff_names']} staff names; "
        f"{args.out.stat().st_size:,} bytes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
