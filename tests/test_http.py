"""The read API over werkzeug's test client: bodies, headers, conditional GET, errors."""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator
from urllib.parse import quote, urlencode

import pytest
import referencing
import referencing.jsonschema
from conftest import SMALL_SPECS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from support.factories import make_docs, write_docs
from werkzeug.http import http_date, parse_date
from werkzeug.test import Client
from werkzeug.wrappers import Request

from reviewsd_app import reviewsd
from reviewsd_app.web import payloads

STATIC_PATHS = ["/reviews.json", "/insights.json", "/api/feed.json", "/feed.xml", "/.well-known/openapi.json"]
CONDITIONAL_PATHS = STATIC_PATHS + ["/api/reviews/since/2025-01-01"]
CONTENT_TYPES = {
    "/reviews.json": "application/json; charset=utf-8",
    "/insights.json": "application/json; charset=utf-8",
    "/api/feed.json": "application/feed+json; charset=utf-8",
    "/feed.xml": "application/atom+xml; charset=utf-8",
    "/.well-known/openapi.json": "application/json; charset=utf-8",
    "/api/reviews/since/2025-01-01": "application/json; charset=utf-8",
}
TOPICS = ["/reviews.json", "/api/feed.json", "/feed.xml"]


@pytest.fixture
def config(config: reviewsd.Config) -> reviewsd.Config:
    """The shared config without the hub: most tests here read (the hub's SQLite store and TLS context
    cost 60 of the 80 ms of each app); those about the hub ask for `hub_app`."""
    return dataclasses.replace(config, hub=False)


@pytest.fixture
def hub_app(config: reviewsd.Config) -> Iterator[reviewsd.ReviewsApp]:
    application = reviewsd.create_app(dataclasses.replace(config, hub=True))
    yield application
    application.hub.stop()


@pytest.fixture
def openapi(client: Client) -> dict:
    return client.get("/.well-known/openapi.json").get_json()


