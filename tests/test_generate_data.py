"""tools/generate_data.py: schema validity, cross-file agreement, determinism and the bundled sample.

The cross-file rules are re-implemented here from scratch (not imported from the
generator) so that a bug in the generator's bookkeeping cannot hide itself.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import subprocess
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))

import generate_data  # noqa: E402
from generate_data import generate  # noqa: E402

SCHEMAS = ROOT / "schemas"
DATA = ROOT / "data"
DEFAULT_END = dt.date(2026, 11, 15)
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ENTITY_KINDS = ("technicians", "services", "problems", "service_areas")
HOSTILE = {
    "cdata end": "]]>",
    "script": "<script>alert(1)</script>",
    "escaped ampersand": "&amp;",
    "bold": "<b>bold</b>",
    "U+0001": "\u0001",
    "U+000B": "\u000b",
    "U+001F": "\u001f",
    "NUL": "\u0000",
    "noncharacter U+FFFF": "\uffff",
}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _registry() -> Registry:
    resources = []
    for path in sorted(SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text("utf-8"))
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


@lru_cache(maxsize=None)
def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text("utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(
        schema, registry=_registry(), format_checker=Draft202012Validator.FORMAT_CHECKER
    )


def assert_schema_valid(reviews_doc: dict, insights_doc: dict) -> None:
    for name, doc in (("reviews.schema.json", reviews_doc), ("insights.schema.json", insights_doc)):
        errors = sorted(_validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
        assert not errors, [(name, list(e.absolute_path), e.message[:300]) for e in errors[:5]]


_URI = re.compile(
    r"^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?"
    r"(\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?(#[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$"
)


def assert_uri(value: str) -> None:
    """The jsonschema format checker only checks "uri" when rfc3987 is installed: check here."""
    assert _URI.match(value), value
    parts = urlsplit(value)
    assert parts.scheme in ("http", "https") and parts.hostname, value


def sentiment(rating: int) -> str:
    return "positive" if rating >= 4 else "neutral" if rating == 3 else "negative"


def score(pos: int, neg: int, total: int) -> float:
    return round((pos - neg) / total, 3) if total else 0


def ulid_ms(ulid: str) -> int:
    value = 0
    for ch in ulid:
        value = value * 32 + CROCKFORD.index(ch)
    return value >> 80


def assert_cross_file_rules(reviews_doc: dict, insights_doc: dict) -> None:
    """Every rule the server checks at load time, plus the aggregate and temporal arithmetic."""
    reviews = reviews_doc["reviews"]
    by_id = {r["id"]: r for r in reviews}
    assert len(by_id) == len(reviews), "review ids must be unique"

    # ordering: newest first, date then id descending
    keys = [(r["date"], r["id"]) for r in reviews]
    assert keys == sorted(keys, reverse=True)

    # the ULID timestamp is the review date at some time of day
    for r in reviews:
        day = dt.datetime.fromtimestamp(ulid_ms(r["id"]) / 1000, dt.timezone.utc).date()
        assert day.isoformat() == r["date"], r["id"]
        if r["owner_reply"] is not None:
            assert r["date"] <= r["owner_reply"]["date"] <= reviews_doc["generated_at"][:10]
        for url in (r["author_avatar_url"], r["source_url"]):
            if url is not None:
                assert_uri(url)
    assert_uri(reviews_doc["business"]["url"])

    # aggregate rating
    agg = reviews_doc["aggregate_rating"]
    ratings = [r["rating"] for r in reviews]
    assert agg["review_count"] == len(reviews)
    assert agg["distribution"] == {str(k): ratings.count(k) for k in range(1, 6)}
    assert agg["rating_value"] == (round(sum(ratings) / len(ratings), 2) if ratings else 0)
    assert (agg["best_rating"], agg["worst_rating"]) == (5, 1)

    # rule 1: per_review covers every review
    per_review = insights_doc["per_review"]
    assert set(per_review) == set(by_id)
    assert insights_doc["review_count"] == len(per_review) == len(reviews)

    # rule 3: unique ids per list; per_review ids exist in the lists
    lists = {"aspects": insights_doc["aspects"], "topics": insights_doc["topics"]}
    lists.update({k: insights_doc["entities"][k] for k in ENTITY_KINDS})
    for name, records in lists.items():
        ids = [rec["id"] for rec in records]
        assert len(ids) == len(set(ids)), f"duplicate ids in {name}"
    business = reviews_doc["business"]
    assert [e["id"] for e in insights_doc["entities"]["services"]] == [s["id"] for s in business["services"]]
    assert [e["id"] for e in insights_doc["entities"]["service_areas"]] == [
        a["id"] for a in business["service_areas"]
    ]

    # tallies from per_review
    tallies = {name: {rec["id"]: Counter() for rec in records} for name, records in lists.items()}
    mentioned_in = {name: {rec["id"]: [] for rec in records} for name, records in lists.items()}
    for rid, mentions in per_review.items():
        review_sentiment = sentiment(by_id[rid]["rating"])
        if by_id[rid]["text"] is None:
            assert all(mentions[k] == [] for k in mentions), "rating-only reviews mention nothing"
        aspect_ids = [a["id"] for a in mentions["aspects"]]
        assert len(aspect_ids) == len(set(aspect_ids))
        for a in mentions["aspects"]:
            assert a["id"] in tallies["aspects"], a
            tallies["aspects"][a["id"]][a["sentiment"]] += 1
            mentioned_in["aspects"][a["id"]].append(rid)
        for name in ENTITY_KINDS + ("topics",):
            assert len(mentions[name]) == len(set(mentions[name]))
            for eid in mentions[name]:
                assert eid in tallies[name], (name, eid)
                tallies[name][eid][review_sentiment] += 1
                mentioned_in[name][eid].append(rid)

    # rules 4 and 5: counts, pct and score agree with the tallies
    for name, records in lists.items():
        for rec in records:
            t = tallies[name][rec["id"]]
            pos, neu, neg = t["positive"], t["neutral"], t["negative"]
            total = pos + neu + neg
            assert rec["mention_count"] == total == len(mentioned_in[name][rec["id"]]), (name, rec["id"])
            assert (rec["positive_count"], rec["neutral_count"], rec["negative_count"]) == (pos, neu, neg)
            assert rec["score"] == score(pos, neg, total)
            if name == "aspects":
                assert rec["positive_pct"] == (round(100 * pos / total, 1) if total else 0)
            # rule 2 (and a stronger one): examples exist and do mention the record
            examples = rec["example_review_ids"]
            assert len(examples) <= 3 and len(set(examples)) == len(examples)
            assert set(examples) <= set(mentioned_in[name][rec["id"]])
            assert len(examples) == min(3, total)

    # rule 2: every other referenced id exists
    for item in insights_doc["faq"]:
        assert item["review_ids"] and set(item["review_ids"]) <= set(by_id), item
        assert len(item["review_ids"]) <= 3
    quote = insights_doc["pull_quote"]
    if quote is not None:
        review = by_id[quote["review_id"]]
        assert review["rating"] >= 4 and review["text"] and quote["text"] in review["text"]
        assert len(quote["text"]) <= 240

    # date range
    dates = sorted(r["date"] for r in reviews)
    assert insights_doc["date_range"] == {
        "earliest": dates[0] if dates else None,
        "latest": dates[-1] if dates else None,
    }

    # overall sentiment over all reviews
    overall = insights_doc["overall_sentiment"]
    s = Counter(sentiment(x) for x in ratings)
    n = len(ratings)
    assert overall["score"] == score(s["positive"], s["negative"], n)
    for key in ("positive", "neutral", "negative"):
        assert overall[f"{key}_pct"] == (round(100 * s[key] / n, 1) if n else 0)
    if n:
        assert abs(overall["positive_pct"] + overall["neutral_pct"] + overall["negative_pct"] - 100) <= 0.2

    # temporal: one entry per month from earliest to latest review month
    monthly = insights_doc["temporal"]["monthly"]
    if not reviews:
        assert monthly == []
    else:
        y, m = int(dates[0][:4]), int(dates[0][5:7])
        expected_months = []
        while f"{y:04d}-{m:02d}" <= dates[-1][:7]:
            expected_months.append(f"{y:04d}-{m:02d}")
            y, m = (y + 1, 1) if m == 12 else (y, m + 1)
        assert [e["month"] for e in monthly] == expected_months
        by_month: dict[str, list[int]] = {}
        for r in reviews:
            by_month.setdefault(r["date"][:7], []).append(r["rating"])
        for e in monthly:
            rs = by_month.get(e["month"], [])
            assert e["review_count"] == len(rs)
            if rs:
                ms = Counter(sentiment(x) for x in rs)
                assert e["average_rating"] == round(sum(rs) / len(rs), 2)
                assert e["sentiment_score"] == score(ms["positive"], ms["negative"], len(rs))
            else:
                assert e["average_rating"] is None and e["sentiment_score"] is None
    trend = insights_doc["temporal"]["trend"]
    window = monthly[-trend["window_months"] :]
    pts = [(i, e["average_rating"]) for i, e in enumerate(window) if e["average_rating"] is not None]
    slope = 0.0
    if len(pts) >= 2:
        mx = sum(p[0] for p in pts) / len(pts)
        my = sum(p[1] for p in pts) / len(pts)
        sxx = sum((p[0] - mx) ** 2 for p in pts)
        if sxx:
            slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
    assert math.isclose(trend["slope_per_month"], round(slope, 4), abs_tol=1e-9)
    expected_direction = (
        "stable"
        if abs(trend["slope_per_month"]) < 0.01
        else "improving"
        if trend["slope_per_month"] > 0
        else "declining"
    )
    assert trend["direction"] == expected_direction


def assert_text_matches_mentions(reviews_doc: dict, insights_doc: dict) -> None:
    """Rule 6: a review lists a technician/service/problem/area/topic iff its text names it.

    Technicians are found by surname, everything else by label, case-insensitively.
    """
    entities = insights_doc["entities"]
    needles = {
        "technicians": [(t["id"], t["name"].split()[-1].casefold()) for t in entities["technicians"]],
        "services": [(e["id"], e["label"].casefold()) for e in entities["services"]],
        "problems": [(e["id"], e["label"].casefold()) for e in entities["problems"]],
        "service_areas": [(e["id"], e["label"].casefold()) for e in entities["service_areas"]],
        "topics": [(e["id"], e["label"].casefold()) for e in insights_doc["topics"]],
    }
    phrases = {a["id"]: [p.casefold() for p in a["top_phrases"]] for a in insights_doc["aspects"]}
    seen_phrase = {a: set() for a in phrases}
    for review in reviews_doc["reviews"]:
        mentions = insights_doc["per_review"][review["id"]]
        text = (review["text"] or "").casefold()
        for kind, pairs in needles.items():
            for eid, needle in pairs:
                assert (needle in text) == (eid in mentions[kind]), (kind, eid, review["id"], review["text"])
        for a in mentions["aspects"]:
            seen_phrase[a["id"]].update(p for p in phrases[a["id"]] if p in text)
    for aid, ps in phrases.items():
        assert seen_phrase[aid] == set(ps), f"top phrase of {aid} never appears in its reviews"


def committed_reviews() -> dict:
    return json.loads((DATA / "reviews.json").read_text("utf-8"))


def roundtrip(doc: dict) -> dict:
    return json.loads(generate_data.dumps(doc, pretty=False))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "generate_data.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@lru_cache(maxsize=None)
def cached(n: int, seed: int, end: dt.date = DEFAULT_END, years: float = 3.5) -> tuple[dict, dict]:
    return generate(n, seed, end, years)


# --------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------


def test_committed_sample_matches_the_generator() -> None:
    """The sample's reviews are the generator's; its insights are `reviewsd analyze`'s (test_analyze.py)."""
    reviews_doc = committed_reviews()
    assert reviews_doc == roundtrip(cached(320, 7)[0])


