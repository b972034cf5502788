"""Search: the indexed implementation against a plain reference filter, and parameter validation."""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import threading
import unicodedata
import weakref
from datetime import date, timedelta

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from support.factories import SERVICES, TECHNICIANS, Spec, make_docs

from reviewsd_app.reviews import search as search_module
from reviewsd_app.reviews.dataset import SCHEMAS, Dataset, fold_name
from reviewsd_app.reviews.ranked import COMPLAINT_WORDS, PRAISE_WORDS
from reviewsd_app.reviews.ranked import words as ranked_words
from reviewsd_app.reviews.search import (
    FILTER_NAMES,
    FILTERS,
    InvalidParams,
    SearchPage,
    SearchParams,
    cursor_after,
    decode_query_args,
    filters_digest,
    find_reviews,
    run_search,
    search_result,
    search_result_json,
    validate_search_args,
)

# ---------------------------------------------------------------- the reference


def reference_search(reviews_doc: dict, insights_doc: dict, params: SearchParams) -> tuple[int, list[str]]:
    """The obvious implementation: filter every review, sort, cut."""
    ordered = reference_order(reviews_doc, insights_doc, params)
    return len(ordered), ordered[: params.limit]


def reference_order(reviews_doc: dict, insights_doc: dict, params: SearchParams) -> list[str]:
    """Every matching review's id, in the order `params.sort` names."""
    techs = insights_doc["entities"]["technicians"]
    services = insights_doc["entities"]["services"]

    def folded(value: str) -> str:  # case, accents, hyphens, underscores and spacing do not count
        plain = "".join(
            c for c in unicodedata.normalize("NFKD", value.casefold()) if not unicodedata.combining(c)
        )
        return " ".join(plain.replace("-", " ").replace("_", " ").split())

    def names(record: dict, keys: tuple[str, ...]) -> list[str]:
        return [folded(record[k]) for k in keys if record.get(k)]

    def entity(name: str, records: list[dict], keys: tuple[str, ...]) -> str | None:
        """Equal to a name: the first such record; else the one record with a name containing it."""
        wanted = folded(name)
        exact = [r["id"] for r in records if wanted in names(r, keys)]
        if exact:
            return exact[0]
        partial = {r["id"] for r in records if wanted and any(wanted in n for n in names(r, keys))}
        return partial.pop() if len(partial) == 1 else None

    def keep(review: dict) -> bool:
        mentions = insights_doc["per_review"][review["id"]]
        if params.rating is not None and review["rating"] != params.rating:
            return False
        if params.min_rating is not None and review["rating"] < params.min_rating:
            return False
        if params.max_rating is not None and review["rating"] > params.max_rating:
            return False
        if params.q is not None:  # any of q's words in the text or the owner's reply
            said = (review["text"] or "") + " " + ((review["owner_reply"] or {}).get("text") or "")
            asked = {folded(w) for w in params.q.split() if len(folded(w)) >= 3}
            named = [  # a person or service a word of q names, that the review mentions
                r["id"]
                for group, keys in (("technicians", ("id", "name", "label")), ("services", ("id", "label")))
                for r in insights_doc["entities"][group]
                if asked & {part for n in names(r, keys) for part in n.split()} and r["id"] in mentions[group]
            ]
            named += [  # an aspect a word of q names, that the analysis found in the review
                a["id"]
                for a in mentions["aspects"]
                for record in insights_doc["aspects"]
                if record["id"] == a["id"]
                and asked & {part for n in names(record, ("id", "label")) for part in n.split()}
            ]
            moods = (
                {"negative"} if asked & COMPLAINT_WORDS else {"positive"} if asked & PRAISE_WORDS else set()
            )
            moody = any(a["sentiment"] in moods for a in mentions["aspects"])  # words of complaint or praise
            if not set(ranked_words(params.q)) & set(ranked_words(said)) and not named and not moody:
                return False
        if params.since is not None and review["date"] < params.since:
            return False
        if params.until is not None and review["date"] > params.until:
            return False
        if params.query is not None and (
            review["text"] is None or params.query.casefold() not in review["text"].casefold()
        ):
            return False
        if params.mentions_technician is not None:
            if (
                entity(params.mentions_technician, techs, ("id", "name", "label"))
                not in mentions["technicians"]
            ):
                return False
        if params.mentions_service is not None:
            if entity(params.mentions_service, services, ("id", "label")) not in mentions["services"]:
                return False
        if params.source is not None and review["source"] != params.source:
            return False
        if params.has_text is not None and (review["text"] is not None) != params.has_text:
            return False
        if params.has_reply is not None and (review["owner_reply"] is not None) != params.has_reply:
            return False
        return True

    matching = sorted(
        (r for r in reviews_doc["reviews"] if keep(r)), key=lambda r: (r["date"], r["id"]), reverse=True
    )
    if params.sort == "oldest":
        matching.reverse()
    elif params.sort in ("highest", "lowest"):  # newest first within a rating (sorted is stable)
        matching.sort(key=lambda r: r["rating"], reverse=params.sort == "highest")
    return [r["id"] for r in matching]


