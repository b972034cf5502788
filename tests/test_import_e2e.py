"""End to end: init, import, analyze, then a real server whose search and MCP tools answer from that data."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from support.starter import staff_named

from reviewsd_app.cli.commands import analyze_main, import_main, init_main

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "import"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def call_tool(base_url: str, name: str, arguments: dict) -> dict:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }
    request = urllib.request.Request(
        base_url + "/mcp",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["result"]


def test_from_exports_to_a_serving_server(tmp_path, live_server_factory):
    data = tmp_path / "data"
    assert init_main(["--preset", "chiropractic", "--data-dir", str(data)]) == 0
    starter = (data / "business.toml").read_text("utf-8")  # the owner names their staff, as init asks
    (data / "business.toml").write_text(staff_named(starter, "Maya Patel"), "utf-8")
    exports = [
        FIXTURES / "google-api.json",
        FIXTURES / "takeout",
        FIXTURES / "trustpilot.json",
        FIXTURES / "reviews.csv",
    ]
    assert import_main(["--data-dir", str(data), *map(str, exports)]) == 0
    assert analyze_main(["--data-dir", str(data)]) == 0
    server = live_server_factory("--data-dir", str(data), "--state-dir", str(tmp_path / "state"))

    found = get_json(server.url("/api/reviews/search?mentions_technician=Patel"))
    # the CSV's "Dr. Patel really listened" and Google's original Spanish "La Dra. Patel fue maravillosa"
    assert sorted(review["author"] for review in found["reviews"]) == ["Maria O.", "Sam O."]

    insights = get_json(server.url("/insights.json"))
    assert insights["review_count"] == 9 and insights["model"].startswith("reviewsd-model")

    result = call_tool(server.base_url, "get_technician", {"name": "Patel"})
    assert result["isError"] is False
    assert result["structuredContent"]["technician"]["id"] == "dr-maya-patel"
    assert result["structuredContent"]["matched"] == 2
