"""The in-memory dataset: the two data files validated, encoded once and indexed.

`dataset_from_files` returns an immutable `Dataset`: each file's response body encoded once, the
reviews and per-review mentions kept as slices of those bodies, and the indexes `search.py` walks.
Reading and parsing the files is `files.py`'s, the schemas `validation.py`'s, and the reloading store that
holds the current snapshot `datastore.py`'s.
"""

from __future__ import annotations

import bisect
import json
import operator
import threading
import unicodedata
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cached_property, partial
from itertools import compress, repeat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence, TypeVar

import jsonschema_rs
import orjson

# Names that callers import from here, as before the files and schemas had modules of their own.
from .files import (  # noqa: F401 (re-exported)
    DATA_FILES,
    DEFAULT_MAX_FILE_BYTES,
    RawFile,
    encode_json,
    loads_data,
    parse_json,
    read_data_dir,
    read_file,
)
from .problems import (
    INSIGHTS_FILE,
    REVIEWS_FILE,
    DataError,
    Problem,
    cross_file_problems,  # noqa: F401 (re-exported)
    review_record_problems,
    unencodable_problems,
)
from .validation import (  # noqa: F401 (re-exported)
    INSIGHTS_VALIDATOR,
    REGISTRY,
    REVIEWS_VALIDATOR,
    SCHEMAS,
    SEARCH_PARAMS_SCHEMA,
    schema_problems,
    validator,
)

# --------------------------------------------------------------------------- cross-file rules
#
# In problems.py: review_record_problems (unique ids, replies after their reviews) runs while a
# parsed reviews.json is at hand, cross_file_problems (references, agreeing counts) once both
# files are read; dataset_from_files below reports them all at once.


# ---------------------------------------------------------------------- build the Dataset and its indexes


