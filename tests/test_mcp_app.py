"""The MCP App (io.modelcontextprotocol/ui) end to end: a real server on the bundled data, the extension
negotiated over HTTP, and the app's document in headless Chromium inside a page that plays the host
(tests/app-host/host.mjs: the ui/initialize handshake, a pushed tool result, a forwarded tools/call),
checked with axe-core, with no request leaving the page; the screenshots go to the test's folder, or with
REVIEWSD_UPDATE_SCREENSHOTS=1 to docs/img/ (shown in docs/mcp.md).

The first run installs what it needs, as tests/test_mcp_ts_sdk.py does: Debian's chromium (apt-get) when
/usr/bin/chromium is missing, and puppeteer-core and axe-core pinned by tests/app-host/package-lock.json
(`npm ci`). When an install fails, the test fails and says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest
from support.node import node_script

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "docs" / "img"  # where REVIEWSD_UPDATE_SCREENSHOTS=1 writes the screenshots docs/mcp.md shows
HOST = ROOT / "tests" / "app-host"
CHROMIUM = Path("/usr/bin/chromium")
APP = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
OFFER = {"extensions": {APP: {"mimeTypes": [MIME]}}}
pytestmark = pytest.mark.slow  # live servers; headless Chromium (and its install on the first run)


def ensure_browser() -> list[str]:
    if not CHROMIUM.exists():
        install = subprocess.run(
            "apt-get update -q && apt-get install -y -q chromium",
            shell=True,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if install.returncode != 0 or not CHROMIUM.exists():
            pytest.fail(f"`apt-get install -y chromium` failed:\n{install.stderr[-2000:]}")
    return node_script(HOST, "puppeteer-core", "host.mjs")


class Session:
    """A 2025-11-25 session over plain HTTP."""

    def __init__(self, url: str, capabilities: dict):
        self.url, self.id, self.next = url, None, 1
        result = self.call(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "test", "version": "1"},
            },
        )
        self.capabilities = result["capabilities"]

    def call(self, method: str, params: dict) -> dict:
        body = json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}).encode()
        self.next += 1
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.id:
            headers["Mcp-Session-Id"] = self.id
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            self.id = self.id or response.headers.get("Mcp-Session-Id")
            return json.loads(response.read())["result"]


def test_the_app_is_offered_only_to_a_client_that_offers_the_extension(live_server_factory, tmp_path):
    server = live_server_factory(
        "--data-dir", str(ROOT / "data"), "--state-dir", str(tmp_path / "s"), "--no-hub"
    )
    plain, apps = Session(server.base_url + "/mcp", {}), Session(server.base_url + "/mcp", OFFER)
    assert "extensions" not in plain.capabilities
    assert apps.capabilities["extensions"] == {APP: {"mimeTypes": [MIME]}}
    plain_tools = {t["name"]: t for t in plain.call("tools/list", {})["tools"]}
    app_tools = {t["name"]: t for t in apps.call("tools/list", {})["tools"]}
    assert all("_meta" not in tool for tool in plain_tools.values())
    uri = app_tools["search_reviews"]["_meta"]["ui"]["resourceUri"]
    assert uri.startswith("ui://") and "_meta" not in app_tools["get_business"]
    assert {k: v for k, v in app_tools["search_reviews"].items() if k != "_meta"} == plain_tools[
        "search_reviews"
    ]
    assert uri in [r["uri"] for r in apps.call("resources/list", {})["resources"]]
    assert uri not in [r["uri"] for r in plain.call("resources/list", {})["resources"]]
    (content,) = apps.call("resources/read", {"uri": uri})["contents"]
    assert content["mimeType"] == MIME and content["text"].startswith("<!DOCTYPE html>")
    # The text result is the same, whoever asks: complete for hosts without apps.
    args = {"name": "search_reviews", "arguments": {"max_rating": 2, "limit": 5}}
    assert plain.call("tools/call", args) == apps.call("tools/call", args)


def a_day_with_one_front_desk_review() -> str:
    """The first day on which exactly one review of the bundled data mentions the front desk."""
    insights = json.loads((ROOT / "data" / "insights.json").read_text())
    dates = {
        r["id"]: r["date"][:10] for r in json.loads((ROOT / "data" / "reviews.json").read_text())["reviews"]
    }
    days: dict[str, int] = {}
    for review_id, record in insights["per_review"].items():
        if any(aspect["id"] == "front-desk" for aspect in record["aspects"]):
            days[dates[review_id]] = days.get(dates[review_id], 0) + 1
    return min(day for day, count in days.items() if count == 1)


def test_the_app_renders_a_result_and_searches_through_the_host(live_server_factory, tmp_path):
    command = ensure_browser()
    server = live_server_factory(
        "--data-dir", str(ROOT / "data"), "--state-dir", str(tmp_path / "s"), "--no-hub"
    )
    session = Session(server.base_url + "/mcp", OFFER)
    tools = {t["name"]: t for t in session.call("tools/list", {})["tools"]}
    uri = tools["get_aspect_sentiment"]["_meta"]["ui"]["resourceUri"]
    (content,) = session.call("resources/read", {"uri": uri})["contents"]
    pushed = session.call(
        "tools/call", {"name": "get_aspect_sentiment", "arguments": {"aspect": "front desk", "limit": 5}}
    )
    day = a_day_with_one_front_desk_review()
    one = session.call(
        "tools/call",
        {"name": "get_aspect_sentiment", "arguments": {"aspect": "front desk", "since": day, "until": day}},
    )
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps(
            {
                "chromium": str(CHROMIUM),
                "html": content["text"],
                "result": pushed,
                "mcp": server.base_url + "/mcp",
                "shots": str(SHOTS if os.environ.get("REVIEWSD_UPDATE_SCREENSHOTS") else tmp_path),
                "also": [one],
            }
        )
    )
    done = subprocess.run([*command, str(job)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)

    assert report["messages"][0] == "ui/initialize" and "ui/notifications/initialized" in report["messages"]
    assert report["shown"]["pushed"] == pushed["structuredContent"]["returned"] == 5
    (forwarded,) = report["forwarded"]
    assert forwarded == {"name": "search_reviews", "arguments": {"limit": 20, "max_rating": 2}}
    reviews = json.loads((ROOT / "data" / "reviews.json").read_text())["reviews"]
    low = sum(r["rating"] <= 2 for r in reviews)
    assert report["shown"]["filtered"] == min(20, low) and set(report["ratings"]) <= {1, 2}
    assert all(link.startswith(server.base_url + "/reviews/") for link in report["links"])
    assert report["axe"]["violations"] == []
    assert report["requests"] == [] and report["errors"] == [] and report["overflow"] is False
    # Counts of one read in the singular.
    (words,) = report["words"]
    assert words[0].startswith(f"1 mention from {day} to {day}, average rating ")
    assert words[1] == "1 review matches."
    assert words[2].startswith("Front desk: ") and " mentions (" in words[2]
    shots = SHOTS if os.environ.get("REVIEWSD_UPDATE_SCREENSHOTS") else tmp_path
    for width in (400, 800):
        assert (shots / f"mcp-app-{width}.png").stat().st_size > 10_000