def test_committed_sample_is_readable_utf8_with_indentation() -> None:
    raw = (DATA / "reviews.json").read_bytes()
    assert raw.startswith(b'{\n  "business": {')
    assert "Ramírez".encode("utf-8") in raw  # ensure_ascii=False
    assert raw.endswith(b"}\n")
    assert raw == generate_data.dumps(cached(320, 7)[0], pretty=True)


def test_committed_sample_validates_and_agrees_with_the_generators_insights() -> None:
    reviews_doc = committed_reviews()
    insights_doc = roundtrip(cached(320, 7)[1])
    assert_schema_valid(reviews_doc, insights_doc)
    assert_cross_file_rules(reviews_doc, insights_doc)
    assert_text_matches_mentions(reviews_doc, insights_doc)


@pytest.mark.slow
@pytest.mark.parametrize(
    "n,seed",
    [(0, 7), (1, 7), (1, 99), (5, 7), (5, 2024), (50, 7), (50, 31337), (321, 8), (2000, 7), (2000, 123456)],
)
def test_generated_documents_validate_and_agree(n: int, seed: int) -> None:
    reviews_doc, insights_doc = cached(n, seed)
    reviews_doc, insights_doc = roundtrip(reviews_doc), roundtrip(insights_doc)
    assert len(reviews_doc["reviews"]) == n
    assert_schema_valid(reviews_doc, insights_doc)
    assert_cross_file_rules(reviews_doc, insights_doc)
    assert_text_matches_mentions(reviews_doc, insights_doc)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(0, 60),
    seed=st.integers(-(2**40), 2**40),
    end=st.dates(dt.date(1990, 1, 1), dt.date(2200, 12, 31)),
    years=st.floats(0.01, 15, allow_nan=False),
)
def test_any_arguments_give_valid_agreeing_documents(n: int, seed: int, end: dt.date, years: float) -> None:
    reviews_doc, insights_doc = generate(n, seed, end, years)
    assert_schema_valid(reviews_doc, insights_doc)
    assert_cross_file_rules(reviews_doc, insights_doc)
    assert_text_matches_mentions(reviews_doc, insights_doc)
    start = end - dt.timedelta(days=max(1, round(years * 365.25)) - 1)
    assert all(start.isoformat() <= r["date"] <= end.isoformat() for r in reviews_doc["reviews"])
    assert reviews_doc["generated_at"] == f"{end.isoformat()}T06:00:00Z"


