"""Prompts and completion (mcp_prompts.py) through the pure dispatcher, and the 2026 header rules
(mcpserver/transport.py)."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from support.factories import Spec, make_docs, write_docs
from support.mcp import BASE, SPECS, assert_error, dispatch, initialize_body

from reviewsd_app import reviewsd
from reviewsd_app.mcp_rpc import ErrorCode
from reviewsd_app.mcpserver import prompts as mcp_prompts
from reviewsd_app.mcpserver import transport as mcp_http
from reviewsd_app.mcpserver.sessions import Session
from reviewsd_app.reviews.dataset import fold_name


def server_for(data_dir: Path, state_dir: Path):
    config = reviewsd.Config(
        data_dir=str(data_dir), state_dir=str(state_dir), reload_interval=0, base_url=BASE, hub=False
    )
    return reviewsd.create_app(config).mcp.server


@pytest.fixture
def server(mcp_data_dir: Path, tmp_path: Path):
    return server_for(mcp_data_dir, tmp_path / "state")


@pytest.fixture(params=["2025", "2026"])
def session(request, server) -> Session:
    """A 2025 session after initialize, or the per-request Session a 2026-07-28 request gets."""
    if request.param == "2026":
        return Session(protocol_version="2026-07-28")
    state = Session()
    assert "result" in dispatch(server, state, initialize_body("2025-11-25"))
    return state


def call(server, session: Session, method: str, params: dict | None = None) -> dict:
    return dispatch(server, session, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}})


def result(response: dict) -> dict:
    assert "result" in response, response
    return response["result"]


def complete(server, session, ref: dict, name: str, value: str) -> dict:
    return call(
        server, session, "completion/complete", {"ref": ref, "argument": {"name": name, "value": value}}
    )


def prompt_ref(name: str) -> dict:
    return {"type": "ref/prompt", "name": name}


TEMPLATE = {"type": "ref/resource", "uri": BASE + "/api/reviews/{id}"}


# --------------------------------------------------------------------------- prompts


def test_prompt_list(server, session):
    prompts = result(call(server, session, "prompts/list"))["prompts"]
    assert [p["name"] for p in prompts] == list(mcp_prompts.PROMPTS)
    for prompt in prompts:
        assert prompt["title"] and len(prompt["description"]) > 40
        for argument in prompt["arguments"]:
            assert set(argument) == {"name", "title", "description", "required"}


def test_digest_defaults_to_the_last_30_days_of_reviews(server, session):
    got = result(call(server, session, "prompts/get", {"name": "review_digest"}))
    newest = "2026-03-01"
    since = (date.fromisoformat(newest) - timedelta(days=30)).isoformat()
    assert f"from {since} to {newest}" in got["messages"][0]["content"]["text"]
    embedded = got["messages"][1]["content"]["resource"]
    assert embedded["uri"] == f"{BASE}/api/reviews/search?since={since}&until={newest}&limit=100"
    assert [r["date"] for r in json.loads(embedded["text"])["reviews"]] == ["2026-03-01", "2026-02-01"]


def test_digest_of_a_period(server, session):
    got = result(
        call(
            server,
            session,
            "prompts/get",
            {"name": "review_digest", "arguments": {"since": "2025-11-01", "until": "2025-12-31"}},
        )
    )
    reviews = json.loads(got["messages"][1]["content"]["resource"]["text"])["reviews"]
    assert [r["date"] for r in reviews] == ["2025-12-31", "2025-11-02"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"since": "2026-02-30"},
        {"until": "yesterday"},
        {"since": "2026-02-01", "until": "2026-01-01"},
        {"since": 20260101},
        {"period": "march"},
    ],
)
def test_digest_refuses_bad_arguments(server, session, arguments):
    assert_error(
        call(server, session, "prompts/get", {"name": "review_digest", "arguments": arguments}),
        ErrorCode.INVALID_PARAMS,
        1,
    )


def test_reply_draft_embeds_the_review(server, session):
    review_id = result(complete(server, session, prompt_ref("reply_draft"), "review_id", ""))["completion"][
        "values"
    ][0]
    got = result(
        call(server, session, "prompts/get", {"name": "reply_draft", "arguments": {"review_id": review_id}})
    )
    resource = got["messages"][0]["content"]["resource"]
    assert resource["uri"] == f"{BASE}/api/reviews/{review_id}"
    review = json.loads(resource["text"])
    assert review["rating"] == 2 and review["owner_reply"] is None
    assert "2-star review" in got["messages"][1]["content"]["text"]


@pytest.mark.parametrize(
    "params",
    [
        {"name": "reply_draft"},
        {"name": "reply_draft", "arguments": {"review_id": " "}},
        {"name": "reply_draft", "arguments": {"review_id": "01NOSUCHREVIEW"}},
        {"name": "practitioner_review", "arguments": {"name": "Dr. Nobody"}},
        {"name": "practitioner_review", "arguments": {"name": "Dr."}},  # several match: ask again
        {"name": "aspect_review", "arguments": {"aspect": "wait time", "sentiment": "happy"}},
        {"name": "nope"},
        {},
        {"name": "service_review", "arguments": ["massage"]},
    ],
)
def test_prompt_errors_are_invalid_params(server, session, params):
    assert_error(call(server, session, "prompts/get", params), ErrorCode.INVALID_PARAMS, 1)


@pytest.mark.parametrize(
    "name, arguments, expected",
    [
        ("practitioner_review", {"name": "SOFIA ramirez"}, "Dr. Sofía Ramírez"),
        ("service_review", {"service": "massage-therapy"}, "Massage therapy"),
        ("aspect_review", {"aspect": "Wait Time", "sentiment": "negative"}, "Wait time"),
    ],
)
def test_entity_prompts_embed_the_tool_result(server, session, name, arguments, expected):
    got = result(call(server, session, "prompts/get", {"name": name, "arguments": arguments}))
    assert expected in got["messages"][0]["content"]["text"]
    data = json.loads(got["messages"][1]["content"]["text"].removeprefix("Data (JSON):\n"))
    assert data["returned"] == len(data["reviews"])


# --------------------------------------------------------------------------- completion


@pytest.mark.parametrize(
    "prompt, argument, value, expected",
    [
        ("practitioner_review", "name", "dr. s", ["Dr. Sofía Ramírez"]),
        (
            "practitioner_review",
            "name",
            "RAMI",
            ["Dr. Sofía Ramírez"],
        ),  # a word of the name, accent-insensitive
        ("practitioner_review", "name", "dr-maya", ["Dr. Maya Patel"]),  # the id
        ("practitioner_review", "name", "atel", []),  # a prefix, not a substring
        ("service_review", "service", "massage", ["Massage therapy"]),
        ("aspect_review", "aspect", "WAIT", ["Wait time"]),
        ("aspect_review", "sentiment", "ne", ["neutral", "negative"]),
        ("review_digest", "since", "2026", []),  # a date names nothing in the data
    ],
)
def test_completion_of_prompt_arguments(server, session, prompt, argument, value, expected):
    completion = result(complete(server, session, prompt_ref(prompt), argument, value))["completion"]
    assert completion == {"values": expected, "total": len(expected), "hasMore": False}


def test_reply_completion_offers_unanswered_low_rated_reviews_newest_first(server, session):
    values = result(complete(server, session, prompt_ref("reply_draft"), "review_id", ""))["completion"][
        "values"
    ]
    everything = result(complete(server, session, TEMPLATE, "id", ""))["completion"]["values"]
    newest_first = sorted(SPECS, key=lambda s: s.date, reverse=True)  # dates are distinct: the id order
    assert values == [everything[i] for i, s in enumerate(newest_first) if s.rating <= 3 and not s.reply]
    assert len(values) == 3


def test_template_id_completion_is_a_case_insensitive_prefix(server, session):
    everything = result(complete(server, session, TEMPLATE, "id", ""))["completion"]["values"]
    assert len(everything) == len(SPECS)
    target = everything[2]
    values = result(complete(server, session, TEMPLATE, "id", target[:20].lower()))["completion"]["values"]
    assert values == [target]


@pytest.mark.parametrize(
    "ref, argument",
    [
        (prompt_ref("nope"), "name"),
        (prompt_ref("practitioner_review"), "service"),
        ({"type": "ref/resource", "uri": BASE + "/other/{id}"}, "id"),
        (TEMPLATE, "name"),
        ({"type": "ref/tool", "name": "get_review"}, "id"),
        ("practitioner_review", "name"),
        ({"type": "ref/prompt", "name": ["x"]}, "name"),
        ({"type": "ref/prompt", "name": {"a": 1}}, "name"),
        ({"type": "ref/resource", "uri": ["x"]}, "id"),
    ],
)
def test_completion_errors_are_invalid_params(server, session, ref, argument):
    assert_error(complete(server, session, ref, argument, ""), ErrorCode.INVALID_PARAMS, 1)


def test_at_most_100_values_with_total_and_has_more(tmp_path):
    data = tmp_path / "many"
    write_docs(
        data,
        *make_docs(
            [Spec(rating=1 + i % 5, date=f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}") for i in range(150)]
        ),
    )
    config = reviewsd.Config(
        data_dir=str(data), state_dir=str(tmp_path / "state"), reload_interval=0, base_url=BASE, hub=False
    )
    server = reviewsd.create_app(config).mcp.server
    completion = result(complete(server, Session(protocol_version="2026-07-28"), TEMPLATE, "id", ""))[
        "completion"
    ]
    assert len(completion["values"]) == 100 and completion["total"] == 150 and completion["hasMore"] is True


def reference_matches(prefix: str, names: list[str]) -> bool:
    """Plain rule: the folded prefix starts one of the folded names (not empty ones) at its start or after a
    space."""
    p = fold_name(prefix)
    return any(
        f[i:].startswith(p)
        for f in (fold_name(n) for n in names if n)
        for i in range(len(f) + 1)
        if i == 0 or f[i - 1] == " "
    )


NAME_TEXT = st.text(alphabet="aeioAEIOéÉíñ -.", max_size=12)


@given(prefix=NAME_TEXT, names=st.lists(NAME_TEXT, min_size=1, max_size=3))
@example(prefix="sofia ra", names=["Dr. Sofía Ramírez"])
@example(prefix="", names=["x"])
@example(prefix=" - ", names=["a b"])
def test_completion_matches_the_plain_rule(prefix, names):
    folded = [
        fold_name(n) for n in names if n
    ]  # as the Dataset folds a record's names (dataset.folded_names)
    assert mcp_prompts.complete_names(prefix, [("v", folded)]) == (
        ["v"] if reference_matches(prefix, names) else []
    )


# --------------------------------------------------------------------------- header values (2026-07-28)


@pytest.mark.parametrize(
    "raw, decoded",
    [
        ("get_review", "get_review"),
        ("=?base64?Y2Fmw6k=?=", "caf\u00e9"),
        ("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),  # the sentinel itself, encoded
        ("=?base64?IHBhZGRlZCA=?=", " padded "),
        ("=?BASE64?Y2Fmw6k=?=", "=?BASE64?Y2Fmw6k=?="),  # the markers are case-sensitive: a plain value
        ("=?base64?not base64?=", None),
        ("=?base64?/w==?=", None),  # not base64; not UTF-8
        ("caf\u00c3\u00a9", None),
        ("a\x00b", None),  # raw non-ASCII bytes (as latin-1) or control characters
    ],
)
def test_decode_header(raw, decoded):
    assert mcp_http.decode_header(raw) == decoded


def test_modern_result_splices_pre_encoded_results():
    from reviewsd_app.mcp_rpc import EncodedJson

    info = {"name": "reviewsd", "title": "Caf\u00e9: reviews", "version": "1"}
    info_json = json.dumps(info).encode()
    spliced = mcp_http.modern_result("tools/call", EncodedJson(b'{"isError":false}'), info, info_json)
    meta = {"io.modelcontextprotocol/serverInfo": info}
    assert json.loads(spliced) == {"resultType": "complete", "_meta": meta, "isError": False}
    assert json.loads(mcp_http.modern_result("x", EncodedJson(b"{}"), info, info_json))["_meta"] == meta
    listed = mcp_http.modern_result("tools/list", {"tools": []}, info, info_json)
    assert listed["_meta"] == meta
    assert listed["ttlMs"] == mcp_http.STATIC_TTL_MS and listed["cacheScope"] == "public"


def test_tools_and_prompts_call_people_what_the_trade_does(mcp_data_dir: Path, tmp_path: Path):
    """insights.json's people_label (a restaurant's "Staff") is the word in tool and prompt texts; the API
    names stay as the spec has them."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    reviews_doc = json.loads((mcp_data_dir / "reviews.json").read_text("utf-8"))
    insights_doc = json.loads((mcp_data_dir / "insights.json").read_text("utf-8"))
    insights_doc["people_label"] = "Staff"
    write_docs(data_dir, reviews_doc, insights_doc)
    server = server_for(data_dir, tmp_path / "state")
    state = Session(protocol_version="2026-07-28")
    tools = {t["name"]: t for t in result(call(server, state, "tools/list"))["tools"]}
    prompts = {p["name"]: p for p in result(call(server, state, "prompts/list"))["prompts"]}
    assert tools["get_technician"]["title"] == "One staff member"
    assert "a staff member, as the insights name them" in tools["get_technician"]["description"]
    assert prompts["practitioner_review"]["title"] == "Staff member review"
    assert "staff and services mentioned" in prompts["review_digest"]["description"]
    words = [(t["title"], t["description"]) for t in tools.values()]
    words += [(p["title"], p["description"], p["arguments"]) for p in prompts.values()]
    assert "ractitioner" not in json.dumps(words)
    default = {
        t["name"]: t for t in result(call(server_for(mcp_data_dir, tmp_path), state, "tools/list"))["tools"]
    }
    assert default["get_technician"]["title"] == "One practitioner"
