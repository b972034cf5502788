"""The twelve read-only MCP tools: their definitions (input and output schemas from schemas/), what they run.

Each tool reads the Dataset it is handed, so a call sees one data version from start to end. Below both
the JSON-RPC dispatch (mcp_rpc.py) and the prompts, which run tools too. Every result fits an assistant's
context: reviews are listed while they fit RESULT_BUDGET (a cursor or `returned` says what was left), and a
long text is cut with TRIM_MARK (toolkit.py). Each tool is registered beside its function; search and fetch,
in ChatGPT's shapes, are in search_fetch.py.
"""

from __future__ import annotations

import bisect
import calendar
from datetime import date, datetime, timedelta, timezone
from typing import Any, Mapping, Sequence

from ..reviews.dataset import SCHEMAS, Dataset
from ..reviews.periods import compare, period_summary, record_tally
from ..reviews.search import (
    DATE_SCHEMA,
    FILTERS,
    InvalidParams,
    SchemaValidator,
    cursor_after,
    filters_digest,
    run_search,
    since_after,
    since_page,
    validate_date,
)
from .protocol import EncodedJson, encode_message, with_reviews
from .search_fetch import SEARCH_AND_FETCH, understood_query  # noqa: F401 (understood_query: importable here)
from .toolkit import (  # noqa: F401 (the names callers import from here)
    _COUNT,
    _PERIOD_PROPERTY,
    _RANGE_ARGS,
    FIGURES_SCHEMA,
    INSIGHTS,
    READ_ONLY,
    RESULT_BUDGET,
    REVIEW,
    REVIEW_ID_ARGS,
    REVIEWS,
    SENTIMENTS,
    SUMMARY_KEYS,
    TRIM_MARK,
    BusinessWords,
    Registry,
    Tool,
    ToolError,
    ToolOutput,
    _limit_arg,
    _newest,
    _object_schema,
    _review_id,
    _reviews_result,
    _room,
    _since_output_schema,
    _summary_output_schema,
    bundle_schema,
    fitted_review,
    fitted_reviews,
    ref,
    resolve,
    resource_link,
    trimmed_review,
)


def _range(args: Mapping[str, Any]) -> tuple[str | None, str | None]:
    since, until = args.get("since"), args.get("until")
    if since and until and since > until:
        raise ToolError(f"since ({since}) is after until ({until}): give since first, or swap them.")
    return since, until


def _in_range(
    dataset: Dataset, group: str, record_id: str, everything: Sequence[int], args: Mapping[str, Any]
) -> tuple[Sequence[int], dict[str, Any] | None]:
    """The positions of `everything` dated within since..until, and the record's figures there (None when
    no range is asked: the record's own all-time figures stand)."""
    since, until = _range(args)
    if since is None and until is None:
        return everything, None
    lo, hi = dataset.window(since, until)
    within = everything[bisect.bisect_left(everything, lo) : bisect.bisect_left(everything, hi)]
    figures = record_tally(dataset, group, record_id, within).figures(dataset)
    return within, {"since": since, "until": until, **figures}


def _within(dataset: Dataset, positions: Sequence[int], args: Mapping[str, Any]) -> Sequence[int]:
    """The positions dated within since..until."""
    lo, hi = dataset.window(args.get("since"), args.get("until"))
    return positions[bisect.bisect_left(positions, lo) : bisect.bisect_left(positions, hi)]


# search_reviews's filters as its description names them, from the filters' table.
FILTERS_IN_PROSE = ", ".join(dict.fromkeys(row.prose for row in FILTERS))

TOOLS = Registry()  # the twelve read-only tools, in tools/list's order


