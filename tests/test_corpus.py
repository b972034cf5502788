"""The labelled corpus (docs/corpus.md): every part passes its check, and the held-out parts (the bundled
sample's labels) are the sample's reviews, kept out of training."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import corpus_check  # noqa: E402
import corpus_passes  # noqa: E402
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


def test_every_part_carries_its_later_readings():
    """Each change of the later readings (corpus/passes/PART.reading3.jsonl to PART.reading7.jsonl)
    is what the part file says now, unless a later reading changed the same label again: re-settling a part
    from its passes without the readings would undo them."""
    passes = ROOT / "corpus" / "passes"
    third = sorted(passes.glob("*.reading3.jsonl"))
    assert len(third) == len(list((ROOT / "corpus").glob("*.jsonl"))) + 2  # every part, and the sample's
    fourth = {path.name.removesuffix(".reading4.jsonl") for path in passes.glob("*.reading4.jsonl")}
    clinics = {
        path.stem for path in (ROOT / "corpus").glob("*.jsonl") if path.stem.startswith(("dental", "chiro"))
    }
    assert fourth == clinics | {"sample-a", "sample-b"}  # the fourth reading: every clinic part
    sixth = sorted(passes.glob("*.reading6.jsonl"))
    assert len(sixth) == len(third)  # the sixth reading: every part again
    seventh = sorted(passes.glob("*.reading7.jsonl"))
    assert len(seventh) == len(third)  # the seventh reading (people polarity): every part again
    for reading in third:
        part = reading.name.removesuffix(".reading3.jsonl")
        reviews = {review["id"]: review for review in lines(corpus_passes.part_file(part))}
        final = {}
        for name in corpus_passes.READINGS:
            path = passes / f"{part}.{name}.jsonl"
            for change in lines(path) if path.exists() else []:
                final[corpus_passes._label_key(change)] = change
        for change in final.values():
            sentence = reviews[change["id"]]["sentences"][change["sentence"]]
            assert sentence["text"] == change["text"]
            assert corpus_passes._label(sentence, change["field"], change["key"]) == change["now"], change


def test_a_third_reading_line_is_checked_against_the_part():
    review = {
        "id": "x-1",
        "trade": "restaurant",
        "staff": [{"name": "Maria Santos", "role": "Server", "aliases": ["Maria"]}],
        "sentences": [{"text": "Maria was lovely.", "aspects": {"service": "positive"}, "people": {}}],
    }
    aspects = {"food", "service"}
    change = {"id": "x-1", "sentence": 0, "text": "Maria was lovely.", "rule": "r"}
    good = {**change, "field": "aspects", "key": "service", "was": "positive", "now": "neutral"}
    assert corpus_passes.revision_problems(review, good, aspects) == []
    stale = {**good, "was": "negative"}
    assert "is 'positive', not 'negative'" in corpus_passes.revision_problems(review, stale, aspects)[0]
    wrong_aspect = {**good, "key": "drinks"}
    assert "not an aspect" in corpus_passes.revision_problems(review, wrong_aspect, aspects)[0]
    first_name = {**change, "field": "people", "key": "Maria", "was": None, "now": "positive"}
    assert "full name" in corpus_passes.revision_problems(review, first_name, aspects)[0]
    wrong_text = {**good, "text": "Maria was lovely!"}
    assert "text differs" in corpus_passes.revision_problems(review, wrong_text, aspects)[0]
    assert "no such sentence" in corpus_passes.revision_problems(review, {**good, "sentence": 3}, aspects)[0]


def test_the_check_refuses_a_language_that_is_not_a_code_and_tags_not_in_the_guideline():
    review = {
        "id": "x-1",
        "trade": "restaurant",
        "rating": 5,
        "language": "en",
        "phenomena": ["short"],
        "sentences": [{"text": "Great.", "aspects": {}, "people": {}, "not_staff": []}],
    }
    assert corpus_check.review_problems(review) == []
    # two reviews of home-services-e carried a tag in their language ("es,trade-word") until the check said so
    tagged = {**review, "language": "es,trade-word", "phenomena": ["non-english"]}
    assert corpus_check.review_problems(tagged) == [
        "language 'es,trade-word' is not a language code (en, es, fr...)"
    ]
    assert corpus_check.review_problems({**review, "phenomena": ["short", "snark"]}) == [
        "phenomena ['snark'] are not in docs/corpus.md's list"
    ]
    assert corpus_check.review_problems({**review, "language": "fr"}) == [
        "language 'fr' and the non-english tag disagree"
    ]


def one_sentence_part(tmp_path, monkeypatch, trade: str, sentence: dict, readings: dict[str, list]) -> dict:
    """A part "x" in tmp_path of one review of one sentence, and its readings' lines (name -> lines)."""
    monkeypatch.setattr(corpus_passes, "CORPUS", tmp_path)
    monkeypatch.setattr(corpus_passes, "PASSES", tmp_path / "passes")
    (tmp_path / "passes").mkdir(exist_ok=True)
    review = {"id": "x-1", "trade": trade, "staff": [], "sentences": [sentence]}
    corpus_passes.write_lines(tmp_path / "x.jsonl", [review])
    for name, changes in readings.items():
        corpus_passes.write_lines(tmp_path / "passes" / f"x.{name}.jsonl", changes)
    return review


