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
  corpus_passes.py revise PART [--check]
                                       the later readings: corpus/PART.jsonl with the changes in
                                       PART.reading3.jsonl, PART.reading4.jsonl, PART.reading5.jsonl,
                                       PART.reading6.jsonl, then PART.reading7.jsonl, one JSON line each:
                                       {"id", "sentence", "text", "field", "key", "was", "now", "rule"}
                                       ("was" the label before that reading, "now" the new one; null for
                                       none; for not_staff, true or false); every line is checked against the
                                       part as the readings before it left it, and a line already applied (or
                                       one a later reading changed again) is left as it is; --check checks
                                       without writing
PART is a part file's name without .jsonl (restaurant-a, dental, ...; sample-a in corpus/held-out/).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
PASSES = CORPUS / "passes"
LABEL_FIELDS = ("aspects", "people")
POLARITIES = ("positive", "negative", "neutral")
# applied in this order after the settling (docs/corpus.md)
READINGS = ("reading3", "reading4", "reading5", "reading6", "reading7")


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
        _set_label(sentence, decision["field"], decision["key"], decision["final"])
    target = part_file(part)
    write_lines(target, reviews)
    print(f"{target}: {len(reviews)} reviews with the adjudicated labels")
    if any((PASSES / f"{part}.{reading}.jsonl").exists() for reading in READINGS):
        revise(part, check_only=False)  # the later readings stand on the settled labels


def _label(sentence: dict, field: str, key: str) -> Any:
    if field == "not_staff":
        return key in sentence.get("not_staff", [])
    return sentence.get(field, {}).get(key)


def _set_label(sentence: dict, field: str, key: str, value: Any) -> None:
    if field == "not_staff":
        names = [name for name in sentence.get("not_staff", []) if name != key]
        sentence["not_staff"] = names + [key] if value else names
    elif value is None:
        sentence.get(field, {}).pop(key, None)
    else:
        sentence.setdefault(field, {})[key] = value


def revision_problems(review: dict | None, change: dict, aspects: set[str]) -> list[str]:
    """What is wrong with one line of a third reading, against the review it changes."""
    where = f"{change.get('id')} sentence {change.get('sentence')}"
    if review is None:
        return [f"{where}: no such review"]
    number = change.get("sentence")
    if not isinstance(number, int) or not 0 <= number < len(review["sentences"]):
        return [f"{where}: no such sentence"]
    sentence = review["sentences"][number]
    field, key, now = change.get("field"), change.get("key"), change.get("now")
    problems = []
    if change.get("text") != sentence["text"]:
        problems.append(f"{where}: text differs from the part's sentence")
    if not change.get("rule"):
        problems.append(f"{where}: no rule given")
    if field == "aspects":
        if key not in aspects:
            problems.append(f"{where}: {key!r} is not an aspect of {review['trade']}")
    elif field == "people":
        if key not in {person["name"] for person in review.get("staff", [])}:
            problems.append(f"{where}: {key!r} is not a staff member's full name")
    elif field != "not_staff":
        problems.append(f"{where}: unknown field {field!r}")
    allowed = (True, False) if field == "not_staff" else (*POLARITIES, None)
    if now not in allowed or change.get("was") not in allowed:
        problems.append(f"{where}: 'was' and 'now' must be one of {allowed}")
    elif not problems:
        current = _label(sentence, field, key)
        if current not in (change.get("was"), now):
            problems.append(f"{where}: {field} {key!r} is {current!r}, not {change.get('was')!r}")
    return problems


def _label_key(change: dict) -> tuple:
    return (change.get("id"), change.get("sentence"), change.get("field"), change.get("key"))


def _overridden(change: dict, later: dict[tuple, Any], by_id: dict[str, dict]) -> bool:
    """Whether a later reading changed this line's label and the part already holds that reading's."""
    key = _label_key(change)
    review = by_id.get(change.get("id"))
    number = change.get("sentence")
    if key not in later or review is None or not isinstance(number, int):
        return False
    if not 0 <= number < len(review["sentences"]):
        return False
    current = _label(review["sentences"][number], change["field"], change["key"])
    return current not in (change.get("was"), change.get("now")) and current == later[key]


def revise(part: str, check_only: bool) -> int:
    from corpus_check import ASPECTS

    reviews = read_lines(part_file(part))
    by_id = {review["id"]: review for review in reviews}
    verb = "would change" if check_only else "changed"
    readings = {}
    for reading in READINGS:
        path = PASSES / f"{part}.{reading}.jsonl"
        if path.exists():
            readings[reading] = read_lines(path)
    names = list(readings)
    before: dict[tuple, Any] = {}  # each label a reading changes, as the part had it
    last: dict[tuple, str] = {}  # ... and the last reading to change it
    counted: dict[str, int] = {}  # each reading's lines, those a later reading overrode left out
    for index, reading in enumerate(names):
        # Run again on a part the readings already revised, a line a later reading overrode finds that
        # reading's label: it is left as it is, not refused.
        later = {}
        for later_reading in names[index + 1 :]:
            for change in readings[later_reading]:
                later[_label_key(change)] = change["now"]
        changes = [change for change in readings[reading] if not _overridden(change, later, by_id)]
        problems = []
        for change in changes:
            review = by_id.get(change.get("id"))
            problems += revision_problems(review, change, ASPECTS[review["trade"]] if review else set())
        for problem in problems:
            print(f"{reading}: {problem}", file=sys.stderr)
        if problems:
            return 1
        for change in changes:
            sentence = by_id[change["id"]]["sentences"][change["sentence"]]
            current = _label(sentence, change["field"], change["key"])
            if current != change["now"]:
                before.setdefault(_label_key(change), current)
                _set_label(sentence, change["field"], change["key"], change["now"])
                last[_label_key(change)] = reading
        counted[reading] = len(changes)
    # What each reading changes in the part as it was, not in the replay: where a later reading takes back
    # what an earlier one changed (the sixth removing a gift's price that the third added), neither counts.
    counts: dict[str, dict[str, int]] = {reading: {} for reading in counted}
    for label_key, reading in last.items():
        review_id, number, field, key = label_key
        if _label(by_id[review_id]["sentences"][number], field, key) != before[label_key]:
            counts[reading][field] = counts[reading].get(field, 0) + 1
    for reading, line_count in counted.items():
        changed = ", ".join(f"{n} {field}" for field, n in counts[reading].items()) or "nothing"
        print(f"{part} {reading}: {line_count} lines; {verb} {changed}")
    if not check_only:
        write_lines(part_file(part), reviews)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "strip":
        strip(argv[1])
    elif len(argv) >= 3 and argv[0] == "fill":
        fill(argv[1], Path(argv[2]))
    elif len(argv) >= 2 and argv[0] == "diff":
        diff(argv[1])
    elif len(argv) >= 3 and argv[0] == "apply":
        apply(argv[1], Path(argv[2]))
    elif len(argv) >= 2 and argv[0] == "revise":
        return revise(argv[1], check_only="--check" in argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
