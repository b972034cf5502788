"""Loading, refusing and reloading data files; the `check` command."""

from __future__ import annotations

import gzip
import json
import logging
import sys
import threading
from pathlib import Path

import pytest
from conftest import ROOT, SMALL_SPECS
from support.cli import check
from support.factories import Spec, make_docs, write_docs
from support.payloads import GatedCompression
from werkzeug.test import Client

from reviewsd_app import reviewsd
from reviewsd_app.reviews import files as files_module
from reviewsd_app.reviews.dataset import DataError, check_data_dir, load_dataset
from reviewsd_app.web import payloads, snapshot
from reviewsd_app.web.payloads import Variant


def small_app(data_dir: Path) -> reviewsd.ReviewsApp:
    # The state directory (hub database, build cache) beside the test's data, never the checkout's.
    return reviewsd.create_app(
        reviewsd.Config(data_dir=str(data_dir), state_dir=str(data_dir.parent / "state"), reload_interval=0)
    )


NEW_SPECS = [*SMALL_SPECS, Spec(rating=1, date="2025-04-01", text="A brand new review.")]


def test_valid_replacement_is_served_with_new_etags(small_data_dir: Path) -> None:
    app = small_app(small_data_dir)
    client = Client(app)
    before = {p: client.get(p).headers["ETag"] for p in snapshot.TOPIC_PATHS}
    write_docs(small_data_dir, *make_docs(NEW_SPECS))
    assert app.store.reload() is True
    after = {p: client.get(p).headers["ETag"] for p in snapshot.TOPIC_PATHS}
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


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # half-written
        lambda text: "",  # truncated to nothing
        lambda text: text.replace('"rating": 5', '"rating": 7', 1),  # fails the schema
        lambda text: "\udcff",  # not UTF-8 once written with surrogateescape
    ],
)
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


@pytest.mark.slow
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
            if (
                versions[snap.payloads["/reviews.json"].identity.etag]
                != snap.payloads["/api/feed.json"].identity.etag
            ):
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
    assert [str(p) for p in exc.value.problems][0].startswith(
        "reviews.json: $.reviews[1].rating: schema:minimum"
    )


def test_check_accepts_good_data(small_data_dir: Path) -> None:
    result = check(small_data_dir)
    assert result.returncode == 0 and "OK" in result.stdout


def test_check_accepts_the_bundled_sample() -> None:
    result = check(ROOT / "data")
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_lists_every_problem_and_fails(small_data_dir: Path) -> None:
    reviews_doc, insights_doc = make_docs(SMALL_SPECS)
    reviews_doc["reviews"][0]["rating"] = "five"
    reviews_doc["reviews"][1]["id"] = reviews_doc["reviews"][2]["id"]
    reviews_doc["aggregate_rating"]["review_count"] = 99
    del insights_doc["summary"]
    write_docs(small_data_dir, reviews_doc, insights_doc)
    result = check(small_data_dir)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert 'reviews.json: $.reviews[0].rating: schema:type: "five" is not of type "integer"' in lines
    assert 'insights.json: $: schema:required: "summary" is a required property' in lines
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


@pytest.mark.parametrize(
    ("file", "replacement", "path", "rule", "message"),
    [
        (
            "reviews.json",
            "NaN",
            "$",
            "json",
            "NaN is not a JSON value",
        ),  # json.loads accepts it; JSON does not
        ("insights.json", "-Infinity", "$", "json", "-Infinity is not a JSON value"),
        (
            "insights.json",
            "1e400",
            "$.temporal.trend.slope_per_month",
            "number",
            "beyond the range of a 64-bit float",
        ),
        ("reviews.json", "5" * 5000, "$", "json", "4300"),  # Python's limit on converting digits to an int
    ],
)
def test_numbers_that_cannot_be_served_as_json_are_refused(
    small_data_dir: Path, file: str, replacement: str, path: str, rule: str, message: str
) -> None:
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
        ("reviews.json", "$", "json", "not valid JSON for this server (nested too deeply)")
    ]


def test_a_value_nested_too_deeply_for_the_validator_is_refused_not_a_crash(small_data_dir: Path) -> None:
    reviews_doc, insights_doc = make_docs(SMALL_SPECS)
    write_docs(small_data_dir, reviews_doc, insights_doc)
    deep = "[" * 900 + "]" * 900  # two of them: uniqueItems compares them, recursively
    text = json.dumps(reviews_doc).replace(
        '"opening_hours": [',
        '"opening_hours": [{"days": [' + deep + ", " + deep + '], "opens": "08:00", "closes": "18:00"}, ',
        1,
    )
    (small_data_dir / "reviews.json").write_text(text, "utf-8")
    problems = check_data_dir(small_data_dir)
    assert [(p.file, p.path, p.rule) for p in problems] == [("reviews.json", "$", "schema")]


def test_check_reports_missing_and_unparsable_files(tmp_path: Path) -> None:
    (tmp_path / "reviews.json").write_text('{"business": ', "utf-8")
    result = check(tmp_path)
    assert result.returncode == 1
    assert "reviews.json: $: json: not valid JSON" in result.stdout
    assert "insights.json: $: readable: cannot read" in result.stdout


