"""`check` sees business.toml and stale insights; a server starts on reviews without insights.json."""

from __future__ import annotations

import http.client
import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, LiveServer
from polling import wait_until
from support.cli import check
from support.starter import business_filled_in, staff_named

from reviewsd_app.authoring.presets import render_preset
from reviewsd_app.cli.commands import analyze_main, import_main

FIXTURES = ROOT / "tests" / "fixtures" / "import"


def imported(tmp_path: Path, *files: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    filled = staff_named(business_filled_in(render_preset("chiropractic")), "Ana Reyes")  # as an owner would
    (data / "business.toml").write_text(filled, "utf-8")
    assert import_main(["--data-dir", str(data), *map(str, files or [FIXTURES / "google-api.json"])]) == 0
    return data


def test_check_refuses_a_business_toml_import_would_refuse(tmp_path):
    data = imported(tmp_path)
    assert analyze_main(["--data-dir", str(data)]) == 0
    assert check(data).returncode == 0
    (data / "business.toml").write_text('time_zone = "Mars/Olympus"\n', "utf-8")
    done = check(data)
    assert done.returncode == 1
    assert "business.toml: time_zone: profile: 'Mars/Olympus' is not an IANA time zone name" in done.stdout
    assert import_main(["--data-dir", str(data)]) == 1


def test_check_names_insights_made_from_fewer_reviews_and_the_command(tmp_path):
    data = imported(tmp_path)
    assert analyze_main(["--data-dir", str(data)]) == 0
    assert import_main(["--data-dir", str(data), str(FIXTURES / "trustpilot.json")]) == 0
    done = check(data)
    assert done.returncode == 1
    assert (
        "insights.json: $.per_review: stale: made from 3 reviews; reviews.json has 5 (2 not analysed); "
        f"run `reviewsd analyze --data-dir {data}`"
    ) in done.stdout
    assert analyze_main(["--data-dir", str(data)]) == 0
    assert check(data).returncode == 0


def test_check_names_insights_older_than_an_edit(tmp_path):
    data = imported(tmp_path)
    assert analyze_main(["--data-dir", str(data)]) == 0
    doc = json.loads((FIXTURES / "google-api.json").read_text("utf-8"))
    doc["reviews"][0].update(starRating="ONE", updateTime="2026-04-01T00:00:00Z")
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc), "utf-8")
    insights = json.loads((data / "insights.json").read_text("utf-8"))
    insights["generated_at"] = "2026-01-01T00:00:00Z"  # analysed before the import below writes
    (data / "insights.json").write_text(json.dumps(insights), "utf-8")
    assert import_main(["--data-dir", str(data), str(edited)]) == 0
    done = check(data)
    assert (
        done.returncode == 1
        and "insights.json: $.generated_at: stale: 2026-01-01T00:00:00Z is older" in done.stdout
    )


def test_check_says_what_the_server_does_without_insights(tmp_path):
    data = imported(tmp_path)
    done = check(data)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "insights.json: $: missing: not found: the server serves insights derived from reviews.json alone "
        f"(counts, ratings, trend); run `reviewsd analyze --data-dir {data}`"
    ]


def get_json(server: LiveServer, path: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, json.loads(body)


@pytest.mark.slow
def test_a_server_starts_on_reviews_alone_and_says_to_run_analyze(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(ROOT / "data" / "reviews.json", data / "reviews.json")
    server = LiveServer(["--data-dir", str(data), "--no-hub", "--reload-interval", "0.2"])
    try:
        [warning] = [
            entry for entry in server.log if entry.get("event") == "insights_derived"
        ]  # before listening
        assert f"run `reviewsd analyze --data-dir {data}`" in warning["message"]
        status, reviews = get_json(server, "/reviews.json")
        assert status == 200 and len(reviews["reviews"]) == 320
        status, insights = get_json(server, "/insights.json")
        assert status == 200 and insights["review_count"] == 320 and insights["temporal"]["monthly"]
        assert "run `reviewsd analyze`" in insights["model"]
        shutil.copy(ROOT / "data" / "insights.json", data / "insights.json")
        assert wait_until(lambda: "derived" not in get_json(server, "/insights.json")[1]["model"], 10)
    finally:
        server.stop()


def test_check_says_what_analyze_would_refuse_in_a_profile_that_loads(tmp_path):
    data = imported(tmp_path)
    assert analyze_main(["--data-dir", str(data)]) == 0
    toml = (data / "business.toml").read_text("utf-8")
    toml += '\n[[services]]\nid = "dry-needling"\nlabel = "Dry needling"\n'
    toml += '\n[[corrections]]\nreview_id = "01KJ0000000000000000000003"\ngroup = "aspects"\nid = "parking"\n'
    (data / "business.toml").write_text(toml, "utf-8")
    done = check(data)
    assert done.returncode == 1
    assert (
        "business.toml: corrections[0]: profile: 'parking' is not one of the profile's aspects" in done.stdout
    )
    assert "business.toml: services: profile: reviews.json's business lacks dry-needling" in done.stdout
    assert analyze_main(["--data-dir", str(data)]) == 1
