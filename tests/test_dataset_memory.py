"""The compact dataset: lazily decoded reviews and mentions, its indexes and bodies, and memory after reloads.

Every check compares against a plain computation from the parsed documents, the way
the dataset used to hold them.
"""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.factories import (
    SPEC_STRATEGY,
    Spec,
    dataset_state,
    make_docs,
    write_docs,
)

from reviewsd_app.reviews import dataset as dataset_module
from reviewsd_app.reviews.dataset import (
    DataError,
    Dataset,
    RawFile,
    dataset_from_files,
    newest_first,
    parse_json,
)
from reviewsd_app.reviews.datastore import DataStore
from reviewsd_app.reviews.problems import mention_tallies

SPECS = [
    Spec(
        rating=5,
        date="2025-03-01",
        text="Dr. Maya Patel fixed my back.",
        technicians=["dr-maya-patel"],
        services=["spinal-adjustment"],
        reply=True,
    ),
    Spec(rating=2, date="2025-03-01", text="Long wait, ßtraße ΣΑΣ 😀.", services=["massage-therapy"]),
    Spec(rating=4, date="2024-12-24", text=None, technicians=["liam-oconnor", "dr-maya-patel"]),
    Spec(rating=1, date="2025-06-30", text="NUL \x00 and \x01 controls, \u2028 and \ufdd0"),
    Spec(rating=3, date="2023-01-05", text="Ends like a boundary },{"),
    Spec(rating=5, date="2025-06-30", text='Ends like an entry key ":{', technicians=["dr-sofia-ramirez"]),
]


def ordered(reviews_doc: dict) -> list[dict]:
    return sorted(reviews_doc["reviews"], key=lambda r: (r["date"], r["id"]), reverse=True)


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def built(specs: list[Spec]) -> tuple[Dataset, dict, dict]:
    reviews_doc, insights_doc = make_docs(specs)
    # What Dataset.from_documents() is given is only read: keep a pristine copy to compare with.
    return (
        Dataset.from_documents(
            json.loads(json.dumps(reviews_doc)), json.loads(json.dumps(insights_doc)), "r", "i"
        ),
        reviews_doc,
        insights_doc,
    )


# ---------------------------------------------------------------- reviews and mentions, decoded on demand


def test_reviews_read_back_exactly_what_the_documents_held() -> None:
    dataset, reviews_doc, _ = built(SPECS)
    expected = ordered(reviews_doc)
    assert len(dataset.reviews) == len(expected)
    assert [dataset.reviews[p] for p in range(len(expected))] == expected
    assert list(dataset.reviews) == expected
    assert dataset.reviews[:2] == tuple(expected[:2]) and dataset.reviews[-2:] == tuple(expected[-2:])
    assert dataset.reviews[::2] == tuple(expected[::2]) and dataset.reviews[3:1] == ()
    assert dataset.reviews[-1] == expected[-1]
    with pytest.raises(IndexError):
        dataset.reviews[len(expected)]
    for review in expected:
        assert dataset.reviews[dataset.position_of[review["id"]]] == review
    assert "nope" not in dataset.position_of


def test_reading_a_review_twice_gives_independent_dicts() -> None:
    dataset, _, _ = built(SPECS[:2])
    first = dataset.reviews[0]
    first["rating"] = 0
    assert dataset.reviews[0]["rating"] != 0


def test_per_review_mentions_read_back_exactly() -> None:
    dataset, _, insights_doc = built(SPECS)
    per_review = dataset.insights_doc["per_review"]
    assert list(per_review) == list(insights_doc["per_review"])
    assert len(per_review) == len(insights_doc["per_review"])
    assert dict(per_review.items()) == insights_doc["per_review"]
    for review_id, mentions in insights_doc["per_review"].items():
        assert review_id in per_review and per_review.get(review_id) == mentions
    assert per_review.get("nope") is None and "nope" not in per_review and 3 not in per_review
    with pytest.raises(KeyError):
        per_review["nope"]


