"""MCP server at POST /mcp: hand-rolled JSON-RPC 2.0, protocol 2026-07-28 (stateless) and the 2025 sessions.

A pure pipeline with no I/O: `parse` the body, check the envelope (`classify`), then `McpServer.handle`
looks the method up, calls it and wraps the result. Errors are `RpcError` values with named `ErrorCode`s,
turned into JSON-RPC error objects in one place (`McpServer.handle`).
Tools, resources and sessions live here, prompts and completion in mcp_prompts.py, the HTTP layer
(Origin, media types, body size, sessions by header, the 2026-07-28 per-request rules) in
mcp_http.py. Every tool and resource reads `app.store.current` when it is called, so after a data
reload the next call sees the new data. Choices where the specifications leave room: docs/internals.md
("MCP"), `valid_id` (which request ids we take) and `McpServer.call_tool` (which errors are tool results).
In order below: errors and encoding, the envelope, self-contained schemas, tools, sessions, the dispatcher.
"""

from __future__ import annotations

import functools
import json
import logging
import operator
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urljoin


import mcp_prompts
from dataset import SCHEMAS, Dataset, encode_json, folded_names, loads_data, named
from mcp_prompts import REVIEW_PATH, PromptError
from search import DATE_SCHEMA, InvalidParams, SchemaValidator, run_search, search_result_json

log = logging.getLogger("reviewsd.mcp")

MODERN_VERSION = "2026-07-28"  # stateless: version and capabilities in every request's _meta
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")  # initialize and a session; newest first
LATEST_VERSION = LEGACY_VERSIONS[0]  # what initialize answers to a version we do not speak
SUPPORTED_VERSIONS = (MODERN_VERSION, *LEGACY_VERSIONS)  # server/discover's supportedVersions
HEADER_DEFAULT_VERSION = "2025-03-26"  # what an absent MCP-Protocol-Version header means
SERVER_INFO = {"name": "reviewsd", "title": "Clinic reviews and insights (read-only)", "version": "1.0.0"}
CAPABILITIES = {"tools": {"listChanged": False}, "resources": {"subscribe": False, "listChanged": False},
                "prompts": {"listChanged": False}, "completions": {}}
MODERN_CAPABILITIES = {**CAPABILITIES, "resources": {"listChanged": False}}  # 2026-07-28 removed resources/subscribe
READ_ONLY = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False, "destructiveHint": False}


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    TRANSPORT = -32000  # refused by the HTTP layer in a 2025 session; the HTTP status says why
    RESOURCE_NOT_FOUND = -32002  # MCP 2025-06-18 and 2025-11-25, server/resources (2026-07-28: -32602)
    HEADER_MISMATCH = -32020  # MCP 2026-07-28: an MCP header missing, malformed or not matching the body
    UNSUPPORTED_VERSION = -32022  # MCP 2026-07-28: UnsupportedProtocolVersionError


class RpcError(Exception):
    """A JSON-RPC error as a value: code, message, optional data, and the request id if it was read."""

    def __init__(self, code: ErrorCode, message: str, data: Any = None, request_id: Any = None):
        super().__init__(message)
        self.code, self.message, self.data, self.request_id = code, message, data, request_id


class ToolError(Exception):
    """A tool execution error the model can fix; the message says how."""


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def encode_message(message: Any) -> bytes:
    """Compact UTF-8 JSON; \\u escapes when a string holds a lone surrogate (valid JSON, not UTF-8)."""
    try:
        return encode_json(message)
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode("ascii")


class EncodedJson(bytes):
    """A JSON value already encoded (compact UTF-8), spliced into a message as is.

    A tool result's reviews are cut from the pre-encoded /reviews.json body, and the
    result is written once as bytes instead of being encoded for structuredContent,
    again for the text block and a third time for the envelope.
    """


def encoded(value: Any) -> EncodedJson:
    return value if isinstance(value, EncodedJson) else EncodedJson(encode_message(value))


_CONTROL_CHARACTERS = bytes(range(0x20))