def contract_validator(openapi: dict, component: str) -> Draft202012Validator:
    """A validator for one component of the served OpenAPI document, refs resolved inside it."""
    resource = referencing.jsonschema.DRAFT202012.create_resource(openapi)
    registry = referencing.Registry().with_resource("urn:openapi", resource)
    return Draft202012Validator(
        {"$ref": f"urn:openapi#/components/schemas/{component}"},
        registry=registry,
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def assert_valid(openapi: dict, component: str, document: Any) -> None:
    errors = list(contract_validator(openapi, component).iter_errors(document))
    assert not errors, [e.message for e in errors[:5]]


# ---------------------------------------------------------------- bodies and types


@pytest.mark.parametrize("path", CONDITIONAL_PATHS)
def test_every_read_endpoint_answers_with_its_content_type(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == CONTENT_TYPES[path]
    assert response.headers["Cache-Control"] == "public, max-age=60"
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert response.headers["Content-Length"] == str(len(response.data))
    etag = response.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and not etag.startswith("W/")


def test_datasets_validate_against_the_contract(client: Client, openapi: dict) -> None:
    assert_valid(openapi, "ReviewsDocument", client.get("/reviews.json").get_json())
    assert_valid(openapi, "InsightsDocument", client.get("/insights.json").get_json())


def test_reviews_are_served_newest_first(client: Client) -> None:
    reviews = client.get("/reviews.json").get_json()["reviews"]
    keys = [(r["date"], r["id"]) for r in reviews]
    assert keys == sorted(keys, reverse=True)


@pytest.mark.parametrize(
    "path",
    ["/reviews.json", "/insights.json", "/api/feed.json", "/feed.xml", "/api/reviews/since/2025-01-01"],
)
def test_last_modified_is_the_data_generation_time(client: Client, app, path: str) -> None:
    dataset = app.store.current.dataset
    stamp = (dataset.insights_doc if path == "/insights.json" else dataset.reviews_doc)["generated_at"]
    assert parse_date(client.get(path).headers["Last-Modified"]) == parse_date(
        http_date(parse_date_iso(stamp))
    )


def test_a_generation_time_in_the_future_is_served_as_the_load_time(tmp_path) -> None:
    write_docs(tmp_path / "data", *make_docs(SMALL_SPECS, generated_at="2999-01-01T00:00:00Z"))
    before = datetime.now(timezone.utc).replace(microsecond=0)
    app = reviewsd.create_app(
        reviewsd.Config(
            data_dir=str(tmp_path / "data"), state_dir=str(tmp_path / "state"), reload_interval=0, hub=False
        )
    )
    after = datetime.now(timezone.utc)
    for path in ("/reviews.json", "/insights.json", "/api/feed.json", "/feed.xml"):
        assert before <= parse_date(Client(app).get(path).headers["Last-Modified"]) <= after, path


def parse_date_iso(value: str):
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.mark.parametrize("path", TOPICS)
def test_topics_carry_websub_discovery_links(client: Client, path: str) -> None:
    link = client.get(path).headers["Link"]
    assert link == (
        f'<https://reviews.example.com/api/websub/hub>; rel="hub", '
        f'<https://reviews.example.com{path}>; rel="self"'
    )


def test_insights_are_not_a_topic(client: Client) -> None:
    assert "Link" not in client.get("/insights.json").headers


# ---------------------------------------------------------------- conditional GET


@pytest.mark.parametrize("path", CONDITIONAL_PATHS)
def test_matching_etag_gives_304_with_validators_and_no_body(client: Client, path: str) -> None:
    first = client.get(path)
    response = client.get(path, headers={"If-None-Match": first.headers["ETag"]})
    assert response.status_code == 304
    assert response.data == b""
    for header in ("ETag", "Cache-Control", "Vary"):
        assert response.headers[header] == first.headers[header]
    assert "Content-Length" not in response.headers or response.headers["Content-Length"] == "0"


@pytest.mark.parametrize(
    "if_none_match, status",
    [
        ('"nope"', 200),
        ("*", 304),
        ('"nope", {etag}', 304),
        ("W/{etag}", 304),  # weak comparison for If-None-Match
        ('"{bare}-gzip"', 200),  # the gzip representation's tag does not validate the identity one
    ],
)
def test_if_none_match_forms(client: Client, if_none_match: str, status: int) -> None:
    etag = client.get("/reviews.json").headers["ETag"]
    value = if_none_match.format(etag=etag, bare=etag.strip('"'))
    assert client.get("/reviews.json", headers={"If-None-Match": value}).status_code == status


def test_if_modified_since(client: Client) -> None:
    modified = parse_date(client.get("/reviews.json").headers["Last-Modified"])
    later, earlier = http_date(modified + timedelta(hours=1)), http_date(modified - timedelta(seconds=1))
    assert client.get("/reviews.json", headers={"If-Modified-Since": http_date(modified)}).status_code == 304
    assert client.get("/reviews.json", headers={"If-Modified-Since": later}).status_code == 304
    assert client.get("/reviews.json", headers={"If-Modified-Since": earlier}).status_code == 200
    assert client.get("/reviews.json", headers={"If-Modified-Since": "garbage"}).status_code == 200


def test_if_none_match_wins_over_if_modified_since(client: Client) -> None:
    modified = client.get("/reviews.json").headers["Last-Modified"]
    response = client.get(
        "/reviews.json", headers={"If-None-Match": '"other"', "If-Modified-Since": modified}
    )
    assert response.status_code == 200


# ---------------------------------------------------------------- gzip, HEAD, CORS


@pytest.mark.parametrize("path", STATIC_PATHS)
def test_gzip_is_a_distinct_representation(client: Client, path: str) -> None:
    plain = client.get(path)
    zipped = client.get(path, headers={"Accept-Encoding": "gzip, deflate"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert zipped.headers["Vary"] == "Accept-Encoding" == plain.headers["Vary"]
    assert gzip.decompress(zipped.data) == plain.data
    assert zipped.headers["ETag"] != plain.headers["ETag"]
    again = client.get(path, headers={"Accept-Encoding": "gzip", "If-None-Match": zipped.headers["ETag"]})
    assert again.status_code == 304 and again.headers["ETag"] == zipped.headers["ETag"]


@pytest.mark.parametrize("query", ["", "?limit=7", "?limit=100"])
@pytest.mark.parametrize("date", ["2000-01-01", "2025-01-01", "2026-11-20", "2099-01-01"])
def test_a_since_answer_is_gzip_when_asked(client: Client, date: str, query: str) -> None:
    path = f"/api/reviews/since/{date}{query}"
    plain = client.get(path)
    zipped = client.get(path, headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip" and "Content-Encoding" not in plain.headers
    assert gzip.decompress(zipped.data) == plain.data
    assert zipped.headers["Vary"] == "Accept-Encoding" == plain.headers["Vary"]
    assert int(zipped.headers["Content-Length"]) == len(zipped.data)
    assert zipped.headers["ETag"] == plain.headers["ETag"][:-1] + '-gzip"'
    again = client.get(path, headers={"Accept-Encoding": "gzip", "If-None-Match": zipped.headers["ETag"]})
    assert again.status_code == 304 and again.headers["ETag"] == zipped.headers["ETag"]
    if date == "2000-01-01" and not query:  # every review: most of it the shared compressed stream
        assert len(zipped.data) < len(plain.data) / 3


@pytest.mark.parametrize("path", STATIC_PATHS)
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_trailing_slash_names_the_same_payload(client: Client, path: str, method: str) -> None:
    # The Map matches it (strict_slashes=False), so OPTIONS offers GET there: GET must answer too.
    plain, slashed = client.open(path, method=method), client.open(path + "/", method=method)
    assert slashed.status_code == 200
    assert (slashed.headers["ETag"], slashed.data) == (plain.headers["ETag"], plain.data)


@pytest.mark.parametrize(
    "accept", ["gzip;q=0", "identity", "br", "", "gzip;q=0, *", "*, x-gzip;q=0", "*;q=0", "identity, *;q=0"]
)
def test_no_gzip_unless_accepted(client: Client, accept: str) -> None:
    response = client.get("/reviews.json", headers={"Accept-Encoding": accept})
    assert "Content-Encoding" not in response.headers
    json.loads(response.data)


def test_gzip_precomputed_once_per_load(app, client: Client) -> None:
    payload = app.store.current.payloads["/reviews.json"]
    response = client.get("/reviews.json", headers={"Accept-Encoding": "gzip"})
    assert response.data is not None and response.data == payload.gzipped.body


@pytest.mark.parametrize("path", CONDITIONAL_PATHS + ["/api/reviews/search?rating=5"])
def test_head_has_the_headers_of_get_and_no_body(client: Client, path: str) -> None:
    get, head = client.get(path), client.head(path)
    assert head.status_code == 200 and head.data == b""
    assert head.headers["Content-Length"] == get.headers["Content-Length"]
    assert head.headers.get("ETag") == get.headers.get("ETag")


@pytest.mark.parametrize("path", ["/reviews.json", "/api/reviews/search", "/api/reviews/since/2025-01-01"])
def test_cors_preflight(client: Client, path: str) -> None:
    response = client.open(
        path,
        method="OPTIONS",
        headers={
            "Origin": "https://example.org",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "if-none-match",
        },
    )
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "GET" in response.headers["Access-Control-Allow-Methods"]
    assert "If-None-Match" in response.headers["Access-Control-Allow-Headers"]
    assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS"}
    assert "Content-Length" not in response.headers  # RFC 9110 8.6: not on a 204


def test_exposed_headers(client: Client) -> None:
    exposed = client.get("/feed.xml").headers["Access-Control-Expose-Headers"]
    assert {"ETag", "Last-Modified", "Link"} <= {h.strip() for h in exposed.split(",")}


# ---------------------------------------------------------------- errors


def assert_error(response, status: int, code: str, openapi: dict) -> dict:
    assert response.status_code == status
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    body = response.get_json()
    assert body["error"] == code and body["message"]
    assert_valid(openapi, "Error", body)
    return body


@pytest.mark.parametrize(
    "path",
    [
        "/nope",
        "/reviews.json/extra",
        "/api/reviews/01ZZZZZZZZZZZZZZZZZZZZZZZZ",
        "/api/reviews/since",
        "/api/websub/hubx",
    ],
)
def test_unknown_paths_are_json_404(client: Client, openapi: dict, path: str) -> None:
    assert_error(client.get(path), 404, "not_found", openapi)


@pytest.mark.parametrize(
    "method, path",
    [
        ("POST", "/reviews.json"),
        ("PUT", "/insights.json"),
        ("DELETE", "/api/feed.json"),
        ("PATCH", "/api/reviews/search"),
        ("POST", "/api/reviews/since/2025-01-01"),
    ],
)
def test_wrong_methods_are_405_with_allow(client: Client, openapi: dict, method: str, path: str) -> None:
    response = client.open(path, method=method)
    assert_error(response, 405, "method_not_allowed", openapi)
    assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS"}


@pytest.mark.parametrize(
    "date",
    [
        "2025-02-30",
        "2025-13-01",
        "yesterday",
        "2025-1-1",
        "2025-01-01T00:00:00Z",
        "2025/01/01",
        "２０２５-01-01",
        "",
        "%0A2025-01-01",
        "2025-01-01%0A",
        "-568-08-13",
    ],
)  # a signed year: jsonschema-rs's date format alone admits it
def test_malformed_since_date_is_400(client: Client, openapi: dict, date: str) -> None:
    body = assert_error(client.get(f"/api/reviews/since/{date}"), 400, "invalid_parameters", openapi)
    assert body["issues"][0]["path"] == ["date"] and body["issues"][0]["code"] == "invalid_date"


def test_search_400_lists_every_problem(client: Client, openapi: dict) -> None:
    response = client.get(
        "/api/reviews/search?rating=abc&limit=0&since=2026-02-30&colour=red&query=a&query=b"
    )
    body = assert_error(response, 400, "invalid_parameters", openapi)
    assert sorted((i["path"][0], i["code"]) for i in body["issues"]) == [
        ("colour", "unknown_parameter"),
        ("limit", "minimum"),
        ("query", "repeated_parameter"),
        ("rating", "type"),
        ("since", "invalid_date"),
    ]


def test_an_integer_too_long_to_read_is_400_not_500(client: Client, openapi: dict) -> None:
    response = client.get("/api/reviews/search?limit=" + "9" * 4301 + "&rating=" + "0" * 4400 + "5")
    assert response.status_code == 400
    assert_valid(openapi, "Error", response.get_json())
    issues = sorted((i["path"], i["code"]) for i in response.get_json()["issues"])
    assert issues == [(["limit"], "type"), (["rating"], "type")]


def test_since_after_until_is_400(client: Client, openapi: dict) -> None:
    body = assert_error(
        client.get("/api/reviews/search?since=2025-02-01&until=2025-01-01"),
        400,
        "invalid_parameters",
        openapi,
    )
    assert body["issues"] == [
        {"path": ["since"], "code": "date_order", "message": "since (2025-02-01) is after until (2025-01-01)"}
    ]


def test_authorization_header_is_ignored(client: Client) -> None:
    assert client.get("/reviews.json", headers={"Authorization": "Bearer x"}).status_code == 200


# ---------------------------------------------------------------- search and since


def test_search_result_shape_and_order(client: Client, openapi: dict) -> None:
    body = client.get("/api/reviews/search?min_rating=4&limit=100").get_json()
    assert_valid(openapi, "SearchResult", body)
    assert body["returned"] == len(body["reviews"]) <= 100 <= body["matched"]
    assert all(r["rating"] >= 4 for r in body["reviews"])
    keys = [(r["date"], r["id"]) for r in body["reviews"]]
    assert keys == sorted(keys, reverse=True)


def test_search_default_limit_is_20(client: Client) -> None:
    assert client.get("/api/reviews/search").get_json()["returned"] == 20


def test_search_filters_combine_with_and(client: Client, app) -> None:
    dataset = app.store.current.dataset
    tech = next(iter(dataset.technicians.values()))
    url = (
        f"/api/reviews/search?rating=5&since=2024-01-01&mentions_technician={tech['name'].upper()}&limit=100"
    )
    body = client.get(url).get_json()
    per_review = dataset.insights_doc["per_review"]
    expected = [
        r
        for r in dataset.reviews
        if r["rating"] == 5 and r["date"] >= "2024-01-01" and tech["id"] in per_review[r["id"]]["technicians"]
    ]
    assert body["matched"] == len(expected) > 0
    assert [r["id"] for r in body["reviews"]] == [r["id"] for r in expected[:100]]


def test_search_by_service_label_or_id(client: Client, app) -> None:
    service = next(iter(app.store.current.dataset.services.values()))
    by_id = client.get(f"/api/reviews/search?mentions_service={service['id']}").get_json()
    by_label = client.get(f"/api/reviews/search?mentions_service={service['label'].lower()}").get_json()
    assert by_id.pop("next_cursor") != by_label.pop("next_cursor")  # a cursor is tied to the filters as sent
    assert by_id == by_label and by_id["matched"] == service["mention_count"] > 0


def test_search_query_is_case_insensitive_substring(client: Client, app) -> None:
    body = client.get("/api/reviews/search?query=BACK&limit=100").get_json()
    assert body["matched"] > 0
    assert all("back" in r["text"].casefold() for r in body["reviews"])
    assert client.get("/api/reviews/search?query=zzzqqqxxx").get_json() == {
        "matched": 0,
        "returned": 0,
        "reviews": [],
        "next_cursor": None,
    }


def test_since_lists_reviews_on_or_after_the_date(client: Client, app, openapi: dict) -> None:
    body = client.get("/api/reviews/since/2025-06-01").get_json()
    assert_valid(openapi, "SinceResult", body)
    expected = [r["id"] for r in app.store.current.dataset.reviews if r["date"] >= "2025-06-01"]
    assert body["since"] == "2025-06-01" and body["count"] == len(expected)
    assert [r["id"] for r in body["reviews"]] == expected


def test_since_pages_with_limit_and_cursor(client: Client, app, openapi: dict) -> None:
    """Opt-in paging: the pages put together are the unpaged answer; a cursor of another date is a 400."""
    whole = client.get("/api/reviews/since/2025-06-01").get_json()
    seen, url = [], "/api/reviews/since/2025-06-01?limit=7"
    while url:
        response = client.get(url)
        assert response.status_code == 200 and response.headers["ETag"]
        page = response.get_json()
        assert_valid(openapi, "SinceResult", page)
        assert page["count"] == whole["count"] and page["returned"] == len(page["reviews"]) <= 7
        seen += page["reviews"]
        url = page["next_cursor"] and f"/api/reviews/since/2025-06-01?limit=7&cursor={page['next_cursor']}"
    assert seen == whole["reviews"] and len(seen) > 7
    cursor = client.get("/api/reviews/since/2025-06-01?limit=1").get_json()["next_cursor"]
    refused = client.get(f"/api/reviews/since/2025-07-01?cursor={cursor}")
    assert refused.status_code == 400
    assert [i["code"] for i in refused.get_json()["issues"]] == ["cursor_mismatch"]
    bad = client.get("/api/reviews/since/2025-06-01?limit=0&page=2")
    assert [(i["path"][0], i["code"]) for i in bad.get_json()["issues"]] == [
        ("page", "unknown_parameter"),
        ("limit", "minimum"),
    ]


def test_search_sorts_filters_and_pages(client: Client, app, openapi: dict) -> None:
    reviews = app.store.current.dataset.reviews
    expected = sorted(
        (r for r in reviews if r["source"] == "google" and r["text"] and r["owner_reply"] is None),
        key=lambda r: (r["date"], r["id"]),
        reverse=True,
    )
    expected.sort(key=lambda r: r["rating"])  # lowest first, newest first within a rating
    query = "source=google&has_text=true&has_reply=false&sort=lowest&limit=3"
    seen, url = [], f"/api/reviews/search?{query}"
    while url:
        page = client.get(url).get_json()
        assert_valid(openapi, "SearchResult", page)
        seen += page["reviews"]
        url = page["next_cursor"] and f"/api/reviews/search?{query}&cursor={page['next_cursor']}"
    assert [r["id"] for r in seen] == [r["id"] for r in expected] and len(seen) > 3


def test_since_in_the_future_is_empty(client: Client) -> None:
    assert client.get("/api/reviews/since/2999-01-01").get_json() == {
        "since": "2999-01-01",
        "count": 0,
        "reviews": [],
    }


def test_single_review(client: Client, app, openapi: dict) -> None:
    review = app.store.current.dataset.reviews[0]
    response = client.get(f"/api/reviews/{review['id']}")
    assert response.get_json() == review
    assert (
        client.get(
            f"/api/reviews/{review['id']}", headers={"If-None-Match": response.headers["ETag"]}
        ).status_code
        == 304
    )


# ---------------------------------------------------------------- OpenAPI


def test_openapi_document_is_valid(openapi: dict) -> None:
    from openapi_spec_validator import validate

    validate(openapi)
    assert openapi["openapi"] == "3.1.0" and openapi["info"]["version"] == "1.0.0"
    assert openapi["servers"] == [{"url": "https://reviews.example.com"}]


def test_openapi_uses_the_same_schemas(openapi: dict) -> None:
    from reviewsd_app.reviews.dataset import SCHEMAS

    params = openapi["paths"]["/api/reviews/search"]["get"]["parameters"]
    assert {p["name"] for p in params} == set(SCHEMAS["search-params.schema.json"]["properties"])
    assert {p["name"]: p["schema"] for p in params} == SCHEMAS["search-params.schema.json"]["properties"]
    assert {p["name"]: p["description"] for p in params} == {
        name: schema["description"]
        for name, schema in SCHEMAS["search-params.schema.json"]["properties"].items()
    }


@pytest.mark.parametrize("status", [414, 431])
def test_openapi_documents_the_servers_own_refusals_everywhere(openapi: dict, status: int) -> None:
    """The HTTP server answers 414 and 431 before routing, so every operation may return them."""
    from reviewsd_app.httpserver import connection

    for path, operations in openapi["paths"].items():
        for method, operation in operations.items():
            reference = operation["responses"][str(status)]["$ref"]
            name = reference.rsplit("/", 1)[1]
            schema = openapi["components"]["responses"][name]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Error"}, (method, path)
    head, _, body = connection.error_response(status, "too large").partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode())
    assert_valid(openapi, "Error", json.loads(body))


@pytest.mark.parametrize("accept_encoding", ["", "gzip"])
def test_openapi_names_every_header_a_read_answer_carries(
    client: Client, openapi: dict, accept_encoding: str
) -> None:
    review_id = client.get("/api/reviews/search?limit=1").get_json()["reviews"][0]["id"]
    examples = {
        "/api/reviews/since/{date}": "/api/reviews/since/2025-01-01",
        "/api/reviews/{id}": f"/api/reviews/{review_id}",
        "/api/reviews/search": "/api/reviews/search?rating=5",
        "/reviews/{id}": f"/reviews/{review_id}",
        "/reviews": "/reviews?rating=5",
    }
    framing = {"Content-Type", "Content-Length"}  # OpenAPI states these through content and bodies
    for path, operations in openapi["paths"].items():
        responses = operations.get("get", {}).get("responses", {})
        if "headers" not in responses.get("200", {}) or path == "/healthz":
            continue
        url = examples.get(path, path)
        ok = client.get(url, headers={"Accept-Encoding": accept_encoding})
        documented = set(responses["200"]["headers"])
        assert set(ok.headers.keys()) - framing <= documented, path
        assert documented - {"Content-Encoding"} <= set(ok.headers.keys()), path
        if "304" in responses:
            again = client.get(
                url, headers={"Accept-Encoding": accept_encoding, "If-None-Match": ok.headers["ETag"]}
            )
            assert again.status_code == 304 and set(again.headers.keys()) == set(
                responses["304"]["headers"]
            ), path


def test_openapi_describes_every_route(app, openapi: dict) -> None:
    def normalise(rule: str) -> str:
        return rule.replace("<anything:date>", "{date}").replace("<review_id>", "{id}")

    routes = {normalise(r.rule) for r in app.url_map.iter_rules()}
    assert routes <= set(openapi["paths"])


# ---------------------------------------------------------------- health


def test_healthz_reports_versions_and_hub(hub_app) -> None:
    app = hub_app
    response = Client(app).get("/healthz")
    body = response.get_json()
    assert response.status_code == 200 and response.headers["Cache-Control"] == "no-store"
    assert body["status"] == "ok"
    assert body["data"]["reviews"]["count"] == len(app.store.current.dataset.reviews)
    assert body["data"]["reviews"]["sha256"] == app.store.current.dataset.reviews_sha256
    assert body["data"]["last_reload_error"] is None
    assert body["hub"]["enabled"] is True and body["hub"]["running"] is True


def test_healthz_is_503_when_the_hub_stopped(hub_app) -> None:
    hub_app.hub.stop()
    response = Client(hub_app).get("/healthz")
    assert response.status_code == 503 and response.get_json()["status"] == "not_ready"


# ---------------------------------------------------------------- any query string


query_names = st.sampled_from(
    [
        "rating",
        "min_rating",
        "since",
        "until",
        "query",
        "limit",
        "mentions_technician",
        "mentions_service",
        "x",
        "",
        "rating[]",
        "%00",
        "limit ",
    ]
)
query_values = st.text(max_size=15) | st.sampled_from(
    [
        "5",
        "4.5",
        "1e0",
        "2025-01-01",
        "2025-02-30",
        "-1",
        "100",
        "101",
        "nan",
        "inf",
        "０",
        "dr. maya patel",
        "9" * 4301,
        "-" + "0" * 4400 + "5",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(st.tuples(query_names, query_values), max_size=6))
def test_any_search_query_string_is_200_or_400_never_500(client: Client, openapi: dict, pairs: list) -> None:
    response = client.get("/api/reviews/search?" + urlencode(pairs))
    assert response.status_code in (200, 400), response.data
    body = response.get_json()
    assert_valid(openapi, "SearchResult" if response.status_code == 200 else "Error", body)
    if response.status_code == 400:
        assert body["issues"]


@settings(max_examples=500, deadline=None)
@given(
    raw=st.binary(max_size=40)
    | st.lists(
        st.sampled_from(
            [b"a", b"=", b"&", b"+", b"%", b"%c3", b"%a9", b"%ff", b"\xc3\xa9", b"\xff", b";", b"%2"]
        )
    ).map(b"".join)
)
def test_query_args_read_the_query_as_werkzeug_does(raw: bytes) -> None:
    environ = {"QUERY_STRING": raw.decode("latin-1")}  # how WSGI carries the raw bytes
    ours = reviewsd.query_args(environ)
    try:
        theirs = Request(environ).args.to_dict(flat=False)
    except UnicodeDecodeError:  # werkzeug fails on raw bytes that are not UTF-8
        assert any(ord(c) > 0x7F for c in environ["QUERY_STRING"])
        return
    assert ours == theirs


def test_raw_bytes_that_are_not_utf8_stay_percent_encoded(client: Client) -> None:
    response = client.get("/api/reviews/search", environ_overrides={"QUERY_STRING": "query=%ff\xff&limit=1"})
    assert response.status_code == 200 and response.get_json()["matched"] == 0
    assert reviewsd.query_args({"QUERY_STRING": "query=%ff\xff+caf\xc3\xa9"}) == {"query": ["%FF%FF café"]}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(date=st.text(max_size=12))
def test_any_since_segment_is_200_or_400(client: Client, date: str) -> None:
    response = client.get("/api/reviews/since/" + quote(date, safe=""))
    assert response.status_code in (200, 400), (date, response.data)


# One request per GET operation of the OpenAPI document, with its path parameters filled in.
HEADER_CASES = [
    "/reviews.json",
    "/insights.json",
    "/api/feed.json",
    "/feed.xml",
    "/api/reviews/search?rating=5",
    "/api/reviews/since/2026-10-01",
    "/api/reviews/{id}",
    "/api/reviews/{long_id}",
    "/.well-known/openapi.json",
    "/healthz",
]
ALWAYS = {"content-type", "content-length"}  # described by the response's content, not as headers


def documented_headers(openapi: dict, path: str, status: str) -> set[str]:
    template = re.sub(r"/since/[^/?]+", "/since/{date}", path.split("?")[0]).replace("{long_id}", "{id}")
    response = openapi["paths"][template]["get"]["responses"][status]
    return {name.lower() for name in response.get("headers", {})}


@pytest.mark.parametrize("path", HEADER_CASES)
@pytest.mark.parametrize("compressed", [False, True])
def test_openapi_names_exactly_the_headers_each_get_sends(
    openapi: dict, client: Client, path: str, compressed: bool
) -> None:
    reviews = client.get("/api/reviews/search?limit=100").get_json()["reviews"]
    short, long = (
        min(reviews, key=lambda r: len(json.dumps(r))),
        max(reviews, key=lambda r: len(json.dumps(r))),
    )
    url = path.replace("{id}", short["id"]).replace("{long_id}", long["id"])
    response = client.get(url, headers={"Accept-Encoding": "gzip"} if compressed else {})
    sent = {name.lower() for name, _ in response.headers}
    documented = documented_headers(openapi, path, str(response.status_code))
    if not compressed or len(client.get(url).data) < payloads.GZIP_MIN_BYTES:  # the identity body's size
        documented.discard("content-encoding")  # "absent otherwise"
    assert sent - ALWAYS == documented, path
    if "etag" in sent:
        again = client.get(
            url,
            headers={
                "If-None-Match": response.headers["ETag"],
                **({"Accept-Encoding": "gzip"} if compressed else {}),
            },
        )
        assert again.status_code == 304
        assert {name.lower() for name, _ in again.headers} == documented_headers(openapi, path, "304"), path


def test_only_the_mcp_endpoint_exposes_its_session_header(openapi: dict, client: Client) -> None:
    for path, operations in openapi["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                exposed = response.get("headers", {}).get("Access-Control-Expose-Headers", {})
                assert "Mcp-Session-Id" not in exposed.get("description", ""), (method, path, status)
    assert "Mcp-Session-Id" not in client.get("/reviews.json").headers["Access-Control-Expose-Headers"]


def test_the_search_parameters_state_the_since_until_rule(openapi: dict) -> None:
    params = {
        p["name"]: p["description"] for p in openapi["paths"]["/api/reviews/search"]["get"]["parameters"]
    }
    assert "must not be after until" in params["since"] and "must not be before since" in params["until"]
