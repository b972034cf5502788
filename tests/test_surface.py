"""surface.py, the public interface declared once: the app's routes, the OpenAPI document and the CORS lists
agree with its tables, and the fast path's rules match what the werkzeug map would route."""

from __future__ import annotations

import pytest
from werkzeug.exceptions import HTTPException
from werkzeug.test import Client

from reviewsd_app import reviewsd, surface


def openapi_path(rule: str) -> str:
    return rule.replace("<anything:date>", "{date}").replace("<review_id>", "{id}")


def test_the_openapi_document_describes_the_routes_and_nothing_else(client: Client) -> None:
    document = client.get(surface.OPENAPI).get_json()
    assert set(document["paths"]) == {openapi_path(route.rule) for route in surface.ROUTES}
    for route in surface.ROUTES:
        documented = {method.upper() for method in document["paths"][openapi_path(route.rule)]}
        assert set(route.methods) <= documented, route


def test_the_app_routes_every_route_of_the_table() -> None:
    rules = {(rule.rule, rule.endpoint) for rule in reviewsd.ReviewsApp.url_map.iter_rules()}
    expected = {
        (route.rule, "attached" if route.kind == "attached" else route.endpoint) for route in surface.ROUTES
    }
    assert rules == expected
    assert surface.TOPICS == (surface.ATOM_FEED, surface.JSON_FEED, surface.REVIEWS_JSON)


@pytest.mark.parametrize(
    "path",
    [
        "/reviews/01H",
        "/reviews/",
        "/reviews//",
        "/reviews/a/b",
        "/reviews/a/",
        "/reviews/%2F",
        "/reviewsx/a",
        "/reviews/a b",
        "/reviews/\n",
        "/reviews",
    ],
)
def test_the_fast_paths_review_page_rule_is_the_routes(path: str) -> None:
    """What the fast path takes for a permalink the route would take too (the rest goes through routing)."""
    adapter = reviewsd.ReviewsApp.url_map.bind("reviews.example", path_info=path)
    try:
        endpoint, args = adapter.match(method="GET")
    except HTTPException:
        endpoint, args = None, {}
    routed = args.get("review_id") if endpoint == "review_page" else None
    fast = surface.review_id_of_page(path)
    assert fast is None or fast == routed
    assert (fast is None) == (
        path in ("/reviews/", "/reviews//", "/reviews/a/b", "/reviews/a/", "/reviewsx/a", "/reviews")
    )


def test_the_cors_lists_come_from_the_headers_table(client: Client) -> None:
    read = client.get(surface.REVIEWS_JSON)
    assert read.headers["Access-Control-Expose-Headers"] == "ETag, Last-Modified, Link"
    assert {name for name, _ in surface.READ_HEADERS} <= set(read.headers.keys())
    mcp = client.post(surface.MCP, data=b"{}", headers={"Content-Type": "application/json"})
    assert mcp.headers["Access-Control-Expose-Headers"] == "Mcp-Session-Id"
    preflight = client.options(surface.MCP)
    exposed = preflight.headers["Access-Control-Expose-Headers"].split(", ")
    assert exposed == [header.name for header in surface.HEADERS if header.exposed]
    assert exposed == ["ETag", "Last-Modified", "Link", "Mcp-Session-Id", "Retry-After"]


def test_the_openapi_document_documents_the_read_headers_as_the_table_says(client: Client) -> None:
    document = client.get(surface.OPENAPI).get_json()
    headers = document["paths"][surface.REVIEWS_JSON]["get"]["responses"]["200"]["headers"]
    for header in surface.READ_HEADERS_DOCUMENTED:
        assert headers[header.name]["description"] == header.description
    assert headers["Access-Control-Expose-Headers"]["description"].startswith("`ETag, Last-Modified, Link`")


def test_url_builders() -> None:
    assert surface.review_path("01H/x") == "/api/reviews/01H%2Fx"
    assert surface.review_page_path("01H/x") == "/reviews/01H%2Fx"
