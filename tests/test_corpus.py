"""The labelled corpus (docs/corpus.md): every part passes its check, and the held-out parts (the bundled
sample's labels) are the sample's reviews, kept out of training."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import corpus_check  # noqa: E402
import train_model  # noqa: E402


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_every_part_passes_the_check(capsys):
    assert corpus_check.main([]) == 0, capsys.readouterr().out
    printed = capsys.readouterr().out
    assert "sample-a.jsonl" in printed and "restaurant-a.jsonl" in printed


def test_the_held_out_parts_label_the_bundled_sample_and_are_never_trained_on():
    held_out = [
        review for path in sorted((ROOT / "corpus" / "held-out").glob("*.jsonl")) for review in lines(path)
    ]
    sample = json.loads((ROOT / "data" / "reviews.json").read_text("utf-8"))["reviews"]
    with_text = {review["id"] for review in sample if review["text"]}
    assert {review["id"] for review in held_out} == with_text
    trained = {review["id"] for review in train_model.load_corpus(train_model.corpus_paths())}
    assert not trained & with_text
    assert all("held-out" not in str(path) for path in train_model.corpus_paths())
