#!/usr/bin/env python3
"""The bundled sample (data/reviews.json) as held-out corpus parts to label, never trained on.

usage:
  corpus_sample.py text              corpus/passes/sample-a.text.jsonl and sample-b.text.jsonl: the sample's
                                     reviews with text (first and second half), split into sentences as
                                     `analyze` splits them, the chiropractic preset's practitioners as staff,
                                     no labels
  corpus_sample.py first PART FILE   corpus/held-out/PART.jsonl from PART.text.jsonl and the first labelling
                                     pass in FILE (one line per review, as corpus_passes.py fill reads)
Then the second pass and its adjudication run as for any part: corpus_passes.py strip/fill/diff/apply PART.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import corpus_passes  # noqa: E402

from reviewsd_app.analysis.text import split_sentences  # noqa: E402
from reviewsd_app.authoring.profile import load_profile  # noqa: E402

HELD_OUT = ROOT / "corpus" / "held-out"
PARTS = ("sample-a", "sample-b")
BUSINESS = "Bundled sample (chiropractic preset)"


def sample_reviews() -> list[dict]:
    profile = load_profile(ROOT / "data")  # the sample's own staff
    staff = [
        {"name": p["name"], "role": p.get("role", ""), "aliases": list(p.get("aliases", []))}
        for p in profile.practitioners
    ]
    reviews = json.loads((ROOT / "data" / "reviews.json").read_text("utf-8"))["reviews"]
    return [
        {
            "id": review["id"],
            "trade": "chiropractic",
            "business": BUSINESS,
            "staff": staff,
            "rating": review["rating"],
            "language": "en",
            "sentences": [
                {"text": text, "aspects": {}, "people": {}, "not_staff": []}
                for text in split_sentences(review["text"])
            ],
        }
        for review in reviews
    ]


def write_text() -> None:
    corpus_passes.PASSES.mkdir(exist_ok=True)
    reviews = sample_reviews()
    half = (len(reviews) + 1) // 2
    for part, chunk in zip(PARTS, (reviews[:half], reviews[half:])):
        chunk = [review for review in chunk if review["sentences"]]  # a rating alone has nothing to label
        corpus_passes.write_lines(corpus_passes.PASSES / f"{part}.text.jsonl", chunk)
        print(f"{part}: {len(chunk)} reviews, {sum(len(r['sentences']) for r in chunk)} sentences")


def first_pass(part: str, labels_path: Path) -> None:
    """The first pass made into the held-out part file (the second pass then checks it blind)."""
    corpus_passes.fill(part, labels_path)  # writes PART.pass2.jsonl from the text and the labels
    filled = corpus_passes.PASSES / f"{part}.pass2.jsonl"
    HELD_OUT.mkdir(exist_ok=True)
    target = HELD_OUT / f"{part}.jsonl"
    reviews = corpus_passes.read_lines(filled)
    for review in reviews:
        review.setdefault("phenomena", [])
    corpus_passes.write_lines(target, reviews)
    filled.unlink()
    print(f"{target}: {len(reviews)} reviews")


def main(argv: list[str]) -> int:
    if argv[:1] == ["text"] and len(argv) == 1:
        write_text()
    elif argv[:1] == ["first"] and len(argv) == 3:
        first_pass(argv[1], Path(argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