def test_the_fourth_reading_stands_on_the_third(tmp_path, monkeypatch):
    """revise applies PART.reading3 and then PART.reading4, each checked against the labels the readings
    before it left: a fourth-reading line whose "was" is the third reading's "now" applies."""
    sentence = {"text": "Everyone was lovely.", "aspects": {"front-desk": "positive"}, "people": {}}
    line = {"id": "x-1", "sentence": 0, "text": "Everyone was lovely.", "field": "aspects"}
    third = {**line, "key": "front-desk", "was": "positive", "now": "neutral", "rule": "r3"}
    fourth = [
        {**line, "key": "front-desk", "was": "neutral", "now": "positive", "rule": "group"},
        {**line, "key": "bedside-manner", "was": None, "now": "positive", "rule": "group"},
    ]
    one_sentence_part(tmp_path, monkeypatch, "dental", sentence, {"reading3": [third], "reading4": fourth})
    assert corpus_passes.revise("x", check_only=False) == 0
    (revised,) = lines(tmp_path / "x.jsonl")
    assert revised["sentences"][0]["aspects"] == {"front-desk": "positive", "bedside-manner": "positive"}
    stale = {**fourth[0], "was": "negative"}
    corpus_passes.write_lines(tmp_path / "passes" / "x.reading4.jsonl", [stale])
    assert corpus_passes.revise("x", check_only=True) == 1


def test_revise_runs_again_on_a_part_a_later_reading_revised(tmp_path, monkeypatch):
    """Run on a part the readings already revised, a third-reading line whose label the fourth reading
    changed again finds the fourth reading's label: it is left as it is, not refused (`revise dental`
    refused its own part: the third reading removed an explanation the fourth added back as neutral)."""
    text = "She said I need a crown."
    sentence = {"text": text, "aspects": {"explanation-of-treatment": "neutral"}, "people": {}}
    line = {"id": "x-1", "sentence": 0, "text": text, "field": "aspects", "key": "explanation-of-treatment"}
    third = {**line, "was": "positive", "now": None, "rule": "exam"}
    fourth = {**line, "was": None, "now": "neutral", "rule": "exam: a plan told plainly"}
    readings = {"reading3": [third], "reading4": [fourth]}
    review = one_sentence_part(tmp_path, monkeypatch, "dental", sentence, readings)
    assert corpus_passes.revise("x", check_only=False) == 0
    (revised,) = lines(tmp_path / "x.jsonl")
    assert revised["sentences"][0]["aspects"] == {"explanation-of-treatment": "neutral"}
    # a label that no reading left there is still refused
    stale = {**sentence, "aspects": {"explanation-of-treatment": "negative"}}
    corpus_passes.write_lines(tmp_path / "x.jsonl", [{**review, "sentences": [stale]}])
    assert corpus_passes.revise("x", check_only=True) == 1


