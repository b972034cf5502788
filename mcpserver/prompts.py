"""MCP prompts (prompts/list, prompts/get) and argument completion (completion/complete), both eras.

Pure functions of the dataset current at call time, like the tools (tools.py), whose results the
practitioner, service and aspect prompts embed as they are. Errors are `PromptError` values, answered as
-32602 by `McpServer.handle` (MCP server/prompts and server/utilities/completion: unknown prompt, missing
or invalid argument).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, timedelta
from heapq import merge
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence
from urllib.parse import urlencode

from ..reviews.dataset import Dataset, fold_name, folded_names
from ..reviews.search import InvalidParams, run_search, search_result_json, validate_date
from ..surface import REVIEW_PREFIX
from .protocol import encode_message, encoded
from .tools import BusinessWords, ToolError, run_tool

MAX_COMPLETIONS = 100  # the spec's cap on `values`
DIGEST_DAYS = 30
DIGEST_REVIEWS = 100
LOW_RATING = 3  # reply drafts are offered for unanswered reviews of at most this many stars
REVIEW_PATH = REVIEW_PREFIX  # + a review id: the review resource (GET /api/reviews/{id})


@dataclass(frozen=True)
class Argument:
    name: str
    title: str
    description: str
    required: bool = False
    completes: str | None = None  # the kind of thing it names (see `candidates`), if any

    def definition(self, words: BusinessWords) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": words.fill(self.title),
            "description": words.fill(self.description),
            "required": self.required,
        }


@dataclass(frozen=True)
class Prompt:
    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...]
    # Called with the dataset, the base URL and the arguments.
    render: Callable[[Dataset, str, Mapping[str, str]], list[dict[str, Any]]]

    def definition(self, words: BusinessWords) -> dict[str, Any]:
        """The prompts/list entry, its description in the words of the business served."""
        return {
            "name": self.name,
            "title": words.fill(self.title),
            "description": words.fill(self.description),
            "arguments": [a.definition(words) for a in self.arguments],
        }


class PromptError(Exception):
    """An invalid prompt request (unknown prompt, missing or invalid argument); mcp_rpc answers it with the
    JSON-RPC error -32602 (invalid params), `message` as its message and `data` as its data."""

    def __init__(self, message: str, data: Any = None):
        super().__init__(message)
        self.message, self.data = message, data


def user_text(text: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}}


def user_resource(uri: str, body: bytes) -> dict[str, Any]:
    """An embedded JSON resource: the same bytes a GET of `uri` answers."""
    return {
        "role": "user",
        "content": {
            "type": "resource",
            "resource": {"uri": uri, "mimeType": "application/json", "text": body.decode("utf-8")},
        },
    }


def business_line(dataset: Dataset) -> str:
    business = dataset.business
    return f"{business['name']} ({business.get('category', 'local business')})"


def render_digest(dataset: Dataset, base_url: str, args: Mapping[str, str]) -> list[dict[str, Any]]:
    newest = dataset.reviews[0]["date"] if len(dataset.reviews) else date.today().isoformat()
    until = _date_arg(args, "until") or newest
    since = _date_arg(args, "since") or (date.fromisoformat(until) - timedelta(days=DIGEST_DAYS)).isoformat()
    if since > until:
        raise PromptError(f"since ({since}) is after until ({until})", {"since": since, "until": until})
    query = {"since": since, "until": until, "limit": DIGEST_REVIEWS}
    page = run_search(dataset, query)
    matched = page.matched
    uri = f"{base_url}/api/reviews/search?{urlencode(query)}"
    return [
        user_text(
            f"Write a digest of the customer reviews of {business_line(dataset)} from {since} to {until} "
            f"for the owner and staff. {matched} reviews fall in this period; the newest "
            f"{min(matched, DIGEST_REVIEWS)} are attached as JSON (newest first). Give: the number of "
            "reviews and the average rating, what customers praised most, every complaint or problem "
            f"(quote briefly, with the review date), which {BusinessWords.of(dataset).people} and services "
            "were mentioned and "
            "how, and two or three concrete next steps. Use only the attached reviews; say so if there "
            "are none."
        ),
        user_resource(uri, search_result_json(dataset, page)),
    ]


def render_reply(dataset: Dataset, base_url: str, args: Mapping[str, str]) -> list[dict[str, Any]]:
    review_id = args["review_id"].strip().upper()  # ULIDs are case-insensitive
    position = dataset.position_of.get(review_id)
    if position is None:
        raise PromptError(
            f"Unknown review id {args['review_id']!r}; completion/complete on review_id lists the "
            "unanswered low-rated reviews",
            {"review_id": args["review_id"]},
        )
    review = dataset.reviews[position]
    business = dataset.business
    answered = (
        "It already has an owner reply (attached): write a short follow-up only if it adds something. "
        if review.get("owner_reply")
        else ""
    )
    mentions = dataset.insights_doc["per_review"].get(review_id)
    return [
        user_resource(base_url + REVIEW_PATH + review_id, dataset.review_json(position)),
        user_text(
            f"Draft a public owner reply from {business['name']} to the {review['rating']}-star review above "
            f"by {review['author']} ({review['date']}). {answered}Thank them, acknowledge each concrete "
            f"problem they raise without arguing or making excuses, say what {business['name']} will do, and "
            f"invite them to call {business.get('telephone') or 'us'} to talk it over. Never confirm that "
            "they are a customer or mention health or other personal details (privacy). 60 to 120 words, "
            "warm and plain. "
            f"What the analysis found in the review: {encode_message(mentions).decode('utf-8')}."
        ),
    ]


def render_entity(
    tool: str, subject: str, key: str
) -> Callable[[Dataset, str, Mapping[str, str]], list[dict[str, Any]]]:
    """A prompt over one practitioner, service or aspect: `key` in the result of `tool`, which takes the
    prompt's arguments."""

    def render(dataset: Dataset, base_url: str, args: Mapping[str, str]) -> list[dict[str, Any]]:
        tool_args = {**{name: value for name, value in args.items() if value}, "limit": 20}
        try:
            data = encoded(run_tool(tool, dataset, tool_args, base_url).structured)
        except ToolError as exc:
            raise PromptError(str(exc), {"tool": tool}) from None
        except InvalidParams as exc:
            raise PromptError("; ".join(i["message"] for i in exc.issues), {"issues": exc.issues}) from None
        record = json.loads(data)[key]
        return [
            user_text(
                f"Review how customers of {business_line(dataset)} experience "
                f"{BusinessWords.of(dataset).fill(subject)} "
                f"{record.get('name') or record['label']}, from the data below (the result of the {tool} "
                "tool: the record with its mention counts and sentiment score, and the newest reviews "
                "mentioning it). Summarise "
                "strengths and weaknesses with short quotes and dates, note any trend in the recent reviews, "
                "and suggest what to keep doing and what to improve."
            ),
            user_text(f"Data (JSON):\n{bytes(data).decode('utf-8')}"),
        ]

    return render


