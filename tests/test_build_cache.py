"""The build cache: a restart on unchanged data serves exactly what a build from the files serves.

Every test here compares the cached path with the plain build (dataset_from_files), value
for value and byte for byte, and every damaged or foreign cache file must be ignored,
never served.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from werkzeug.test import Client

import build_cache
import reviewsd
from build_cache import CACHE_FILE, BuildCache
from conftest import ROOT, LiveServer
from dataset import DataError, Dataset, Parts, dataset_from_files, read_data_dir
from factories import Spec, dataset_state, make_docs, write_docs
from generate_data import generate, write_dataset
from payloads import Precomputed
from test_dataset_memory import SPECS as DATASET_SPECS

SPECS = DATASET_SPECS[:4]  # every kind of text, replies and mentions, without the boundary look-alikes
SEARCHES = ["/api/reviews/search", "/api/reviews/search?rating=5", "/api/reviews/search?query=wait",
            "/api/reviews/search?rating=4&limit=2", "/api/reviews/since/2025-01-01"]


def cache_in(path: Path) -> BuildCache:
    return BuildCache(path, fingerprint="test-code")


def generated_dir(tmp_path: Path, reviews: int = 300) -> Path:
    target = tmp_path / "generated"
    write_dataset(str(target), *generate(reviews, seed=7, end_date=dt.date(2026, 11, 15), years=3))
    return target


@pytest.fixture(params=["sample", "generated", "specs"])
def data_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "sample":
        target = tmp_path / "data"
        shutil.copytree(ROOT / "data", target)
        return target
    if request.param == "generated":
        return generated_dir(tmp_path)
    target = tmp_path / "specs"
    write_docs(target, *make_docs(SPECS))
    return target


def built_and_cached(data_dir: Path, cache: BuildCache) -> tuple[Dataset, Dataset]:
    """The same files built once (filling the cache) and then loaded again (from it)."""
    built = cache.load(*read_data_dir(data_dir), Precomputed)
    assert cache.wait_saved(timeout=60)
    return built, cache.load(*read_data_dir(data_dir), Precomputed)


def test_a_cached_load_equals_a_build(data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = cache_in(tmp_path / "state")
    with caplog.at_level(logging.INFO, "reviewsd.build_cache"):
        built, cached = built_and_cached(data_dir, cache)
    # Only this cache's lines: a write of an earlier test's server may still be logging.
    events = [r.event for r in caplog.records if hasattr(r, "event") and str(cache.path) in r.getMessage()]
    assert events == ["build_cache_written", "build_cache_used"]
    plain_build = dataset_from_files(*read_data_dir(data_dir), Precomputed)
    assert dataset_state(cached) == dataset_state(built) == dataset_state(plain_build)


def test_an_app_on_the_cache_answers_byte_for_byte_as_one_that_built(data_dir: Path, tmp_path: Path) -> None:
    config = reviewsd.Config(data_dir=str(data_dir), state_dir=str(tmp_path / "state"), reload_interval=0,
                             hub=False, base_url="https://reviews.example.com")
    first = reviewsd.create_app(config)
    assert first.build_cache is not None and first.build_cache.wait_saved(timeout=60)
    second = reviewsd.create_app(config)
    assert second.store.current.dataset.prepared == {}  # the payloads took the cached gzip and ETags
    for path in [*reviewsd.TOPIC_PATHS, "/insights.json", *SEARCHES]:
        for coding in ("identity", "gzip"):
            answers = [Client(app).get(path, headers={"Accept-Encoding": coding}) for app in (first, second)]
            assert answers[0].status_code == answers[1].status_code == 200, path
            assert answers[0].data == answers[1].data, (path, coding)
            assert answers[0].headers == answers[1].headers, (path, coding)


def test_without_the_option_nothing_is_written(tmp_path: Path, small_data_dir: Path) -> None:
    config = reviewsd.Config(data_dir=str(small_data_dir), state_dir=str(tmp_path / "state"), reload_interval=0,
                             hub=False, build_cache=False)
    app = reviewsd.create_app(config)
    assert app.build_cache is None
    assert not (tmp_path / "state" / CACHE_FILE).exists()
    assert reviewsd.parse_config(["--no-build-cache"]).build_cache is False
    assert reviewsd.parse_config([]).build_cache is True


def test_other_data_or_other_code_is_built_and_replaces_the_file(tmp_path: Path, small_data_dir: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    cache = cache_in(tmp_path / "state")
    built_and_cached(small_data_dir, cache)
    write_docs(small_data_dir, *make_docs([*SPECS, Spec(date="2025-07-01", text="Newer")]))
    with caplog.at_level(logging.INFO, "reviewsd.build_cache"):
        changed = cache.load(*read_data_dir(small_data_dir), Precomputed)
    assert changed.reviews[0]["text"] == "Newer"
    assert "for other data or code" in caplog.text
    assert cache.wait_saved(timeout=60)
    assert cache.read(cache.key(changed.reviews_sha256, changed.insights_sha256)) is not None
    other_code = BuildCache(tmp_path / "state", fingerprint="other-code")
    assert other_code.read(other_code.key(changed.reviews_sha256, changed.insights_sha256)) is None


def test_the_fingerprint_follows_code_and_schemas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = build_cache.code_fingerprint()
    assert build_cache.code_fingerprint() == before
    schemas = tmp_path / "schemas"
    shutil.copytree(build_cache.SCHEMA_DIR, schemas)
    monkeypatch.setattr(build_cache, "SCHEMA_DIR", schemas)
    assert build_cache.code_fingerprint() == before
    target = schemas / "reviews.schema.json"
    target.write_text(target.read_text("utf-8").replace('"maxLength"', '"maxLength" '), "utf-8")
    assert build_cache.code_fingerprint() != before


def damage(path: Path, how: str) -> None:
    content = bytearray(path.read_bytes())
    header_end = content.index(b"\n", len(build_cache.MAGIC)) + 1
    if how == "cut short":
        del content[-100:]
    elif how == "one byte flipped":
        content[header_end + 10] ^= 0x01
    elif how == "a byte too many":
        content += b"\0"
    elif how == "not a cache":
        content[:4] = b"PK\3\4"
    elif how == "header not JSON":
        content[len(build_cache.MAGIC)] = ord("[")
    elif how == "header without values":
        header = json.loads(content[len(build_cache.MAGIC):header_end])
        del header["values"]
        content[len(build_cache.MAGIC):header_end] = json.dumps(header).encode() + b"\n"
    elif how == "a part missing":
        header = json.loads(content[len(build_cache.MAGIC):header_end])
        name, length = header["values"].pop(0)
        assert name == "reviews_head"
        content[len(build_cache.MAGIC):header_end + length] = json.dumps(header).encode() + b"\n"
    elif how == "empty":
        content.clear()
    elif how in ("an etag changed", "lengths shifted"):
        header = json.loads(content[len(build_cache.MAGIC):header_end])
        if how == "an etag changed":
            name = next(iter(header["etags"]))
            header["etags"][name] = '"' + "0" * 64 + '"'
        else:  # bytes move from one part to the next, the total unchanged
            header["values"][0][1] -= 1
            header["values"][1][1] += 1
        content[len(build_cache.MAGIC):header_end] = json.dumps(header).encode() + b"\n"
    path.write_bytes(bytes(content))


@pytest.mark.parametrize("how", ["cut short", "one byte flipped", "a byte too many", "not a cache",
                                 "header not JSON", "header without values", "a part missing", "empty",
                                 "an etag changed", "lengths shifted"])
def test_a_damaged_file_is_ignored_and_rewritten(how: str, tmp_path: Path, small_data_dir: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    cache = cache_in(tmp_path / "state")
    built, _ = built_and_cached(small_data_dir, cache)
    damage(cache.path, how)
    with caplog.at_level(logging.INFO, "reviewsd.build_cache"):
        again = cache.load(*read_data_dir(small_data_dir), Precomputed)
    ignored = [r for r in caplog.records if getattr(r, "event", None) == "build_cache_ignored"]
    assert len(ignored) == 1 and ignored[0].levelno == logging.WARNING, caplog.text
    assert not [r for r in caplog.records if getattr(r, "event", None) == "build_cache_used"]
    assert dataset_state(again) == dataset_state(built)
    assert cache.wait_saved(timeout=60)
    assert cache.read(cache.key(built.reviews_sha256, built.insights_sha256)) is not None


def test_refused_data_is_never_cached(tmp_path: Path, small_data_dir: Path) -> None:
    (small_data_dir / "reviews.json").write_text('{"business": {"half', "utf-8")
    cache = cache_in(tmp_path / "state")
    with pytest.raises(DataError):
        cache.load(*read_data_dir(small_data_dir), Precomputed)
    assert cache.wait_saved(timeout=60)
    assert not cache.path.exists()


def test_an_unwritable_state_dir_costs_only_a_warning(tmp_path: Path, small_data_dir: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the state directory should be", "utf-8")
    cache = cache_in(blocker)
    with caplog.at_level(logging.WARNING, "reviewsd.build_cache"):
        loaded = cache.load(*read_data_dir(small_data_dir), Precomputed)
        assert cache.wait_saved(timeout=60)
    assert len(loaded.reviews) == 4
    assert [r.event for r in caplog.records if str(cache.path) in r.getMessage()] == [
        "build_cache_ignored", "build_cache_unwritten"]


def test_leftovers_of_a_killed_write_are_removed_but_not_a_write_in_progress(tmp_path: Path,
                                                                             small_data_dir: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    leftover = state_dir / f"{CACHE_FILE}.x1y2z3.tmp"
    leftover.write_bytes(b"half a cache")
    an_hour_ago = time.time() - 3600
    os.utime(leftover, (an_hour_ago, an_hour_ago))
    in_progress = state_dir / f"{CACHE_FILE}.a4b5c6.tmp"  # another server sharing the state directory
    in_progress.write_bytes(b"being written")
    built_and_cached(small_data_dir, cache_in(state_dir))
    assert sorted(p.name for p in state_dir.iterdir()) == sorted([CACHE_FILE, in_progress.name])


def test_parts_flatten_and_unflatten_are_inverse(tmp_path: Path) -> None:
    write_docs(tmp_path, *make_docs(SPECS))
    seen: list[Parts] = []
    dataset_from_files(*read_data_dir(tmp_path), on_parts=lambda parts, prepared: seen.append(parts))
    span, named = seen[0].flatten()
    assert all(isinstance(value, bytes) for value in named.values())
    assert Parts.unflatten(None if span is None else list(span), named) == seen[0]
    with pytest.raises(KeyError):
        Parts.unflatten(span, {k: v for k, v in named.items() if k != "aspects.positions"})


def test_a_restarted_server_serves_from_the_cache(live_server_factory, tmp_path: Path) -> None:
    """Over HTTP: a clean stop finishes the write; the next start uses it and answers the same."""
    data_dir = generated_dir(tmp_path, reviews=200)
    args = ("--data-dir", str(data_dir), "--state-dir", str(tmp_path / "state"), "--no-hub",
            "--base-url", "https://reviews.example.com")  # the same absolute URLs on both ports
    first: LiveServer = live_server_factory(*args)
    before = fetch_all(first)
    assert first.stop() == 0
    assert any(entry.get("event") == "build_cache_written" for entry in first.log)
    second: LiveServer = live_server_factory(*args)
    assert any(entry.get("event") == "build_cache_used" for entry in second.log)
    assert fetch_all(second) == before


def fetch_all(server: LiveServer) -> list[tuple[int, str | None, bytes]]:
    import http.client

    answers = []
    for path in [*reviewsd.TOPIC_PATHS, "/insights.json", *SEARCHES]:
        for coding in ("identity", "gzip"):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            conn.request("GET", path, headers={"Accept-Encoding": coding})
            response = conn.getresponse()
            answers.append((response.status, response.getheader("ETag"), response.read()))
            conn.close()
    return answers


def test_builds_arriving_during_a_slow_write_wait_in_one_slot_and_only_the_newest_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each build holds a whole build's bytes: on a stuck state disk, one per reload would pile up.
    cache = cache_in(tmp_path / "state")
    written: list[str] = []
    first_write_started, disk_free = threading.Event(), threading.Event()

    def slow_write(key: str, parts: object, precomputed: object) -> None:
        first_write_started.set()
        assert disk_free.wait(30)
        written.append(key)

    monkeypatch.setattr(cache, "write", slow_write)
    cache._save_later("build-1", None, {})
    assert first_write_started.wait(30)
    for n in range(2, 7):  # five more reloads while the first write hangs
        cache._save_later(f"build-{n}", None, {})
    assert [t.name for t in threading.enumerate()].count("build-cache-save") == 1
    assert not cache.wait_saved(timeout=0)
    disk_free.set()
    assert cache.wait_saved(timeout=30)
    assert written == ["build-1", "build-6"]