def test_revise_changes_nothing_where_a_later_reading_took_a_change_back(tmp_path, monkeypatch, capsys):
    """Where a later reading takes back what an earlier one changed (the third reading added `price` to a
    gift, the sixth removes it), `revise --check` on the revised part says it would change nothing, where it
    said on every run that the third reading would add the label and the sixth take it away."""
    text = "They sent out a little cake for her birthday."
    sentence = {"text": text, "aspects": {"service": "positive"}, "people": {}}
    line = {"id": "x-1", "sentence": 0, "text": text, "field": "aspects", "key": "price"}
    third = {**line, "was": None, "now": "positive", "rule": "a gift"}
    sixth = {**line, "was": "positive", "now": None, "rule": "free-things: not called free"}
    readings = {"reading3": [third], "reading6": [sixth]}
    one_sentence_part(tmp_path, monkeypatch, "restaurant", sentence, readings)
    assert corpus_passes.revise("x", check_only=True) == 0
    assert capsys.readouterr().out.splitlines() == [
        "x reading3: 1 lines; would change nothing",
        "x reading6: 1 lines; would change nothing",
    ]
    (revised,) = lines(tmp_path / "x.jsonl")
    assert revised["sentences"][0]["aspects"] == {"service": "positive"}


def test_every_part_is_its_first_pass_with_the_decisions_and_readings(tmp_path, monkeypatch):
    """What `corpus_passes.py apply` rebuilds (pass 1, the settling's decisions, then the readings) is each
    part file as it stands, the held-out ones included: no label was set by hand outside the record."""
    passes = ROOT / "corpus" / "passes"
    parts = sorted((ROOT / "corpus").glob("*.jsonl")) + sorted((ROOT / "corpus" / "held-out").glob("*.jsonl"))
    monkeypatch.setattr(
        corpus_passes, "CORPUS", tmp_path
    )  # rebuilt there; the passes are read where they are
    for path in parts:
        corpus_passes.apply(path.stem, passes / f"{path.stem}.decisions.jsonl")
        assert lines(tmp_path / path.name) == lines(path), path.stem


def test_a_new_part_goes_through_the_steps_of_a_round(tmp_path, monkeypatch, capsys):
    """docs/corpus.md, "Making a round": strip keeps the writer's labels and the bare text, fill makes the
    blind second pass, diff lists where they differ, apply writes the part as settled; the empty readings a
    new part carries change nothing."""
    sentence = {"text": "Bree got me in the same day.", "aspects": {"front-desk": "positive"}, "people": {}}
    one_sentence_part(tmp_path, monkeypatch, "dental", {**sentence, "not_staff": []}, {})
    corpus_passes.strip("x")
    (bare,) = lines(tmp_path / "passes" / "x.text.jsonl")
    assert bare["sentences"] == [{"text": sentence["text"], "aspects": {}, "people": {}, "not_staff": []}]
    second = {"aspects": {"front-desk": "positive", "scheduling": "positive"}, "people": {}, "not_staff": []}
    corpus_passes.write_lines(tmp_path / "passes" / "x.labels2.jsonl", [{"id": "x-1", "sentences": [second]}])
    corpus_passes.fill("x", tmp_path / "passes" / "x.labels2.jsonl")
    capsys.readouterr()
    corpus_passes.diff("x")
    (disagreement,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert disagreement == {
        "id": "x-1",
        "sentence": 0,
        "text": sentence["text"],
        "field": "aspects",
        "key": "scheduling",
        "pass1": None,
        "pass2": "positive",
    }
    decision = {**disagreement, "final": "positive", "why": "a same-day booking judges scheduling"}
    corpus_passes.write_lines(tmp_path / "passes" / "x.decisions.jsonl", [decision])
    for reading in ("reading3", "reading4", "reading6", "reading7"):
        corpus_passes.write_lines(tmp_path / "passes" / f"x.{reading}.jsonl", [])
    corpus_passes.apply("x", tmp_path / "passes" / "x.decisions.jsonl")
    (settled,) = lines(tmp_path / "x.jsonl")
    assert settled["sentences"][0]["aspects"] == {"front-desk": "positive", "scheduling": "positive"}
    assert corpus_passes.revise("x", check_only=True) == 0
