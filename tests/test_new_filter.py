"""A new search filter is a schema entry and a row of reviews/search.FILTERS (+ an index): shown by making
one in a copy of the package and using it as clients do, over HTTP, the /reviews form, MCP and OpenAPI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

# Not product: what the copy leaves out.
LEFT_OUT = (
    ".git",
    ".venv",
    "tests",
    "bench",
    "corpus",
    "docs",
    "tools",
    "state",
    "node_modules",
    "__pycache__",
)

# The two filters the copy gains: `answered`, a flag (the per-review column `replied`), and `platform`, an
# index (the column `sources`, with the one line of Dataset that names its index).
SCHEMA_ENTRIES = {
    "answered": {
        "description": "Only reviews the owner answered (true) or did not (false).",
        "type": "boolean",
    },
    "platform": {
        "description": "Only reviews published on this platform.",
        "type": "string",
        "pattern": "^[a-z0-9][a-z0-9_-]{0,39}$",
    },
}
ROWS = """\
    Filter(
        "answered",
        "Answered",
        "select",
        "flag",
        "answered",
        (("true", "Yes"), ("false", "No")),
        column="replied",
    ),
    Filter("platform", "Platform", "text", "index", "platform", column="sources"),
"""
INDEX_AFTER = "        self.positions_by_source: Mapping[str, list[int]] = _grouped(self.sources, numbers)\n"
INDEX = "        self.positions_by_platform = self.positions_by_source\n"

# Run in the copy (package `reviewsd_copy`): what a client of each interface sees, printed as JSON.
CLIENT = """
import json, sys
from werkzeug.test import Client
from reviewsd_copy import reviewsd
from reviewsd_copy.mcpserver import protocol
from reviewsd_copy.mcpserver.sessions import Session
from reviewsd_copy.reviews.search import SearchParams

data_dir, state_dir = sys.argv[1:3]
app = reviewsd.create_app(
    reviewsd.Config(data_dir=data_dir, state_dir=state_dir, reload_interval=0, hub=False)
)
client = Client(app)

def search(query):
    answer = client.get("/api/reviews/search?" + query)
    return answer.status_code, answer.get_json()

def mcp(method, params, session):
    message = protocol.classify(protocol.parse(json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()))
    return json.loads(protocol.encode_response(app.mcp.server.handle(session, message)))

session = Session()
hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
mcp("initialize", hello, session)
tool = mcp("tools/call", {"name": "search_reviews", "arguments": {"answered": True, "limit": 3}}, session)
tools = mcp("tools/list", {}, session)["result"]["tools"]
first = search("answered=true&limit=3")[1]
openapi = client.get("/.well-known/openapi.json").get_json()
print(json.dumps({
    "fields": {name: str(kind) for name, kind in SearchParams.__annotations__.items()},
    "answered": first,
    "has_reply": search("has_reply=true&limit=3")[1],
    "unanswered": search("answered=false&limit=1")[1],
    "next": search("answered=true&limit=3&cursor=" + first["next_cursor"]),
    "has_reply_next": search("has_reply=true&limit=3&cursor=" + first["next_cursor"]),
    "wrong_value": search("answered=false&limit=3&cursor=" + first["next_cursor"]),
    "bad": search("answered=maybe"),
    "platform": search("platform=yelp&limit=100"),
    "source": search("source=yelp&limit=100"),
    "both": search("platform=yelp&answered=true&limit=100"),
    "mcp": tool["result"]["structuredContent"],
    "mcp_schema": [t["inputSchema"] for t in tools if t["name"] == "search_reviews"][0]["properties"],
    "form": client.get("/reviews?answered=true").get_data(as_text=True),
    "openapi": json.dumps(openapi),
}))
"""


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What the clients saw of a copy of the package with the two filters added."""
    base = tmp_path_factory.mktemp("new-filter")
    copy = base / "reviewsd_copy"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(*LEFT_OUT))
    schema_path = copy / "schemas" / "search-params.schema.json"
    schema = json.loads(schema_path.read_text("utf-8"))
    schema["properties"].update(SCHEMA_ENTRIES)
    schema_path.write_text(json.dumps(schema, indent=2), "utf-8")
    search = copy / "reviews" / "search.py"
    text = search.read_text("utf-8")
    assert text.count("\n)\nFILTER_NAMES = ") == 1
    search.write_text(text.replace("\n)\nFILTER_NAMES = ", "\n" + ROWS + ")\nFILTER_NAMES = "), "utf-8")
    dataset = copy / "reviews" / "dataset.py"
    text = dataset.read_text("utf-8")
    assert text.count(INDEX_AFTER) == 1
    dataset.write_text(text.replace(INDEX_AFTER, INDEX_AFTER + INDEX), "utf-8")
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, str(ROOT / "data"), str(base / "state")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=base,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def ids(answer: dict) -> list[str]:
    return [review["id"] for review in answer["reviews"]]


def test_the_params_gain_typed_fields(seen: dict) -> None:
    assert seen["fields"]["answered"] == "bool | None" and seen["fields"]["platform"] == "str | None"
    assert list(seen["fields"])[-5:] == ["answered", "platform", "sort", "limit", "after"]


def test_a_flag_filter_searches_pages_and_refuses(seen: dict) -> None:
    answered, has_reply = seen["answered"], seen["has_reply"]
    assert answered["matched"] == has_reply["matched"] == 105  # the sample's replied reviews
    assert ids(answered) == ids(has_reply) and answered["returned"] == 3
    assert seen["unanswered"]["matched"] == 320 - 105
    status, following = seen["next"]
    assert status == 200 and following["matched"] == 105 and not set(ids(following)) & set(ids(answered))
    for refused in ("has_reply_next", "wrong_value"):  # the cursor's digest holds the new filter's value
        status, answer = seen[refused]
        assert status == 400 and [i["code"] for i in answer["issues"]] == ["cursor_mismatch"], refused
    status, answer = seen["bad"]
    assert status == 400 and answer["issues"][0]["path"] == ["answered"]
    assert answer["issues"][0]["message"] == "answered must be true or false, got 'maybe'"


def test_an_index_filter_searches(seen: dict) -> None:
    (status, platform), (_, source) = seen["platform"], seen["source"]
    assert status == 200 and platform["matched"] == 66 and ids(platform) == ids(source)
    status, both = seen["both"]
    assert status == 200 and 0 < both["matched"] < 66
    assert all(review["source"] == "yelp" and review["owner_reply"] for review in both["reviews"])


def test_the_mcp_tool_form_and_openapi_have_it(seen: dict) -> None:
    assert ids(seen["mcp"]) == ids(seen["answered"])  # the same function as HTTP
    assert seen["mcp_schema"]["answered"]["type"] == "boolean" and "platform" in seen["mcp_schema"]
    assert 'name="answered"' in seen["form"] and 'name="platform"' in seen["form"]
    assert '"name": "answered"' in seen["openapi"] and '"name": "platform"' in seen["openapi"]