def test_empty_dataset() -> None:
    reviews_doc, insights_doc = cached(0, 7)
    assert reviews_doc["reviews"] == [] and insights_doc["per_review"] == {}
    assert reviews_doc["aggregate_rating"] == {
        "rating_value": 0,
        "review_count": 0,
        "best_rating": 5,
        "worst_rating": 1,
        "distribution": {str(k): 0 for k in range(1, 6)},
    }
    assert insights_doc["date_range"] == {"earliest": None, "latest": None}
    assert insights_doc["pull_quote"] is None and insights_doc["faq"] == []
    assert insights_doc["temporal"]["monthly"] == []
    assert all(a["mention_count"] == 0 and a["score"] == 0 for a in insights_doc["aspects"])


def test_cli_is_deterministic_and_matches_generate(tmp_path: Path) -> None:
    for n in ("320", "2500"):
        a, b = tmp_path / f"a{n}", tmp_path / f"b{n}"
        run_cli("--out", str(a), "--reviews", n, "--seed", "11")
        run_cli("--out", str(b), "--reviews", n, "--seed", "11")
        for name in ("reviews.json", "insights.json"):
            assert (a / name).read_bytes() == (b / name).read_bytes()
        assert sorted(p.name for p in a.iterdir()) == ["insights.json", "reviews.json"]  # no temp files
        reviews_doc, insights_doc = generate(int(n), 11, DEFAULT_END, 3.5)
        pretty = int(n) <= generate_data.PRETTY_MAX_REVIEWS
        assert (a / "reviews.json").read_bytes() == generate_data.dumps(reviews_doc, pretty)
        assert (a / "insights.json").read_bytes() == generate_data.dumps(insights_doc, pretty)
        raw = (a / "reviews.json").read_bytes()
        assert raw.startswith(b'{\n  "business"') == pretty
        assert raw.startswith(b'{"business":{') != pretty


