"""`reviewsd sync` against a local server that answers as Google's and Trustpilot's APIs do."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, LiveServer
from polling import wait_until
from support.cli import check
from support.platform_api import (
    ACCOUNT,
    BUSINESS_UNIT,
    CLIENT,
    LOCATION,
    REFRESH_TOKEN,
    TRUSTPILOT_KEY,
    PlatformApi,
    PlatformState,
    google_review,
    stamp,
    trustpilot_review,
)

from reviewsd_app.authoring.presets import render_preset
from reviewsd_app.authoring.profile import load_profile
from reviewsd_app.cli.commands import sync_main
from reviewsd_app.ingest.fetch import Http, retry_after
from reviewsd_app.ingest.sync import Endpoints, SyncError, sync_dir

SECRETS = (CLIENT["client_secret"], REFRESH_TOKEN, TRUSTPILOT_KEY, "SECRET")

GOOGLE_SOURCE = f"""
[[sources]]
type = "google"
account = "{ACCOUNT}"
location = "{LOCATION}"
credentials = "google-credentials.json"
"""
TRUSTPILOT_SOURCE = f"""
[[sources]]
type = "trustpilot"
business_unit = "{BUSINESS_UNIT}"
api_key_file = "trustpilot-key"
"""


@pytest.fixture
def api():
    server = PlatformApi(PlatformState(google=[google_review(n) for n in range(123)]))
    yield server
    server.stop()


def data_dir(tmp_path: Path, sources: str = GOOGLE_SOURCE) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "business.toml").write_text(render_preset("chiropractic") + sources, "utf-8")
    credentials = data / "google-credentials.json"
    credentials.write_text(json.dumps({**CLIENT, "refresh_token": REFRESH_TOKEN}), "utf-8")
    credentials.chmod(0o600)
    key = data / "trustpilot-key"
    key.write_text(TRUSTPILOT_KEY + "\n", "utf-8")
    key.chmod(0o600)
    return data


def reviews_in(data: Path) -> dict[str, dict]:
    return {r["id"]: r for r in json.loads((data / "reviews.json").read_text("utf-8"))["reviews"]}


def files(data: Path) -> dict[str, bytes]:
    return {
        name: (data / name).read_bytes()
        for name in ("reviews.json", "insights.json")
        if (data / name).exists()
    }


def run_sync(data: Path, api: PlatformApi, monkeypatch, *extra: str) -> int:
    for name, value in api.environ().items():
        monkeypatch.setenv(name, value)
    return sync_main(["--data-dir", str(data), *extra])


def test_sync_twice_brings_123_reviews_then_5_new_and_one_edit_in_one_page(
    tmp_path, api, monkeypatch, capsys
):
    data = data_dir(tmp_path)
    assert run_sync(data, api, monkeypatch) == 0
    out = capsys.readouterr().out
    assert f"google {ACCOUNT}/{LOCATION}: 123 reviews read in 3 page(s)" in out
    assert "reviews.json: 123 new, 0 updated, 0 unchanged, 0 skipped" in out
    assert "insights.json: 123 reviews analysed" in out
    assert (
        len(reviews_in(data)) == 123 and api.state.requests("/v4/") == 3 and api.state.requests("/token") == 1
    )
    assert json.loads((data / ".reviewsd-sync.json").read_text("utf-8")) == {
        f"google {ACCOUNT}/{LOCATION}": "2025-05-03T12:00:00.123456Z"
    }

    api.state.google += [google_review(n) for n in range(123, 128)]
    edited = api.state.google[7]
    edited.update(starRating="FIVE", comment="Edited: much better now.", updateTime=stamp(200))
    api.state.log.clear()
    assert run_sync(data, api, monkeypatch) == 0
    out = capsys.readouterr().out
    assert "reviews.json: 5 new, 1 updated, 44 unchanged, 0 skipped" in out
    assert api.state.requests("/v4/") == 1  # the first page reaches what the last sync had
    reviews = reviews_in(data)
    assert len(reviews) == 128
    from reviewsd_app.ingest.records import review_id

    review = reviews[review_id("google", "r7")]
    assert review["text"] == "Edited: much better now." and review["rating"] == 5
    assert review["updated_at"] == stamp(200)[:19] + "Z"
    checked = check(data)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.slow
def test_a_running_server_serves_what_sync_brings(tmp_path, api, monkeypatch):
    data = data_dir(tmp_path)
    api.state.google = api.state.google[:20]
    assert run_sync(data, api, monkeypatch) == 0
    server = LiveServer(["--data-dir", str(data), "--no-hub", "--reload-interval", "0.2"])
    try:

        def count() -> int:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            conn.request("GET", "/reviews.json")
            body = conn.getresponse().read()
            conn.close()
            return len(json.loads(body)["reviews"])

        assert count() == 20
        api.state.google += [google_review(n) for n in range(123, 128)]
        assert run_sync(data, api, monkeypatch) == 0
        assert wait_until(lambda: count() == 25, 10)
    finally:
        server.stop()


def test_an_expired_access_token_is_refreshed_once(tmp_path, api, monkeypatch):
    data = data_dir(tmp_path)
    api.state.token_lifetime = 2  # the first token serves two pages, then 401
    assert run_sync(data, api, monkeypatch) == 0
    assert len(reviews_in(data)) == 123 and api.state.requests("/token") == 2


def test_a_401_after_refreshing_fails_and_writes_nothing(tmp_path, api, monkeypatch, capsys):
    data = data_dir(tmp_path)
    api.state.google = api.state.google[:10]
    assert run_sync(data, api, monkeypatch) == 0
    before = files(data)
    api.state.token_lifetime = 0  # every token refused
    capsys.readouterr()
    assert run_sync(data, api, monkeypatch) == 1
    err = capsys.readouterr().err
    assert (
        f"reviewsd sync: google {ACCOUNT}/{LOCATION} answered 401 (UNAUTHENTICATED); nothing written" in err
    )
    assert files(data) == before and api.state.requests("/token") == 3


def test_a_revoked_refresh_token_says_to_renew_the_credentials(tmp_path, api, monkeypatch, capsys):
    data = data_dir(tmp_path)
    api.state.revoked = True
    assert run_sync(data, api, monkeypatch) == 1
    err = capsys.readouterr().err
    assert "Google refused the credentials (invalid_grant)" in err and "renew the credentials" in err
    assert not (data / "reviews.json").exists() and not (data / ".reviewsd-sync.json").exists()


def test_429_waits_its_retry_after_and_5xx_backs_off_within_a_bound(tmp_path, api):
    data = data_dir(tmp_path)
    profile = load_profile(data)
    endpoints = Endpoints.from_environ(api.environ())
    api.state.fail_next = [(429, {"Retry-After": "7"}), (503, {}), (500, {})]
    waits: list[float] = []
    http = Http(sleep=waits.append)
    result = sync_dir(data, profile, endpoints, http)
    assert result.merged.new == 123 and waits == [7.0, 1.0, 2.0]

    api.state.fail_next = [(503, {})] * 50
    before = files(data)
    waits.clear()
    with pytest.raises(SyncError, match=r"token endpoint: server error 503, still after 4 retries and 15 s"):
        sync_dir(data, profile, endpoints, Http(budget=20, sleep=waits.append))
    assert waits == [1.0, 2.0, 4.0, 8.0] and files(data) == before


def test_a_network_error_retries_then_names_the_source(tmp_path, api):
    data = data_dir(tmp_path)
    api.stop()  # nothing listens there now
    endpoints = Endpoints.from_environ(api.environ())
    waits: list[float] = []
    with pytest.raises(SyncError, match=r"token endpoint: network error .*still after 3 retries"):
        sync_dir(data, load_profile(data), endpoints, Http(budget=10, sleep=waits.append))
    assert waits == [1.0, 2.0, 4.0]


def test_retry_after_as_seconds_or_a_date():
    assert retry_after("120", 0) == 120 and retry_after(None, 0) is None and retry_after("soon", 0) is None
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470) == 10


def test_trustpilot_pages_by_number_and_stops_at_what_it_had(tmp_path, api, monkeypatch, capsys):
    data = data_dir(tmp_path, TRUSTPILOT_SOURCE)
    api.state.trustpilot = [trustpilot_review(n) for n in range(250)]
    assert run_sync(data, api, monkeypatch) == 0
    assert f"trustpilot {BUSINESS_UNIT}: 250 reviews read in 3 page(s)" in capsys.readouterr().out
    api.state.trustpilot += [trustpilot_review(n) for n in range(250, 252)]
    api.state.log.clear()
    assert run_sync(data, api, monkeypatch) == 0
    assert "2 new, 0 updated, 98 unchanged" in capsys.readouterr().out
    assert api.state.requests("/v1/") == 1 and len(reviews_in(data)) == 252


def test_both_sources_at_once(tmp_path, api, monkeypatch):
    data = data_dir(tmp_path, GOOGLE_SOURCE + TRUSTPILOT_SOURCE)
    api.state.trustpilot = [trustpilot_review(n) for n in range(10)]
    assert run_sync(data, api, monkeypatch) == 0
    assert len(reviews_in(data)) == 133


def test_a_bad_trustpilot_key_fails_naming_the_source(tmp_path, api, monkeypatch, capsys):
    data = data_dir(tmp_path, TRUSTPILOT_SOURCE)
    (data / "trustpilot-key").write_text("wrong-key", "utf-8")
    assert run_sync(data, api, monkeypatch) == 1
    assert f"reviewsd sync: trustpilot {BUSINESS_UNIT} answered 401" in capsys.readouterr().err


def test_credentials_readable_by_others_are_refused(tmp_path, api, monkeypatch, capsys):
    data = data_dir(tmp_path)
    (data / "google-credentials.json").chmod(0o644)
    assert run_sync(data, api, monkeypatch) == 1
    err = capsys.readouterr().err
    assert "may be read by group or others (mode 0644); run `chmod 600" in err
    assert api.state.log == []


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("REVIEWSD_GOOGLE_API_URL", "http://example.com", "plain http only to a loopback address"),
        ("REVIEWSD_GOOGLE_TOKEN_URL", "ftp://127.0.0.1/token", "is not an http(s) URL"),
        ("REVIEWSD_TRUSTPILOT_API_URL", "https://user:pw@api.example", "no query, fragment or user name"),
    ],
)
def test_endpoint_overrides_are_checked(tmp_path, api, monkeypatch, capsys, variable, value, message):
    data = data_dir(tmp_path)
    for name, url in api.environ().items():
        monkeypatch.setenv(name, url)
    monkeypatch.setenv(variable, value)
    assert sync_main(["--data-dir", str(data)]) == 1
    assert message in capsys.readouterr().err


def test_sync_needs_a_data_dir_and_sources(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("REVIEWSD_DATA_DIR", raising=False)
    assert sync_main([]) == 1
    assert "--data-dir DIR" in capsys.readouterr().err
    data = tmp_path / "d"
    data.mkdir()
    (data / "business.toml").write_text(render_preset("chiropractic"), "utf-8")
    assert sync_main(["--data-dir", str(data)]) == 1
    assert "lists no [[sources]]" in capsys.readouterr().err


@pytest.mark.slow
def test_secrets_never_reach_output_or_data_files(tmp_path, api):
    data = data_dir(tmp_path, GOOGLE_SOURCE + TRUSTPILOT_SOURCE)
    api.state.trustpilot = [trustpilot_review(n) for n in range(3)]
    env = {**os.environ, **api.environ(), "REVIEWSD_DATA_DIR": str(data)}
    command = [sys.executable, str(ROOT / "reviewsd.py"), "sync", "--data-dir", str(data)]
    outputs = [subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)]
    assert outputs[0].returncode == 0, outputs[0].stderr
    api.state.token_lifetime = 0
    outputs.append(subprocess.run(command + ["--full"], capture_output=True, text=True, timeout=120, env=env))
    api.state.revoked = True
    outputs.append(subprocess.run(command, capture_output=True, text=True, timeout=120, env=env))
    assert [done.returncode for done in outputs] == [0, 1, 1]
    written = b"".join(
        path.read_bytes()
        for path in data.iterdir()
        if path.name.endswith(".json") and "cred" not in path.name
    )
    for secret in SECRETS:
        assert all(secret not in done.stdout + done.stderr for done in outputs), secret
        assert secret.encode() not in written, secret


class ScriptedHttp:
    """Http's interface answering from a script: what a broken or hostile API might send."""

    def __init__(self, answers):
        self.answers = list(answers)

    def json(self, method, url, headers, body=None, what="the API"):
        return self.answers.pop(0) if self.answers else {"reviews": []}