def newest_first(reviews: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The served order: by (date, id), newest first (a stable sort: equal keys keep the file's order)."""
    return sorted(reviews, key=operator.itemgetter("date", "id"), reverse=True)


def fold_name(text: str) -> str:
    """Case-, accent-, hyphen- and whitespace-insensitive form: "Dr. Sofía-Ramírez" ~ "dr. sofia ramirez"."""
    if text.isascii():  # nothing to decompose, and casefold is lower: a search's usual case, 4x quicker
        plain = text.lower()
    else:
        plain = "".join(
            c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c)
        )
    return " ".join(plain.replace("-", " ").replace("_", " ").split())


Named = TypeVar("Named")
Built = TypeVar("Built")
Derived = TypeVar("Derived")


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


def utf8(text: str) -> bytes:
    """UTF-8, keeping lone surrogates (JSON can carry them) as their 3-byte forms."""
    return text.encode("utf-8", "surrogatepass")


# Reviews and per_review entries hold only strings, small integers, booleans and null (their schemas
# allow nothing else), which orjson writes exactly as encode_json does (tests/test_dataset_memory.py), 7 to 9
# times faster: 10,000 in 0.03 instead of 0.31 s (a third of a load), 100,000 in 0.36 instead of 2.3 s.
# Other values (floats) go through encode_json. orjson.JSONEncodeError (a TypeError): a lone surrogate.
encode_record: Callable[[Any], bytes] = orjson.dumps


def _joined(
    opening: bytes, fragments: Iterable[bytes], closing: bytes, separator: bytes = b","
) -> tuple[bytes, array]:
    """opening + the fragments joined by `separator` + closing, and where each fragment starts (plus one past
    the last, +1: fragment i is body[offsets[i]:offsets[i + 1] - 1]).

    Appended one at a time as they are made, each freed before the next: a list of them all, joined, left
    330 MB of freed memory to the process at 100,000 reviews.
    """
    out, offsets = bytearray(opening), array("q")
    for fragment in fragments:
        offsets.append(len(out))
        out += fragment
        out += separator
    offsets.append(len(out))
    if len(offsets) > 1:
        del out[-len(separator) :]
    out += closing
    return bytes(out), offsets


# Dataset.positions_with_text: reviews per chunk, and the share of a chunk's texts (1 in _DENSE) holding the
# needle from which testing each text beats walking the blob from match to match (a match found in the blob
# costs about what testing 4 texts does).
_TEXT_CHUNK = 4096
_DENSE = 4


def _text_blob(texts: Iterable[str]) -> tuple[bytes, array]:
    """All folded texts joined by 0xFF, and each one's start (plus one past the end).

    A substring query is one C-speed `bytes.find` pass over the blob instead of a Python loop per review.
    UTF-8 substring search is exact (no character's encoding starts inside another's), and 0xFF never
    occurs in UTF-8, so no match spans two reviews.
    """
    return _joined(b"", (utf8(fold_text(text)) for text in texts), b"", b"\xff")


# Building from a parsed file yields bytes and arrays only: the objects a Dataset keeps (ids,
# dates, index keys, the documents' other keys) are decoded from them once the file's parse is
# freed, so that none of them sits among its freed objects and pins that memory (at 100,000
# reviews, kept ids held 250 MB of a freed parse).


@dataclass
class _Reviews:
    """What reviews.json contributes, as bytes."""

    head: bytes  # reviews.json without "reviews", encoded
    body: bytes  # the /reviews.json body, reviews newest first
    offsets: array  # review i is body[offsets[i]:offsets[i + 1] - 1]
    ids: bytes  # newest first, encoded
    dates: bytes  # encoded
    ratings: bytes
    sources: bytes  # newest first, encoded
    replied: bytes  # 1 where the review has an owner reply, newest first
    texted: bytes  # 1 where the review has a text (not rating-only), newest first
    text_blob: tuple[bytes, array]
    record_problems: list[Problem]  # unique ids, replies after reviews (see review_record_problems)

    @classmethod
    def build(cls, doc: Mapping[str, Any]) -> "_Reviews":
        head = encode_json({key: value for key, value in doc.items() if key != "reviews"})
        ordered = newest_first(doc["reviews"])
        opening = head[:-1] + (b',"reviews":[' if len(head) > 2 else b'"reviews":[')
        body, offsets = _joined(opening, map(encode_record, ordered), b"]}")
        # int(): JSON Schema's integer admits 5.0.
        ratings = bytes(map(int, map(operator.itemgetter("rating"), ordered)))
        return cls(
            head,
            body,
            offsets,
            encode_json(list(map(operator.itemgetter("id"), ordered))),
            encode_json(list(map(operator.itemgetter("date"), ordered))),
            ratings,
            encode_json(list(map(operator.itemgetter("source"), ordered))),
            bytes(review["owner_reply"] is not None for review in ordered),
            bytes(review["text"] is not None for review in ordered),
            _text_blob(review["text"] or "" for review in ordered),
            review_record_problems(doc["reviews"]),
        )


@dataclass
class _Insights:
    """What insights.json contributes, as bytes: its body, where each per_review entry sits, and the
    mention indexes."""

    head: bytes  # insights.json with per_review empty, encoded
    body: bytes
    starts: array  # per review position, where its per_review entry's value starts in body (-1: none)
    ends: array
    order: array  # the positions in per_review's order
    # The technician, service and aspect indexes: the keys encoded, then the positions mentioning each key.
    indexes: list[tuple[bytes, list[array]]]
    tallies: dict[str, dict[str, int]] | None  # see problems.mention_tallies

    @classmethod
    def build(cls, doc: Mapping[str, Any], position_of: Mapping[str, int]) -> "_Insights":
        # The number of reviews (position_of has one entry for an id written twice).
        n = max(position_of.values(), default=-1) + 1
        starts, ends, order = array("q", [-1]) * n, array("q", [-1]) * n, array("i")
        positions = partial(array, "i")
        entities: dict[str, dict[str, array]] = {
            group: defaultdict(positions) for group in ("technicians", "services")
        }
        aspects: dict[tuple[str, str | None], array] = defaultdict(positions)
        others: dict[str, list[str]] = {"problems": [], "service_areas": [], "topics": []}
        per_review = doc["per_review"]
        for review_id, mentions in per_review.items():
            pos = position_of.get(review_id)
            if pos is None:
                continue  # not a review: refused by the cross-file rules, skipped in an unchecked build
            order.append(pos)
            for aspect in mentions["aspects"]:
                aspects[aspect["id"], None].append(pos)
                aspects[aspect["id"], aspect["sentiment"]].append(pos)
            for group, index in entities.items():
                for entity_id in mentions[group]:
                    index[entity_id].append(pos)
            for group, listed in others.items():
                listed += mentions[group]
        # problems.mention_tallies, counted on the way (None when some entry was skipped above).
        tallies = (
            None
            if len(order) != len(per_review)
            else {
                "aspects": {
                    key if sentiment is None else f"{key}#{sentiment}": len(found)
                    for (key, sentiment), found in aspects.items()
                },
                **{
                    group: {key: len(found) for key, found in index.items()}
                    for group, index in entities.items()
                },
                **{group: dict(Counter(listed)) for group, listed in others.items()},
            }
        )
        indexes = [_frozen(index) for index in (*entities.values(), aspects)]
        # The entries go between the braces of the one "per_review":{} (every other object admits only its
        # named members, and a string's quotes are escaped).
        head = encode_json({**doc, "per_review": {}})
        at = head.index(b'"per_review":{}') + len(b'"per_review":{')
        body, offsets = _joined(
            head[:at],
            (encode_record(key) + b":" + encode_record(value) for key, value in per_review.items()),
            head[at:],
        )
        for key, lo, hi in zip(per_review, offsets, offsets[1:]):
            if (pos := position_of.get(key)) is not None:
                starts[pos], ends[pos] = lo + len(encode_record(key)) + 1, hi - 1
        return cls(head, body, starts, ends, order, indexes, tallies)


def _frozen(index: Mapping[Any, array]) -> tuple[bytes, list[array]]:
    """An index's keys encoded, and its positions in ascending order: per_review may list the reviews in
    any order."""
    return encode_json(list(index)), [array("i", sorted(positions)) for positions in index.values()]


def _thawed(frozen: tuple[bytes, list[array]], numbers: list[int]) -> dict[Any, list[int]]:
    """The index of `_frozen`: its keys decoded (tuples for aspects), its positions as the int objects of
    `numbers`."""
    keys, positions = frozen
    return {
        key if isinstance(key, str) else tuple(key): list(map(numbers.__getitem__, found))
        for key, found in zip(json.loads(keys), positions)
    }


class EncodedReviews(Sequence[Mapping[str, Any]]):
    """The reviews, newest first, kept as their bytes in the /reviews.json body; each read decodes a new dict.

    As dicts, 100,000 reviews cost several times their JSON (479 against 175 MB), and a request needs a
    few of them (search and since answers are cut from the body as bytes).
    """

    __slots__ = ("_body", "_offsets")

    def __init__(self, body: bytes, offsets: array):
        self._body = body
        self._offsets = offsets  # review i is body[offsets[i]:offsets[i + 1] - 1]

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index: Any) -> Any:
        positions = range(len(self))[index]  # a position (IndexError out of range), or a slice clipped
        if isinstance(positions, range):
            return tuple(map(self.__getitem__, positions))
        return json.loads(self._body[self._offsets[positions] : self._offsets[positions + 1] - 1])


