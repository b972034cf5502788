#!/usr/bin/env python3
"""Agreement between the corpus's two labelling passes: Cohen's kappa per field (docs/corpus.md).

usage: python3 tools/corpus_agreement.py [PART...]   (default: every part with both passes in corpus/passes/)

Reads corpus/passes/<part>.pass1.jsonl and <part>.pass2.jsonl, pairs sentences by review id and position,
and prints, per part and over all parts, kappa for:
  aspect detection   each (sentence, aspect of the trade's preset): labelled or not
  aspect polarity    each (sentence, aspect) both passes labelled: positive, negative or neutral
  people detection   each (sentence, staff member): labelled or not
  people polarity    each (sentence, staff member) both passes labelled
  not_staff          each sentence: names a non-staff person or not
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_check import ASPECTS, CORPUS  # noqa: E402

PASSES = CORPUS / "passes"
FIELDS = ("aspect detection", "aspect polarity", "people detection", "people polarity", "not_staff")


def cohen_kappa(pairs: list[tuple[object, object]]) -> float | None:
    """Cohen's kappa of two raters' labels for the same items; None without items, 1.0 if trivially equal."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[label] * second[label] for label in first) / (n * n)
    if expected == 1:
        return 1.0
    return (observed - expected) / (1 - expected)


def read_pass(path: Path) -> dict[str, dict]:
    reviews = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            review = json.loads(line)
            reviews[review["id"]] = review
    return reviews


def label_pairs(first: dict[str, dict], second: dict[str, dict]) -> dict[str, list[tuple[object, object]]]:
    """Field -> the (pass 1, pass 2) label of every item both passes cover."""
    pairs: dict[str, list[tuple[object, object]]] = {field: [] for field in FIELDS}
    for review_id, one in first.items():
        two = second.get(review_id)
        if two is None or len(two["sentences"]) != len(one["sentences"]):
            continue
        staff = [person["name"] for person in one.get("staff", [])]
        for a, b in zip(one["sentences"], two["sentences"]):
            for aspect in sorted(ASPECTS[one["trade"]]):
                x, y = a.get("aspects", {}).get(aspect), b.get("aspects", {}).get(aspect)
                pairs["aspect detection"].append((x is not None, y is not None))
                if x is not None and y is not None:
                    pairs["aspect polarity"].append((x, y))
            for name in staff:
                x, y = a.get("people", {}).get(name), b.get("people", {}).get(name)
                pairs["people detection"].append((x is not None, y is not None))
                if x is not None and y is not None:
                    pairs["people polarity"].append((x, y))
            pairs["not_staff"].append((bool(a.get("not_staff")), bool(b.get("not_staff"))))
    return pairs


def print_row(name: str, pairs: dict[str, list[tuple[object, object]]]) -> None:
    cells = []
    for field in FIELDS:
        kappa = cohen_kappa(pairs[field])
        cells.append(f"{'-' if kappa is None else f'{kappa:.3f}':>8} ({len(pairs[field])})")
    print(f"{name:<16}" + "".join(f"{cell:>20}" for cell in cells))


def main(argv: list[str]) -> int:
    parts = argv or sorted(
        p.name.removesuffix(".pass1.jsonl")
        for p in PASSES.glob("*.pass1.jsonl")
        if (PASSES / p.name.replace(".pass1.", ".pass2.")).exists()
    )
    if not parts:
        print(f"no part has both passes in {PASSES}")
        return 1
    print("Cohen's kappa between the two labelling passes (items compared in brackets)")
    print(f"{'part':<16}" + "".join(f"{field:>20}" for field in FIELDS))
    # the held-out parts (the bundled sample) are written from templates: kept out of the corpus's total
    total: dict[str, list[tuple[object, object]]] = {field: [] for field in FIELDS}
    for part in parts:
        pairs = label_pairs(
            read_pass(PASSES / f"{part}.pass1.jsonl"), read_pass(PASSES / f"{part}.pass2.jsonl")
        )
        print_row(part, pairs)
        if not (CORPUS / "held-out" / f"{part}.jsonl").exists():
            for field in FIELDS:
                total[field] += pairs[field]
    print_row("all (corpus)", total)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