def dataset_of(specs: list[Spec]) -> tuple[Dataset, dict, dict]:
    reviews_doc, insights_doc = make_docs(specs)
    return Dataset.from_documents(reviews_doc, insights_doc, "r", "i"), reviews_doc, insights_doc


# ---------------------------------------------------------------- strategies

WORDS = [
    "back",
    "pain",
    "Patel",
    "PATEL",
    "wait",
    "great",
    "ß",
    "straße",
    "İstanbul",
    "café",
    "😀",
    "\x00",
    " ",
    "a",
]
DAY0 = date(2024, 1, 1)
dates = st.integers(0, 60).map(lambda d: (DAY0 + timedelta(days=d)).isoformat())
texts = st.one_of(
    st.none(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join), st.text(max_size=12)
)
tech_ids = [t["id"] for t in TECHNICIANS]
service_ids = [s["id"] for s in SERVICES]
SOURCES = ["google", "yelp", "facebook"]
specs = st.builds(
    Spec,
    rating=st.integers(1, 5),
    date=dates,
    text=texts,
    technicians=st.lists(st.sampled_from(tech_ids), max_size=2, unique=True),
    services=st.lists(st.sampled_from(service_ids), max_size=2, unique=True),
    reply=st.booleans(),
    extra=st.sampled_from(SOURCES).map(lambda source: {"source": source}),
)
technician_names = st.sampled_from(
    tech_ids
    + [t["name"] for t in TECHNICIANS]
    + [
        "dr. maya  PATEL",
        "DR. SOFÍA RAMÍREZ",
        "nobody",
        "Patel",
        "Sofia Ramirez",
        "Dr. Sofi\u0301a Rami\u0301rez",
        "dr",
        "a",
    ]
)
service_names = st.sampled_from(
    service_ids + [s["label"] for s in SERVICES] + ["MASSAGE THERAPY", "nothing", "massage", "spinal", "e"]
)
params = st.builds(
    SearchParams,
    rating=st.none() | st.integers(1, 5),
    min_rating=st.none() | st.floats(1, 5, allow_nan=False),
    max_rating=st.none() | st.floats(1, 5, allow_nan=False),
    q=st.none() | st.sampled_from(["back pain", "waited", "Straße", "the", "great PATEL"]),
    since=st.none() | dates,
    until=st.none() | dates,
    query=st.none() | st.sampled_from(WORDS) | st.text(min_size=1, max_size=3),
    mentions_technician=st.none() | technician_names,
    mentions_service=st.none() | service_names,
    source=st.none() | st.sampled_from([*SOURCES, "healthgrades"]),
    has_text=st.none() | st.booleans(),
    has_reply=st.none() | st.booleans(),
    sort=st.sampled_from(["newest", "oldest", "highest", "lowest"]),
    limit=st.integers(1, 100),
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(specs, max_size=40), params=params)
@example(specs=[Spec(text="Straße"), Spec(text="STRASSE")], params=SearchParams(query="strasse"))
@example(specs=[Spec(text="a\x00b"), Spec(text="a")], params=SearchParams(query="a\x00b"))
@example(specs=[Spec(text=None)], params=SearchParams(query=" "))
@example(specs=[Spec(date="2024-01-05")], params=SearchParams(since="2024-01-05", until="2024-01-05"))
@example(
    specs=[
        Spec(date="2024-01-01", technicians=["dr-maya-patel"]),
        Spec(date="2024-01-03", technicians=["dr-maya-patel"]),
    ],
    params=SearchParams(since="2024-01-02", mentions_technician="dr-maya-patel"),
)
@example(
    specs=[Spec(date="2024-01-01", text="back"), Spec(date="2024-01-03", text="back")],
    params=SearchParams(until="2024-01-02", query="back"),
)
@example(
    specs=[Spec(date="2024-01-01", text="back"), Spec(date="2024-01-03", text="back")],
    params=SearchParams(since="2024-01-02", query="back"),
)
@example(
    specs=[
        Spec(rating=5, technicians=["dr-maya-patel"]),
        Spec(rating=1, technicians=["dr-maya-patel"]),
        Spec(rating=5),
        Spec(rating=5),
    ],
    params=SearchParams(rating=5, mentions_technician="dr-maya-patel"),
)
@example(
    specs=[
        Spec(rating=1, text="back", technicians=["dr-maya-patel"]),
        Spec(rating=5, text="back", technicians=["dr-maya-patel"]),
        Spec(rating=5, text="neck", technicians=["dr-maya-patel"]),
        Spec(rating=5, text="neck", technicians=["dr-maya-patel"]),
    ],
    params=SearchParams(rating=5, mentions_technician="dr-maya-patel", query="back"),
)
@pytest.mark.parametrize("blob_threshold", [0, search_module._BLOB_THRESHOLD])
def test_indexed_search_equals_reference(
    specs: list[Spec], params: SearchParams, blob_threshold: int
) -> None:
    """With threshold 0 every text query scans the blob; with the default, small sets test each text."""
    dataset, reviews_doc, insights_doc = dataset_of(specs)
    saved, search_module._BLOB_THRESHOLD = search_module._BLOB_THRESHOLD, blob_threshold
    try:
        page = find_reviews(dataset, params)
        matched, positions = page.matched, page.positions
    finally:
        search_module._BLOB_THRESHOLD = saved
    expected_matched, expected_ids = reference_search(reviews_doc, insights_doc, params)
    assert matched == expected_matched
    assert [dataset.reviews[p]["id"] for p in positions] == expected_ids


