"""What the MCP tools are made of: the Tool and its registry, the schemas' bundling, fitting reviews in an
assistant's context (RESULT_BUDGET, TRIM_MARK), and the helpers the tools share. The tools themselves are in
tools.py and search_fetch.py, each registered beside its function."""

from __future__ import annotations

import functools
import operator
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import urljoin

from ..reviews.dataset import SCHEMAS, Dataset, folded_names, named
from ..reviews.periods import MAX_REVIEW_IDS
from ..reviews.search import DATE_SCHEMA
from ..surface import REVIEW_PREFIX
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
            "title": words.fill(self.title),
            "description": words.fill(self.description),
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {"title": words.fill(self.title), **READ_ONLY},
        }


@dataclass(frozen=True)
class BusinessWords:
    """What descriptions and prompts call the business: `{business}` is its name, `{category}` its category
    (lower case: "chiropractic clinic"); no text written here says clinic or patients."""

    name: str
    category: str
    sources: str = "reviews from the platforms they were posted on"
    verified: str = ""  # "verified " when every review is; imported ones are often not
    aspects: tuple[str, ...] = ()  # the analysis's aspect labels, most mentioned first
    person: str = ""
    service: str = ""
    people: str = "practitioners"  # what the trade calls the people reviews name ([publish] people_label)
    one_person: str = "practitioner"

    @classmethod
    def of(cls, dataset: Dataset) -> "BusinessWords":
        """The words of a dataset, made once per dataset (every MCP answer asks)."""
        with _WORDS_LOCK:
            words = _WORDS.get(dataset)
            if words is None:
                words = _WORDS[dataset] = cls._made(dataset)
            return words

    @classmethod
    def _made(cls, dataset: Dataset) -> "BusinessWords":
        business = dataset.business
        platforms = [
            _PLATFORM_NAMES.get(name, name.capitalize())
            for name, _ in sorted(dataset.positions_by_source.items(), key=lambda item: -len(item[1]))
        ]
        aspects = sorted(dataset.insights_doc["aspects"], key=lambda a: -a["mention_count"])
        technicians = sorted(dataset.technicians.values(), key=lambda t: -t["mention_count"])
        services = business.get("services") or []
        # The served body holds the key as written (a text holding it has its quotes escaped): one scan.
        every_verified = bool(dataset.reviews) and b'"verified":false' not in dataset.reviews_document
        people = (dataset.insights_doc.get("people_label") or "Practitioners").lower()
        return cls(
            business["name"],
            (business.get("category") or "local business").lower(),
            "reviews from " + _listed(platforms) if platforms else cls.sources,
            "verified " if every_verified else "",
            tuple(a["label"] for a in aspects),
            technicians[0]["name"] if technicians else "",
            services[0]["label"] if services else "",
            people,
            SINGULAR_PEOPLE.get(people, people.removesuffix("s")),
        )

    def fill(self, text: str) -> str:
        aspects = [label.lower() for label in self.aspects[:3]] or ["what reviewers write about"]
        replacements = {
            "{business}": self.name,
            "{category}": self.category,
            "{sources}": self.sources,
            "{verified}": self.verified,
            "{aspects}": ", ".join(aspects),
            "{aspect}": aspects[0],
            "{person}": self.person or "a name",
            "{service}": self.service or "a service",
            "{people}": self.people,
            "{one_person}": self.one_person,
            "{One_person}": self.one_person[:1].upper() + self.one_person[1:],
        }
        for key, value in replacements.items():
            text = text.replace(key, value)
        return text


# The plural analyze writes as people_label -> one of them ("staff" is no plural of "staf").
SINGULAR_PEOPLE = {"staff": "staff member", "people": "person", "team": "team member"}
_WORDS: "weakref.WeakKeyDictionary[Dataset, BusinessWords]" = weakref.WeakKeyDictionary()
_WORDS_LOCK = threading.Lock()
_PLATFORM_NAMES = {"google": "Google", "yelp": "Yelp", "trustpilot": "Trustpilot", "facebook": "Facebook"}