def _date_arg(args: Mapping[str, str], name: str) -> str | None:
    value = args.get(name, "").strip()
    if not value:
        return None
    try:
        return validate_date(name, value)
    except InvalidParams as exc:
        raise PromptError(exc.issues[0]["message"], {"argument": name}) from None


PROMPTS = {
    p.name: p
    for p in (
        Prompt(
            "review_digest",
            "Digest of recent reviews",
            "A digest of the reviews for a period (default: the last 30 days of reviews): praise, "
            "complaints, {people} and services mentioned, next steps. Embeds the period's reviews.",
            (
                Argument("since", "From", "First day, YYYY-MM-DD (default: 30 days before `until`)."),
                Argument("until", "To", "Last day, YYYY-MM-DD (default: the newest review's date)."),
            ),
            render_digest,
        ),
        Prompt(
            "reply_draft",
            "Draft a reply to a review",
            "Drafts a short public owner reply to one review, typically an unanswered low-rated one "
            "(completion offers those, newest first). Embeds the review and what the analysis found in it.",
            (Argument("review_id", "Review", "Review id (26-character ULID).", True, "reply_review"),),
            render_reply,
        ),
        Prompt(
            "practitioner_review",
            "{One_person} review",
            "What customers of {business} say about one {one_person}: strengths, weaknesses, recent trend. "
            "Embeds their record and newest reviews.",
            (
                Argument(
                    "name",
                    "{One_person}",
                    "Name or id, case- and accent-insensitive (e.g. {person}).",
                    True,
                    "technician",
                ),
            ),
            render_entity("get_technician", "the {one_person}", "technician"),
        ),
        Prompt(
            "service_review",
            "Service review",
            "What customers say about one service {business} offers. Embeds the service, its sentiment and "
            "the newest reviews mentioning it.",
            (Argument("service", "Service", "Service label or id (e.g. Massage therapy).", True, "service"),),
            render_entity("get_service", "the service", "service"),
        ),
        Prompt(
            "aspect_review",
            "Aspect review",
            "What customers of {business} say about one aspect of their experience (e.g. {aspect}), "
            "optionally only "
            "positive, neutral or negative mentions. Embeds the aspect's sentiment and the newest reviews.",
            (
                Argument("aspect", "Aspect", "Aspect label or id (e.g. Wait time).", True, "aspect"),
                Argument(
                    "sentiment",
                    "Sentiment",
                    "positive, neutral or negative (default: all).",
                    False,
                    "sentiment",
                ),
            ),
            render_entity("get_aspect_sentiment", "the aspect", "aspect"),
        ),
    )
}