def test_text_search_uses_the_blob_for_large_candidate_sets() -> None:
    """Above the threshold the blob path runs; it must agree with the reference too."""
    specs = [
        Spec(
            rating=5,
            date="2024-02-01",
            text=f"visit {i} " + ("back pain" if i % 7 == 0 else "fine"),
            technicians=["dr-maya-patel"],
        )
        for i in range(2500)
    ]
    dataset, reviews_doc, insights_doc = dataset_of(specs)
    p = SearchParams(query="BACK PAIN", mentions_technician="Dr. Maya Patel", limit=100)
    page = find_reviews(dataset, p)
    matched, positions = page.matched, page.positions
    assert (matched, [dataset.reviews[i]["id"] for i in positions]) == reference_search(
        reviews_doc, insights_doc, p
    )
    assert matched == len(range(0, 2500, 7))


@given(
    positions=st.lists(st.integers(0, 50), unique=True).map(sorted),
    lo=st.integers(-2, 52),
    width=st.integers(0, 55),
)
def test_a_window_span_reads_what_a_filter_would_keep(positions: list[int], lo: int, width: int) -> None:
    """Spans read a sorted position list in place instead of copying it; same positions, same count."""
    hi = lo + width  # a window is never reversed (Dataset.window)
    span = search_module._windowed(positions, lo, hi)
    expected = [p for p in positions if lo <= p < hi]
    assert (len(span), list(span), list(span)) == (len(expected), expected, expected)  # iterable twice


