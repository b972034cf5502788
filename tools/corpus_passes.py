#!/usr/bin/env python3
"""The corpus's second labelling pass and its adjudication (docs/corpus.md).

usage:
  corpus_passes.py strip PART          corpus/passes/PART.pass1.jsonl (the part as its writer labelled it)
                                       and PART.text.jsonl (the same reviews with every label removed)
  corpus_passes.py fill PART FILE      PART.pass2.jsonl from PART.text.jsonl and the second pass's labels in
                                       FILE: one line per review, {"id", "sentences": [{"aspects", "people",
                                       "not_staff"}, ...]} with one entry per sentence, in order
  corpus_passes.py diff PART           every label on which PART.pass1 and PART.pass2 disagree, one JSON
                                       line each: {"id", "sentence", "field", "key", "pass1", "pass2"}
  corpus_passes.py apply PART FILE     corpus/PART.jsonl rewritten from pass 1 with the decisions in FILE
                                       (lines of the diff's shape plus "final": a polarity, or null to drop
                                       the label; for not_staff, true to keep the name, false to drop it)
PART is a part file's name without .jsonl (restaurant-a, dental, ...; sample-a in corpus/held-out/).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
PASSES = CORPUS / "passes"
LABEL_FIELDS = ("aspects", "people")


def part_file(part: str) -> Path:
    """corpus/PART.jsonl, or corpus/held-out/PART.jsonl for a part kept out of training."""
    held_out = CORPUS / "held-out" / f"{part}.jsonl"
    return held_out if held_out.exists() else CORPUS / f"{part}.jsonl"


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_lines(path: Path, reviews: list[dict]) -> None:
    text = "".join(json.dumps(review, ensure_ascii=False) + "\n" for review in reviews)
    path.write_text(text, encoding="utf-8")


def strip(part: str) -> None:
    PASSES.mkdir(exist_ok=True)
    reviews = read_lines(part_file(part))
    write_lines(PASSES / f"{part}.pass1.jsonl", reviews)
    unlabelled = []
    for review in reviews:
        copy = {key: value for key, value in review.items() if key != "phenomena"}
        copy["sentences"] = [
            {"text": sentence["text"], "aspects": {}, "people": {}, "not_staff": []}
            for sentence in review["sentences"]
        ]
        unlabelled.append(copy)
    write_lines(PASSES / f"{part}.text.jsonl", unlabelled)
    print(f"{len(reviews)} reviews: {PASSES / (part + '.pass1.jsonl')} and {PASSES / (part + '.text.jsonl')}")


def fill(part: str, labels_path: Path) -> None:
    reviews = read_lines(PASSES / f"{part}.text.jsonl")
    labels = {row["id"]: row["sentences"] for row in read_lines(labels_path)}
    missing = [review["id"] for review in reviews if review["id"] not in labels]
    if missing:
        sys.exit(f"{labels_path} lacks {len(missing)} reviews, the first {missing[0]}")
    for review in reviews:
        sentence_labels = labels[review["id"]]
        if len(sentence_labels) != len(review["sentences"]):
            sys.exit(
                f"{review['id']}: {len(sentence_labels)} labels for {len(review['sentences'])} sentences"
            )
        for sentence, label in zip(review["sentences"], sentence_labels):
            sentence["aspects"] = label.get("aspects", {})
            sentence["people"] = label.get("people", {})
            sentence["not_staff"] = label.get("not_staff", [])
    write_lines(PASSES / f"{part}.pass2.jsonl", reviews)
    print(f"{PASSES / (part + '.pass2.jsonl')}: {len(reviews)} reviews")


def disagreements(first: dict, second: dict) -> list[dict]:
    """The labels of one review on which two passes differ."""
    found = []
    for number, (one, two) in enumerate(zip(first["sentences"], second["sentences"])):
        for field in LABEL_FIELDS:
            labels_one, labels_two = one.get(field, {}), two.get(field, {})
            for key in sorted(set(labels_one) | set(labels_two)):
                if labels_one.get(key) != labels_two.get(key):
                    found.append(
                        {
                            "id": first["id"],
                            "sentence": number,
                            "text": one["text"],
                            "field": field,
                            "key": key,
                            "pass1": labels_one.get(key),
                            "pass2": labels_two.get(key),
                        }
                    )
        names_one, names_two = set(one.get("not_staff", [])), set(two.get("not_staff", []))
        for name in sorted(names_one ^ names_two):
            found.append(
                {
                    "id": first["id"],
                    "sentence": number,
                    "text": one["text"],
                    "field": "not_staff",
                    "key": name,
                    "pass1": name in names_one,
                    "pass2": name in names_two,
                }
            )
    return found


def diff(part: str) -> None:
    first = {review["id"]: review for review in read_lines(PASSES / f"{part}.pass1.jsonl")}
    second = {review["id"]: review for review in read_lines(PASSES / f"{part}.pass2.jsonl")}
    missing = sorted(set(first) - set(second))
    if missing:
        print(f"pass 2 lacks {len(missing)} reviews: {missing[:10]}", file=sys.stderr)
    for review_id, review in first.items():
        if review_id in second:
            for row in disagreements(review, second[review_id]):
                print(json.dumps(row, ensure_ascii=False))


def apply(part: str, decisions_path: Path) -> None:
    reviews = read_lines(PASSES / f"{part}.pass1.jsonl")
    by_id = {review["id"]: review for review in reviews}
    for decision in read_lines(decisions_path):
        sentence = by_id[decision["id"]]["sentences"][decision["sentence"]]
        field, key, final = decision["field"], decision["key"], decision["final"]
        if field == "not_staff":
            names = [name for name in sentence.get("not_staff", []) if name != key]
            sentence["not_staff"] = names + [key] if final else names
        elif final is None:
            sentence.get(field, {}).pop(key, None)
        else:
            sentence.setdefault(field, {})[key] = final
    target = part_file(part)
    write_lines(target, reviews)
    print(f"{target}: {len(reviews)} reviews with the adjudicated labels")


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "strip":
        strip(argv[1])
    elif len(argv) >= 3 and argv[0] == "fill":
        fill(argv[1], Path(argv[2]))
    elif len(argv) >= 2 and argv[0] == "diff":
        diff(argv[1])
    elif len(argv) >= 3 and argv[0] == "apply":
        apply(argv[1], Path(argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