class EncodedMentions(Mapping[str, Mapping[str, Any]]):
    """insights.json's per_review, kept as slices of the /insights.json body and decoded when read."""

    __slots__ = ("_body", "_starts", "_ends", "_order", "_ids", "_position_of")

    def __init__(
        self,
        body: bytes,
        starts: array,
        ends: array,
        order: array,
        ids: Sequence[str],
        position_of: Mapping[str, int],
    ):
        self._body = body
        self._starts, self._ends = starts, ends  # per review position; -1 when it has no entry
        self._order = order  # positions in the file's per_review order
        self._ids = ids
        self._position_of = position_of

    def __getitem__(self, review_id: str) -> Mapping[str, Any]:
        position = self._position_of.get(review_id) if isinstance(review_id, str) else None
        if position is None or self._starts[position] < 0:
            raise KeyError(review_id)
        return json.loads(self._body[self._starts[position] : self._ends[position]])

    def __iter__(self) -> Iterator[str]:
        return (self._ids[position] for position in self._order)

    def __len__(self) -> int:
        return len(self._order)


class Dataset:
    """Validated, immutable data with the indexes that search needs.

    A review's position in `reviews` (newest first) is its rank, so every index is a sorted list of
    positions and results come out newest first without sorting. `reviews_doc` holds every key of
    reviews.json but "reviews"; `insights_doc["per_review"]` is an EncodedMentions.
    """

    def __init__(
        self,
        reviews: _Reviews,
        insights: _Insights,
        review_ids: ReviewIds,
        reviews_sha256: str,
        insights_sha256: str,
    ):
        ids, numbers, position_of = review_ids
        self.reviews_sha256, self.insights_sha256 = reviews_sha256, insights_sha256
        self.position_of: Mapping[str, int] = position_of
        self.ids: Sequence[str] = ids
        self.reviews_document: bytes = reviews.body  # reviews.json as served
        self.review_offsets: array = reviews.offsets  # where each review's JSON starts in it (see _joined)
        self.reviews = EncodedReviews(reviews.body, reviews.offsets)
        self.reviews_doc: Mapping[str, Any] = json.loads(reviews.head)
        self.insights_document: bytes = insights.body
        self.insights_doc: Mapping[str, Any] = json.loads(insights.head)
        self.insights_doc["per_review"] = EncodedMentions(
            insights.body, insights.starts, insights.ends, insights.order, ids, position_of
        )
        self.ratings: bytes = reviews.ratings
        self.sources: Sequence[str] = _shared_strings(json.loads(reviews.sources))  # per position
        self.replied: bytes = reviews.replied  # per position: 1 with an owner reply
        self.texted: bytes = reviews.texted  # per position: 1 with a text
        self.positions_by_source: Mapping[str, list[int]] = _grouped(self.sources, numbers)
        self.dates_ascending: list[str] = _shared_strings(json.loads(reviews.dates)[::-1])
        self.text_blob: tuple[bytes, array] = reviews.text_blob
        self.positions_by_rating = {
            star: list(compress(numbers, reviews.ratings.translate(mask)))
            for star, mask in _STAR_MASKS.items()
        }
        # Technician id, service id, (aspect id, sentiment or None) -> positions of the reviews mentioning it.
        self.positions_by_technician, self.positions_by_service, self.positions_by_aspect = (
            _thawed(index, numbers) for index in insights.indexes
        )
        self.technicians: Mapping[str, Mapping[str, Any]] = {
            t["id"]: t for t in self.insights_doc["entities"]["technicians"]
        }
        self.services: Mapping[str, Mapping[str, Any]] = {
            s["id"]: s for s in self.insights_doc["entities"]["services"]
        }
        # (technician or service id, its folded names), for `named`; business services name services too.
        self.technician_names = [
            (record["id"], names)
            for record, names in folded_names(self.technicians.values(), ("id", "name", "label"))
        ]
        self.service_names = [
            (record["id"], names)
            for record, names in folded_names(
                [*self.business["services"], *self.services.values()], ("id", "label")
            )
        ]
        # Technician id -> bit, and per position the bits of the technicians it mentions.
        self.technician_masks = _masks(self.positions_by_technician, self.technicians, len(self.reviews))
        self.service_masks = _masks(self.positions_by_service, self.services, len(self.reviews))
        # (technician id, rating) -> positions: a rating plus a technician is one slice.
        self.positions_by_technician_rating = _by_rating(self.positions_by_technician, self.ratings)
        self.positions_by_service_rating = _by_rating(self.positions_by_service, self.ratings)
        self._derived: dict[Callable[[Dataset], Any], Any] = {}  # see derived()
        self._derived_lock = threading.Lock()

    def derived(self, make: Callable[[Dataset], Derived]) -> Derived:
        """`make(self)`, made on its first use and kept with this dataset, so that it goes with it on a
        reload: the ranked search's word index, the gzip since answers' deflate stream. Made once, whatever
        the threads asking (they wait for the first)."""
        with self._derived_lock:
            if make not in self._derived:
                self._derived[make] = make(self)
            return self._derived[make]

    @classmethod
    def from_documents(
        cls,
        reviews_doc: Mapping[str, Any],
        insights_doc: Mapping[str, Any],
        reviews_sha256: str,
        insights_sha256: str,
    ) -> "Dataset":
        """From parsed documents, which it does not check (`dataset_from_files` validates the files)."""
        reviews = _Reviews.build(reviews_doc)
        ids = _review_ids(reviews)
        return cls(
            reviews, _Insights.build(insights_doc, ids.position_of), ids, reviews_sha256, insights_sha256
        )

    @cached_property
    def replied_positions(self) -> frozenset[int]:
        """Positions of the reviews with an owner reply."""
        return frozenset(compress(range(len(self.replied)), self.replied))

    def date_at(self, pos: int) -> str:
        return self.dates_ascending[len(self.dates_ascending) - 1 - pos]

    def key_bounds(self, date: str, review_id: str) -> tuple[int, int]:
        """Where the sort key (date, id) falls in the newest-first order.

        (positions before it, positions up to and including it): equal when no review has that key (a
        page's last review, since removed by a reload).
        """
        dates, n = self.dates_ascending, len(self.dates_ascending)
        lo, hi = n - bisect.bisect_right(dates, date), n - bisect.bisect_left(dates, date)
        while lo < hi:  # within one date, ids descend
            mid = (lo + hi) // 2
            if self.ids[mid] > review_id:
                lo = mid + 1
            else:
                hi = mid
        return lo, lo + (lo < n and self.ids[lo] == review_id)

    @property
    def business(self) -> Mapping[str, Any]:
        return self.reviews_doc["business"]

    def review_json(self, pos: int) -> bytes:
        """One review's JSON, as it appears in /reviews.json."""
        return self.reviews_json_range(pos, pos + 1)

    def reviews_json_range(self, lo: int, hi: int) -> bytes:
        """The comma-separated JSON of the reviews at positions [lo, hi): one slice of the body."""
        if lo >= hi:
            return b""
        body, offsets = self.reviews_document, self.review_offsets
        return body[offsets[lo] : offsets[hi] - 1]

    def reviews_view_range(self, lo: int, hi: int) -> memoryview:
        """reviews_json_range without the copy: a view of the shared /reviews.json body."""
        body, offsets = self.reviews_document, self.review_offsets
        return memoryview(body)[offsets[lo] : offsets[hi] - 1] if lo < hi else memoryview(b"")

    def reviews_json_at(self, positions: Sequence[int]) -> bytes:
        """The comma-separated JSON of the reviews at these positions, in this order."""
        if positions and all(b - a == 1 for a, b in zip(positions, positions[1:])):  # adjacent: one slice
            return self.reviews_json_range(positions[0], positions[-1] + 1)
        body, offsets = self.reviews_document, self.review_offsets
        return b",".join([body[offsets[pos] : offsets[pos + 1] - 1] for pos in positions])

    def window(self, since: str | None, until: str | None) -> tuple[int, int]:
        """Positions [lo, hi) of the reviews dated within since..until (inclusive)."""
        dates, n = self.dates_ascending, len(self.reviews)
        lo = n - bisect.bisect_right(dates, until) if until else 0
        hi = n - bisect.bisect_left(dates, since) if since else n
        return lo, max(lo, hi)

    def positions_with_text(self, needle: str) -> list[int]:
        """Positions of reviews whose folded text contains the folded needle.

        The reviews are scanned in chunks, each one C pass or a few (a thread waiting for the GIL gets it
        between chunks: one find over 100,000 texts held it 6 ms, one C test of each 15-30 ms). A chunk
        where few texts match is scanned from match to match in the blob (a bisect and a find per match,
        in Python); after one where many do, each text of the next is tested in one C loop. For "e", which
        89% of the texts hold, that took 43 ms to 16-19 at 100,000 reviews (bench/text_search.py)."""
        blob, starts = self.text_blob
        encoded = utf8(needle)
        found: list[int] = []
        dense = False
        for first in range(0, len(starts) - 1, _TEXT_CHUNK):
            last = min(first + _TEXT_CHUNK, len(starts) - 1)
            before = len(found)
            if dense:  # blob.find over each text of the chunk, in C: -1 where it does not hold the needle
                found_at = map(blob.find, repeat(encoded), starts[first:last], starts[first + 1 : last + 1])
                found += compress(range(first, last), map((-1).__ne__, found_at))
            else:
                stop = starts[last]
                at = blob.find(encoded, starts[first], stop)
                while at != -1:
                    pos = bisect.bisect_right(starts, at) - 1
                    found.append(pos)
                    at = blob.find(encoded, starts[pos + 1], stop)
            dense = (len(found) - before) * _DENSE > last - first
        return found

    def text_contains(self, pos: int, needle: bytes) -> bool:
        """Whether review `pos`'s folded text contains `needle` (folded, UTF-8)."""
        blob, starts = self.text_blob
        return blob.find(needle, starts[pos], starts[pos + 1] - 1) != -1