def test_other_document_keys_are_plain_values() -> None:
    dataset, reviews_doc, insights_doc = built(SPECS[:3])
    assert dataset.reviews_doc == {k: v for k, v in reviews_doc.items() if k != "reviews"}
    assert list(dataset.insights_doc) == list(insights_doc)
    assert {k: v for k, v in dataset.insights_doc.items() if k != "per_review"} == {
        k: v for k, v in insights_doc.items() if k != "per_review"
    }


def test_bodies_are_the_compact_encoding_of_the_documents() -> None:
    dataset, reviews_doc, insights_doc = built(SPECS)
    head = {k: v for k, v in reviews_doc.items() if k != "reviews"}
    assert dataset.reviews_document == compact({**head, "reviews": ordered(reviews_doc)})
    assert dataset.insights_document == compact(insights_doc)
    expected = ordered(reviews_doc)
    for pos, review in enumerate(expected):
        assert dataset.review_json(pos) == compact(review)
    assert dataset.reviews_json_range(1, 4) == b",".join(compact(r) for r in expected[1:4])
    assert dataset.reviews_json_range(2, 2) == b""


def test_mention_keys_that_are_not_plain_ids_are_found_too() -> None:
    """Dataset.from_documents() does not validate: ids of any shape still get their per_review slices."""
    reviews_doc, insights_doc = make_docs(SPECS[:3])
    renamed = {r["id"]: f'id "{n}"\n' for n, r in enumerate(reviews_doc["reviews"])}
    for review in reviews_doc["reviews"]:
        review["id"] = renamed[review["id"]]
    insights_doc["per_review"] = {renamed[k]: v for k, v in insights_doc["per_review"].items()}
    dataset = Dataset.from_documents(reviews_doc, insights_doc, "r", "i")
    assert dict(dataset.insights_doc["per_review"].items()) == insights_doc["per_review"]


def test_empty_dataset() -> None:
    dataset, _, _ = built([])
    assert len(dataset.reviews) == 0 and list(dataset.reviews) == [] and dataset.reviews[:50] == ()
    assert dataset.reviews_json_range(0, 0) == b"" and dataset.positions_with_text("x") == []
    assert json.loads(dataset.reviews_document)["reviews"] == []


# ---------------------------------------------------------------- indexes against plain references


def reference_aspect_positions(reviews: list[dict], per_review: dict) -> dict:
    index: dict[tuple[str, str | None], list[int]] = {}
    for pos, review in enumerate(reviews):
        for mention in per_review.get(review["id"], {}).get("aspects", ()):
            for key in ((mention["id"], None), (mention["id"], mention["sentiment"])):
                index.setdefault(key, []).append(pos)
    return index


def reference_entity_positions(reviews: list[dict], per_review: dict, group: str) -> dict:
    index: dict[str, list[int]] = {}
    for pos, review in enumerate(reviews):
        for entity_id in per_review.get(review["id"], {}).get(group, ()):
            index.setdefault(entity_id, []).append(pos)
    return index


def reference_blob(reviews: list[dict]) -> tuple[bytes, list[int]]:
    parts = [r["text"].casefold().encode("utf-8", "surrogatepass") if r["text"] else b"" for r in reviews]
    starts, at = [], 0
    for part in parts:
        starts.append(at)
        at += len(part) + 1
    return b"\xff".join(parts), starts + [at]


