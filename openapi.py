"""The OpenAPI 3.1.0 document, assembled from the same JSON Schemas that validate the data.

Each file in schemas/ becomes one entry of `components.schemas`; its `$ref`s (to its own `$defs` or to other
files) are rewritten to point inside the document, so that the data files, the search parameters, the MCP
tools and the published contract share one definition.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Mapping

from . import surface
from .events.openapi_webhooks import webhooks_section
from .mcpserver.protocol import HEADER_DEFAULT_VERSION, MODERN_VERSION, SUPPORTED_VERSIONS
from .reviews.dataset import SCHEMAS
from .reviews.search import DATE_SCHEMA
from .surface import HEADERS, READ_HEADERS_DOCUMENTED
from .web.payloads import NOT_MODIFIED_HEADERS

API_VERSION = "1.0.0"


def _rewrite_ref(ref: str, own_name: str) -> str:
    match = re.fullmatch(r"([A-Za-z0-9._-]+\.schema\.json)?(#.*)?", ref)
    if not match:
        raise ValueError(f"unexpected $ref {ref!r}")
    file, pointer = match.group(1), (match.group(2) or "#")[1:]
    name = SCHEMAS[file]["title"] if file else own_name
    return f"#/components/schemas/{name}{pointer}"


def _embed(node: Any, own_name: str, names: bool = False) -> Any:
    """A schema file's node with its $refs pointing inside the document and no $schema or $id keywords;
    `names`: the node maps property names to schemas (a property may be called "$schema": it stays)."""
    if isinstance(node, dict):
        return {
            key: _rewrite_ref(value, own_name)
            if key == "$ref" and not names
            else _embed(value, own_name, key == "properties" and not names)
            for key, value in node.items()
            if names or key not in ("$schema", "$id")
        }
    if isinstance(node, list):
        return [_embed(item, own_name) for item in node]
    return node


# The search parameters are published as the parameters themselves (each with its schema from
# this file), not as a component schema that no operation would reference as a whole.
SEARCH_PARAMS = "search-params.schema.json"
SINCE_PARAMS = "since-params.schema.json"
PARAMETER_SCHEMAS = (SEARCH_PARAMS, SINCE_PARAMS)
# business.toml's schema: the offline commands' file, which no operation serves or takes.
OFFLINE_SCHEMAS = ("business.schema.json",)


def _query_params(file: str) -> list[dict[str, Any]]:
    """A parameter schema's properties as query parameters; a `$ref` to another parameter is its schema."""
    params = []
    for name, spec in SCHEMAS[file]["properties"].items():
        if "$ref" in spec:
            target, _, pointer = spec["$ref"].partition("#")
            spec = SCHEMAS[target]
            for part in pointer.strip("/").split("/"):
                spec = spec[part]
        params.append(
            {
                "name": name,
                "in": "query",
                "required": False,
                "description": spec.get("description", ""),
                "schema": copy.deepcopy(spec),
            }
        )
    return params


def _form_params(file: str) -> list[dict[str, Any]]:
    """The query parameters as a page's form sends them: a field left blank comes as an empty value, "any"."""
    return [
        {
            **param,
            "description": param["description"] + " Empty (a field left blank): any.",
            "schema": {"anyOf": [param["schema"], {"const": ""}]},
        }
        for param in _query_params(file)
    ]


def ref(name: str, *pointer: str) -> dict[str, str]:
    return {"$ref": "/".join(["#/components/schemas", name, *pointer])}


def _json(
    schema: Mapping[str, Any],
    description: str,
    media: str = "application/json",
    headers: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description, "content": {media: {"schema": dict(schema)}}}
    if headers is not None:
        response["headers"] = headers
    return response


def _error(description: str) -> dict[str, Any]:
    return _json(ref("Error"), description)


def _rpc(description: str) -> dict[str, Any]:
    return _json(JSON_RPC_RESPONSE, description)


