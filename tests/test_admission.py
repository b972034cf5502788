"""Issue 39, fair CPU: expensive searches take turns; cheap answers never wait for them."""

from __future__ import annotations

import threading

import pytest
from polling import wait_until
from werkzeug.test import Client

from reviewsd_app import reviewsd
from reviewsd_app.web import admission
from reviewsd_app.web.admission import CostGate, is_expensive


def test_a_text_query_over_many_reviews_is_expensive_and_nothing_else_is() -> None:
    many = admission.EXPENSIVE_FROM_REVIEWS
    assert is_expensive({"query": ["e"]}, many)
    assert not is_expensive({"query": ["e"]}, many - 1)
    assert not is_expensive({"query": [""]}, many)  # the form's empty field: no text filter
    assert not is_expensive({"sort": ["lowest"], "limit": ["100"], "rating": ["1"]}, many * 100)


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


def test_past_the_gate_a_text_search_is_503_with_retry_after_and_cheap_answers_flow(
    app: reviewsd.ReviewsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admission, "EXPENSIVE_FROM_REVIEWS", 1)
    app.gate = CostGate(total=1, per_client=1, wait=0.0)
    client = Client(app)
    assert client.get("/api/reviews/search?query=e").status_code == 200  # its turn ended with it
    assert app.gate.enter("someone else")
    for path in ("/api/reviews/search?query=e", "/reviews?query=e"):
        refused = client.get(path)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
        assert refused.json["error"] == "busy"
    assert client.get("/api/reviews/search?rating=5").status_code == 200
    assert client.get("/reviews?query=").status_code == 200
    assert client.get("/healthz").status_code == 200
    app.gate.leave("someone else")
    assert client.get("/reviews?query=e").status_code == 200
