"""End to end with the official MCP TypeScript SDK (npm @modelcontextprotocol/sdk, pinned by
tests/ts-client/package-lock.json) against a real server on 127.0.0.1: search and fetch, paging to the
end in every sort and through get_reviews_since, results within 50,000 characters.

The first run installs the client with `npm ci --prefix tests/ts-client` (the npm registry, like pip's
for the Python packages); without Node.js or npm, or when that install fails, the test fails and says why.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest
from support.node import node_script

pytestmark = pytest.mark.slow  # the official TypeScript SDK under Node.js (npm ci on first run)

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "tests" / "ts-client"


def node_client() -> list[str]:
    return node_script(CLIENT, "@modelcontextprotocol/sdk", "client.mjs")


@pytest.fixture
def base_url(live_server_factory, tmp_path) -> str:
    server = live_server_factory(
        "--data-dir",
        str(ROOT / "data"),
        "--state-dir",
        str(tmp_path / "state"),
        "--reload-interval",
        "0",
        "--no-hub",
    )
    return server.base_url


def test_typescript_sdk_client_end_to_end(base_url):
    command = node_client()
    done = subprocess.run([*command, base_url + "/mcp"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["protocolVersion"] == "2025-11-25" and out["server"]["name"] == "reviewsd"
    assert {"search", "fetch", "search_reviews", "get_reviews_since"} <= set(out["tools"])

    with urllib.request.urlopen(base_url + "/reviews.json", timeout=10) as response:
        reviews = json.loads(response.read())["reviews"]
    newest = [r for r in sorted(reviews, key=lambda r: (r["date"], r["id"]), reverse=True)]
    expected = {
        "newest": newest,
        "oldest": newest[::-1],
        "highest": sorted(newest, key=lambda r: -r["rating"]),
        "lowest": sorted(newest, key=lambda r: r["rating"]),
    }
    for sort, ids in out["pages"].items():  # every review once, in the sort's order
        assert ids == [r["id"] for r in expected[sort]], sort
    assert out["since"] == [r["id"] for r in newest]
    assert out["largest"] < 50_000

    assert out["search"] and out["links"] == [f"{base_url}/api/reviews/{r['id']}" for r in out["search"]]
    for result, fetched in zip(out["search"], out["fetched"]):
        assert fetched["id"] == result["id"] and fetched["metadata"]["source"] == "google"
        with urllib.request.urlopen(fetched["url"], timeout=10) as response:
            assert response.status == 200
