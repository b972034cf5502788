"""The insights lane: insights.json's half of a build in a helper process gives exactly the one-process build.

Every test forces the lane on small files (it is normally used from 4 MiB) and compares
with the build without it: the same Dataset value for value, the same problems in the
same order, and a silent or logged fallback whenever the helper cannot build.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from pathlib import Path

import pytest

import dataset as dataset_module
from dataset import DataError, check_documents, dataset_from_files, read_data_dir
from factories import dataset_state, make_docs, write_docs
from generate_data import generate, write_dataset
from payloads import Precomputed
from test_dataset_memory import SPECS, damaged

USED = "building insights.json in a helper process"
DID_NOT_BUILD = "the insights lane did not build"


@pytest.fixture
def lane(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane for files of any size, as if on two CPUs or more."""
    monkeypatch.setattr(dataset_module, "INSIGHTS_LANE_MIN_BYTES", 0)
    monkeypatch.setattr(dataset_module, "_usable_cpus", lambda: 2)


def without_lane(data_dir: Path) -> dict:
    raws = read_data_dir(data_dir)
    object.__setattr__(raws[1], "path", None)  # a file made in memory never gets a lane
    return dataset_state(dataset_from_files(*raws, Precomputed))


def with_lane(data_dir: Path, caplog: pytest.LogCaptureFixture) -> dict:
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        found = dataset_state(dataset_from_files(*read_data_dir(data_dir), Precomputed))
    assert USED in caplog.text and DID_NOT_BUILD not in caplog.text, caplog.text
    return found


def shuffled_per_review(tmp_path: Path) -> Path:
    """per_review in an order unlike the reviews' (oldest first), so entry numbers are not positions."""
    reviews_doc, insights_doc = make_docs(SPECS)
    insights_doc["per_review"] = dict(reversed(list(insights_doc["per_review"].items())))
    write_docs(tmp_path / "shuffled", reviews_doc, insights_doc)
    return tmp_path / "shuffled"


@pytest.mark.usefixtures("lane")
@pytest.mark.parametrize("data", ["specs", "shuffled", "generated", "empty"])
def test_the_lane_builds_what_one_process_builds(data: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    if data == "specs":
        write_docs(tmp_path / data, *make_docs(SPECS))
    elif data == "shuffled":
        shuffled_per_review(tmp_path)
    elif data == "generated":
        write_dataset(str(tmp_path / data), *generate(400, seed=11, end_date=dt.date(2026, 11, 15), years=2))
    else:
        write_docs(tmp_path / data, *make_docs([]))
    assert with_lane(tmp_path / data, caplog) == without_lane(tmp_path / data)


def write_raw(data_dir: Path, reviews: object, insights: object) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, doc in (("reviews.json", reviews), ("insights.json", insights)):
        text = doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False)
        (data_dir / name).write_text(text, "utf-8", errors="surrogatepass")


def refusal(data_dir: Path) -> list:
    with pytest.raises(DataError) as refused:
        dataset_from_files(*read_data_dir(data_dir))
    return refused.value.problems


@pytest.mark.usefixtures("lane")
@pytest.mark.parametrize("kind", ["duplicate-id", "reply-before-review", "orphan-mention", "unknown-technician",
                                  "count", "aggregate"])
def test_cross_file_problems_are_the_same_with_the_lane(kind: str, tmp_path: Path) -> None:
    reviews_doc, insights_doc = damaged(kind)
    write_raw(tmp_path, reviews_doc, insights_doc)
    assert refusal(tmp_path) == check_documents(reviews_doc, insights_doc)


def insights_damage(kind: str) -> tuple[object, object]:
    reviews_doc, insights_doc = make_docs(SPECS[:3])
    if kind == "half-written":
        return reviews_doc, json.dumps(insights_doc)[:40]
    if kind == "schema":
        insights_doc["review_count"] = "many"
    elif kind == "lone surrogate":
        insights_doc["summary"] = "broken \ud800 text"
    elif kind == "both half-written":
        return json.dumps(reviews_doc)[:30], json.dumps(insights_doc)[:40]
    elif kind == "reviews invalid":
        reviews_doc["reviews"][0]["rating"] = "five"
    return reviews_doc, insights_doc


