"""MCP 2026-07-28 (stateless) on the wire, beside the 2025 sessions: a real server on 127.0.0.1.

One `python reviewsd.py` for the module (every request here is read-only); raw HTTP through
http.client so that every header and status is the one the server wrote.
"""

from __future__ import annotations

import base64
import http.client
import json
from typing import Any, Iterator

import pytest
from conftest import LiveServer
from support.factories import write_docs
from support.mcp import TOOL_NAMES, rich_docs

MODERN = "2026-07-28"
SUPPORTED = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("mcp-modern")
    write_docs(root / "data", *rich_docs())
    live = LiveServer(
        [
            "--data-dir",
            str(root / "data"),
            "--state-dir",
            str(root / "state"),
            "--reload-interval",
            "0",
            "--no-hub",
        ]
    )
    yield live
    live.stop()


class Answer:
    def __init__(self, response: http.client.HTTPResponse):
        self.status, self.headers, self.body = response.status, response.headers, response.read()

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def send(server: LiveServer, message: Any, headers: dict[str, str | None] | None = None) -> Answer:
    """POST one message; headers default to what a 2026-07-28 client sends for it (None removes one)."""
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if isinstance(message, dict) and "method" in message:
        base.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": message["method"]})
        source = NAMED.get(message["method"])
        if source and isinstance(message.get("params", {}).get(source), str):
            base["Mcp-Name"] = message["params"][source]
    merged = {k: v for k, v in {**base, **(headers or {})}.items() if v is not None}
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request("POST", "/mcp", body=json.dumps(message).encode(), headers=merged)
        return Answer(connection.getresponse())
    finally:
        connection.close()


def request(method: str, params: dict | None = None, meta: dict | None = None, request_id: Any = 1) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": META if meta is None else meta},
    }


def result_of(answer: Answer) -> dict:
    assert answer.status == 200, answer.body
    document = answer.json
    assert "error" not in document, document
    result = document["result"]
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "reviewsd"
    assert "Mcp-Session-Id" not in answer.headers  # stateless: no session is minted
    return result


def error_of(answer: Answer, status: int, code: int, request_id: Any = 1) -> dict:
    assert answer.status == status, answer.body
    document = answer.json
    assert set(document) == {"jsonrpc", "id", "error"} and document["id"] == request_id, document
    assert document["error"]["code"] == code, document
    return document["error"]