def _header(description: str) -> dict[str, Any]:
    return {"description": description, "schema": {"type": "string"}}


def _header_param(name: str, description: str = "", required: bool = False) -> dict[str, Any]:
    param = {"name": name, "in": "header", "required": required, "schema": {"type": "string"}}
    return {**param, "description": description} if description else param


# The headers of surface.HEADERS, documented where they apply.
READ_HEADER_DOCS = {header.name: _header(header.description) for header in READ_HEADERS_DOCUMENTED}
TOPIC_HEADERS = {
    **READ_HEADER_DOCS,
    **{header.name: _header(header.description) for header in HEADERS if header.where == "topic"},
}
# A search answer is made per request: no validators.
SEARCH_HEADERS = {k: v for k, v in READ_HEADER_DOCS.items() if k not in ("ETag", "Last-Modified")}
# The HTML pages add their security headers (pages/policy.py) to the answers' usual ones.
PAGE_SECURITY = {
    "Content-Security-Policy": _header(
        "No outside source, no script, the inline stylesheet by its hash; `frame-ancestors 'none'`."
    ),
    "X-Frame-Options": _header("`DENY`: never shown in a frame."),
    "Referrer-Policy": _header("`no-referrer`."),
    "X-Content-Type-Options": _header("`nosniff`."),
}
PAGE_HEADER_DOCS = {**READ_HEADER_DOCS, **PAGE_SECURITY}
WIDGET_HEADER_DOCS = {
    **READ_HEADER_DOCS,
    **{k: v for k, v in PAGE_SECURITY.items() if k != "X-Frame-Options"},
    "Content-Security-Policy": _header("As the pages', but `frame-ancestors *`: any site may frame it."),
}
HTML_PAGE = {"type": "string", "description": "An HTML page (docs/pages.md)."}
CONDITIONAL_PARAMS = [
    _header_param(
        "If-None-Match",
        "ETag(s) the client holds; a match (weak comparison, lists and `*` allowed) gives 304.",
    ),
    _header_param("If-Modified-Since", "HTTP date; ignored when If-None-Match is present."),
]


