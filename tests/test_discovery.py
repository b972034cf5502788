"""Discovery and browsers, over real HTTP: the MCP server card (SEP-2127) at both its paths, the AI Catalog
that lists it, serverInfo, and the CORS preflight a browser-based MCP client sends before each request."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import LiveServer
from jsonschema import Draft202012Validator
from support.mcp import initialize_body

from reviewsd_app.mcpserver.protocol import SUPPORTED_VERSIONS
from reviewsd_app.reviews.dataset import SCHEMAS

ROOT = Path(__file__).resolve().parent.parent
CARD_PATHS = ("/mcp/server-card", "/.well-known/mcp/server-card")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for the module: the tests only read (the bundled sample, no hub, no reloads)."""
    server = LiveServer(
        [
            "--data-dir",
            str(ROOT / "data"),
            "--state-dir",
            str(tmp_path_factory.mktemp("state")),
            "--reload-interval",
            "0",
            "--no-hub",
        ]
    )
    yield server
    server.stop()


def request(live, method: str, path: str, headers: dict[str, str] | None = None, body: Any = None):
    """One request on its own connection: (status, headers with lower-case names, body)."""
    host, port = live.base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        data = None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=data, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_the_server_card_describes_the_server_at_both_paths(live):
    answers = [request(live, "GET", path) for path in CARD_PATHS]
    (status, headers, body), (_, _, other) = answers
    assert status == 200 and body == other
    assert headers["content-type"] == "application/mcp-server-card+json"
    assert headers["access-control-allow-origin"] == "*" and headers["cache-control"] == "public, max-age=60"
    card = json.loads(body)
    errors = list(
        Draft202012Validator(
            SCHEMAS["server-card.schema.json"], format_checker=Draft202012Validator.FORMAT_CHECKER
        ).iter_errors(card)
    )
    assert not errors, [e.message for e in errors]
    assert card["name"] == "localhost/riverbend-spine-wellness"  # served on 127.0.0.1
    assert card["title"] == "Riverbend Spine & Wellness: reviews and insights (read-only)"
    # The MCP Registry's server.json allows 100 characters of description.
    assert "Riverbend Spine & Wellness" in card["description"] and len(card["description"]) <= 100
    assert card["remotes"] == [
        {
            "type": "streamable-http",
            "url": live.base_url + "/mcp",
            "supportedProtocolVersions": list(SUPPORTED_VERSIONS),
        }
    ]
    assert {tool["name"] for tool in card["tools"]} >= {"search", "fetch", "search_reviews"}
    assert "clinic" not in json.dumps(card["tools"]).lower()
    # Conditional GET: the card has a strong ETag and a 304
    status, again, empty = request(live, "GET", CARD_PATHS[1], {"If-None-Match": headers["etag"]})
    assert status == 304 and empty == b"" and again["etag"] == headers["etag"]


def test_the_ai_catalog_lists_the_server_card(live):
    status, headers, body = request(live, "GET", "/.well-known/ai-catalog.json")
    assert status == 200 and headers["access-control-allow-origin"] == "*" and headers["etag"]
    catalog = json.loads(body)
    [entry] = catalog["entries"]
    assert entry["type"] == "application/mcp-server-card+json"
    assert entry["url"] == live.base_url + "/.well-known/mcp/server-card"
    assert catalog["host"]["displayName"] == "Riverbend Spine & Wellness"


def test_server_info_names_the_business_with_what_the_revision_allows(live):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    infos = {}
    for version in ("2025-11-25", "2025-06-18"):
        body = initialize_body(version)
        infos[version] = json.loads(request(live, "POST", "/mcp", headers, body)[2])["result"]["serverInfo"]
    assert infos["2025-11-25"]["websiteUrl"] == "https://riverbend-spine.example/"
    assert infos["2025-11-25"]["icons"][0]["src"].startswith("data:image/svg+xml;base64,")
    assert "Riverbend Spine & Wellness" in infos["2025-11-25"]["description"]
    assert set(infos["2025-06-18"]) == {"name", "title", "version"}  # no description, websiteUrl, icons then
    assert infos["2025-06-18"]["title"] == "Riverbend Spine & Wellness: reviews and insights (read-only)"


MCP_REQUEST_HEADERS = [
    "content-type",
    "accept",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "last-event-id",
]


@pytest.mark.parametrize("path", ["/mcp", *CARD_PATHS])
def test_a_browser_preflight_allows_every_mcp_header(live, path):
    """What a browser sends before a cross-origin POST with the 2026-07-28 headers, and what it must see."""
    status, headers, _ = request(
        live,
        "OPTIONS",
        path,
        {
            "Origin": "http://localhost:5173",
            "Access-Control-Request-Method": "POST" if path == "/mcp" else "GET",
            "Access-Control-Request-Headers": ",".join(MCP_REQUEST_HEADERS),
        },
    )
    assert status == 204 and headers["access-control-allow-origin"] == "*"
    allowed = {name.strip().lower() for name in headers["access-control-allow-headers"].split(",")}
    assert set(MCP_REQUEST_HEADERS) <= allowed
    assert ("POST" if path == "/mcp" else "GET") in headers["access-control-allow-methods"]


def test_a_browser_can_read_the_session_id_of_a_cross_origin_initialize(live):
    """The actual response names Mcp-Session-Id in Access-Control-Expose-Headers, or a page cannot read it."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    headers = {
        "Origin": "http://localhost:5173",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    status, answer, _ = request(live, "POST", "/mcp", headers, body)
    assert status == 200 and answer["mcp-session-id"] and answer["access-control-allow-origin"] == "*"
    assert "mcp-session-id" in answer["access-control-expose-headers"].lower()


@pytest.mark.parametrize("length", [1, 30, 60, 95, 200])
def test_a_card_description_fits_the_registry_whatever_the_name(length: int) -> None:
    from reviewsd_app.mcpserver.card import card_description

    name = "N" * length
    description = card_description(name)
    assert len(description) <= 100 and description.startswith("Customer reviews of N")
