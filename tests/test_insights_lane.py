"""The insights lane: insights.json's half of a build in a helper process gives exactly the one-process build.

Every test forces the lane on small files (it is normally used from 4 MiB) and compares
with the build without it: the same Dataset value for value, the same problems in the
same order, and a silent or logged fallback whenever the helper cannot build.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

import insights_lane
from dataset import DataError, check_documents, dataset_from_files, read_data_dir
from factories import dataset_state, make_docs, write_docs
from generate_data import generate, write_dataset
from payloads import Precomputed
from test_dataset_memory import SPECS, damaged

USED = "building insights.json in a helper process"
DID_NOT_BUILD = "the insights lane did not build"


@pytest.fixture
def lane(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The lane for files of any size, as if on two CPUs or more."""
    monkeypatch.setattr(insights_lane, "MIN_BYTES", 0)
    monkeypatch.setattr(insights_lane, "usable_cpus", lambda: 2)
    yield
    insights_lane.discard_early()


def without_lane(data_dir: Path) -> dict:
    raws = read_data_dir(data_dir)
    object.__setattr__(raws[1], "path", None)  # a file made in memory never gets a lane
    return dataset_state(dataset_from_files(*raws, Precomputed))


def with_lane(data_dir: Path, caplog: pytest.LogCaptureFixture) -> dict:
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        found = dataset_state(dataset_from_files(*read_data_dir(data_dir), Precomputed))
    assert USED in caplog.text and DID_NOT_BUILD not in caplog.text, caplog.text
    assert "WARNING" not in caplog.text, caplog.text  # a helper that fails costs a warning, not the load
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
    elif kind == "infinity":
        insights_doc["temporal"]["trend"]["slope_per_month"] = float("inf")  # written as Infinity
    elif kind == "both half-written":
        return json.dumps(reviews_doc)[:30], json.dumps(insights_doc)[:40]
    elif kind == "reviews invalid":
        reviews_doc["reviews"][0]["rating"] = "five"
    return reviews_doc, insights_doc


@pytest.mark.parametrize("kind", ["half-written", "schema", "lone surrogate", "infinity", "both half-written",
                                  "reviews invalid"])
