"""The owner's three questions, asked through the official MCP Python SDK of a real server on the bundled
data, each in one or two tool calls; every figure checked against counts made here from the data files."""

from __future__ import annotations

import calendar
import json
from collections import Counter
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
REVIEWS = json.loads((ROOT / "data" / "reviews.json").read_text())["reviews"]
INSIGHTS = json.loads((ROOT / "data" / "insights.json").read_text())
PER_REVIEW = INSIGHTS["per_review"]


def run(main: Any) -> Any:
    async def bounded() -> Any:
        with anyio.fail_after(60):
            return await main()

    return anyio.run(bounded)


def months_ago(today: date, months: int) -> str:
    year, month = divmod(today.year * 12 + today.month - 1 - months, 12)
    return date(year, month + 1, min(today.day, calendar.monthrange(year, month + 1)[1])).isoformat()


def ask(base_url: str, calls: list[tuple[str, dict]]) -> list[Any]:
    async def main() -> list[Any]:
        async with httpx2.AsyncClient(timeout=30) as http:
            async with streamable_http_client(base_url + "/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return [await session.call_tool(name, args) for name, args in calls]

    return run(main)


@pytest.mark.slow  # a live server and the official SDK
def test_the_owners_three_questions(live_server_factory, tmp_path: Path) -> None:
    server = live_server_factory(
        "--data-dir", str(ROOT / "data"), "--state-dir", str(tmp_path / "state"), "--no-hub"
    )
    newest = max(r["date"] for r in REVIEWS)
    since = months_ago(date.fromisoformat(newest), 3)  # the data's last 3 months
    in_range = [r for r in REVIEWS if r["date"] >= since]
    negative = Counter(
        a["id"] for r in in_range for a in PER_REVIEW[r["id"]]["aspects"] if a["sentiment"] == "negative"
    )
    worst, worst_count = negative.most_common(1)[0]
    complaints = [
        r
        for r in in_range
        if r["rating"] <= 2
        and any(a == {"id": worst, "sentiment": "negative"} for a in PER_REVIEW[r["id"]]["aspects"])
    ]
    patel = [r for r in in_range if "dr-maya-patel" in PER_REVIEW[r["id"]]["technicians"]]
    unanswered_low = [r for r in REVIEWS if r["rating"] <= 2 and r["owner_reply"] is None]

    summary, search, technician, unanswered = ask(
        server.base_url,
        [
            # 1. "What do people complain about most in the last 3 months?": the figures, then the reviews
            ("get_insights_summary", {"since": since}),
            (
                "search_reviews",
                {"aspect": worst, "aspect_sentiment": "negative", "max_rating": 2, "since": since},
            ),
            # 2. "What do people say about Dr. Patel (lately)?"
            ("get_technician", {"name": "Patel", "since": since}),
            # 3. "Unanswered low ratings"
            ("search_reviews", {"max_rating": 2, "has_reply": False, "limit": 100}),
        ],
    )
    for result in (summary, search, technician, unanswered):
        assert result.is_error is False, result.content[0].text

    period = summary.structured_content["period"]
    assert period["review_count"] == len(in_range)
    assert period["rating_counts"] == {str(s): sum(r["rating"] == s for r in in_range) for s in range(1, 6)}
    most_criticised = max(period["aspects"], key=lambda a: (a.get("negative_count", 0), a["id"] == worst))
    assert (most_criticised["id"], most_criticised["negative_count"]) == (worst, worst_count)
    mentioned = [r["id"] for r in in_range if any(a["id"] == worst for a in PER_REVIEW[r["id"]]["aspects"])]
    assert set(most_criticised["review_ids"]) <= set(mentioned)
    assert most_criticised["mention_count"] == len(mentioned)

    found = search.structured_content
    assert found["matched"] == len(complaints)
    assert {r["id"] for r in found["reviews"]} == {r["id"] for r in complaints[: found["returned"]]}

    figures = technician.structured_content["period"]
    assert figures["mention_count"] == technician.structured_content["matched"] == len(patel)
    assert figures["average_rating"] == round(sum(r["rating"] for r in patel) / len(patel), 2)
    assert all(r["date"] >= since for r in technician.structured_content["reviews"])

    assert unanswered.structured_content["matched"] == len(unanswered_low)
    assert all(
        r["rating"] <= 2 and r["owner_reply"] is None for r in unanswered.structured_content["reviews"]
    )


@pytest.mark.slow  # a live server and the official SDK
def test_a_sentence_of_complaint_finds_the_negative_reviews_of_the_period(live_server_factory, tmp_path):
    """ChatGPT's `search` with the owner's sentence: reviews of the last 3 months with negative mentions."""
    server = live_server_factory(
        "--data-dir", str(ROOT / "data"), "--state-dir", str(tmp_path / "state"), "--no-hub"
    )
    (result,) = ask(
        server.base_url, [("search", {"query": "What do people complain about in the last 3 months?"})]
    )
    assert result.is_error is False
    results = result.structured_content["results"]
    today = datetime.now(timezone.utc).date()
    since = months_ago(today, 3)
    dated = {r["id"]: r["date"] for r in REVIEWS}
    expected = [
        r
        for r in REVIEWS
        if r["date"] >= since and any(a["sentiment"] == "negative" for a in PER_REVIEW[r["id"]]["aspects"])
    ]
    assert len(results) == min(20, len(expected))  # today: 20 (the bundled data ends in November 2026)
    for found in results:
        assert found["id"] in {r["id"] for r in expected} and dated[found["id"]] >= since


def test_compare_periods_counts_each_quarter_from_the_data() -> None:
    """This quarter against the last: counts, averages, moved aspects' figures, made here from the files."""
    from reviewsd_app.mcpserver.tools import run_tool
    from reviewsd_app.reviews.dataset import load_dataset

    output = run_tool("compare_periods", load_dataset(ROOT / "data"), {"until": "2026-11-08"}, "http://x")
    out = json.loads(output.structured)
    current, previous = out["current"], out["previous"]
    assert (current["since"], current["until"]) == ("2026-08-09", "2026-11-08")
    assert (previous["since"], previous["until"]) == ("2026-05-09", "2026-08-08")
    for period in (current, previous):
        dated = [r for r in REVIEWS if period["since"] <= r["date"] <= period["until"]]
        assert period["review_count"] == len(dated)
        assert period["average_rating"] == round(sum(r["rating"] for r in dated) / len(dated), 2)
    assert out["review_count_change"] == current["review_count"] - previous["review_count"]
    assert out["aspects_moved"]
    for moved in out["aspects_moved"]:
        for side, period in (("current", current), ("previous", previous)):
            sentiments = Counter(
                a["sentiment"]
                for r in REVIEWS
                if period["since"] <= r["date"] <= period["until"]
                for a in PER_REVIEW[r["id"]]["aspects"]
                if a["id"] == moved["id"]
            )
            figures = moved[side]
            assert figures["mention_count"] == sum(sentiments.values())
            assert figures["negative_count"] == sentiments["negative"]
        assert moved["score_change"] == round(moved["current"]["score"] - moved["previous"]["score"], 3)
    quoted = {r["id"] for r in out["reviews"]}
    assert quoted == {m["example_review_id"] for m in out["aspects_moved"] if m["example_review_id"]}
