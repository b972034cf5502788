"""Loading, refusing and reloading data files; the `check` command."""

from __future__ import annotations

import gzip
import json
import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from werkzeug.test import Client

import payloads
import reviewsd
from dataset import DataError, check_data_dir, load_dataset
from factories import Spec, make_docs, write_docs
from conftest import ROOT, SMALL_SPECS
from payloads import PendingVariant, Variant
from test_payloads import GatedCompression


def small_app(data_dir: Path) -> reviewsd.ReviewsApp:
    # The state directory (hub database, build cache) beside the test's data, never the checkout's.
    return reviewsd.create_app(reviewsd.Config(data_dir=str(data_dir), state_dir=str(data_dir.parent / "state"),
                                               reload_interval=0))


NEW_SPECS = [*SMALL_SPECS, Spec(rating=1, date="2025-04-01", text="A brand new review.")]


def test_valid_replacement_is_served_with_new_etags(small_data_dir: Path) -> None:
    app = small_app(small_data_dir)
    client = Client(app)
    before = {p: client.get(p).headers["ETag"] for p in reviewsd.TOPIC_PATHS}
    write_docs(small_data_dir, *make_docs(NEW_SPECS))
    assert app.store.reload() is True
    after = {p: client.get(p).headers["ETag"] for p in reviewsd.TOPIC_PATHS}
    assert all(before[p] != after[p] for p in before)
    assert client.get("/reviews.json").get_json()["reviews"][0]["text"] == "A brand new review."
    assert client.get("/api/reviews/search?query=brand+new").get_json()["matched"] == 1


def test_replacing_in_place_non_atomically_also_reloads(small_data_dir: Path) -> None:
    app = small_app(small_data_dir)
    reviews_doc, insights_doc = make_docs(NEW_SPECS)
    (small_data_dir / "insights.json").write_text(json.dumps(insights_doc), "utf-8")
    (small_data_dir / "reviews.json").write_text(json.dumps(reviews_doc), "utf-8")
    assert app.store.reload() is True
    assert len(app.store.current.dataset.reviews) == len(NEW_SPECS)


def test_listeners_see_old_and_new_snapshots(small_data_dir: Path) -> None:
    app = small_app(small_data_dir)
    seen = []
    app.store.subscribe(lambda old, new: seen.append((old, new)))
    first = app.store.current
    write_docs(small_data_dir, *make_docs(NEW_SPECS))
    app.store.reload()
    assert seen == [(first, app.store.current)] and first is not app.store.current


def test_unchanged_files_do_not_notify(small_data_dir: Path) -> None:
    app = small_app(small_data_dir)
    seen = []
    app.store.subscribe(lambda old, new: seen.append(new))
    write_docs(small_data_dir, *make_docs(SMALL_SPECS))  # same bytes, new inode and mtime
    assert app.store.reload() is False and app.store.reload(force=True) is False
    assert seen == []


