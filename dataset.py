"""Loading, validating and indexing the two data files.

`load_dataset(data_dir)` reads `reviews.json` and `insights.json`, validates them
against the JSON Schemas in `schemas/` plus the cross-file rules, and returns an
immutable `Dataset` whose indexes make selective searches independent of the data
size; `search.py` walks them.

`DataStore` holds the current snapshot, reloads it when the files change (polled,
or on request) and tells listeners about every swap.
"""

from __future__ import annotations

import bisect
import ctypes
import gc
import hashlib
import json
import logging
import math
import operator
import os
import re
import threading
import unicodedata
from array import array
from collections import Counter, defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from functools import lru_cache, partial
from itertools import compress, count, islice, repeat
from pathlib import Path
from typing import Any, Callable, Container, Generic, Iterable, Iterator, Mapping, Sequence, TypeVar

import referencing
import referencing.jsonschema
from jsonschema import Draft202012Validator

from insights_lane import INSIGHTS_FILE, REVIEWS_FILE, InsightsLane, back_search_start, usable_cpus
from schema_compiler import compile_schema

log = logging.getLogger("reviewsd.data")

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
SCHEMA_BASE = "https://reviewsd.invalid/schemas/"
DATA_FILES = (REVIEWS_FILE, INSIGHTS_FILE)
DEFAULT_LIMIT = 20


# --------------------------------------------------------------------------- schemas


SCHEMA_FILES = ("reviews.schema.json", "insights.schema.json", "search-params.schema.json")


def _load_schemas() -> dict[str, dict]:
    schemas = {p.name: json.loads(p.read_text("utf-8")) for p in sorted(SCHEMA_DIR.glob("*.schema.json"))}
    if missing := [name for name in SCHEMA_FILES if name not in schemas]:
        # What a plain `pip install .` leaves: the modules in site-packages, schemas/ and data/ behind.
        raise RuntimeError(f"reviewsd's JSON Schemas are missing ({', '.join(missing)} not in {SCHEMA_DIR}): "
                           "run reviewsd from its source tree, installed with `pip install -e .` "
                           "as in the README's quick start")
    return schemas


SCHEMAS: Mapping[str, dict] = _load_schemas()
REGISTRY: referencing.Registry = referencing.Registry().with_resources(
    (schema["$id"], referencing.jsonschema.DRAFT202012.create_resource(schema)) for schema in SCHEMAS.values()
)


def validator(schema_file: str) -> Draft202012Validator:
    """A draft 2020-12 validator (formats checked) for one of the files in schemas/."""
    return Draft202012Validator(
        SCHEMAS[schema_file], registry=REGISTRY, format_checker=Draft202012Validator.FORMAT_CHECKER
    )


REVIEWS_VALIDATOR = validator("reviews.schema.json")
INSIGHTS_VALIDATOR = validator("insights.schema.json")
SEARCH_PARAMS_SCHEMA = SCHEMAS["search-params.schema.json"]
SEARCH_PARAMS_VALIDATOR = validator("search-params.schema.json")
# The same schemas compiled to plain predicates: ~70x faster than jsonschema, with
# the same verdict (tests/test_schema_compiler.py). jsonschema runs only to explain
# a document the predicate refuses.
# The data files' predicates drop their string caches after each call (see compile_schema).
# Each is compiled when first used: a process with an insights lane checks only one of the two
# files itself, and its lane only the other (compiling one takes about 10 ms).


class _CompiledOnFirstUse:
    """compile_schema(schema_file, SCHEMAS, keep_memos=False), made on the first call."""

    def __init__(self, schema_file: str):
        self._schema_file = schema_file
        self._is_valid: Callable[[Any], bool] | None = None

    def __call__(self, instance: Any) -> bool:
        if self._is_valid is None:  # two threads may both compile it: the same predicate either way
            self._is_valid = compile_schema(self._schema_file, SCHEMAS, keep_memos=False)
        return self._is_valid(instance)


REVIEWS_IS_VALID = _CompiledOnFirstUse("reviews.schema.json")
INSIGHTS_IS_VALID = _CompiledOnFirstUse("insights.schema.json")
SEARCH_PARAMS_IS_VALID = compile_schema("search-params.schema.json", SCHEMAS)


# --------------------------------------------------------------------------- problems


@dataclass(frozen=True)
class Problem:
    """One reason a data file is refused: which file, where in it, which rule."""

    file: str
    path: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.rule}: {self.message}"


class DataError(Exception):
    """The data files cannot be served; `problems` lists every reason."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        shown = "; ".join(map(str, self.problems[:3]))
        more = f" (and {len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        super().__init__(f"{len(self.problems)} problem(s): {shown}{more}")


def json_path(parts: Iterable[Any]) -> str:
    """`$.reviews[3].rating` from a jsonschema-style path."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}"
        else:
            out += "[" + json.dumps(part, ensure_ascii=False) + "]"
    return out


def schema_problems(file: str, doc: Any, schema_validator: Draft202012Validator) -> list[Problem]:
    errors: list[Any] = []
    try:
        errors.extend(schema_validator.iter_errors(doc))
    except RecursionError:  # jsonschema explains nested values recursively (uniqueItems over deep arrays)
        return [Problem(file, "$", "schema", "does not match its schema and nests too deeply to say where")]
    errors.sort(key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    return [
        Problem(file, json_path(e.absolute_path), f"schema:{e.validator}", _short(e.message)) for e in errors
    ]


def _short(message: str, limit: int = 300) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


# --------------------------------------------------------------------------- reading


_pool: list[ThreadPoolExecutor] = []  # made on first use, then shared by every load
_pool_lock = threading.Lock()


def shared_pool() -> ThreadPoolExecutor:
    """The threads that hash files and bodies and compress gzip blocks, for every load of the process.

    Only tasks that never wait run on it. New threads for each load take malloc arenas
    that keep freed memory: over five loads of 100,000 reviews, resident memory grew by
    about 7 MB a load that way, and by about 3 MB (as with one thread per body) with these.
    """
    with _pool_lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(usable_cpus(), thread_name_prefix="precompute"))
        return _pool[0]


@dataclass(frozen=True)
class RawFile:
    name: str
    content: bytes
    digest: str | Future[str]  # the sha256 in hex, or its computation on another thread
    path: Path | None = None  # where it was read (None: made in memory)

    @property
    def sha256(self) -> str:
        return self.digest if isinstance(self.digest, str) else self.digest.result()


def read_file(data_dir: Path, name: str) -> RawFile:
    """The file's bytes, hashed on another core (hashlib releases the GIL) while the caller parses them."""
    path = Path(data_dir) / name
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise DataError([Problem(name, "$", "readable", f"cannot read {path}: {exc.strerror or exc}")]) from None
    return RawFile(name, content, shared_pool().submit(_sha256_hex, content), path)


