"""The MCP tools search and fetch, in the shapes ChatGPT's connectors and deep research expect: a query in
plain words understood as search filters, and one document by id."""

from __future__ import annotations

import calendar
import json
import re
from datetime import date, datetime, timedelta, timezone
from typing import Any, Mapping

from ..reviews.dataset import SCHEMAS, Dataset, fold_name, named
from ..reviews.search import (
    run_search,
)
from ..web.feeds import review_page_url
from .toolkit import (
    RESULT_BUDGET,
    REVIEW_ID_ARGS,
    Registry,
    ToolOutput,
    _object_schema,
    _review_id,
    bundle_schema,
    fitted_review,
)

SEARCH_AND_FETCH = Registry()

# ----------------------------------------------------------------- search and fetch (ChatGPT's shapes)

SEARCH_RESULTS = 20
QUERY_CHARACTERS = SCHEMAS["search-params.schema.json"]["properties"]["q"]["maxLength"]
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


def understood_query(dataset: Dataset, query: str, today: date | None = None) -> dict[str, Any]:
    """The search arguments a free-text query asks for: a star count ("2-star", "five stars"), a platform
    ("google"), replied or not ("unanswered"), an order ("worst", "oldest"), a practitioner or a service
    named by a word that names only one ("Patel", "massage"), a period ("in the last 3 months", counted back
    from `today`); what is left, filler words dropped, is ranked (`q`). Pure: the same query on the same data
    and day always gives the same arguments."""
    args: dict[str, Any] = {}
    text = " " + " ".join(query.split()) + " "
    if found := _STARS.search(text):
        word = found.group(1).lower()
        args["rating"] = int(word) if word.isdigit() else _STAR_WORDS[word]
        text = text[: found.start()] + " " + text[found.end() :]
    if found := _PERIOD.search(text):
        args["since"] = period_start(found, today or datetime.now(timezone.utc).date())
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
    if rest:  # ranked: best match first, unless the query asked for an order
        args["q"] = " ".join(rest)[:QUERY_CHARACTERS]
    return args


_PERIOD = re.compile(
    r"\b(?:in |during |over |from )?(?:the )?(?P<which>last|past|this)\s+(?:(?P<n>[0-9]{1,3}|two|three|four|"
    r"five|six|twelve)\s+)?(?P<unit>days?|weeks?|months?|quarters?|years?)\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "twelve": 12}


def period_start(found: re.Match, today: date) -> str:
    """The first day of "the last 3 months", "this year", "past week"...: counted back from `today`."""
    n = found["n"] or "1"
    count = int(n) if n.isdigit() else _NUMBER_WORDS[n.lower()]
    unit = found["unit"].lower().rstrip("s")
    if found["which"].lower() == "this":
        if unit == "year":
            return today.replace(month=1, day=1).isoformat()
        if unit in ("month", "quarter"):
            first = today.month if unit == "month" else today.month - (today.month - 1) % 3
            return today.replace(month=first, day=1).isoformat()
        count = 1
    if unit in ("day", "week"):
        return (today - timedelta(days=count * (7 if unit == "week" else 1))).isoformat()
    months = count * {"month": 1, "quarter": 3, "year": 12}[unit]
    year, month = divmod(today.year * 12 + today.month - 1 - months, 12)
    day = min(today.day, calendar.monthrange(year, month + 1)[1])
    return date(year, month + 1, day).isoformat()


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


@SEARCH_AND_FETCH.tool(
    "search",
    "Search reviews (free text)",
    "Searches the {verified}customer reviews of {business} ({category}; {sources}) with free "
    "text; returns the best matches as {results: [{id, title, url}]}, best first: the title gives "
    "stars, author, date, platform and first words; url is the review's public address (cite it). "
    "Understands a star count ('1-star'), a platform ('google'), 'unanswered' or 'replied', an order "
    "('worst', 'oldest'), a {one_person} or service named by one word, and a period ('in the last 3 "
    "months'); the other words are ranked (BM25; words of complaint favour the negative mentions of "
    "the most criticised aspects). fetch gives a whole review, search_reviews exact filters. "
    'Example: {"query": "what do people complain about in the last 3 months"}.',
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
)
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


@SEARCH_AND_FETCH.tool(
    "fetch",
    "Fetch one review",
    "Returns one review of {business} by the id search gave: {id, title, text (the review, "
    "then the owner's reply if any), url (its public address: cite it), metadata (rating, date, "
    "author, source, source_url, verified, replied, business, and what the analysis found in it)}. "
    'Example: {"id": "01HV6Z9M8Q2W3E4R5T6Y7U8I9O"}.',
    REVIEW_ID_ARGS,
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
)
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
