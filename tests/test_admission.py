"""Issue 39, fair CPU: expensive searches take turns; cheap answers never wait for them."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from polling import wait_until
from werkzeug.test import Client

from reviewsd_app import reviewsd
from reviewsd_app.web import admission
from reviewsd_app.web.admission import CostGate, is_expensive, tool_is_expensive


def test_a_text_query_over_many_reviews_is_expensive_and_nothing_else_is() -> None:
    many = admission.EXPENSIVE_FROM_REVIEWS
    assert is_expensive({"query": "e"}, many)
    assert is_expensive({"q": "great adjustment", "sort": "relevance"}, many)  # ranked words: posting lists
    assert not is_expensive({"query": "e"}, many - 1)
    assert not is_expensive({"query": ""}, many)  # the form's empty field: no text filter
    assert not is_expensive({"sort": "lowest", "limit": 100, "rating": 1}, many * 100)


def test_the_mcp_tools_that_search_are_priced_as_their_search() -> None:
    many = admission.EXPENSIVE_FROM_REVIEWS
    assert tool_is_expensive("search_reviews", {"query": "e", "sort": "lowest"}, many)
    assert tool_is_expensive("search_reviews", {"q": "front desk"}, many)
    assert not tool_is_expensive("search_reviews", {"rating": 1}, many)
    assert tool_is_expensive("search", {"query": "what do people say about billing"}, many)  # ranked
    assert not tool_is_expensive("search", {"query": "billing"}, many - 1)
    assert not tool_is_expensive("get_review", {"id": "x"}, many)
    assert not tool_is_expensive("search_reviews", ["not", "an", "object"], many)


def test_the_gate_counts_turns_in_all_and_by_client() -> None:
    gate = CostGate(total=2, per_client=1, wait=0.0)
    assert gate.enter("a")
    assert not gate.enter("a")  # its one turn is taken
    assert gate.enter("b")
    assert not gate.enter("c")  # two in all
    gate.leave("a")
    assert gate.enter("c") and not gate.enter("a")
    gate.leave("b"), gate.leave("c")
    assert gate.enter("a")


def test_a_waiting_request_takes_the_turn_left() -> None:
    gate = CostGate(total=1, per_client=1, wait=10.0)
    assert gate.enter("a")
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(gate.enter("b")))
    waiter.start()
    assert wait_until(lambda: waiter.is_alive(), 5.0)
    gate.leave("a")
    waiter.join(10.0)
    assert got == [True]


def test_after_an_expensive_request_the_gate_pauses_as_long_as_it_took() -> None:
    now = [100.0]
    gate = CostGate(total=1, per_client=1, wait=0.0, share=0.5, clock=lambda: now[0])
    assert gate.enter("a")
    gate.leave("a", cost=0.2)  # it ran 0.2 s: the next starts 0.2 s later (half of the time)
    now[0] = 100.19
    assert not gate.enter("b")
    now[0] = 100.2
    assert gate.enter("b")
    quarter = CostGate(total=1, per_client=1, wait=0.0, share=0.25, clock=lambda: now[0])
    assert quarter.enter("a")
    quarter.leave("a", cost=0.1)  # a quarter of the time: 0.3 s after it
    now[0] = 100.49
    assert not quarter.enter("a")
    now[0] = 100.5
    assert quarter.enter("a")


def test_the_pause_after_a_long_one_is_at_most_max_pause() -> None:
    now = [100.0]
    gate = CostGate(total=1, per_client=1, wait=0.0, share=1 / 3, clock=lambda: now[0])
    assert gate.enter("a")
    gate.leave("a", cost=6.0)  # a word index built on the first ranked search: not 12 s of refusals
    now[0] = 100.0 + admission.MAX_PAUSE - 0.01
    assert not gate.enter("b")
    now[0] = 100.0 + admission.MAX_PAUSE
    assert gate.enter("b")


def test_a_request_waiting_out_the_pause_gets_its_turn() -> None:
    gate = CostGate(total=1, per_client=1, wait=10.0)
    assert gate.enter("a")
    gate.leave("a", cost=0.05)
    assert gate.enter("b")  # waited about 0.05 s, well within its 10


def test_run_prices_by_the_time_taken_and_refuses_when_busy() -> None:
    gate = CostGate(total=1, per_client=1, wait=0.0)
    assert gate.run("a", lambda: sum(range(2_000_000))) > 0
    with pytest.raises(admission.Busy):  # its pause: twice as long as its sum took (milliseconds)
        gate.run("b", lambda: None)


def test_run_prices_by_the_time_a_request_ran_not_its_cpu_time() -> None:
    """A search waiting for the GIL (behind the feed, or other processes) holds the feed back for as long as
    it runs, not only for its CPU time: priced by its CPU time, searches took over half of a busy machine's
    time (issue 39)."""
    now = [100.0]
    gate = CostGate(total=1, per_client=1, wait=0.0, share=1 / 3, clock=lambda: now[0])

    def waits_for_the_gil() -> None:
        now[0] += 0.3  # 0.3 s go by, hardly any CPU time of its own

    gate.run("a", waits_for_the_gil)
    now[0] = 100.3 + 0.59
    assert not gate.enter("b")  # twice as long as it ran: 0.6 s
    now[0] = 100.3 + 0.6
    assert gate.enter("b")


def test_past_the_gate_a_text_search_is_503_with_retry_after_and_cheap_answers_flow(
    app: reviewsd.ReviewsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admission, "EXPENSIVE_FROM_REVIEWS", 1)
    app.gate = CostGate(total=1, per_client=1, wait=0.0, share=1.0)  # share 1: no pause after a turn
    client = Client(app)
    assert client.get("/api/reviews/search?query=e").status_code == 200  # its turn ended with it
    assert app.gate.enter("someone else")
    for path in ("/api/reviews/search?query=e", "/reviews?query=e", "/api/reviews/search?q=great"):
        refused = client.get(path)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
        assert refused.json["error"] == "busy"
    assert client.get("/api/reviews/search?rating=5").status_code == 200
    assert client.get("/reviews?query=").status_code == 200
    assert client.get("/healthz").status_code == 200
    app.gate.leave("someone else")
    assert client.get("/reviews?query=e").status_code == 200


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def mcp_post(client: Client, message: dict, session: str | None = None) -> Any:
    headers = {**MCP_HEADERS, **({"Mcp-Session-Id": session} if session else {})}
    return client.post("/mcp", data=json.dumps(message), headers=headers)


def test_the_mcp_tools_that_search_go_through_the_same_gate(
    app: reviewsd.ReviewsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admission, "EXPENSIVE_FROM_REVIEWS", 1)
    gate = CostGate(total=1, per_client=1, wait=0.0, share=1.0)
    assert app.mcp is not None
    app.gate = app.mcp.gate = gate
    client = Client(app)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    opened = mcp_post(client, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
    session = opened.headers["Mcp-Session-Id"]

    def call(name: str, arguments: dict) -> Any:
        message = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        return mcp_post(client, message, session)

    assert call("search_reviews", {"query": "e"}).status_code == 200  # its turn ended with it
    assert gate.enter("someone else")
    for name, arguments in (
        ("search_reviews", {"query": "e"}),
        ("search_reviews", {"q": "great"}),
        ("search", {"query": "what do people say about billing"}),
    ):
        refused = call(name, arguments)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
        assert refused.json["id"] == 5 and "try again" in refused.json["error"]["message"]
    answered = call("search_reviews", {"rating": 5})
    assert answered.status_code == 200 and "result" in answered.json
    gate.leave("someone else")
    assert call("search", {"query": "billing"}).status_code == 200