@pytest.mark.parametrize("kind", ["half-written", "schema", "lone surrogate", "both half-written", "reviews invalid"])
def test_refusals_are_the_same_with_the_lane(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_raw(tmp_path, *insights_damage(kind))
    expected = refusal(tmp_path)
    monkeypatch.setattr(dataset_module, "INSIGHTS_LANE_MIN_BYTES", 0)
    monkeypatch.setattr(dataset_module, "_usable_cpus", lambda: 2)
    assert refusal(tmp_path) == expected and expected


@pytest.mark.usefixtures("lane")
def test_a_file_replaced_after_it_was_read_is_built_from_the_bytes_read(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    raws = read_data_dir(tmp_path)
    expected = without_lane(tmp_path)
    write_docs(tmp_path, *make_docs(SPECS[:2]))  # the lane reads this; its sha256 differs
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        built = dataset_state(dataset_from_files(*raws, Precomputed))
    assert "the file changed since it was read" in caplog.text
    assert built == expected


@pytest.mark.usefixtures("lane")
def test_a_failing_helper_costs_a_warning_not_the_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    expected = without_lane(tmp_path)
    crash = "import sys; sys.stderr.write('helper crashed on purpose'); sys.exit(3)"
    monkeypatch.setattr(dataset_module, "_lane_command", lambda raw: [sys.executable, "-c", crash])
    with caplog.at_level(logging.WARNING, "reviewsd.data"):
        built = dataset_state(dataset_from_files(*read_data_dir(tmp_path), Precomputed))
    assert built == expected
    assert "exit status 3" in caplog.text and "helper crashed on purpose" in caplog.text


@pytest.mark.usefixtures("lane")
def test_a_hung_helper_is_killed_after_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    expected = without_lane(tmp_path)
    started: list = []
    real_start = dataset_module._InsightsLane.start.__func__

    def start(cls, raw):
        lane = real_start(cls, raw)
        started.append(lane)
        return lane

    monkeypatch.setattr(dataset_module, "_lane_command",
                        lambda raw: [sys.executable, "-c", "import threading; threading.Event().wait()"])  # hangs
    monkeypatch.setattr(dataset_module, "INSIGHTS_LANE_TIMEOUT", 0.5)
    monkeypatch.setattr(dataset_module._InsightsLane, "start", classmethod(start))
    with caplog.at_level(logging.WARNING, "reviewsd.data"):
        built = dataset_state(dataset_from_files(*read_data_dir(tmp_path), Precomputed))
    assert built == expected
    assert "took over 0.5 s" in caplog.text
    assert started and started[0].process.poll() is not None  # killed and reaped, not left running


def test_no_lane_for_small_files_or_one_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        dataset_from_files(*read_data_dir(tmp_path))  # the default threshold: far above these files
        monkeypatch.setattr(dataset_module, "INSIGHTS_LANE_MIN_BYTES", 0)
        monkeypatch.setattr(dataset_module, "_usable_cpus", lambda: 1)
        dataset_from_files(*read_data_dir(tmp_path))
    assert USED not in caplog.text
    monkeypatch.setattr(dataset_module, "_usable_cpus", lambda: 2)
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        dataset_from_files(*read_data_dir(tmp_path))
    assert USED in caplog.text


@pytest.mark.usefixtures("lane")
def test_no_lane_when_the_interpreter_is_not_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    """Embedded in uWSGI or mod_wsgi, sys.executable names the server: starting it would start a server."""
    write_docs(tmp_path, *make_docs(SPECS))
    monkeypatch.setattr(sys, "executable", "/usr/bin/uwsgi")
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        loaded = dataset_from_files(*read_data_dir(tmp_path))
    assert USED not in caplog.text
    assert len(loaded.reviews) == len(SPECS)
