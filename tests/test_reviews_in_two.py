"""reviews.json built in two, its front here and its back by the insights lane, gives exactly the one-piece build.

The pieces are compared with the one-piece build over generated documents, at every
place the gap pattern matches (inside strings and nested arrays too, where the proofs
must refuse); then the lane end to end, its back forced on small files; then every file
the split cannot take falls back to the one-piece build, with the same data or problems.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import logging
import pickle
import subprocess
import sys
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dataset as d
import insights_lane
from factories import dataset_state, make_docs, write_docs
from generate_data import generate, write_dataset
from payloads import Precomputed
from test_dataset_memory import SPEC_STRATEGY, SPECS
from test_insights_lane import refusal, without_lane, write_raw

IN_TWO = "built reviews.json in two"
IN_ONE_PIECE = "building reviews.json in one piece"

FORMATS = {
    "compact": {"separators": (",", ":")},
    "spaced": {},  # json.dumps's default: ", " and ": "
    "indented": {"indent": 2},
}


def written(reviews_doc: dict, layout: str) -> bytes:
    return json.dumps(reviews_doc, ensure_ascii=False, **FORMATS[layout]).encode("utf-8", "surrogatepass")


def part_values(part: d._ReviewsPart) -> dict[str, Any]:
    """The part's values but its texts (a part joined from two has its text blob made instead)."""
    return {f.name: getattr(part, f.name) for f in dataclasses.fields(part) if f.name != "texts"}


class LaneHere:
    """An insights lane whose back of reviews.json is built in this process, as the helper builds it."""

    def __init__(self, content: bytes):
        self.content = content
        self.asked: list[int] = []

    def reviews_back(self, comma: int, sha256: str) -> tuple | None:
        assert sha256 == d._sha256_hex(self.content[comma + 1:])
        self.asked.append(comma)
        built = d.build_reviews_back(memoryview(self.content)[comma + 1:])
        return built[1:] if built[0] == "built" else None


@contextmanager
def back_searched_from(start: int) -> Iterator[None]:
    """_reviews_in_two looking for the back's comma from `start`."""
    default, d.back_search_start = d.back_search_start, lambda reviews_size, insights_size: start
    try:
        yield
    finally:
        d.back_search_start = default


def built_in_two(content: bytes, start: int) -> tuple[dict, dict, tuple] | None:
    """What _reviews_in_two builds from the first gap at or after `start`; None where it refuses."""
    with back_searched_from(start):
        found = d._reviews_in_two(LaneHere(content), d.RawFile(d.REVIEWS_FILE, content, "unused"), 0)
    return None if found is None else (found[0], part_values(found[1]), found[2])


def gaps(content: bytes) -> list[int]:
    """Where each match of the gap pattern starts (its `}`)."""
    return [gap.start() for gap in d._REVIEWS_GAP.finditer(content)]


def commas(content: bytes) -> list[int]:
    return [gap.start(1) for gap in d._REVIEWS_GAP.finditer(content)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SPEC_STRATEGY, min_size=2, max_size=10), st.sampled_from(sorted(FORMATS)), st.integers(1, 4),
       st.one_of(st.just(d._RUN_BYTES), st.integers(1, 400)))
def test_every_gap_between_two_reviews_and_no_other_gives_the_one_piece_build(specs: list, layout: str,
                                                                              chunk: int, run: int) -> None:
    """Also with reviews encoded a few at a time (as 100,000 are, by _ENCODE_CHUNK) and parsed by short
    runs (as 100,000 are, by _RUN_BYTES): the joins must not show."""
    reviews_doc, _ = make_docs(specs)
    content = written(reviews_doc, layout)
    whole = d._ReviewsPart.encode(json.loads(content))
    expected = (d._without_reviews(reviews_doc), part_values(whole), whole.text_blob())
    defaults, (d._ENCODE_CHUNK, d._RUN_BYTES) = (d._ENCODE_CHUNK, d._RUN_BYTES), (chunk, run)
    try:
        taken = [found for start in gaps(content) if (found := built_in_two(content, start)) is not None]
    finally:
        d._ENCODE_CHUNK, d._RUN_BYTES = defaults
    # The business holds arrays of objects and texts may read `},{`: only the n - 1 gaps of the reviews count.
    assert len(taken) == len(specs) - 1
    assert all(found == expected for found in taken)