@pytest.mark.parametrize("damage", [
    lambda text: text[: len(text) // 2],  # half-written
    lambda text: "",  # truncated to nothing
    lambda text: text.replace('"rating": 5', '"rating": 7', 1),  # fails the schema
    lambda text: "\udcff",  # not UTF-8 once written with surrogateescape
])
def test_bad_file_is_refused_and_old_data_kept(small_data_dir: Path, damage, caplog) -> None:
    app = small_app(small_data_dir)
    client = Client(app)
    etag = client.get("/reviews.json").headers["ETag"]
    seen = []
    app.store.subscribe(lambda old, new: seen.append(new))
    path = small_data_dir / "reviews.json"
    text = json.dumps(json.loads(path.read_text("utf-8")), indent=1)
    path.write_bytes(damage(text).encode("utf-8", "surrogateescape"))
    with caplog.at_level(logging.ERROR, logger="reviewsd.data"):
        assert app.store.reload() is False
    assert "reload refused" in caplog.text and "reviews.json" in caplog.text
    assert client.get("/reviews.json").headers["ETag"] == etag
    assert app.store.last_error is not None and seen == []


def test_cross_file_inconsistency_is_refused(small_data_dir: Path) -> None:
    app = small_app(small_data_dir)
    reviews_doc, _ = make_docs(SMALL_SPECS[1:])  # a review that insights still mentions is gone
    write_docs(small_data_dir, reviews_doc, json.loads((small_data_dir / "insights.json").read_text("utf-8")))
    assert app.store.reload() is False
    assert any(p.rule == "review-exists" for p in app.store.last_error.problems)


def test_refused_file_is_not_retried_until_it_changes_then_accepted(small_data_dir: Path) -> None:
    app = small_app(small_data_dir)
    (small_data_dir / "reviews.json").write_text("{", "utf-8")
    assert app.store.reload() is False
    error = app.store.last_error
    assert app.store.reload() is False and app.store.last_error is error  # same stat: not read again
    write_docs(small_data_dir, *make_docs(NEW_SPECS))
    assert app.store.reload() is True and app.store.last_error is None


def test_the_refusal_is_forgotten_when_the_served_files_come_back(small_data_dir: Path) -> None:
    app = small_app(small_data_dir)
    good = (small_data_dir / "reviews.json").read_bytes()
    (small_data_dir / "reviews.json").write_text("{", "utf-8")  # caught half-written
    assert app.store.reload() is False and app.store.last_error is not None
    (small_data_dir / "reviews.json").write_bytes(good)  # then finished: the version already served
    assert app.store.reload() is False and app.store.last_error is None


def test_polling_picks_up_a_change(small_data_dir: Path) -> None:
    app = small_app(small_data_dir)
    changed = threading.Event()
    app.store.subscribe(lambda old, new: changed.set())
    app.store.start_polling(0.05)
    try:
        write_docs(small_data_dir, *make_docs(NEW_SPECS))
        assert changed.wait(10), "the poller did not reload within 10 s"
    finally:
        app.store.stop_polling()
    assert len(app.store.current.dataset.reviews) == len(NEW_SPECS)


def test_concurrent_readers_never_see_a_mixed_snapshot(small_data_dir: Path) -> None:
    """Each response's feed and dataset ETags belong to one version."""
    app = small_app(small_data_dir)
    versions = {}
    for specs in (SMALL_SPECS, NEW_SPECS):
        write_docs(small_data_dir, *make_docs(specs))
        app.store.reload(force=True)
        snap = app.store.current
        versions[snap.payloads["/reviews.json"].identity.etag] = snap.payloads["/api/feed.json"].identity.etag
    stop = threading.Event()
    errors = []

    def reader() -> None:
        while not stop.is_set():
            snap = app.store.current
            if versions[snap.payloads["/reviews.json"].identity.etag] != snap.payloads["/api/feed.json"].identity.etag:
                errors.append("mixed")

    threads = [threading.Thread(target=reader) for _ in range(4)]
    # The readers never block, so the reloading thread waits a switch interval (5 ms) for the
    # GIL whenever it lets go of it (reading files, waiting for the hashing threads): 30 s in
    # all at the default. A shorter interval hands it over sooner; the interleaving is the same.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        for t in threads:
            t.start()
        for i in range(30):
            write_docs(small_data_dir, *make_docs(SMALL_SPECS if i % 2 else NEW_SPECS))
            app.store.reload(force=True)
    finally:
        stop.set()
        for t in threads:
            t.join()
        sys.setswitchinterval(interval)
    assert errors == []


# ---------------------------------------------------------------- start-up and check


def test_start_refuses_bad_data_naming_file_path_and_rule(small_data_dir: Path) -> None:
    doc = json.loads((small_data_dir / "reviews.json").read_text("utf-8"))
    doc["reviews"][1]["rating"] = 0
    (small_data_dir / "reviews.json").write_text(json.dumps(doc), "utf-8")
    with pytest.raises(DataError) as exc:
        load_dataset(small_data_dir)
    assert [str(p) for p in exc.value.problems][0].startswith("reviews.json: $.reviews[1].rating: schema:minimum")


def run_check(data_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "reviewsd.py"), "check", "--data-dir", str(data_dir)],
                          capture_output=True, text=True, timeout=60)


def test_check_accepts_good_data(small_data_dir: Path) -> None:
    result = run_check(small_data_dir)
    assert result.returncode == 0 and "OK" in result.stdout