def test_search_json_is_the_search_result_encoded() -> None:
    dataset, *_ = dataset_of([Spec(rating=r, text=f"t{r} ✓ <&>") for r in (1, 5, 5, 3)])
    page = run_search(dataset, {"min_rating": 3, "limit": 2})
    assert json.loads(search_result_json(dataset, page)) == search_result(dataset, page)
    assert (page.matched, len(page.positions), page.next_cursor is not None) == (3, 2, True)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 7), max_size=10), st.integers(0, 9))
def test_search_json_is_the_result_for_any_positions(positions: list[int], matched: int) -> None:
    """Adjacent positions are read as one slice of the body; any other list review by review."""
    dataset, *_ = dataset_of(
        [Spec(rating=r % 5 + 1, date=f"2025-01-0{r + 1}", text=f"t{r} ✓ <&>") for r in range(8)]
    )
    page = SearchPage(matched, positions, None if matched % 2 else f"c{matched}")
    assert json.loads(search_result_json(dataset, page)) == search_result(dataset, page)


def test_a_window_without_other_filters_is_the_window() -> None:
    dataset, *_ = dataset_of([Spec(rating=r % 5 + 1, date=f"2025-01-{r + 1:02d}") for r in range(12)])
    for args, expected in (
        ({"since": "2025-01-03", "until": "2025-01-07", "limit": 3}, (5, [5, 6, 7])),
        ({"min_rating": 1, "limit": 50}, (12, list(range(12)))),
        ({"since": "2025-02-01"}, (0, [])),
    ):
        page = run_search(dataset, args)
        assert (page.matched, page.positions) == expected


# ---------------------------------------------------------------- validation


def codes(exc: pytest.ExceptionInfo) -> list[tuple[str, str]]:
    return [(i["path"][0], i["code"]) for i in exc.value.issues]


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"rating": 0}, [("rating", "minimum")]),
        ({"rating": 6}, [("rating", "maximum")]),
        ({"rating": 4.5}, [("rating", "type")]),
        ({"rating": "5"}, [("rating", "type")]),
        ({"min_rating": 0.5}, [("min_rating", "minimum")]),
        ({"min_rating": 5.5}, [("min_rating", "maximum")]),
        ({"limit": 0}, [("limit", "minimum")]),
        ({"limit": 101}, [("limit", "maximum")]),
        ({"since": "2026-02-30"}, [("since", "invalid_date")]),
        ({"until": "2026-2-3"}, [("until", "invalid_date")]),
        ({"since": "2025-05-02", "until": "2025-05-01"}, [("since", "date_order")]),
        ({"query": ""}, [("query", "minLength")]),
        ({"query": "x" * 201}, [("query", "maxLength")]),
        ({"mentions_technician": 5}, [("mentions_technician", "type")]),
        ({"colour": "red"}, [("colour", "unknown_parameter")]),
        (
            {"rating": 9, "limit": 0, "since": "2025-13-01", "bogus": 1},
            [
                ("bogus", "unknown_parameter"),
                ("limit", "minimum"),
                ("rating", "maximum"),
                ("since", "invalid_date"),
            ],
        ),
    ],
)
def test_invalid_arguments_list_every_problem(args: dict, expected: list) -> None:
    with pytest.raises(InvalidParams) as exc:
        validate_search_args(args)
    assert sorted(codes(exc)) == sorted(expected)
    for entry in exc.value.issues:
        assert entry["message"] and isinstance(entry["path"], list)


def test_valid_arguments_and_defaults() -> None:
    params = validate_search_args(
        {"rating": 5, "min_rating": 4.5, "since": "2024-02-29", "until": "2024-02-29"}
    )
    assert params == SearchParams(rating=5, min_rating=4.5, since="2024-02-29", until="2024-02-29", limit=20)