def check_indexes(dataset: Dataset, reviews_doc: dict, insights_doc: dict) -> None:
    reviews, per_review = ordered(reviews_doc), insights_doc["per_review"]
    assert dataset.positions_by_aspect == reference_aspect_positions(reviews, per_review)
    for group, index in (
        ("technicians", dataset.positions_by_technician),
        ("services", dataset.positions_by_service),
    ):
        assert index == reference_entity_positions(reviews, per_review, group)
    assert dataset.position_of == {r["id"]: pos for pos, r in enumerate(reviews)}
    assert dataset.dates_ascending == [r["date"] for r in reversed(reviews)]
    assert dataset.ratings == bytes(r["rating"] for r in reviews)
    assert dataset.positions_by_rating == {
        star: [p for p, r in enumerate(reviews) if r["rating"] == star] for star in range(1, 6)
    }
    blob, starts = dataset.text_blob
    assert (blob, list(starts)) == reference_blob(reviews)
    for index, by_rating in (
        (dataset.positions_by_technician, dataset.positions_by_technician_rating),
        (dataset.positions_by_service, dataset.positions_by_service_rating),
    ):
        expected = {
            (key, review["rating"]): []
            for key, positions in index.items()
            for review in map(reviews.__getitem__, positions)
        }
        for (key, star), found in expected.items():
            found.extend(p for p in index[key] if reviews[p]["rating"] == star)
        assert by_rating == expected


def test_indexes_equal_plain_references() -> None:
    dataset, reviews_doc, insights_doc = built(SPECS)
    check_indexes(dataset, reviews_doc, insights_doc)


def test_text_blob_when_texts_hold_control_characters_and_noncharacters() -> None:
    texts = [chr(c) + " x" for c in range(32)] + ["\ufdd0", "\ufdef", "Ǆ ß ﬁ ΣΑΣ"]
    dataset, reviews_doc, insights_doc = built(
        [Spec(text=t, date=f"2025-01-{1 + i % 28:02d}") for i, t in enumerate(texts)]
    )
    check_indexes(dataset, reviews_doc, insights_doc)


def test_text_blob_of_texts_with_lone_surrogates_and_empty_texts() -> None:
    texts = ["\x00", "\ufdd0", "\udfff", "\ufdef", "", "Ǆ ß"]
    blob, starts = dataset_module._text_blob(texts)
    assert (blob, list(starts)) == reference_blob([{"text": t} for t in texts])


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SPEC_STRATEGY, max_size=12))
def test_indexes_equal_plain_references_for_any_reviews(specs: list[Spec]) -> None:
    dataset, reviews_doc, insights_doc = built(specs)
    position_of = {r["id"]: pos for pos, r in enumerate(ordered(reviews_doc))}
    assert dataset_module._Insights.build(insights_doc, position_of).tallies == mention_tallies(insights_doc)
    check_indexes(dataset, reviews_doc, insights_doc)
    assert list(dataset.reviews) == json.loads(json.dumps(ordered(reviews_doc)))
    head = {k: v for k, v in reviews_doc.items() if k != "reviews"}
    assert dataset.reviews_document == compact({**head, "reviews": ordered(reviews_doc)})


# ---------------------------------------------------------------- validation


def raw(name: str, doc: Any) -> RawFile:
    content = json.dumps(doc, ensure_ascii=False).encode()
    return RawFile(name, content, "sha")


def damaged(kind: str) -> tuple[dict, dict]:
    reviews_doc, insights_doc = make_docs(SPECS[:3])
    first, second = reviews_doc["reviews"][0], reviews_doc["reviews"][1]
    if kind == "duplicate-id":
        second["id"] = first["id"]
    elif kind == "reply-before-review":
        first["owner_reply"] = {"text": "Thanks", "date": "2000-01-01"}
    elif kind == "orphan-mention":
        insights_doc["per_review"]["7ZZZZZZZZZZZZZZZZZZZZZZZZZ"] = insights_doc["per_review"][first["id"]]
    elif kind == "unknown-technician":
        insights_doc["per_review"][first["id"]]["technicians"].append("dr-nobody")
    elif kind == "count":
        insights_doc["aspects"][0]["mention_count"] += 1
    elif kind == "aggregate":
        reviews_doc["aggregate_rating"]["review_count"] += 1
    return reviews_doc, insights_doc


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("duplicate-id", [("reviews.json", "$.reviews[1].id", "unique-id")]),
        ("reply-before-review", [("reviews.json", "$.reviews[0].owner_reply.date", "reply-after-review")]),
        (
            "orphan-mention",
            [("insights.json", '$.per_review["7ZZZZZZZZZZZZZZZZZZZZZZZZZ"]', "review-exists")],
        ),
        ("count", [("insights.json", "$.aspects[0].mention_count", "counts-agree")] * 2),
        ("aggregate", [("reviews.json", "$.aggregate_rating.review_count", "aggregate-agrees")]),
    ],
)
def test_loading_reports_each_cross_file_problem_with_its_place(kind: str, expected: list) -> None:
    reviews_doc, insights_doc = damaged(kind)
    with pytest.raises(DataError) as refused:
        dataset_from_files(raw("reviews.json", reviews_doc), raw("insights.json", insights_doc))
    found = [(p.file, p.path, p.rule) for p in refused.value.problems]
    assert found[: len(expected)] == expected, found