def _listed(names: Sequence[str]) -> str:
    """ "Google", "Google and Yelp", "Google, Yelp and Trustpilot"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


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
        "uri": base_url + REVIEW_PREFIX + review_id,
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


_COUNT = {"type": "integer", "minimum": 0}
_RANGE_ARGS = {
    "since": {**DATE_SCHEMA, "description": "Only reviews dated on or after this day (YYYY-MM-DD)."},
    "until": {**DATE_SCHEMA, "description": "Only reviews dated on or before this day (YYYY-MM-DD)."},
}
FIGURES_SCHEMA = {
    "description": "Figures recounted from the per-review mentions of the reviews dated in the range: how "
    "many mention it, per sentiment where the analysis records one, their average rating, and the ids of the "
    f"newest {MAX_REVIEW_IDS} they rest on.",
    "type": "object",
    "properties": {
        "since": {"type": ["string", "null"]},
        "until": {"type": ["string", "null"]},
        "mention_count": _COUNT,
        "positive_count": _COUNT,
        "neutral_count": _COUNT,
        "negative_count": _COUNT,
        "score": {"type": "number", "minimum": -1, "maximum": 1},
        "average_rating": {"type": ["number", "null"]},
        "review_ids": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["since", "until", "mention_count", "average_rating", "review_ids"],
}
_PERIOD_PROPERTY = {"period": {"oneOf": [FIGURES_SCHEMA, {"type": "null"}]}}


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
    if not records:  # none in the profile, or not published ([publish] people = false): not "Valid: none."
        raise ToolError(
            f"Unknown {kind} {query!r}: this business's insights name no {kind}s; "
            "search_reviews with q finds the reviews that mention it."
        )
    found = named(query, folded_names(records, keys))
    if len(found) == 1:
        return found[0]
    choices = "; ".join(describe(r) for r in (found or records))
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
        "period": {"oneOf": [_period_summary_schema(), {"type": "null"}]},
    }
    return bundle_schema(_object_schema(properties, list(properties)))


def _period_summary_schema() -> dict[str, Any]:
    figures = FIGURES_SCHEMA["properties"]
    row = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "label": {"type": "string"},
            **{k: v for k, v in figures.items() if k not in ("since", "until")},
        },
        "required": ["id", "label", "mention_count", "average_rating", "review_ids"],
    }
    return {
        "description": "The figures of the reviews dated within since..until, recounted from their mentions.",
        "type": "object",
        "properties": {
            "since": figures["since"],
            "until": figures["until"],
            "review_count": _COUNT,
            "average_rating": {"type": ["number", "null"]},
            "rating_counts": {"type": "object", "additionalProperties": _COUNT},
            **{group: {"type": "array", "items": row} for group in ("aspects", "technicians", "services")},
        },
        "required": ["since", "until", "review_count", "average_rating", "rating_counts", "aspects"],
    }


# The arguments of get_review and fetch: one review's id.
REVIEW_ID_ARGS = _object_schema(
    {
        "id": {
            "description": "Review id (26-character ULID), as the search tools and the others give it.",
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
        }
    },
    ["id"],
)


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


class Registry(dict[str, Tool]):
    """Tools by name, in the order they were registered (tools/list's order); each registered beside its
    function with `@registry.tool(name, title, description, input schema, output schema)`."""

    def tool(
        self,
        name: str,
        title: str,
        description: str,
        input_schema: Mapping[str, Any],
        output_schema: Mapping[str, Any],
        validate: bool = True,
    ) -> Callable[[Callable[[Dataset, dict[str, Any], str], ToolOutput]], Callable]:
        def register(run: Callable[[Dataset, dict[str, Any], str], ToolOutput]) -> Callable:
            self[name] = Tool(name, title, description, input_schema, output_schema, run, validate)
            return run

        return register