@pytest.mark.parametrize("layout", sorted(FORMATS))
def test_runs_of_any_size_give_the_parse_of_the_whole(layout: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Front and back are parsed by runs, each ended at a gap match and proved there; a match inside a
    string (SPECS has a text ending `},{`) is refused and the run goes on to the front's end (the back's)."""
    reviews_doc, _ = make_docs(SPECS)
    content = written(reviews_doc, layout)
    whole = json.loads(content)
    cuts = [(comma, front) for comma in commas(content) if (front := d.parse_reviews_front(content, comma))]
    assert len(cuts) == len(SPECS) - 1  # in one run each: the runs are longer than the file
    backs = {comma: d.build_reviews_back(memoryview(content)[comma + 1:]) for comma, _ in cuts}
    assert all(built[0] == "built" for built in backs.values())
    refused = []
    run_of = d._reviews_run
    monkeypatch.setattr(d, "_reviews_run", lambda *args: run_of(*args) or refused.append(args))
    for size in range(1, len(content) // 2, 7):
        monkeypatch.setattr(d, "_RUN_BYTES", size)
        for (comma, front), n in zip(cuts, count(1)):
            assert front == {**whole, "reviews": whole["reviews"][:n]}
            assert d.parse_reviews_front(content, comma) == front, (size, comma)
            assert d.build_reviews_back(memoryview(content)[comma + 1:]) == backs[comma], (size, comma)
    assert refused  # runs did end inside that string


@pytest.mark.parametrize("layout, expected", [("compact", [True, True]), ("spaced", [False]), ("indented", [])])
def test_shares_written_as_encoded_are_taken_as_written(layout: str, expected: list[bool],
                                                         verdicts: list[bool]) -> None:
    """generate_data.py's compact files: neither share is encoded, each proved its own encoding
    (d.reviews_written_as_encoded, asked for the front where its other keys are written as encoded,
    for the back where it ends in `]}`), and the build is the one-piece build."""
    reviews_doc = generate(300, 7, dt.date(2026, 11, 15), 1.0)[0]
    content = written(reviews_doc, layout)
    whole = d._ReviewsPart.encode(json.loads(content))
    assert built_in_two(content, len(content) // 2) == (d._without_reviews(reviews_doc), part_values(whole),
                                                        whole.text_blob())
    assert verdicts == expected
    # The lane does not send a back taken as written: the server has those bytes.
    comma = d.back_comma(content, len(content) // 2)
    assert (d.build_reviews_back(memoryview(content)[comma + 1:])[1] is None) is (layout == "compact")


def test_a_file_parsed_by_runs_makes_one_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not one a run: decoders made between runs leave small blocks among the parsed reviews, which keep
    the allocator's arenas from being given back (65 MB after a first start on 100,000 reviews)."""
    reviews_doc, _ = make_docs(SPECS * 20)
    content = written(reviews_doc, "compact")
    middle = [comma for comma in commas(content) if d.parse_reviews_front(content, comma)][len(SPECS) * 10]
    made = []
    init = json.JSONDecoder.__init__
    monkeypatch.setattr(json.JSONDecoder, "__init__", lambda self, **kw: made.append(1) or init(self, **kw))
    monkeypatch.setattr(d, "_RUN_BYTES", 200)
    assert d.parse_reviews_front(content, middle) is not None
    assert d.build_reviews_back(memoryview(content)[middle + 1:])[0] == "built"
    assert len(made) == 2 and len(content) > 100 * 200


def test_a_back_newer_than_its_front_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    """Each half newest first (one review each), but not the two together: only the one-piece build sorts them."""
    reviews_doc, _ = make_docs(SPECS[:2])
    reviews_doc["reviews"].reverse()
    content = written(reviews_doc, "compact")
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        assert built_in_two(content, content.index(b'"reviews":[')) is None
    assert f"{IN_ONE_PIECE}: the back's first review is newer than the front's last" in caplog.text


@pytest.mark.parametrize("kind, why", [("id in both", "an id twice or a reply before its review"),
                                       ("reply before review", "an id twice or a reply before its review"),
                                       ("front invalid", "the front is not a valid part of a document newest first"),
                                       ("back invalid", "no back from the lane")])
