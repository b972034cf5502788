"""One snapshot per answer: an MCP answer read while a reload swaps the store's snapshot is built from the one
it started with (under reloads, 18 of 1,026 answers once carried the new serverInfo over the old reviews)."""

from __future__ import annotations

import json
from pathlib import Path

from factories import write_docs
from test_mcp_rpc import mcp_app, mcp_data_dir, rich_docs  # noqa: F401 (fixtures)
from werkzeug.test import EnvironBuilder

MODERN = "2026-07-28"


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
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
        "Accept": "application/json",
    }
    return EnvironBuilder(
        path="/mcp", method="POST", data=json.dumps(body), content_type="application/json", headers=headers
    ).get_environ()


def test_an_answer_during_a_reload_is_one_version(mcp_app, mcp_data_dir: Path) -> None:  # noqa: F811
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