def _operation(
    operation_id: str,
    tag: str,
    summary: str,
    description: str,
    responses: dict[str, Any],
    parameters: list[dict[str, Any]] | None = CONDITIONAL_PARAMS,
    body: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An operation, its `responses` completed with SERVER_REFUSALS; `body` is the media type and schema
    of its request."""
    operation = {"operationId": operation_id, "tags": [tag], "summary": summary, "description": description}
    if parameters is not None:
        operation["parameters"] = parameters
    if body is not None:
        operation["requestBody"] = {"required": True, "content": {body[0]: {"schema": body[1]}}}
    for status, (name, _) in SERVER_REFUSALS.items():
        responses.setdefault(status, {"$ref": f"#/components/responses/{name}"})
    return {**operation, "responses": responses}


def _representation(
    schema: Mapping[str, Any],
    description: str,
    media: str = "application/json",
    headers: Mapping[str, Any] = READ_HEADER_DOCS,
) -> dict[str, Any]:
    """The 200 and its 304, with the headers a 304 repeats (payloads.py)."""
    return {
        "200": _json(schema, description, media, headers),
        "304": {
            "description": "Not modified: the ETag (or date) still matches. Empty body.",
            "headers": {k: v for k, v in headers.items() if k in NOT_MODIFIED_HEADERS},
        },
    }


def _read(
    operation_id: str,
    tag: str,
    summary: str,
    description: str,
    schema: Mapping[str, Any],
    media: str = "application/json",
    headers: Mapping[str, Any] = READ_HEADER_DOCS,
) -> dict[str, Any]:
    ok = _representation(schema, "The current representation.", media, headers)
    return {"get": _operation(operation_id, tag, summary, description, ok)}


JSON_FEED_SCHEMA = {
    "type": "object",
    "description": "JSON Feed 1.1 (https://jsonfeed.org/version/1.1) with the 50 newest reviews; "
    "each item carries a `_reviewsd` extension with rating and source.",
    "required": ["version", "title", "items"],
    "properties": {
        "version": {"const": "https://jsonfeed.org/version/1.1"},
        "title": {"type": "string"},
        "home_page_url": {"type": "string"},
        "feed_url": {"type": "string"},
        "hubs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "url"],
                "properties": {"type": {"type": "string"}, "url": {"type": "string"}},
            },
        },
        "items": {
            "type": "array",
            "maxItems": 50,
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "url": {"type": "string"},
                    "content_text": {"type": "string"},
                    "date_published": {"type": "string", "format": "date-time"},
                    "_reviewsd": {"type": "object"},
                },
            },
        },
    },
}


JSON_RPC_RESPONSE = {
    "type": "object",
    "description": "JSON-RPC 2.0 response: `result`, or `error` {code, message, data?}.",
    "required": ["jsonrpc"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer", "null"]},
        "result": {"type": "object"},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        },
    },
}


TAGS = [
    {"name": "data", "description": "The two datasets, as the data files hold them."},
    {"name": "feeds", "description": "The newest reviews as JSON Feed 1.1 and Atom; WebSub topics."},
    {"name": "reviews", "description": "Search, incremental sync and single reviews."},
    {"name": "mcp", "description": "The Model Context Protocol server for AI agents."},
    {"name": "websub", "description": "The WebSub hub: subscriptions to the topics."},
    {"name": "operations", "description": "For operators and tools: health and this document."},
    {
        "name": "events",
        "description": "Webhooks this server sends when reviews arrive or change (docs/events.md).",
    },
    {"name": "pages", "description": "HTML pages for people and the embeddable widget (docs/pages.md)."},
]

HEALTH_SCHEMA = {
    "type": "object",
    "required": ["status", "data", "hub", "events"],
    "properties": {
        "status": {"type": "string", "description": "`ok` when every part works."},
        "data": {
            "type": "object",
            "description": "The data served: versions, when loaded, the last reload error.",
        },
        "hub": {"type": "object", "description": "The WebSub hub's state and counts."},
        "events": {
            "type": "object",
            "description": "Events out (--notify): targets, pending and failed deliveries (counts only).",
        },
    },
}
NO_STORE = {"Cache-Control": _header("`no-store`: never cached.")}
# A text search waits briefly for a turn among the expensive ones (web/admission.py), then is refused.
BUSY = _json(
    ref("Error"),
    "`busy`: a text search (`query` or `q`) that got no turn within 0.25 s; see Retry-After.",
    headers={"Retry-After": _header("Seconds to wait before asking again: `1`.")},
)
HUB_ANSWERS = {  # each with a plain-text body (hub.py)
    "202": "Accepted; verification follows.",
    "400": "Refused, with a plain-text reason.",
    "403": "A cap is reached (total, per topic or per callback host).",
    "413": "Request body too large.",
    "415": "Not a UTF-8 application/x-www-form-urlencoded body.",
    "429": "Too many hub requests; see Retry-After.",
    "503": "The hub is stopping, its state store is unusable, or another server's hub holds the state "
    "directory: a plain-text reason; see Retry-After.",
}


REVIEW_ID_PARAM = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "Review id (ULID).",
    "schema": ref("Review", "properties", "id"),
}
WIDGET_PARAMS = [
    (
        "count",
        "How many reviews (default 3).",
        {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
    ),
    (
        "min_rating",
        "Only reviews with at least this many stars (default 1).",
        {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
    ),
    (
        "theme",
        "Colours: `auto` follows the visitor's setting (default).",
        {"enum": ["auto", "light", "dark"], "default": "auto"},
    ),
]


def _paths() -> dict[str, Any]:
    return {
        "/reviews.json": _read(
            "getReviews",
            "data",
            "Reviews dataset",
            "Business metadata, aggregate rating and every verified review, newest first. A WebSub topic.",
            ref("ReviewsDocument"),
            headers=TOPIC_HEADERS,
        ),
        "/insights.json": _read(
            "getInsights",
            "data",
            "Insights dataset",
            "Aspect-based sentiment, entities, topics, monthly trend, per-review mentions, FAQ and summary.",
            ref("InsightsDocument"),
        ),
        "/api/feed.json": _read(
            "getJsonFeed",
            "feeds",
            "JSON Feed of the newest reviews",
            "JSON Feed 1.1 with the 50 newest reviews. A WebSub topic.",
            JSON_FEED_SCHEMA,
            "application/feed+json",
            TOPIC_HEADERS,
        ),
        "/feed.xml": _read(
            "getAtomFeed",
            "feeds",
            "Atom feed of the newest reviews",
            "Atom (RFC 4287) feed with the 50 newest reviews. A WebSub topic.",
            {"type": "string"},
            "application/atom+xml",
            TOPIC_HEADERS,
        ),
        "/api/reviews/search": {
            "get": _operation(
                "searchReviews",
                "reviews",
                "Search reviews",
                "Filters combine with AND; results are newest first (date, then id, descending) unless "
                "`sort` says otherwise; `next_cursor` pages through them. The MCP tool `search_reviews` runs "
                "the same code with the same parameters.",
                {
                    "200": _json(
                        ref("SearchResult"),
                        "Matching reviews, in the order asked for.",
                        headers=SEARCH_HEADERS,
                    ),
                    "400": _error(
                        "Invalid parameters: `issues` lists every problem at once (unknown or repeated "
                        "parameter, wrong type, out of range, impossible date, since after until, a cursor "
                        "that is not ours (`invalid_cursor`) or was issued for other filters or another sort "
                        "(`cursor_mismatch`))."
                    ),
                    "503": BUSY,
                },
                _query_params(SEARCH_PARAMS),
            )
        },
        "/api/reviews/since/{date}": {
            "get": _operation(
                "getReviewsSince",
                "reviews",
                "Reviews since a date",
                "Every review dated on or after `date`, newest first; for incremental sync. With `limit` "
                "or `cursor`, one page of them and the `next_cursor` of the next.",
                {
                    **_representation(
                        ref("SinceResult"),
                        "Reviews dated on or after `date`, newest first; gzip when the request accepts it "
                        "(its ETag then ends in `-gzip`).",
                    ),
                    "400": _error(
                        "`date` is not a real calendar date as YYYY-MM-DD, or a paging parameter is wrong "
                        "(unknown, out of range, a cursor not issued for this date)."
                    ),
                },
                [
                    {
                        "name": "date",
                        "in": "path",
                        "required": True,
                        "description": "A real calendar date, YYYY-MM-DD.",
                        "schema": DATE_SCHEMA,
                    },
                    *_query_params(SINCE_PARAMS),
                    *CONDITIONAL_PARAMS,
                ],
            )
        },
        "/api/reviews/{id}": {
            "get": _operation(
                "getReview",
                "reviews",
                "One review",
                "A single review by its id (ULID). Feed items link here.",
                {**_representation(ref("Review"), "The review."), "404": _error("No review has this id.")},
                [REVIEW_ID_PARAM, *CONDITIONAL_PARAMS],
            )
        },
        "/": _read(
            "getHomePage",
            "pages",
            "The business at a glance (HTML)",
            "For people: the business, its ratings and insights as charts, and the newest reviews. "
            "JSON paths stay JSON whatever Accept says.",
            HTML_PAGE,
            "text/html",
            PAGE_HEADER_DOCS,
        ),
        "/reviews": {
            "get": _operation(
                "getReviewsPage",
                "pages",
                "Reviews, searched (HTML)",
                "The search form and one page of results, found by the same code and parameters as "
                "/api/reviews/search.",
                {
                    "200": _json(
                        HTML_PAGE,
                        "The form and the matching reviews.",
                        "text/html",
                        {k: v for k, v in PAGE_HEADER_DOCS.items() if k not in ("ETag", "Last-Modified")},
                    ),
                    "400": _json(HTML_PAGE, "The form again, each problem beside its field.", "text/html"),
                    "503": BUSY,
                },
                _form_params(SEARCH_PARAMS),
            )
        },
        "/reviews/{id}": {
            "get": _operation(
                "getReviewPage",
                "pages",
                "One review's permalink page (HTML)",
                "Feed items and every public review link point here; it links its JSON twin.",
                {
                    **_representation(HTML_PAGE, "The review's page.", "text/html", PAGE_HEADER_DOCS),
                    "404": _json(HTML_PAGE, "No review has this id: a page that says so.", "text/html"),
                },
                [REVIEW_ID_PARAM, *CONDITIONAL_PARAMS],
            )
        },
        "/widget": {
            "get": _operation(
                "getWidget",
                "pages",
                "The embeddable widget (HTML, for an iframe)",
                "The newest reviews in a small page made to be framed by the business's own site; loads "
                "nothing else and sets no cookie.",
                {
                    **_representation(HTML_PAGE, "The widget.", "text/html", WIDGET_HEADER_DOCS),
                    "400": _error("Invalid options: `issues` lists every problem."),
                },
                [
                    *(
                        {
                            "name": name,
                            "in": "query",
                            "required": False,
                            "description": text,
                            "schema": schema,
                        }
                        for name, text, schema in WIDGET_PARAMS
                    ),
                    *CONDITIONAL_PARAMS,
                ],
            )
        },
        "/.well-known/openapi.json": {
            "get": _operation(
                "getOpenApi",
                "operations",
                "This document",
                "The OpenAPI 3.1.0 description of this API; its `servers` entry is the configured public "
                "base URL.",
                _representation(
                    {"type": "object"},
                    "OpenAPI 3.1.0 document.",
                    headers={k: v for k, v in READ_HEADER_DOCS.items() if k != "Last-Modified"},
                ),
            )
        },
        "/healthz": {
            "get": _operation(
                "getHealth",
                "operations",
                "Health check (operational, for load balancers and systemd watchers)",
                "200 with the loaded data versions and hub status while reads are served (status "
                "`degraded` and the reason when the hub is unavailable); 503 while not ready. Never cached.",
                {
                    "200": _json(HEALTH_SCHEMA, "Ready.", headers=NO_STORE),
                    "503": _json(HEALTH_SCHEMA, "Not ready, or a part is not working.", headers=NO_STORE),
                },
                parameters=None,
            )
        },
        "/mcp": {
            "post": _operation(
                "mcp",
                "mcp",
                f"MCP server (JSON-RPC 2.0 over streamable HTTP; protocol {', '.join(SUPPORTED_VERSIONS)})",
                f"A {MODERN_VERSION} request stands alone: its version and client capabilities in "
                "`params._meta`, and the `MCP-Protocol-Version`, `Mcp-Method` and (for a named call) "
                "`Mcp-Name` headers; no session. Under the 2025 revisions, send `initialize` first; later "
                "requests carry the `Mcp-Session-Id` header from its answer. docs/mcp.md describes the "
                "tools, prompts and errors, which are JSON-RPC error objects.",
                {
                    "200": _rpc("JSON-RPC response (result or error) to a request that was read."),
                    "202": {"description": "Accepted notification or client response; no body."},
                    "400": _rpc(
                        "Parse error (-32700), invalid request (-32600), missing session id or unsupported "
                        "MCP-Protocol-Version (-32000)."
                    ),
                    "403": _rpc("Origin not allowed (-32000)."),
                    "404": _rpc("Unknown or ended session (-32000): initialize again."),
                    "405": _error("Method not allowed (GET: this server offers no SSE stream); see Allow."),
                    "406": _rpc("Accept does not allow application/json (-32000)."),
                    "408": _error(
                        "The body did not arrive within `--body-timeout` of the head "
                        "(`request_timeout`); the connection is closed."
                    ),
                    "413": _error(
                        "Request body over `--max-body` (`body_too_large`), by its Content-Length "
                        "or as its chunks arrive; refused by the HTTP server, the connection is closed."
                    ),
                    "415": _rpc("Content-Type is not application/json (-32000)."),
                },
                [
                    _header_param(
                        "Mcp-Session-Id",
                        "Session id from the initialize response; required after "
                        "initialize (2025 revisions).",
                    ),
                    _header_param(
                        "MCP-Protocol-Version",
                        f"One of {', '.join(SUPPORTED_VERSIONS)}; required for "
                        f"{MODERN_VERSION}, {HEADER_DEFAULT_VERSION} when absent in a 2025 session.",
                    ),
                ],
                (
                    "application/json",
                    {
                        "type": "object",
                        "required": ["jsonrpc", "method"],
                        "properties": {
                            "jsonrpc": {"const": "2.0"},
                            "id": {"type": ["string", "integer"]},
                            "method": {"type": "string"},
                            "params": {"type": "object"},
                        },
                    },
                ),
            ),
            "delete": _operation(
                "mcpEndSession",
                "mcp",
                "End an MCP session",
                "Ends the session named by `Mcp-Session-Id`; later requests with it get 404.",
                {
                    "204": {"description": "Session ended."},
                    "400": _rpc("Missing session id (-32000)."),
                    "403": _rpc("Origin not allowed (-32000)."),
                    "404": _rpc("Unknown session (-32000)."),
                },
                [_header_param("Mcp-Session-Id", required=True)],
            ),
        },
        "/api/websub/hub": {
            "post": _operation(
                "websubHub",
                "websub",
                "WebSub hub: subscribe or unsubscribe",
                "Form-encoded WebSub subscription request (W3C WebSub). Verification of intent runs "
                "in the background; notifications POST the full topic body.",
                {
                    status: {"description": text, "content": {"text/plain": {}}}
                    for status, text in HUB_ANSWERS.items()
                },
                None,
                (
                    "application/x-www-form-urlencoded",
                    {
                        "type": "object",
                        "required": ["hub.callback", "hub.mode", "hub.topic"],
                        "properties": {
                            "hub.callback": {"type": "string", "description": "HTTPS URL of your callback."},
                            "hub.mode": {"enum": ["subscribe", "unsubscribe"]},
                            "hub.topic": {"type": "string", "description": "One of the three topic URLs."},
                            "hub.lease_seconds": {
                                "type": "string",
                                "description": "Requested lease in seconds, clamped to the hub's bounds.",
                            },
                            "hub.secret": {
                                "type": "string",
                                "description": "Under 200 bytes; enables X-Hub-Signature.",
                            },
                        },
                    },
                ),
            )
        },
    }


# Answers any operation can get: the HTTP server refuses all but the 500 before any route runs
# (see http_parser.py and docs/security.md), and a bug is a 500 (logged with its stack trace, which
# never reaches the client). An operation's own 400 keeps its description.
SERVER_REFUSALS = {
    "400": (
        "BadRequest",
        "A malformed request (`bad_request`): request line, target, Host, header fields or "
        "body framing (RFC 9112); the connection is closed.",
    ),
    "408": (
        "RequestTimeout",
        "The request head (or body) did not arrive in time (`request_timeout`); the connection is closed.",
    ),
    "414": ("UriTooLong", "Request line over 8 KiB (`uri_too_long`); the connection is closed."),
    "431": (
        "HeaderFieldsTooLarge",
        "Headers over 32 KiB or 100 lines (`request_header_fields_too_large`); the connection is closed.",
    ),
    "500": ("InternalError", "A bug (`internal_error`); logged on the server."),
    "501": (
        "NotImplemented",
        "A transfer coding other than a final `chunked`, or a method the server does not "
        "implement (`not_implemented`; methods are case-sensitive: `get` is one); the "
        "connection is closed.",
    ),
    "505": (
        "HttpVersionNotSupported",
        "An HTTP version other than 1.x (`http_version_not_supported`); the connection is closed.",
    ),
}


AI_CATALOG_SCHEMA = {
    "type": "object",
    "description": "AI Catalog (https://github.com/Agent-Card/ai-card): one entry, this server's MCP "
    "server card.",
    "required": ["specVersion", "host", "entries"],
    "properties": {
        "specVersion": {"type": "string"},
        "host": {
            "type": "object",
            "required": ["displayName"],
            "properties": {"displayName": {"type": "string"}, "documentationUrl": {"type": "string"}},
        },
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["identifier", "type", "url"],
                "properties": {
                    "identifier": {"type": "string"},
                    "type": {"const": "application/mcp-server-card+json"},
                    "url": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}
DISCOVERY_HEADERS = {k: v for k, v in READ_HEADER_DOCS.items() if k != "Last-Modified"}


def _discovery_paths() -> dict[str, Any]:
    """The MCP server card (SEP-2127) at its two paths, and the AI Catalog listing it."""
    card = (
        "Who this MCP server is and how to connect, before connecting: name, version, title and "
        "description naming the business, `remotes` (the streamable HTTP endpoint and every protocol "
        "version it speaks), capabilities, tools, prompts and resources. Changes when the data's business "
        "does."
    )
    paths = {
        path: _read(
            operation_id,
            "mcp",
            "MCP server card",
            card,
            ref("ServerCard"),
            "application/mcp-server-card+json",
            DISCOVERY_HEADERS,
        )
        for path, operation_id in (
            ("/mcp/server-card", "getServerCard"),
            ("/.well-known/mcp/server-card", "getWellKnownServerCard"),
        )
    }
    paths["/.well-known/ai-catalog.json"] = _read(
        "getAiCatalog",
        "mcp",
        "AI Catalog",
        "The AI artifacts this host offers: one entry, of type `application/mcp-server-card+json`, whose url "
        "is the server card.",
        AI_CATALOG_SCHEMA,
        headers=DISCOVERY_HEADERS,
    )
    return paths


def build_openapi(base_url: str) -> dict[str, Any]:
    """The whole OpenAPI 3.1.0 document for a service published at `base_url`."""
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "reviewsd: reviews and insights API",
            "version": API_VERSION,
            "description": "Public, read-only API for one business's customer reviews and review "
            "insights. No authentication. Every error body is the Error schema. A method the server "
            "does not implement gets a 501 (components/responses/NotImplemented).",
            "license": {"name": "MIT", "identifier": "MIT"},
            "contact": {"name": "reviewsd contributors"},
        },
        "servers": [{"url": base_url}],
        "security": [],  # public: no operation needs credentials
        "tags": TAGS,
        "paths": {**_paths(), **_discovery_paths()},
        "webhooks": webhooks_section(),
        "components": {
            "schemas": {
                s["title"]: _embed(s, s["title"])
                for f, s in SCHEMAS.items()
                if f not in PARAMETER_SCHEMAS + OFFLINE_SCHEMAS
            },
            "responses": {name: _error(description) for name, description in SERVER_REFUSALS.values()},
        },
    }
    return _with_common_headers(document)


def _with_common_headers(document: dict[str, Any]) -> dict[str, Any]:
    """The document with the headers of every response (surface.HEADERS, where="every") on each."""
    every = [header for header in surface.HEADERS if header.where == "every"]
    if not every:
        return document
    answers = [*document["components"]["responses"].values()]
    for path_item in document["paths"].values():
        for operation in path_item.values():
            answers += operation["responses"].values()
    for answer in answers:
        if "$ref" not in answer:
            # A new dict: answers share the module's header dicts, which must stay as they are.
            answer["headers"] = {
                **answer.get("headers", {}),
                **{header.name: _header(header.description) for header in every},
            }
    return document
