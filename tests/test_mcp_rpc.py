"""The MCP dispatcher without HTTP: literal JSON-RPC messages in, response dicts out."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing.exceptions import Unresolvable
from support.factories import write_docs
from support.mcp import (
    BASE,
    TOOL_NAMES,
    assert_error,
    call,
    dispatch,
    initialize_body,
    rich_docs,
)
from werkzeug.test import EnvironBuilder

from reviewsd_app import mcp_rpc, reviewsd
from reviewsd_app.mcp_rpc import ErrorCode
from reviewsd_app.mcpserver import card, protocol, toolkit
from reviewsd_app.mcpserver import tools as mcp_tools
from reviewsd_app.mcpserver.sessions import Session, SessionStore
from reviewsd_app.reviews.dataset import SCHEMAS, fold_name, validator
from reviewsd_app.reviews.search import run_search, search_result

ICON_SRC = card.ICONS[0]["src"]
assert ICON_SRC.startswith("data:image/svg+xml;base64,")


@pytest.fixture
def mcp_app(mcp_data_dir: Path, tmp_path: Path) -> reviewsd.ReviewsApp:
    config = reviewsd.Config(
        data_dir=str(mcp_data_dir),
        state_dir=str(tmp_path / "state"),
        reload_interval=0,
        base_url=BASE,
        hub=False,
    )
    return reviewsd.create_app(config)


@pytest.fixture
def server(mcp_app) -> mcp_rpc.McpServer:
    return mcp_app.mcp.server


@pytest.fixture
def session(server) -> Session:
    state = Session()
    response = dispatch(server, state, initialize_body())
    assert "result" in response
    return state


def tool_result(server, session, name: str, arguments: Any = None) -> dict:
    response = call(server, session, name, arguments)
    assert "result" in response, response
    return response["result"]


# --------------------------------------------------------------------------- envelope errors


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b'{"jsonrpc": "2.0",}',
        b"\xff\xfe{}",
        b"\xc3\x28",
        b"NaN",
        b'{"id": Infinity}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping"} trailing',
        b"{'single': 'quotes'}",
        b"[" * 100_000,
        b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}',
    ],
)
def test_parse_errors(server, session, body):
    assert_error(dispatch(server, session, body), ErrorCode.PARSE_ERROR, None)


@pytest.mark.parametrize(
    "message, request_id",
    [
        ([], None),
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None),  # batches were removed in 2025-06-18
        ("ping", None),
        (1, None),
        (None, None),
        (True, None),
        ({}, None),
        ({"id": 1, "method": "ping"}, 1),
        ({"jsonrpc": "1.0", "id": 2, "method": "ping"}, 2),
        ({"jsonrpc": 2.0, "id": 3, "method": "ping"}, 3),
        ({"jsonrpc": "2.0", "id": 4}, 4),
        ({"jsonrpc": "2.0", "id": 5, "method": 5}, 5),
        ({"jsonrpc": "2.0", "id": 6, "method": None}, 6),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.0, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": {}, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": 5}, 8),
        ({"jsonrpc": "2.0", "id": "s", "method": "ping", "params": "x"}, "s"),
        ({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": None}, 9),
        ({"jsonrpc": "2.0", "method": "notifications/initialized", "params": 1}, None),
        ({"jsonrpc": "2.0", "id": 10, "result": {}, "error": {"code": 1, "message": "m"}}, 10),
        ({"jsonrpc": "2.0", "result": {}}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "result": {}}, None),
    ],
)
def test_invalid_requests(server, session, message, request_id):
    assert_error(dispatch(server, session, message), ErrorCode.INVALID_REQUEST, request_id)


def test_invalid_request_from_bytes_keeps_a_readable_id(server, session):
    response = dispatch(server, session, b'{"jsonrpc":"2.1","id":"abc","method":"ping"}')
    assert_error(response, ErrorCode.INVALID_REQUEST, "abc")


@pytest.mark.parametrize(
    "method",
    [
        "logging/setLevel",
        "resources/subscribe",  # prompts and completion/complete are served (issue 23)
        "resources/unsubscribe",
        "sampling/createMessage",
        "roots/list",
        "elicitation/create",
        "server/discover",
        "",
        "rpc.discover",
        "tools/List",
        "TOOLS/LIST",
        "notifications/initialized",
    ],
)
def test_unknown_methods(server, session, method):
    error = assert_error(
        dispatch(server, session, {"jsonrpc": "2.0", "id": 3, "method": method}),
        ErrorCode.METHOD_NOT_FOUND,
        3,
    )
    assert error["data"] == {"method": method}


@pytest.mark.parametrize(
    "message",
    [
        {"method": "tools/call"},
        {"method": "tools/call", "params": {}},
        {"method": "tools/call", "params": []},
        {"method": "tools/call", "params": ["get_business", {}]},
        {"method": "tools/call", "params": {"name": 5}},
        {"method": "tools/call", "params": {"name": None}},
        {"method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}},
        {"method": "tools/call", "params": {"name": "Search_Reviews", "arguments": {}}},
        {"method": "tools/call", "params": {"name": "get_business", "arguments": []}},
        {"method": "tools/call", "params": {"name": "get_business", "arguments": "rating=5"}},
        {"method": "tools/call", "params": {"name": "get_business", "arguments": 5}},
        {"method": "initialize", "params": {}},
        {"method": "initialize", "params": {"protocolVersion": 20250618}},
        {"method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": []}},
        {"method": "initialize", "params": {"protocolVersion": "2025-06-18", "clientInfo": "me"}},
        {"method": "initialize"},
        {"method": "resources/read"},
        {"method": "resources/read", "params": {"uri": 5}},
        {"method": "tools/list", "params": {"cursor": "abc"}},
        {"method": "resources/list", "params": {"cursor": "abc"}},
        {"method": "resources/templates/list", "params": []},
        {"method": "ping", "params": []},
    ],
)
def test_invalid_params(server, session, message):
    assert_error(
        dispatch(server, session, {"jsonrpc": "2.0", "id": "x1", **message}), ErrorCode.INVALID_PARAMS, "x1"
    )


def test_unknown_tool_error_names_the_tools(server, session):
    error = assert_error(call(server, session, "delete_review", {}), ErrorCode.INVALID_PARAMS, 7)
    assert error["data"] == {"tool": "delete_review", "tools": TOOL_NAMES}
    assert "get_business" in error["message"]


def test_internal_error_is_logged_not_leaked(server, session, monkeypatch, caplog):
    def explode(dataset, args, base_url):
        raise RuntimeError("secret detail /etc/passwd")

    broken = replace(mcp_tools.TOOLS["get_business"], run=explode)
    monkeypatch.setitem(mcp_tools.TOOLS, "get_business", broken)
    with caplog.at_level(logging.ERROR, logger="reviewsd.mcp"):
        response = dispatch(
            server,
            session,
            {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "get_business"}},
        )
    error = assert_error(response, ErrorCode.INTERNAL_ERROR, 11)
    assert error == {"code": -32603, "message": "Internal error"}
    assert "secret" not in json.dumps(response)
    records = [r for r in caplog.records if r.name == "reviewsd.mcp"]
    assert records and records[0].exc_info and "secret detail" in str(records[0].exc_info[1])


# --------------------------------------------------------------------------- notifications and responses


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "method": "tools/list"},  # a request without id is a notification: no answer
        {"jsonrpc": "2.0", "method": "no/such/thing", "params": [1, 2]},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": "a", "result": None},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
    ],
)
def test_notifications_and_client_responses_get_no_answer(server, session, message):
    assert dispatch(server, session, message) is None


def test_initialized_notification_gets_no_answer_and_the_session_goes_on(server):
    state = Session()
    dispatch(server, state, initialize_body())
    assert dispatch(server, state, b'{"jsonrpc":"2.0","method":"notifications/initialized"}') is None
    assert "result" in dispatch(server, state, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})


# --------------------------------------------------------------------------- lifecycle


@pytest.mark.parametrize(
    "requested, answered",
    [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2025-11-25", "2025-11-25"),
        (
            "2026-07-28",
            "2025-11-25",
        ),  # through initialize: the newest 2025 revision (2026-07-28 has no initialize)
        ("2024-11-05", "2025-11-25"),
        ("garbage", "2025-11-25"),
        ("", "2025-11-25"),
    ],
)
def test_initialize_negotiates_the_version(server, requested, answered):
    state = Session()
    response = dispatch(server, state, initialize_body(requested))
    result = response["result"]
    assert response["id"] == 1 and result["protocolVersion"] == answered == state.protocol_version
    assert result["capabilities"] == {
        "tools": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
        "prompts": {"listChanged": False},
        "completions": {},
    }
    rich = {  # Implementation's description, websiteUrl and icons: 2025-11-25 on
        "description": "Customer reviews of Test Clinic & Spine (chiropractor; reviews from Google) and "
        "their analysis: search, sentiment by aspect, practitioners and services, rating trend. Read-only.",
        "websiteUrl": server.store.current.dataset.business["url"],
        "icons": [{"src": ICON_SRC, "mimeType": "image/svg+xml", "sizes": ["any"]}],
    }
    assert result["serverInfo"] == {
        "name": "reviewsd",
        "title": "Test Clinic & Spine: reviews and insights (read-only)",
        "version": "1.0.0",
        **(rich if answered == "2025-11-25" else {}),
    }
    assert "Test Clinic & Spine" in result["instructions"] and len(result["instructions"]) < 600


def test_initialize_is_lenient_about_missing_capabilities_and_client_info(server):
    response = dispatch(
        server,
        Session(),
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
    )
    assert response["result"]["protocolVersion"] == "2025-06-18"


@pytest.mark.parametrize("params", [None, {}, {"_meta": {"progressToken": 1}}])
def test_ping(server, session, params):
    message = {
        "jsonrpc": "2.0",
        "id": "p",
        "method": "ping",
        **({} if params is None else {"params": params}),
    }
    assert dispatch(server, session, message) == {"jsonrpc": "2.0", "id": "p", "result": {}}


@pytest.mark.parametrize("request_id", [0, -1, 2**62, "", "id with spaces", "ü"])
def test_ids_are_echoed(server, session, request_id):
    response = dispatch(server, session, {"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    assert response["id"] == request_id


def test_lone_surrogates_still_encode(server, session):
    body = (
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"tools/call","params":{"name":"get_technician",'
        b'"arguments":{"name":"\\udfff"}}}'
    )
    response = dispatch(server, session, body)
    assert response["result"]["isError"] is True
    assert json.loads(protocol.encode_message(response)) == response


# --------------------------------------------------------------------------- tools/list


def test_tools_list(server, session):
    response = dispatch(server, session, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    tools = response["result"]["tools"]
    assert [t["name"] for t in tools] == TOOL_NAMES
    assert "nextCursor" not in response["result"]
    for tool in tools:
        assert set(tool) == {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
        assert tool["title"] and "Example:" in tool["description"] and len(tool["description"]) < 800
        assert tool["annotations"] == {
            "title": tool["title"],
            "readOnlyHint": True,
            "idempotentHint": True,
            "openWorldHint": False,
            "destructiveHint": False,
        }
        for key in ("inputSchema", "outputSchema"):
            assert tool[key]["type"] == "object"
            Draft202012Validator.check_schema(tool[key])
        assert tool["inputSchema"]["additionalProperties"] is False
    json.dumps(tools)  # plain JSON


def test_search_reviews_input_schema_is_the_search_parameter_schema(server):
    schema = mcp_tools.TOOLS["search_reviews"].input_schema
    expected = {k: v for k, v in SCHEMAS["search-params.schema.json"].items() if k not in ("$id", "$schema")}
    assert schema == expected


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if "$ref" in node else []
        return own + [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_output_schemas_are_self_contained(server, name):
    schema = mcp_tools.TOOLS[name].output_schema
    assert "$id" not in schema and "$schema" not in schema
    for target in refs(schema):
        assert target.startswith("#/$defs/") and target[len("#/$defs/") :] in schema["$defs"]
    # With no registry at all, every ref must still resolve.
    Draft202012Validator(schema).is_valid({})


# --------------------------------------------------------------------------- tools/call


def review_ids(mcp_app) -> list[str]:
    return [r["id"] for r in mcp_app.store.current.dataset.reviews]


def valid_calls(mcp_app) -> list[tuple[str, dict]]:
    ids = review_ids(mcp_app)
    return [
        ("get_business", {}),
        ("search_reviews", {}),
        ("search_reviews", {"rating": 5, "limit": 1}),
        ("get_review", {"id": ids[0]}),
        ("get_review", {"id": ids[3].lower()}),
        ("get_reviews_since", {"since": "2026-01-01"}),
        ("get_reviews_since", {"since": "2030-01-01", "limit": 0}),
        ("get_aspect_sentiment", {"aspect": "pain-relief"}),
        ("get_aspect_sentiment", {"aspect": "Wait Time", "sentiment": "negative", "limit": 20}),
        ("get_technician", {"name": "Dr. Maya Patel"}),
        ("get_technician", {"name": "sofia ramirez", "limit": 0}),
        ("get_service", {"service": "spinal-adjustment"}),
        ("get_service", {"service": "Prenatal chiropractic care", "limit": 1}),
        ("get_rating_trend", {}),
        ("get_rating_trend", {"months": 2}),
        ("get_insights_summary", {}),
        ("search", {"query": "1-star reviews about Patel"}),
        ("search", {"query": ""}),
        ("fetch", {"id": ids[1]}),
    ]


def test_every_tool_result_matches_its_output_schema(server, session, mcp_app):
    for name, arguments in valid_calls(mcp_app):
        result = tool_result(server, session, name, arguments)
        assert result["isError"] is False, (name, result)
        structured = result["structuredContent"]
        text, *links = result["content"]
        assert text == {"type": "text", "text": text["text"]} and json.loads(text["text"]) == structured
        listed = [r["id"] for r in structured.get("reviews", structured.get("results", []))]
        listed += [structured["review"]["id"]] if "review" in structured else []
        listed += [structured["id"]] if name == "fetch" else []
        base = mcp_app.config.public_base_url
        assert links == [  # a resource link to each review listed (2025-06-18 on)
            {
                "type": "resource_link",
                "uri": f"{base}/api/reviews/{i}",
                "name": i,
                "mimeType": "application/json",
            }
            for i in listed
        ]
        schema = mcp_tools.TOOLS[name].output_schema
        errors = list(
            Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).iter_errors(
                structured
            )
        )
        assert not errors, (name, [e.message for e in errors])


def test_get_business(server, session, mcp_app):
    structured = tool_result(server, session, "get_business")["structuredContent"]
    dataset = mcp_app.store.current.dataset
    assert structured == {
        "business": dataset.business,
        "aggregate_rating": dataset.reviews_doc["aggregate_rating"],
    }


def test_missing_and_null_arguments_mean_none(server, session):
    assert tool_result(server, session, "get_business")["isError"] is False
    response = dispatch(
        server,
        session,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_business", "arguments": None},
        },
    )
    assert response["result"]["isError"] is False


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"rating": 5},
        {"min_rating": 3.5, "limit": 2},
        {"query": "WAIT"},
        {"mentions_technician": "dr. maya patel"},
        {"mentions_service": "Massage therapy"},
        {"since": "2026-01-01", "until": "2026-02-28"},
        {"query": "nothing-like-this"},
    ],
)
def test_search_reviews_runs_the_search(server, session, mcp_app, arguments):
    dataset = mcp_app.store.current.dataset
    assert tool_result(server, session, "search_reviews", arguments)["structuredContent"] == search_result(
        dataset, run_search(dataset, arguments)
    )


def test_get_review(server, session, mcp_app):
    dataset = mcp_app.store.current.dataset
    review = dataset.reviews[0]
    structured = tool_result(server, session, "get_review", {"id": review["id"]})["structuredContent"]
    assert structured == {"review": review, "mentions": dataset.insights_doc["per_review"][review["id"]]}


def test_get_reviews_since_caps_the_list_but_counts_everything(server, session):
    arguments = {"since": "2025-11-01", "limit": 2}
    structured = tool_result(server, session, "get_reviews_since", arguments)["structuredContent"]
    assert structured["since"] == "2025-11-01" and structured["count"] == 5 and structured["returned"] == 2
    assert [r["date"] for r in structured["reviews"]] == ["2026-03-01", "2026-02-01"]
    everything = tool_result(server, session, "get_reviews_since", {"since": "2025-11-01"})[
        "structuredContent"
    ]
    assert everything["count"] == everything["returned"] == 5


def test_get_aspect_sentiment_filters_by_sentiment(server, session):
    structured = tool_result(
        server, session, "get_aspect_sentiment", {"aspect": "PAIN RELIEF", "sentiment": "negative"}
    )["structuredContent"]
    assert structured["aspect"]["id"] == "pain-relief" and structured["sentiment"] == "negative"
    assert structured["matched"] == structured["aspect"]["negative_count"] == 2
    assert [r["rating"] for r in structured["reviews"]] == [2, 1]
    every = tool_result(server, session, "get_aspect_sentiment", {"aspect": "pain relief"})[
        "structuredContent"
    ]
    assert every["sentiment"] is None and every["matched"] == every["aspect"]["mention_count"] == 5
    assert every["returned"] == 3  # default limit


@pytest.mark.parametrize(
    "name",
    [
        "dr-sofia-ramirez",
        "Dr. Sofía Ramírez",
        "DR. SOFIA RAMIREZ",
        "sofia ramirez",
        "Ramírez",
        "ramirez",
        "  dr.   sofía   ramírez ",
    ],
)
def test_get_technician_matches_names_leniently(server, session, name):
    structured = tool_result(server, session, "get_technician", {"name": name})["structuredContent"]
    assert structured["technician"]["id"] == "dr-sofia-ramirez"
    assert structured["matched"] == 2 and [r["date"] for r in structured["reviews"]] == [
        "2026-01-15",
        "2025-11-02",
    ]


@pytest.mark.parametrize("service", ["massage-therapy", "Massage Therapy", "massage"])
def test_get_service(server, session, mcp_app, service):
    structured = tool_result(server, session, "get_service", {"service": service})["structuredContent"]
    assert structured["service"] == mcp_app.store.current.dataset.business["services"][1]
    assert structured["insights"]["id"] == "massage-therapy" and structured["matched"] == 1


def test_get_rating_trend(server, session, mcp_app):
    temporal = mcp_app.store.current.dataset.insights_doc["temporal"]
    assert tool_result(server, session, "get_rating_trend")["structuredContent"] == temporal
    recent = tool_result(server, session, "get_rating_trend", {"months": 2})["structuredContent"]
    assert [m["month"] for m in recent["monthly"]] == ["2026-02", "2026-03"]
    assert (
        len(
            tool_result(server, session, "get_rating_trend", {"months": 1000})["structuredContent"]["monthly"]
        )
        == 6
    )


def test_get_insights_summary(server, session, mcp_app):
    doc = mcp_app.store.current.dataset.insights_doc
    structured = tool_result(server, session, "get_insights_summary")["structuredContent"]
    for key in ("overall_sentiment", "summary", "pull_quote", "topics", "faq", "aspects", "date_range"):
        assert structured[key] == doc[key]
    assert structured["technicians"] == doc["entities"]["technicians"]


# --------------------------------------------------------------------------- results written from bytes

# Results with reviews are spliced from the pre-encoded reviews (protocol.EncodedJson): the
# wire bytes must parse to what building the result from review dicts and encoding it gives.

search_arguments = st.fixed_dictionaries(
    {},
    optional={
        "rating": st.integers(1, 5),
        "min_rating": st.floats(1, 5, allow_nan=False),
        "since": st.sampled_from(["2025-10-20", "2025-12-31", "2026-02-01", "2030-01-01"]),
        "until": st.sampled_from(["2025-10-20", "2026-01-15", "2026-03-01"]),
        "query": st.sampled_from(["wait", "DR.", "ß", "nothing"]),
        "mentions_technician": st.sampled_from(["dr. maya patel", "Liam", "dr-sofia-ramirez"]),
        "mentions_service": st.sampled_from(["Massage therapy", "prenatal-chiropractic"]),
        "limit": st.integers(1, 10),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments=search_arguments, request_id=st.integers() | st.text())
@example(
    arguments={}, request_id="\ud800"
)  # a lone surrogate: the id is \u-escaped, the result still spliced
def test_search_result_bytes_equal_the_dict_built_result(server, session, mcp_app, arguments, request_id):
    dataset = mcp_app.store.current.dataset
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "search_reviews", "arguments": arguments},
    }
    wire = protocol.encode_response(server.handle(session, protocol.classify(message)))
    if "since" in arguments and "until" in arguments and arguments["since"] > arguments["until"]:
        assert json.loads(wire)["result"]["isError"] is True
        return
    structured = search_result(dataset, run_search(dataset, arguments))
    response = json.loads(wire)
    text = response["result"]["content"][0]["text"]
    assert json.loads(text) == structured
    base = mcp_app.config.public_base_url
    links = [
        {
            "type": "resource_link",
            "uri": f"{base}/api/reviews/{r['id']}",
            "name": r["id"],
            "mimeType": "application/json",
        }
        for r in structured["reviews"]
    ]
    assert response == {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {
            "content": [{"type": "text", "text": text}, *links],
            "structuredContent": structured,
            "isError": False,
        },
    }


def test_every_tool_result_on_the_wire_is_the_dispatched_result(server, session, mcp_app):
    for name, arguments in valid_calls(mcp_app):
        message = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        response = server.handle(session, protocol.classify(message))
        expected = {**response, "result": json.loads(response["result"])}  # the result as a client reads it
        assert json.loads(protocol.encode_response(response)) == expected, name


@given(st.text())  # any text that UTF-8 can carry (no lone surrogates)
@example('quote " backslash \\ newline \n nul \x00 tab \t del \x7f \u2028 😀 ß')
def test_json_string_is_the_json_string_literal(text):
    assert protocol.json_string(text.encode()) == protocol.encode_message(text)
    assert protocol.json_string(protocol.encode_message(text)) == protocol.encode_message(
        protocol.encode_message(text).decode()
    )


@pytest.mark.parametrize(
    "fields, reviews, expected",
    [
        ({}, b"", {"reviews": []}),
        (
            {"since": "2026-01-01", "count": 2},
            b'{"a":1},{"b":"\xc3\x9f"}',
            {"since": "2026-01-01", "count": 2, "reviews": [{"a": 1}, {"b": "ß"}]},
        ),
    ],
)
def test_with_reviews_appends_the_encoded_reviews(fields, reviews, expected):
    assert json.loads(protocol.with_reviews(fields, reviews)) == expected


# Tool execution errors: a result with isError and a text a model can act on.
@pytest.mark.parametrize(
    "name, arguments, expected",
    [
        ("get_business", {"x": 1}, ["unknown argument 'x'", "none (pass {})"]),
        ("search_reviews", {"rating": 6}, ["rating must be at most 5, got 6"]),
        ("search_reviews", {"rating": "5"}, ["rating must be an integer, got '5'"]),
        (
            "search_reviews",
            {"limit": 101, "min_rating": 0},
            ["limit must be at most 100", "min_rating must be at least 1"],
        ),
        ("search_reviews", {"stars": 5}, ["unknown parameter 'stars'", "known: rating, min_rating"]),
        ("search_reviews", {"since": "2026-02-30"}, ["since must be a real calendar date"]),
        ("search_reviews", {"since": "2026-03-01", "until": "2026-01-01"}, ["is after until"]),
        ("get_review", {}, ["id is required"]),
        ("get_review", {"id": 5}, ["id must be a string, got 5"]),
        (
            "get_review",
            {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"},
            ["No review has id '01ARZ3NDEKTSV4RRFFQ69G5FAV'", "search_reviews"],
        ),
        ("get_reviews_since", {"since": "2026-13-01"}, ["since must be a real calendar date as YYYY-MM-DD"]),
        (
            "get_reviews_since",
            {"since": "yesterday", "limit": 501},
            ["since must be", "limit must be at most 500"],
        ),
        ("get_reviews_since", {}, ["since is required"]),
        (
            "get_aspect_sentiment",
            {"aspect": "parking"},
            ["Unknown aspect 'parking'", "pain-relief (Pain relief)", "wait-time (Wait time)"],
        ),
        (
            "get_aspect_sentiment",
            {"aspect": "wait-time", "sentiment": "angry"},
            ["sentiment must be one of positive, neutral, negative"],
        ),
        (
            "get_technician",
            {"name": "Dr. Who"},
            ["Unknown practitioner 'Dr. Who'", "Dr. Maya Patel (id dr-maya-patel", "Liam O'Connor"],
        ),
        (
            "get_technician",
            {"name": "dr"},
            ["matches several practitioners", "Dr. Maya Patel", "Dr. Sofía Ramírez"],
        ),
        ("get_technician", {"name": ""}, ["name must not be empty"]),
        (
            "get_service",
            {"service": "acupuncture"},
            ["Unknown service 'acupuncture'", "spinal-adjustment (Spinal adjustment)"],
        ),
        ("get_rating_trend", {"months": 0}, ["months must be at least 1"]),
        ("get_rating_trend", {"months": True}, ["months must be an integer, got True"]),
        ("get_insights_summary", {"verbose": True}, ["unknown argument 'verbose'"]),
    ],
)
def test_tool_errors_are_results_a_model_can_fix(server, session, name, arguments, expected):
    result = tool_result(server, session, name, arguments)
    assert result["isError"] is True and "structuredContent" not in result
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text"
    for fragment in expected:
        assert fragment in result["content"][0]["text"]


def test_every_issue_is_listed_at_once(server, session):
    result = tool_result(
        server, session, "search_reviews", {"rating": 0, "limit": 0, "bogus": 1, "since": "x"}
    )
    assert result["content"][0]["text"].count("\n- ") == 4


# --------------------------------------------------------------------------- resources


def test_resources_list_and_read(server, session, mcp_app):
    listed = dispatch(server, session, {"jsonrpc": "2.0", "id": 1, "method": "resources/list"})["result"][
        "resources"
    ]
    assert [r["uri"] for r in listed] == [f"{BASE}/reviews.json", f"{BASE}/insights.json"]
    payloads = mcp_app.store.current.payloads
    for resource in listed:
        assert resource["mimeType"] == "application/json" and resource["name"] and resource["title"]
        response = dispatch(
            server,
            session,
            {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": resource["uri"]}},
        )
        (content,) = response["result"]["contents"]
        body = payloads[resource["uri"][len(BASE) :]].identity.body
        assert content == {"uri": resource["uri"], "mimeType": "application/json", "text": body.decode()}
        assert resource["size"] == len(body)


def test_a_resource_over_the_limit_is_refused_with_its_http_url(server, session, mcp_app, monkeypatch):
    size = len(mcp_app.store.current.payloads["/reviews.json"].identity.body)
    monkeypatch.setattr(server, "config", dataclasses.replace(server.config, mcp_max_resource_bytes=size - 1))
    uri = f"{BASE}/reviews.json"
    response = dispatch(
        server, session, {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": uri}}
    )
    error = response["error"]
    assert error["code"] == -32602 and f"GET {uri} over HTTP" in error["message"]
    assert error["data"] == {"uri": uri, "size": size, "limit": size - 1}


def test_resource_template_reads_one_review(server, session, mcp_app):
    result = dispatch(server, session, {"jsonrpc": "2.0", "id": 1, "method": "resources/templates/list"})[
        "result"
    ]
    (template,) = result["resourceTemplates"]
    assert (
        template["uriTemplate"] == f"{BASE}/api/reviews/{{id}}" and template["mimeType"] == "application/json"
    )
    review = mcp_app.store.current.dataset.reviews[2]
    uri = template["uriTemplate"].replace("{id}", review["id"])
    response = dispatch(
        server, session, {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri}}
    )
    assert json.loads(response["result"]["contents"][0]["text"]) == review


@pytest.mark.parametrize(
    "uri",
    [
        f"{BASE}/nope.json",
        f"{BASE}/api/reviews/01ARZ3NDEKTSV4RRFFQ69G5FAV",
        f"{BASE}/api/reviews/",
        f"{BASE}/api/reviews/x/y",
        "https://elsewhere.example/reviews.json",
        "reviews.json",
        "/reviews.json",
        f"{BASE}/api/feed.json",
        f"{BASE}",
        "",
        f"{BASE}/reviews.json?x=1",
    ],
)
def test_unknown_resource(server, session, uri):
    response = dispatch(
        server, session, {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": uri}}
    )
    assert assert_error(response, ErrorCode.RESOURCE_NOT_FOUND, 4)["data"] == {"uri": uri}


# --------------------------------------------------------------------------- schema bundling


def test_a_bundled_file_validates_like_the_original(mcp_app):
    dataset = mcp_app.store.current.dataset
    bundled = Draft202012Validator(
        mcp_tools.bundle_schema(SCHEMAS["search-result.schema.json"]),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )
    original = validator("search-result.schema.json")
    good = search_result(dataset, run_search(dataset, {}))
    bad = {**good, "reviews": [{**good["reviews"][0], "rating": 7}]}
    for document, valid in ((good, True), (bad, False), ({**good, "extra": 1}, False)):
        assert bundled.is_valid(document) is valid is original.is_valid(document)


def test_bundle_schema_inlines_refs_across_files():
    schema = mcp_tools.bundle_schema(
        {"type": "array", "items": mcp_tools.ref("insights.schema.json", "/$defs/technician")}
    )
    assert schema["items"] == {"$ref": "#/$defs/technician"}
    assert {"technician", "slug", "count", "score", "review_ids"} <= set(schema["$defs"])
    id_pattern = SCHEMAS["review.schema.json"]["properties"]["id"]["pattern"]
    assert schema["$defs"]["review_ids"]["items"]["pattern"] == id_pattern
    with pytest.raises(Unresolvable):
        Draft202012Validator({"$ref": "review.schema.json"}).is_valid(
            {}
        )  # what a client would face unbundled


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    "text, folded",
    [
        ("Dr. Sofía Ramírez", "dr. sofia ramirez"),
        ("wait-time", "wait time"),
        ("  A\tB  ", "a b"),
        ("Jürgen", "jurgen"),
        ("STRASSE", "strasse"),
        ("under_score", "under score"),
    ],
)
def test_fold_name(text, folded):
    assert fold_name(text) == folded


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_session_store_expires_idle_sessions():
    clock = FakeClock()
    store = SessionStore(max_sessions=10, idle_seconds=60, clock=clock)
    first = store.add(Session(client="192.0.2.1"))
    clock.now += 59
    assert store.get(first) is not None  # use renews the idle timer
    clock.now += 60
    assert store.get(first) is not None
    clock.now += 60.5
    assert store.get(first) is None and len(store) == 0


def test_session_store_evicts_the_least_recently_used():
    clock = FakeClock()
    store = SessionStore(max_sessions=2, idle_seconds=60, clock=clock)
    a, b = store.add(Session(client="192.0.2.2")), store.add(Session(client="192.0.2.3"))
    clock.now += 1
    store.get(a)
    c = store.add(Session(client="192.0.2.4"))
    assert store.get(b) is None and store.get(a) is not None and store.get(c) is not None


def test_session_store_drops_expired_before_evicting_live_ones():
    clock = FakeClock()
    store = SessionStore(max_sessions=2, idle_seconds=10, clock=clock)
    old = store.add(Session(client="192.0.2.5"))
    clock.now += 5
    live = store.add(Session(client="192.0.2.6"))
    clock.now += 6  # `old` is now expired, `live` is not
    store.add(Session(client="192.0.2.7"))
    assert store.get(live) is not None and store.get(old) is None and len(store) == 2


def test_session_ids_are_random_visible_ascii():
    store = SessionStore(max_sessions=100, idle_seconds=60)
    ids = {store.add(Session(client=f"192.0.2.{i}")) for i in range(50)}
    assert len(ids) == 50
    for session_id in ids:
        assert len(session_id) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
    assert store.end(ids.pop()) is True and len(store) == 49


def test_one_client_cannot_end_the_other_clients_sessions():
    # 1,000 initialize requests from one address used to end every other session.
    store = SessionStore(max_sessions=100, idle_seconds=60)
    others = [store.add(Session(client=f"192.0.2.{i}")) for i in range(50)]
    for _ in range(1000):
        store.add(Session(client="198.51.100.7"))
    assert all(store.get(other) is not None for other in others)
    assert len(store) == 50 + store.per_client == 60


# ------------------------------------------------ one snapshot per answer (18 of 1,026 mixed under reloads)


class SwappingStore:
    """A store whose current snapshot is the old one on the first read and the new one on every later read:
    a reload landing in the middle of an answer."""

    def __init__(self, old, new):
        self.old, self.new, self.reads = old, new, 0

    @property
    def current(self):
        self.reads += 1
        return self.old if self.reads == 1 else self.new


def modern_call(name: str, arguments: dict) -> dict:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
        "Accept": "application/json",
    }
    return EnvironBuilder(
        path="/mcp", method="POST", data=json.dumps(body), content_type="application/json", headers=headers
    ).get_environ()


def test_an_answer_during_a_reload_is_one_version(mcp_app, mcp_data_dir: Path) -> None:
    store = mcp_app.mcp.server.store
    old = store.current
    reviews_doc, insights_doc = rich_docs()
    reviews_doc["business"]["name"] = "Renamed After Reload"
    write_docs(mcp_data_dir, reviews_doc, insights_doc)
    assert store.reload(force=True)
    new = store.current
    assert new.dataset.business["name"] == "Renamed After Reload"

    mcp_app.mcp.server.store = swapping = SwappingStore(old, new)
    status, headers, body = mcp_app.mcp.handle(modern_call("search_reviews", {"limit": 100}))
    result = json.loads(body)["result"]
    info = result["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert result["structuredContent"]["matched"] == len(old.dataset.reviews)
    assert info["title"].startswith(old.dataset.business["name"] + ":")  # not the new snapshot's
    assert swapping.reads == 1


def test_a_name_asked_of_insights_that_list_none_says_so_and_where_to_look():
    """[publish] people = false leaves the insights without practitioners: "Valid practitioners: none."
    read as if the person did not work there."""
    with pytest.raises(toolkit.ToolError) as raised:
        toolkit.resolve("practitioner", "Tom", [])
    assert str(raised.value) == (
        "Unknown practitioner 'Tom': this business's insights name no practitioners; "
        "search_reviews with q finds the reviews that mention it."
    )