class ReviewIds(NamedTuple):
    ids: list[str]  # newest first
    numbers: list[int]  # one int object per position, shared by every index
    position_of: dict[str, int]  # each id's position


def _review_ids(reviews: _Reviews) -> ReviewIds:
    ids: list[str] = json.loads(reviews.ids)
    numbers = list(range(len(ids)))
    return ReviewIds(ids, numbers, dict(zip(ids, numbers)))


def _grouped(values: Sequence[str], numbers: list[int]) -> dict[str, list[int]]:
    """Value -> the positions holding it, ascending."""
    index: dict[str, list[int]] = defaultdict(list)
    for value, number in zip(values, numbers):
        index[value].append(number)
    return dict(index)


def _shared_strings(values: list[str]) -> list[str]:
    """The same list with equal strings as one object (dates repeat: a few thousand distinct in 100,000)."""
    seen: dict[str, str] = {}
    return [seen.setdefault(value, value) for value in values]


# For each star, a bytes.translate table giving 1 for that rating and 0 for any other: with
# itertools.compress, selecting the positions of one rating runs at C speed.
_STAR_MASKS = {star: bytes(int(b == star) for b in range(256)) for star in range(1, 6)}


def _masks(
    positions: Mapping[str, list[int]], known: Mapping[str, Any], n: int
) -> tuple[Mapping[str, int], list[int]]:
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


