"""The eleven read-only MCP tools: their definitions (input and output schemas from schemas/), what they run.

Each tool reads the Dataset it is handed, so a call sees one data version from start to end. Below both
the JSON-RPC dispatch (mcp_rpc.py) and the prompts, which run tools too. Every result fits an assistant's
context: reviews are listed while they fit RESULT_BUDGET (a cursor or `returned` says what was left), and a
long text is cut with TRIM_MARK.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import urljoin

from ..reviews.dataset import SCHEMAS, Dataset, fold_name, folded_names, named
from ..reviews.search import (
    DATE_SCHEMA,
    InvalidParams,
    SchemaValidator,
    cursor_after,
    filters_digest,
    run_search,
    since_after,
    since_page,
    validate_date,
)
from ..web.feeds import review_page_url
from .protocol import EncodedJson, encode_message, with_reviews

READ_ONLY = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False, "destructiveHint": False}


class ToolError(Exception):
    """A tool execution error the model can fix; the message says how."""


_SCHEMA_BY_ID = {schema["$id"]: name for name, schema in SCHEMAS.items()}
_SCHEMA_BASE_URI = next(iter(SCHEMAS.values()))["$id"].rsplit("/", 1)[0] + "/"
_DROPPED_KEYS = ("$id", "$schema", "$defs")


def bundle_schema(node: Mapping[str, Any]) -> dict[str, Any]:
    """`node` (one of schemas/*.json, or a new schema referring to them) with every `$ref`
    into schemas/ inlined as `#/$defs/<name>`, for clients that cannot fetch refs."""
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
    run: Callable[[Dataset, dict[str, Any], str], "ToolOutput"]  # (dataset, arguments, public base URL)
    validate: bool = True  # False when `run` validates itself (search_reviews, through run_search)

    def definition(self, words: "BusinessWords") -> dict[str, Any]:
        """The tools/list entry, its description in the words of the business served."""
        return {
            "name": self.name,
            "title": self.title,
            "description": words.fill(self.description),
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {"title": self.title, **READ_ONLY},
        }


@dataclass(frozen=True)
class BusinessWords:
    """What descriptions and prompts call the business: `{business}` is its name, `{category}` its category
    (lower case: "chiropractic clinic"); no text written here says clinic or patients."""

    name: str
    category: str

    @classmethod
    def of(cls, dataset: Dataset) -> "BusinessWords":
        business = dataset.business
        return cls(business["name"], (business.get("category") or "local business").lower())

    def fill(self, text: str) -> str:
        return text.replace("{business}", self.name).replace("{category}", self.category)


@dataclass(frozen=True)
class ToolOutput:
    """A tool's structured result, and the positions of the reviews it lists (the result's resource links)."""

    structured: dict[str, Any] | EncodedJson
    listed: Sequence[int] = ()


# Claude Code saves a tool result over 50,000 characters to a file instead of showing it to the model; other
# clients cut long results. Reviews are listed while the structured result (which is also the text block)
# plus their resource links stays within RESULT_BUDGET, 2,000 under that. UTF-8 bytes are counted: never
# fewer than characters.
RESULT_BUDGET = 48_000
LONG_REVIEW_BYTES = 3_000  # a listed review longer than this has its texts cut to LIST_TEXT_CHARACTERS
LIST_TEXT_CHARACTERS = 1_500
TRIM_MARK = " […trimmed; get_review or fetch gives the whole text]"


def resource_link(base_url: str, review_id: str) -> dict[str, Any]:
    """The content block pointing at one listed review (the resource template's URI)."""
    return {
        "type": "resource_link",
        "uri": f"{base_url}/api/reviews/{review_id}",
        "name": review_id,
        "mimeType": "application/json",
    }


def _link_bytes(base_url: str) -> int:
    return len(encode_message(resource_link(base_url, "0" * 26))) + 1


def trimmed_review(review: Mapping[str, Any], characters: int) -> dict[str, Any]:
    """The review with its text and owner reply each cut to `characters` plus TRIM_MARK where longer."""

    def cut(text: str | None) -> str | None:
        return text if text is None or len(text) <= characters else text[:characters] + TRIM_MARK

    out = {**review, "text": cut(review["text"])}
    if review.get("owner_reply"):
        out["owner_reply"] = {**review["owner_reply"], "text": cut(review["owner_reply"]["text"])}
    return out


def fitted_review(dataset: Dataset, pos: int, room: int) -> bytes:
    """One review's JSON within `room` bytes: as served, or with its texts cut shorter until it fits."""
    body = dataset.review_json(pos)
    characters = 20_000
    while len(body) > room and characters > 10:
        characters //= 4
        body = encode_message(trimmed_review(dataset.reviews[pos], characters))
    return body


def fitted_reviews(
    dataset: Dataset, positions: Iterable[int], room: int, base_url: str
) -> tuple[list[int], bytes]:
    """The leading reviews of `positions` whose JSON (long texts cut) and links fit in `room` bytes."""
    link, kept, parts, used = _link_bytes(base_url), [], [], 0
    for pos in positions:
        body = dataset.review_json(pos)
        if len(body) > LONG_REVIEW_BYTES:
            body = encode_message(trimmed_review(dataset.reviews[pos], LIST_TEXT_CHARACTERS))
        used += len(body) + 1 + link
        if used > room:
            if not kept:  # never an empty page for want of room: a cursor would then never move
                kept, parts = [pos], [fitted_review(dataset, pos, room - link - 1)]
            break
        kept.append(pos)
        parts.append(body)
    return kept, b",".join(parts)


def _room(fields: Mapping[str, Any]) -> int:
    """What is left of the budget for reviews beside `fields` (a cursor's room included)."""
    return RESULT_BUDGET - len(encode_message(fields)) - 200


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


def _newest(
    dataset: Dataset, fields: Mapping[str, Any], positions: Sequence[int], limit: Any, base_url: str
) -> ToolOutput:
    """`fields` plus the first `limit` of `positions` as reviews (those that fit), and how many there are."""
    kept, reviews = fitted_reviews(dataset, positions[: int(limit)], _room(fields), base_url)
    structured = with_reviews({**fields, "matched": len(positions), "returned": len(kept)}, reviews)
    return ToolOutput(structured, kept)


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
    schema["properties"]["returned"]["description"] = "Reviews in this result (at most limit)."
    schema["required"] = ["since", "count", "returned", "reviews", "next_cursor"]
    return schema


def _summary_output_schema() -> dict[str, Any]:
    properties = {
        **{key: ref(INSIGHTS, f"/properties/{key}") for key in SUMMARY_KEYS},
        "technicians": ref(INSIGHTS, "/properties/entities/properties/technicians"),
        "services": ref(INSIGHTS, "/properties/entities/properties/services"),
    }
    return bundle_schema(_object_schema(properties, list(properties)))


def get_business(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    return ToolOutput(
        {"business": dataset.business, "aggregate_rating": dataset.reviews_doc["aggregate_rating"]}
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


def _review_id(dataset: Dataset, given: str) -> int:
    """The position of the review `given` names (ULIDs are case-insensitive), else a ToolError."""
    position = dataset.position_of.get(given.strip().upper())
    if position is None:
        raise ToolError(
            f"No review has id {given!r}. Review ids are 26-character ULIDs such as "
            f"{dataset.ids[0] if dataset.ids else '01HV6Z9M8Q2W3E4R5T6Y7U8I9O'}; "
            "use search, search_reviews or get_reviews_since to find them."
        )
    return position


def get_review(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    position = _review_id(dataset, args["id"])
    mentions = encode_message(dataset.insights_doc["per_review"].get(dataset.ids[position]))
    review = fitted_review(dataset, position, RESULT_BUDGET - len(mentions) - 100)
    return ToolOutput(EncodedJson(b'{"review":%s,"mentions":%s}' % (review, mentions)), [position])


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


def get_aspect_sentiment(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    aspect = resolve("aspect", args["aspect"], dataset.insights_doc["aspects"])
    sentiment = args.get("sentiment")
    positions = dataset.positions_by_aspect.get((aspect["id"], sentiment), [])
    return _newest(dataset, {"aspect": aspect, "sentiment": sentiment}, positions, args["limit"], base_url)


def get_technician(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    technician = resolve(
        "practitioner",
        args["name"],
        list(dataset.technicians.values()),
        ("id", "name", "label"),
        lambda t: f"{t['name']} (id {t['id']}, {t['role']})",
    )
    positions = dataset.positions_by_technician.get(technician["id"], [])
    return _newest(dataset, {"technician": technician}, positions, args["limit"], base_url)


def get_service(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    service = resolve("service", args["service"], dataset.business["services"])
    positions = dataset.positions_by_service.get(service["id"], [])
    fields = {"service": service, "insights": dataset.services.get(service["id"])}
    return _newest(dataset, fields, positions, args["limit"], base_url)


def get_rating_trend(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    temporal = dataset.insights_doc["temporal"]
    monthly = temporal["monthly"][-int(args["months"]) :] if "months" in args else temporal["monthly"]
    return ToolOutput({"monthly": monthly, "trend": temporal["trend"]})


def get_insights_summary(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    doc = dataset.insights_doc
    return ToolOutput(
        {
            **{key: doc[key] for key in SUMMARY_KEYS},
            "technicians": doc["entities"]["technicians"],
            "services": doc["entities"]["services"],
        }
    )


# ----------------------------------------------------------------- search and fetch (ChatGPT's shapes)

SEARCH_RESULTS = 20
QUERY_CHARACTERS = SCHEMAS["search-params.schema.json"]["properties"]["query"]["maxLength"]
_STAR_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_STARS = re.compile(r"\b([1-5]|one|two|three|four|five)[ -]?stars?\b", re.IGNORECASE)
_FLAGS = (  # phrases that set a filter or the order, longest first
    ("without a reply", "has_reply", False),
    ("without reply", "has_reply", False),
    ("no reply", "has_reply", False),
    ("not answered", "has_reply", False),
    ("unanswered", "has_reply", False),
    ("unreplied", "has_reply", False),
    ("answered", "has_reply", True),
    ("replied", "has_reply", True),
    ("with text", "has_text", True),
    ("rating only", "has_text", False),
    ("rating-only", "has_text", False),
    ("newest", "sort", "newest"),
    ("latest", "sort", "newest"),
    ("recent", "sort", "newest"),
    ("oldest", "sort", "oldest"),
    ("best", "sort", "highest"),
    ("highest", "sort", "highest"),
    ("worst", "sort", "lowest"),
    ("lowest", "sort", "lowest"),
)
_FILLER = frozenset(
    "a an the of on in at for with from about to and or by is are was were what which who how do does did "
    "say says said said people customer customers review reviews rated rating ratings mention mentions "
    "mentioning me show find all any some our my this that".split()
)


def understood_query(dataset: Dataset, query: str) -> dict[str, Any]:
    """The search arguments a free-text query asks for: a star count ("2-star", "five stars"), a platform
    ("google"), replied or not ("unanswered"), an order ("worst", "oldest"), a practitioner or a service
    named by a word that names only one ("Patel", "massage"); what is left, filler words dropped, is a text
    to find. Pure: the same query on the same data always gives the same arguments."""
    args: dict[str, Any] = {}
    text = " " + " ".join(query.split()) + " "
    if found := _STARS.search(text):
        word = found.group(1).lower()
        args["rating"] = int(word) if word.isdigit() else _STAR_WORDS[word]
        text = text[: found.start()] + " " + text[found.end() :]
    lowered = text.lower()
    for phrase, name, value in _FLAGS:
        at = lowered.find(f" {phrase} ")
        if at >= 0 and name not in args:
            args[name] = value
            lowered = lowered[:at] + " " + lowered[at + len(phrase) + 1 :]
            text = text[:at] + " " + text[at + len(phrase) + 1 :]
    words = [w.strip(".,;:!?\"'()") for w in text.split()]
    rest = []
    for word in words:
        folded = fold_name(word)
        if not folded or folded in _FILLER:
            continue
        if folded in dataset.positions_by_source and "source" not in args:
            args["source"] = folded
            continue
        entity = _one_entity(dataset, folded, args)
        if entity is None:
            rest.append(word)
    rest = [w for w in rest if not _part_of_entity(dataset, fold_name(w), args)]
    if rest:
        phrase = " ".join(rest)
        found = dataset.positions_with_text(phrase.casefold())
        args["query"] = (phrase if found else max(rest, key=len))[:QUERY_CHARACTERS]
    return args


def _one_entity(dataset: Dataset, folded: str, args: dict[str, Any]) -> str | None:
    """The practitioner or service `folded` alone names (a word of three letters or more), set in `args`."""
    if len(folded) < 3:
        return None
    for key, lookup in (
        ("mentions_technician", dataset.technician_names),
        ("mentions_service", dataset.service_names),
    ):
        found = set(named(folded, lookup))
        if len(found) == 1 and key not in args:
            args[key] = found.pop()
            return args[key]
    return None


def _part_of_entity(dataset: Dataset, folded: str, args: dict[str, Any]) -> bool:
    """Whether a word is part of the chosen practitioner's or service's names ("Dr." of "Dr. Maya Patel")."""
    for key, lookup in (
        ("mentions_technician", dataset.technician_names),
        ("mentions_service", dataset.service_names),
    ):
        names = next((names for item, names in lookup if item == args.get(key)), [])
        if folded and any(folded in name.split() for name in names):
            return True
    return False


def review_title(review: Mapping[str, Any]) -> str:
    """A one-line title: stars, author, date, platform and the text's first words."""
    rating = int(review["rating"])
    stars = "\u2605" * rating + "\u2606" * (5 - rating)
    text = " ".join((review["text"] or "").split())
    snippet = f": {text[:80]}{'…' if len(text) > 80 else ''}" if text else " (rating only)"
    return f"{stars} {rating}/5 from {review['author']}, {review['date']} on {review['source']}{snippet}"


def search(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    """ChatGPT's search: {results: [{id, title, url}]}, the best SEARCH_RESULTS for the free-text query."""
    query = args["query"].strip()
    understood = understood_query(dataset, query) if query else {}
    page = run_search(dataset, {**understood, "limit": SEARCH_RESULTS})
    results = [
        {
            "id": dataset.ids[p],
            "title": review_title(dataset.reviews[p]),
            "url": review_page_url(base_url, dataset.ids[p]),
        }
        for p in page.positions
    ]
    return ToolOutput({"results": results}, page.positions)


def fetch(dataset: Dataset, args: dict[str, Any], base_url: str) -> ToolOutput:
    """ChatGPT's fetch: one review as {id, title, text, url, metadata}; text holds the owner's reply too."""
    position = _review_id(dataset, args["id"])
    review = json.loads(fitted_review(dataset, position, RESULT_BUDGET - 2_000))
    text = review["text"] or f"Rated {review['rating']} out of 5. No written review."
    reply = review.get("owner_reply")
    if reply:
        text += f"\n\nReply from the owner ({reply['date']}): {reply['text']}"
    metadata = {
        key: review[key] for key in ("rating", "date", "author", "source", "source_url", "verified")
    } | {"replied": reply is not None, "business": dataset.business["name"]}
    mentions = dataset.insights_doc["per_review"].get(review["id"])
    if mentions is not None:
        metadata["mentions"] = mentions
    structured = {
        "id": review["id"],
        "title": review_title(review),
        "text": text,
        "url": review_page_url(base_url, review["id"]),
        "metadata": metadata,
    }
    return ToolOutput(structured, [position])


TOOLS = {
    tool.name: tool
    for tool in (  # the eleven read-only tools
        Tool(
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
            get_business,
        ),
        Tool(
            "search_reviews",
            "Search reviews",
            "Finds verified reviews of {business} matching every filter given (filters combine with AND): "
            "rating, dates, text, practitioner, service, platform (source), has_text, has_reply (false: "
            "unanswered). sort: newest (default), oldest, highest, lowest. Returns {matched: total matches, "
            "returned, reviews: full review objects, next_cursor}; pass next_cursor back as cursor, with the "
            "same filters, for the next page (null: no more). A page holds what fits an assistant's context "
            "(long texts cut). Use it for 'unanswered 1-star reviews on Google this month', 'reviews "
            "mentioning parking', 'the best reviews of a practitioner'. Same parameters as GET "
            '/api/reviews/search. Example: {"rating": 1, "source": "google", "has_reply": false, "since": '
            '"2026-11-01"}.',
            {k: v for k, v in SCHEMAS["search-params.schema.json"].items() if k not in ("$id", "$schema")},
            bundle_schema(SCHEMAS["search-result.schema.json"]),
            search_reviews,
            validate=False,
        ),
        Tool(
            "get_review",
            "One review by id",
            "Returns one review (author, rating, date, text, source, owner reply) and what the analysis "
            "found in it (aspects with sentiment, technicians, services, problems, service areas, topics; "
            "null if not analysed). Use it when you have a review id from another tool, a feed or a pull "
            "quote. A text too long for an assistant's context is cut with a marker. "
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
            get_reviews_since,
        ),
        Tool(
            "get_aspect_sentiment",
            "Sentiment about one aspect",
            "Returns what reviewers of {business} think about one aspect of their experience (the aspects "
            "the analysis found, e.g. wait time, front desk): mention counts per sentiment, positive share, "
            "score from "
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
            "Returns what reviews say about one person working at {business} (a practitioner, as the "
            "insights name them): role, mention counts per sentiment, score from -1 to 1, plus the newest "
            "reviews mentioning them. "
            "Accepts an id, full name or label, case- and accent-insensitive; a unique part of a name also "
            'works (\'Patel\'). An unknown name returns the valid ones. Example: {"name": "Dr. Maya Patel"}.',
            _object_schema(
                {
                    "name": {
                        "description": "Practitioner id, name or label (e.g. Dr. Maya Patel).",
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
            "Returns one service {business} offers (id, label, description), what reviews say about it "
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
            get_rating_trend,
        ),
        Tool(
            "get_insights_summary",
            "Insights summary",
            "Returns the analysis of all reviews in one object: overall sentiment (score, positive/neutral/"
            "negative shares), an editorial summary, a pull quote, topics, an FAQ answered from reviews, "
            "and the aspect, practitioner and service records with their sentiment. Start here for 'what do "
            "customers think of {business}?' and to learn valid aspect, practitioner and service names. "
            "Takes no arguments. Example: {}.",
            _object_schema({}),
            _summary_output_schema(),
            get_insights_summary,
        ),
        Tool(
            "search",
            "Search reviews (free text)",
            "Searches the verified customer reviews of {business} ({category}) with free text and returns "
            "the best matches as {results: [{id, title, url}]}, newest first: the title gives the stars, "
            "author, date, platform and the text's first words; url is the review's public address (cite "
            "it). Understands a star count ('1-star', 'five stars'), a platform ('google'), 'unanswered' or "
            "'replied', an order ('worst', 'best', 'oldest'), and a practitioner or service named by one "
            "word ('Patel', 'massage'); the rest is matched as text in the reviews. Use fetch with an id for "
            "the whole review, search_reviews for exact filters and paging. "
            'Example: {"query": "unanswered 1-star google reviews about billing"}.',
            _object_schema(
                {
                    "query": {
                        "description": "What to look for, in plain words.",
                        "type": "string",
                        "maxLength": 500,
                    }
                },
                ["query"],
            ),
            _object_schema(
                {
                    "results": {
                        "type": "array",
                        "items": _object_schema(
                            {
                                "id": {"description": "Review id: pass it to fetch.", "type": "string"},
                                "title": {"type": "string"},
                                "url": {"description": "The review's public address.", "type": "string"},
                            },
                            ["id", "title", "url"],
                        ),
                    }
                },
                ["results"],
            ),
            search,
        ),
        Tool(
            "fetch",
            "Fetch one review",
            "Returns one verified review of {business} by the id search gave: {id, title, text (the review, "
            "then the owner's reply if any), url (its public address: cite it), metadata (rating, date, "
            "author, source, source_url, verified, replied, business, and what the analysis found in it)}. "
            'Example: {"id": "01HV6Z9M8Q2W3E4R5T6Y7U8I9O"}.',
            _object_schema(
                {
                    "id": {
                        "description": "Review id from search (26-character ULID).",
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
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "text": {"type": "string"},
                        "url": {"type": "string"},
                        "metadata": {"type": "object"},
                    },
                    ["id", "title", "text", "url", "metadata"],
                )
            ),
            fetch,
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


def run_tool(name: str, dataset: Dataset, arguments: dict[str, Any], base_url: str) -> ToolOutput:
    """Run a tool on the dataset current at call time; InvalidParams or ToolError for arguments to fix."""
    tool = TOOLS[name]
    if tool.validate:
        issues = _VALIDATORS[name].issues(arguments)
        if issues:
            raise InvalidParams(issues)
    return tool.run(dataset, {**_DEFAULTS[name], **arguments}, base_url)
