"""Why data files are refused: the Problem each reason is (rule `schema:<keyword>` for the JSON
Schemas, checked in dataset.py), and the rules a schema cannot express: unique ids, references
to reviews that exist, counts that agree."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Container, Iterable, Iterator, Mapping, Sequence

REVIEWS_FILE = "reviews.json"
INSIGHTS_FILE = "insights.json"


@dataclass(frozen=True)
class Problem:
    """One reason a data file is refused: which file, where in it, which rule."""

    file: str
    path: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.rule}: {self.message}"

    @property
    def hint(self) -> str | None:
        """How to fix the usual mistakes (`reviewsd check` prints it under the problem)."""
        if self.rule == "schema:format" and ("date" in self.message or self.path.endswith("date")):
            if "date-time" in self.message:
                return "write a timestamp as RFC 3339 in UTC, e.g. 2026-11-15T08:00:00Z"
            return "write a date as YYYY-MM-DD with a real month and day, e.g. 2026-03-07 (not 07/03/2026)"
        for pattern, rules, hint in _PATH_HINTS:
            if self.rule in rules and re.search(pattern, self.path):
                return hint
        return _HINTS.get(self.rule)


# The common mistakes a schema rule reports at a known place: (path pattern, rules, hint).
_PATH_HINTS = [
    (
        r"\.country$",
        ("schema:pattern",),
        "write the country as its two-letter ISO 3166-1 code in capitals, e.g. US, GB, DE (not USA or us)",
    ),
    (
        r"\.opening_hours\[\d+\]\.days\[\d+\]$",
        ("schema:enum",),
        "write days as two lower-case letters: mo, tu, we, th, fr, sa, su",
    ),
    (
        r"\.opening_hours\[\d+\]\.(opens|closes)$",
        ("schema:pattern",),
        "write times as 24-hour HH:MM, e.g. 08:30 or 17:00 (closes may be 24:00)",
    ),
    (
        r"^\$\.reviews\[\d+\]\.id$",
        ("schema:pattern",),
        "a review id is a 26-character ULID in capitals, e.g. 01HV6Z9M8Q2W3E4R5T6Y7V8J9K; "
        "`reviewsd import` gives every imported review one",
    ),
    (
        r"(^\$\.business|\])\.id$",
        ("schema:pattern",),
        "write ids as lower-case words joined by hyphens, e.g. dr-maya-patel or massage-therapy",
    ),
]

_HINTS = {
    "aggregate-agrees": "recount: aggregate_rating must describe the reviews the file holds "
    "(review_count, each star's count in distribution, rating_value their mean)",
    "counts-agree": "recount from per_review: a record's mention_count is how many per_review entries "
    "list its id, and equals positive_count + neutral_count + negative_count",
    "review-exists": "every review id in insights.json must be an id in reviews.json (same spelling and "
    "case): remove the reference, or produce both files from the same reviews",
    "unique-id": "give each record its own id",
    "known-id": "list the id among its records (or in reviews.json's business), or remove the mention",
    "json": "the file is not complete JSON: write it to a temporary file and rename it into place",
    "size": "check the file; if it is right, raise --max-data-file-bytes",
    "regular-file": "put a regular file there (write it to a temporary name, then rename it into place)",
}


class DataError(Exception):
    """The data files cannot be served; `problems` lists every reason."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        shown = "; ".join(map(str, self.problems[:3]))
        more = f" (and {len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        super().__init__(f"{len(self.problems)} problem(s): {shown}{more}")


def json_path(parts: Iterable[Any]) -> str:
    """`$.reviews[3].rating` from a list of keys and indexes."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}"
        else:
            out += "[" + json.dumps(part, ensure_ascii=False) + "]"
    return out


def unencodable_problems(file: str, doc: Any) -> list[Problem]:
    """What parses but cannot be served: strings (keys too) holding a lone surrogate (JSON can escape
    one, \\ud800, UTF-8 cannot carry it) and numbers beyond a float's range (1e400 reads as infinity)."""

    def visit(node: Any, parts: list[Any]) -> Iterator[Problem]:
        if isinstance(node, dict):
            for key, value in node.items():
                yield from visit(key, parts)
                yield from visit(value, [*parts, key])
        elif isinstance(node, list):
            for index, item in enumerate(node):
                yield from visit(item, [*parts, index])
        elif isinstance(node, float) and not math.isfinite(node):
            yield Problem(
                file,
                json_path(parts),
                "number",
                "a number beyond the range of a 64-bit float; write a finite number",
            )
        elif isinstance(node, str) and not node.isascii():
            try:
                node.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(node[exc.start])
                yield Problem(
                    file,
                    json_path(parts),
                    "unicode",
                    f"lone surrogate U+{code:04X} is not a character; write valid Unicode text",
                )

    return list(visit(doc, []))