def dataset_from_files(reviews_raw: RawFile, insights_raw: RawFile) -> Dataset:
    """Parse, validate and index; raises DataError listing every problem.

    Each file's bytes and parse are let go once used (freed if the caller holds the RawFiles nowhere else),
    reviews.json's before insights.json is parsed: a load's peak holds one parsed file, not both.
    """
    problems: list[Problem] = []
    hashes = (reviews_raw.sha256, insights_raw.sha256)
    reviews_doc = _checked_document(reviews_raw, REVIEWS_VALIDATOR, problems)
    del reviews_raw
    reviews = None if reviews_doc is None else _built(_Reviews.build, REVIEWS_FILE, reviews_doc, problems)
    del reviews_doc
    ids = _review_ids(reviews) if reviews is not None else None  # made after reviews.json's parse is freed
    insights_doc = _checked_document(insights_raw, INSIGHTS_VALIDATOR, problems)
    del insights_raw
    if problems or reviews is None or ids is None:
        raise DataError(problems)
    insights = _built(_Insights.build, INSIGHTS_FILE, insights_doc, problems, ids.position_of)
    if insights is None:
        raise DataError(problems)
    problems = reviews.record_problems + cross_file_problems(
        json.loads(reviews.head), reviews.ratings, ids.position_of, insights_doc, insights.tallies
    )
    if problems:
        raise DataError(problems)
    del insights_doc
    return Dataset(reviews, insights, ids, *hashes)