def legacy_session(server: LiveServer, version: str = "2025-11-25") -> dict[str, str]:
    """Headers of a fresh 2025 session (initialize, then notifications/initialized)."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    answer = send(server, init, {"MCP-Protocol-Version": None, "Mcp-Method": None})
    assert answer.status == 200 and answer.json["result"]["protocolVersion"] == version
    headers = {
        "Mcp-Session-Id": answer.headers["Mcp-Session-Id"],
        "MCP-Protocol-Version": version,
        "Mcp-Method": None,
        "Mcp-Name": None,
    }
    assert send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status == 202
    return headers


# --------------------------------------------------------------------------- discover and results


def test_server_discover(server):
    result = result_of(send(server, request("server/discover")))
    assert result["supportedVersions"] == SUPPORTED
    assert set(result["capabilities"]) == {"tools", "resources", "prompts", "completions"}
    assert "subscribe" not in result["capabilities"]["resources"]  # 2026-07-28 removed resources/subscribe
    assert "Test Clinic & Spine" in result["instructions"]
    assert result["ttlMs"] == 0 and result["cacheScope"] == "public"  # the instructions name the business


@pytest.mark.parametrize(
    "method, params, ttl",
    [
        ("tools/list", {}, 3_600_000),  # a data reload cannot change these three lists
        ("prompts/list", {}, 3_600_000),
        ("resources/templates/list", {}, 3_600_000),
        ("resources/list", {}, 0),  # sizes change with the data, and a reload can come at any moment
        ("resources/read", {"uri": "/reviews.json"}, 0),
    ],
)
def test_cacheable_results_carry_hints(server, method, params, ttl):
    if "uri" in params:
        params = {"uri": server.base_url + params["uri"]}
    result = result_of(send(server, request(method, params)))
    assert result["ttlMs"] == ttl and result["cacheScope"] == "public"


def test_every_tool_answers_as_in_a_session(server):
    """structuredContent and the text block are the 2025 ones; the 2026 result adds only its own fields."""
    session = legacy_session(server)
    found = result_of(
        send(server, request("tools/call", {"name": "search_reviews", "arguments": {"limit": 1}}))
    )
    review_id = found["structuredContent"]["reviews"][0]["id"]
    arguments = {
        "get_review": {"id": review_id},
        "get_reviews_since": {"since": "2026-01-01"},
        "get_aspect_sentiment": {"aspect": "wait time"},
        "get_technician": {"name": "Patel"},
        "get_service": {"service": "massage therapy"},
        "search_reviews": {"rating": 5},
        "search": {"query": "5 stars"},
        "fetch": {"id": review_id},
    }
    for name in TOOL_NAMES:
        params = {"name": name, "arguments": arguments.get(name, {})}
        modern = result_of(send(server, request("tools/call", params)))
        legacy = send(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, session)
        assert legacy.status == 200 and "resultType" not in legacy.json["result"]
        assert {k: v for k, v in modern.items() if k not in ("resultType", "_meta")} == legacy.json[
            "result"
        ], name
        assert modern["isError"] is False and "ttlMs" not in modern


def test_a_session_id_is_ignored(server):
    result = result_of(send(server, request("tools/list"), {"Mcp-Session-Id": "no-such-session"}))
    assert [tool["name"] for tool in result["tools"]]


def test_notifications_are_accepted(server):
    answer = send(
        server,
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "_meta": META}},
    )
    assert answer.status == 202 and answer.body == b""


# --------------------------------------------------------------------------- the request rules


@pytest.mark.parametrize(
    "meta",
    [
        None,  # no _meta at all (the header says 2026-07-28)
        {"io.modelcontextprotocol/clientCapabilities": {}},  # no protocolVersion
        {"io.modelcontextprotocol/protocolVersion": MODERN},  # no clientCapabilities
        {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": []},
    ],
)
def test_missing_required_meta_is_400_invalid_params(server, meta):
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {} if meta is None else {"_meta": meta},
    }
    error_of(send(server, message), 400, -32602)


@pytest.mark.parametrize(
    "headers",
    [
        {"MCP-Protocol-Version": None},
        {"MCP-Protocol-Version": "2025-11-25"},
        {"Mcp-Method": None},
        {"Mcp-Method": "tools/call"},
        {"Mcp-Method": "TOOLS/LIST"},  # header values are case-sensitive
    ],
)
def test_headers_must_match_the_body(server, headers):
    error = error_of(send(server, request("tools/list"), headers), 400, -32020)
    assert error["message"].startswith("Header mismatch")


@pytest.mark.parametrize(
    "method, params",
    [
        ("tools/call", {"name": "get_business", "arguments": {}}),
        ("prompts/get", {"name": "review_digest"}),
        ("resources/read", {"uri": "https://reviews.example/reviews.json"}),
    ],
)
@pytest.mark.parametrize("header", [None, "get_insights_summary", "=?base64?not base64?=", "caf\u00e9"])
def test_mcp_name_must_match(server, method, params, header):
    answer = send(
        server,
        request(method, params),
        {"Mcp-Name": header.encode("utf-8").decode("latin-1") if header else None},
    )
    error_of(answer, 400, -32020)


def test_mcp_name_in_base64_is_decoded(server):
    template = result_of(send(server, request("resources/templates/list")))["resourceTemplates"][0][
        "uriTemplate"
    ]
    review_id = result_of(
        send(server, request("tools/call", {"name": "search_reviews", "arguments": {"limit": 1}}))
    )["structuredContent"]["reviews"][0]["id"]
    uri = template.replace("{id}", review_id)
    encoded = "=?base64?" + base64.b64encode(uri.encode()).decode() + "?="
    result = result_of(send(server, request("resources/read", {"uri": uri}), {"Mcp-Name": encoded}))
    assert json.loads(result["contents"][0]["text"])["id"] == review_id
    # A name outside the header-safe set can only travel encoded: here, one with a non-ASCII letter.
    name = "caf\u00e9"
    encoded = "=?base64?" + base64.b64encode(name.encode()).decode() + "?="
    error = error_of(send(server, request("tools/call", {"name": name}), {"Mcp-Name": encoded}), 200, -32602)
    assert "Unknown tool" in error["message"]  # got past the header check to the method itself


@pytest.mark.parametrize("version", ["2027-01-01", "1900-01-01", "2025-11-25", "2025-06-18"])
def test_unsupported_version_is_400_with_the_supported_list(server, version):
    meta = {**META, "io.modelcontextprotocol/protocolVersion": version}
    error = error_of(
        send(server, request("server/discover", meta=meta), {"MCP-Protocol-Version": version}), 400, -32022
    )
    assert error["data"] == {"supported": SUPPORTED, "requested": version}


@pytest.mark.parametrize(
    "method",
    [
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "initialize",
        "notifications/initialized",
        "rpc.discover",
        "tools/List",
    ],
)
def test_removed_and_unknown_methods_are_404(server, method):
    params = {"level": "info"} if method == "logging/setLevel" else {}
    if method == "initialize":  # as a 2025 client would send it, but with the 2026 header
        params = {"protocolVersion": MODERN, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        answer = send(server, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    else:
        answer = send(server, request(method, params))
    assert error_of(answer, 404, -32601)["data"] == {"method": method}


def test_resource_not_found_is_invalid_params_with_the_uri(server):
    uri = server.base_url + "/api/reviews/NOPE"
    error = error_of(send(server, request("resources/read", {"uri": uri})), 200, -32602)
    assert error["data"] == {"uri": uri}
    session = legacy_session(server)  # a 2025 session keeps its -32002
    legacy = send(
        server, {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}, session
    )
    assert legacy.status == 200 and legacy.json["error"]["code"] == -32002


def test_origin_is_checked_and_refused_with_a_spec_code(server):
    answer = send(server, request("server/discover"), {"Origin": "https://evil.example"})
    assert answer.status == 403 and answer.json["error"]["code"] == -32600 and answer.json["id"] is None
    result_of(send(server, request("server/discover"), {"Origin": server.base_url}))
    legacy = send(
        server,
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"Origin": "https://evil.example", "MCP-Protocol-Version": None, "Mcp-Method": None},
    )
    assert legacy.status == 403 and legacy.json["error"]["code"] == -32000  # 2025 clients: as before


def test_media_type_refusals_use_a_spec_code(server):
    answer = send(server, request("tools/list"), {"Content-Type": "text/plain"})
    assert answer.status == 415 and answer.json["error"]["code"] == -32600


# --------------------------------------------------------------------------- both eras side by side


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_initialize_without_the_2026_meta_starts_a_session(server, version):
    session = legacy_session(server, version)
    answer = send(server, {"jsonrpc": "2.0", "id": 7, "method": "prompts/list"}, session)
    assert answer.status == 200 and len(answer.json["result"]["prompts"]) >= 3
    assert "resultType" not in answer.json["result"]


@pytest.mark.parametrize("era", ["2026", "2025"])
def test_prompts_and_completion_in_both_eras(server, era):
    session = legacy_session(server) if era == "2025" else None

    def call(method: str, params: dict) -> Answer:
        if session:
            return send(server, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, session)
        return send(server, request(method, params))

    listed = call("prompts/list", {}).json["result"]["prompts"]
    assert {"review_digest", "reply_draft", "practitioner_review"} <= {p["name"] for p in listed}
    for prompt in listed:
        assert prompt["title"] and prompt["description"] and prompt["arguments"]
    got = call("prompts/get", {"name": "practitioner_review", "arguments": {"name": "ramirez"}}).json[
        "result"
    ]
    assert "Dr. Sofía Ramírez" in got["messages"][0]["content"]["text"]
    assert '"dr-sofia-ramirez"' in got["messages"][1]["content"]["text"]
    assert call("prompts/get", {"name": "nope"}).json["error"]["code"] == -32602
    assert call("prompts/get", {"name": "reply_draft", "arguments": {}}).json["error"]["code"] == -32602
    done = call(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "practitioner_review"},
            "argument": {"name": "name", "value": "SOFI"},
        },
    ).json["result"]
    assert done["completion"] == {"values": ["Dr. Sofía Ramírez"], "total": 1, "hasMore": False}