@TOOLS.tool(
    "get_business",
    "Business details and rating",
    "Returns the identity of {business} (name, category, description, website, phone, address, geo, "
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
)
def get_business(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    return ToolOutput(
        {"business": dataset.business, "aggregate_rating": dataset.reviews_doc["aggregate_rating"]}
    )


@TOOLS.tool(
    "search_reviews",
    "Search reviews",
    "Finds {verified}reviews of {business} ({sources}) matching every filter given (AND): "
    + FILTERS_IN_PROSE
    + ". sort: newest (default), oldest, highest, lowest, relevance (default with q). Returns {matched, "
    "returned, reviews, next_cursor}; pass next_cursor back as cursor, same filters, for the next "
    "page (null: no more). Long texts are cut. Same parameters as GET /api/reviews/search. "
    "The 1- and 2-star complaints about {aspect} since August. Example: "
    '{"max_rating": 2, "aspect": "{aspect}", "aspect_sentiment": "negative", "since": "2026-08-01"}.',
    {k: v for k, v in SCHEMAS["search-params.schema.json"].items() if k not in ("$id", "$schema")},
    bundle_schema(SCHEMAS["search-result.schema.json"]),
    validate=False,
)
def search_reviews(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    """GET /api/reviews/search's result with the page's reviews that fit (next_cursor goes on from there)."""
    page = run_search(dataset, args)  # the same path as GET /api/reviews/search
    kept, reviews = fitted_reviews(dataset, page.positions, _room({"matched": page.matched}), base_url)
    cursor = page.next_cursor
    if len(kept) < len(page.positions):
        cursor = cursor_after(dataset, filters_digest(args), kept[-1]) if kept else args.get("cursor")
    head = {"matched": page.matched, "returned": len(kept)}
    return ToolOutput(_with_cursor(with_reviews(head, reviews), cursor), kept)


def _with_cursor(structured: EncodedJson, cursor: str | None) -> EncodedJson:
    """`structured` (an object) with a last member `next_cursor`."""
    return EncodedJson(structured[:-1] + b',"next_cursor":' + encode_message(cursor) + b"}")


@TOOLS.tool(
    "get_review",
    "One review by id",
    "Returns one review (author, rating, date, text, source, owner reply) and what the analysis "
    "found in it (aspects with sentiment, technicians, services, problems, service areas, topics; "
    "null if not analysed). Use it when you have a review id from another tool, a feed or a pull "
    "quote. A text too long for an assistant's context is cut with a marker. "
    'Example: {"id": "01HV6Z9M8Q2W3E4R5T6Y7U8I9O"}.',
    REVIEW_ID_ARGS,
    bundle_schema(
        _object_schema(
            {
                "review": ref(REVIEW),
                "mentions": {"oneOf": [ref(INSIGHTS, "/$defs/review_mentions"), {"type": "null"}]},
            },
            ["review", "mentions"],
        )
    ),
)
def get_review(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    position = _review_id(dataset, args["id"])
    mentions = encode_message(dataset.insights_doc["per_review"].get(dataset.ids[position]))
    review = fitted_review(dataset, position, RESULT_BUDGET - len(mentions) - 100)
    return ToolOutput(EncodedJson(b'{"review":%s,"mentions":%s}' % (review, mentions)), [position])


@TOOLS.tool(
    "get_reviews_since",
    "Reviews since a date",
    "Returns the reviews of {business} dated on or after a date, newest first: {since, count: how "
    "many there are in total, returned, reviews, next_cursor}. A page holds at most `limit` (default "
    "50, at most 500) and what fits an assistant's context; pass next_cursor back as cursor (same "
    "since) for the next page, null when there is none. Use it for 'what's new since ...'. A date "
    'after the newest review gives count 0. Example: {"since": "2026-10-01", "limit": 20}.',
    _object_schema(
        {
            "since": {**DATE_SCHEMA, "description": "First date to include, YYYY-MM-DD."},
            "limit": _limit_arg(500, 50),
            "cursor": {
                **SCHEMAS["search-params.schema.json"]["properties"]["cursor"],
                "description": "The next_cursor of the previous page (same since).",
            },
        },
        ["since"],
    ),
    _since_output_schema(),
)
def get_reviews_since(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    since = validate_date("since", args["since"])
    page = since_page(dataset, since, int(args["limit"]), since_after(since, args))
    head = {"since": since, "count": page.count}
    kept, reviews = fitted_reviews(dataset, range(page.start, page.stop), _room(head), base_url)
    cursor = page.next_cursor
    if len(kept) < page.stop - page.start:
        cursor = (
            cursor_after(dataset, filters_digest({"since": since}), kept[-1]) if kept else args.get("cursor")
        )
    structured = with_reviews({**head, "returned": len(kept)}, reviews)
    return ToolOutput(_with_cursor(structured, cursor), kept)


@TOOLS.tool(
    "get_aspect_sentiment",
    "Sentiment about one aspect",
    "Returns what reviewers of {business} think about one aspect of their experience (the aspects "
    "the analysis found, e.g. {aspects}): mention counts per sentiment, positive share, score from "
    "-1 to 1, top phrases, plus the newest reviews mentioning it, optionally only those with one "
    "sentiment. With since and/or until, `period` gives the figures of the reviews dated in that "
    "range (recounted from their mentions, with the review ids) and the reviews listed are from it. "
    "Aspect ids and labels are listed by get_insights_summary; an unknown aspect returns the valid "
    'ones. Example: {"aspect": "{aspect}", "sentiment": "negative", "since": "2026-08-01"}.',
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
            **_RANGE_ARGS,
        },
        ["aspect"],
    ),
    _reviews_result(
        "aspect",
        ref(INSIGHTS, "/$defs/aspect"),
        {"sentiment": {"oneOf": [{"enum": list(SENTIMENTS)}, {"type": "null"}]}, **_PERIOD_PROPERTY},
    ),
)
def get_aspect_sentiment(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    aspect = resolve("aspect", args["aspect"], dataset.insights_doc["aspects"])
    sentiment = args.get("sentiment")
    every = dataset.positions_by_aspect.get((aspect["id"], None), [])
    _, period = _in_range(dataset, "aspects", aspect["id"], every, args)
    positions = _within(dataset, dataset.positions_by_aspect.get((aspect["id"], sentiment), []), args)
    fields = {"aspect": aspect, "sentiment": sentiment, "period": period}
    return _newest(dataset, fields, positions, args["limit"], base_url)


@TOOLS.tool(
    "get_technician",
    "One {one_person}",
    "Returns what reviews say about one person working at {business} (a {one_person}, as the "
    "insights name them): role, mention counts per sentiment, score from -1 to 1, plus the newest "
    "reviews mentioning them; since and/or until give `period` (that range's figures, with the "
    "review ids) and list reviews from it. "
    "Accepts an id, full name or label, case- and accent-insensitive; a unique part of a name also "
    'works. An unknown name returns the valid ones. Example: {"name": "{person}"}.',
    _object_schema(
        {
            "name": {
                "description": "Id, name or label of a person the insights name (get_insights_summary).",
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
            },
            "limit": _limit_arg(20, 5),
            **_RANGE_ARGS,
        },
        ["name"],
    ),
    _reviews_result("technician", ref(INSIGHTS, "/$defs/technician"), _PERIOD_PROPERTY),
)
def get_technician(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    technician = resolve(
        "practitioner",
        args["name"],
        list(dataset.technicians.values()),
        ("id", "name", "label"),
        lambda t: f"{t['name']} (id {t['id']}, {t['role']})",
    )
    every = dataset.positions_by_technician.get(technician["id"], [])
    positions, period = _in_range(dataset, "technicians", technician["id"], every, args)
    return _newest(dataset, {"technician": technician, "period": period}, positions, args["limit"], base_url)


@TOOLS.tool(
    "get_service",
    "One service",
    "Returns one service {business} offers (id, label, description), what reviews say about it "
    "(mention counts per sentiment and score, or null if no review mentions it) and the newest "
    "reviews mentioning it; since and/or until give `period` (that range's figures, with the review "
    "ids) and list reviews from it. Accepts a service id or label, case-insensitive; get_business "
    'lists them. Example: {"service": "{service}", "limit": 3}.',
    _object_schema(
        {
            "service": {
                "description": "Service id or label (e.g. massage-therapy).",
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
            },
            "limit": _limit_arg(20, 5),
            **_RANGE_ARGS,
        },
        ["service"],
    ),
    _reviews_result(
        "service",
        ref(REVIEWS, "/$defs/business/properties/services/items"),
        {
            "insights": {"oneOf": [ref(INSIGHTS, "/$defs/entity"), {"type": "null"}]},
            **_PERIOD_PROPERTY,
        },
    ),
)
def get_service(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    service = resolve("service", args["service"], dataset.business["services"])
    every = dataset.positions_by_service.get(service["id"], [])
    positions, period = _in_range(dataset, "services", service["id"], every, args)
    fields = {"service": service, "insights": dataset.services.get(service["id"]), "period": period}
    return _newest(dataset, fields, positions, args["limit"], base_url)


@TOOLS.tool(
    "get_rating_trend",
    "Ratings over time",
    "Returns the monthly series (month, review count, average rating, sentiment score; null for "
    "months without reviews), oldest first, and the fitted trend of the average rating (improving, "
    "stable or declining, slope per month, window; null when the business does not publish it). "
    "Use it for 'are reviews getting better?'. "
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
                "trend": ref(INSIGHTS, "/properties/temporal/properties/trend"),
            },
            ["monthly", "trend"],
        )
    ),
)
def get_rating_trend(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    temporal = dataset.insights_doc["temporal"]
    monthly = temporal["monthly"][-int(args["months"]) :] if "months" in args else temporal["monthly"]
    return ToolOutput({"monthly": monthly, "trend": temporal["trend"]})


@TOOLS.tool(
    "get_insights_summary",
    "Insights summary",
    "Returns the analysis of all reviews in one object: overall sentiment (score, positive/neutral/"
    "negative shares), an editorial summary, a pull quote, topics, an FAQ answered from reviews, "
    "and the aspect, {one_person} and service records with their sentiment. Start here for 'what do "
    "customers think of {business}?' and to learn valid aspect, {one_person} and service names. "
    "With since and/or until, `period` adds that range's figures, recounted from the reviews dated "
    "in it: review count, average rating, count per star, and each aspect, {one_person} and service "
    "mentioned, with its mention and sentiment counts and the ids of the reviews they rest on "
    "(the other members stay all-time). "
    'Example: {} or {"since": "2026-08-01"}.',
    _object_schema(_RANGE_ARGS),
    _summary_output_schema(),
)
def get_insights_summary(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    doc = dataset.insights_doc
    since, until = _range(args)
    period = None if since is None and until is None else period_summary(dataset, since, until)
    return ToolOutput(
        {
            **{key: doc[key] for key in SUMMARY_KEYS},
            "technicians": doc["entities"]["technicians"],
            "services": doc["entities"]["services"],
            "period": period,
        }
    )


def months_before(day: date, months: int) -> date:
    """The same day `months` earlier (the month's last day where it is shorter)."""
    year, month = divmod(day.year * 12 + day.month - 1 - months, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _today() -> date:
    return datetime.now(timezone.utc).date()


def _compare_output_schema() -> dict[str, Any]:
    head = {
        "type": "object",
        "properties": {
            "since": {"type": "string"},
            "until": {"type": "string"},
            "review_count": _COUNT,
            "average_rating": {"type": ["number", "null"]},
            "rating_counts": {"type": "object", "additionalProperties": _COUNT},
        },
        "required": ["since", "until", "review_count", "average_rating", "rating_counts"],
    }
    figures = {
        k: v for k, v in FIGURES_SCHEMA["properties"].items() if k not in ("since", "until", "review_ids")
    }
    side = {"type": "object", "properties": figures, "required": ["mention_count", "average_rating"]}
    moved = _object_schema(
        {
            "id": {"type": "string"},
            "label": {"type": "string"},
            "score_change": {"description": "Current score minus previous, -2 to 2.", "type": "number"},
            "current": side,
            "previous": side,
            "example_review_id": {
                "description": "The newest review of the current range showing the move (listed in reviews).",
                "type": ["string", "null"],
            },
        },
        ["id", "label", "score_change", "current", "previous", "example_review_id"],
    )
    properties = {
        "current": head,
        "previous": head,
        "average_rating_change": {"type": ["number", "null"]},
        "review_count_change": {"type": "integer"},
        "aspects_moved": {"type": "array", "items": moved},
        "returned": _COUNT,
        "reviews": {"description": "The reviews quoted.", "type": "array", "items": ref(REVIEW)},
    }
    return bundle_schema(_object_schema(properties, list(properties)))


@TOOLS.tool(
    "compare_periods",
    "Compare two periods",
    "Compares the last `months` months of reviews of {business} up to `until` (default today) with "
    "as many months just before: review count, average rating and count per star of each, their "
    "change, and the aspects whose sentiment score moved most (mentioned in both periods, figures "
    "recounted from the per-review mentions), each with the newest review of the current period "
    "that shows the move, quoted in `reviews`. Use it for 'this quarter against the last' "
    "(months 3) or 'this month against last month' (months 1). "
    'Example: {"months": 3}.',
    _object_schema(
        {
            "months": {
                "description": "Length of each period in months (default 3: a quarter).",
                "type": "integer",
                "minimum": 1,
                "maximum": 24,
                "default": 3,
            },
            "until": {
                **DATE_SCHEMA,
                "description": "Last day of the current period (default today).",
            },
        }
    ),
    _compare_output_schema(),
)
def compare_periods(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    """The last `months` up to `until` (default today) against the as many months before them."""
    until = date.fromisoformat(validate_date("until", args["until"])) if "until" in args else _today()
    months = int(args["months"])
    start = months_before(until, months) + timedelta(days=1)
    previous_start = months_before(start, months)
    current = (start.isoformat(), until.isoformat())
    previous = (previous_start.isoformat(), (start - timedelta(days=1)).isoformat())
    fields = compare(dataset, current, previous)
    quoted = [row["example_review_id"] for row in fields["aspects_moved"] if row["example_review_id"]]
    positions = [dataset.position_of[review_id] for review_id in dict.fromkeys(quoted)]
    kept, reviews = fitted_reviews(dataset, positions, _room(fields), base_url)
    return ToolOutput(with_reviews({**fields, "returned": len(kept)}, reviews), kept)


TOOLS.update(SEARCH_AND_FETCH)  # last, as tools/list has always listed them
_VALIDATORS = {
    name: SchemaValidator(tool.input_schema, noun="argument") for name, tool in TOOLS.items() if tool.validate
}
# A default is written once, in the input schema that clients read; run_tool fills it in.
_DEFAULTS = {
    name: {key: spec["default"] for key, spec in tool.input_schema["properties"].items() if "default" in spec}
    for name, tool in TOOLS.items()
    if tool.validate  # search_reviews applies its own (sort's depends on q)
}


def run_tool(name: str, dataset: Dataset, arguments: dict[str, Any], base_url: str) -> ToolOutput:
    """Run a tool on the dataset current at call time; InvalidParams or ToolError for arguments to fix."""
    tool = TOOLS[name]
    if tool.validate:
        issues = _VALIDATORS[name].issues(arguments)
        if issues:
            raise InvalidParams(issues)
    return tool.run(dataset, {**_DEFAULTS.get(name, {}), **arguments}, base_url)