def cross_file_problems(
    reviews_head: Mapping,
    ratings: Sequence[int],
    review_ids: Container[str],
    insights_doc: Mapping,
    tallies: Mapping[str, Mapping[str, int]] | None = None,
) -> list[Problem]:
    """Rules a schema cannot express, but those of each review (review_record_problems): references,
    agreeing counts; from what they read of reviews.json (its other keys, the ratings, the ids).
    `tallies`: mention_tallies(insights_doc), where already counted."""
    problems = list(_aggregate_problems(reviews_head["aggregate_rating"], ratings))
    problems += [
        Problem(INSIGHTS_FILE, path, "review-exists", f"review {review_id} is not in {REVIEWS_FILE}")
        for path, review_id in _referenced_review_ids(insights_doc)
        if review_id not in review_ids
    ]
    problems += _insights_count_problems(insights_doc, tallies or mention_tallies(insights_doc))
    problems += _insights_business_problems(insights_doc, reviews_head["business"])
    return problems


def review_record_problems(reviews: Sequence[Mapping]) -> list[Problem]:
    problems = []
    seen: dict[str, int] = {}
    for index, review in enumerate(reviews):
        if review["id"] in seen:
            problems.append(
                Problem(
                    REVIEWS_FILE,
                    f"$.reviews[{index}].id",
                    "unique-id",
                    f"id {review['id']} also used by $.reviews[{seen[review['id']]}]",
                )
            )
        seen.setdefault(review["id"], index)
        reply = review["owner_reply"]
        if reply is not None and reply["date"] < review["date"]:
            problems.append(
                Problem(
                    REVIEWS_FILE,
                    f"$.reviews[{index}].owner_reply.date",
                    "reply-after-review",
                    f"reply dated {reply['date']} precedes the review ({review['date']})",
                )
            )
    return problems


def _aggregate_problems(aggregate: Mapping, ratings: Sequence[int]) -> Iterator[Problem]:
    if aggregate["review_count"] != len(ratings):
        yield Problem(
            REVIEWS_FILE,
            "$.aggregate_rating.review_count",
            "aggregate-agrees",
            f"says {aggregate['review_count']}, the file holds {len(ratings)} reviews",
        )
    for star in "12345":
        actual = ratings.count(int(star))
        if aggregate["distribution"][star] != actual:
            yield Problem(
                REVIEWS_FILE,
                f'$.aggregate_rating.distribution["{star}"]',
                "aggregate-agrees",
                f"says {aggregate['distribution'][star]}, the file holds {actual}",
            )
    mean = sum(ratings) / len(ratings) if ratings else 0
    if abs(aggregate["rating_value"] - mean) > 0.05:
        yield Problem(
            REVIEWS_FILE,
            "$.aggregate_rating.rating_value",
            "aggregate-agrees",
            f"says {aggregate['rating_value']}, the mean rating is {mean:.2f}",
        )


def _referenced_review_ids(doc: Mapping) -> Iterator[tuple[str, str]]:
    """Every (json path, review id) that insights.json points at."""
    for review_id in doc["per_review"]:
        yield f"$.per_review[{json.dumps(review_id)}]", review_id
    groups = [("aspects", doc["aspects"]), ("topics", doc["topics"])]
    groups += [(f"entities.{k}", v) for k, v in doc["entities"].items()]
    for name, records in groups:
        for i, record in enumerate(records):
            for j, review_id in enumerate(record["example_review_ids"]):
                yield f"$.{name}[{i}].example_review_ids[{j}]", review_id
    for i, entry in enumerate(doc["faq"]):
        for j, review_id in enumerate(entry["review_ids"]):
            yield f"$.faq[{i}].review_ids[{j}]", review_id
    if doc["pull_quote"] is not None:
        yield "$.pull_quote.review_id", doc["pull_quote"]["review_id"]


