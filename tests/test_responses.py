"""The one response seam (web/responses.py): a header of surface.HEADERS for "every" response reaches every
answer, the app's and the HTTP server's own refusals, and the OpenAPI document."""

from __future__ import annotations

import json

import pytest
from werkzeug.test import Client

from reviewsd_app import reviewsd, surface
from reviewsd_app.httpserver import connection
from reviewsd_app.web import responses

PROBE = surface.Header("X-Probe", "on", "every", "A header every response carries (a test's).")


def add_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """PROBE as a row of surface.HEADERS, as the modules that read the table see it."""
    monkeypatch.setattr(surface, "HEADERS", (*surface.HEADERS, PROBE))
    monkeypatch.setattr(responses, "EVERY_RESPONSE", ((PROBE.name, PROBE.value),))


@pytest.fixture
def probed(monkeypatch: pytest.MonkeyPatch, config: reviewsd.Config):
    add_probe(monkeypatch)
    application = reviewsd.create_app(config)
    yield application
    application.hub.stop()


def test_no_common_header_today_leaves_every_answer_as_it_was() -> None:
    headers = [("Content-Type", "text/plain")]
    assert surface.EVERY_RESPONSE == () and responses.with_common_headers(headers) is headers


def test_a_common_header_reaches_every_kind_of_answer(probed: reviewsd.ReviewsApp) -> None:
    client = Client(probed)
    feed = client.get("/api/feed.json")
    answers = {
        "payload": feed,
        "304": client.get("/api/feed.json", headers={"If-None-Match": feed.headers["ETag"]}),
        "search": client.get("/api/reviews/search?rating=5"),
        "since": client.get("/api/reviews/since/2026-10-01"),
        "404": client.get("/nowhere"),
        "400": client.get("/api/reviews/search?rating=9"),
        "405": client.post("/reviews.json"),
        "preflight": client.options("/reviews.json"),
        "healthz": client.get("/healthz"),
        "mcp": client.post("/mcp", data=b"{}", headers={"Content-Type": "application/json"}),
        "hub": client.post("/api/websub/hub", data={"hub.mode": "subscribe"}),
    }
    assert {name: answer.headers.get("X-Probe") for name, answer in answers.items()} == dict.fromkeys(
        answers, "on"
    )
    assert answers["304"].status_code == 304 and answers["hub"].status_code == 400


def test_a_common_header_reaches_the_servers_own_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    add_probe(monkeypatch)
    head, body = connection.error_response(431, "request headers over 32768 bytes").split(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert b"\r\nX-Probe: on\r\n" in head and json.loads(body)["error"] == "request_header_fields_too_large"


def test_the_openapi_document_lists_the_common_headers_on_every_response(
    probed: reviewsd.ReviewsApp,
) -> None:
    document = json.loads(Client(probed).get("/.well-known/openapi.json").data)
    answers = [*document["components"]["responses"].values()]
    for path_item in document["paths"].values():
        for operation in path_item.values():
            answers += operation["responses"].values()
    documented = [answer.get("headers", {}).get("X-Probe") for answer in answers if "$ref" not in answer]
    assert documented and all(
        header == {"description": PROBE.description, "schema": {"type": "string"}} for header in documented
    )


@pytest.mark.parametrize(
    ("status", "line", "error"),
    [(413, "413 Content Too Large", "body_too_large"), (414, "414 URI Too Long", "uri_too_long")],
)
def test_one_status_line_and_error_code_for_the_app_and_the_server(
    status: int, line: str, error: str
) -> None:
    assert responses.status_line(status) == line
    assert responses.error_code(status, responses.reason_phrase(status)) == error
    assert connection.error_response(status, "x").startswith(f"HTTP/1.1 {line}\r\n".encode())