def test_refusals_are_the_same_with_the_lane(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_raw(tmp_path, *insights_damage(kind))
    expected = refusal(tmp_path)
    monkeypatch.setattr(insights_lane, "MIN_BYTES", 0)
    monkeypatch.setattr(insights_lane, "usable_cpus", lambda: 2)
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
    monkeypatch.setattr(insights_lane, "lane_command", lambda path, back=None: [sys.executable, "-c", crash])
    with caplog.at_level(logging.WARNING, "reviewsd.data"):
        built = dataset_state(dataset_from_files(*read_data_dir(tmp_path), Precomputed))
    assert built == expected
    assert "exit status 3" in caplog.text and "helper crashed on purpose" in caplog.text


@pytest.mark.usefixtures("lane")
def test_a_helper_that_answers_nothing_costs_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    expected = without_lane(tmp_path)
    monkeypatch.setattr(insights_lane, "lane_command", lambda path, back=None: [sys.executable, "-c", "pass"])
    with caplog.at_level(logging.WARNING, "reviewsd.data"):
        built = dataset_state(dataset_from_files(*read_data_dir(tmp_path), Precomputed))
    assert built == expected
    assert "exit status 0, no answer" in caplog.text


@pytest.mark.usefixtures("lane")
@pytest.mark.parametrize("memfd", [True, False])
def test_a_helper_done_first_writes_its_whole_answer_and_exits(memfd: bool, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Its answer (here far over the 64 KiB a pipe holds) goes to a file, so it need not wait for the server.

    Without memfd_create (not Linux, or forbidden), the file is an unlinked temporary one: nothing is left behind.
    """
    write_dataset(str(tmp_path / "data"), *generate(400, seed=11, end_date=dt.date(2026, 11, 15), years=2))
    if not memfd:
        def forbidden(*args: object) -> int:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(insights_lane.os, "memfd_create", forbidden)
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
        (tmp_path / "tmp").mkdir()
    raws = read_data_dir(tmp_path / "data")
    lane = insights_lane.InsightsLane.start(raws[1].path, len(raws[1].content))
    assert lane is not None
    try:
        assert lane.process.wait(timeout=60) == 0  # exits before anyone reads its answer
        built = lane.insights_half(raws[1].sha256)
    finally:
        lane.close()
    assert built is not None and len(built[0]) > 64 << 10  # the /insights.json body alone
    assert memfd or list((tmp_path / "tmp").iterdir()) == []


def test_the_helper_on_its_own_writes_to_stdout_and_checks_its_arguments(tmp_path: Path) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    helper = [sys.executable, insights_lane.__file__]
    done = subprocess.run([*helper, str(tmp_path / "insights.json")], capture_output=True, timeout=60)
    assert done.returncode == 0 and pickle.loads(done.stdout)[0] == "built"
    wrong = subprocess.run([*helper, str(tmp_path / "insights.json"), "--answer-fd"], capture_output=True, timeout=60)
    assert wrong.returncode == 2 and b"usage: insights_lane.py INSIGHTS [--reviews REVIEWS --back-from OFFSET] [--answer-fd N [--back-fd M]]" in wrong.stderr


@pytest.mark.usefixtures("lane")
def test_a_hung_helper_is_killed_after_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    expected = without_lane(tmp_path)
    started: list = []
    real_start = insights_lane.InsightsLane.start.__func__

    def start(cls, path, size, reviews=None):
        lane = real_start(cls, path, size, reviews)
        started.append(lane)
        return lane

    monkeypatch.setattr(insights_lane, "lane_command",
                        lambda path, back=None: [sys.executable, "-c", "import threading; threading.Event().wait()"])  # hangs
    monkeypatch.setattr(insights_lane, "TIMEOUT", 0.5)
    monkeypatch.setattr(insights_lane.InsightsLane, "start", classmethod(start))
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
        monkeypatch.setattr(insights_lane, "MIN_BYTES", 0)
        monkeypatch.setattr(insights_lane, "usable_cpus", lambda: 1)
        dataset_from_files(*read_data_dir(tmp_path))
    assert USED not in caplog.text
    monkeypatch.setattr(insights_lane, "usable_cpus", lambda: 2)
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


# ---------------------------------------------------------------- started early, before the server's imports


ADOPTED = "took the insights lane started early"


@pytest.mark.usefixtures("lane")
def test_a_load_takes_the_lane_started_early(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    expected = without_lane(tmp_path)
    insights_lane.start_early(tmp_path)
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        built = dataset_state(dataset_from_files(*read_data_dir(tmp_path), Precomputed))
    assert built == expected
    assert ADOPTED in caplog.text and USED not in caplog.text  # taken, not a second one started
    assert DID_NOT_BUILD not in caplog.text


@pytest.mark.usefixtures("lane")
def test_an_early_lane_that_read_another_version_is_not_used(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_docs(tmp_path, *make_docs(SPECS[:2]))
    insights_lane.start_early(tmp_path)  # reads the first version, whenever it gets to it
    insights_lane._started_early[str((tmp_path / "insights.json").resolve())].process.wait(timeout=60)
    write_docs(tmp_path, *make_docs(SPECS))  # the server then reads this one
    expected = without_lane(tmp_path)
    with caplog.at_level(logging.DEBUG, "reviewsd.data"):
        built = dataset_state(dataset_from_files(*read_data_dir(tmp_path), Precomputed))
    assert built == expected
    assert ADOPTED in caplog.text and "the file changed since it was read" in caplog.text


@pytest.mark.usefixtures("lane")
def test_no_early_lane_when_the_build_cache_is_there(tmp_path: Path) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    cache = tmp_path / "build-cache.bin"
    cache.write_bytes(b"")
    insights_lane.start_early(tmp_path, skip_if=cache)
    assert insights_lane._started_early == {}
    insights_lane.start_early(tmp_path / "missing")  # nothing to read: the load reports it
    assert insights_lane._started_early == {}


@pytest.mark.usefixtures("lane")
def test_an_early_lane_nobody_takes_is_stopped(tmp_path: Path) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    insights_lane.start_early(tmp_path)
    (lane,) = insights_lane._started_early.values()
    insights_lane.discard_early()
    assert insights_lane._started_early == {}
    assert lane.process.poll() is not None  # ended and reaped


@pytest.mark.parametrize("argv, options", [([], []), (["--port", "0"], ["--port", "0"]),
                                           (["serve", "--no-hub"], ["--no-hub"]), (["check"], None),
                                           (["check", "--data-dir", "x"], None)])
def test_which_command_lines_serve(argv: list[str], options: list[str] | None) -> None:
    import reviewsd

    assert reviewsd.serve_argv(argv) == options


def test_serving_turns_the_collector_back_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python reviewsd.py` starts with the cyclic collector off (see the top of reviewsd.py); serve_main
    turns it on before it serves, and gives back the memory the first load left behind once READY."""
    import gc

    import dataset
    import reviewsd
    import server

    write_docs(tmp_path / "data", *make_docs(SPECS))
    seen: list[bool] = []

    def run(app: object, **options: object) -> int:
        seen.append(gc.isenabled())
        assert released == []  # the first load's memory is given back once READY, not before
        options["on_ready"]()  # type: ignore[operator]
        options["sock"].close()  # type: ignore[attr-defined]
        return 0

    monkeypatch.setattr(server, "run", run)
    monkeypatch.setattr(reviewsd, "configure_logging", lambda log_format: None)
    released: list[str] = []
    monkeypatch.setattr(dataset, "release_memory", lambda: released.append("by the load"))
    monkeypatch.setattr(reviewsd, "release_memory", lambda: released.append("after READY"))
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        assert reviewsd.serve_main(["--port", "0", "--no-hub", "--reload-interval", "0", "--no-build-cache",
                                    "--data-dir", str(tmp_path / "data"), "--state-dir", str(tmp_path / "state")]) == 0
    finally:
        if was_enabled:
            gc.enable()
    assert seen == [True] and released == ["after READY"]
    reviewsd.create_app(reviewsd.Config(data_dir=str(tmp_path / "data"), state_dir=str(tmp_path / "state"),
                                        hub=False, build_cache=False))
    assert released == ["after READY", "by the load"]  # any other host: at the load, as before