MENTION_GROUPS = (
    "aspects",
    "technicians",
    "services",
    "problems",
    "service_areas",
    "topics",
)  # per_review's lists


def mention_tallies(doc: Mapping) -> dict[str, Counter[str]]:
    """Per group, how many per_review entries list each id (aspects also per sentiment, as "id#sentiment")."""
    tallies: dict[str, Counter[str]] = {group: Counter() for group in MENTION_GROUPS}
    for mentions in doc["per_review"].values():
        for aspect in mentions["aspects"]:
            tallies["aspects"].update((aspect["id"], f"{aspect['id']}#{aspect['sentiment']}"))
        for group in MENTION_GROUPS[1:]:  # lists of ids; aspects, first, are objects
            tallies[group].update(mentions[group])
    return tallies


def _insights_count_problems(doc: Mapping, tallies: Mapping[str, Mapping[str, int]]) -> Iterator[Problem]:
    if doc["review_count"] != len(doc["per_review"]):
        yield Problem(
            INSIGHTS_FILE,
            "$.review_count",
            "counts-agree",
            f"says {doc['review_count']}, per_review has {len(doc['per_review'])} entries",
        )
    for group in MENTION_GROUPS:
        known = set()
        top_level = group in ("aspects", "topics")  # the others are insights.json's entities
        dotted = group if top_level else f"entities.{group}"
        records = doc[group] if top_level else doc["entities"][group]
        for i, record in enumerate(records):
            path = f"$.{dotted}[{i}]"
            if record["id"] in known:
                yield Problem(INSIGHTS_FILE, f"{path}.id", "unique-id", f"id {record['id']} is repeated")
            known.add(record["id"])
            yield from _record_count_problems(path, record, tallies[group], group == "aspects")
        # Aspect tallies also count "id#sentiment" keys; slugs hold no "#".
        if any(key not in known for key in tallies[group] if "#" not in key):
            yield from _unknown_mention_problems(doc, group, dotted, known)


def _unknown_mention_problems(doc: Mapping, group: str, dotted: str, known: set[str]) -> Iterator[Problem]:
    """Each per_review listing of an id the records do not know (only run when the tallies show one)."""
    for review_id, mentions in doc["per_review"].items():
        listed = [a["id"] for a in mentions["aspects"]] if group == "aspects" else mentions[group]
        for entity_id in listed:
            if entity_id not in known:
                yield Problem(
                    INSIGHTS_FILE,
                    f"$.per_review[{json.dumps(review_id)}].{group}",
                    "known-id",
                    f"{entity_id} is not listed in $.{dotted}",
                )


def _record_count_problems(
    path: str, record: Mapping, tally: Mapping[str, int], by_sentiment: bool
) -> Iterator[Problem]:
    parts = record["positive_count"] + record["neutral_count"] + record["negative_count"]
    if record["mention_count"] != parts:
        yield Problem(
            INSIGHTS_FILE,
            f"{path}.mention_count",
            "counts-agree",
            f"{record['mention_count']} != positive + neutral + negative ({parts})",
        )
    listed = tally.get(record["id"], 0)
    if record["mention_count"] != listed:
        yield Problem(
            INSIGHTS_FILE,
            f"{path}.mention_count",
            "counts-agree",
            f"says {record['mention_count']}, per_review lists {record['id']} {listed} times",
        )
    if by_sentiment:
        for sentiment in ("positive", "neutral", "negative"):
            listed = tally.get(f"{record['id']}#{sentiment}", 0)
            if record[f"{sentiment}_count"] != listed:
                yield Problem(
                    INSIGHTS_FILE,
                    f"{path}.{sentiment}_count",
                    "counts-agree",
                    f"says {record[f'{sentiment}_count']}, per_review has {listed}",
                )


def _insights_business_problems(doc: Mapping, business: Mapping) -> Iterator[Problem]:
    for group in ("services", "service_areas"):
        declared = {item["id"] for item in business[group]}
        for i, record in enumerate(doc["entities"][group]):
            if record["id"] not in declared:
                yield Problem(
                    INSIGHTS_FILE,
                    f"$.entities.{group}[{i}].id",
                    "known-id",
                    f"{record['id']} is not in {REVIEWS_FILE} $.business.{group}",
                )
