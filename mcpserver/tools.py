"""The nine read-only MCP tools: their definitions (input and output schemas from schemas/) and what they run.

Each tool reads the Dataset it is handed, so a call sees one data version from start to end. Below both
the JSON-RPC dispatch (mcp_rpc.py) and the prompts, which run tools too.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urljoin

from ..reviews.dataset import SCHEMAS, Dataset, folded_names, named
from ..reviews.search import DATE_SCHEMA, InvalidParams, SchemaValidator, run_search, search_result_json
from .protocol import EncodedJson, encode_message, with_reviews

READ_ONLY = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False, "destructiveHint": False}


class ToolError(Exception):
    """A tool execution error the model can fix; the message says how."""


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
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {"title": self.title, **READ_ONLY},
        }


REVIEW, REVIEWS, INSIGHTS = "review.schema.json", "reviews.schema.json", "insights.schema.json"
SENTIMENTS = ("positive", "neutral", "negative")
# The members of insights.json that get_insights_summary returns as they are, beside the entities.
SUMMARY_KEYS = (
    "generated_at",
    "review_count",
    "date_range",
    "overall_sentiment",
    "summary",
    "pull_quote",
    "topics",
    "faq",
    "aspects",
)


def _limit_arg(maximum: int, default: int) -> dict[str, Any]:
    return {
        "description": f"Most reviews to return (0 to {maximum}, default {default}).",
        "type": "integer",
        "minimum": 0,
        "maximum": maximum,
        "default": default,
    }


def _reviews_result(subject: str, schema: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> dict:
    """Output schema of a record plus the newest reviews mentioning it."""
    properties = {
        subject: schema,
        **(extra or {}),
        "matched": {
            "description": "Reviews that mention it (before the limit).",
            "type": "integer",
            "minimum": 0,
        },
        "returned": {"description": "Reviews in this result.", "type": "integer", "minimum": 0},
        "reviews": {
            "description": "The newest matching reviews, newest first.",
            "type": "array",
            "items": ref(REVIEW),
        },
    }
    return bundle_schema(_object_schema(properties, list(properties)))


def _newest(dataset: Dataset, fields: Mapping[str, Any], positions: Sequence[int], limit: Any) -> EncodedJson:
    """`fields` plus the first `limit` of `positions` as reviews, and how many there are."""
    chosen = positions[: int(limit)]
    reviews = dataset.reviews_json_at(chosen)
    return with_reviews({**fields, "matched": len(positions), "returned": len(chosen)}, reviews)


def resolve(
    kind: str,
    query: str,
    records: Sequence[Mapping[str, Any]],
    keys: Sequence[str] = ("id", "label"),
    describe: Callable[[Mapping[str, Any]], str] = lambda r: f"{r['id']} ({r['label']})",
) -> Mapping[str, Any]:
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
    schema["properties"]["returned"] = {
        "description": "Reviews in this result (at most limit).",
        "type": "integer",
        "minimum": 0,
    }
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
    page = run_search(dataset, args)  # the same path as GET /api/reviews/search
    return EncodedJson(search_result_json(dataset, page))


def get_review(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    review_id = args["id"].strip().upper()  # ULIDs are case-insensitive; the data spells them upper case
    position = dataset.position_of.get(review_id)
    if position is None:
        raise ToolError(
            f"No review has id {args['id']!r}. Review ids are 26-character ULIDs such as "
            f"{dataset.reviews[0]['id'] if dataset.reviews else '01HV6Z9M8Q2W3E4R5T6Y7U8I9O'}; "
            "use search_reviews or get_reviews_since to find them."
        )
    mentions = encode_message(dataset.insights_doc["per_review"].get(review_id))
    return EncodedJson(b'{"review":%s,"mentions":%s}' % (dataset.review_json(position), mentions))


def get_reviews_since(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    lo, hi = dataset.window(args["since"], None)
    stop = min(hi, lo + int(args["limit"]))
    return with_reviews(
        {"since": args["since"], "count": hi - lo, "returned": stop - lo},
        dataset.reviews_json_range(lo, stop),
    )


def get_aspect_sentiment(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    aspect = resolve("aspect", args["aspect"], dataset.insights_doc["aspects"])
    sentiment = args.get("sentiment")
    positions = dataset.positions_by_aspect.get((aspect["id"], sentiment), [])
    return _newest(dataset, {"aspect": aspect, "sentiment": sentiment}, positions, args["limit"])


def get_technician(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    technician = resolve(
        "technician",
        args["name"],
        list(dataset.technicians.values()),
        ("id", "name", "label"),
        lambda t: f"{t['name']} (id {t['id']}, {t['role']})",
    )
    positions = dataset.positions_by_technician.get(technician["id"], [])
    return _newest(dataset, {"technician": technician}, positions, args["limit"])


def get_service(dataset: Dataset, args: dict[str, Any]) -> EncodedJson:
    service = resolve("service", args["service"], dataset.business["services"])
    positions = dataset.positions_by_service.get(service["id"], [])
    return _newest(
        dataset,
        {"service": service, "insights": dataset.services.get(service["id"])},
        positions,
        args["limit"],
    )


def get_rating_trend(dataset: Dataset, args: dict[str, Any]) -> dict[str, Any]:
    temporal = dataset.insights_doc["temporal"]
    monthly = temporal["monthly"][-int(args["months"]) :] if "months" in args else temporal["monthly"]
    return {"monthly": monthly, "trend": temporal["trend"]}


def get_insights_summary(dataset: Dataset, args: dict[str, Any]) -> dict[str, Any]:
    doc = dataset.insights_doc
    return {
        **{key: doc[key] for key in SUMMARY_KEYS},
        "technicians": doc["entities"]["technicians"],
        "services": doc["entities"]["services"],
    }


TOOLS = {
    tool.name: tool
    for tool in (  # the nine read-only tools
        Tool(
            "get_business",
            "Business details and rating",
            "Returns the clinic's identity (name, category, description, website, phone, address, geo, "
            "opening hours, service areas, services with ids) and its aggregate star rating (mean, count, "
            "count per star). Use it first when asked about the business itself, where it is, when it is "
            "open, what services it offers, or its overall rating. Takes no arguments. Example: {}.",
            _object_schema({}),
            bundle_schema(
                _object_schema(
                    {
                        "business": ref(REVIEWS, "/$defs/business"),
                        "aggregate_rating": ref(REVIEWS, "/$defs/aggregate_rating"),
                    },
                    ["business", "aggregate_rating"],
                )
            ),
            get_business,
        ),
        Tool(
            "search_reviews",
            "Search reviews",
            "Finds verified reviews matching every filter given (filters combine with AND); results are "
            "newest first. Returns {matched: total matches before the limit, returned, reviews: full review "
            "objects}. Use it for questions like 'recent 1-star reviews', 'reviews mentioning parking', "
            "'what do people say about Dr. Patel'. Same parameters and results as GET /api/reviews/search. "
            'Example: {"min_rating": 4, "mentions_service": "massage-therapy", "limit": 5}.',
            {k: v for k, v in SCHEMAS["search-params.schema.json"].items() if k not in ("$id", "$schema")},
            bundle_schema(SCHEMAS["search-result.schema.json"]),
            search_reviews,
            validate=False,
        ),
        Tool(
            "get_review",
            "One review by id",
            "Returns one review (author, rating, date, text, source, owner reply) and what the analysis found "
            "in it (aspects with sentiment, technicians, services, problems, service areas, topics; null if "
            "not analysed). Use it when you have a review id from another tool, a feed or a pull quote. "
            'Example: {"id": "01HV6Z9M8Q2W3E4R5T6Y7U8I9O"}.',
            _object_schema(
                {
                    "id": {
                        "description": "Review id (26-character ULID).",
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 64,
                    }
                },
                ["id"],
            ),
            bundle_schema(
                _object_schema(
                    {
                        "review": ref(REVIEW),
                        "mentions": {"oneOf": [ref(INSIGHTS, "/$defs/review_mentions"), {"type": "null"}]},
                    },
                    ["review", "mentions"],
                )
            ),
            get_review,
        ),
        Tool(
            "get_reviews_since",
            "Reviews since a date",
            "Returns the reviews dated on or after a date, newest first: {since, count: how many there are "
            "in total, returned, reviews}. The list is capped by `limit` (default 50, at most 500) to fit a "
            "model's context; when count > returned, narrow the window or page with search_reviews "
            "(since/until). Use it for 'what's new since ...'. A date after the newest review gives count 0. "
            'Example: {"since": "2026-10-01", "limit": 20}.',
            _object_schema(
                {
                    "since": {**DATE_SCHEMA, "description": "First date to include, YYYY-MM-DD."},
                    "limit": _limit_arg(500, 50),
                },
                ["since"],
            ),
            _since_output_schema(),
            get_reviews_since,
        ),
        Tool(
            "get_aspect_sentiment",
            "Sentiment about one aspect",
            "Returns what reviewers think about one aspect of the visit (e.g. pain relief, wait time, "
            "billing and insurance, front desk): mention counts per sentiment, positive share, score from "
            "-1 to 1, top phrases, plus the newest reviews mentioning it, optionally only those with one "
            "sentiment. Aspect ids and labels are listed by get_insights_summary; an unknown aspect returns "
            'the valid ones. Example: {"aspect": "wait time", "sentiment": "negative", "limit": 3}.',
            _object_schema(
                {
                    "aspect": {
                        "description": "Aspect id or label, case-insensitive (e.g. wait-time).",
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                    },
                    "sentiment": {
                        "description": "Only reviews with this sentiment about the aspect.",
                        "enum": list(SENTIMENTS),
                    },
                    "limit": _limit_arg(20, 3),
                },
                ["aspect"],
            ),
            _reviews_result(
                "aspect",
                ref(INSIGHTS, "/$defs/aspect"),
                {"sentiment": {"oneOf": [{"enum": list(SENTIMENTS)}, {"type": "null"}]}},
            ),
            get_aspect_sentiment,
        ),
        Tool(
            "get_technician",
            "One practitioner",
            "Returns what reviews say about one practitioner (chiropractor, massage or physical therapist): "
            "role, mention counts per sentiment, score from -1 to 1, plus the newest reviews mentioning them. "
            "Accepts an id, full name or label, case- and accent-insensitive; a unique part of a name also "
            'works (\'Patel\'). An unknown name returns the valid ones. Example: {"name": "Dr. Maya Patel"}.',
            _object_schema(
                {
                    "name": {
                        "description": "Technician id, name or label (e.g. Dr. Maya Patel).",
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                    },
                    "limit": _limit_arg(20, 5),
                },
                ["name"],
            ),
            _reviews_result("technician", ref(INSIGHTS, "/$defs/technician")),
            get_technician,
        ),
        Tool(
            "get_service",
            "One service",
            "Returns one service the clinic offers (id, label, description), what reviews say about it "
            "(mention counts per sentiment and score, or null if no review mentions it) and the newest "
            "reviews mentioning it. Accepts a service id or label, case-insensitive; get_business lists "
            'them. Example: {"service": "spinal adjustment", "limit": 3}.',
            _object_schema(
                {
                    "service": {
                        "description": "Service id or label (e.g. massage-therapy).",
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                    },
                    "limit": _limit_arg(20, 5),
                },
                ["service"],
            ),
            _reviews_result(
                "service",
                ref(REVIEWS, "/$defs/business/properties/services/items"),
                {"insights": {"oneOf": [ref(INSIGHTS, "/$defs/entity"), {"type": "null"}]}},
            ),
            get_service,
        ),
        Tool(
            "get_rating_trend",
            "Ratings over time",
            "Returns the monthly series (month, review count, average rating, sentiment score; null for "
            "months without reviews), oldest first, and the fitted trend of the average rating (improving, "
            "stable or declining, slope per month, window). Use it for 'are reviews getting better?'. "
            '`months` keeps only the most recent months. Example: {"months": 12}.',
            _object_schema(
                {
                    "months": {
                        "description": "Only the most recent N months (default: all).",
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 1200,
                    }
                }
            ),
            bundle_schema(
                _object_schema(
                    {
                        "monthly": {"type": "array", "items": ref(INSIGHTS, "/$defs/month")},
                        "trend": ref(INSIGHTS, "/$defs/trend"),
                    },
                    ["monthly", "trend"],
                )
            ),
            get_rating_trend,
        ),
        Tool(
            "get_insights_summary",
            "Insights summary",
            "Returns the analysis of all reviews in one object: overall sentiment (score, positive/neutral/"
            "negative shares), an editorial summary, a pull quote, topics, an FAQ answered from reviews, "
            "and the aspect, technician and service records with their sentiment. Start here for 'what do "
            "patients think of this clinic?' and to learn valid aspect, technician and service names. "
            "Takes no arguments. Example: {}.",
            _object_schema({}),
            _summary_output_schema(),
            get_insights_summary,
        ),
    )
}
_VALIDATORS = {
    name: SchemaValidator(tool.input_schema, noun="argument") for name, tool in TOOLS.items() if tool.validate
}
# A default is written once, in the input schema that clients read; run_tool fills it in.
_DEFAULTS = {
    name: {key: spec["default"] for key, spec in tool.input_schema["properties"].items() if "default" in spec}
    for name, tool in TOOLS.items()
}


def run_tool(name: str, dataset: Dataset, arguments: dict[str, Any]) -> dict[str, Any] | EncodedJson:
    """Run a tool on the dataset current at call time; InvalidParams or ToolError for arguments the model should fix."""
    tool = TOOLS[name]
    if tool.validate:
        issues = _VALIDATORS[name].issues(arguments)
        if issues:
            raise InvalidParams(issues)
    return tool.run(dataset, {**_DEFAULTS[name], **arguments})