@pytest.mark.parametrize(
    "query, expected",
    [
        ({"rating": ["5"], "limit": ["10"]}, {"rating": 5, "limit": 10}),
        ({"min_rating": ["4.5"]}, {"min_rating": 4.5}),
        ({"min_rating": ["4"]}, {"min_rating": 4}),
        ({"rating": [" 5 "]}, {"rating": 5}),
        ({"rating": ["five"]}, {"rating": "five"}),
        ({"query": ["5"]}, {"query": "5"}),
        ({"min_rating": ["nan"]}, {"min_rating": "nan"}),
    ],
)
def test_query_strings_decode_to_schema_types(query: dict, expected: dict) -> None:
    assert decode_query_args(query) == expected


def test_repeated_parameters_are_reported_with_the_other_problems() -> None:
    with pytest.raises(InvalidParams) as exc:
        decode_query_args({"rating": ["5", "4"], "limit": ["0"]})
    assert sorted(codes(exc)) == [("limit", "minimum"), ("rating", "repeated_parameter")]


def test_a_repeated_parameter_still_has_each_value_checked() -> None:
    with pytest.raises(InvalidParams) as exc:
        decode_query_args({"rating": ["9", "0"], "colour": ["red", "blue"]})
    assert sorted(codes(exc)) == [
        ("colour", "repeated_parameter"),
        ("colour", "unknown_parameter"),
        ("rating", "maximum"),
        ("rating", "minimum"),
        ("rating", "repeated_parameter"),
    ]


query_values = st.text(max_size=12) | st.sampled_from(
    ["5", "4.5", "1e0", "2025-01-01", "2025-02-30", "-0", "101"]
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "rating",
                "min_rating",
                "since",
                "until",
                "query",
                "limit",
                "mentions_technician",
                "mentions_service",
                "x",
                "hub.topic",
                "",
            ]
        ),
        st.lists(query_values, min_size=1, max_size=2),
        max_size=5,
    )
)
def test_any_query_string_validates_or_gives_issues(query: dict) -> None:
    """Never an exception other than InvalidParams, and every accepted value is usable."""
    dataset, *_ = dataset_of([Spec(), Spec(rating=1, date="2024-01-02", text=None)])
    try:
        page = run_search(dataset, decode_query_args(query))
        matched, positions = page.matched, page.positions
    except InvalidParams as exc:
        assert exc.issues and all(i["code"] and i["message"] for i in exc.issues)
    else:
        assert 0 <= len(positions) <= matched <= 2


def test_min_rating_fraction_rounds_up() -> None:
    dataset, *_ = dataset_of([Spec(rating=r) for r in (3, 4, 5)])
    matched = find_reviews(dataset, SearchParams(min_rating=3.01)).matched
    assert matched == 2 and math.ceil(3.01) == 4


@given(st.text(max_size=20) | st.text(alphabet=st.characters(max_codepoint=127), max_size=20))
def test_the_ascii_shortcut_of_fold_name_folds_as_the_general_way(text: str) -> None:
    plain = "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))
    assert fold_name(text) == " ".join(plain.replace("-", " ").replace("_", " ").split())


# ---------------------------------------------------------------- sorting and paging


def args_of(params: SearchParams) -> dict:
    """The JSON arguments a client would send for `params`: its fields but the cursor's key, not defaults."""
    return {
        f.name: getattr(params, f.name)
        for f in dataclasses.fields(params)
        if f.name != "after" and (getattr(params, f.name) != f.default or (f.name == "sort" and params.q))
    }  # with q, sort is sent even when newest: q's default order is relevance


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(specs, max_size=40), params=params, page_size=st.integers(1, 7))
@example(
    specs=[Spec(rating=r, date=f"2024-01-0{d}") for r in (5, 3, 5, 1) for d in (1, 2)],
    params=SearchParams(sort="highest"),
    page_size=3,
)
def test_paging_to_the_end_sees_every_review_once_in_order(
    specs: list[Spec], params: SearchParams, page_size: int
) -> None:
    """Following next_cursor from the first page gives the reference's order: nothing twice or missed."""
    assume(params.since is None or params.until is None or params.since <= params.until)  # else a 400
    assume(params.min_rating is None or params.max_rating is None or params.min_rating <= params.max_rating)
    dataset, reviews_doc, insights_doc = dataset_of(specs)
    expected = reference_order(reviews_doc, insights_doc, params)
    args = {**args_of(params), "limit": page_size}
    seen: list[str] = []
    for _ in range(len(expected) + 2):
        page = run_search(dataset, args)
        assert page.matched == len(expected)
        seen += [dataset.ids[p] for p in page.positions]
        if page.next_cursor is None:
            break
        assert len(page.positions) == page_size  # only a full page has a next one
        args = {**args, "cursor": page.next_cursor}
    assert seen == expected


