"""End to end with the official MCP Python SDK against a real server on 127.0.0.1.

The server is `python reviewsd.py` (conftest's `live_server_factory`).
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.slow  # the official MCP Python SDK against a live server

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60


@pytest.fixture
def base_url(mcp_data_dir: Path, tmp_path: Path, live_server_factory) -> str:
    server = live_server_factory(
        "--data-dir",
        str(mcp_data_dir),
        "--state-dir",
        str(tmp_path / "state"),
        "--reload-interval",
        "0",
        "--no-hub",
    )
    return server.base_url


def run(main: Any) -> Any:
    async def bounded() -> Any:
        with anyio.fail_after(TIMEOUT):
            return await main()

    return anyio.run(bounded)


def arguments_for(review_id: str) -> dict[str, dict]:
    return {
        "get_business": {},
        "search_reviews": {"rating": 5, "limit": 10},
        "get_review": {"id": review_id},
        "get_reviews_since": {"since": "2026-01-01", "limit": 2},
        "get_aspect_sentiment": {"aspect": "Pain relief", "sentiment": "positive"},
        "get_technician": {"name": "Dr. Maya Patel"},
        "get_service": {"service": "massage therapy"},
        "get_rating_trend": {"months": 1},
        "get_insights_summary": {},
        "search": {"query": "5-star reviews of Patel"},
        "fetch": {"id": review_id},
    }


def test_official_client_end_to_end(base_url):
    seen: list[tuple[str, int, str | None]] = []

    async def record(response: Any) -> None:
        seen.append(
            (response.request.method, response.status_code, response.request.headers.get("mcp-session-id"))
        )

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with httpx2.AsyncClient(event_hooks={"response": [record]}, timeout=30) as http:
            async with streamable_http_client(base_url + "/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()  # the SDK offers 2025-11-25 first
                    out["version"], out["server"] = init.protocol_version, init.server_info
                    out["capabilities"] = init.capabilities
                    await session.send_ping()
                    listed = await session.list_tools()
                    out["tools"] = {tool.name: tool for tool in listed.tools}
                    found = await session.call_tool("search_reviews", {"limit": 1})
                    review_id = found.structured_content["reviews"][0]["id"]
                    out["calls"] = {
                        name: await session.call_tool(name, args)
                        for name, args in arguments_for(review_id).items()
                    }
                    out["bad_arguments"] = await session.call_tool("get_technician", {"name": "Nobody"})
                    with pytest.raises(MCPError) as unknown_tool:
                        await session.call_tool("drop_tables", {})
                    out["unknown_tool"] = unknown_tool.value
                    resources = await session.list_resources()
                    out["resources"] = resources.resources
                    out["reviews_json"] = await session.read_resource(resources.resources[0].uri)
                    templates = await session.list_resource_templates()
                    review_uri = templates.resource_templates[0].uri_template.replace("{id}", review_id)
                    out["review_resource"] = await session.read_resource(review_uri)
                    with pytest.raises(MCPError) as missing:
                        await session.read_resource(review_uri + "X")
                    out["missing_resource"] = missing.value
                    out["review_id"] = review_id
        return out

    out = run(main)
    assert out["version"] == "2025-11-25"  # the version the SDK offered (issue 23: was always 2025-06-18)
    assert out["server"].name == "reviewsd" and out["server"].version == "1.0.0"
    assert out["capabilities"].tools is not None and out["capabilities"].resources is not None
    assert out["capabilities"].prompts is not None and out["capabilities"].completions is not None
    assert out["capabilities"].logging is None

    tools = out["tools"]
    assert sorted(tools) == sorted(arguments_for("x"))
    for tool in tools.values():
        assert tool.input_schema["type"] == "object" and tool.output_schema["type"] == "object"
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False

    # call_tool has already validated structuredContent against each outputSchema.
    for name, result in out["calls"].items():
        assert result.is_error is False, (name, result)
        assert result.structured_content is not None and result.content[0].type == "text"
    assert out["calls"]["get_technician"].structured_content["technician"]["id"] == "dr-maya-patel"
    assert out["calls"]["get_review"].structured_content["review"]["id"] == out["review_id"]

    assert out["bad_arguments"].is_error is True and "Dr. Maya Patel" in out["bad_arguments"].content[0].text
    assert out["unknown_tool"].code == -32602
    assert out["missing_resource"].code == -32002

    with urllib.request.urlopen(base_url + "/reviews.json", timeout=10) as response:
        assert out["reviews_json"].contents[0].text.encode() == response.read()
    assert out["review_resource"].contents[0].text.startswith('{"id":"' + out["review_id"])

    # Every request after initialize carried the session id, and closing the client ended the session.
    session_ids = {sid for _, _, sid in seen if sid}
    assert len(session_ids) == 1
    assert ("DELETE", 204, session_ids.pop()) in seen
    assert all(status == 405 for method, status, _ in seen if method == "GET")  # no server stream


def test_closed_session_is_gone(base_url):
    captured: dict[str, str] = {}

    async def reuse(http: Any) -> str:
        response = await http.post(
            base_url + "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={
                "Mcp-Session-Id": captured.get("id", "none"),
                "Accept": "application/json, text/event-stream",
            },
        )
        return str(response.status_code)

    async def capture(response: Any) -> None:
        if "mcp-session-id" in response.headers:
            captured["id"] = response.headers["mcp-session-id"]

    async def main() -> str:
        async with httpx2.AsyncClient(event_hooks={"response": [capture]}, timeout=30) as http:
            async with streamable_http_client(base_url + "/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    assert "id" in captured
            return await reuse(http)

    assert run(main) == "404"


@pytest.mark.parametrize("mode, version", [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_high_level_client_in_each_mode(base_url, mode, version):
    """`mcp.Client` by default probes server/discover and stays on 2026-07-28 (one POST per call, no
    session); in legacy mode it initializes a 2025-11-25 session. Every tool, prompt and completion works."""
    seen: list[tuple[str, str | None, str | None]] = []

    async def record(response: Any) -> None:
        request = response.request
        seen.append(
            (request.method, request.headers.get("mcp-session-id"), request.headers.get("mcp-method"))
        )

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with httpx2.AsyncClient(event_hooks={"response": [record]}, timeout=30) as http:
            async with mcp.Client(
                streamable_http_client(base_url + "/mcp", http_client=http), mode=mode
            ) as client:
                out["version"] = client.protocol_version
                out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
                found = await client.call_tool("search_reviews", {"limit": 1})
                review_id = out["review_id"] = found.structured_content["reviews"][0]["id"]
                out["calls"] = {
                    name: await client.call_tool(name, args)
                    for name, args in arguments_for(review_id).items()
                }
                out["prompts"] = (await client.list_prompts()).prompts
                out["reply"] = await client.get_prompt("reply_draft", {"review_id": review_id.lower()})
                out["digest"] = await client.get_prompt("review_digest", {"since": "2025-01-01"})
                with pytest.raises(MCPError) as unknown:
                    await client.get_prompt("nope", {})
                out["unknown_prompt"] = unknown.value
                prompt = types.PromptReference(type="ref/prompt", name="service_review")
                out["services"] = await client.complete(prompt, {"name": "service", "value": "MAS"})
                templates = (await client.list_resource_templates()).resource_templates
                template = types.ResourceTemplateReference(type="ref/resource", uri=templates[0].uri_template)
                out["ids"] = await client.complete(template, {"name": "id", "value": review_id[:3].lower()})
        return out

    out = run(main)
    assert out["version"] == version
    assert sorted(out["tools"]) == sorted(arguments_for("x"))
    for name, result in out["calls"].items():  # structuredContent validated by the SDK against outputSchema
        assert result.is_error is False and result.structured_content is not None, (name, result)
    assert out["calls"]["get_business"].structured_content["business"]["id"] == "test-clinic"
    assert {p.name for p in out["prompts"]} >= {"review_digest", "reply_draft", "practitioner_review"}
    embedded = out["reply"].messages[0].content
    assert embedded.type == "resource" and embedded.resource.uri.endswith("/api/reviews/" + out["review_id"])
    assert out["digest"].messages[1].content.resource.text.startswith('{"matched":')
    assert out["unknown_prompt"].code == -32602
    assert out["services"].completion.values == ["Massage therapy"]
    assert out["review_id"] in out["ids"].completion.values
    sessions = {sid for _, sid, _ in seen if sid}
    if mode == "auto":  # stateless: no session id ever, and every POST names its method
        assert not sessions and all(method == "POST" and mcp_method for method, _, mcp_method in seen)
    else:
        assert len(sessions) == 1


def test_search_fetch_and_paging_with_the_official_client(base_url):
    """ChatGPT's search and fetch (each url answers 200), and search_reviews paged to the end in every sort:
    every review once, in the sort's order."""

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {"pages": {}}
        async with mcp.Client(streamable_http_client(base_url + "/mcp")) as client:
            found = (await client.call_tool("search", {"query": "google reviews"})).structured_content
            out["found"] = found["results"]
            out["fetched"] = [
                (await client.call_tool("fetch", {"id": r["id"]})).structured_content
                for r in found["results"]
            ]
            for sort in ("newest", "oldest", "highest", "lowest"):
                arguments, seen = {"sort": sort, "limit": 7}, []
                while True:
                    page = (await client.call_tool("search_reviews", arguments)).structured_content
                    seen += page["reviews"]
                    if page["next_cursor"] is None:
                        break
                    arguments["cursor"] = page["next_cursor"]
                out["pages"][sort] = seen
        return out

    out = run(main)
    with urllib.request.urlopen(base_url + "/reviews.json", timeout=10) as response:
        reviews = json.loads(response.read())["reviews"]
    newest = sorted(reviews, key=lambda r: (r["date"], r["id"]), reverse=True)
    expected = {
        "newest": newest,
        "oldest": newest[::-1],
        "highest": sorted(newest, key=lambda r: -r["rating"]),
        "lowest": sorted(newest, key=lambda r: r["rating"]),
    }
    for sort, seen in out["pages"].items():
        assert [r["id"] for r in seen] == [r["id"] for r in expected[sort]], sort
    assert out["found"] and len(out["fetched"]) == len(out["found"])
    for result, fetched in zip(out["found"], out["fetched"]):
        assert fetched["id"] == result["id"] and fetched["url"] == result["url"]
        assert fetched["metadata"]["source"] == "google"
        with urllib.request.urlopen(result["url"], timeout=10) as response:  # the review's page answers 200
            assert response.status == 200 and response.headers["Content-Type"].startswith("text/html")
