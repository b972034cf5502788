"""The MCP transport over HTTP (werkzeug test client): headers, sessions, status codes, reloads."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.factories import Spec, make_docs, write_docs
from support.mcp import SPECS, TOOL_NAMES
from werkzeug.test import Client, EnvironBuilder, run_wsgi_app

from reviewsd_app import reviewsd
from reviewsd_app.mcpserver import protocol

BASE = "https://reviews.example.com"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 50_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def make_app(mcp_data_dir: Path, tmp_path: Path):
    def make(clock: Callable[[], float] = time.monotonic, **options: Any) -> reviewsd.ReviewsApp:
        config = reviewsd.Config(
            data_dir=str(mcp_data_dir),
            state_dir=str(tmp_path / "state"),
            reload_interval=0,
            hub=False,
            **{"base_url": BASE, **options},
        )
        return reviewsd.create_app(config, mcp_clock=clock)

    return make


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def mcp_app(make_app, clock) -> reviewsd.ReviewsApp:
    return make_app(
        clock, mcp_allowed_origins="https://app.example.org, http://tools.example.net:8443", max_body=4096
    )


@pytest.fixture
def client(mcp_app) -> Client:
    return Client(mcp_app)


def post(
    client: Client,
    message: Any,
    session: str | None = None,
    headers: dict | None = None,
    raw: bytes | None = None,
):
    all_headers = {**HEADERS, **({"Mcp-Session-Id": session} if session else {}), **(headers or {})}
    all_headers = {k: v for k, v in all_headers.items() if v is not None}
    body = raw if raw is not None else json.dumps(message).encode()
    return client.post("/mcp", data=body, headers=all_headers)


def initialize(client: Client, version: str = "2025-06-18", headers: dict | None = None) -> str:
    response = post(
        client,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        headers=headers,
    )
    assert response.status_code == 200, response.data
    return response.headers["Mcp-Session-Id"]


@pytest.fixture
def session(client) -> str:
    session_id = initialize(client)
    assert (
        post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id).status_code == 202
    )
    return session_id


def rpc(
    client: Client,
    session: str,
    method: str,
    params: Any = None,
    request_id: Any = 1,
    headers: dict | None = None,
):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return post(client, message, session, headers)


def tool(client: Client, session: str, name: str, arguments: dict | None = None) -> dict:
    response = rpc(client, session, "tools/call", {"name": name, "arguments": arguments or {}})
    assert response.status_code == 200, response.data
    return response.get_json()["result"]


def assert_jsonrpc_error(response, status: int, code: int, request_id: Any = None) -> dict:
    assert response.status_code == status, response.data
    assert response.mimetype == "application/json"
    document = response.get_json()
    assert set(document) == {"jsonrpc", "id", "error"} and document["jsonrpc"] == "2.0"
    assert document["id"] == request_id and document["error"]["code"] == code
    assert isinstance(document["error"]["message"], str)
    return document["error"]


# --------------------------------------------------------------------------- initialize and sessions


def test_initialize_starts_a_session(client):
    response = post(
        client,
        {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "curl", "version": "8"},
            },
        },
    )
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert response.headers["Cache-Control"] == "no-store"
    assert "Mcp-Session-Id" in response.headers["Access-Control-Expose-Headers"]
    session_id = response.headers["Mcp-Session-Id"]
    assert len(session_id) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
    result = response.get_json()["result"]
    assert response.get_json()["id"] == "init"
    assert result["protocolVersion"] == "2025-06-18"
    assert set(result) == {"protocolVersion", "capabilities", "serverInfo", "instructions"}
    assert initialize(client) != session_id


@pytest.mark.parametrize(
    "requested, answered",
    [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2025-11-25", "2025-11-25"),
        ("x", "2025-11-25"),
    ],
)
def test_version_negotiation(client, requested, answered):
    response = post(
        client,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": requested, "capabilities": {}},
        },
    )
    assert response.get_json()["result"]["protocolVersion"] == answered


def test_failed_initialize_starts_no_session(client, mcp_app):
    response = post(client, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert response.status_code == 200 and response.get_json()["error"]["code"] == -32602
    assert "Mcp-Session-Id" not in response.headers and len(mcp_app.mcp.sessions) == 0


def test_initialize_with_a_session_id_is_refused(client, session):
    response = post(
        client,
        {"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        session,
    )
    assert_jsonrpc_error(response, 400, -32000, 5)
    assert "Mcp-Session-Id" not in response.headers


def test_requests_need_a_session(client):
    assert_jsonrpc_error(rpc(client, "", "tools/list", request_id=3), 400, -32000, 3)
    notification = post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert_jsonrpc_error(notification, 400, -32000)


@pytest.mark.parametrize("session_id", ["nope", "x" * 43, "ünïcode"])
def test_unknown_session_is_404(client, session, session_id):
    assert_jsonrpc_error(rpc(client, session_id, "ping", request_id=4), 404, -32000, 4)


def test_delete_ends_the_session(client, session):
    response = client.delete("/mcp", headers={"Mcp-Session-Id": session})
    assert response.status_code == 204 and response.data == b"" and "Content-Type" not in response.headers
    assert_jsonrpc_error(rpc(client, session, "ping"), 404, -32000, 1)
    assert_jsonrpc_error(client.delete("/mcp", headers={"Mcp-Session-Id": session}), 404, -32000)
    assert_jsonrpc_error(client.delete("/mcp"), 400, -32000)


def test_answers_carry_their_type_length_and_transport_headers(client, session):
    response = rpc(client, session, "tools/call", {"name": "search_reviews", "arguments": {"limit": 2}})
    assert response.status_code == 200 and response.headers["Content-Type"] == "application/json"
    assert int(response.headers["Content-Length"]) == len(response.data)
    assert (
        response.headers["Cache-Control"] == "no-store"
        and response.headers["Access-Control-Allow-Origin"] == "*"
    )
    assert response.get_json()["result"]["structuredContent"]["returned"] == 2
    accepted = post(client, {"jsonrpc": "2.0", "method": "notifications/cancelled"}, session)
    assert accepted.status_code == 202 and accepted.data == b"" and "Content-Type" not in accepted.headers


def test_idle_sessions_expire(client, session, clock, mcp_app):
    clock.now += mcp_app.config.mcp_session_idle - 1
    assert rpc(client, session, "ping").status_code == 200  # use renews the idle timer
    clock.now += mcp_app.config.mcp_session_idle - 1
    assert rpc(client, session, "ping").status_code == 200
    clock.now += mcp_app.config.mcp_session_idle + 1
    assert_jsonrpc_error(rpc(client, session, "ping"), 404, -32000, 1)


class ClientFrom(Client):
    """A test client whose requests come from `address` (each client has its share of the sessions)."""

    def __init__(self, app: Any, address: str) -> None:
        super().__init__(app)
        self.address = address

    def open(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("environ_base", {"REMOTE_ADDR": self.address})
        return super().open(*args, **kwargs)


def test_session_cap_evicts_the_least_recently_used(make_app, clock):
    app = make_app(clock, mcp_max_sessions=2)
    client = Client(app)
    first, second = initialize(ClientFrom(app, "192.0.2.1")), initialize(ClientFrom(app, "192.0.2.2"))
    clock.now += 1
    assert rpc(client, first, "ping").status_code == 200  # `second` is now the least recently used
    third = initialize(ClientFrom(app, "192.0.2.3"))
    assert rpc(client, second, "ping").status_code == 404
    assert rpc(client, first, "ping").status_code == rpc(client, third, "ping").status_code == 200
    assert len(app.mcp.sessions) == 2


# --------------------------------------------------------------------------- protocol version header


@pytest.mark.parametrize(
    "value, status",
    [
        (None, 200),
        ("2025-06-18", 200),
        ("2025-03-26", 200),
        (" 2025-06-18 ", 200),
        ("2025-11-25", 200),
        ("2024-11-05", 400),
        ("garbage", 400),
        ("", 400),  # 2026-07-28: test_mcp_modern.py
    ],
)
def test_protocol_version_header(client, session, value, status):
    response = rpc(client, session, "ping", headers={"MCP-Protocol-Version": value})
    assert response.status_code == status
    if status == 400:
        assert_jsonrpc_error(response, 400, -32000, 1)
        delete = client.delete("/mcp", headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": value})
        assert delete.status_code == 400


def test_initialize_ignores_the_protocol_version_header(client):
    assert initialize(client, headers={"MCP-Protocol-Version": "1999-01-01"})


# --------------------------------------------------------------------------- media types, methods, size


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin-1",
        "application/jsonx",
        "json",
    ],
)
def test_content_type_must_be_json(client, session, content_type):
    response = post(
        client, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session, headers={"Content-Type": content_type}
    )
    assert_jsonrpc_error(response, 415, -32000)


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"]
)
def test_content_type_variants_accepted(client, session, content_type):
    response = post(
        client, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session, headers={"Content-Type": content_type}
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    "accept, status",
    [
        (None, 200),
        ("", 200),
        ("*/*", 200),
        ("application/json", 200),
        ("application/json, text/event-stream", 200),
        ("application/*", 200),
        ("text/event-stream, */*;q=0.1", 200),
        ("text/event-stream", 406),
        ("text/html", 406),
        ("application/json;q=0, text/event-stream", 406),
    ],
)
def test_accept(client, session, accept, status):
    response = post(
        client, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session, headers={"Accept": accept}
    )
    assert response.status_code == status
    assert response.mimetype == "application/json"
    if status == 406:
        assert_jsonrpc_error(response, 406, -32000)


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_no_server_stream(client, session, method):
    response = client.open(
        "/mcp", method=method, headers={"Mcp-Session-Id": session, "Accept": "text/event-stream"}
    )
    assert response.status_code == 405
    assert response.headers["Allow"] == "DELETE, OPTIONS, POST"
    if method == "GET":  # refused by the router, with the app's one error shape
        assert response.get_json()["error"] == "method_not_allowed"


def test_body_over_max_body_is_413(client, session, mcp_app):
    filler = "x" * mcp_app.config.max_body
    response = rpc(
        client, session, "tools/call", {"name": "get_business", "arguments": {}, "_meta": {"f": filler}}
    )
    assert_jsonrpc_error(response, 413, -32000)


@pytest.mark.parametrize("size, status", [(100, 200), (4096, 200), (4097, 413), (10_000, 413)])
def test_streamed_body_is_read_only_up_to_max_body(mcp_app, session, size, status):
    """No Content-Length (a chunked body the server dechunks): the read itself stops after max_body + 1."""
    head = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"f":"'
    body = head + b"x" * (size - len(head) - 3) + b'"}}'
    assert len(body) == size
    environ = EnvironBuilder(
        path="/mcp", method="POST", headers={**HEADERS, "Mcp-Session-Id": session}
    ).get_environ()
    stream = CountingStream(body)
    environ.update({"wsgi.input": stream, "wsgi.input_terminated": True})
    environ.pop("CONTENT_LENGTH", None)
    app_iter, status_line, headers = run_wsgi_app(mcp_app, environ)
    assert int(status_line.split()[0]) == status, b"".join(app_iter)
    assert stream.consumed <= mcp_app.config.max_body + 1


def test_body_shorter_than_its_content_length_is_400(mcp_app, session):
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    environ = EnvironBuilder(
        path="/mcp", method="POST", headers={**HEADERS, "Mcp-Session-Id": session}
    ).get_environ()
    environ.update({"wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body) + 10)})
    app_iter, status_line, headers = run_wsgi_app(mcp_app, environ)
    assert status_line.startswith("400") and json.loads(b"".join(app_iter))["error"]["code"] == -32000


class CountingStream(io.BytesIO):
    consumed = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.consumed += len(data)
        return data

    def readline(self, size: int | None = -1) -> bytes:
        data = super().readline(size)
        self.consumed += len(data)
        return data

    def readinto(self, buffer) -> int:  # what werkzeug's LimitedStream calls when the stream has it
        count = super().readinto(buffer)
        self.consumed += count
        return count


# --------------------------------------------------------------------------- Origin


@pytest.mark.parametrize(
    "origin, status",
    [
        (None, 200),
        (BASE, 200),
        ("https://REVIEWS.example.com", 200),
        ("https://reviews.example.com:443", 200),
        ("http://localhost", 200),
        ("http://localhost:3000", 200),
        ("http://127.0.0.1:6274", 200),
        ("http://[::1]:8080", 200),
        ("https://app.example.org", 200),
        ("http://tools.example.net:8443", 200),
        ("http://reviews.example.com", 403),
        ("https://evil.example", 403),
        ("null", 403),
        ("http://localhost.evil.example", 403),
        ("https://reviews.example.com.evil.example", 403),
        ("http://tools.example.net", 403),
        ("https://app.example.org:8443", 403),
        ("not a url", 403),
        ("file://", 403),
        ("http://127.0.0.2", 403),
    ],
)
def test_origin(client, session, origin, status):
    response = rpc(client, session, "ping", headers={"Origin": origin})
    assert response.status_code == status
    if status == 403:
        assert_jsonrpc_error(response, 403, -32000)
        assert client.delete("/mcp", headers={"Mcp-Session-Id": session, "Origin": origin}).status_code == 403


def test_base_url_with_a_path_allows_its_origin(make_app):
    client = Client(make_app(base_url="https://example.com/clinic/reviews"))
    assert initialize(client, headers={"Origin": "https://example.com"})


def test_wildcard_extra_origin_allows_any(make_app):
    client = Client(make_app(mcp_allowed_origins="*"))
    assert initialize(client, headers={"Origin": "https://anything.example"})


def test_initialize_checks_origin_too(client):
    response = post(
        client,
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        headers={"Origin": "https://evil.example"},
    )
    assert_jsonrpc_error(response, 403, -32000)
    assert "Mcp-Session-Id" not in response.headers


# --------------------------------------------------------------------------- messages


def test_notifications_and_responses_get_202(client, session):
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "notifications/whatever"},
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": 9, "error": {"code": -1, "message": "no"}},
    ):
        response = post(client, message, session)
        assert response.status_code == 202 and response.data == b"", message


def test_ping(client, session):
    response = rpc(client, session, "ping", request_id="p1")
    assert response.status_code == 200 and response.get_json() == {"jsonrpc": "2.0", "id": "p1", "result": {}}


@pytest.mark.parametrize(
    "raw, code",
    [
        (b"{", -32700),
        (b"\xff", -32700),
        (b"", -32700),
        (b"[]", -32600),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
        (b'"just a string"', -32600),
    ],
)
def test_unreadable_messages_are_400(client, session, raw, code):
    assert_jsonrpc_error(post(client, None, session, raw=raw), 400, code)


@pytest.mark.parametrize(
    "message, code",
    [
        ({"jsonrpc": "2.0", "id": 2, "method": "server/discover"}, -32601),  # 2026-07-28 only
        ({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope"}}, -32602),
        (
            {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "https://x.example/"}},
            -32002,
        ),
    ],
)
def test_method_errors_are_200(client, session, message, code):
    assert_jsonrpc_error(post(client, message, session), 200, code, 2)


def test_internal_error_over_http(client, session, mcp_app, monkeypatch):
    def explode(session, params):
        raise ZeroDivisionError("private")

    monkeypatch.setitem(mcp_app.mcp.server.methods, "tools/list", explode)
    response = rpc(client, session, "tools/list", request_id=77)
    error = assert_jsonrpc_error(response, 200, -32603, 77)
    assert "private" not in response.get_data(as_text=True) and error["message"] == "Internal error"


def test_tools_list_over_http(client, session):
    tools = rpc(client, session, "tools/list").get_json()["result"]["tools"]
    assert len(tools) == 12 and all(t["annotations"]["readOnlyHint"] for t in tools)


def test_resources_over_http(client, session, mcp_app):
    response = rpc(client, session, "resources/read", {"uri": f"{BASE}/reviews.json"})
    text = response.get_json()["result"]["contents"][0]["text"]
    assert text.encode() == client.get("/reviews.json").data


# --------------------------------------------------------------------------- same answers as the HTTP API


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"rating": 5},
        {"min_rating": 3.5, "limit": 2},
        {"query": "wait"},
        {"mentions_technician": "Dr. Maya Patel"},
        {"mentions_service": "massage-therapy"},
        {"since": "2026-01-01", "until": "2026-02-28"},
        {"query": "zzz"},
        {"rating": 5, "mentions_technician": "dr-sofia-ramirez", "limit": 1},
    ],
)
def test_search_reviews_equals_the_search_endpoint(client, session, query):
    http = client.get("/api/reviews/search", query_string=query)
    assert http.status_code == 200
    result = tool(client, session, "search_reviews", query)
    assert result["structuredContent"] == http.get_json()
    assert json.loads(result["content"][0]["text"]) == http.get_json()


@pytest.mark.parametrize("query", [{"rating": 6}, {"limit": 0}, {"since": "2026-02-30"}, {"unknown": "x"}])
def test_invalid_search_is_400_over_http_and_an_error_result_over_mcp(client, session, query):
    http = client.get("/api/reviews/search", query_string=query)
    assert http.status_code == 400
    result = tool(client, session, "search_reviews", query)
    assert result["isError"] is True
    for issue in http.get_json()["issues"]:
        assert issue["message"] in result["content"][0]["text"]


def test_get_reviews_since_equals_the_since_endpoint(client, session):
    http = client.get("/api/reviews/since/2025-12-01").get_json()
    result = tool(client, session, "get_reviews_since", {"since": "2025-12-01", "limit": 500})[
        "structuredContent"
    ]
    assert result == {**http, "returned": http["count"], "next_cursor": None}
    paged = client.get("/api/reviews/since/2025-12-01?limit=2").get_json()
    first = tool(client, session, "get_reviews_since", {"since": "2025-12-01", "limit": 2})[
        "structuredContent"
    ]
    assert first == paged and paged["next_cursor"]  # the same page, the same cursor


# --------------------------------------------------------------------------- reloads and threads


def test_tools_see_reloaded_data(client, session, mcp_app, mcp_data_dir):
    assert tool(client, session, "get_business")["structuredContent"]["aggregate_rating"][
        "review_count"
    ] == len(SPECS)
    reviews_doc, insights_doc = make_docs(SPECS + [Spec(rating=1, date="2026-04-01", text="New and angry.")])
    reviews_doc["business"]["name"] = "Renamed Clinic"
    write_docs(mcp_data_dir, reviews_doc, insights_doc)
    assert mcp_app.store.reload(force=True)
    business = tool(client, session, "get_business")["structuredContent"]
    assert business["business"]["name"] == "Renamed Clinic"
    assert business["aggregate_rating"]["review_count"] == len(SPECS) + 1
    newest = tool(client, session, "search_reviews", {"limit": 1})["structuredContent"]["reviews"][0]
    assert newest["text"] == "New and angry."
    resource = rpc(client, session, "resources/read", {"uri": f"{BASE}/reviews.json"}).get_json()
    assert "Renamed Clinic" in resource["result"]["contents"][0]["text"]


def test_concurrent_calls_on_one_session(mcp_app, session):
    failures: list[Any] = []
    expected = tool(Client(mcp_app), session, "search_reviews", {"rating": 5})["structuredContent"]

    def work(worker: int) -> None:
        client = Client(mcp_app)
        for i in range(25):
            name, arguments = [
                ("search_reviews", {"rating": 5}),
                ("get_business", {}),
                ("get_technician", {"name": "Patel"}),
            ][(worker + i) % 3]
            response = rpc(
                client,
                session,
                "tools/call",
                {"name": name, "arguments": arguments},
                request_id=worker * 1000 + i,
            )
            document = response.get_json()
            if (
                response.status_code != 200
                or document["id"] != worker * 1000 + i
                or document["result"]["isError"]
            ):
                failures.append(document)
            elif name == "search_reviews" and document["result"]["structuredContent"] != expected:
                failures.append(document)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures and len(mcp_app.mcp.sessions) == 1


def test_concurrent_initialize_respects_the_cap(make_app):
    app = make_app(mcp_max_sessions=5)
    ids: list[str] = []

    def work() -> None:
        for i in range(10):
            ids.append(initialize(ClientFrom(app, f"192.0.2.{len(ids) + i}")))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(set(ids)) == 60 and len(app.mcp.sessions) == 5


# --------------------------------------------------------------------------- any JSON body


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "notifications/initialized",
    "prompts/list",
]
# Envelopes that are nearly right, so the search reaches the methods and tools, not only -32600.
messages = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": st.integers() | st.text(max_size=5),
            "method": st.sampled_from(METHODS),
        },
        optional={"params": json_values},
    ),
    st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": st.integers(),
            "method": st.just("tools/call"),
            "params": st.fixed_dictionaries(
                {
                    "name": st.sampled_from([*TOOL_NAMES, "nope"]),  # every tool, and one that is not
                    "arguments": json_values,
                }
            ),
        }
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=messages)
def test_any_json_body_gets_a_well_formed_answer(client, session, message):
    response = post(client, None, session, raw=json.dumps(message).encode())
    if response.status_code == 202:
        assert response.data == b""
        return
    assert response.status_code == 200 or 400 <= response.status_code < 500, response.data
    assert response.mimetype == "application/json"
    document = response.get_json()
    assert document["jsonrpc"] == "2.0" and "id" in document
    assert ("result" in document) != ("error" in document)
    if "error" in document:
        assert isinstance(document["error"]["code"], int) and not isinstance(document["error"]["code"], bool)
        assert isinstance(document["error"]["message"], str)
    else:
        assert response.status_code == 200
    if isinstance(message, dict) and protocol.valid_id(message.get("id")) and "method" in message:
        assert document["id"] == message["id"]