def test_a_cursor_goes_on_across_a_reload_without_repeating() -> None:
    """The cursor holds the last review's sort key: reviews added since before it are not shown again,
    nor are those already listed; those after it come next, even when the last one listed is gone."""
    old = [Spec(rating=5, date=f"2024-01-{d:02d}", id=f"01H{d:023d}") for d in range(1, 11)]
    dataset, *_ = dataset_of(old)
    first = run_search(dataset, {"limit": 4})
    assert [dataset.date_at(p) for p in first.positions] == [f"2024-01-{d:02d}" for d in (10, 9, 8, 7)]
    newer = Spec(rating=5, date="2024-02-01", id="01H" + "9" * 23)  # before the cursor: not listed
    kept = [spec for spec in old if spec.date != "2024-01-07"]  # the page's last review is removed
    reloaded, *_ = dataset_of([newer, *kept])
    second = run_search(reloaded, {"limit": 4, "cursor": first.next_cursor})
    assert [reloaded.date_at(p) for p in second.positions] == [f"2024-01-{d:02d}" for d in (6, 5, 4, 3)]


def test_a_cursor_for_other_filters_or_not_ours_is_refused() -> None:
    dataset, *_ = dataset_of([Spec(rating=r) for r in (1, 2, 3, 4, 5)])
    cursor = run_search(dataset, {"min_rating": 2, "limit": 1, "sort": "lowest"}).next_cursor
    assert run_search(dataset, {"min_rating": 2, "limit": 3, "sort": "lowest", "cursor": cursor}).matched == 4
    for args, code in (
        ({"min_rating": 3, "sort": "lowest", "cursor": cursor}, "cursor_mismatch"),
        ({"min_rating": 2, "cursor": cursor}, "cursor_mismatch"),  # another sort
        ({"cursor": "not-a-cursor"}, "invalid_cursor"),
        ({"cursor": cursor[:-3]}, "invalid_cursor"),
    ):
        with pytest.raises(InvalidParams) as exc:
            run_search(dataset, args)
        assert codes(exc) == [("cursor", code)]


PAGING = ("sort", "cursor", "limit")  # the search parameters that are not filters


def test_the_filters_table_is_the_schemas_filters_and_search_params_fields() -> None:
    """A filter added to the schema but not to FILTERS (or the reverse) fails here: the table feeds the
    cursor's digest, the form and the tool's description."""
    properties = SCHEMAS["search-params.schema.json"]["properties"]
    dataset, *_ = dataset_of([Spec(rating=5)])
    assert set(FILTER_NAMES) == set(properties) - set(PAGING)
    assert len(FILTER_NAMES) == len(set(FILTER_NAMES))
    assert [f.name for f in dataclasses.fields(SearchParams)] == [*FILTER_NAMES, "sort", "limit", "after"]
    for row in FILTERS:
        spec = properties[row.name]
        if row.widget == "select":  # every choice a value the schema accepts
            for value, _ in row.choices:
                aspect = {"aspect": ["x"]} if row.name == "aspect_sentiment" else {}  # dependentRequired
                args = decode_query_args({row.name: [value], **aspect})
                assert validate_search_args(args) is not None, (row.name, value)
        if row.finds == "flag":
            assert spec["type"] == "boolean" and len(getattr(dataset, row.column)) == 1
        if row.finds == "index":
            assert len(getattr(dataset, row.column)) == 1
            assert isinstance(getattr(dataset, f"positions_by_{row.name}"), dict)