def prompt_arguments(prompt: Prompt, arguments: Any) -> dict[str, str]:
    """The request's arguments checked against the prompt's: strings, known names, required ones present."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise PromptError("Invalid params: arguments must be an object of strings")
    known = {a.name for a in prompt.arguments}
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise PromptError(
            f"Unknown argument(s) {', '.join(unknown)} for prompt {prompt.name}; known: "
            f"{', '.join(sorted(known))}",
            {"unknown": unknown},
        )
    missing = [a.name for a in prompt.arguments if a.required and not arguments.get(a.name, "").strip()]
    if missing:
        raise PromptError(
            f"Missing required argument(s) for prompt {prompt.name}: {', '.join(missing)}",
            {"missing": missing},
        )
    return arguments


def get_prompt(dataset: Dataset, base_url: str, params: Mapping[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    prompt = PROMPTS.get(name) if isinstance(name, str) else None
    if prompt is None:
        raise PromptError(
            f"Unknown prompt: {name}; known prompts: {', '.join(PROMPTS)}",
            {"prompt": name, "prompts": list(PROMPTS)},
        )
    arguments = prompt_arguments(prompt, params.get("arguments"))
    description = BusinessWords.of(dataset).fill(prompt.description)
    return {"description": description, "messages": prompt.render(dataset, base_url, arguments)}


def complete_names(prefix: str, candidates: Iterable[tuple[str, Sequence[str]]]) -> list[str]:
    """The values of (value, folded names) candidates with a name, or a word of one, starting with `prefix`
    (folded: case and accents do not matter, as in the search's name filters)."""
    folded = fold_name(prefix)
    return [
        value
        for value, names in candidates
        if any(name.startswith(folded) or f" {folded}" in f" {name}" for name in names)
    ]


def unanswered_low_rated(dataset: Dataset) -> Iterator[str]:
    """Ids of the reviews of at most LOW_RATING stars without an owner reply, newest first."""
    ids, replied = dataset.ids, dataset.replied_positions
    positions = merge(*(dataset.positions_by_rating.get(star, ()) for star in range(1, LOW_RATING + 1)))
    return (ids[p] for p in positions if p not in replied)


def candidates(kind: str, dataset: Dataset) -> Iterable[tuple[str, Sequence[str]]]:
    """(completion value, the folded names it can be typed as) for one kind of argument."""
    if kind == "technician":  # the Dataset folds their names once, for the search's filters
        return ((dataset.technicians[tid]["name"], names) for tid, names in dataset.technician_names)
    if kind == "service":
        return (
            (s["label"], names) for s, names in folded_names(dataset.business["services"], ("id", "label"))
        )
    if kind == "aspect":
        return (
            (a["label"], names) for a, names in folded_names(dataset.insights_doc["aspects"], ("id", "label"))
        )
    return ((s, (s,)) for s in ("positive", "neutral", "negative"))  # "sentiment"


def completion(values: Sequence[str]) -> dict[str, Any]:
    return {
        "completion": {
            "values": list(values[:MAX_COMPLETIONS]),
            "total": len(values),
            "hasMore": len(values) > MAX_COMPLETIONS,
        }
    }


def complete(dataset: Dataset, template_uri: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """completion/complete for a prompt argument or the review template's {id}."""
    ref, argument = params.get("ref"), params.get("argument")
    if (
        not isinstance(ref, dict)
        or not isinstance(argument, dict)
        or not isinstance(argument.get("name"), str)
        or not isinstance(argument.get("value"), str)
    ):
        raise PromptError("Invalid params: ref must be an object and argument {name, value} strings")
    kind = argument_kind(ref, argument["name"], template_uri)
    if kind is None:
        return completion([])  # an argument that names nothing in the data (a date) has no completions
    if kind in ("review", "reply_review"):  # ids (ULIDs, upper case): a case-insensitive prefix, no folding
        prefix = argument["value"].strip().upper()
        # Newest first, both: position_of is in position order.
        ids = dataset.position_of if kind == "review" else unanswered_low_rated(dataset)
        return completion([review_id for review_id in ids if review_id.startswith(prefix)])
    return completion(complete_names(argument["value"], candidates(kind, dataset)))


def argument_kind(ref: Mapping[str, Any], name: str, template_uri: str) -> str | None:
    if ref.get("type") == "ref/prompt":
        prompt = PROMPTS.get(ref["name"]) if isinstance(ref.get("name"), str) else None
        if prompt is None:
            raise PromptError(
                f"Unknown prompt: {ref.get('name')}; known prompts: {', '.join(PROMPTS)}",
                {"prompt": ref.get("name")},
            )
        argument = next((a for a in prompt.arguments if a.name == name), None)
        if argument is None:
            raise PromptError(
                f"Prompt {prompt.name} has no argument {name!r}",
                {"arguments": [a.name for a in prompt.arguments]},
            )
        return argument.completes
    if ref.get("type") == "ref/resource":
        if ref.get("uri") != template_uri or name != "id":
            raise PromptError(
                f"Unknown resource template or argument; the one template is {template_uri} with argument id",
                {"uri": ref.get("uri")},
            )
        return "review"
    raise PromptError('Invalid params: ref.type must be "ref/prompt" or "ref/resource"')