def test_check_accepts_the_bundled_sample() -> None:
    result = run_check(ROOT / "data")
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_lists_every_problem_and_fails(small_data_dir: Path) -> None:
    reviews_doc, insights_doc = make_docs(SMALL_SPECS)
    reviews_doc["reviews"][0]["rating"] = "five"
    reviews_doc["reviews"][1]["id"] = reviews_doc["reviews"][2]["id"]
    reviews_doc["aggregate_rating"]["review_count"] = 99
    del insights_doc["summary"]
    write_docs(small_data_dir, reviews_doc, insights_doc)
    result = run_check(small_data_dir)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert "reviews.json: $.reviews[0].rating: schema:type: 'five' is not of type 'integer'" in lines
    assert any(line.startswith("insights.json: $: schema:required: 'summary'") for line in lines)
    assert "2 problem(s)" in result.stderr


def test_check_reports_cross_file_rules(small_data_dir: Path) -> None:
    reviews_doc, insights_doc = make_docs(SMALL_SPECS)
    reviews_doc["reviews"][1]["id"] = reviews_doc["reviews"][2]["id"]
    reviews_doc["aggregate_rating"]["distribution"]["5"] = 40
    insights_doc["aspects"][0]["mention_count"] += 1
    write_docs(small_data_dir, reviews_doc, insights_doc)
    problems = {(p.file, p.path, p.rule) for p in check_data_dir(small_data_dir)}
    assert ("reviews.json", "$.reviews[2].id", "unique-id") in problems
    assert ("reviews.json", '$.aggregate_rating.distribution["5"]', "aggregate-agrees") in problems
    assert ("insights.json", "$.aspects[0].mention_count", "counts-agree") in problems
    assert any(p[2] == "review-exists" for p in problems)


@pytest.mark.parametrize("file", ["reviews.json", "insights.json"])
def test_lone_surrogates_are_refused_with_their_place(small_data_dir: Path, file: str) -> None:
    """JSON can escape a lone surrogate; UTF-8 cannot carry it, so such text is refused, not a crash."""
    reviews_doc, insights_doc = make_docs(SMALL_SPECS)
    if file == "reviews.json":
        reviews_doc["reviews"][0]["text"] = "broken \ud83d emoji"
        where = "$.reviews[0].text"
    else:
        insights_doc["summary"] = "broken \udfff summary"
        where = "$.summary"
    app = small_app(small_data_dir)
    for name, doc in (("reviews.json", reviews_doc), ("insights.json", insights_doc)):
        (small_data_dir / name).write_text(json.dumps(doc), "ascii")  # the surrogate as a \\u escape
    problems = check_data_dir(small_data_dir)
    assert [(p.file, p.path, p.rule) for p in problems] == [(file, where, "unicode")]
    assert app.store.reload() is False and app.store.last_error.problems == problems


@pytest.mark.parametrize(("file", "replacement", "path", "rule", "message"), [
    ("reviews.json", "NaN", "$", "json", "NaN is not a JSON value"),  # json.loads accepts it; JSON does not
    ("insights.json", "-Infinity", "$", "json", "-Infinity is not a JSON value"),
    ("insights.json", "1e400", "$.temporal.trend.slope_per_month", "number", "beyond the range of a 64-bit float"),
    ("reviews.json", "5" * 5000, "$", "json", "4300"),  # Python's limit on converting digits to an int
])
def test_numbers_that_cannot_be_served_as_json_are_refused(small_data_dir: Path, file: str, replacement: str,
                                                           path: str, rule: str, message: str) -> None:
    # Served, NaN or Infinity would make every body that holds it unparseable for strict clients.
    reviews_doc, insights_doc = make_docs(SMALL_SPECS)
    reviews_doc["aggregate_rating"]["rating_value"] = 4.125
    insights_doc["temporal"]["trend"]["slope_per_month"] = 0.125
    app = small_app(small_data_dir)
    served = app.store.current.dataset
    texts = {"reviews.json": json.dumps(reviews_doc), "insights.json": json.dumps(insights_doc)}
    texts[file] = texts[file].replace("4.125" if file == "reviews.json" else "0.125", replacement, 1)
    for name, text in texts.items():
        (small_data_dir / name).write_text(text, "utf-8")
    problems = check_data_dir(small_data_dir)
    assert [(p.file, p.path, p.rule) for p in problems] == [(file, path, rule)]
    assert message in problems[0].message
    assert app.store.reload() is False and app.store.last_error.problems == problems
    assert app.store.current.dataset is served


