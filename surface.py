"""The public interface, declared once: every route (path or prefix, endpoint, methods, kind) with the URL
builders of its paths, and the headers answers carry (name, value, where it applies, what it means).

It imports nothing of ours, so every part reads it: the app's werkzeug map and fast path (reviewsd.py), the
WebSub topics (web/snapshot.py, hub.py), the feeds' and pages' links, the MCP server card and resources,
the OpenAPI document's header documentation and every CORS list. A new route or a new response header is
one row here (and its handler, and the docs).
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import quote

# --------------------------------------------------------------------------- paths

HOME = "/"
REVIEWS_JSON = "/reviews.json"
INSIGHTS_JSON = "/insights.json"
JSON_FEED = "/api/feed.json"
ATOM_FEED = "/feed.xml"
OPENAPI = "/.well-known/openapi.json"
SERVER_CARDS = ("/mcp/server-card", "/.well-known/mcp/server-card")  # the second is the well-known one
AI_CATALOG = "/.well-known/ai-catalog.json"
SEARCH = "/api/reviews/search"
SINCE_PREFIX = "/api/reviews/since/"  # + a date
REVIEW_PREFIX = "/api/reviews/"  # + a review id: the review in JSON
HEALTHZ = "/healthz"
REVIEWS_PAGE = "/reviews"
REVIEW_PAGE_PREFIX = "/reviews/"  # + a review id: its page (permalink)
WIDGET = "/widget"
MCP = "/mcp"
HUB = "/api/websub/hub"


class Route(NamedTuple):
    """One route of the app: a werkzeug rule (`<name>` parts are arguments), the handler it reaches, the
    methods it allows (werkzeug adds HEAD to GET; OPTIONS is every route's), and what kind of answer it is.

    Kinds: "topic" (a precomputed body the WebSub hub distributes), "payload" (any other precomputed body),
    "api" (JSON made per request), "page" (HTML for people), "attached" (a part create_app hands the app:
    its `endpoint` names the part, "mcp" or "hub").
    """

    rule: str
    endpoint: str
    kind: str
    methods: tuple[str, ...] = ("GET",)


ROUTES: tuple[Route, ...] = (
    Route(ATOM_FEED, "payload", "topic"),
    Route(JSON_FEED, "payload", "topic"),
    Route(REVIEWS_JSON, "payload", "topic"),
    Route(INSIGHTS_JSON, "payload", "payload"),
    Route(OPENAPI, "payload", "payload"),
    *(Route(path, "payload", "payload") for path in SERVER_CARDS),
    Route(AI_CATALOG, "payload", "payload"),
    Route(SEARCH, "search", "api"),
    Route(SINCE_PREFIX + "<anything:date>", "since", "api"),  # every character after the prefix: a 400
    Route(REVIEW_PREFIX + "<review_id>", "review", "api"),
    Route(HEALTHZ, "healthz", "api"),
    Route(HOME, "payload", "page"),
    Route(REVIEWS_PAGE, "reviews_page", "page"),
    Route(REVIEW_PAGE_PREFIX + "<review_id>", "review_page", "page"),
    Route(WIDGET, "widget", "page"),
    Route(MCP, "mcp", "attached", ("POST", "DELETE")),
    Route(HUB, "hub", "attached", ("POST",)),
)

# The WebSub topics: the precomputed bodies the hub delivers when they change, in the hub's order.
TOPICS: tuple[str, ...] = tuple(route.rule for route in ROUTES if route.kind == "topic")


def review_path(review_id: str) -> str:
    """GET /api/reviews/{id}: one review in JSON; the feeds' stable item id and MCP's review resource."""
    return REVIEW_PREFIX + quote(review_id, safe="")


def review_page_path(review_id: str) -> str:
    """GET /reviews/{id}: a review's page for people (its permalink), linked from the feeds and pages."""
    return REVIEW_PAGE_PREFIX + quote(review_id, safe="")


def review_id_of_page(path: str) -> str | None:
    """The review id of a permalink path as its route matches it (one or more characters, no slash)."""
    review_id = path[len(REVIEW_PAGE_PREFIX) :]
    if path.startswith(REVIEW_PAGE_PREFIX) and review_id and "/" not in review_id:
        return review_id
    return None


# --------------------------------------------------------------------------- headers

# Body size from which an answer is also offered gzip-compressed (smaller ones gain nothing).
GZIP_MIN_BYTES = 512


class Header(NamedTuple):
    """A response header of the public interface.

    `value` is the header's fixed value, or "" where each answer sets its own. `where` says which answers
    carry it: "every" (every response, the HTTP server's own refusals too), "read" (the API's and the pages'
    GET answers), "topic" (the WebSub topics' answers), "mcp" (POST and DELETE /mcp), "hub" (the hub's
    answers). `exposed`: a web page's script may read it (CORS's Access-Control-Expose-Headers).
    """

    name: str
    value: str
    where: str
    description: str
    exposed: bool = False


# In the order the OpenAPI document lists them. None is "every" yet: a row with where="every" is added to
# every answer, the server's refusals included (web/responses.with_common_headers), and documented on each.
HEADERS: tuple[Header, ...] = (
    Header(
        "ETag", "", "read", "Strong entity tag of this representation (a gzip response has its own).", True
    ),
    Header(
        "Last-Modified", "", "read", "When the data was generated (`generated_at`), as an HTTP date.", True
    ),
    Header("Cache-Control", "public, max-age=60", "read", "`public, max-age=60`."),
    Header("Vary", "", "read", "`Accept-Encoding`."),
    Header("Access-Control-Allow-Origin", "*", "read", "`*`: any web page may read the API."),
    Header("Access-Control-Expose-Headers", "{exposed}", "read", "`{exposed}`: what a web page may read."),
    Header(
        "Content-Encoding",
        "",
        "read",
        f"`gzip` when the request's Accept-Encoding allows it and the body is {GZIP_MIN_BYTES} bytes or "
        "more; absent otherwise.",
    ),
    Header("Link", "", "topic", 'WebSub discovery: `<hub>; rel="hub", <topic>; rel="self"`.', True),
    Header("Mcp-Session-Id", "", "mcp", "The 2025 MCP session this answer opened or belongs to.", True),
    Header("Retry-After", "", "hub", "Seconds to wait before asking the hub again.", True),
)


def exposed(*wheres: str) -> str:
    """Access-Control-Expose-Headers for answers of these kinds (all kinds when none is named)."""
    return ", ".join(h.name for h in HEADERS if h.exposed and (not wheres or h.where in wheres))


def _filled(header: Header, *wheres: str) -> Header:
    return header._replace(
        value=header.value.format(exposed=exposed(*wheres)),
        description=header.description.format(exposed=exposed(*wheres)),
    )


# What a GET answer (and its topic's) may show a web page: the validators and WebSub discovery.
READ_EXPOSED = ("read", "topic")
READ_HEADERS_DOCUMENTED: tuple[Header, ...] = tuple(
    _filled(h, *READ_EXPOSED) for h in HEADERS if h.where == "read"
)
# The fixed-value headers every read answer carries (CORS and caching), in this order after Content-Type.
READ_HEADERS: tuple[tuple[str, str], ...] = tuple(
    (h.name, h.value) for h in READ_HEADERS_DOCUMENTED if h.value
)
EVERY_RESPONSE: tuple[tuple[str, str], ...] = tuple((h.name, h.value) for h in HEADERS if h.where == "every")
# The MCP endpoint's answers: never cached, readable by any page, the 2025 session id exposed.
MCP_HEADERS: tuple[tuple[str, str], ...] = (
    ("Cache-Control", "no-store"),
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Expose-Headers", exposed("mcp")),
)

# CORS preflight. What a browser may send: the conditional headers, and every header the MCP revisions we
# speak define (2025-03-26: Mcp-Session-Id, Last-Event-ID; 2025-06-18: MCP-Protocol-Version; 2026-07-28:
# Mcp-Method, Mcp-Name); Accept and Content-Type with values outside CORS's safelist, Authorization for
# clients that always send one.
CORS_REQUEST_HEADERS = (
    "Accept",
    "Authorization",
    "Content-Type",
    "If-Modified-Since",
    "If-None-Match",
    "Last-Event-ID",
    "MCP-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Mcp-Session-Id",
)
# What a browser client may read of any answer: validators, WebSub discovery, the session id, the hub's
# back-off.
CORS_RESPONSE_HEADERS = exposed()
CORS_MAX_AGE = "86400"
