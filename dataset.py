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
import hashlib
import json
import logging
import os
import re
import threading
from array import array
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Generic, Iterable, Iterator, Mapping, Sequence, TypeVar

import referencing
import referencing.jsonschema
from jsonschema import Draft202012Validator

from schema_compiler import compile_schema

log = logging.getLogger("reviewsd.data")

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
SCHEMA_BASE = "https://reviewsd.invalid/schemas/"
REVIEWS_FILE = "reviews.json"
INSIGHTS_FILE = "insights.json"
DATA_FILES = (REVIEWS_FILE, INSIGHTS_FILE)
DEFAULT_LIMIT = 20


# --------------------------------------------------------------------------- schemas


def _load_schemas() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text("utf-8")) for p in sorted(SCHEMA_DIR.glob("*.schema.json"))}


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
REVIEWS_IS_VALID = compile_schema("reviews.schema.json", SCHEMAS)
INSIGHTS_IS_VALID = compile_schema("insights.schema.json", SCHEMAS)
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
    errors = sorted(schema_validator.iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    return [
        Problem(file, json_path(e.absolute_path), f"schema:{e.validator}", _short(e.message)) for e in errors
    ]


def _short(message: str, limit: int = 300) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class RawFile:
    name: str
    content: bytes
    sha256: str


def read_file(data_dir: Path, name: str) -> RawFile:
    path = Path(data_dir) / name
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise DataError([Problem(name, "$", "readable", f"cannot read {path}: {exc.strerror or exc}")]) from None
    return RawFile(name, content, hashlib.sha256(content).hexdigest())


def parse_json(raw: RawFile) -> Any:
    try:
        return json.loads(raw.content.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError([Problem(raw.name, "$", "utf-8", f"not UTF-8 at byte {exc.start}")]) from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise DataError([Problem(raw.name, "$", "json", f"not valid JSON ({exc.msg} at {where}); half-written?")]) from None


# --------------------------------------------------------------------------- cross-file rules


def cross_file_problems(reviews_doc: Mapping, insights_doc: Mapping) -> list[Problem]:
    """Rules a schema cannot express: unique ids, references, agreeing counts."""
    problems: list[Problem] = []
    problems += _review_problems(reviews_doc)
    review_ids = {r["id"] for r in reviews_doc["reviews"]}
    problems += _insights_reference_problems(insights_doc, review_ids)
    problems += _insights_count_problems(insights_doc)
    problems += _insights_business_problems(insights_doc, reviews_doc["business"])
    return problems


def _review_problems(doc: Mapping) -> list[Problem]:
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
    aggregate = doc["aggregate_rating"]
    ratings = [r["rating"] for r in doc["reviews"]]
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


def _insights_reference_problems(doc: Mapping, review_ids: set[str]) -> list[Problem]:
    return [
        Problem(INSIGHTS_FILE, path, "review-exists", f"review {review_id} is not in {REVIEWS_FILE}")
        for path, review_id in _referenced_review_ids(doc)
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


def _insights_count_problems(doc: Mapping) -> list[Problem]:
    problems = []
    if doc["review_count"] != len(doc["per_review"]):
        problems.append(Problem(INSIGHTS_FILE, "$.review_count", "counts-agree",
                                f"says {doc['review_count']}, per_review has {len(doc['per_review'])} entries"))
    tallies = _mention_tallies(doc)
    for group, dotted in MENTION_GROUPS.items():
        records = _records(doc, dotted)
        known = set()
        for i, record in enumerate(records):
            path = f"$.{dotted}[{i}]"
            if record["id"] in known:
                problems.append(Problem(INSIGHTS_FILE, f"{path}.id", "unique-id", f"id {record['id']} is repeated"))
            known.add(record["id"])
            problems += _record_count_problems(path, record, tallies[group], group == "aspects")
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


def review_sort_key(review: Mapping) -> tuple[str, str]:
    return review["date"], review["id"]


def fold_name(text: str) -> str:
    """Name matching: case-insensitive, whitespace-insensitive."""
    return " ".join(text.casefold().split())


def fold_text(text: str) -> str:
    """Text matching: Unicode case folding only, so a query is an exact substring otherwise."""
    return text.casefold()


TEXT_SEPARATOR = b"\xff"  # never occurs in UTF-8


@dataclass(frozen=True, eq=False)
class Dataset:
    """Validated, immutable data with the indexes that search needs.

    `reviews` is newest first (date, then id, descending); a review's position in
    it is its rank, so every index is a sorted list of positions and results come
    out newest first without sorting.
    """

    reviews_doc: Mapping[str, Any]
    insights_doc: Mapping[str, Any]
    reviews_sha256: str
    insights_sha256: str
    reviews: tuple[Mapping[str, Any], ...] = field(init=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.reviews_doc["reviews"], key=review_sort_key, reverse=True))
        object.__setattr__(self, "reviews", ordered)

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

    @cached_property
    def position_of(self) -> Mapping[str, int]:
        return {review["id"]: pos for pos, review in enumerate(self.reviews)}

    @cached_property
    def dates_ascending(self) -> list[str]:
        """Review dates oldest first, for bisecting a date range into positions."""
        return [review["date"] for review in reversed(self.reviews)]

    @cached_property
    def ratings(self) -> bytes:
        return bytes(review["rating"] for review in self.reviews)

    @cached_property
    def positions_by_rating(self) -> Mapping[int, list[int]]:
        index: dict[int, list[int]] = {star: [] for star in range(1, 6)}
        for pos, review in enumerate(self.reviews):
            index[review["rating"]].append(pos)
        return index

    @cached_property
    def technicians(self) -> Mapping[str, Mapping[str, Any]]:
        return {t["id"]: t for t in self.insights_doc["entities"]["technicians"]}

    @cached_property
    def services(self) -> Mapping[str, Mapping[str, Any]]:
        return {s["id"]: s for s in self.insights_doc["entities"]["services"]}

    @cached_property
    def technician_names(self) -> Mapping[str, str]:
        """Folded id, name or label -> technician id."""
        return _name_lookup(self.technicians.values(), ("id", "name", "label"))

    @cached_property
    def service_names(self) -> Mapping[str, str]:
        """Folded id or label -> service id (business services included)."""
        return _name_lookup([*self.business["services"], *self.services.values()], ("id", "label"))

    @cached_property
    def positions_by_technician(self) -> Mapping[str, list[int]]:
        return self._mention_positions("technicians")

    @cached_property
    def positions_by_service(self) -> Mapping[str, list[int]]:
        return self._mention_positions("services")

    @cached_property
    def technician_masks(self) -> tuple[Mapping[str, int], list[int]]:
        """Technician id -> bit, and per position the bits of the technicians it mentions."""
        return self._mention_masks("technicians", self.technicians)

    @cached_property
    def service_masks(self) -> tuple[Mapping[str, int], list[int]]:
        return self._mention_masks("services", self.services)

    def _mention_masks(self, group: str, known: Mapping[str, Any]) -> tuple[Mapping[str, int], list[int]]:
        bits = {entity_id: 1 << i for i, entity_id in enumerate(known)}
        per_review = self.insights_doc["per_review"]
        masks = [0] * len(self.reviews)
        for pos, review in enumerate(self.reviews):
            mentions = per_review.get(review["id"])
            for entity_id in mentions[group] if mentions else ():
                masks[pos] |= bits.get(entity_id, 0)
        return bits, masks

    @cached_property
    def positions_by_technician_rating(self) -> Mapping[tuple[str, int], list[int]]:
        """(technician id, rating) -> positions: a rating plus a technician is one slice."""
        return self._mention_positions_by_rating("technicians")

    @cached_property
    def positions_by_service_rating(self) -> Mapping[tuple[str, int], list[int]]:
        return self._mention_positions_by_rating("services")

    def _mention_positions_by_rating(self, group: str) -> Mapping[tuple[str, int], list[int]]:
        index: dict[tuple[str, int], list[int]] = {}
        positions = self.positions_by_technician if group == "technicians" else self.positions_by_service
        ratings = self.ratings
        for entity_id, entity_positions in positions.items():
            for pos in entity_positions:
                index.setdefault((entity_id, ratings[pos]), []).append(pos)
        return index

    def _mention_positions(self, group: str) -> Mapping[str, list[int]]:
        index: dict[str, list[int]] = {}
        per_review = self.insights_doc["per_review"]
        for pos, review in enumerate(self.reviews):
            mentions = per_review.get(review["id"])
            for entity_id in mentions[group] if mentions else ():
                index.setdefault(entity_id, []).append(pos)
        return index

    @cached_property
    def text_blob(self) -> tuple[bytes, list[int]]:
        """All folded texts in UTF-8 joined by 0xFF, and each review's start offset (plus one past the end).

        One `bytes.find` over the blob runs at C speed, so a substring query with no
        hits costs one pass over the text instead of a Python loop per review, and a
        single review is tested with `find(needle, start, end)` without a copy. UTF-8
        keeps it one byte per character for most text (a str holding one emoji would
        take four for every character); UTF-8 substring search is exact because no
        character's encoding starts inside another's, and 0xFF never occurs in UTF-8,
        so no match spans two reviews. A rating-only review is an empty segment.
        """
        parts = [utf8(fold_text(r["text"])) if r["text"] is not None else b"" for r in self.reviews]
        starts, offset = [], 0
        for part in parts:
            starts.append(offset)
            offset += len(part) + 1
        starts.append(offset)
        return TEXT_SEPARATOR.join(parts), starts

    @cached_property
    def reviews_document(self) -> tuple[bytes, array]:
        """The /reviews.json body (reviews newest first) and where each review's JSON starts in it.

        Search and since answers are cut from this one body instead of keeping a
        second copy of every review's encoding; offsets[n] is one past the last review.
        """
        head = encode_json({k: v for k, v in self.reviews_doc.items() if k != "reviews"})[:-1] + b',"reviews":['
        fragments = [encode_json(review) for review in self.reviews]
        offsets, at = array("q"), len(head)
        for fragment in fragments:
            offsets.append(at)
            at += len(fragment) + 1
        offsets.append(at)
        return head + b",".join(fragments) + b"]}", offsets

    def review_json(self, pos: int) -> bytes:
        """One review's JSON, as it appears in /reviews.json."""
        return self.reviews_json_range(pos, pos + 1)

    def reviews_json_range(self, lo: int, hi: int) -> bytes:
        """The comma-separated JSON of the reviews at positions [lo, hi): one slice of the body."""
        if lo >= hi:
            return b""
        body, offsets = self.reviews_document
        return body[offsets[lo]:offsets[hi] - 1]

    def build_indexes(self) -> "Dataset":
        """Compute every lazy index now, so no request pays for it."""
        for name in ("position_of", "dates_ascending", "ratings", "positions_by_rating",
                     "technician_names", "service_names", "positions_by_technician",
                     "positions_by_service", "positions_by_technician_rating", "positions_by_service_rating",
                     "technician_masks", "service_masks", "text_blob",
                     "reviews_document"):
            getattr(self, name)
        return self

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


def utf8(text: str) -> bytes:
    """UTF-8, keeping lone surrogates (JSON can carry them) as their 3-byte forms."""
    return text.encode("utf-8", "surrogatepass")


def _name_lookup(records: Iterable[Mapping[str, Any]], keys: Sequence[str]) -> dict[str, str]:
    lookup: dict[str, str] = {}
    for record in records:
        for key in keys:
            if record.get(key):
                lookup.setdefault(fold_name(record[key]), record["id"])
    return lookup


def encode_json(value: Any) -> bytes:
    """The one JSON encoding of every body: compact UTF-8."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


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


def read_data_dir(data_dir: Path) -> tuple[RawFile, RawFile]:
    return read_file(data_dir, REVIEWS_FILE), read_file(data_dir, INSIGHTS_FILE)


def dataset_from_files(reviews_raw: RawFile, insights_raw: RawFile) -> Dataset:
    """Parse, validate and index; raises DataError listing every problem."""
    problems: list[Problem] = []
    docs = []
    for raw in (reviews_raw, insights_raw):
        try:
            docs.append(parse_json(raw))
        except DataError as exc:
            problems += exc.problems
    if problems:
        raise DataError(problems)
    problems = check_documents(*docs)
    if problems:
        raise DataError(problems)
    return Dataset(docs[0], docs[1], reviews_raw.sha256, insights_raw.sha256).build_indexes()


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


class DataStore(Generic[S]):
    """The current snapshot of the data, swapped atomically on reload.

    `build(dataset)` turns a validated Dataset into whatever the app serves (a
    snapshot with precomputed responses). Readers take `store.current` once per
    request and use only that object, so a swap never mixes two versions.
    Listeners are called as `listener(old, new)` after each swap, on the thread
    that reloaded; they must not block for long.
    """

    def __init__(self, data_dir: Path | str, build: Callable[[Dataset], S]):
        self.data_dir = Path(data_dir)
        self._build = build
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._stamp = FileStamp.of(self.data_dir)
        raws = read_data_dir(self.data_dir)
        self._hashes = (raws[0].sha256, raws[1].sha256)
        self.current: S = build(dataset_from_files(*raws))
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
                    return False
                new = self._build(dataset_from_files(*raws))
            except DataError as exc:
                self.last_error = exc
                log.error("reload refused, still serving the previous data: %s", exc,
                          extra={"event": "reload_refused", "problems": [str(p) for p in exc.problems[:20]]})
                return False
            old, self.current = self.current, new
            self._hashes = (raws[0].sha256, raws[1].sha256)
            self.loaded_at = datetime.now(timezone.utc)
            self.last_error = None
        log.info("data reloaded: reviews.json sha256 %s…, insights.json sha256 %s…",
                 raws[0].sha256[:12], raws[1].sha256[:12], extra={"event": "reloaded"})
        for listener in list(self._listeners):
            try:
                listener(old, new)
            except Exception:
                log.exception("reload listener %r failed", listener)
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
