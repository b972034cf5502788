#!/usr/bin/env python3
"""Check corpus/*.jsonl against docs/corpus.md: shape, aspect ids per trade, staff names; print counts.

usage: python3 tools/corpus_check.py [FILE...]   (default: corpus/*.jsonl and corpus/held-out/*.jsonl)
Exit status 1 and one line per problem when a file breaks the guideline's shape.
"""

from __future__ import annotations

import collections
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Each trade's aspect ids, read from its preset (the TOML `init` writes from): the standard library only, so
# the check runs with any Python 3.11, without the project installed.
ASPECTS = {
    preset.stem: {aspect["id"] for aspect in tomllib.loads(preset.read_text("utf-8"))["aspects"]}
    for preset in sorted((ROOT / "authoring" / "presets").glob("*.toml"))
}
POLARITIES = {"positive", "negative", "neutral"}
# What a review may be tagged with (docs/corpus.md, "What the corpus must contain").
PHENOMENA = {
    "contrast", "negation", "double-negation", "sarcasm", "irony", "comparison", "hedge", "implicit", "price",
    "wait", "simile", "trade-word", "non-english", "emoji", "short", "long", "name-clash", "mixed",
    "rating-mismatch",
}  # fmt: skip
CORPUS = ROOT / "corpus"


def review_problems(review: dict) -> list[str]:
    """What is wrong with one review record (empty when it follows the guideline)."""
    problems = []
    trade = review.get("trade")
    if trade not in ASPECTS:
        return [f"trade {trade!r} is not one of {sorted(ASPECTS)}"]
    if not isinstance(review.get("id"), str):
        problems.append("id is not a string")
    if review.get("rating") not in (1, 2, 3, 4, 5):
        problems.append(f"rating {review.get('rating')!r} is not an integer 1 to 5")
    language = review.get("language")
    if not (isinstance(language, str) and re.fullmatch("[a-z]{2,3}", language)):
        problems.append(f"language {language!r} is not a language code (en, es, fr...)")
    phenomena = review.get("phenomena", [])
    unknown = sorted(set(phenomena) - PHENOMENA)
    if unknown:
        problems.append(f"phenomena {unknown} are not in docs/corpus.md's list")
    if ("non-english" in phenomena) != (language != "en"):
        problems.append(f"language {language!r} and the non-english tag disagree")
    staff_names = set()
    for person in review.get("staff", []):
        if not isinstance(person, dict) or not isinstance(person.get("name"), str):
            problems.append(f"staff entry {person!r} has no name")
            continue
        staff_names.add(person["name"])
    sentences = review.get("sentences")
    if not isinstance(sentences, list) or not sentences:
        return problems + ["no sentences"]
    for number, sentence in enumerate(sentences, 1):
        if not isinstance(sentence.get("text"), str) or not sentence["text"].strip():
            problems.append(f"sentence {number} has no text")
        for aspect, polarity in sentence.get("aspects", {}).items():
            if aspect not in ASPECTS[trade]:
                problems.append(f"sentence {number}: aspect {aspect!r} is not in the {trade} preset")
            if polarity not in POLARITIES:
                problems.append(f"sentence {number}: polarity {polarity!r}")
        for name, polarity in sentence.get("people", {}).items():
            if name not in staff_names:
                problems.append(f"sentence {number}: person {name!r} is not a staff name")
            if polarity not in POLARITIES:
                problems.append(f"sentence {number}: polarity {polarity!r}")
        if not isinstance(sentence.get("not_staff", []), list):
            problems.append(f"sentence {number}: not_staff is not a list")
    return problems


def main(argv: list[str]) -> int:
    paths = [Path(arg) for arg in argv] or sorted(CORPUS.glob("*.jsonl")) + sorted(
        CORPUS.glob("held-out/*.jsonl")
    )
    failed = False
    seen_ids: set[str] = set()
    for path in paths:
        reviews = sentences = 0
        ratings: collections.Counter = collections.Counter()
        phenomena: collections.Counter = collections.Counter()
        aspect_labels: collections.Counter = collections.Counter()
        for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                review = json.loads(line)
            except ValueError as error:
                print(f"{path.name}:{line_number}: not JSON: {error}")
                failed = True
                continue
            for problem in review_problems(review):
                print(f"{path.name}:{line_number} ({review.get('id')}): {problem}")
                failed = True
            if review.get("id") in seen_ids:
                print(f"{path.name}:{line_number}: duplicate id {review.get('id')}")
                failed = True
            seen_ids.add(review.get("id"))
            reviews += 1
            sentences += len(review.get("sentences") or [])
            ratings[review.get("rating")] += 1
            phenomena.update(review.get("phenomena", []))
            for sentence in review.get("sentences") or []:
                aspect_labels.update(f"{a}:{p}" for a, p in sentence.get("aspects", {}).items())
        print(f"{path.name}: {reviews} reviews, {sentences} sentences; stars {dict(sorted(ratings.items()))}")
        print(f"  phenomena {dict(phenomena.most_common())}")
        print(f"  labels {dict(sorted(aspect_labels.items()))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
