"""The MCP server in-process: its data (a fixture), JSON-RPC messages to it, and what an answer must be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reviewsd_app.mcpserver import protocol
from support.factories import Spec, make_docs, write_docs

BASE = "https://reviews.example.com"


TOOL_NAMES = [
    "get_business",
    "search_reviews",
    "get_review",
    "get_reviews_since",
    "get_aspect_sentiment",
    "get_technician",
    "get_service",
    "get_rating_trend",
    "get_insights_summary",
    "search",
    "fetch",
]


SPECS = [
    Spec(
        rating=5,
        date="2026-03-01",
        text="Dr. Maya Patel fixed my back. No wait at all.",
        technicians=["dr-maya-patel"],
        services=["spinal-adjustment"],
    ),
    Spec(
        rating=4,
        date="2026-02-01",
        text="Great massage with Liam.",
        technicians=["liam-oconnor"],
        services=["massage-therapy"],
        reply=True,
    ),
    Spec(
        rating=2,
        date="2026-01-15",
        text="Long wait time, but Dr. Sofía Ramírez was kind.",
        technicians=["dr-sofia-ramirez"],
    ),
    Spec(rating=3, date="2025-12-31", text=None),
    Spec(
        rating=5,
        date="2025-11-02",
        text="Prenatal care with Dr. Ramírez was wonderful.",
        technicians=["dr-sofia-ramirez"],
        services=["prenatal-care"],
    ),
    Spec(rating=1, date="2025-10-20", text="Billing mess. Never again."),
]


def rich_docs() -> tuple[dict, dict]:
    """Factory docs with the insights groups the factory leaves empty filled in (still valid)."""
    reviews_doc, insights_doc = make_docs(SPECS)
    ids = [r["id"] for r in reviews_doc["reviews"]]
    insights_doc["temporal"]["monthly"] = [
        {"month": "2025-10", "review_count": 1, "average_rating": 1.0, "sentiment_score": -1.0},
        {"month": "2025-11", "review_count": 1, "average_rating": 5.0, "sentiment_score": 1.0},
        {"month": "2025-12", "review_count": 1, "average_rating": 3.0, "sentiment_score": 0.0},
        {"month": "2026-01", "review_count": 1, "average_rating": 2.0, "sentiment_score": -1.0},
        {"month": "2026-02", "review_count": 1, "average_rating": 4.0, "sentiment_score": 1.0},
        {"month": "2026-03", "review_count": 1, "average_rating": 5.0, "sentiment_score": 1.0},
    ]
    insights_doc["faq"] = [{"question": "Is there a wait?", "answer": "Sometimes.", "review_ids": ids[:2]}]
    insights_doc["pull_quote"] = {"text": "Dr. Maya Patel fixed my back.", "review_id": ids[0]}
    return reviews_doc, insights_doc


@pytest.fixture
def mcp_data_dir(tmp_path: Path) -> Path:
    target = tmp_path / "mcp-data"
    write_docs(target, *rich_docs())
    return target


def initialize_body(version: Any = "2025-06-18") -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }


def dispatch(server, session, body: Any) -> dict | None:
    """One message (bytes, or a value sent as JSON) the way mcpserver/transport.py takes it, its response as a
    client reads it."""
    try:
        message = protocol.classify(
            protocol.parse(body if isinstance(body, bytes) else json.dumps(body).encode())
        )
    except protocol.RpcError as error:
        return protocol.rpc_error(error.request_id, error.code, error.message, error.data)
    response = server.handle(session, message)
    return None if response is None else json.loads(protocol.encode_response(response))


def call(server, session, name: str, arguments: Any = None, request_id: int = 7) -> dict:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return dispatch(
        server, session, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def assert_error(response: dict, code: int, request_id: Any) -> dict:
    assert set(response) == {"jsonrpc", "id", "error"}
    assert response["jsonrpc"] == "2.0" and response["id"] == request_id
    assert response["error"]["code"] == code
    assert isinstance(response["error"]["message"], str) and response["error"]["message"]
    return response["error"]
