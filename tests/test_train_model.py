"""The trainer (tools/train_model.py) end to end on a slice of the corpus: the model file it writes is the
same byte for byte whatever the number of processes fitting it, and `analyze` applies it."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import fitting  # noqa: E402
import train_model  # noqa: E402

from reviewsd_app.analysis.model import Model  # noqa: E402

pytestmark = pytest.mark.slow  # trains three models (scikit-learn), several seconds each

# One part of each trade: every preset's heads, staff, people and not-staff labels.
PARTS = ("restaurant-a", "dental", "chiropractic", "home-services", "general")
REVIEWS_PER_PART = 40


@pytest.fixture(scope="module")
def slice_of_corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("corpus")
    paths = []
    for part in PARTS:
        lines = (ROOT / "corpus" / f"{part}.jsonl").read_text("utf-8").splitlines()[:REVIEWS_PER_PART]
        path = folder / f"{part}.jsonl"
        path.write_text("\n".join(lines) + "\n", "utf-8")
        paths.append(path)
    return paths


def train_to(out: Path, parts: list[Path], *options: str) -> bytes:
    assert train_model.main(["--out", str(out), *options, *map(str, parts)]) == 0
    return out.read_bytes()


def test_the_model_file_is_the_same_whatever_the_number_of_processes(slice_of_corpus, tmp_path, capsys):
    one = train_to(tmp_path / "one.json.gz", slice_of_corpus, "--jobs", "1")
    two = train_to(tmp_path / "two.json.gz", slice_of_corpus, "--jobs", "2")
    assert one == two
    assert "trained on 200 reviews" in capsys.readouterr().out
    data = json.loads(gzip.decompress(one))
    chosen = data["info"]["regularisation"]
    assert set(chosen) >= {"polarity", "food", "service", "bedside-manner", "quality-of-work"}
    assert all(c in train_model.DETECTION_C for head, c in chosen.items() if head != "polarity")
    assert chosen["polarity"] in train_model.POLARITY_C
    assert data["polarity"]["scores"] == "one-vs-rest"
    assert data["detect"]["threshold"] in train_model.THRESHOLDS


def test_the_trained_model_reads_praise_and_complaint(slice_of_corpus, tmp_path):
    model = Model(json.loads(gzip.decompress(train_to(tmp_path / "m.json.gz", slice_of_corpus))))
    assert model.detect(["w:food", "term:food"], ("food",))["food"] > model.threshold
    praise = model.polarity({"ac:delicious": 1.0, "lex:clause": 0.8, "stars:5": 0.5})
    complaint = model.polarity({"ac:cold": 1.0, "lex:clause": -0.6, "stars:1": 0.5})
    assert (praise.sentiment, complaint.sentiment) == ("positive", "negative")


def test_jobs_must_be_one_or_more(slice_of_corpus, tmp_path, capsys):
    with pytest.raises(SystemExit):
        train_model.main(["--out", str(tmp_path / "m.json.gz"), "--jobs", "0", str(slice_of_corpus[0])])
    assert "0 is fewer than 1 process" in capsys.readouterr().err


def test_naive_bayes_ratios_lean_each_word_toward_the_class_it_is_seen_with():
    import numpy as np
    from scipy.sparse import csr_matrix

    # columns: "lovely" (two positive rows), "cold" (two negative), "the" (all four), a lexicon score
    rows = csr_matrix([[1, 0, 1, 0.8], [1, 0, 1, 0.6], [0, 1, 1, -0.5], [0, 1, 1, -0.7]])
    positive = np.array([True, True, False, False])
    scaled = np.array([True, True, True, False])
    lovely, cold, the, lexicon = fitting.naive_bayes_ratios(rows != 0, positive, scaled)
    assert lovely > 0 > cold and lovely == -cold == pytest.approx(np.log(3))  # (1 + 2) / (1 + 0), add-one
    assert the == pytest.approx(0.0)  # seen with both alike
    assert lexicon == 1.0  # not a word: its value as it is


def test_the_scaled_columns_are_the_polarity_models_words_but_a_persons_clause():
    features = ["ac:cold", "aw:food:cold", "kind:person", "lex:clause", "pc:<self> was", "pre:kind", "s:cold"]
    assert list(train_model._scaled_columns(features)) == [True, True, False, False, False, True, True]