def _two_values(spec: dict) -> tuple:
    """Two different values the schema accepts for one filter."""
    if spec["type"] == "boolean":
        return True, False
    if spec["type"] in ("integer", "number"):
        return spec["minimum"], spec["minimum"] + 1
    if spec.get("format") == "date":
        return "2025-01-01", "2025-01-02"
    if "enum" in spec:
        return spec["enum"][0], spec["enum"][1]
    return "a", "b"


# What a filter needs beside it to page: aspect_sentiment an aspect, q an order other than relevance.
_WITH = {"aspect_sentiment": {"aspect": "x"}, "q": {"sort": "newest"}}


@pytest.mark.parametrize(
    "name", sorted(set(SCHEMAS["search-params.schema.json"]["properties"]) - set(PAGING))
)
def test_a_cursor_is_tied_to_every_filters_value(name) -> None:
    """A cursor issued for one value of a filter is refused with another (has_reply was once unchecked:
    a cursor for has_reply=true was taken for has_reply=false)."""
    dataset, *_ = dataset_of([Spec(rating=r) for r in (1, 2, 3, 4, 5)])
    first, second = _two_values(SCHEMAS["search-params.schema.json"]["properties"][name])
    beside = _WITH.get(name, {})
    cursor = cursor_after(dataset, filters_digest({name: first, **beside}), 0)
    validate_search_args({name: first, **beside, "cursor": cursor})  # taken for the same value
    for other in ({name: second, **beside}, beside):
        with pytest.raises(InvalidParams) as exc:
            validate_search_args({**other, "cursor": cursor})
        assert codes(exc) == [("cursor", "cursor_mismatch")]


def test_query_strings_decode_booleans_and_the_sort() -> None:
    assert decode_query_args({"has_text": ["true"], "has_reply": ["false"], "sort": ["oldest"]}) == {
        "has_text": True,
        "has_reply": False,
        "sort": "oldest",
    }
    with pytest.raises(InvalidParams) as exc:
        validate_search_args(decode_query_args({"has_text": ["yes"], "sort": ["best"]}))
    assert codes(exc) == [("has_text", "type"), ("sort", "enum")]


# ---------------------------------------------------------------- ranked search, rating and aspect filters


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(specs, max_size=40), params=params)
def test_a_relevance_page_holds_the_best_of_the_same_matches(specs: list[Spec], params: SearchParams) -> None:
    """sort=relevance finds the matches the plain filter finds, best score first, newest first on a tie."""
    assume(params.q is not None)
    params = dataclasses.replace(params, sort="newest", after=None)
    dataset, reviews_doc, insights_doc = dataset_of(specs)
    expected = reference_order(reviews_doc, insights_doc, params)
    page = find_reviews(dataset, dataclasses.replace(params, sort="relevance"))
    assert page.matched == len(expected) and page.next_cursor is None
    ids = [dataset.ids[p] for p in page.positions]
    assert set(ids) <= set(expected) and len(ids) == min(params.limit, len(expected))
    scores = search_module.ranked.rank(dataset, params.q, dataset.window(params.since, params.until))
    keys = [(-scores[p], p) for p in page.positions]
    assert keys == sorted(keys)
    best_left_out = [
        (-scores[dataset.position_of[i]], dataset.position_of[i]) for i in expected if i not in ids
    ]
    assert not keys or not best_left_out or keys[-1] <= min(best_left_out)


def test_ranked_search_reads_a_sentence_and_finds_the_complaints(bundled_dataset: Dataset) -> None:
    """A sentence of complaint finds reviews with negative aspect mentions first; max_rating bounds them."""
    page = run_search(bundled_dataset, {"q": "What do people complain about most?", "limit": 10})
    per_review = bundled_dataset.insights_doc["per_review"]
    assert page.matched > 0 and len(page.positions) == 10
    for pos in page.positions:
        sentiments = {a["sentiment"] for a in per_review[bundled_dataset.ids[pos]]["aspects"]}
        assert "negative" in sentiments
    low = run_search(bundled_dataset, {"q": "complain", "max_rating": 2, "limit": 100})
    assert all(bundled_dataset.ratings[p] <= 2 for p in low.positions)