def test_an_unknown_technician_is_named_where_it_is_mentioned() -> None:
    reviews_doc, insights_doc = damaged("unknown-technician")
    with pytest.raises(DataError) as refused:
        dataset_from_files(raw("reviews.json", reviews_doc), raw("insights.json", insights_doc))
    assert (
        "insights.json",
        f'$.per_review["{reviews_doc["reviews"][0]["id"]}"].technicians',
        "known-id",
        "dr-nobody is not listed in $.entities.technicians",
    ) in [(p.file, p.path, p.rule, p.message) for p in refused.value.problems]


def test_a_reload_frees_the_replaced_data(tmp_path: Path) -> None:
    write_docs(tmp_path, *make_docs(SPECS[:3]))
    store: DataStore[Dataset] = DataStore(tmp_path, lambda dataset: dataset)
    first = weakref.ref(store.current)
    write_docs(tmp_path, *make_docs(SPECS[1:]))
    assert store.reload(force=True)
    assert first() is None  # nothing but the store held it, and the store let it go during reload()
    assert len(store.current.reviews) == len(SPECS) - 1


def served_raws(specs: list[Spec]) -> tuple[RawFile, RawFile]:
    reviews_doc, insights_doc = make_docs(specs)
    return raw("reviews.json", reviews_doc), raw("insights.json", insights_doc)


def test_a_dataset_holds_no_parsed_review_dicts() -> None:
    marker = "held-or-not 7c1e"  # only this test's reviews carry it
    specs = [Spec(text=f"{marker} {n}", date=f"2025-02-{n + 1:02d}", reply=True) for n in range(5)]
    dataset = dataset_from_files(*served_raws(specs))
    gc.collect()
    live = [
        o
        for o in gc.get_objects()
        if isinstance(o, dict) and isinstance(o.get("text"), str) and o["text"].startswith(marker)
    ]
    assert live == []
    assert dataset.reviews[0]["text"] == f"{marker} 4"  # they come back on demand


def test_a_rating_written_as_a_whole_float_counts_as_that_rating() -> None:
    """JSON Schema's integer admits 5.0; the rating index holds it as 5."""
    reviews_doc, insights_doc = make_docs(SPECS)
    reviews_doc["reviews"][0]["rating"] = float(reviews_doc["reviews"][0]["rating"])
    dataset = dataset_from_files(raw("reviews.json", reviews_doc), raw("insights.json", insights_doc))
    position = dataset.position_of[reviews_doc["reviews"][0]["id"]]
    assert dataset.ratings[position] == reviews_doc["reviews"][0]["rating"]
    assert position in dataset.positions_by_rating[int(reviews_doc["reviews"][0]["rating"])]


KEYED = st.lists(
    st.fixed_dictionaries(
        {
            "date": st.sampled_from(["2025-01-01", "2025-01-02"]),
            "id": st.sampled_from(["A", "B", "C"]),
            "n": st.integers(),
        }
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(KEYED, st.booleans())
def test_newest_first_is_the_stable_sort(reviews: list, presorted: bool) -> None:
    if presorted:
        reviews = sorted(reviews, key=lambda r: (r["date"], r["id"]), reverse=True)
    expected = sorted(reviews, key=lambda r: (r["date"], r["id"]), reverse=True)
    assert [id(r) for r in newest_first(reviews)] == [id(r) for r in expected]


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"a": "half', "not valid JSON (Unterminated string starting at line 1 column 7); half-written?"),
        (b'{"a": 1', "not valid JSON (Expecting ',' delimiter at line 1 column 8); half-written?"),
    ],
)
def test_a_json_error_names_its_place_once(content: bytes, message: str) -> None:
    with pytest.raises(DataError) as refused:
        parse_json(RawFile("insights.json", content, "sha"))
    assert [p.message for p in refused.value.problems] == [message]


