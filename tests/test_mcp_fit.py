"""MCP results that fit an assistant's context, and the search and fetch tools ChatGPT calls.

Every tool result stays under 50,000 characters (Claude Code saves a larger one to a file): on the bundled
data, on a generated 10,000-review set and on reviews of the longest texts the schema allows. Lists page
with a cursor instead, every review once.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.factories import Spec, make_docs, write_docs
from support.mcp import call, dispatch, initialize_body

from reviewsd_app import reviewsd
from reviewsd_app.mcpserver import tools as mcp_tools
from reviewsd_app.mcpserver.sessions import Session

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from generate_data import generate  # noqa: E402

BASE = "https://reviews.example.com"
LIMIT = 50_000


def app_for(data_dir: Path, tmp_path: Path) -> reviewsd.ReviewsApp:
    config = reviewsd.Config(
        data_dir=str(data_dir), state_dir=str(tmp_path / "state"), reload_interval=0, base_url=BASE, hub=False
    )
    return reviewsd.create_app(config)


@pytest.fixture(scope="module")
def generated_10k(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("generated-10k")
    write_docs(target, *generate(10_000, 7, dt.date(2026, 11, 15), 3.5))
    return target


def largest_calls(dataset: Any) -> list[tuple[str, dict]]:
    """The arguments that ask each tool for the most: the highest limits, every entity, the longest review."""
    longest = max(range(len(dataset.ids)), key=lambda p: len(dataset.review_json(p)))
    oldest = dataset.dates_ascending[0]
    calls = [
        ("get_business", {}),
        ("get_insights_summary", {}),
        ("get_rating_trend", {}),
        ("get_review", {"id": dataset.ids[longest]}),
        ("fetch", {"id": dataset.ids[longest]}),
        ("get_reviews_since", {"since": oldest, "limit": 500}),
        ("search", {"query": ""}),
        ("search", {"query": "5 stars"}),
        *(
            ("search_reviews", {"limit": 100, "sort": sort})
            for sort in ("newest", "oldest", "highest", "lowest")
        ),
        ("search_reviews", {"limit": 100, "has_reply": True}),
    ]
    calls += [("get_technician", {"name": t, "limit": 20}) for t in dataset.technicians]
    calls += [("get_service", {"service": s["id"], "limit": 20}) for s in dataset.business["services"]]
    calls += [
        ("get_aspect_sentiment", {"aspect": a["id"], "limit": 20}) for a in dataset.insights_doc["aspects"]
    ]
    return calls


def assert_fits(result: dict, name: str) -> None:
    """The text block (the structured result as JSON) with the resource links, and the structured result
    itself, each under 50,000 characters."""
    assert result["isError"] is False, (name, result)
    text, *links = result["content"]
    structured = json.dumps(result["structuredContent"], ensure_ascii=False, separators=(",", ":"))
    shown = len(text["text"]) + sum(len(json.dumps(link, ensure_ascii=False)) for link in links)
    assert len(structured) < LIMIT and shown < LIMIT, (name, len(structured), shown)


def session_of(server) -> Session:
    state = Session()
    assert "result" in dispatch(server, state, initialize_body("2025-11-25"))
    return state


@pytest.mark.parametrize("data", ["bundled", "generated 10,000"])
def test_every_tool_result_fits_in_50000_characters(data, generated_10k, tmp_path):
    app = app_for(ROOT / "data" if data == "bundled" else generated_10k, tmp_path)
    server, dataset = app.mcp.server, app.store.current.dataset
    session = session_of(server)
    for name, arguments in largest_calls(dataset):
        assert_fits(call(server, session, name, arguments)["result"], name)


def test_get_reviews_since_pages_through_everything_once(generated_10k, tmp_path):
    """At 500 a page, a page holds what fits; next_cursor lists every review since, once, in order."""
    app = app_for(generated_10k, tmp_path)
    server, dataset = app.mcp.server, app.store.current.dataset
    session = session_of(server)
    since = dataset.date_at(1500)
    arguments: dict[str, Any] = {"since": since, "limit": 500}
    seen: list[str] = []
    while True:
        result = call(server, session, "get_reviews_since", arguments)["result"]
        assert_fits(result, "get_reviews_since")
        page = result["structuredContent"]
        assert page["returned"] == len(page["reviews"]) and (page["returned"] < 500 or page["next_cursor"])
        seen += [review["id"] for review in page["reviews"]]
        if page["next_cursor"] is None:
            break
        arguments["cursor"] = page["next_cursor"]
    expected = [dataset.ids[p] for p in range(*dataset.window(since, None))]
    assert seen == expected and len(seen) > 1500


LONG = "Wait… " + "x" * 19_990  # a text of the schema's longest (20,000 characters)


@pytest.fixture
def long_texts_app(tmp_path) -> reviewsd.ReviewsApp:
    specs = [Spec(rating=1 + i % 5, date=f"2026-01-{1 + i:02d}", text=LONG, reply=True) for i in range(12)]
    reviews_doc, insights_doc = make_docs(specs)
    for review in reviews_doc["reviews"]:
        review["owner_reply"]["text"] = '"' * 20_000  # each quote is two characters in JSON
    write_docs(tmp_path / "data", reviews_doc, insights_doc)
    return app_for(tmp_path / "data", tmp_path)


def test_long_reviews_are_cut_with_a_marker_and_page_on(long_texts_app):
    server, dataset = long_texts_app.mcp.server, long_texts_app.store.current.dataset
    session = session_of(server)
    for name, arguments in largest_calls(dataset):
        assert_fits(call(server, session, name, arguments)["result"], name)
    page = call(server, session, "search_reviews", {"limit": 100})["result"]["structuredContent"]
    assert 0 < page["returned"] < 12 and page["next_cursor"]  # what fits, and the cursor for the rest
    assert all(r["text"].endswith(mcp_tools.TRIM_MARK) for r in page["reviews"])
    rest = call(server, session, "search_reviews", {"limit": 100, "cursor": page["next_cursor"]})["result"]
    assert rest["structuredContent"]["reviews"][0]["id"] == dataset.ids[page["returned"]]
    fetched = call(server, session, "fetch", {"id": dataset.ids[0]})["result"]["structuredContent"]
    assert fetched["text"].startswith("Wait… xxx") and mcp_tools.TRIM_MARK in fetched["text"]


def test_a_2025_03_26_session_gets_no_resource_links(long_texts_app):
    server = long_texts_app.mcp.server
    state = Session()
    dispatch(server, state, initialize_body("2025-03-26"))
    result = call(server, state, "search_reviews", {"limit": 2})["result"]
    assert [block["type"] for block in result["content"]] == ["text"]


# --------------------------------------------------------------------------- search and fetch


@pytest.fixture(scope="module")
def bundled() -> Any:
    from reviewsd_app.reviews.dataset import load_dataset

    return load_dataset(ROOT / "data")


@pytest.mark.parametrize(
    "query, expected",
    [
        ("unanswered 1-star google reviews", {"has_reply": False, "rating": 1, "source": "google"}),
        ("five stars for Patel", {"rating": 5, "mentions_technician": "dr-maya-patel"}),
        ("What do people say about Dr. Maya Patel?", {"mentions_technician": "dr-maya-patel"}),
        ("worst reviews about billing", {"sort": "lowest", "query": "billing"}),
        ("massage", {"mentions_service": "massage-therapy"}),
        ("parking lot", {"query": "parking"}),  # the phrase matches nothing: its longest word
        ("the front desk", {"query": "front desk"}),
        ("", {}),
    ],
)
def test_search_understands_a_free_text_query(bundled, query, expected):
    assert mcp_tools.understood_query(bundled, query) == expected


def test_search_returns_chatgpt_shapes_and_fetch_the_review(long_texts_app):
    server = long_texts_app.mcp.server
    session = session_of(server)
    found = call(server, session, "search", {"query": "1-star"})["result"]["structuredContent"]
    assert found["results"] and all(set(r) == {"id", "title", "url"} for r in found["results"])
    first = found["results"][0]
    assert first["url"] == f"{BASE}/reviews/{first['id']}" and first["title"].startswith("★☆☆☆☆ 1/5 from")
    fetched = call(server, session, "fetch", {"id": first["id"].lower()})["result"]["structuredContent"]
    assert set(fetched) == {"id", "title", "text", "url", "metadata"} and fetched["url"] == first["url"]
    assert fetched["metadata"]["rating"] == 1 and "Reply from the owner" in fetched["text"]
    missing = call(server, session, "fetch", {"id": "nope"})["result"]
    assert missing["isError"] is True and "No review has id 'nope'" in missing["content"][0]["text"]


# --------------------------------------------------------------------------- words of the business


def test_descriptions_and_prompts_use_the_words_of_the_business(tmp_path):
    """A bakery is not told about a clinic, patients or technicians, and no placeholder shows."""
    reviews_doc, insights_doc = make_docs([Spec(rating=2, text="Stale bread.", extra={"author": "Jo B."})])
    reviews_doc["business"].update(name="Crumb & Co", category="Bakery", url="https://crumb.example/")
    write_docs(tmp_path / "data", reviews_doc, insights_doc)
    app = app_for(tmp_path / "data", tmp_path)
    server = app.mcp.server
    state = Session()
    init = dispatch(server, state, initialize_body("2025-11-25"))["result"]
    review_id = app.store.current.dataset.ids[0]
    tools = dispatch(server, state, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
    listed = dispatch(server, state, {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"})["result"][
        "prompts"
    ]
    params = {"name": "reply_draft", "arguments": {"review_id": review_id}}
    got = dispatch(server, state, {"jsonrpc": "2.0", "id": 4, "method": "prompts/get", "params": params})[
        "result"
    ]
    # What the code writes (the data's own words, its reviews' authors say, are the data's)
    seen = [
        init["serverInfo"],
        init["instructions"],
        [tool["description"] for tool in tools],
        [tool["inputSchema"] for tool in tools],
        [prompt["description"] for prompt in listed],
        got["description"],
        [m["content"]["text"] for m in got["messages"] if m["content"]["type"] == "text"],
    ]
    text = json.dumps(seen, ensure_ascii=False)
    assert init["serverInfo"]["title"] == "Crumb & Co: reviews and insights (read-only)"
    assert "Crumb & Co" in json.dumps(seen[2], ensure_ascii=False) and "bakery" in text
    card = json.loads(app.store.current.payloads["/.well-known/mcp/server-card"].identity.body)
    assert card["title"] == init["serverInfo"]["title"] and card["tools"] == tools
    for word in ("clinic", "patient", "{business}", "{category}"):
        assert word not in text.lower(), (word, text[max(0, text.lower().find(word) - 150) :][:220])


def test_search_takes_a_long_query(bundled):
    """The free text may be longer than search's query parameter: what is left is cut to fit it."""
    understood = mcp_tools.understood_query(bundled, "zq" * 240)
    assert understood == {"query": "zq" * 100}


def test_a_page_always_holds_one_review(long_texts_app):
    """Even when one review does not fit beside the rest of a result, it is listed, cut harder: a page of
    none would give back the same cursor, and a client would ask again for ever."""
    dataset = long_texts_app.store.current.dataset
    kept, body = mcp_tools.fitted_reviews(dataset, [0, 1], 3_000, BASE)
    assert kept == [0] and len(body) < 3_000 and json.loads(body)["id"] == dataset.ids[0]
