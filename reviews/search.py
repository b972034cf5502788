"""Searching a loaded dataset: parameters, validation against `schemas/search-params.schema.json` (the schema
the OpenAPI document also publishes) and the indexed filter. `run_search` is the one path for HTTP and MCP."""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import jsonschema_rs

from .dataset import (
    REGISTRY,
    SEARCH_PARAMS_SCHEMA,
    Dataset,
    fold_text,
    named,
    utf8,
)


class SchemaValidator:
    """A draft 2020-12 validator (jsonschema-rs, formats checked) whose errors become the API's `issues`: search
    parameters and tool arguments (`noun` names them in the message about an unknown one)."""

    def __init__(self, schema: Mapping[str, Any], noun: str = "parameter"):
        self.schema = schema
        self.noun = noun
        self._validator = jsonschema_rs.Draft202012Validator(schema, registry=REGISTRY, validate_formats=True)

    def issues(self, args: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every problem with `args`, one issue each: unknown names first, then the schema's errors by path."""
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
        if keyword in ("format", "pattern"):  # every format and pattern in these schemas is a date's
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


_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string", "object": "an object"}


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
class SearchParams:
    rating: int | None = None
    min_rating: float | None = None
    since: str | None = None
    until: str | None = None
    query: str | None = None
    mentions_technician: str | None = None
    mentions_service: str | None = None
    limit: int = DEFAULT_LIMIT


def validate_search_args(args: Mapping[str, Any]) -> SearchParams:
    """Check decoded arguments against the search-parameter schema; all issues at once."""
    issues = SEARCH_PARAMS_VALIDATOR.issues(args)
    bad = {i["path"][0] for i in issues}
    if "since" in args and "until" in args and not bad & {"since", "until"} and args["since"] > args["until"]:
        issues.append(
            issue("since", "date_order", f"since ({args['since']}) is after until ({args['until']})")
        )
    if issues:
        raise InvalidParams(issues)
    return SearchParams(
        **{**args, "limit": int(args.get("limit", DEFAULT_LIMIT))}
    )  # no issues: every name is known


_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


def decode_query_args(multi: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Query-string values to the JSON types the schema declares; repeated names are issues.

    Values that do not look like their type are left as strings, so the schema
    reports them with the same messages as a wrongly typed MCP argument.
    """
    issues, args = [], {}
    for name, values in multi.items():
        declared = SEARCH_PARAMS_SCHEMA["properties"].get(name, {}).get("type")
        if len(values) > 1:
            issues.append(
                issue(name, "repeated_parameter", f"{name} is given {len(values)} times; give it once")
            )
            for value in values:  # and what is wrong with each, so every problem is listed at once
                more = SEARCH_PARAMS_VALIDATOR.issues({name: _decode_value(declared, value)})
                issues += [found for found in more if found not in issues]
            continue
        args[name] = _decode_value(declared, values[0])
    if issues:
        try:
            validate_search_args(args)
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


def find_reviews(dataset: Dataset, params: SearchParams) -> tuple[int, list[int]]:
    """(matched, positions of the first `limit` matches, newest first).

    Each filter is a source of candidate positions; the smallest one is walked
    and every other filter is an O(1) test per candidate, so a selective search
    costs about its smallest filter's size, not the data's.
    """
    lo, hi = dataset.window(params.since, params.until)
    sources = _sources(dataset, params, lo, hi)
    if (
        not sources and params.query is None
    ):  # every review in the window matches, and the window is newest first
        return hi - lo, list(range(lo, min(hi, lo + params.limit)))
    if params.query is not None:
        smallest_other = min((s.size for s in sources), default=hi - lo)
        sources.append(_text_source(dataset, fold_text(params.query), lo, hi, smallest_other))
    sources.sort(key=lambda source: source.size)
    driver, tests = sources[0], [source.passes for source in sources[1:]]
    if not tests and driver.exact:  # one filter: its size is the count
        return driver.size, list(itertools.islice(driver.positions, params.limit))
    found = [pos for pos in driver.positions if all(test(pos) for test in tests)]
    return len(found), found[: params.limit]


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


def _sources(dataset: Dataset, params: SearchParams, lo: int, hi: int) -> list[_Source]:
    """The window-limited sources of the rating, technician and service filters that were given."""
    stars = ALL_RATINGS if params.rating is None else ALL_RATINGS & {params.rating}
    if params.min_rating is not None:
        stars &= set(range(math.ceil(params.min_rating), 6))
    sources = []
    ratings = dataset.ratings
    if stars != ALL_RATINGS and params.mentions_technician is None and params.mentions_service is None:
        spans = [_windowed(dataset.positions_by_rating[star], lo, hi) for star in sorted(stars)]
        sources.append(_Source(sum(map(len, spans)), _merged(spans), lambda pos: ratings[pos] in stars))
    # An entity source is cut from per-rating spans of the allowed ratings only (so a rating plus an entity walks
    # only their common reviews), and its test checks the rating too: no rating source is needed beside it.
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


def _text_source(dataset: Dataset, needle: str, lo: int, hi: int, smallest_other: int) -> _Source:
    """The text filter: a blob scan when the other filters leave many candidates, else a test per text."""
    encoded = utf8(needle)

    def contains(pos: int) -> bool:
        return dataset.text_contains(pos, encoded)

    if smallest_other <= _BLOB_THRESHOLD:  # checking a few texts beats scanning them all
        return _Source(hi - lo + 1, (pos for pos in range(lo, hi) if contains(pos)), contains, exact=False)
    found = [pos for pos in dataset.positions_with_text(needle) if lo <= pos < hi]
    return _Source(len(found), found, contains)


def run_search(dataset: Dataset, args: Mapping[str, Any]) -> tuple[int, list[int]]:
    """Validate JSON-typed arguments and search: the single path for HTTP and MCP."""
    return find_reviews(dataset, validate_search_args(args))


def search_result(dataset: Dataset, matched: int, positions: Sequence[int]) -> dict[str, Any]:
    return {
        "matched": matched,
        "returned": len(positions),
        "reviews": [dataset.reviews[p] for p in positions],
    }


def search_result_json(dataset: Dataset, matched: int, positions: Sequence[int]) -> bytes:
    """The same document as `search_result`, assembled from pre-encoded reviews."""
    reviews = dataset.reviews_json_at(positions)
    return b'{"matched":%d,"returned":%d,"reviews":[%s]}' % (matched, len(positions), reviews)


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


def since_window(dataset: Dataset, since: str) -> tuple[int, int]:
    """Positions [lo, hi) of the reviews on or after `since`: newest first, so lo is always 0."""
    return dataset.window(since, None)


def since_result_parts(
    dataset: Dataset, since: str, count: int, start: int, stop: int
) -> tuple[bytes, memoryview, bytes]:
    """The since answer for the reviews at positions [start, stop) of `count` matching, as three parts:
    a made prefix, a view of the shared /reviews.json body (no copy, whatever its size) and the suffix."""
    return (
        b'{"since":"%s","count":%d,"reviews":[' % (since.encode(), count),
        dataset.reviews_view_range(start, stop),
        b"]}",
    )


def since_result_json(dataset: Dataset, since: str) -> bytes:
    lo, hi = since_window(dataset, since)
    return b"".join(since_result_parts(dataset, since, hi - lo, lo, hi))