RECORD_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(RECORD_VALUES)
def test_records_encode_as_every_other_body(value: Any) -> None:
    """Reviews and per_review entries (strings, small integers, booleans, null) go through orjson: the same
    bytes."""
    try:
        expected = dataset_module.encode_json(value)
    except UnicodeEncodeError:  # a lone surrogate: refused either way
        with pytest.raises(TypeError):
            dataset_module.encode_record(value)
        return
    assert dataset_module.encode_record(value) == expected


@pytest.mark.parametrize("text", ["\x00\x01\x1f\x7f", "\u2028\u2029", '"\\/', "😀 ßΣ", "\ufeff\uffff"])
def test_records_with_texts_that_need_escapes_encode_alike(text: str) -> None:
    review = make_docs([Spec(text=text)])[0]["reviews"][0]
    assert dataset_module.encode_record(review) == compact(review)


@pytest.mark.parametrize("n", [0, 1, 499, 500, 501, 1000, 1001])
def test_fragments_are_joined_and_found_across_batches(n: int) -> None:
    fragments = [str(i).encode() * (i % 3) for i in range(n)]
    body, offsets = dataset_module._joined(b"[", iter(fragments), b"]")
    assert body == b"[" + b",".join(fragments) + b"]" and len(offsets) == n + 1
    assert [body[offsets[i] : offsets[i + 1] - 1] for i in range(n)] == fragments


def test_a_load_from_files_holds_what_a_build_from_the_documents_holds() -> None:
    reviews_doc, insights_doc = make_docs(SPECS)
    loaded = dataset_from_files(raw("reviews.json", reviews_doc), raw("insights.json", insights_doc))
    assert dataset_state(loaded) == dataset_state(
        Dataset.from_documents(reviews_doc, insights_doc, "sha", "sha")
    )


def test_a_parse_pauses_the_collector_and_leaves_it_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real_loads = dataset_module.orjson.loads

    def loads(content: bytes) -> Any:
        seen.append(gc.isenabled())
        return real_loads(content)

    monkeypatch.setattr(dataset_module.orjson, "loads", loads)
    assert parse_json(RawFile("reviews.json", b'{"a": [1]}', "")) == {"a": [1]}
    assert seen == [False] and gc.isenabled()
    with pytest.raises(DataError):
        parse_json(RawFile("reviews.json", b'{"a": ', ""))
    assert gc.isenabled()
    gc.disable()
    try:
        parse_json(RawFile("reviews.json", b"[]", ""))
        assert not gc.isenabled()  # off before, off after: not turned on behind its owner's back
    finally:
        gc.enable()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="abeé ", max_size=6), max_size=30),
    st.text(alphabet="abeé", min_size=1, max_size=2),
    st.integers(1, 5),
)
def test_positions_with_text_in_chunks_equal_a_plain_scan(texts: list[str], needle: str, chunk: int) -> None:
    """Chunks of a few texts, so that sparse and dense chunks (a walk of the blob, a test of each text)
    follow each other at every boundary."""
    holder = SimpleNamespace(text_blob=dataset_module._text_blob(texts))
    saved = dataset_module._TEXT_CHUNK
    dataset_module._TEXT_CHUNK = chunk
    try:
        found = dataset_module.Dataset.positions_with_text(holder, needle)  # type: ignore[arg-type]
    finally:
        dataset_module._TEXT_CHUNK = saved
    folded = dataset_module.fold_text(needle)
    assert found == [pos for pos, text in enumerate(texts) if folded in dataset_module.fold_text(text)]