def test_nesting_too_deep_for_the_parser_is_refused_not_a_crash(small_data_dir: Path) -> None:
    (small_data_dir / "reviews.json").write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    problems = check_data_dir(small_data_dir)
    assert [(p.file, p.path, p.rule, p.message) for p in problems] == [
        ("reviews.json", "$", "json", "not valid JSON for this server (nested too deeply)")]


def test_a_value_nested_too_deeply_for_the_schema_explanation_is_refused_not_a_crash(small_data_dir: Path) -> None:
    reviews_doc, insights_doc = make_docs(SMALL_SPECS)
    write_docs(small_data_dir, reviews_doc, insights_doc)
    deep = "[" * 900 + "]" * 900  # two of them: uniqueItems compares them, recursively
    text = json.dumps(reviews_doc).replace('"opening_hours": [', '"opening_hours": [{"days": [' + deep + ", " + deep
                                           + '], "opens": "08:00", "closes": "18:00"}, ', 1)
    (small_data_dir / "reviews.json").write_text(text, "utf-8")
    problems = check_data_dir(small_data_dir)
    assert [(p.file, p.path, p.rule) for p in problems] == [("reviews.json", "$", "schema")]


def test_check_reports_missing_and_unparsable_files(tmp_path: Path) -> None:
    (tmp_path / "reviews.json").write_text('{"business": ', "utf-8")
    result = run_check(tmp_path)
    assert result.returncode == 1
    assert "reviews.json: $: json: not valid JSON" in result.stdout
    assert "insights.json: $: readable: cannot read" in result.stdout


def test_the_first_load_serves_before_the_data_files_gzip_is_done(small_data_dir: Path, monkeypatch) -> None:
    gate = GatedCompression()
    monkeypatch.setattr(payloads, "gzip_body", gate)
    build_snapshot, compressing_during_load = reviewsd.build_snapshot, []

    def build_while_watching(*args, **kwargs):
        # Bounded wait for something that must not happen: the gzip work starting before the load is done.
        compressing_during_load.append(gate.started.wait(timeout=1))
        return build_snapshot(*args, **kwargs)

    monkeypatch.setattr(reviewsd, "build_snapshot", build_while_watching)
    app = small_app(small_data_dir)  # returns with both compressions held
    assert compressing_during_load == [False] and gate.started.wait(timeout=30)
    client = Client(app)
    plain = client.get("/reviews.json")
    gzip_tag = plain.headers["ETag"][:-1] + '-gzip"'
    not_modified = client.get("/reviews.json", headers={"Accept-Encoding": "gzip", "If-None-Match": gzip_tag})
    assert plain.status_code == 200 and not_modified.status_code == 304 and not gate.held_too_long
    assert all(isinstance(p.gzipped, PendingVariant) for p in
               map(app.store.current.topic, ("/reviews.json", "/insights.json")))
    gate.release.set()
    zipped = client.get("/reviews.json", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["ETag"] == gzip_tag and zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.data) == plain.data
    assert int(zipped.headers["Content-Length"]) == len(zipped.data) and not gate.held_too_long


def test_a_reload_swaps_only_once_its_gzip_is_done(small_data_dir: Path, monkeypatch) -> None:
    app = small_app(small_data_dir)
    first = app.store.current
    gate = GatedCompression()
    monkeypatch.setattr(payloads, "gzip_body", gate)
    write_docs(small_data_dir, *make_docs(NEW_SPECS))
    reloading = threading.Thread(target=app.store.reload)
    reloading.start()
    assert gate.started.wait(timeout=30)
    assert app.store.current is first  # still compressing: the old snapshot answers
    gate.release.set()
    reloading.join(timeout=30)
    assert app.store.current is not first and not gate.held_too_long
    assert all(isinstance(p.gzipped, Variant) for p in
               map(app.store.current.topic, ("/reviews.json", "/insights.json")))