def test_the_aspect_filter_counts_what_per_review_says(bundled_dataset: Dataset) -> None:
    per_review = bundled_dataset.insights_doc["per_review"]
    for aspect in bundled_dataset.insights_doc["aspects"][:4]:
        for sentiment in (None, "negative"):
            expected = [
                i
                for i in bundled_dataset.ids
                if any(
                    a["id"] == aspect["id"] and sentiment in (None, a["sentiment"])
                    for a in per_review[i]["aspects"]
                )
                and bundled_dataset.ratings[bundled_dataset.position_of[i]] <= 3
            ]
            args = {"aspect": aspect["label"], "max_rating": 3, "limit": 100}
            if sentiment:
                args["aspect_sentiment"] = sentiment
            page = run_search(bundled_dataset, args)
            assert page.matched == len(expected)
            assert [bundled_dataset.ids[p] for p in page.positions] == expected[:100]


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"min_rating": 4, "max_rating": 2}, [("min_rating", "rating_order")]),
        ({"aspect_sentiment": "negative"}, [("aspect", "required")]),  # the schema's dependentRequired
        ({"sort": "relevance"}, [("sort", "relevance_needs_q")]),
        (  # a cursor of the right shape, for a relevance page: there is no next one
            {"q": "wait", "cursor": "1.0123456789abcdef.5.2024-01-01.01HV6Z9M8Q2W3E4R5T6Y708J9V"},
            [("cursor", "invalid_cursor")],
        ),
    ],
)
def test_rating_order_and_relevance_rules(args: dict, expected: list) -> None:
    with pytest.raises(InvalidParams) as exc:
        validate_search_args(args)
    assert codes(exc) == expected


@pytest.fixture(scope="module")
def bundled_dataset() -> Dataset:
    from pathlib import Path

    from reviewsd_app.reviews.dataset import load_dataset

    return load_dataset(Path(__file__).resolve().parent.parent / "data")


@given(
    st.builds(
        search_module.CursorKey,
        st.text("0123456789abcdef", min_size=16, max_size=16),
        st.integers(1, 5),
        st.dates().map(lambda day: day.isoformat()),
        st.from_regex(r"[0-7][0-9A-HJKMNP-TV-Z]{25}", fullmatch=True),
    )
)
def test_every_issued_cursor_fits_the_schema_and_reads_back(key) -> None:
    # The schema's pattern is what a client (and schemathesis) knows of a cursor: every issued one fits it.
    cursor = search_module.encode_cursor(key)
    assert search_module.SEARCH_PARAMS_VALIDATOR.issues({"cursor": cursor}) == []
    assert search_module.decode_cursor(cursor, key.filters) == key


@pytest.mark.parametrize("cursor", ["0", "", "1.x", "1." + "0" * 300])
def test_a_cursor_of_the_wrong_shape_is_invalid_cursor(cursor: str) -> None:
    issues = search_module.SEARCH_PARAMS_VALIDATOR.issues({"cursor": cursor})
    assert issues == [search_module.invalid_cursor()]


class _Made:
    """What a derived value stands for here: an object a weak reference can follow."""


def _made_once_by_eight_threads(dataset: Dataset) -> _Made:
    made: list[_Made] = []
    got: list[_Made] = []
    start = threading.Barrier(8)

    def make(data: Dataset) -> _Made:
        assert data is dataset
        made.append(_Made())
        return made[-1]

    def ask() -> None:
        start.wait(timeout=10)
        got.append(dataset.derived(make))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(made) == 1 and len(got) == 8 and all(value is made[0] for value in got)
    return made[0]


def test_a_derived_value_is_made_once_whatever_the_threads_and_goes_with_its_dataset() -> None:
    """Dataset.derived, which keeps the ranked search's word index and the since answers' deflate stream."""
    dataset, *_ = dataset_of([Spec(rating=5)])
    kept = weakref.ref(_made_once_by_eight_threads(dataset))
    assert search_module.ranked.word_index(dataset) is search_module.ranked.word_index(dataset)
    assert kept() is not None
    del dataset
    gc.collect()
    assert kept() is None