def _answers():
    from hypothesis import strategies as st
    from support.malformed import GOOGLE_REVIEWS, JSON_VALUES

    page = st.fixed_dictionaries(
        {"reviews": st.lists(GOOGLE_REVIEWS, min_size=1, max_size=3)},
        optional={"nextPageToken": st.sampled_from(["50", ""]) | JSON_VALUES},
    )
    odd_page = st.fixed_dictionaries({}, optional={"reviews": JSON_VALUES}) | JSON_VALUES
    token = st.just({"access_token": "t"}) | st.fixed_dictionaries({}, optional={"access_token": JSON_VALUES})
    token = st.sampled_from([0, 0, 0, 1]).flatmap(
        lambda odd: token if odd else st.just({"access_token": "t"})
    )
    return st.tuples(token, st.lists(page | page | odd_page, max_size=3))


@pytest.mark.slow
def test_any_answer_is_merged_or_a_one_line_refusal_naming_the_source(tmp_path_factory):
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(script=_answers())
    def run(script):
        data = data_dir(tmp_path_factory.mktemp("hostile"))
        token, pages = script
        try:
            sync_dir(data, load_profile(data), Endpoints(), ScriptedHttp([token, *pages]))
        except SyncError as error:
            message = str(error)
            assert message.startswith(f"google {ACCOUNT}/{LOCATION}") and "\n" not in message, message

    run()


def test_an_answer_over_the_cap_is_refused_naming_the_source(tmp_path, api, monkeypatch):
    from reviewsd_app.ingest import fetch

    monkeypatch.setattr(fetch, "MAX_RESPONSE_BYTES", 2000)
    data = data_dir(tmp_path)
    with pytest.raises(SyncError, match=rf"^google {ACCOUNT}/{LOCATION}: an answer over 2,000 bytes$"):
        sync_dir(data, load_profile(data), Endpoints.from_environ(api.environ()), Http())
    assert not (data / "reviews.json").exists()