def _sha256_hex(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")  # json.loads accepts NaN and Infinity; JSON does not


def loads_data(text: str) -> Any:
    """JSON as it comes in (data files, MCP bodies); ValueError (or RecursionError) where it is not JSON."""
    return json.loads(text, parse_constant=_refuse_constant)


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


class _Slot:
    """parse_constant marking where NaN was read, and counting how often it was."""

    calls = 0

    def __call__(self, name: str) -> Any:
        self.calls += 1
        return self


class _SlotParser:
    """Parses texts in which a NaN marks a place, read as `slot`.

    One parser for the many runs of a file (see _RUN_BYTES), not a decoder a run: json.loads
    with arguments of its own makes a decoder each call, and some of what each makes stays
    behind among the reviews parsed meanwhile; after a first start on 100,000 reviews that
    kept 65 MB of the allocator's arenas from being given back. Not for two threads at
    once: the slot counts the NaN of one parse.
    """

    def __init__(self) -> None:
        self.slot = _Slot()
        self._decoder = json.JSONDecoder(parse_constant=self.slot)

    def parse(self, pieces: Sequence[bytes | memoryview], kind: type = dict) -> Any:
        """The value the joined pieces (one of them writing NaN) parse to; None where NaN or Infinity was
        read more than once (JSON has neither; loads_data refuses them) or the value is not of `kind`.
        ValueError (or RecursionError): not JSON even so."""
        self.slot.calls = 0
        value = self._decoder.decode(b"".join(pieces).decode("utf-8"))
        return value if self.slot.calls == 1 and isinstance(value, kind) else None


def _with_value_at(head: bytes, tail: bytes, key: str, value: Any) -> Any:
    """The document `head + value + tail` when `value` is its top-level `key`'s value, else None.

    Proved by parsing head + NaN + tail: NaN must come back as doc[key], and be the only NaN read.
    """
    parser = _SlotParser()
    doc = parser.parse([head, b"NaN", tail])
    if doc is None or doc.get(key) is not parser.slot:
        return None
    doc[key] = value
    return doc


_PER_REVIEW_VALUE = re.compile(r'"per_review"[ \t\n\r]*:[ \t\n\r]*')


def parse_insights(raw: RawFile) -> tuple[Any, bytes | None]:
    """parse_json for insights.json, and per_review's value as the file writes it (None where not found for sure).

    The same parse, split at per_review (raw_decode reads it where it starts), so that
    the body can take per_review's bytes from the file where they are its encoding (see
    written_as_encoded): encoding it is most of the cost of building insights.json.
    """
    try:
        found = _parsed_around_per_review(raw.content)
    except (ValueError, RecursionError):
        found = None
    return found if found is not None else (parse_json(raw), None)


def _parsed_around_per_review(content: bytes) -> tuple[Any, bytes] | None:
    """(document, per_review's bytes) or None where the top-level per_review is not found for sure; ValueError: not JSON."""
    text = content.decode("utf-8")
    key = _PER_REVIEW_VALUE.search(text)
    if key is None:
        return None
    per_review, end = _DECODER.raw_decode(text, key.end())
    lo, hi = key.end(), end
    if not text.isascii():  # str indices are not byte offsets: count the bytes of what lies around
        lo, hi = len(text[:lo].encode("utf-8")), len(content) - len(text[end:].encode("utf-8"))
    doc = _with_value_at(content[:lo], content[hi:], "per_review", per_review)
    return None if doc is None else (doc, content[lo:hi])


def parse_json(raw: RawFile) -> Any:
    try:
        return loads_data(raw.content.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError([Problem(raw.name, "$", "utf-8", f"not UTF-8 at byte {exc.start}")]) from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise DataError([Problem(raw.name, "$", "json", f"not valid JSON ({exc.msg} at {where}); half-written?")]) from None
    except (ValueError, RecursionError) as exc:  # NaN or Infinity, an integer of over 4,300 digits, deep nesting
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise DataError([Problem(raw.name, "$", "json", f"not valid JSON for this server ({reason})")]) from None


# --------------------------------------------------------------------------- cross-file rules


def cross_file_problems(reviews_doc: Mapping, insights_doc: Mapping) -> list[Problem]:
    """Rules a schema cannot express: unique ids, references, agreeing counts."""
    reviews = reviews_doc["reviews"]
    return _cross_file_problems(reviews_doc, insights_doc, [r["rating"] for r in reviews],
                                {r["id"] for r in reviews}, records_ok=False, tallies=None, keys_are_reviews=False)


def _cross_file_problems(reviews_doc: Mapping, insights_doc: Mapping, ratings: Sequence[int],
                         review_ids: Container[str], records_ok: bool,
                         tallies: Mapping[str, Mapping[str, int]] | None, keys_are_reviews: bool) -> list[Problem]:
    """The cross-file rules, from what the index pass already knows when it can tell.

    `records_ok` says the ids are unique and no reply precedes its review (the per-review
    loop is then skipped); `tallies`, when given, are the per_review mention counts;
    `keys_are_reviews` says every per_review key is known to be a review id. Either way
    the problems are exactly those of `cross_file_problems`.
    """
    problems = [] if records_ok else _review_record_problems(reviews_doc)
    problems += _aggregate_problems(reviews_doc["aggregate_rating"], ratings)
    problems += _insights_reference_problems(insights_doc, review_ids, per_review=not keys_are_reviews)
    problems += _insights_count_problems(insights_doc, tallies or _mention_tallies(insights_doc))
    problems += _insights_business_problems(insights_doc, reviews_doc["business"])
    return problems


def _review_record_problems(doc: Mapping) -> list[Problem]:
    problems = []
    seen: dict[str, int] = {}
    for index, review in enumerate(doc["reviews"]):
        if review["id"] in seen:
            problems.append(Problem(REVIEWS_FILE, f"$.reviews[{index}].id", "unique-id",
                                    f"id {review['id']} also used by $.reviews[{seen[review['id']]}]"))
        seen.setdefault(review["id"], index)
        reply = review["owner_reply"]
        if reply is not None and reply["date"] < review["date"]:
            problems.append(Problem(REVIEWS_FILE, f"$.reviews[{index}].owner_reply.date", "reply-after-review",
                                    f"reply dated {reply['date']} precedes the review ({review['date']})"))
    return problems


def _aggregate_problems(aggregate: Mapping, ratings: Sequence[int]) -> list[Problem]:
    problems = []
    if aggregate["review_count"] != len(ratings):
        problems.append(Problem(REVIEWS_FILE, "$.aggregate_rating.review_count", "aggregate-agrees",
                                f"says {aggregate['review_count']}, the file holds {len(ratings)} reviews"))
    for star in "12345":
        actual = ratings.count(int(star))
        if aggregate["distribution"][star] != actual:
            problems.append(Problem(REVIEWS_FILE, f'$.aggregate_rating.distribution["{star}"]', "aggregate-agrees",
                                    f"says {aggregate['distribution'][star]}, the file holds {actual}"))
    mean = sum(ratings) / len(ratings) if ratings else 0
    if abs(aggregate["rating_value"] - mean) > 0.05:
        problems.append(Problem(REVIEWS_FILE, "$.aggregate_rating.rating_value", "aggregate-agrees",
                                f"says {aggregate['rating_value']}, the mean rating is {mean:.2f}"))
    return problems


def _referenced_review_ids(doc: Mapping, per_review: bool = True) -> Iterator[tuple[str, str]]:
    """Every (json path, review id) that insights.json points at (per_review keys too, unless told)."""
    if per_review:
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


def _insights_reference_problems(doc: Mapping, review_ids: Container[str], per_review: bool = True) -> list[Problem]:
    return [
        Problem(INSIGHTS_FILE, path, "review-exists", f"review {review_id} is not in {REVIEWS_FILE}")
        for path, review_id in _referenced_review_ids(doc, per_review)
        if review_id not in review_ids
    ]


MENTION_GROUPS = {
    "aspects": "aspects",
    "technicians": "entities.technicians",
    "services": "entities.services",
    "problems": "entities.problems",
    "service_areas": "entities.service_areas",
    "topics": "topics",
}


def _records(doc: Mapping, dotted: str) -> list[Mapping]:
    node: Any = doc
    for key in dotted.split("."):
        node = node[key]
    return node


def _mention_tallies(doc: Mapping) -> dict[str, dict[str, int]]:
    """Per group, how many per_review entries list each id (aspects also per sentiment)."""
    tallies: dict[str, dict[str, int]] = {group: {} for group in MENTION_GROUPS}
    for mentions in doc["per_review"].values():
        for aspect in mentions["aspects"]:
            for key in (aspect["id"], f"{aspect['id']}#{aspect['sentiment']}"):
                tallies["aspects"][key] = tallies["aspects"].get(key, 0) + 1
        for group in MENTION_GROUPS:
            if group != "aspects":
                for entity_id in mentions[group]:
                    tallies[group][entity_id] = tallies[group].get(entity_id, 0) + 1
    return tallies


def _insights_count_problems(doc: Mapping, tallies: Mapping[str, Mapping[str, int]]) -> list[Problem]:
    problems = []
    if doc["review_count"] != len(doc["per_review"]):
        problems.append(Problem(INSIGHTS_FILE, "$.review_count", "counts-agree",
                                f"says {doc['review_count']}, per_review has {len(doc['per_review'])} entries"))
    for group, dotted in MENTION_GROUPS.items():
        records = _records(doc, dotted)
        known = set()
        for i, record in enumerate(records):
            path = f"$.{dotted}[{i}]"
            if record["id"] in known:
                problems.append(Problem(INSIGHTS_FILE, f"{path}.id", "unique-id", f"id {record['id']} is repeated"))
            known.add(record["id"])
            problems += _record_count_problems(path, record, tallies[group], group == "aspects")
        # Aspect tallies also count "id#sentiment" keys; slugs hold no "#".
        if any(key not in known for key in tallies[group] if "#" not in key):
            problems += _unknown_mention_problems(doc, group, dotted, known)
    return problems


def _unknown_mention_problems(doc: Mapping, group: str, dotted: str, known: set[str]) -> list[Problem]:
    """Each per_review listing of an id the records do not know (only run when the tallies show one)."""
    problems = []
    for review_id, mentions in doc["per_review"].items():
        listed = [a["id"] for a in mentions["aspects"]] if group == "aspects" else mentions[group]
        for entity_id in listed:
            if entity_id not in known:
                problems.append(Problem(INSIGHTS_FILE, f"$.per_review[{json.dumps(review_id)}].{group}",
                                        "known-id", f"{entity_id} is not listed in $.{dotted}"))
    return problems


def _record_count_problems(path: str, record: Mapping, tally: Mapping[str, int], by_sentiment: bool) -> list[Problem]:
    problems = []
    parts = record["positive_count"] + record["neutral_count"] + record["negative_count"]
    if record["mention_count"] != parts:
        problems.append(Problem(INSIGHTS_FILE, f"{path}.mention_count", "counts-agree",
                                f"{record['mention_count']} != positive + neutral + negative ({parts})"))
    listed = tally.get(record["id"], 0)
    if record["mention_count"] != listed:
        problems.append(Problem(INSIGHTS_FILE, f"{path}.mention_count", "counts-agree",
                                f"says {record['mention_count']}, per_review lists {record['id']} {listed} times"))
    if by_sentiment:
        for sentiment in ("positive", "neutral", "negative"):
            listed = tally.get(f"{record['id']}#{sentiment}", 0)
            if record[f"{sentiment}_count"] != listed:
                problems.append(Problem(INSIGHTS_FILE, f"{path}.{sentiment}_count", "counts-agree",
                                        f"says {record[f'{sentiment}_count']}, per_review has {listed}"))
    return problems


def _insights_business_problems(doc: Mapping, business: Mapping) -> list[Problem]:
    problems = []
    for group in ("services", "service_areas"):
        declared = {item["id"] for item in business[group]}
        for i, record in enumerate(doc["entities"][group]):
            if record["id"] not in declared:
                problems.append(Problem(INSIGHTS_FILE, f"$.entities.{group}[{i}].id", "known-id",
                                        f"{record['id']} is not in {REVIEWS_FILE} $.business.{group}"))
    return problems


# --------------------------------------------------------------------------- the dataset


review_sort_key = operator.itemgetter("date", "id")  # the served order: by this, newest first


def fold_name(text: str) -> str:
    """Case-, accent-, hyphen- and whitespace-insensitive form: "Dr. Sofía-Ramírez" ~ "dr. sofia ramirez"."""
    if text.isascii():  # nothing to decompose, and casefold is lower: a search's usual case, 4x quicker
        plain = text.lower()
    else:
        plain = "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))
    return " ".join(plain.replace("-", " ").replace("_", " ").split())


Named = TypeVar("Named")


def named(name: str, candidates: Sequence[tuple[Named, Sequence[str]]]) -> list[Named]:
    """What `name` names among (item, its folded names): the first item with a name equal to it
    folded, else every item with a name containing it ("Patel"); one rule for the search and MCP."""
    folded = fold_name(name)
    for item, names in candidates:
        if folded in names:
            return [item]
    return [item for item, names in candidates if folded and any(folded in n for n in names)]


def folded_names(records: Iterable[Mapping[str, Any]], keys: Sequence[str]) -> list[tuple[Any, list[str]]]:
    """(record, its folded id, name or label...) for `named`."""
    return [(record, [fold_name(record[key]) for key in keys if record.get(key)]) for record in records]


def fold_text(text: str) -> str:
    """Text matching: Unicode case folding only, so a query is an exact substring otherwise."""
    return text.casefold()


TEXT_SEPARATOR = b"\xff"  # never occurs in UTF-8
_TEXT_SEPARATOR_PATTERN = re.compile(re.escape(TEXT_SEPARATOR))


class EncodedReviews(Sequence[Mapping[str, Any]]):
    """The reviews, newest first, kept as their bytes in the /reviews.json body and decoded when read.

    Holding 100,000 reviews as dicts costs several times their JSON, and a request
    needs a few of them (search and since answers are cut from the body as bytes).
    Each read returns a new dict.
    """

    __slots__ = ("_body", "_offsets")

    def __init__(self, body: bytes, offsets: array):
        self._body = body
        self._offsets = offsets  # review i is body[offsets[i]:offsets[i + 1] - 1]

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            lo, hi, step = index.indices(len(self))
            if step != 1:
                return tuple(self[i] for i in range(lo, hi, step))
            return tuple(json.loads(b"[" + self._body[self._offsets[lo]:self._offsets[hi] - 1] + b"]")) if lo < hi else ()
        position = operator.index(index)
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError("review position out of range")
        return json.loads(self._body[self._offsets[position]:self._offsets[position + 1] - 1])

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        for position in range(len(self)):
            yield self[position]


class EncodedMentions(Mapping[str, Mapping[str, Any]]):
    """insights.json's per_review, kept as slices of the /insights.json body and decoded when read."""

    __slots__ = ("_body", "_starts", "_ends", "_order", "_ids", "_position_of")

    def __init__(self, body: bytes, starts: array, ends: array, order: array, ids: Sequence[str],
                 position_of: Mapping[str, int]):
        self._body = body
        self._starts, self._ends = starts, ends  # per review position; -1 when it has no entry
        self._order = order  # positions in the file's per_review order
        self._ids = ids
        self._position_of = position_of

    def _span(self, review_id: Any) -> tuple[int, int] | None:
        position = self._position_of.get(review_id) if isinstance(review_id, str) else None
        if position is None or self._starts[position] < 0:
            return None
        return self._starts[position], self._ends[position]

    def __getitem__(self, review_id: str) -> Mapping[str, Any]:
        span = self._span(review_id)
        if span is None:
            raise KeyError(review_id)
        return json.loads(self._body[span[0]:span[1]])

    def __contains__(self, review_id: object) -> bool:
        return self._span(review_id) is not None

    def __iter__(self) -> Iterator[str]:
        return (self._ids[position] for position in self._order)

    def __len__(self) -> int:
        return len(self._order)


class Dataset:
    """Validated, immutable data with the indexes that search needs.

    `reviews` is newest first (date, then id, descending); a review's position in
    it is its rank, so every index is a sorted list of positions and results come
    out newest first without sorting. Reviews and per_review entries are kept as
    encoded JSON (see EncodedReviews); `reviews_doc` holds every key of reviews.json
    but "reviews", and `insights_doc["per_review"]` is an EncodedMentions.

    `Dataset(reviews_doc, insights_doc, ...)` builds from parsed documents (which it
    does not check); `dataset_from_files` also validates and keeps the build's memory low.
    """

    reviews_doc: Mapping[str, Any]
    insights_doc: Mapping[str, Any]
    reviews: EncodedReviews
    prepared: dict[str, Any]  # what `prepare` returned, by file name; a consumer may take it out

    def __init__(self, reviews_doc: Mapping[str, Any], insights_doc: Mapping[str, Any],
                 reviews_sha256: str, insights_sha256: str):
        reviews = _ReviewsPart.encode(reviews_doc)
        self._adopt(Parts.combine(reviews, _InsightsPart.encode(insights_doc, reviews)),
                    reviews_sha256, insights_sha256)

    @classmethod
    def from_parts(cls, parts: "Parts", reviews_sha256: str, insights_sha256: str,
                   prepared: Mapping[str, Any] | None = None) -> "Dataset":
        dataset = cls.__new__(cls)
        dataset._adopt(parts, reviews_sha256, insights_sha256, prepared)
        return dataset

    def _adopt(self, parts: "Parts", reviews_sha256: str, insights_sha256: str,
               prepared: Mapping[str, Any] | None = None) -> None:
        """Every index, as new objects made from the parts' bytes.

        Made after the parsed documents are gone, the many small objects that stay
        (ids, positions) fill fresh memory instead of pinning the parse's, which the
        allocator could then not give back.
        """
        self.reviews_sha256, self.insights_sha256 = reviews_sha256, insights_sha256
        self.prepared = dict(prepared or {})
        ids: list[str] = json.loads(parts.ids_json)
        numbers = list(range(len(ids)))  # one int object per position, shared by every index
        self.position_of: Mapping[str, int] = dict(zip(ids, numbers))
        self.reviews_document: tuple[bytes, array] = (parts.reviews_body, _array("q", parts.review_offsets))
        self.reviews = EncodedReviews(*self.reviews_document)
        self.reviews_doc = json.loads(parts.reviews_head)
        self.insights_document: bytes = parts.insights_body
        self.insights_doc = self._insights_doc(parts, ids)
        self.ratings: bytes = parts.ratings
        self.dates_ascending: list[str] = _shared_strings(json.loads(parts.dates_json)[::-1])
        self.text_blob: tuple[bytes, array] = (parts.text_blob, _array("q", parts.text_starts))
        self.positions_by_rating = _positions_by_rating(parts.ratings, numbers)
        self.positions_by_technician: Mapping[str, list[int]] = parts.technicians.thaw(numbers)
        self.positions_by_service: Mapping[str, list[int]] = parts.services.thaw(numbers)
        # (aspect id, sentiment or None) -> positions of the reviews mentioning it.
        self.positions_by_aspect: Mapping[tuple[str, str | None], list[int]] = parts.aspects.thaw(numbers)
        self._entity_indexes()

    def _insights_doc(self, parts: "Parts", ids: list[str]) -> dict[str, Any]:
        """insights.json with per_review as an EncodedMentions over the /insights.json body."""
        body = parts.insights_body
        if parts.per_review_span is None:
            return json.loads(body)
        lo, hi = parts.per_review_span
        doc = json.loads(body[:lo] + b"{}" + body[hi:])
        doc["per_review"] = EncodedMentions(body, _array("q", parts.mention_starts), _array("q", parts.mention_ends),
                                            _array("i", parts.mention_order), ids, self.position_of)
        return doc

    def _entity_indexes(self) -> None:
        self.technicians: Mapping[str, Mapping[str, Any]] = {
            t["id"]: t for t in self.insights_doc["entities"]["technicians"]}
        self.services: Mapping[str, Mapping[str, Any]] = {s["id"]: s for s in self.insights_doc["entities"]["services"]}
        # (technician or service id, its folded names), for `named`; business services name services too.
        self.technician_names = [(record["id"], names) for record, names in
                                 folded_names(self.technicians.values(), ("id", "name", "label"))]
        self.service_names = [(record["id"], names) for record, names in
                              folded_names([*self.business["services"], *self.services.values()], ("id", "label"))]
        # Technician id -> bit, and per position the bits of the technicians it mentions.
        self.technician_masks = _masks(self.positions_by_technician, self.technicians, len(self.reviews))
        self.service_masks = _masks(self.positions_by_service, self.services, len(self.reviews))
        # (technician id, rating) -> positions: a rating plus a technician is one slice.
        self.positions_by_technician_rating = _by_rating(self.positions_by_technician, self.ratings)
        self.positions_by_service_rating = _by_rating(self.positions_by_service, self.ratings)

    @property
    def business(self) -> Mapping[str, Any]:
        return self.reviews_doc["business"]

    @property
    def fingerprint(self) -> str:
        """Changes whenever either file's bytes change."""
        return hashlib.sha256(f"{self.reviews_sha256}:{self.insights_sha256}".encode()).hexdigest()

    def review_by_id(self, review_id: str) -> Mapping[str, Any] | None:
        position = self.position_of.get(review_id)
        return None if position is None else self.reviews[position]

    def review_json(self, pos: int) -> bytes:
        """One review's JSON, as it appears in /reviews.json."""
        return self.reviews_json_range(pos, pos + 1)

    def reviews_json_range(self, lo: int, hi: int) -> bytes:
        """The comma-separated JSON of the reviews at positions [lo, hi): one slice of the body."""
        if lo >= hi:
            return b""
        body, offsets = self.reviews_document
        return body[offsets[lo]:offsets[hi] - 1]

    def reviews_json_at(self, positions: Sequence[int]) -> bytes:
        """The comma-separated JSON of the reviews at these positions, in this order."""
        if positions and all(b - a == 1 for a, b in zip(positions, positions[1:])):  # adjacent: one slice
            return self.reviews_json_range(positions[0], positions[-1] + 1)
        body, offsets = self.reviews_document
        return b",".join([body[offsets[pos]:offsets[pos + 1] - 1] for pos in positions])

    # ----------------------------------------------------------------- queries

    def window(self, since: str | None, until: str | None) -> tuple[int, int]:
        """Positions [lo, hi) of the reviews dated within since..until (inclusive)."""
        dates, n = self.dates_ascending, len(self.reviews)
        lo = n - bisect.bisect_right(dates, until) if until else 0
        hi = n - bisect.bisect_left(dates, since) if since else n
        return lo, max(lo, hi)

    def positions_with_text(self, needle: str) -> list[int]:
        """Positions of reviews whose folded text contains the folded needle."""
        blob, starts = self.text_blob
        encoded = utf8(needle)
        found: list[int] = []
        at = blob.find(encoded)
        while at != -1:
            pos = bisect.bisect_right(starts, at) - 1
            found.append(pos)
            at = blob.find(encoded, starts[pos + 1])
        return found

    def text_contains(self, pos: int, needle: bytes) -> bool:
        """Whether review `pos`'s folded text contains `needle` (folded, UTF-8)."""
        blob, starts = self.text_blob
        return blob.find(needle, starts[pos], starts[pos + 1] - 1) != -1


def _array(typecode: str, data: bytes) -> array:
    values = array(typecode)
    values.frombytes(data)
    return values


def _shared_strings(values: list[str]) -> list[str]:
    """The same list with equal strings as one object (dates repeat: a few thousand distinct in 100,000)."""
    seen: dict[str, str] = {}
    return [seen.setdefault(value, value) for value in values]


# For each star, a bytes.translate table giving 1 for that rating and 0 for any other: with
# itertools.compress, selecting the positions of one rating runs at C speed.
_STAR_MASKS = {star: bytes(int(b == star) for b in range(256)) for star in range(1, 6)}


def _positions_by_rating(ratings: bytes, numbers: list[int]) -> dict[int, list[int]]:
    return {star: list(compress(numbers, ratings.translate(mask))) for star, mask in _STAR_MASKS.items()}


def _masks(positions: Mapping[str, list[int]], known: Mapping[str, Any], n: int) -> tuple[Mapping[str, int], list[int]]:
    bits = {entity_id: 1 << i for i, entity_id in enumerate(known)}
    masks = [0] * n
    for entity_id, entity_positions in positions.items():
        bit = bits.get(entity_id, 0)
        for pos in entity_positions:
            masks[pos] |= bit
    return bits, masks


def _by_rating(positions: Mapping[str, list[int]], ratings: bytes) -> dict[tuple[str, int], list[int]]:
    """(entity id, rating) -> the entity's positions with that rating (only the ratings it has)."""
    index: dict[tuple[str, int], list[int]] = {}
    for entity_id, entity_positions in positions.items():
        stars = bytes(map(ratings.__getitem__, entity_positions))
        for star, mask in _STAR_MASKS.items():
            if star in stars:
                index[(entity_id, star)] = list(compress(entity_positions, stars.translate(mask)))
    return index


def utf8(text: str) -> bytes:
    """UTF-8, keeping lone surrogates (JSON can carry them) as their 3-byte forms."""
    return text.encode("utf-8", "surrogatepass")


# Built once (json.dumps builds one per call). Bodies are trees (parsed JSON, documents
# built here), so the cycle check that costs a dict insert per container is skipped.
# allow_nan=False: a number too large for a float (1e400 reads as inf) must not go out as Infinity.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=False)


def encode_json(value: Any) -> bytes:
    """The one JSON encoding of every body: compact UTF-8."""
    return _ENCODER.encode(value).encode("utf-8")


# ASCII that JSON strings hold as it is: all but the control characters, the quote and the backslash.
_PLAIN_ASCII = bytes(b for b in range(0x20, 0x7F) if b not in b'"\\')


def _json_strings(values: list[str]) -> bytes:
    """encode_json(values) for strings, joined directly when they are ASCII that needs no escape (ids, dates)."""
    joined = "".join(values)
    if joined.isascii() and not joined.encode("ascii").translate(None, _PLAIN_ASCII):
        return ('["' + '","'.join(values) + '"]').encode("ascii") if values else b"[]"
    return encode_json(values)


# --------------------------------------------------------------------------- reviews as the file writes them
#
# A file written as encode_json writes (compact UTF-8, as generate_data.py writes) holds its
# reviews' encoding already. Proving that its text is that encoding, by one regular
# expression over the bytes, took 0.24 s for 78,000 reviews where encoding them took 0.42 s.

# A string as encode_json writes it: raw but for `"`, `\` and the control characters, which it
# writes as \" \\ \b \f \n \r \t or else \u00xx (lower-case hex). Any other escape (\/,
# \u00e9, \u000A) is another text of the same string.
_ENCODED_STRING = rb'"[^"\\\x00-\x1f]*+(?>\\(?:["\\bfnrt]|u00(?:0[0-7bef]|1[0-9a-f]))[^"\\\x00-\x1f]*+)*"'
_ENCODED_SCALARS = {"string": _ENCODED_STRING, "integer": rb"(?:0|-?[1-9][0-9]*+)", "boolean": rb"(?:true|false)",
                    "null": rb"null"}


def encoded_pattern(schema: Mapping[str, Any]) -> bytes | None:
    """A regular expression that matches text only as encode_json writes it, meant for values of `schema`;
    None for a schema other than of objects with fixed keys, strings, integers, booleans, null, and oneOf them.

    What it matches is the encoding of the value it parses to whatever the schema says: no
    whitespace, strings and integers written one way only (a float can be written many; a
    float or -0 does not match), and an object's keys each once, in the schema's order (the
    parse keeps one of a key written twice; text in another order does not match).
    """
    kind = schema.get("type")
    choices = schema.get("oneOf", schema.get("anyOf"))
    if choices is None and isinstance(kind, list):
        choices = [{**schema, "type": one} for one in kind]
    if choices is not None:
        patterns = [encoded_pattern(choice) for choice in choices]
        return None if None in patterns else b"(?:" + b"|".join(map(bytes, patterns)) + b")"
    if kind != "object":
        return _ENCODED_SCALARS.get(kind) if isinstance(kind, str) else None
    properties = schema.get("properties", {})
    if schema.get("additionalProperties") is not False or set(schema.get("required", ())) != set(properties):
        return None
    members = {re.escape(encode_json(key)): encoded_pattern(value) for key, value in properties.items()}
    if None in members.values():
        return None
    return rb"\{" + b",".join(key + b":" + bytes(value) for key, value in members.items()) + rb"\}"


def _reviews_pattern() -> re.Pattern[bytes] | None:
    review = encoded_pattern(SCHEMAS["review.schema.json"])
    return None if review is None else re.compile(review + b"(?:," + review + b")*+")


_ENCODED_REVIEWS = _reviews_pattern()


def reviews_written_as_encoded(written: bytes | memoryview) -> bool:
    """Whether `written`, the text of one or more reviews (valid, parsed from it) joined by commas, is exactly
    how encode_json writes each (see encoded_pattern), so that it can be their encoding as it is."""
    return _ENCODED_REVIEWS is not None and _ENCODED_REVIEWS.fullmatch(written) is not None


# --------------------------------------------------------------------------- building the parts
#
# The build runs in two stages. The parts are computed from the parsed documents and
# hold only bytes (no small objects survive the parse); then the documents are dropped
# and Dataset._adopt makes the lasting objects from the parts' bytes.


_INT_SIZE = array("i").itemsize


@dataclass(frozen=True)
class _FrozenIndex:
    """key -> positions, as bytes: keys as JSON, then every list's length and all positions."""

    keys_json: bytes
    lengths: bytes
    positions: bytes

    @classmethod
    def freeze(cls, index: Mapping[Any, bytes]) -> "_FrozenIndex":
        """The index whose values are array("i") bytes of positions, frozen."""
        lengths = array("q", [len(entries) // _INT_SIZE for entries in index.values()])
        return cls(encode_json(list(index)), lengths.tobytes(), b"".join(index.values()))

    def thaw(self, numbers: list[int]) -> dict[Any, list[int]]:
        flat, at, index = _array("i", self.positions), 0, {}
        for key, length in zip(json.loads(self.keys_json), _array("q", self.lengths)):
            index[key if isinstance(key, str) else tuple(key)] = list(map(numbers.__getitem__, flat[at:at + length]))
            at += length
        return index


_REVIEW_BOUNDARY = re.compile(rb'\},\{"')
_MATCH_START = re.Match.start  # mapped over finditer: no Python frame per match
# Reviews per call when encoding and folding: a call per review costs twice as much, and one
# for all makes a str four bytes a character (with one emoji in the texts) that doubles the
# peak. Chunks this small keep each call's temporaries (about 400 KB) in the CPU's cache
# instead of fresh memory: encoding 100,000 reviews took 0.67 s instead of 0.9 s with
# chunks of 10,000, folding their texts 0.16 s instead of 0.33 s.
_ENCODE_CHUNK = 200
_OBJECT_KEY_END = re.compile(rb'":\{')
_PLAIN_KEYS = re.compile(rb"[0-9A-Za-z]*")


@dataclass(frozen=True)
class _ReviewsPart:
    """What reviews.json contributes: the /reviews.json body and per-position columns."""

    head: bytes  # reviews.json without "reviews", as JSON
    body: bytes | memoryview  # a front's has no closing `]}`, and may be the file's bytes (see with_back)
    offsets: bytes  # array("q"): review i is body[offsets[i]:offsets[i + 1] - 1]
    ids: list[str]  # newest first; parsed strings, only until the build ends
    position_of: dict[str, int]
    dates: list[str]
    texts: list[str] | None  # None in a part joined from two (see with_back), whose text blob is made already
    ratings: bytes
    replies_ok: bool  # no reply dated before its review

    @classmethod
    def encode(cls, doc: Mapping[str, Any], written: bytes | memoryview | None = None) -> "_ReviewsPart":
        """The part of a document; `written`: the file it was parsed from, up to its reviews' closing bracket."""
        ordered = newest_first(doc["reviews"])
        in_file_order = ordered is doc["reviews"] and next(reversed(doc)) == "reviews"
        return cls.of_ordered(doc, ordered, written if in_file_order else None)

    @classmethod
    def of_ordered(cls, doc: Mapping[str, Any], ordered: list[Mapping[str, Any]],
                   written: bytes | memoryview | None = None, closing: bytes = b"]}") -> "_ReviewsPart":
        """The part of a document whose reviews are `ordered` (newest first); a front's (see with_back) has
        no `closing`.

        `written`, where given, is the text `doc` was parsed from, "reviews" its last key and
        `ordered` its reviews in the file's order, up to the end of the last of them: see
        _encode_list.
        """
        head = encode_json(_without_reviews(doc))
        body, offsets = _encode_list(head[:-1] + b',"reviews":[', ordered, closing, written)
        ids, dates, ratings, texts, replies_ok = _review_columns(ordered)
        return cls(head, body, offsets.tobytes(), ids, dict(zip(ids, range(len(ids)))), dates, texts, ratings,
                   replies_ok)

    @property
    def records_ok(self) -> bool:
        """The ids unique and no reply before its review."""
        return self.replies_ok and len(self.position_of) == len(self.ids)

    def with_back(self, back: "ReviewsBack") -> "_ReviewsPart":
        """This part, of the front of reviews.json's reviews without its closing, followed by the rest
        (see build_reviews_back; its body given).

        The same bytes and columns as the part of the whole file: its body is encoded by
        chunks joined with commas, so the front's body, a comma, the back and the closing
        are the whole body; offsets and columns are the two ones', the back's offsets moved
        by where it starts.
        """
        body, offsets, ids, dates, ratings, _, _, replies_ok = back
        joined = b"".join([self.body, b",", body, b"]}"])
        # The back's positions added to a copy of the front's (a later duplicate wins, as when built in one piece).
        position_of = self.position_of | dict(zip(ids, count(len(self.ids))))
        return _ReviewsPart(self.head, joined, _followed_by(self.offsets, offsets, len(self.body) + 1),
                            self.ids + ids, position_of, self.dates + dates, None, self.ratings + ratings,
                            self.replies_ok and replies_ok)

    def text_blob(self) -> tuple[bytes, bytes]:
        """All folded texts in UTF-8 joined by 0xFF, and array("q") of each review's start (plus one past the end).

        One `bytes.find` over the blob runs at C speed, so a substring query with no
        hits costs one pass over the text instead of a Python loop per review, and a
        single review is tested with `find(needle, start, end)` without a copy. UTF-8
        keeps it one byte per character for most text; UTF-8 substring search is exact
        because no character's encoding starts inside another's, and 0xFF never occurs
        in UTF-8, so no match spans two reviews. A rating-only review is an empty segment.
        """
        if self.texts is None:
            raise ValueError("a part joined from two has no texts: its blob is the two blobs joined")
        return _fold_and_join(self.texts)


def _review_columns(ordered: list[Mapping[str, Any]]) -> tuple[list[str], list[str], bytes, list[str], bool]:
    """The reviews' ids, dates, ratings (a byte each), texts ("" for none), and whether no reply precedes its review."""
    ids = list(map(operator.itemgetter("id"), ordered))
    dates = list(map(operator.itemgetter("date"), ordered))
    ratings = bytes(map(int, map(operator.itemgetter("rating"), ordered)))  # int(): the schema allows 5.0
    return ids, dates, ratings, [review["text"] or "" for review in ordered], replies_after_reviews(ordered, dates)


def newest_first(reviews: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The reviews sorted by (date, id), newest first: the list itself when it already is (as files are written)."""
    if is_newest_first(reviews):
        return reviews  # what the stable sort below would return, without its cost
    return sorted(reviews, key=review_sort_key, reverse=True)


def is_newest_first(reviews: list[Mapping[str, Any]]) -> bool:
    keys = list(map(review_sort_key, reviews))
    return all(map(operator.ge, keys, islice(keys, 1, None)))


def replies_after_reviews(reviews: list[Mapping[str, Any]], dates: list[str]) -> bool:
    """No owner reply dated before its review (`dates` are the reviews' dates); loops in C, not per review."""
    replies = list(map(operator.itemgetter("owner_reply"), reviews))
    replied = list(map(operator.is_not, replies, repeat(None)))
    reply_dates = map(operator.itemgetter("date"), compress(replies, replied))
    return all(map(operator.ge, reply_dates, compress(dates, replied)))


def _without_reviews(doc: Mapping[str, Any]) -> dict[str, Any]:
    """reviews.json's other keys."""
    return {key: value for key, value in doc.items() if key != "reviews"}


def _encode_list(opening: bytes, ordered: list[Mapping[str, Any]], closing: bytes,
                 written: bytes | memoryview | None = None) -> tuple[bytes | memoryview, array]:
    """opening + the reviews encoded and joined by commas + closing, and where each review starts (see _joined).

    `written`: the text the reviews were parsed from, after the text of `opening` (where they
    are one array's elements from its first, or from a comma between two), taken as the
    body but its closing where it is exactly that: opening's bytes, then the reviews'
    encoding (see reviews_written_as_encoded). Opening's bytes parse to exactly what they
    encode, so the elements that follow them are the reviews. With no closing, the body is
    then `written` itself.
    """
    if (written is not None and written[:len(opening)] == opening
            and reviews_written_as_encoded(memoryview(written)[len(opening):])):
        body = b"".join([written, closing]) if closing else written
    else:
        # By chunks (see _ENCODE_CHUNK). Views drop each chunk's brackets without a copy, so the
        # body is the only copy made.
        chunks = [memoryview(encode_json(ordered[i:i + _ENCODE_CHUNK]))[1:-1]
                  for i in range(0, len(ordered), _ENCODE_CHUNK)]
        body = b"".join([opening, *_interleaved(chunks, b","), closing])
        del chunks
    offsets = array("q", [len(opening)])
    # Between two reviews the body reads `},{"`; inside one it can only where a string ends in
    # `},{` (no review holds an array of objects). So exactly n - 1 matches are exactly the gaps.
    offsets.extend(map(operator.add, map(_MATCH_START, _REVIEW_BOUNDARY.finditer(body, len(opening))), repeat(2)))
    if ordered and len(offsets) == len(ordered):
        offsets.append(len(body) - len(closing) + 1)
        return body, offsets
    if not ordered:
        return body, offsets[:1]
    return _joined(opening, [encode_json(review) for review in ordered], closing)


def _interleaved(items: list[Any], separator: Any) -> Iterator[Any]:
    """The items with the separator between each two."""
    for n, item in enumerate(items):
        if n:
            yield separator
        yield item


def _joined(head: bytes, fragments: list[bytes], tail: bytes) -> tuple[bytes, array]:
    """head + the fragments joined by commas + tail, and where each fragment starts (plus one past the last, +1)."""
    offsets, at = array("q"), len(head)
    for fragment in fragments:
        offsets.append(at)
        at += len(fragment) + 1
    offsets.append(at)
    return head + b",".join(fragments) + tail, offsets


# Joins the texts for one fold: the first that occurs in no text (they are rare in reviews).
_TEXT_JOINERS = ("\x00", "\ufdd0", "\udfff", "\ufdef")


def _fold_and_join(texts: list[str]) -> tuple[bytes, bytes]:
    """The text blob and its starts (see _ReviewsPart.text_blob)."""
    if not texts:
        return b"", array("q", [0]).tobytes()
    # By chunks (see _ENCODE_CHUNK).
    blob = TEXT_SEPARATOR.join([_fold_chunk(texts[i:i + _ENCODE_CHUNK]) for i in range(0, len(texts), _ENCODE_CHUNK)])
    starts = array("q", [0])
    starts.extend(map(operator.add, map(_MATCH_START, _TEXT_SEPARATOR_PATTERN.finditer(blob)), repeat(1)))
    starts.append(len(blob) + 1)
    return blob, starts.tobytes()


def _fold_chunk(texts: list[str]) -> bytes:
    """The folded texts in UTF-8, joined by 0xFF."""
    joined = "\x00".join(texts)
    free = [c for c in _TEXT_JOINERS if c not in joined or (c == "\x00" and joined.count(c) == len(texts) - 1)]
    if not free:
        return TEXT_SEPARATOR.join([utf8(fold_text(text)) for text in texts])
    if free[0] != "\x00":
        del joined  # before the next join
        joined = free[0].join(texts)
    # Case folding maps each character on its own, so folding the joined texts once is folding
    # each; the joiner folds to itself and nothing else folds to it. In UTF-8 its bytes only
    # occur where it does, and 0xFF occurs nowhere, so the blob's 0xFF bytes are the joins.
    return utf8(fold_text(joined)).replace(utf8(free[0]), TEXT_SEPARATOR)


@dataclass(frozen=True)
class _InsightsPart:
    """What insights.json contributes: its body, where each per_review entry sits, the mention indexes."""

    body: bytes
    per_review_span: tuple[int, int] | None  # where per_review's value sits in body
    mention_starts: bytes  # array("q") per position, -1 when no entry
    mention_ends: bytes
    mention_order: bytes  # array("i"): positions in per_review's order
    technicians: _FrozenIndex
    services: _FrozenIndex
    aspects: _FrozenIndex
    tallies: dict[str, dict[str, int]]  # as _mention_tallies
    keys_are_reviews: bool  # every per_review key is a review id

    @classmethod
    def encode(cls, doc: Mapping[str, Any], reviews: _ReviewsPart) -> "_InsightsPart":
        return cls.from_entries(_insights_by_entry(doc), reviews)

    @classmethod
    def from_entries(cls, built: "EntryBuild", reviews: _ReviewsPart) -> "_InsightsPart":
        """The part from insights.json built by per_review entry (here or by an insights lane).

        Built without the reviews, the indexes hold per_review entry numbers: mapped here to
        the reviews' positions.
        """
        body, span, keys, entry_starts, entry_ends, technicians, services, aspects, tallies = built
        positions = list(map(reviews.position_of.get, keys))
        if positions == list(range(len(reviews.ids))):
            # per_review has every review, in the reviews' order (both newest first, as generated):
            # entry numbers are positions, so the entries' columns and indexes are the part's as they are.
            return cls(body, span, entry_starts, entry_ends, array("i", range(len(positions))).tobytes(),
                       _FrozenIndex.freeze(technicians), _FrozenIndex.freeze(services),
                       _FrozenIndex.freeze(aspects), tallies, True)
        return cls.mapped(built, reviews, positions)

    @classmethod
    def mapped(cls, built: "EntryBuild", reviews: _ReviewsPart, positions: list[int | None]) -> "_InsightsPart":
        """from_entries in general: `positions` are the reviews' positions of the per_review keys (None: no review)."""
        body, span, keys, entry_starts, entry_ends, technicians, services, aspects, tallies = built
        every_key_known = None not in positions
        starts, ends = array("q", [-1]) * len(reviews.ids), array("q", [-1]) * len(reviews.ids)
        order = array("i")
        for pos, lo, hi in zip(positions, _array("q", entry_starts), _array("q", entry_ends)):
            if pos is not None:
                starts[pos], ends[pos] = lo, hi
                order.append(pos)

        def ascending_positions(entries: bytes) -> bytes:
            found = list(map(positions.__getitem__, _array("i", entries)))
            if not every_key_known:
                found = [pos for pos in found if pos is not None]
            found.sort()
            return array("i", found).tobytes()

        def by_position(index: Mapping[Any, bytes]) -> _FrozenIndex:
            return _FrozenIndex.freeze({key: ascending_positions(entries) for key, entries in index.items()})

        return cls(body, span, starts.tobytes(), ends.tobytes(), order.tobytes(), by_position(technicians),
                   by_position(services), by_position(aspects), tallies, every_key_known)


# insights.json built without the reviews: body, per_review span, per_review keys, each entry's
# start and end (array "q" bytes, in per_review order), the technician, service and aspect
# indexes (key -> array "i" bytes of entry numbers) and the mention tallies. Plain values, so an
# insights lane can pickle them with no class of this module.
EntryBuild = tuple[bytes, "tuple[int, int] | None", list[str], bytes, bytes, dict[str, bytes], dict[str, bytes],
                   dict[tuple[str, "str | None"], bytes], dict[str, dict[str, int]]]


def _insights_by_entry(doc: Mapping[str, Any], per_review_written: bytes | None = None) -> EntryBuild:
    """Encode insights.json and index its mentions by per_review entry number (see _encode_insights).

    UnicodeEncodeError: a lone surrogate; ValueError: a number beyond a float (see unencodable_problems).
    """
    body, span, entries = _encode_insights(doc, per_review_written)
    per_review = doc.get("per_review", {})
    index = _MentionIndex.build(per_review, list(per_review))  # "positions" are entry numbers here
    starts, ends = array("q", [lo for _, lo, _ in entries]), array("q", [hi for _, _, hi in entries])

    def plain(positions: Mapping[Any, array]) -> dict[Any, bytes]:
        return {key: value.tobytes() for key, value in positions.items()}

    return (body, span, list(per_review), starts.tobytes(), ends.tobytes(), plain(index.technicians),
            plain(index.services), plain(index.aspects), index.tallies())


def _head_document(built: EntryBuild) -> dict[str, Any]:
    """insights.json from a built body, per_review holding its keys only (all the cross-file rules read of it)."""
    body, span, keys = built[:3]
    if not span:
        return json.loads(body)
    doc = json.loads(body[:span[0]] + b"{}" + body[span[1]:])
    doc["per_review"] = dict.fromkeys(keys)
    return doc


def _encode_insights(doc: Mapping[str, Any], per_review_written: bytes | None = None,
                     ) -> tuple[bytes, tuple[int, int] | None, list[tuple[str, int, int]]]:
    """The /insights.json body, where per_review's value is in it, and (review id, start, end) per entry.

    per_review's value as the file writes it is taken as it is where it is its encoding.
    """
    pieces, at, span = [b"{"], 1, None
    for key, value in doc.items():
        if len(pieces) > 1:
            pieces.append(b",")
            at += 1
        name = encode_json(key) + b":"
        if key == "per_review" and per_review_written is not None and written_as_encoded(per_review_written, value):
            encoded = per_review_written
        else:
            encoded = encode_json(value)
        if key == "per_review":
            span = (at + len(name), at + len(name) + len(encoded))
        pieces += (name, encoded)
        at += len(name) + len(encoded)
    pieces.append(b"}")
    body = b"".join(pieces)
    return body, span, _entry_spans(body, span, list(doc["per_review"])) if span else []


def written_as_encoded(written: bytes, per_review: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether per_review's value as the file writes it is exactly encode_json(per_review), for a valid per_review.

    Encoding 100,000 entries (a million small containers) took 0.32 s; this, 0.06 s. It is
    when it holds no backslash and no whitespace: then every string is written as the
    encoder writes it (nothing escaped; what must be escaped cannot be written otherwise)
    and nothing lies between the tokens. And when no key is written twice (the parse keeps
    one): with no escape, each `":` ends a key, and a valid per_review has seven keys per
    entry (its own and six) and two per aspect. The schema allows no number in per_review,
    the one token that can be written more than one way and is not seen here.
    """
    if any(map(written.__contains__, (b"\\", b" ", b"\n", b"\r", b"\t"))):
        return False
    aspects = sum(map(len, map(operator.itemgetter("aspects"), per_review.values())))
    return written.count(b'":') == 7 * len(per_review) + 2 * aspects


def _entry_spans(body: bytes, span: tuple[int, int], keys: list[str]) -> list[tuple[str, int, int]]:
    """(review id, start, end) of each per_review entry's value in body.

    With plain 26-character keys (review ids), an entry reads `"KEY":{...}`: `":{` closes
    a key whose value is an object, which inside per_review only its own keys have (an
    entry's values are arrays of strings and of {id, sentiment}). The keys found before
    each `":{` must be the dict's, in order.
    """
    lo, hi = span
    joined = "".join(keys).encode("utf-8", "surrogatepass")
    if len(joined) == 26 * len(keys) and _PLAIN_KEYS.fullmatch(joined):
        found = [m.start() for m in _OBJECT_KEY_END.finditer(body, lo, hi)]
        if (len(found) == len(keys) and b"".join(body[p - 26:p] for p in found) == joined
                and b"".join(body[p - 27:p - 26] for p in found) == b'"' * len(found)):
            ends = [p - 28 for p in found[1:]] + [hi - 1]  # the comma before the next key, or per_review's `}`
            return [(key, p + 2, end) for key, p, end in zip(keys, found, ends)]
    # Other keys: encode entry by entry, which gives every length.
    per_review = json.loads(body[lo:hi])
    spans, at = [], lo + 1
    for key, value in per_review.items():
        at += len(encode_json(key)) + 1
        size = len(encode_json(value))
        spans.append((key, at, at + size))
        at += size + 1
    return spans


@dataclass
class _MentionIndex:
    """One pass over per_review in the order of `ids`: their numbers per technician, service and aspect."""

    technicians: dict[str, array]
    services: dict[str, array]
    aspects: dict[tuple[str, str | None], array]
    others: dict[str, list[str]]  # problems, service_areas, topics: every listing, for the tallies

    @classmethod
    def build(cls, per_review: Mapping[str, Mapping[str, Any]], ids: list[str]) -> "_MentionIndex":
        index = cls(defaultdict(_positions), defaultdict(_positions), defaultdict(_positions),
                    {"problems": [], "service_areas": [], "topics": []})
        get = per_review.get
        technicians, services, aspects = index.technicians, index.services, index.aspects
        problems, areas, topics = index.others["problems"], index.others["service_areas"], index.others["topics"]
        for pos, review_id in enumerate(ids):
            mentions = get(review_id)
            if mentions is None:
                continue
            for aspect in mentions["aspects"]:
                aspects[aspect["id"], None].append(pos)
                aspects[aspect["id"], aspect["sentiment"]].append(pos)
            for technician in mentions["technicians"]:
                technicians[technician].append(pos)
            for service in mentions["services"]:
                services[service].append(pos)
            problems += mentions["problems"]
            areas += mentions["service_areas"]
            topics += mentions["topics"]
        return index

    def tallies(self) -> dict[str, dict[str, int]]:
        """The same counts as _mention_tallies (when built over every per_review key, as _insights_by_entry does)."""
        aspects = {aspect_id if sentiment is None else f"{aspect_id}#{sentiment}": len(positions)
                   for (aspect_id, sentiment), positions in self.aspects.items()}
        return {"aspects": aspects,
                "technicians": {k: len(v) for k, v in self.technicians.items()},
                "services": {k: len(v) for k, v in self.services.items()},
                **{group: dict(Counter(listed)) for group, listed in self.others.items()}}


def _positions() -> array:
    return array("i")


@dataclass(frozen=True)
class Parts:
    """Everything a Dataset is made of, as bytes (the parsed documents can go)."""

    reviews_head: bytes
    reviews_body: bytes
    review_offsets: bytes
    ids_json: bytes
    dates_json: bytes
    ratings: bytes
    text_blob: bytes
    text_starts: bytes
    insights_body: bytes
    per_review_span: tuple[int, int] | None
    mention_starts: bytes
    mention_ends: bytes
    mention_order: bytes
    technicians: _FrozenIndex
    services: _FrozenIndex
    aspects: _FrozenIndex

    @classmethod
    def combine(cls, reviews: _ReviewsPart, insights: _InsightsPart,
                text_blob: tuple[bytes, bytes] | None = None) -> "Parts":
        """The parts of a build; `text_blob` is reviews.text_blob() when it was already made."""
        blob, starts = text_blob or reviews.text_blob()
        return cls(reviews.head, reviews.body, reviews.offsets, _json_strings(reviews.ids), _json_strings(reviews.dates),
                   reviews.ratings, blob, starts, insights.body, insights.per_review_span, insights.mention_starts,
                   insights.mention_ends, insights.mention_order, insights.technicians, insights.services,
                   insights.aspects)

    def flatten(self) -> tuple[tuple[int, int] | None, dict[str, bytes]]:
        """per_review_span, and every other value as bytes by a flat name (for storing a build)."""
        named: dict[str, bytes] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, _FrozenIndex):
                named.update((f"{f.name}.{part.name}", getattr(value, part.name)) for part in fields(value))
            elif f.name != "per_review_span":
                named[f.name] = value
        return self.per_review_span, named

    @classmethod
    def unflatten(cls, per_review_span: Sequence[int] | None, named: Mapping[str, bytes]) -> "Parts":
        """The inverse of flatten (KeyError when a name is missing)."""
        values: dict[str, Any] = {"per_review_span": None if per_review_span is None else tuple(per_review_span)}
        for f in fields(cls):
            if f.name in _INDEX_FIELDS:
                values[f.name] = _FrozenIndex(*(named[f"{f.name}.{part.name}"] for part in fields(_FrozenIndex)))
            elif f.name != "per_review_span":
                values[f.name] = named[f.name]
        return cls(**values)


_INDEX_FIELDS = ("technicians", "services", "aspects")


# --------------------------------------------------------------------------- the insights lane's build
#
# insights_lane.py runs this in a helper process on two cores; see there.


def build_insights_half(path: Path) -> tuple:
    """("built", sha256, *EntryBuild) for insights.json at `path`, or ("not built", sha256, why).

    sha256 is of the bytes read here: the server uses the build only for the bytes it
    read. Built only for data without a problem of insights.json's own, so the server,
    building it itself otherwise, reports every problem the same way.
    """
    content = path.read_bytes()
    sha256 = _sha256_hex(content)
    try:
        doc, per_review_written = parse_insights(RawFile(INSIGHTS_FILE, content, sha256, path))
    except DataError:
        return ("not built", sha256, "not UTF-8 JSON")
    del content
    if not INSIGHTS_IS_VALID(doc):
        return ("not built", sha256, "not valid")
    try:
        built = _insights_by_entry(doc, per_review_written)
    except (UnicodeEncodeError, ValueError):
        return ("not built", sha256, "a lone surrogate or a number beyond a float")
    if _insights_count_problems(doc, built[-1]):
        return ("not built", sha256, "counts that disagree")
    return ("built", sha256, *built)


# --------------------------------------------------------------------------- reviews.json in two shares
#
# Where there is a lane, it also builds the back of reviews.json's reviews (parse, validate,
# encode, fold), sized so that both processes finish together, while the server builds the
# front: neither parses the whole file. The server takes the back only where joining the two
# gives exactly the build of the whole file (see _reviews_in_two); otherwise it builds the whole
# file itself, as without a lane, and reports every problem the same way.

# Between two reviews in the top-level array; found elsewhere (in a string, a nested array) the
# proofs below refuse it.
_REVIEWS_GAP = re.compile(rb"\}[ \t\n\r]*(,)[ \t\n\r]*\{")
_JSON_WHITESPACE = " \t\n\r"
_JSON_WHITESPACE_BYTES = _JSON_WHITESPACE.encode()
REVIEWS_LIST_IS_VALID = _CompiledOnFirstUse("reviews.schema.json#/properties/reviews")

# The back of reviews.json built by a lane: its reviews' body (encoded, joined by commas; None where
# it is the file's bytes after the comma as they are, up to the document's closing `]}`), their
# offsets in it (array "q" bytes, plus one past the end, +1), ids, dates, ratings, text blob and
# starts (as _fold_and_join), and whether no reply precedes its review. Plain values, as EntryBuild.
ReviewsBack = tuple["bytes | memoryview | None", bytes, list[str], list[str], bytes, bytes, bytes, bool]


def back_comma(content: bytes | memoryview, start: int) -> int | None:
    """The comma of the first gap between two objects at or after `start` (where the back would follow), or None."""
    gap = _REVIEWS_GAP.search(content, start)
    return None if gap is None else gap.start(1)


def parse_reviews_front(content: bytes, comma: int) -> dict[str, Any] | None:
    """reviews.json's document holding only the reviews before `comma`, or None where that comma is not
    proved to separate two reviews of its top-level reviews array, the last of its keys.

    Parsed by runs (see _proved_run), the first one with the rest of the document: what
    comes before its end, followed by `,NaN]}`, must give back NaN as the last of
    doc["reviews"], and be the only NaN read. A comma inside a string leaves the string
    unterminated; one in any other array or object puts NaN elsewhere. So the first run
    ends at a gap of that array, and each next run proves its own end, `comma` the last.
    """
    view, parser = memoryview(content), _SlotParser()
    at, doc = _proved_run(partial(_front_head, parser, view), content, 0, comma)
    if doc is None:
        return None
    while at < comma:
        at, run = _proved_run(partial(_reviews_run, parser, view, at), content, at, comma)
        if run is None:
            return None
        doc["reviews"] += run
    return doc


def _front_head(parser: _SlotParser, view: memoryview, end: int) -> dict[str, Any] | None:
    """The document holding the reviews before the comma at `end`, where proved a gap of its reviews (see above)."""
    try:
        doc = parser.parse([view[:end], b",NaN]}"])
    except (ValueError, RecursionError):
        return None
    reviews = None if doc is None else doc.get("reviews")
    if not isinstance(reviews, list) or len(reviews) < 2 or reviews[-1] is not parser.slot:
        return None
    reviews.pop()
    return doc


def _reviews_run(parser: _SlotParser, view: memoryview, at: int, end: int) -> list[Any] | None:
    """The reviews between the commas at `at` (a gap of the top-level reviews array, -1: where `view` starts)
    and `end`, where `end` is proved one too: `[` + run + `,NaN]` must parse, NaN the only NaN read.

    After a gap's comma the array expects a value, as after `[`; the last `]` must close that
    `[`, so NaN is the list's last element and `end` a gap of the same array.
    """
    try:
        run = parser.parse([b"[", view[at + 1:end], b",NaN]"], list)
    except (ValueError, RecursionError):
        return None
    if run is None:
        return None
    run.pop()
    return run


# Bytes of reviews.json parsed at a time. A run's text stays in the CPU's cache and its memory
# is used again by the next (see keep_freed_memory), where all at once the front of 100,000
# reviews' file is one str of 160 MB (four bytes a character, with one emoji in it) whose
# every page must be mapped in fresh: parsing it took 0.33 s instead of 0.57 s, and the
# first start's peak is 100 MB lower.
_RUN_BYTES = 256 << 10

Proved = TypeVar("Proved")


def _proved_run(parse: Callable[[int], Proved | None], content: bytes | memoryview, at: int,
                end: int) -> tuple[int, Proved | None]:
    """(where the run after `at` ends, parse(there)): at the comma of the first gap match from _RUN_BYTES
    after `at`, or at `end` if that is sooner or if parse refuses that match (one inside a string)."""
    gap = back_comma(content, min(at + _RUN_BYTES, end))
    if gap is not None and gap < end and (found := parse(gap)) is not None:
        return gap, found
    return end, parse(end)


def build_reviews_back(back: bytes | memoryview) -> tuple:
    """("built", *ReviewsBack) for reviews.json's bytes after a comma, or ("not built", why).

    Built only where they are the rest of an array of reviews and of the document (`...]}`),
    the reviews valid, newest first and encodable; the server then builds the front and
    joins the two (see _reviews_in_two).
    """
    view, parser, reviews, at = memoryview(back), _SlotParser(), [], -1
    while (gap := back_comma(back, at + _RUN_BYTES)) is not None:  # runs, as the front's (see parse_reviews_front)
        run = _reviews_run(parser, view, at, gap)
        if run is None:
            break  # a gap match inside a string: the rest in one piece
        reviews += run
        at = gap
    try:
        text = "[" + str(view[at + 1:], "utf-8")
        rest, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return ("not built", "not the rest of a JSON array")
    if text[end:].strip(_JSON_WHITESPACE) != "}":
        return ("not built", "not the end of the document")
    del text
    reviews += rest
    if not REVIEWS_LIST_IS_VALID(reviews):
        return ("not built", "not valid")
    if not is_newest_first(reviews):
        return ("not built", "not newest first")
    written = _before_document_end(back)
    try:
        body, offsets = _encode_list(b"", reviews, b"", written)
    except (UnicodeEncodeError, ValueError):
        return ("not built", "a lone surrogate or a number beyond a float")
    ids, dates, ratings, texts, replies_ok = _review_columns(reviews)
    del reviews
    blob, starts = _fold_and_join(texts)
    # Taken as written: the server has these bytes (it checks it has the same), so they are not sent.
    return ("built", None if body is written else body, offsets.tobytes(), ids, dates, ratings, blob, starts,
            replies_ok)


def _before_document_end(content: bytes | memoryview) -> memoryview | None:
    """`content` up to the `]}` it ends with (but whitespace); None where it does not end so.

    Where `content` is the rest of a document whose last value is an array, that `]` closes
    it: the array's end is followed by nothing but whitespace and the document's `}`.
    """
    end = len(content)
    while end and content[end - 1] in _JSON_WHITESPACE_BYTES:
        end -= 1
    return memoryview(content)[:end - 2] if content[end - 2:end] == b"]}" else None


def build_reviews_back_of(path: Path, start: int) -> tuple:
    """("built", comma, sha256 of the bytes after it, *ReviewsBack) or ("not built", why), the comma the first
    at or after `start` (see back_search_start); reads only the file's end, from there."""
    try:
        with open(path, "rb") as file:
            file.seek(start)
            end = file.read()
    except OSError as exc:
        return ("not built", f"cannot read it: {exc.strerror or exc}")
    found = back_comma(end, 0)
    if found is None:
        return ("not built", "no gap between two objects")
    back = memoryview(end)[found + 1:]
    built = build_reviews_back(back)
    return built if built[0] != "built" else ("built", start + found, _sha256_hex(back), *built[1:])


def _joined_blobs(front: tuple[bytes, bytes], back: ReviewsBack) -> tuple[bytes, bytes]:
    """The text blob and starts of the front's reviews followed by the back's: those of the whole file's."""
    front_blob, front_starts = front
    back_blob, back_starts = back[5], back[6]
    return (TEXT_SEPARATOR.join([front_blob, back_blob]),
            _followed_by(front_starts, back_starts, len(front_blob) + 1))


def _followed_by(front: bytes, back: bytes, shift: int) -> bytes:
    """Two array("q") of starts, each ending with one past its end: the front's but its last, then the back's
    moved by `shift` (where the back starts in the joined whole; the front's last start is the back's first)."""
    starts = _array("q", front)[:-1]
    starts.extend(map(operator.add, _array("q", back), repeat(shift)))
    return starts.tobytes()


# --------------------------------------------------------------------------- loading


def check_documents(reviews_doc: Any, insights_doc: Any) -> list[Problem]:
    """Every problem with a pair of parsed documents: schemas first, then cross-file rules."""
    problems = []
    if not REVIEWS_IS_VALID(reviews_doc):
        problems += schema_problems(REVIEWS_FILE, reviews_doc, REVIEWS_VALIDATOR)
    if not INSIGHTS_IS_VALID(insights_doc):
        problems += schema_problems(INSIGHTS_FILE, insights_doc, INSIGHTS_VALIDATOR)
    if problems:
        return problems
    return cross_file_problems(reviews_doc, insights_doc)


def unencodable_problems(file: str, doc: Any) -> list[Problem]:
    """What parses but cannot be served: strings (keys too) holding a lone surrogate (JSON can escape
    one, \\ud800, UTF-8 cannot carry it) and numbers beyond a float's range (1e400 reads as infinity)."""
    problems: list[Problem] = []

    def visit(node: Any, parts: list[Any]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                visit(key, parts)
                visit(value, [*parts, key])
        elif isinstance(node, list):
            for index, item in enumerate(node):
                visit(item, [*parts, index])
        elif isinstance(node, float) and not math.isfinite(node):
            problems.append(Problem(file, json_path(parts), "number",
                                    "a number beyond the range of a 64-bit float; write a finite number"))
        elif isinstance(node, str) and not node.isascii():
            try:
                node.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(node[exc.start])
                problems.append(Problem(file, json_path(parts), "unicode",
                                        f"lone surrogate U+{code:04X} is not a character; write valid Unicode text"))

    visit(doc, [])
    return problems


def read_data_dir(data_dir: Path) -> tuple[RawFile, RawFile]:
    return read_file(data_dir, REVIEWS_FILE), read_file(data_dir, INSIGHTS_FILE)




Prepare = Callable[[bytes], Any]


def dataset_from_files(reviews_raw: RawFile, insights_raw: RawFile, prepare: Prepare | None = None,
                       on_parts: Callable[[Parts, Mapping[str, Any]], None] | None = None) -> Dataset:
    """Parse, validate and index; raises DataError listing every problem.

    `prepare(body)` is called with the /reviews.json and /insights.json bodies as soon
    as each is encoded (e.g. to start compressing them on other threads while the
    rest is built); its results are `dataset.prepared[REVIEWS_FILE]` and `[INSIGHTS_FILE]`.
    `on_parts(parts, prepared)` is called once the data is accepted (e.g. to store the build).
    """
    # Millions of new containers would start full collections over and over, and each
    # step's freed memory, returned, would be mapped in fresh by the next.
    with building():
        parts, prepared = _checked_parts(reviews_raw, insights_raw, prepare or (lambda body: None))
        if on_parts is not None:
            on_parts(parts, prepared)
        # The parsed documents are gone here: the dataset's own objects go to fresh memory.
        return Dataset.from_parts(parts, reviews_raw.sha256, insights_raw.sha256, prepared if prepare else None)


def _checked_parts(reviews_raw: RawFile, insights_raw: RawFile, prepare: Prepare) -> tuple[Parts, dict[str, Any]]:
    lane = InsightsLane.for_file(insights_raw.path, len(insights_raw.content), reviews_raw.path)
    try:
        return _checked_parts_beside(lane, reviews_raw, insights_raw, prepare)
    finally:
        if lane is not None:
            lane.close()


def _checked_parts_beside(lane: InsightsLane | None, reviews_raw: RawFile, insights_raw: RawFile,
                          prepare: Prepare) -> tuple[Parts, dict[str, Any]]:
    """The build, with insights.json's half from `lane` when it built it (else here, as when there is none).

    A lane builds only data without a problem of insights.json's own, so the problems,
    and their order, are those of the build without it.
    """
    problems: list[Problem] = []
    prepared: dict[str, Any] = {}
    insights_doc, per_review_written = None, None
    in_two = _reviews_in_two(lane, reviews_raw, len(insights_raw.content)) if lane is not None else None
    if in_two is not None:
        reviews_doc, reviews, text_blob = in_two
        prepared[REVIEWS_FILE] = prepare(reviews.body)
    else:
        reviews_doc, reviews, text_blob = _reviews_whole(reviews_raw, prepare, prepared, problems)
    built = lane.insights_half(insights_raw.sha256) if lane is not None else None
    if built is None:
        try:
            insights_doc, per_review_written = parse_insights(insights_raw)
        except DataError as exc:
            problems += exc.problems
    if problems:
        raise DataError(problems)
    if reviews is None:
        problems += schema_problems(REVIEWS_FILE, reviews_doc, REVIEWS_VALIDATOR)
    if built is None and not INSIGHTS_IS_VALID(insights_doc):
        problems += schema_problems(INSIGHTS_FILE, insights_doc, INSIGHTS_VALIDATOR)
    if problems or reviews is None:
        raise DataError(problems)
    if built is None:
        try:
            built = _insights_by_entry(insights_doc, per_review_written)
        except (UnicodeEncodeError, ValueError):
            if not (found := unencodable_problems(INSIGHTS_FILE, insights_doc)):
                raise
            raise DataError(found) from None
    else:
        insights_doc = _head_document(built)
    insights = _InsightsPart.from_entries(built, reviews)
    prepared[INSIGHTS_FILE] = prepare(insights.body)
    problems = _cross_file_problems(reviews_doc, insights_doc, reviews.ratings, reviews.position_of, reviews.records_ok,
                                    insights.tallies, insights.keys_are_reviews)
    if problems:
        raise DataError(problems)
    return Parts.combine(reviews, insights, text_blob), prepared


def _reviews_whole(raw: RawFile, prepare: Prepare, prepared: dict[str, Any],
                   problems: list[Problem]) -> tuple[Any, _ReviewsPart | None, tuple[bytes, bytes] | None]:
    """reviews.json's (document, part, text blob), built here in one piece; its problems added to `problems`.

    The part is None where the file does not parse, is not valid or cannot be encoded;
    `prepared[REVIEWS_FILE]` is prepare(body), called as soon as the body is encoded.
    """
    reviews_doc, reviews = None, None
    try:
        reviews_doc = parse_json(raw)
    except DataError as exc:
        problems += exc.problems
    if reviews_doc is not None and REVIEWS_IS_VALID(reviews_doc):
        # Encoded before insights.json is even parsed, so compressing it overlaps the rest.
        try:
            reviews = _ReviewsPart.encode(reviews_doc, _before_document_end(raw.content))
        except (UnicodeEncodeError, ValueError):
            if not (found := unencodable_problems(REVIEWS_FILE, reviews_doc)):
                raise
            problems += found
        else:
            prepared[REVIEWS_FILE] = prepare(reviews.body)
    if reviews is None:
        return reviews_doc, None, None
    # Before waiting for the lane, which on two cores is often still building: fold the
    # texts, and free the parsed reviews unless a problem report may need them (what the
    # cross-file rules read of reviews.json is in its other keys).
    text_blob = reviews.text_blob()
    return _without_reviews(reviews_doc) if reviews.records_ok else reviews_doc, reviews, text_blob


def _reviews_in_two(lane: InsightsLane, raw: RawFile,
                    insights_size: int) -> tuple[dict[str, Any], _ReviewsPart, tuple[bytes, bytes]] | None:
    """reviews.json's (document without its reviews, part, text blob), its front built here and its back by the lane;
    None where the two are not proved to give exactly the one-piece build (see _reviews_whole), which then runs.

    Taken only for data that needs no problem report: the front valid and newest first,
    the lane's back built from the same bytes after the same comma, newest first after
    the front, every id once and no reply before its review.
    """
    start = back_search_start(len(raw.content), insights_size)
    comma = None if start is None else back_comma(raw.content, start)
    if comma is None:
        return None
    back_sha256 = shared_pool().submit(_sha256_hex, memoryview(raw.content)[comma + 1:])
    doc = parse_reviews_front(raw.content, comma)
    if doc is None or not REVIEWS_IS_VALID(doc) or not is_newest_first(doc["reviews"]):
        return _in_one_piece("the front is not a valid part of a document newest first")
    try:
        front = _ReviewsPart.of_ordered(doc, doc["reviews"], memoryview(raw.content)[:comma], closing=b"")
    except (UnicodeEncodeError, ValueError):
        return _in_one_piece("the front cannot be encoded")
    front_blob = front.text_blob()
    back = lane.reviews_back(comma, back_sha256.result())
    if back is None:
        return _in_one_piece("no back from the lane")
    if back[0] is None:  # as the file writes it, in the bytes after the comma, which the lane hashed the same
        back = (_before_document_end(memoryview(raw.content)[comma + 1:]), *back[1:])
    back_ids, back_dates = back[2], back[3]
    if (front.dates[-1], front.ids[-1]) < (back_dates[0], back_ids[0]):
        return _in_one_piece("the back's first review is newer than the front's last")
    joined = front.with_back(back)
    if not joined.records_ok:
        return _in_one_piece("an id twice or a reply before its review")
    log.debug("built reviews.json in two: %d reviews here, %d by the insights lane", len(front.ids), len(back_ids))
    return _without_reviews(doc), joined, _joined_blobs(front_blob, back)


def _in_one_piece(why: str) -> None:
    log.debug("building reviews.json in one piece: %s", why)
    return None


def load_dataset(data_dir: Path | str) -> Dataset:
    return dataset_from_files(*read_data_dir(Path(data_dir)))


def check_data_dir(data_dir: Path | str) -> list[Problem]:
    """Every problem with a data directory (empty when it can be served)."""
    problems: list[Problem] = []
    raws = []
    for name in DATA_FILES:
        try:
            raw = read_file(Path(data_dir), name)
            parse_json(raw)
            raws.append(raw)
        except DataError as exc:
            problems += exc.problems
    if problems:
        return problems
    try:
        dataset_from_files(*raws)
    except DataError as exc:
        return exc.problems
    return []


# --------------------------------------------------------------------------- memory

_build_lock = threading.Lock()
_builds = 0
_collector_was_enabled = False


@contextmanager
def building() -> Iterator[None]:
    """While any build runs (nested and concurrent builds share one pause): the cyclic garbage
    collector off, and freed memory kept for the build's own next allocations (see keep_freed_memory)."""
    global _builds, _collector_was_enabled
    with _build_lock:
        if _builds == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
            keep_freed_memory()
        _builds += 1
    try:
        yield
    finally:
        with _build_lock:
            _builds -= 1
            if _builds == 0:
                return_freed_memory()
                if _collector_was_enabled:
                    gc.enable()


def release_memory() -> None:
    """Collect garbage now and give free heap pages back to the OS (glibc's malloc_trim; a no-op elsewhere)."""
    gc.collect()
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4  # glibc's mallopt parameters (malloc.h)


def keep_freed_memory() -> None:
    """Have malloc keep what the process frees for its next allocations (glibc; a no-op elsewhere).

    For a build: here a page the process had not touched before costs about 4 µs to map in
    (1 ms a MB), and glibc returns each large block (over 128 KB to 32 MB) and the heap's
    free top as soon as they are freed, so the next allocation maps fresh pages again. Kept,
    they are used again: on 100,000 reviews a first start's server mapped in 90,000 pages
    instead of 154,000 (with reviews.json parsed by runs, see _RUN_BYTES, in both).
    """
    _mallopt(_M_MMAP_MAX, 0)  # large blocks from the heap too, where freed ones are found again
    _mallopt(_M_TRIM_THRESHOLD, 1 << 30)


def return_freed_memory() -> None:
    """Undo keep_freed_memory: large blocks mapped on their own again, the heap's free top returned.

    With the limits glibc's own adjustment reaches (setting any turns it off): blocks of
    up to 32 MB come from the heap, and up to 64 MB of its free top are kept.
    """
    _mallopt(_M_MMAP_MAX, 65536)
    _mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    _mallopt(_M_TRIM_THRESHOLD, 64 << 20)


# What an operator can set these limits with; where any is set, keep_freed_memory and
# return_freed_memory leave malloc as the operator set it.
_MALLOC_ENVIRONMENT = ("MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")
_MALLOC_TUNABLES = ("glibc.malloc.mmap_max", "glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold",
                    "glibc.malloc.top_pad")


def malloc_set_by_environment() -> bool:
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return any(name in os.environ for name in _MALLOC_ENVIRONMENT) or any(t in tunables for t in _MALLOC_TUNABLES)


def _mallopt(parameter: int, value: int) -> None:
    mallopt = _libc_function("mallopt")
    if mallopt is not None and not malloc_set_by_environment():
        mallopt(parameter, value)


@lru_cache(maxsize=None)
def _libc_function(name: str) -> Callable[[int], int] | None:
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


# --------------------------------------------------------------------------- reloading

S = TypeVar("S")


@dataclass(frozen=True)
class FileStamp:
    """What a cheap stat says about the data files; a change means "read them again"."""

    stats: tuple[tuple[int, int, int, int], ...]

    @classmethod
    def of(cls, data_dir: Path) -> "FileStamp":
        stats = []
        for name in DATA_FILES:
            try:
                st = os.stat(Path(data_dir) / name)
                stats.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
            except OSError:
                stats.append((0, -1, 0, 0))
        return cls(tuple(stats))


Listener = Callable[[Any, Any], None]
Load = Callable[[RawFile, RawFile, "Prepare | None"], Dataset]


class DataStore(Generic[S]):
    """The current snapshot of the data, swapped atomically on reload.

    `build(dataset)` turns a validated Dataset into whatever the app serves (a
    snapshot with precomputed responses). Readers take `store.current` once per
    request and use only that object, so a swap never mixes two versions.
    Listeners are called as `listener(old, new)` after each swap, on the thread
    that reloaded; they must not block for long. `load(reviews_raw, insights_raw,
    prepare)` makes the Dataset (`dataset_from_files`, or a build cache in front of
    it); `prepare` is work to start as soon as a body is encoded. With `release=False` the
    first load leaves release_memory() to the caller.
    """

    def __init__(self, data_dir: Path | str, build: Callable[[Dataset], S], prepare: Prepare | None = None,
                 load: Load = dataset_from_files, release: bool = True):
        self.data_dir = Path(data_dir)
        self._build = build
        self._prepare = prepare
        self._load = load
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._stamp = FileStamp.of(self.data_dir)
        raws = read_data_dir(self.data_dir)
        self.current: S = build(load(*raws, prepare))
        self._hashes = (raws[0].sha256, raws[1].sha256)
        del raws
        if release:  # else the caller calls release_memory() (python reviewsd.py: right after READY)
            release_memory()  # what the build left behind
        self.loaded_at = datetime.now(timezone.utc)
        self.last_error: DataError | None = None
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def reload(self, force: bool = False) -> bool:
        """Load the files again if they changed; True when a new snapshot is served.

        A file that fails to read, parse or validate is refused with a log line and
        the previous snapshot stays. Without `force`, files whose stat has not
        changed since the last attempt are not read again.
        """
        with self._lock:
            stamp = FileStamp.of(self.data_dir)
            if stamp == self._stamp and not force:
                return False
            self._stamp = stamp
            try:
                raws = read_data_dir(self.data_dir)
                if (raws[0].sha256, raws[1].sha256) == self._hashes:
                    self.last_error = None  # the files are back to what is served: nothing is refused now
                    return False
                new = self._build(self._load(*raws, self._prepare))
            except DataError as exc:
                self.last_error = exc
                log.error("reload refused, still serving the previous data: %s", exc,
                          extra={"event": "reload_refused", "problems": [str(p) for p in exc.problems[:20]]})
                release_memory()  # what the refused build left behind
                return False
            old, self.current = self.current, new
            self._hashes = hashes = (raws[0].sha256, raws[1].sha256)
            del raws
            self.loaded_at = datetime.now(timezone.utc)
            self.last_error = None
        log.info("data reloaded: reviews.json sha256 %s…, insights.json sha256 %s…",
                 hashes[0][:12], hashes[1][:12], extra={"event": "reloaded"})
        for listener in list(self._listeners):
            try:
                listener(old, new)
            except Exception:
                log.exception("reload listener %r failed", listener)
        # Without this, the replaced snapshot's memory stays with the process (freed but
        # not returned), and every reload would add about one snapshot's worth.
        del old, new
        release_memory()
        return True

    def start_polling(self, interval: float) -> None:
        """Check the files every `interval` seconds on a daemon thread."""
        if interval <= 0 or self._poller is not None:
            return
        self._stop.clear()
        self._poller = threading.Thread(target=self._poll, args=(interval,), name="data-poller", daemon=True)
        self._poller.start()

    def stop_polling(self) -> None:
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
            self._poller = None

    def _poll(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.reload()
            except Exception:
                log.exception("data poll failed")

