"""Searching a loaded dataset: parameters, validation against `schemas/search-params.schema.json` (the schema
the OpenAPI document also publishes) and the indexed filter. `run_search` is the one path for HTTP and MCP."""

from __future__ import annotations

import bisect
import functools
import hashlib
import heapq
import itertools
import math
import re
from dataclasses import dataclass, field, make_dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

import jsonschema_rs

from . import ranked
from .dataset import (
    REGISTRY,
    SCHEMAS,
    SEARCH_PARAMS_SCHEMA,
    Dataset,
    fold_text,
    folded_names,
    named,
    utf8,
)


class SchemaValidator:
    """A draft 2020-12 validator (jsonschema-rs, formats checked) whose errors become the API's `issues`:
    search parameters and tool arguments (`noun` names them in the message about an unknown one)."""

    def __init__(self, schema: Mapping[str, Any], noun: str = "parameter"):
        self.schema = schema
        self.noun = noun
        self._validator = jsonschema_rs.Draft202012Validator(schema, registry=REGISTRY, validate_formats=True)

    def issues(self, args: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every problem with `args`, one issue each: the unknown names first, then the schema's errors in
        path order."""
        properties = self.schema.get("properties", {})
        known = ", ".join(properties) or "none (pass {})"
        issues = [
            issue(name, "unknown_parameter", f"unknown {self.noun} {name!r}; known: {known}")
            for name in args
            if name not in properties
        ]
        if self._validator.is_valid(args):
            return issues
        for error in sorted(self._validator.iter_errors(args), key=lambda e: list(map(str, e.instance_path))):
            found = self._issue(error)
            if found and all(found["path"] != i["path"] or found["code"] != i["code"] for i in issues):
                issues.append(found)  # a bad date fails both pattern and format: say it once
        return issues

    @staticmethod
    def _issue(error: jsonschema_rs.ValidationError) -> dict[str, Any] | None:
        name = str(error.instance_path[0]) if error.instance_path else ""
        keyword, kind, value = error.kind.name, error.kind, error.instance
        if keyword == "additionalProperties":  # reported above, with the known names
            return None
        if keyword == "required":
            return issue(kind.property, "required", f"{kind.property} is required")
        if keyword == "pattern" and name == "cursor":
            return invalid_cursor()
        if keyword in ("format", "pattern"):  # every other format and pattern in these schemas is a date's
            return invalid_date(name, value)
        messages = {
            "type": lambda: f"{name} must be {_TYPE_WORDS.get(kind.types[0], kind.types[0])}, got {value!r}",
            "minimum": lambda: f"{name} must be at least {kind.limit}, got {value!r}",
            "maximum": lambda: f"{name} must be at most {kind.limit}, got {value!r}",
            "enum": lambda: f"{name} must be one of {', '.join(map(str, kind.options))}, got {value!r}",
            "minLength": lambda: f"{name} must not be empty",
            "maxLength": lambda: f"{name} must be at most {kind.limit} characters long",
        }
        return issue(name, keyword, messages.get(keyword, lambda: f"{name}: {error.message}")())


_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "object": "an object",
    "boolean": "true or false",
}


SEARCH_PARAMS_VALIDATOR = SchemaValidator(SEARCH_PARAMS_SCHEMA)
DEFAULT_LIMIT: int = SEARCH_PARAMS_SCHEMA["properties"]["limit"]["default"]  # the schema says it to clients


MAX_ISSUES = 20  # listed in one answer; a query of 1,000 unknown names made a 182 KB 400


class InvalidParams(Exception):
    """Search or path parameters that cannot be used; `issues` lists the first MAX_ISSUES problems, `more`
    counts the others."""

    def __init__(self, issues: Sequence[Mapping[str, Any]]):
        every = list(issues)
        self.issues, self.more = every[:MAX_ISSUES], max(0, len(every) - MAX_ISSUES)
        super().__init__("; ".join(f"{'.'.join(map(str, i['path']))}: {i['message']}" for i in self.issues))


def issue(param: str, code: str, message: str) -> dict[str, Any]:
    return {"path": [param], "code": code, "message": message}


@dataclass(frozen=True)
class Filter:
    """One search filter (a property of schemas/search-params.schema.json): its name, its label on the
    /reviews form, the form control that sets it, how it finds its reviews, the MCP tool's word for it."""

    name: str
    label: str
    widget: str  # an <input> type ("search", "text", "date") or "select"
    # How it finds its reviews: "stars" (ratings), "window" (the date range), "text", "ranked", "entity",
    # "aspect" (each read by its own code in this module), or, needing no code, "flag" and "index" (column).
    finds: str
    prose: str  # what the MCP tool's description calls it (filters sharing a word are named once); its
    # {one_person} is filled with the trade's word, as in every tool description
    choices: tuple[tuple[str, str], ...] = ()  # (value, label) of a select's options, after "Any"
    attrs: Mapping[str, str] = field(default_factory=dict)  # extra input attributes: min, max, maxlength
    # A "flag" filter: the Dataset's per-review column it tests for true. An "index" filter: the per-review
    # column it tests for equality, whose positions by value are the Dataset's `positions_by_<name>`.
    column: str | None = None


# The filters, in the order a cursor's digest lists them (a new filter goes last: earlier cursors stay valid).
# A new filter: an entry in schemas/search-params.schema.json and a row here (tests hold them together).
FILTERS: tuple[Filter, ...] = (
    Filter(
        "rating",
        "Stars",
        "select",
        "stars",
        "rating",
        tuple((str(n), f"{n} stars" if n > 1 else "1 star") for n in range(5, 0, -1)),
    ),
    Filter(
        "min_rating",
        "At least",
        "select",
        "stars",
        "rating",
        tuple((str(n), f"{n} stars or more") for n in range(4, 1, -1)),
    ),
    Filter("since", "From", "date", "window", "dates"),
    Filter("until", "To", "date", "window", "dates"),
    Filter("query", "Words in the review", "search", "text", "text", attrs={"maxlength": "200"}),
    Filter(
        "mentions_technician", "Person named", "text", "entity", "{one_person}", attrs={"maxlength": "200"}
    ),
    Filter("mentions_service", "Service", "text", "entity", "service", attrs={"maxlength": "200"}),
    Filter(
        "source",
        "Published on",
        "text",
        "index",
        "platform (source)",
        attrs={"maxlength": "40"},
        column="sources",
    ),
    Filter(
        "has_text",
        "Written review",
        "select",
        "flag",
        "has_text",
        (("true", "With text"), ("false", "Rating only")),
        column="texted",
    ),
    Filter(
        "has_reply",
        "Owner reply",
        "select",
        "flag",
        "has_reply (false: unanswered)",
        (("true", "Replied"), ("false", "Not replied")),
        column="replied",
    ),
    Filter(
        "max_rating",
        "At most",
        "select",
        "stars",
        "max_rating",
        tuple((str(n), f"{n} stars or fewer" if n > 1 else "1 star") for n in range(4, 0, -1)),
    ),
    Filter(
        "q", "Words, best match first", "search", "ranked", "q (words, ranked)", attrs={"maxlength": "500"}
    ),
    Filter("aspect", "Aspect", "text", "aspect", "aspect", attrs={"maxlength": "200"}),
    Filter(
        "aspect_sentiment",
        "About the aspect",
        "select",
        "aspect",
        "aspect_sentiment",
        (("negative", "Negative"), ("neutral", "Neutral"), ("positive", "Positive")),
    ),
)
FILTER_NAMES = tuple(row.name for row in FILTERS)

# The Python type of each JSON Schema type a filter may have.
_PYTHON_TYPES: dict[str, type] = {"integer": int, "number": float, "string": str, "boolean": bool}


@dataclass(frozen=True)
class CursorKey:
    """Where a page ended: its last review's sort key, and a digest of the filters and sort it is for."""

    filters: str
    rating: int
    date: str
    id: str


# Made from the table, so that a new filter is a schema entry and a row: one field per row of FILTERS, in its
# order, of the type its schema entry gives (None: not given), then sort, limit and `after`, the decoded
# cursor (the previous page's last review).
SearchParams = make_dataclass(
    "SearchParams",
    [
        *(
            (row.name, _PYTHON_TYPES[SEARCH_PARAMS_SCHEMA["properties"][row.name]["type"]] | None, None)
            for row in FILTERS
        ),
        ("sort", str, "newest"),
        ("limit", int, DEFAULT_LIMIT),
        ("after", CursorKey | None, None),
    ],
    frozen=True,
)
SearchParams.__module__ = __name__  # make_dataclass's own `module=` is Python 3.12's
SearchParams.__doc__ = "Validated search parameters: a field per filter of FILTERS, then sort, limit, after."


# --------------------------------------------------------------------------- cursors


_CURSOR_VERSION = "1"


def filters_digest(args: Mapping[str, Any]) -> str:
    """A short digest of the filters (FILTERS) and sort in `args`: every page with a next one needs it."""
    return _digest((*map(args.get, FILTER_NAMES), args.get("sort") or "newest"))


@functools.lru_cache(maxsize=1024)  # a client paging asks with the same filters again and again
def _digest(filters: tuple[Any, ...]) -> str:
    return hashlib.blake2b(repr(filters).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def encode_cursor(key: CursorKey) -> str:
    """The key's fields joined by dots: only URL-safe characters, so it travels unescaped in a URL. Opaque
    to clients by contract (the docs say so), not by encoding: every page with a next one pays for it."""
    return f"{_CURSOR_VERSION}.{key.filters}.{key.rating}.{key.date}.{key.id}"


def cursor_after(dataset: Dataset, filters: str, pos: int) -> str:
    """The cursor of a page whose last review is at `pos`."""
    return encode_cursor(CursorKey(filters, dataset.ratings[pos], dataset.date_at(pos), dataset.ids[pos]))


# What a cursor looks like is the schema's to say (clients and schemathesis read it there): the version, the
# filters' digest, then the last review's rating, date and id (schemas/review.schema.json), dot-separated.
_CURSOR = re.compile(SEARCH_PARAMS_SCHEMA["properties"]["cursor"]["pattern"])


def invalid_cursor() -> dict[str, Any]:
    return issue("cursor", "invalid_cursor", "cursor is not one this server issued; start again without it")


def decode_cursor(cursor: str, filters: str) -> CursorKey | dict[str, Any]:
    """The key a cursor holds, or the issue saying why it cannot be used."""
    if _CURSOR.fullmatch(cursor) is None:
        return invalid_cursor()
    _version, digest, rating, date, review_id = cursor.split(".")
    key = CursorKey(digest, int(rating), date, review_id)
    if key.filters != filters:
        return issue(
            "cursor",
            "cursor_mismatch",
            "cursor was issued for other filters or another sort: send the same ones with it (only limit may "
            "change), or start again without cursor",
        )
    return key


def validate_search_args(args: Mapping[str, Any]) -> SearchParams:
    """Check decoded arguments against the search-parameter schema; all issues at once."""
    issues = SEARCH_PARAMS_VALIDATOR.issues(args)
    bad = {i["path"][0] for i in issues}
    if "since" in args and "until" in args and not bad & {"since", "until"} and args["since"] > args["until"]:
        issues.append(
            issue("since", "date_order", f"since ({args['since']}) is after until ({args['until']})")
        )
    if "min_rating" in args and "max_rating" in args and not bad & {"min_rating", "max_rating"}:
        if args["min_rating"] > args["max_rating"]:
            issues.append(
                issue(
                    "min_rating",
                    "rating_order",
                    f"min_rating ({args['min_rating']}) is above max_rating ({args['max_rating']})",
                )
            )
    sort = args.get("sort") or ("relevance" if "q" in args else "newest")
    if sort == "relevance" and "q" not in args and "sort" not in bad:
        issues.append(issue("sort", "relevance_needs_q", "sort relevance ranks the words of q: give q"))
    if sort == "relevance" and "cursor" in args and "cursor" not in bad:
        issues.append(
            issue("cursor", "invalid_cursor", "a relevance ranking is one page: no cursor goes with it")
        )
    after = None
    if "cursor" in args and "cursor" not in bad and sort != "relevance":
        after = decode_cursor(args["cursor"], filters_digest(args))
        if isinstance(after, dict):
            issues.append(after)
    if issues:
        raise InvalidParams(issues)
    limit = int(args.get("limit", DEFAULT_LIMIT))
    if after is None:  # no issues: every name is known
        return SearchParams(**{**args, "sort": sort, "limit": limit})
    fields = {k: v for k, v in args.items() if k != "cursor"}
    return SearchParams(**{**fields, "sort": sort, "limit": limit, "after": after})


_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


def decode_query_args(
    multi: Mapping[str, Sequence[str]],
    validator: SchemaValidator = SEARCH_PARAMS_VALIDATOR,
    validate: Callable[[Mapping[str, Any]], Any] = validate_search_args,
) -> dict[str, Any]:
    """Query-string values to the JSON types the schema declares; repeated names are issues.

    Values that do not look like their type are left as strings, so the schema reports them with the same
    messages as a wrongly typed MCP argument.
    """
    issues, args = [], {}
    for name, values in multi.items():
        declared = validator.schema["properties"].get(name, {}).get("type")
        if len(values) > 1:
            issues.append(
                issue(name, "repeated_parameter", f"{name} is given {len(values)} times; give it once")
            )
            for value in values:  # and what is wrong with each, so every problem is listed at once
                more = validator.issues({name: _decode_value(declared, value)})
                issues += [found for found in more if found not in issues]
            continue
        args[name] = _decode_value(declared, values[0])
    if issues:
        try:
            validate(args)
        except InvalidParams as more:
            issues += more.issues
        raise InvalidParams(issues)
    return args


def _decode_value(declared: str | None, value: str) -> Any:
    text = value.strip()
    if declared == "integer" and _INTEGER.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # over 4,300 digits (Python's limit on reading an int): not an integer we read
            return value
    if declared == "number" and _NUMBER.fullmatch(text):
        number = float(text)
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    if declared == "boolean" and text in ("true", "false"):
        return text == "true"
    return value


# Above this many candidates, one pass over the text blob beats checking each text.
_BLOB_THRESHOLD = 2000
ALL_RATINGS = frozenset(range(1, 6))


@dataclass(frozen=True)
class _Source:
    """One filter: how many reviews in the window pass it, those positions, and its test for one position."""

    size: int
    positions: Iterable[int]  # lazy: only the smallest source's are walked
    passes: Callable[[int], bool]
    exact: bool = True  # size is the number of positions (not an upper bound)


@dataclass(frozen=True)
class SearchPage:
    """One page of a search: how many reviews match in all, this page's positions, the next page's cursor."""

    matched: int
    positions: list[int]
    next_cursor: str | None = None


# Each sort walks groups of ratings in turn, and each group's matches in position order (newest first) or
# reversed: a rating sort is newest first within a rating.
_RATING_ORDER = {"highest": (5, 4, 3, 2, 1), "lowest": (1, 2, 3, 4, 5)}


def find_reviews(dataset: Dataset, params: SearchParams) -> SearchPage:
    """The page of matching reviews `params` asks for, in its sort order.

    Each filter is a source of candidate positions; the smallest one is walked and every other filter is
    an O(1) test per candidate, so a selective search costs about its smallest filter's size, not the
    data's. A cursor narrows the window of its rating group to the positions after its key.
    """
    lo, hi = dataset.window(params.since, params.until)
    allowed = _allowed_stars(params)
    scores = ranked.rank(dataset, params.q, (lo, hi)) if params.q is not None else None
    required = _required(dataset, params, scores)
    if params.sort == "relevance":
        return _ranked_page(dataset, params, scores or {}, allowed, (lo, hi), required)
    order = _RATING_ORDER.get(params.sort)
    groups = [frozenset({star}) for star in order if star in allowed] if order else [allowed]
    after, oldest, want = params.after, params.sort == "oldest", params.limit + 1
    text_positions = _TextPositions(dataset, params.query)
    matched, chosen = 0, []
    for stars in groups:
        count, positions = _matches(dataset, params, stars, lo, hi, text_positions, required)
        matched += count
        if not count or len(chosen) >= want:
            continue
        place = _group_place(order, stars, after)
        if place == "passed":
            continue  # listed on earlier pages
        if place == "cursor":  # only what comes after the cursor's review
            before, through = dataset.key_bounds(after.date, after.id)
            window = (lo, min(hi, before)) if oldest else (max(lo, through), hi)
            _, positions = _matches(dataset, params, stars, *window, text_positions, required)
        chosen += _first(positions, want - len(chosen), oldest)
    if len(chosen) < want:
        return SearchPage(matched, chosen)
    del chosen[params.limit :]
    return SearchPage(matched, chosen, cursor_after(dataset, filters_digest(vars(params)), chosen[-1]))


class _Required(NamedTuple):
    """A filter known as a list of positions: the reviews q matches, or those naming an aspect."""

    positions: Sequence[int]  # ascending
    members: frozenset[int]


def _required(dataset: Dataset, params: SearchParams, scores: Mapping[int, float] | None) -> list[_Required]:
    found = []
    if scores is not None:
        found.append(_Required(sorted(scores), frozenset(scores)))
    if params.aspect is not None:
        names = folded_names(dataset.insights_doc["aspects"], ("id", "label"))
        aspects = named(params.aspect, names)
        positions = (
            dataset.positions_by_aspect.get((aspects[0]["id"], params.aspect_sentiment), [])
            if len(aspects) == 1
            else []  # none or several: no review matches
        )
        found.append(_Required(positions, frozenset(positions)))
    return found


def _ranked_page(
    dataset: Dataset,
    params: SearchParams,
    scores: Mapping[int, float],
    stars: frozenset[int],
    window: tuple[int, int],
    required: Sequence[_Required],
) -> SearchPage:
    """The best `limit` of the reviews q matches that pass every other filter; one page (no cursor)."""
    lo, hi = window
    ratings = dataset.ratings
    tests = [source.passes for source in _sources(dataset, params, stars, lo, hi)]
    tests += [r.members.__contains__ for r in required[1:]]  # the first is q's own: every scored review
    if params.query is not None:
        needle = utf8(fold_text(params.query))
        tests.append(lambda pos: dataset.text_contains(pos, needle))

    def passes(pos: int) -> bool:
        return lo <= pos < hi and ratings[pos] in stars and all(test(pos) for test in tests)

    matched, top = ranked.best(scores, passes, params.limit)
    return SearchPage(matched, top)


def _group_place(order: Sequence[int] | None, stars: frozenset[int], after: CursorKey | None) -> str:
    """Where a rating group stands against the cursor: "passed" (listed on earlier pages), "cursor" (the
    cursor's own group) or "ahead" (listed whole). Without a rating order there is one group: the cursor's."""
    if after is None:
        return "ahead"
    if not order:
        return "cursor"
    here, there = order.index(min(stars)), order.index(after.rating)
    return "passed" if here < there else "cursor" if here == there else "ahead"


class _TextPositions:
    """The positions of the reviews whose text holds the query, found on first use and kept for the search's
    other rating groups and windows (one blob scan per search)."""

    __slots__ = ("dataset", "query", "found", "members")

    def __init__(self, dataset: Dataset, query: str | None):
        self.dataset, self.query, self.found = dataset, query, None
        self.members: frozenset[int] | None = None

    def __call__(self) -> list[int]:
        if self.found is None:
            self.found = self.dataset.positions_with_text(fold_text(self.query or ""))
        return self.found

    def holds(self) -> Callable[[int], bool]:
        """The test "this position's text holds the query" once the blob is scanned: a set lookup in C.
        A rating sort tests every review of each rating group; text_contains per review was 200 of the
        315 ms of `query=e&sort=lowest` at 100,000 reviews (issue 39)."""
        if self.members is None:
            self.members = frozenset(self())
        return self.members.__contains__


def _allowed_stars(params: SearchParams) -> frozenset[int]:
    stars = ALL_RATINGS if params.rating is None else ALL_RATINGS & {params.rating}
    if params.min_rating is not None:
        stars &= set(range(math.ceil(params.min_rating), 6))
    if params.max_rating is not None:
        stars &= set(range(1, math.floor(params.max_rating) + 1))
    return stars


def _first(positions: Iterable[int], count: int, reverse: bool) -> list[int]:
    """The first `count` of `positions` (ascending), or of them reversed."""
    if not reverse:
        return list(itertools.islice(positions, count))
    ordered = positions if isinstance(positions, (list, range)) else list(positions)
    return list(ordered[::-1][:count])


def _matches(
    dataset: Dataset,
    params: SearchParams,
    stars: frozenset[int],
    lo: int,
    hi: int,
    text_positions: _TextPositions,
    required: Sequence[_Required] = (),
) -> tuple[int, Iterable[int]]:
    """(how many, their positions ascending, lazily) of the reviews in [lo, hi) rated one of `stars` that pass
    every filter of `params`."""
    if not stars or lo >= hi:
        return 0, ()
    sources = _sources(dataset, params, stars, lo, hi)
    for listed in required:
        span = _windowed(listed.positions, lo, hi)
        sources.append(_Source(len(span), iter(span), listed.members.__contains__))
    if not sources and params.query is None:  # every review in the window matches
        return hi - lo, range(lo, hi)
    if params.query is not None:
        smallest_other = min((s.size for s in sources), default=hi - lo)
        sources.append(_text_source(dataset, fold_text(params.query), lo, hi, smallest_other, text_positions))
    sources.sort(key=lambda source: source.size)
    driver, tests = sources[0], [source.passes for source in sources[1:]]
    if not tests and driver.exact:  # one filter: its size is the count
        return driver.size, driver.positions
    if len(tests) == 1:  # the usual case (a rating group and a text): filter() calls a C test without a frame
        found = list(filter(tests[0], driver.positions))
    else:
        found = [pos for pos in driver.positions if all(test(pos) for test in tests)]
    return len(found), found


@dataclass(frozen=True)
class _Span:
    """`positions[start:stop]` read in place: a slice would copy the span (tens of thousands of entries)."""

    positions: Sequence[int]
    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start

    def __iter__(self) -> Iterator[int]:
        return map(self.positions.__getitem__, range(self.start, self.stop))


def _windowed(positions: Sequence[int], lo: int, hi: int) -> _Span:
    """The part of a sorted position list that falls in the window [lo, hi)."""
    return _Span(positions, bisect.bisect_left(positions, lo), bisect.bisect_left(positions, hi))


def _merged(spans: Sequence[_Span]) -> Iterator[int]:
    """The positions of several spans in order; one span needs no merge."""
    return iter(spans[0]) if len(spans) == 1 else heapq.merge(*spans)


def _sources(
    dataset: Dataset, params: SearchParams, stars: frozenset[int], lo: int, hi: int
) -> list[_Source]:
    """The window-limited sources of the rating, technician, service, platform and flag filters given."""
    sources = _plain_sources(dataset, params, lo, hi)
    ratings = dataset.ratings
    if stars != ALL_RATINGS and params.mentions_technician is None and params.mentions_service is None:
        spans = [_windowed(dataset.positions_by_rating[star], lo, hi) for star in sorted(stars)]
        sources.append(_Source(sum(map(len, spans)), _merged(spans), lambda pos: ratings[pos] in stars))
    # An entity source is cut from per-rating spans of the allowed ratings only (so a rating plus an entity
    # walks only their common reviews), and its test checks the rating too: no rating source is needed
    # beside it.
    for name, (bits, masks), by_rating, lookup in (
        (
            params.mentions_technician,
            dataset.technician_masks,
            dataset.positions_by_technician_rating,
            dataset.technician_names,
        ),
        (
            params.mentions_service,
            dataset.service_masks,
            dataset.positions_by_service_rating,
            dataset.service_names,
        ),
    ):
        if name is not None:
            found = set(named(name, lookup))
            entity = found.pop() if len(found) == 1 else None  # none or several: no review matches
            spans = (
                [_windowed(by_rating.get((entity, star), []), lo, hi) for star in sorted(stars)]
                if entity
                else []
            )
            bit = bits.get(entity, 0) if entity else 0
            sources.append(
                _Source(
                    sum(map(len, spans)),
                    _merged(spans),
                    lambda pos, b=bit, m=masks: bool(m[pos] & b) and ratings[pos] in stars,
                )
            )
    return sources


_INDEX_FILTERS = tuple(row for row in FILTERS if row.finds == "index")
_FLAG_FILTERS = tuple(row for row in FILTERS if row.finds == "flag")


def _plain_sources(dataset: Dataset, params: SearchParams, lo: int, hi: int) -> list[_Source]:
    """The filters that need no code of their own: an index (source: the reviews of one value, walked from
    `positions_by_<name>`) and the flags (has_text, has_reply: a test per review, seldom selective)."""
    sources = []
    for row in _INDEX_FILTERS:
        value = getattr(params, row.name)
        if value is not None:
            column = getattr(dataset, row.column)
            span = _windowed(getattr(dataset, f"positions_by_{row.name}").get(value, []), lo, hi)
            sources.append(_Source(len(span), iter(span), lambda pos, v=value, c=column: c[pos] == v))
    flags = []
    for row in _FLAG_FILTERS:
        want = getattr(params, row.name)
        if want is not None:
            column = getattr(dataset, row.column)
            flags.append(lambda pos, want=want, column=column: bool(column[pos]) == want)
    for passes in flags:
        sources.append(_Source(hi - lo + 1, filter(passes, range(lo, hi)), passes, exact=False))
    return sources


def _text_source(
    dataset: Dataset,
    needle: str,
    lo: int,
    hi: int,
    smallest_other: int,
    text_positions: _TextPositions,
) -> _Source:
    """The text filter: a blob scan when the other filters leave many candidates, else a test per text."""
    encoded = utf8(needle)

    def contains(pos: int) -> bool:
        return dataset.text_contains(pos, encoded)

    if smallest_other <= _BLOB_THRESHOLD:  # checking a few texts beats scanning them all
        return _Source(hi - lo + 1, (pos for pos in range(lo, hi) if contains(pos)), contains, exact=False)
    everywhere = text_positions()  # the blob scanned once per search, whatever the groups and windows
    found = everywhere[bisect.bisect_left(everywhere, lo) : bisect.bisect_left(everywhere, hi)]
    # Walked if it is the smallest source; otherwise a test for each of a smaller source's positions.
    return _Source(len(found), found, text_positions.holds() if smallest_other < len(found) else contains)


def run_search(dataset: Dataset, args: Mapping[str, Any]) -> SearchPage:
    """Validate JSON-typed arguments and search: the single path for HTTP and MCP."""
    return find_reviews(dataset, validate_search_args(args))


def search_result(dataset: Dataset, page: SearchPage) -> dict[str, Any]:
    return {
        "matched": page.matched,
        "returned": len(page.positions),
        "reviews": [dataset.reviews[p] for p in page.positions],
        "next_cursor": page.next_cursor,
    }


def search_result_json(dataset: Dataset, page: SearchPage) -> bytes:
    """The same document as `search_result`, assembled from pre-encoded reviews."""
    reviews = dataset.reviews_json_at(page.positions)
    cursor = b"null" if page.next_cursor is None else b'"%s"' % page.next_cursor.encode()
    return b'{"matched":%d,"returned":%d,"reviews":[%s],"next_cursor":%s}' % (
        page.matched,
        len(page.positions),
        reviews,
        cursor,
    )


# The one date rule, search's `since`: for the since path, MCP's date arguments and the OpenAPI document too.
# The pattern matters: jsonschema-rs's "date" format alone admits a signed year ("-568-08-13").
DATE_SCHEMA = {
    key: value for key, value in SEARCH_PARAMS_SCHEMA["properties"]["since"].items() if key != "description"
}
_DATE = jsonschema_rs.Draft202012Validator(DATE_SCHEMA, validate_formats=True)


def invalid_date(name: str, value: Any) -> dict[str, Any]:
    return issue(name, "invalid_date", f"{name} must be a real calendar date as YYYY-MM-DD, got {value!r}")


def validate_date(name: str, value: str) -> str:
    """A path or argument date as YYYY-MM-DD, or InvalidParams."""
    if _DATE.is_valid(value):
        return value
    raise InvalidParams([invalid_date(name, value)])


SINCE_PARAMS_VALIDATOR = SchemaValidator(SCHEMAS["since-params.schema.json"])


@dataclass(frozen=True)
class SincePage:
    """The reviews since a date that one answer holds: positions [start, stop), newest first."""

    since: str
    count: int  # every review since the date
    start: int
    stop: int
    paged: bool  # asked with limit or cursor: the answer says returned and next_cursor
    next_cursor: str | None = None


def since_after(since: str, args: Mapping[str, Any]) -> CursorKey | None:
    """The cursor of a since request, decoded; InvalidParams if it is not one issued for this date."""
    if "cursor" not in args:
        return None
    after = decode_cursor(args["cursor"], filters_digest({"since": since}))
    if isinstance(after, dict):
        raise InvalidParams([after])
    return after


def validate_since_args(since: str, args: Mapping[str, Any]) -> tuple[int | None, CursorKey | None]:
    """GET /api/reviews/since/{date}'s paging parameters: (limit or None for all, the cursor's key)."""
    issues = SINCE_PARAMS_VALIDATOR.issues(args)
    if issues:
        raise InvalidParams(issues)
    return args.get("limit"), since_after(since, args)


def since_page(dataset: Dataset, since: str, limit: int | None, after: CursorKey | None) -> SincePage:
    """Every review since `since` (limit None, no cursor), or the `limit` after the cursor's review.

    The cursor is the one a search with only `since` issues: the reviews since a date are one search."""
    lo, hi = dataset.window(since, None)
    start = lo if after is None else max(lo, dataset.key_bounds(after.date, after.id)[1])
    stop = max(start, hi if limit is None else min(hi, start + limit))
    more = start < stop < hi
    cursor = cursor_after(dataset, filters_digest({"since": since}), stop - 1) if more else None
    return SincePage(since, hi - lo, start, stop, limit is not None or after is not None, cursor)


def since_result_parts(dataset: Dataset, page: SincePage) -> tuple[bytes, memoryview, bytes]:
    """The since answer holding `page` as three parts: a made prefix, a view of the shared /reviews.json body
    (no copy, whatever its size) and the suffix; `{since, count, reviews}`, and for a paged one `returned`
    and `next_cursor` too."""
    reviews = dataset.reviews_view_range(page.start, page.stop)
    if not page.paged:
        return b'{"since":"%s","count":%d,"reviews":[' % (page.since.encode(), page.count), reviews, b"]}"
    cursor = b"null" if page.next_cursor is None else b'"%s"' % page.next_cursor.encode()
    head = b'{"since":"%s","count":%d,"returned":%d,"reviews":[' % (
        page.since.encode(),
        page.count,
        page.stop - page.start,
    )
    return head, reviews, b'],"next_cursor":%s}' % cursor