def json_string(text: bytes) -> bytes:
    """The JSON string literal whose content is the UTF-8 `text` (a text block carrying JSON).

    Text without raw control characters (JSON written by `json` has none: it escapes
    them inside strings) needs only backslashes and quotes escaped: two `bytes.replace`
    passes, several times faster than decoding the text and encoding it as a string.
    """
    if len(text.translate(None, _CONTROL_CHARACTERS)) != len(text):
        return encode_message(text.decode("utf-8"))
    return b'"' + text.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def with_reviews(fields: Mapping[str, Any], reviews: bytes) -> EncodedJson:
    """The object `fields` plus `"reviews": [...]` from comma-separated pre-encoded reviews."""
    head = encode_message(fields)[:-1] + (b"," if fields else b"")
    return EncodedJson(head + b'"reviews":[' + reviews + b"]}")


def encode_response(response: Mapping[str, Any]) -> bytes:
    """A response message on the wire; a pre-encoded result is spliced in, not decoded and encoded again."""
    result = response.get("result")
    if not isinstance(result, EncodedJson):
        return encode_message(response)
    request_id = response["id"]
    encoded_id = b"%d" % request_id if type(request_id) is int else encode_message(request_id)
    return b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (encoded_id, result)


@dataclass(frozen=True)
class RpcRequest:
    id: str | int
    method: str
    params: Any


@dataclass(frozen=True)
class RpcNotification:
    method: str
    params: Any


@dataclass(frozen=True)
class RpcResponse:
    """A response the client sent us (we never send requests, so it is only acknowledged)."""

    id: Any


Message = RpcRequest | RpcNotification | RpcResponse