def test_cli_arguments(tmp_path: Path) -> None:
    out = tmp_path / "x"
    run_cli("--out", str(out), "--reviews", "0", "--end-date", "2024-02-29", "--years", "1")
    reviews_doc = json.loads((out / "reviews.json").read_text("utf-8"))
    insights_doc = json.loads((out / "insights.json").read_text("utf-8"))
    assert reviews_doc["generated_at"] == "2024-02-29T06:00:00Z"
    assert_schema_valid(reviews_doc, insights_doc)
    run_cli("--out", str(out), "--reviews", "5", "--seed", "3", "--end-date", "2025-06-30", "--years", "0.5")
    reviews_doc = json.loads((out / "reviews.json").read_text("utf-8"))
    insights_doc = json.loads((out / "insights.json").read_text("utf-8"))
    assert len(reviews_doc["reviews"]) == 5 and reviews_doc["reviews"][0]["date"] == "2025-06-30"
    assert_cross_file_rules(reviews_doc, insights_doc)
    for bad in (["--reviews", "-1"], ["--end-date", "2025-13-01"], ["--years", "0"]):
        result = subprocess.run(
            [sys.executable, str(ROOT / "tools" / "generate_data.py"), "--out", str(out), *bad],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, bad


def test_compact_serialisation_equals_json_dumps() -> None:
    reviews_doc, insights_doc = cached(2500, 5)
    for doc in (reviews_doc, insights_doc):
        expected = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
        assert generate_data.dumps(doc, pretty=False) == expected.encode("utf-8")


def test_seeds_and_dates_change_the_data() -> None:
    a = cached(50, 7)[0]["reviews"]
    b = cached(50, 31337)[0]["reviews"]
    assert [r["id"] for r in a] != [r["id"] for r in b]
    c = generate(50, 7, dt.date(2025, 1, 1), 3.5)[0]["reviews"]
    assert c[0]["date"] == "2025-01-01"


def test_hostile_texts_are_sprinkled_into_big_sets() -> None:
    texts = [r["text"] or "" for r in cached(2000, 7)[0]["reviews"]]
    for label, needle in HOSTILE.items():
        assert any(needle in t for t in texts), label
    assert any(len(t) >= 5000 for t in texts)
    assert any(re.search(r"\r(?!\n)", t) for t in texts)


# --- content of the bundled sample ----------------------------------------


@pytest.fixture(scope="module")
def sample() -> tuple[dict, dict]:
    """The bundled sample: the generator's reviews, and the insights `reviewsd analyze` wrote of them."""
    return committed_reviews(), json.loads((DATA / "insights.json").read_text("utf-8"))


def test_sample_size_and_span(sample) -> None:
    reviews_doc, insights_doc = sample
    reviews = reviews_doc["reviews"]
    assert len(reviews) >= 300
    dates = [dt.date.fromisoformat(r["date"]) for r in reviews]
    assert (max(dates) - min(dates)).days >= 3 * 365
    assert max(dates) == DEFAULT_END
    last_year = sum(d > DEFAULT_END - dt.timedelta(days=365) for d in dates)
    first_year = sum(d < min(dates) + dt.timedelta(days=365) for d in dates)
    assert last_year > 1.5 * first_year  # more reviews recently
    assert Counter(dates).most_common(1)[0][1] >= 2  # some busy days


def test_sample_business(sample) -> None:
    reviews_doc, insights_doc = sample
    business = reviews_doc["business"]
    assert urlsplit(business["url"]).hostname.endswith(".example")
    assert business["telephone"].startswith("+1 ")
    assert [s["id"] for s in business["services"]] == [
        "spinal-adjustment",
        "massage-therapy",
        "spinal-decompression",
        "sports-injury",
        "prenatal-care",
        "pediatric-care",
        "posture-rehab",
    ]
    assert 5 <= len(business["service_areas"]) <= 6
    techs = insights_doc["entities"]["technicians"]
    assert len(techs) == 5
    assert sum(t["name"].startswith("Dr. ") for t in techs) >= 2
    assert any(not t["name"].startswith("Dr. ") for t in techs)
    assert sum(any(ord(c) > 127 for c in t["name"]) for t in techs) >= 1
    assert [a["id"] for a in insights_doc["aspects"]] == [
        "pain-relief",
        "bedside-manner",
        "wait-time",
        "scheduling",
        "billing-insurance",
        "explanation-of-treatment",
        "front-desk",
        "cleanliness",
    ]
    assert all(t["mention_count"] > 0 for t in techs)
    assert all(e["mention_count"] > 0 for e in insights_doc["entities"]["services"])


def test_sample_review_mix(sample) -> None:
    reviews_doc, insights_doc = sample
    reviews = reviews_doc["reviews"]
    texts = [r["text"] for r in reviews if r["text"] is not None]
    assert any(r["text"] is None for r in reviews), "rating-only reviews"
    assert 0.03 <= sum(r["text"] is None for r in reviews) / len(reviews) <= 0.15
    replies = sum(r["owner_reply"] is not None for r in reviews)
    assert 0.15 <= replies / len(reviews) <= 0.45
    assert any(not r["verified"] for r in reviews) and sum(r["verified"] for r in reviews) > len(reviews) / 2
    assert any(r["author_avatar_url"] is None for r in reviews)
    assert any(r["source_url"] is None for r in reviews)
    assert {"google", "yelp", "facebook", "healthgrades"} <= {r["source"] for r in reviews}
    assert Counter(r["source"] for r in reviews).most_common(1)[0][0] == "google"
    ratings = [r["rating"] for r in reviews]
    assert 4.2 <= sum(ratings) / len(ratings) <= 4.7 and set(ratings) == {1, 2, 3, 4, 5}
    assert any(any(ord(c) > 127 for c in t) for t in texts), "non-ASCII"
    assert any(any(ord(c) >= 0x1F300 for c in t) for t in texts), "emoji"
    assert any("“" in t for t in texts), "smart quotes"
    assert any("¡" in t for t in texts), "a Spanish review"
    assert any("Dr. Patel" in t for t in texts) and any("Dr. Maya Patel" in t for t in texts)


def test_sample_hostile_texts(sample) -> None:
    texts = [r["text"] for r in sample[0]["reviews"] if r["text"] is not None]
    for label, needle in HOSTILE.items():
        assert any(needle in t for t in texts), label
    assert any(re.search(r"&(?!amp;)", t) for t in texts), "bare ampersand"
    assert any(re.search(r"\r(?!\n)", t) for t in texts), "lone carriage return"
    assert any(len(t) >= 5000 for t in texts), "very long text"
    assert all(len(t) <= 20000 for t in texts)


def test_sample_insights_content(sample) -> None:
    _, insights_doc = sample
    assert insights_doc["version"] == 1 and insights_doc["model"]
    assert insights_doc["generated_at"].endswith("Z")
    assert 4 <= len(insights_doc["faq"]) <= 6
    assert len(insights_doc["summary"]) > 200
    assert insights_doc["pull_quote"] is not None
    assert all(a["top_phrases"] for a in insights_doc["aspects"])
    assert insights_doc["temporal"]["trend"]["window_months"] == 12