def test_with_gzip_later_the_first_load_serves_identity_until_compressed(small_data_dir: Path) -> None:
    app = reviewsd.create_app(
        reviewsd.Config(
            data_dir=str(small_data_dir),
            state_dir=str(small_data_dir.parent / "state"),
            reload_interval=0,
            hub=False,
        ),
        gzip_later=True,
    )
    client = Client(app)
    plain = client.get("/reviews.json")
    early = client.get("/reviews.json", headers={"Accept-Encoding": "gzip"})
    assert early.headers.get("Content-Encoding") is None and early.headers["ETag"] == plain.headers["ETag"]
    assert early.data == plain.data and early.headers["Vary"] == "Accept-Encoding"
    app.store.current.compress_late()
    zipped = client.get("/reviews.json", headers={"Accept-Encoding": "gzip"})
    assert (
        zipped.headers["ETag"] == plain.headers["ETag"][:-1] + '-gzip"'
        and zipped.headers["Content-Encoding"] == "gzip"
    )
    assert gzip.decompress(zipped.data) == plain.data and int(zipped.headers["Content-Length"]) == len(
        zipped.data
    )


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
    assert all(
        isinstance(p.gzipped, Variant)
        for p in map(app.store.current.topic, ("/reviews.json", "/insights.json"))
    )


def test_check_suggests_the_fix_for_the_usual_mistakes(small_data_dir: Path) -> None:
    reviews_doc, insights_doc = make_docs(SMALL_SPECS)
    reviews_doc["aggregate_rating"]["review_count"] += 1
    insights_doc["aspects"][0]["mention_count"] += 1
    insights_doc["faq"].append(
        {"question": "Q?", "answer": "A.", "review_ids": ["01ZZZZZZZZZZZZZZZZZZZZZZZZ"]}
    )
    write_docs(small_data_dir, reviews_doc, insights_doc)
    lines = check(small_data_dir).stdout.splitlines()
    for rule, fix in (
        ("aggregate-agrees", "recount: aggregate_rating"),
        ("counts-agree", "recount from per_review"),
        ("review-exists", "must be an id in reviews.json"),
    ):
        at = next(n for n, line in enumerate(lines) if f": {rule}: " in line)
        assert lines[at + 1].startswith("  fix: ") and fix in lines[at + 1], lines
    reviews_doc, insights_doc = make_docs(SMALL_SPECS)
    reviews_doc["reviews"][0]["date"] = "07/03/2025"
    write_docs(small_data_dir, reviews_doc, insights_doc)
    lines = check(small_data_dir).stdout.splitlines()
    at = lines.index('reviews.json: $.reviews[0].date: schema:format: "07/03/2025" is not a "date"')
    assert (
        lines[at + 1]
        == "  fix: write a date as YYYY-MM-DD with a real month and day, e.g. 2026-03-07 (not 07/03/2026)"
    )


@pytest.mark.parametrize("file", ["reviews.json", "insights.json"])
def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    small_data_dir: Path, file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = (small_data_dir / file).stat().st_size
    limit = max((small_data_dir / name).stat().st_size for name in ("reviews.json", "insights.json"))
    config = reviewsd.Config(
        data_dir=str(small_data_dir),
        state_dir=str(small_data_dir.parent / "state"),
        reload_interval=0,
        hub=False,
        max_data_file_bytes=limit,
    )
    app = reviewsd.create_app(config)
    served = app.store.current
    (small_data_dir / file).write_bytes(
        (small_data_dir / file).read_bytes() + b" " * (limit + 1 - size)
    )  # valid JSON
    read: list[int] = []
    real_read = files_module.RawFile
    monkeypatch.setattr(
        files_module,
        "RawFile",
        lambda name, content, *args: read.append(len(content)) or real_read(name, content, *args),
    )
    assert app.store.reload() is False and app.store.current is served
    assert [str(p) for p in app.store.last_error.problems] == [
        f"{file}: $: size: {limit + 1:,} bytes is over the limit of {limit:,} bytes (--max-data-file-bytes)"
    ]
    assert len(read) == (1 if file == "insights.json" else 0)  # the oversized file is not read at all
    monkeypatch.undo()
    with pytest.raises(DataError) as refused:
        reviewsd.create_app(config)
    assert [p.rule for p in refused.value.problems] == ["size"]
    assert check_data_dir(small_data_dir, max_bytes=limit)[0].rule == "size"
    assert check_data_dir(small_data_dir) == []


def test_a_load_logs_its_files_and_sizes_then_its_reviews_and_time(small_data_dir: Path, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="reviewsd.data"):
        small_app(small_data_dir)
    lines = [r.getMessage() for r in caplog.records if r.name == "reviewsd.data"]
    assert lines[0].startswith("loading reviews.json (0.0 MB) and insights.json (0.0 MB) from ")
    assert lines[1].startswith(f"loaded {len(SMALL_SPECS)} reviews in ") and lines[1].endswith(" s")