def parse(body: bytes) -> Any:
    try:
        return loads_data(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise RpcError(ErrorCode.PARSE_ERROR, "Parse error: the body is not UTF-8") from None
    except (ValueError, RecursionError):  # JSONDecodeError, NaN/Infinity, over-long integers, deep nesting
        raise RpcError(ErrorCode.PARSE_ERROR, "Parse error: the body is not valid JSON") from None


def valid_id(value: Any) -> bool:
    """Strings and integers. Not null (MCP forbids it), booleans, or numbers with a fraction or exponent
    (1.5, 1.0, 1e3: JSON-RPC says ids SHOULD NOT have fractions): those are -32600 Invalid Request."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(value: Any) -> Message:
    """Check the JSON-RPC 2.0 envelope of one parsed message; RpcError(-32600) if it is not one."""
    if isinstance(value, list):
        raise RpcError(ErrorCode.INVALID_REQUEST, "Invalid Request: batches are not supported (MCP 2025-06-18 "
                                                  "removed JSON-RPC batching); send one message per POST")
    if not isinstance(value, dict):
        raise RpcError(ErrorCode.INVALID_REQUEST, "Invalid Request: a JSON-RPC message must be a JSON object")
    request_id = value.get("id") if valid_id(value.get("id")) else None

    def invalid(why: str) -> RpcError:
        return RpcError(ErrorCode.INVALID_REQUEST, f"Invalid Request: {why}", request_id=request_id)

    if value.get("jsonrpc") != "2.0":
        raise invalid('"jsonrpc" must be exactly "2.0"')
    if "method" not in value:  # a response from the client
        if ("result" in value) == ("error" in value):
            raise invalid('a request needs "method"; a response needs exactly one of "result" and "error"')
        if "id" not in value or not (value["id"] is None or valid_id(value["id"])):
            raise invalid('a response needs an "id" that is a string, an integer or null')
        return RpcResponse(value["id"])
    if not isinstance(value["method"], str):
        raise invalid('"method" must be a string')
    params = value.get("params")
    if "params" in value and not isinstance(params, (dict, list)):
        raise invalid('"params" must be an object or an array')
    if "id" not in value:
        return RpcNotification(value["method"], params)
    if not valid_id(value["id"]):
        raise invalid('"id" must be a string or an integer (not null, a boolean or a fraction)')
    return RpcRequest(value["id"], value["method"], params)


_SCHEMA_BY_ID = {schema["$id"]: name for name, schema in SCHEMAS.items()}
_SCHEMA_BASE_URI = next(iter(SCHEMAS.values()))["$id"].rsplit("/", 1)[0] + "/"
_DROPPED_KEYS = ("$id", "$schema", "$defs")


def bundle_schema(node: Mapping[str, Any]) -> dict[str, Any]:
    """`node` (one of schemas/*.json, or a new schema referring to them) with every `$ref` into schemas/ inlined
    as `#/$defs/<name>`, for clients that cannot fetch refs."""
    defs: dict[str, Any] = {}
    names: dict[tuple[str, str], str] = {}

    def rewrite(value: Any, base_uri: str, top: bool = False) -> Any:
        if isinstance(value, list):
            return [rewrite(v, base_uri) for v in value]
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        if "$ref" in value:
            uri, _, fragment = urljoin(base_uri, value["$ref"]).partition("#")
            file = _SCHEMA_BY_ID[uri]
            parts = [p.replace("~1", "/").replace("~0", "~") for p in fragment.split("/")[1:]]
            target = functools.reduce(operator.getitem, parts, SCHEMAS[file])
            if parts and (len(parts) != 2 or parts[0] != "$defs"):
                # A part of a schema (insights' `faq`, a business service): copied in place, not worth a name.
                out.update(rewrite(target, SCHEMAS[file]["$id"]))
            else:  # a whole file or one of its `$defs`: a `$defs` entry of the bundle
                if (file, fragment) not in names:
                    name = names[file, fragment] = _def_name(file, parts, set(defs))
                    defs[name] = {}  # reserve the name first: a schema may refer to itself
                    defs[name] = rewrite(target, SCHEMAS[file]["$id"], top=True)
                out["$ref"] = "#/$defs/" + names[file, fragment]
        for key, item in value.items():
            if key != "$ref" and not (top and key in _DROPPED_KEYS):
                out[key] = rewrite(item, base_uri)
        return out

    root = rewrite(node, node.get("$id", _SCHEMA_BASE_URI), top=True)
    if defs:
        root["$defs"] = dict(sorted(defs.items()))
    return root


def _def_name(file: str, parts: Sequence[str], taken: set[str]) -> str:
    """A readable `$defs` key: the file's stem for a whole file, else the definition's name."""
    stem = file.removesuffix(".schema.json").replace("-", "_")
    name = parts[-1] if parts else stem
    candidate, n = name, 2
    if candidate in taken:
        candidate = f"{stem}_{name}"
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def ref(file: str, fragment: str = "") -> dict[str, str]:
    return {"$ref": f"{file}#{fragment}" if fragment else file}


def _object_schema(properties: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties), "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any]
    run: Callable[[Dataset, dict[str, Any]], dict[str, Any] | EncodedJson]
    validate: bool = True  # False when `run` validates itself (search_reviews, through run_search)

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "description": self.description,
                "inputSchema": self.input_schema, "outputSchema": self.output_schema,
                "annotations": {"title": self.title, **READ_ONLY}}


REVIEW, REVIEWS, INSIGHTS = "review.schema.json", "reviews.schema.json", "insights.schema.json"
SENTIMENTS = ("positive", "neutral", "negative")
# The members of insights.json that get_insights_summary returns as they are, beside the entities.
SUMMARY_KEYS = ("generated_at", "review_count", "date_range", "overall_sentiment", "summary", "pull_quote", "topics",
                "faq", "aspects")


def _limit_arg(maximum: int, default: int) -> dict[str, Any]:
    return {"description": f"Most reviews to return (0 to {maximum}, default {default}).",
            "type": "integer", "minimum": 0, "maximum": maximum, "default": default}


def _reviews_result(subject: str, schema: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> dict:
    """Output schema of a record plus the newest reviews mentioning it."""
    properties = {
        subject: schema,
        **(extra or {}),
        "matched": {"description": "Reviews that mention it (before the limit).", "type": "integer", "minimum": 0},
        "returned": {"description": "Reviews in this result.", "type": "integer", "minimum": 0},
        "reviews": {"description": "The newest matching reviews, newest first.", "type": "array",
                    "items": ref(REVIEW)},
    }
    return bundle_schema(_object_schema(properties, list(properties)))


def _newest(dataset: Dataset, fields: Mapping[str, Any], positions: Sequence[int], limit: Any) -> EncodedJson:
    """`fields` plus the first `limit` of `positions` as reviews, and how many there are."""
    chosen = positions[: int(limit)]
    reviews = dataset.reviews_json_at(chosen)
    return with_reviews({**fields, "matched": len(positions), "returned": len(chosen)}, reviews)


def resolve(kind: str, query: str, records: Sequence[Mapping[str, Any]], keys: Sequence[str] = ("id", "label"),
            describe: Callable[[Mapping[str, Any]], str] = lambda r: f"{r['id']} ({r['label']})") -> Mapping[str, Any]:
    """The record `query` names (dataset.named: the search's rule), else a ToolError listing the choices."""
    found = named(query, folded_names(records, keys))
    if len(found) == 1:
        return found[0]
    choices = "; ".join(describe(r) for r in (found or records)) or "none"
    if found:
        raise ToolError(f"{query!r} matches several {kind}s: {choices}. Ask again with one id or full name.")
    raise ToolError(f"Unknown {kind} {query!r}. Valid {kind}s: {choices}.")


def _since_output_schema() -> dict[str, Any]:
    schema = bundle_schema(SCHEMAS["since-result.schema.json"])
    schema["properties"]["count"]["description"] = "Reviews dated on or after `since`, before the limit."
    schema["properties"]["returned"] = {"description": "Reviews in this result (at most limit).",
                                        "type": "integer", "minimum": 0}
    schema["required"] = ["since", "count", "returned", "reviews"]
    return schema


def _summary_output_schema() -> dict[str, Any]:
    properties = {
        **{key: ref(INSIGHTS, f"/properties/{key}") for key in SUMMARY_KEYS},
        "technicians": ref(INSIGHTS, "/properties/entities/properties/technicians"),
        "services": ref(INSIGHTS, "/properties/entities/properties/services"),
    }
    return bundle_schema(_object_schema(properties, list(properties)))


def get_business(dataset: Dataset, args: dict[str, Any]) -> dict[str, Any]:
    return {"business": dataset.business, "aggregate_rating": dataset.reviews_doc["aggregate_rating"]}


def search_reviews(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    matched, positions = run_search(dataset, args)  # the same path as GET /api/reviews/search
    return EncodedJson(search_result_json(dataset, matched, positions))


def get_review(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    review_id = args["id"].strip().upper()  # ULIDs are case-insensitive; the data spells them upper case
    position = dataset.position_of.get(review_id)
    if position is None:
        raise ToolError(f"No review has id {args['id']!r}. Review ids are 26-character ULIDs such as "
                        f"{dataset.reviews[0]['id'] if dataset.reviews else '01HV6Z9M8Q2W3E4R5T6Y7U8I9O'}; "
                        "use search_reviews or get_reviews_since to find them.")
    mentions = encode_message(dataset.insights_doc["per_review"].get(review_id))
    return EncodedJson(b'{"review":%s,"mentions":%s}' % (dataset.review_json(position), mentions))


def get_reviews_since(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    lo, hi = dataset.window(args["since"], None)
    stop = min(hi, lo + int(args["limit"]))
    return with_reviews({"since": args["since"], "count": hi - lo, "returned": stop - lo},
                        dataset.reviews_json_range(lo, stop))


def get_aspect_sentiment(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    aspect = resolve("aspect", args["aspect"], dataset.insights_doc["aspects"])
    sentiment = args.get("sentiment")
    positions = dataset.positions_by_aspect.get((aspect["id"], sentiment), [])
    return _newest(dataset, {"aspect": aspect, "sentiment": sentiment}, positions, args["limit"])


def get_technician(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    technician = resolve("technician", args["name"], list(dataset.technicians.values()), ("id", "name", "label"),
                         lambda t: f"{t['name']} (id {t['id']}, {t['role']})")
    positions = dataset.positions_by_technician.get(technician["id"], [])
    return _newest(dataset, {"technician": technician}, positions, args["limit"])


def get_service(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    service = resolve("service", args["service"], dataset.business["services"])
    positions = dataset.positions_by_service.get(service["id"], [])
    return _newest(dataset, {"service": service, "insights": dataset.services.get(service["id"])}, positions,
                   args["limit"])


def get_rating_trend(dataset: Dataset, args: dict[str, Any]) -> dict[str, Any]:
    temporal = dataset.insights_doc["temporal"]
    monthly = temporal["monthly"][-int(args["months"]):] if "months" in args else temporal["monthly"]
    return {"monthly": monthly, "trend": temporal["trend"]}


def get_insights_summary(dataset: Dataset, args: dict[str, Any]) -> dict[str, Any]:
    doc = dataset.insights_doc
    return {**{key: doc[key] for key in SUMMARY_KEYS}, "technicians": doc["entities"]["technicians"],
            "services": doc["entities"]["services"]}


TOOLS = {tool.name: tool for tool in (  # the nine read-only tools
    Tool("get_business", "Business details and rating",
         "Returns the clinic's identity (name, category, description, website, phone, address, geo, "
         "opening hours, service areas, services with ids) and its aggregate star rating (mean, count, "
         "count per star). Use it first when asked about the business itself, where it is, when it is "
         "open, what services it offers, or its overall rating. Takes no arguments. Example: {}.",
         _object_schema({}),
         bundle_schema(_object_schema({"business": ref(REVIEWS, "/$defs/business"),
                                       "aggregate_rating": ref(REVIEWS, "/$defs/aggregate_rating")},
                                      ["business", "aggregate_rating"])),
         get_business),
    Tool("search_reviews", "Search reviews",
         "Finds verified reviews matching every filter given (filters combine with AND); results are "
         "newest first. Returns {matched: total matches before the limit, returned, reviews: full review "
         "objects}. Use it for questions like 'recent 1-star reviews', 'reviews mentioning parking', "
         "'what do people say about Dr. Patel'. Same parameters and results as GET /api/reviews/search. "
         "Example: {\"min_rating\": 4, \"mentions_service\": \"massage-therapy\", \"limit\": 5}.",
         {k: v for k, v in SCHEMAS["search-params.schema.json"].items() if k not in ("$id", "$schema")},
         bundle_schema(SCHEMAS["search-result.schema.json"]), search_reviews, validate=False),
    Tool("get_review", "One review by id",
         "Returns one review (author, rating, date, text, source, owner reply) and what the analysis found "
         "in it (aspects with sentiment, technicians, services, problems, service areas, topics; null if "
         "not analysed). Use it when you have a review id from another tool, a feed or a pull quote. "
         "Example: {\"id\": \"01HV6Z9M8Q2W3E4R5T6Y7U8I9O\"}.",
         _object_schema({"id": {"description": "Review id (26-character ULID).", "type": "string",
                                "minLength": 1, "maxLength": 64}}, ["id"]),
         bundle_schema(_object_schema({"review": ref(REVIEW),
                                       "mentions": {"oneOf": [ref(INSIGHTS, "/$defs/review_mentions"),
                                                              {"type": "null"}]}}, ["review", "mentions"])),
         get_review),
    Tool("get_reviews_since", "Reviews since a date",
         "Returns the reviews dated on or after a date, newest first: {since, count: how many there are "
         "in total, returned, reviews}. The list is capped by `limit` (default 50, at most 500) to fit a "
         "model's context; when count > returned, narrow the window or page with search_reviews "
         "(since/until). Use it for 'what's new since ...'. A date after the newest review gives count 0. "
         "Example: {\"since\": \"2026-10-01\", \"limit\": 20}.",
         _object_schema({"since": {**DATE_SCHEMA, "description": "First date to include, YYYY-MM-DD."},
                         "limit": _limit_arg(500, 50)}, ["since"]),
         _since_output_schema(), get_reviews_since),
    Tool("get_aspect_sentiment", "Sentiment about one aspect",
         "Returns what reviewers think about one aspect of the visit (e.g. pain relief, wait time, "
         "billing and insurance, front desk): mention counts per sentiment, positive share, score from "
         "-1 to 1, top phrases, plus the newest reviews mentioning it, optionally only those with one "
         "sentiment. Aspect ids and labels are listed by get_insights_summary; an unknown aspect returns "
         "the valid ones. Example: {\"aspect\": \"wait time\", \"sentiment\": \"negative\", \"limit\": 3}.",
         _object_schema({"aspect": {"description": "Aspect id or label, case-insensitive (e.g. wait-time).",
                                    "type": "string", "minLength": 1, "maxLength": 200},
                         "sentiment": {"description": "Only reviews with this sentiment about the aspect.",
                                       "enum": list(SENTIMENTS)},
                         "limit": _limit_arg(20, 3)}, ["aspect"]),
         _reviews_result("aspect", ref(INSIGHTS, "/$defs/aspect"),
                         {"sentiment": {"oneOf": [{"enum": list(SENTIMENTS)}, {"type": "null"}]}}),
         get_aspect_sentiment),
    Tool("get_technician", "One practitioner",
         "Returns what reviews say about one practitioner (chiropractor, massage or physical therapist): "
         "role, mention counts per sentiment, score from -1 to 1, plus the newest reviews mentioning them. "
         "Accepts an id, full name or label, case- and accent-insensitive; a unique part of a name also "
         "works ('Patel'). An unknown name returns the valid ones. Example: {\"name\": \"Dr. Maya Patel\"}.",
         _object_schema({"name": {"description": "Technician id, name or label (e.g. Dr. Maya Patel).",
                                  "type": "string", "minLength": 1, "maxLength": 200},
                         "limit": _limit_arg(20, 5)}, ["name"]),
         _reviews_result("technician", ref(INSIGHTS, "/$defs/technician")),
         get_technician),
    Tool("get_service", "One service",
         "Returns one service the clinic offers (id, label, description), what reviews say about it "
         "(mention counts per sentiment and score, or null if no review mentions it) and the newest "
         "reviews mentioning it. Accepts a service id or label, case-insensitive; get_business lists "
         "them. Example: {\"service\": \"spinal adjustment\", \"limit\": 3}.",
         _object_schema({"service": {"description": "Service id or label (e.g. massage-therapy).",
                                     "type": "string", "minLength": 1, "maxLength": 200},
                         "limit": _limit_arg(20, 5)}, ["service"]),
         _reviews_result("service", ref(REVIEWS, "/$defs/business/properties/services/items"),
                         {"insights": {"oneOf": [ref(INSIGHTS, "/$defs/entity"),
                                                 {"type": "null"}]}}),
         get_service),
    Tool("get_rating_trend", "Ratings over time",
         "Returns the monthly series (month, review count, average rating, sentiment score; null for "
         "months without reviews), oldest first, and the fitted trend of the average rating (improving, "
         "stable or declining, slope per month, window). Use it for 'are reviews getting better?'. "
         "`months` keeps only the most recent months. Example: {\"months\": 12}.",
         _object_schema({"months": {"description": "Only the most recent N months (default: all).",
                                    "type": "integer", "minimum": 1, "maximum": 1200}}),
         bundle_schema(_object_schema({"monthly": {"type": "array",
                                                   "items": ref(INSIGHTS, "/$defs/month")},
                                       "trend": ref(INSIGHTS, "/$defs/trend")},
                                      ["monthly", "trend"])),
         get_rating_trend),
    Tool("get_insights_summary", "Insights summary",
         "Returns the analysis of all reviews in one object: overall sentiment (score, positive/neutral/"
         "negative shares), an editorial summary, a pull quote, topics, an FAQ answered from reviews, "
         "and the aspect, technician and service records with their sentiment. Start here for 'what do "
         "patients think of this clinic?' and to learn valid aspect, technician and service names. "
         "Takes no arguments. Example: {}.",
         _object_schema({}), _summary_output_schema(), get_insights_summary),
)}
_VALIDATORS = {name: SchemaValidator(tool.input_schema, noun="argument")
               for name, tool in TOOLS.items() if tool.validate}
# A default is written once, in the input schema that clients read; run_tool fills it in.
_DEFAULTS = {name: {key: spec["default"] for key, spec in tool.input_schema["properties"].items() if "default" in spec}
             for name, tool in TOOLS.items()}


def run_tool(name: str, dataset: Dataset, arguments: dict[str, Any]) -> dict[str, Any] | EncodedJson:
    """Run a tool on the dataset current at call time; InvalidParams or ToolError for arguments the model should fix."""
    tool = TOOLS[name]
    if tool.validate:
        issues = _VALIDATORS[name].issues(arguments)
        if issues:
            raise InvalidParams(issues)
    return tool.run(dataset, {**_DEFAULTS[name], **arguments})


@dataclass
class Session:
    """What the server remembers about one client between requests."""

    protocol_version: str = HEADER_DEFAULT_VERSION
    last_used: float = 0.0

    @property
    def modern(self) -> bool:
        """A 2026-07-28 request: one request, no session (mcp_http makes a Session for it)."""
        return self.protocol_version == MODERN_VERSION


class SessionStore:
    """Sessions by id, least recently used first; thread-safe, with an injectable monotonic clock."""

    def __init__(self, max_sessions: int, idle_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.max_sessions = max(1, max_sessions)
        self.idle_seconds = idle_seconds
        self.clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, session: Session) -> str:
        """Keep `session` under a new random id, making room if the store is full."""
        session_id = secrets.token_urlsafe(32)  # 43 visible ASCII characters, 256 bits
        with self._lock:
            now = self.clock()
            self._drop_expired(now)
            while len(self._sessions) >= self.max_sessions:
                evicted, _ = self._sessions.popitem(last=False)
                log.info("MCP session cap (%d) reached: ended the least recently used session %s…",
                         self.max_sessions, evicted[:8], extra={"event": "mcp_session_evicted"})
            session.last_used = now
            self._sessions[session_id] = session
        return session_id

    def get(self, session_id: str) -> Session | None:
        """The live session with this id (now marked as used), or None if unknown, ended or expired."""
        with self._lock:
            now = self.clock()
            self._drop_expired(now)
            session = self._sessions.get(session_id)
            if session is not None:
                session.last_used = now
                self._sessions.move_to_end(session_id)
            return session

    def end(self, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop(session_id, None) is not None

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _drop_expired(self, now: float) -> None:
        # Least recently used first, so the expired ones are at the front.
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if now - oldest.last_used <= self.idle_seconds:
                return
            self._sessions.popitem(last=False)


RESOURCES = {
    "/reviews.json": ("reviews.json", "Reviews dataset",
                      "The business, its aggregate rating and every verified review, newest first."),
    "/insights.json": ("insights.json", "Insights dataset",
                       "Aspect-based sentiment, technicians, services, topics, monthly trend, per-review "
                       "mentions, FAQ and an editorial summary."),
}


class McpServer:
    """JSON-RPC methods over the app's current data: `handle(session, message)` with no I/O."""

    def __init__(self, app: Any):
        self.app = app
        self.tool_list = [tool.definition() for tool in TOOLS.values()]
        self.prompt_list = [prompt.definition() for prompt in mcp_prompts.PROMPTS.values()]
        common: dict[str, Callable[[Session, Any], Any]] = {
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
            "resources/list": self.list_resources,
            "resources/templates/list": self.list_resource_templates,
            "resources/read": self.read_resource,
            "prompts/list": self.list_prompts,
            "prompts/get": self.get_prompt,
            "completion/complete": self.complete,
        }
        self.methods = {"initialize": self.initialize, "ping": self.ping, **common}  # a 2025 session's
        # 2026-07-28 removed initialize and ping (and logging/setLevel, resources/subscribe: never served here).
        self.modern_methods = {"server/discover": self.discover, **common}

    @property
    def base_url(self) -> str:
        """Read per call: a server that binds port 0 may settle the public URL after start-up."""
        return self.app.config.public_base_url

    @property
    def review_template(self) -> str:
        return self.base_url + REVIEW_PATH + "{id}"

    def handle(self, session: Session, message: Message) -> dict[str, Any] | None:
        """The one place where method errors become JSON-RPC error responses; a result may be EncodedJson."""
        if not isinstance(message, RpcRequest):  # a notification or a client's response: nothing to answer or do
            return None
        method = (self.modern_methods if session.modern else self.methods).get(message.method)
        params = {} if message.params is None else message.params
        try:
            if method is None:
                raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {message.method}",
                               {"method": message.method})
            if not isinstance(params, dict):  # MCP methods take named parameters only
                raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid params: params must be an object")
            if message.method.endswith("/list") and params.get("cursor") is not None:
                # Every list fits in one page, so any cursor is one we never issued.
                raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid params: unknown cursor (every list has one page)")
            return {"jsonrpc": "2.0", "id": message.id, "result": method(session, params)}
        except RpcError as error:
            return error_response(message.id, error.code, error.message, error.data)
        except PromptError as error:
            return error_response(message.id, ErrorCode.INVALID_PARAMS, error.message, error.data)
        except Exception:
            log.exception("MCP method %s failed", message.method, extra={"event": "mcp_internal_error"})
            return error_response(message.id, ErrorCode.INTERNAL_ERROR, "Internal error")

    def initialize(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid params: protocolVersion must be a string",
                           {"supported": list(LEGACY_VERSIONS)})
        for name in ("capabilities", "clientInfo"):
            if name in params and not isinstance(params[name], dict):
                raise RpcError(ErrorCode.INVALID_PARAMS, f"Invalid params: {name} must be an object")
        session.protocol_version = requested if requested in LEGACY_VERSIONS else LATEST_VERSION
        return {"protocolVersion": session.protocol_version, "capabilities": CAPABILITIES,
                "serverInfo": SERVER_INFO, "instructions": self.instructions()}

    @staticmethod
    def ping(session: Session, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    def discover(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        """server/discover (2026-07-28): versions, capabilities and instructions; mcp_http adds serverInfo."""
        return {"supportedVersions": list(SUPPORTED_VERSIONS), "capabilities": MODERN_CAPABILITIES,
                "instructions": self.instructions()}

    def instructions(self) -> str:
        name = self.app.store.current.dataset.business["name"]
        return (f"Read-only, public data about {name}: verified customer reviews and their analysis. "
                "Start with get_insights_summary (overall picture, valid aspect/technician/service names) or "
                "get_business; use search_reviews to find reviews (filters combine with AND, newest first) and "
                "get_review for one review by id. Nothing can be changed through this server.")

    def list_tools(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        return {"tools": self.tool_list}

    def call_tool(self, session: Session, params: dict[str, Any]) -> dict[str, Any] | EncodedJson:
        """Arguments that fail the tool's inputSchema, and values that name nothing in the data, are tool execution
        errors: a result with `isError: true` whose text lists every problem and the valid choices, so a model can
        correct itself (DECISIONS.md; MCP 2025-11-25 says the same of input validation errors). A malformed
        request (params not an object, name missing or unknown, arguments not an object) is -32602."""
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid params: name must be a string naming a tool",
                           {"tools": list(TOOLS)})
        if name not in TOOLS:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"Unknown tool: {name}; known tools: "
                           f"{', '.join(TOOLS)}", {"tool": name, "tools": list(TOOLS)})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid params: arguments must be an object")
        dataset = self.app.store.current.dataset  # read once: one call never mixes two data versions
        try:
            structured = run_tool(name, dataset, arguments)
        except InvalidParams as exc:
            lines = "".join(f"\n- {i['message']}" for i in exc.issues)
            return tool_error(f"Invalid arguments for {name}; fix these and call again:{lines}")
        except ToolError as exc:
            return tool_error(str(exc))
        return tool_result(encoded(structured))

    def list_resources(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        payloads = self.app.store.current.payloads
        return {"resources": [
            {"uri": self.base_url + path, "name": name, "title": title, "description": description,
             "mimeType": "application/json", "size": len(payloads[path].identity.body)}
            for path, (name, title, description) in RESOURCES.items()
        ]}

    def list_resource_templates(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        return {"resourceTemplates": [{
            "uriTemplate": self.review_template, "name": "review", "title": "One review",
            "description": "A single review by its id (ULID), as served by GET /api/reviews/{id}.",
            "mimeType": "application/json",
        }]}

    def read_resource(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid params: uri must be a string")
        snapshot = self.app.store.current
        path = uri[len(self.base_url):] if uri.startswith(self.base_url + "/") else ""
        # A path not under REVIEW_PATH keeps its leading "/" (or is empty), and no review id is either.
        position = snapshot.dataset.position_of.get(path.removeprefix(REVIEW_PATH))
        if path in RESOURCES:
            body = snapshot.payloads[path].identity.body
        elif position is not None:
            body = snapshot.dataset.review_json(position)
        else:  # 2026-07-28 says -32602 where the 2025 revisions said -32002
            code = ErrorCode.INVALID_PARAMS if session.modern else ErrorCode.RESOURCE_NOT_FOUND
            raise RpcError(code, "Resource not found", {"uri": uri})
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": body.decode("utf-8")}]}

    def list_prompts(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        return {"prompts": self.prompt_list}

    def get_prompt(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        return mcp_prompts.get_prompt(self.app.store.current.dataset, self.base_url, params)

    def complete(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        return mcp_prompts.complete(self.app.store.current.dataset, self.review_template, params)


def tool_result(structured: EncodedJson) -> EncodedJson:
    """A successful tools/call result: structuredContent and the same JSON as a text block."""
    return EncodedJson(b'{"content":[{"type":"text","text":%s}],"structuredContent":%s,"isError":false}'
                       % (json_string(structured), structured))


def tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def attach(app: Any, clock: Callable[[], float] = time.monotonic) -> None:
    """Install the MCP endpoint (mcp_http.McpEndpoint) as `app.mcp` (reviewsd.create_app calls this)."""
    from mcp_http import McpEndpoint  # mcp_http imports this module

    app.mcp = McpEndpoint(app, clock)