def _checked_document(
    raw: RawFile, schema_validator: jsonschema_rs.Validator, problems: list[Problem]
) -> Any:
    """The parsed file where it is valid, else None with its problems added to `problems`."""
    try:
        doc = parse_json(raw)
    except DataError as exc:
        problems += exc.problems
        return None
    found = schema_problems(raw.name, doc, schema_validator)
    if found:  # 1e400 parses as infinity, which no schema type admits: say what it is instead
        unencodable = unencodable_problems(raw.name, doc)
        places = {problem.path for problem in unencodable}
        problems += unencodable + [problem for problem in found if problem.path not in places]
    return None if found else doc


def _built(
    build: Callable[..., Built], file: str, doc: Any, problems: list[Problem], *args: Any
) -> Built | None:
    """build(doc, *args), or None with why `doc` cannot be encoded added to `problems`."""
    try:
        return build(doc, *args)
    except (UnicodeEncodeError, ValueError, TypeError):  # a lone surrogate (orjson: TypeError), a huge number
        problems += unencodable_problems(file, doc) or [
            Problem(file, "$", "json", "cannot be encoded as JSON")
        ]
        return None


def load_dataset(data_dir: Path | str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Dataset:
    return dataset_from_files(*read_data_dir(Path(data_dir), max_bytes))


def check_data_dir(data_dir: Path | str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> list[Problem]:
    """Every problem with a data directory (empty when it can be served)."""
    problems: list[Problem] = []
    raws = []
    for name in DATA_FILES:
        try:
            raws.append(read_file(Path(data_dir), name, max_bytes))
            # A file that is not JSON is reported with the other's read or parse problems only.
            parse_json(raws[-1])
        except DataError as exc:
            problems += exc.problems
    if not problems:
        try:
            dataset_from_files(*raws)
        except DataError as exc:
            problems = exc.problems
    return problems