def test_data_with_a_problem_is_left_to_the_one_piece_build(kind: str, why: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """Which reports it, the same way with a lane or without."""
    reviews_doc, _ = make_docs(SPECS)
    reviews = reviews_doc["reviews"]
    if kind == "id in both":
        reviews[-1]["id"] = reviews[0]["id"]
    elif kind == "reply before review":
        next(r for r in reversed(reviews) if r["owner_reply"] is not None)["owner_reply"]["date"] = "2000-01-01"
    else:
        reviews[0 if kind == "front invalid" else -1]["rating"] = "five"
    content = written(reviews_doc, "compact")
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        assert all(built_in_two(content, start) is None for start in gaps(content))
    assert f"{IN_ONE_PIECE}: {why}" in caplog.text and IN_TWO not in caplog.text


@pytest.mark.parametrize("text", ['a "},{" inside a string', "}, {", "},{\"id\":\"r-0\"}"])
def test_a_gap_inside_a_string_is_refused(text: str) -> None:
    reviews_doc, _ = make_docs(SPECS[:3])
    reviews_doc["reviews"][1]["text"] = text
    content = written(reviews_doc, "compact")
    inside = content.index(json.dumps(text, ensure_ascii=False).encode()[1:-1])
    for comma in commas(content):
        if inside <= comma < inside + len(text.encode()):
            assert d.parse_reviews_front(content, comma) is None
            assert d.build_reviews_back(memoryview(content)[comma + 1:])[0] == "not built"


def test_a_gap_in_another_top_level_array_is_refused() -> None:
    """Its front parses (NaN closes that array and the document), but NaN is not the last of the reviews."""
    reviews_doc, _ = make_docs(SPECS[:2])
    content = written({**reviews_doc, "extra": [{"a": 1}, {"b": 2}]}, "compact")
    comma = commas(content)[-1]
    assert content[comma - 8:comma + 7] == b'[{"a":1},{"b":2'
    assert d.parse_reviews_front(content, comma) is None


def test_nan_in_the_front_is_refused() -> None:
    """Not JSON; read as the marker, it would be a second one."""
    reviews_doc, _ = make_docs(SPECS[:3])
    content = written(reviews_doc, "compact").replace(b'"rating":', b'"rating":NaN,"was":', 1)
    start = content.index(b'"reviews":[')
    assert b"NaN" in content[start:d.back_comma(content, start)]
    assert d.parse_reviews_front(content, d.back_comma(content, start)) is None


def test_the_back_must_end_the_document() -> None:
    """reviews not the last key: the front alone could pass (its `]}` closes early), the back cannot."""
    reviews_doc, _ = make_docs(SPECS[:3])
    reordered = {"reviews": reviews_doc["reviews"], **d._without_reviews(reviews_doc)}
    content = written(reordered, "compact")
    assert d.build_reviews_back(memoryview(content)[commas(content)[0] + 1:]) == \
        ("not built", "not the end of the document")


@pytest.mark.parametrize("damage, why", [
    (lambda reviews: reviews[-1].update(rating="five"), "not valid"),
    (lambda reviews: reviews.reverse(), "not newest first"),
    (lambda reviews: reviews[-1].update(text="broken \ud800"), "a lone surrogate or a number beyond a float"),
])
def test_a_back_with_a_problem_is_not_built(damage: Any, why: str) -> None:
    reviews_doc, _ = make_docs(SPECS[:4])
    damage(reviews_doc["reviews"])
    content = json.dumps(reviews_doc, separators=(",", ":")).encode()  # \ud800 escaped: JSON, but not text
    comma = d.back_comma(content, content.index(b'"reviews":['))  # after the first review: the back has three
    assert d.build_reviews_back(memoryview(content)[comma + 1:]) == ("not built", why)


def test_half_a_file_is_not_a_back() -> None:
    reviews_doc, _ = make_docs(SPECS[:4])
    content = written(reviews_doc, "compact")
    assert d.build_reviews_back(memoryview(content)[commas(content)[-1] + 1:-20]) == \
        ("not built", "not the rest of a JSON array")


def test_where_the_back_begins() -> None:
    """Half of what reviews.json has beyond the lane's share of work, where that is BACK_MIN_BYTES or more."""
    ratio, least = insights_lane.LANE_COST_RATIO, insights_lane.BACK_MIN_BYTES
    insights_size = 4_000_000
    reviews_size = int(ratio * insights_size) + 2 * least + 10
    assert insights_lane.back_search_start(reviews_size, insights_size) == reviews_size - least - 5
    assert insights_lane.back_search_start(reviews_size - 20, insights_size) is None
    assert insights_lane.back_search_start(1000, insights_size) is None


# ---------------------------------------------------------------- the lane end to end


@pytest.fixture
def lane_with_back(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The lane on files of any size, its back half of reviews.json (the server passes where it begins)."""
    monkeypatch.setattr(insights_lane, "MIN_BYTES", 0)
    monkeypatch.setattr(insights_lane, "usable_cpus", lambda: 2)
    monkeypatch.setattr(insights_lane, "BACK_MIN_BYTES", 0)
    monkeypatch.setattr(insights_lane, "LANE_COST_RATIO", 0)
    yield
    insights_lane.discard_early()


def load_logged(data_dir: Path, caplog: pytest.LogCaptureFixture) -> dict:
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        return dataset_state(d.dataset_from_files(*d.read_data_dir(data_dir), Precomputed))


@pytest.mark.usefixtures("lane_with_back")
@pytest.mark.parametrize("data", ["specs", "generated", "indented"])
def test_the_lane_builds_the_back_and_the_dataset_is_the_one_piece_one(data: str, tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    if data == "generated":
        write_dataset(str(tmp_path), *generate(400, seed=11, end_date=dt.date(2026, 11, 15), years=2))
    else:
        reviews_doc, insights_doc = make_docs(SPECS)
        write_docs(tmp_path, reviews_doc, insights_doc)
        if data == "indented":
            (tmp_path / "reviews.json").write_bytes(written(reviews_doc, "indented"))
    assert load_logged(tmp_path, caplog) == without_lane(tmp_path)
    assert IN_TWO in caplog.text and IN_ONE_PIECE not in caplog.text


@pytest.mark.usefixtures("lane_with_back")
def test_an_early_lane_builds_the_back_too(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    insights_lane.start_early(tmp_path)
    assert load_logged(tmp_path, caplog) == without_lane(tmp_path)
    assert "took the insights lane started early" in caplog.text and IN_TWO in caplog.text


def damaged_docs(kind: str) -> tuple[dict, dict]:
    reviews_doc, insights_doc = make_docs(SPECS)
    reviews = reviews_doc["reviews"]
    if kind == "oldest first":
        reviews.reverse()
    elif kind == "id in both":
        reviews[-1]["id"] = reviews[0]["id"]
    elif kind == "reply before review in the back":
        next(r for r in reversed(reviews) if r["owner_reply"] is not None)["owner_reply"]["date"] = "2000-01-01"
    elif kind == "back invalid":
        reviews[-1]["rating"] = "five"
    elif kind == "reviews first":
        reviews_doc = {"reviews": reviews, **d._without_reviews(reviews_doc)}
    return reviews_doc, insights_doc


@pytest.mark.usefixtures("lane_with_back")
@pytest.mark.parametrize("kind", ["oldest first", "reviews first"])
def test_files_the_split_cannot_take_are_built_in_one_piece(kind: str, tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    write_raw(tmp_path, *damaged_docs(kind))
    assert load_logged(tmp_path, caplog) == without_lane(tmp_path)
    assert IN_ONE_PIECE in caplog.text and IN_TWO not in caplog.text


@pytest.mark.parametrize("kind", ["id in both", "reply before review in the back", "back invalid"])
def test_problems_are_the_same_with_the_back_in_the_lane(kind: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    write_raw(tmp_path, *damaged_docs(kind))
    expected = refusal(tmp_path)
    for name, value in (("MIN_BYTES", 0), ("BACK_MIN_BYTES", 0), ("LANE_COST_RATIO", 0), ("usable_cpus", lambda: 2)):
        monkeypatch.setattr(insights_lane, name, value)
    assert refusal(tmp_path) == expected and expected


@pytest.mark.usefixtures("lane_with_back")
def test_a_reviews_file_replaced_after_it_was_read_is_built_from_the_bytes_read(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    raws = d.read_data_dir(tmp_path)
    expected = without_lane(tmp_path)
    changed, _ = make_docs(SPECS)
    changed["reviews"][-1]["text"] = "Changed after the server read the file, the same length as before!"[:20]
    (tmp_path / "reviews.json").write_text(json.dumps(changed, ensure_ascii=False), "utf-8")  # the lane reads this
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        built = dataset_state(d.dataset_from_files(*raws, Precomputed))
    assert built == expected
    assert f"{IN_ONE_PIECE}: no back from the lane" in caplog.text


@pytest.mark.parametrize("argv", [
    ["--reviews", "r.json"],  # without where the back begins
    ["--back-from", "10"],  # without the file
    ["--reviews", "r.json", "--back-from", "ten"],
    ["--answer-fd", "3", "--reviews", "r.json", "--back-from", "10"],  # the back's answer needs its descriptor
    ["--back-fd", "4"],
])
def test_the_helper_checks_its_back_arguments(argv: list[str], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, insights_lane.__file__, str(tmp_path / "insights.json"), *argv],
                          capture_output=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith(b"usage: insights_lane.py")


def test_the_helper_on_its_own_writes_the_back_then_insights_to_stdout(tmp_path: Path) -> None:
    reviews_doc, insights_doc = make_docs(SPECS)
    write_docs(tmp_path, reviews_doc, insights_doc)
    content = (tmp_path / "reviews.json").read_bytes()
    start = len(content) // 2
    done = subprocess.run([sys.executable, insights_lane.__file__, str(tmp_path / "insights.json"),
                           "--reviews", str(tmp_path / "reviews.json"), "--back-from", str(start)],
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = io.BytesIO(done.stdout)
    back, insights = pickle.load(out), pickle.load(out)
    comma = d.back_comma(content, start)
    assert back[:3] == ("built", comma, d._sha256_hex(content[comma + 1:]))
    assert back[3:] == d.build_reviews_back(content[comma + 1:])[1:]
    assert insights[0] == "built" and out.read() == b""
