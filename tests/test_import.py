"""`reviewsd import`: one fixture per format with its edge cases, merging, errors, and properties."""

from __future__ import annotations

import csv
import datetime as dt
import json
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import check

from reviewsd_app.authoring.presets import render_preset
from reviewsd_app.authoring.profile import parse_profile
from reviewsd_app.cli.commands import analyze_main, import_main
from reviewsd_app.ingest.detect import detect_export, import_hint
from reviewsd_app.ingest.formats import original_text
from reviewsd_app.ingest.records import InputError, display_author, review_id
from reviewsd_app.ingest.run import import_files

ROOT = Path(__file__).resolve().parent.parent

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "import"
GOOGLE_API = FIXTURES / "google-api.json"
TAKEOUT = FIXTURES / "takeout"
TRUSTPILOT = FIXTURES / "trustpilot.json"
CSV_FILE = FIXTURES / "reviews.csv"


def profile_in(zone: str = "America/Los_Angeles", author_display: str = "first-initial"):
    text = render_preset("chiropractic")
    text = text.replace('time_zone = "America/New_York"', f'time_zone = "{zone}"')
    text = text.replace('author_display = "first-initial"', f'author_display = "{author_display}"')
    return parse_profile(text)


def reviews_in(data_dir: Path) -> dict[str, dict]:
    return {r["id"]: r for r in json.loads((data_dir / "reviews.json").read_text("utf-8"))["reviews"]}


def google(review_key: str) -> str:
    return review_id("google", review_key)


def test_google_api_response_edge_cases(tmp_path):
    result = import_files(tmp_path, [GOOGLE_API], profile_in())
    assert (result.new, result.updated, result.unchanged) == (3, 0, 0)
    assert result.summary() == "3 new, 0 updated, 0 unchanged, 1 skipped (1 STAR_RATING_UNSPECIFIED)"
    reviews = reviews_in(tmp_path)
    translated = reviews[google("AbFvOqmA1")]
    assert translated["text"].startswith("La Dra. Patel fue maravillosa")
    assert "Translated" not in translated["text"]
    assert translated["date"] == "2026-03-01"  # 06:30 UTC is the evening before in Los Angeles
    assert translated["owner_reply"] == {"text": "Gracias, Maria!", "date": "2026-03-03"}
    assert translated["author"] == "Maria O." and translated["author_avatar_url"].startswith("https://")
    rating_only = reviews[google("AbFvOqmA2")]
    assert rating_only["text"] is None and rating_only["rating"] == 2 and rating_only["owner_reply"] is None
    assert reviews[google("AbFvOqmA4")]["author"] == "Anonymous"  # isAnonymous hides the name


def test_create_time_becomes_a_date_in_the_profiles_time_zone(tmp_path):
    import_files(tmp_path, [GOOGLE_API], profile_in("Asia/Tokyo"))
    assert reviews_in(tmp_path)[google("AbFvOqmA4")]["date"] == "2026-01-01"  # 23:30 UTC is 08:30 in Tokyo


@pytest.mark.parametrize("as_zip", [False, True])
def test_takeout_folder_or_zip_merges_with_the_api_export(tmp_path, as_zip):
    source = TAKEOUT
    if as_zip:
        source = tmp_path / "takeout.zip"
        with zipfile.ZipFile(source, "w") as archive:
            for path in TAKEOUT.rglob("*.json"):
                archive.write(path, "Takeout/" + str(path.relative_to(TAKEOUT)))
    data = tmp_path / "data"
    data.mkdir()
    import_files(data, [GOOGLE_API], profile_in())
    result = import_files(data, [source], profile_in())
    assert (result.new, result.updated, result.unchanged) == (1, 0, 1)  # AbFvOqmA1 is in both exports
    assert google("AbFvOqmA5") in reviews_in(data)


def test_trustpilot_title_text_reply_and_verification(tmp_path):
    import_files(tmp_path, [TRUSTPILOT], profile_in("Europe/Berlin"))
    reviews = reviews_in(tmp_path)
    first = reviews[review_id("trustpilot", "64f1c2a0b1e2d3c4a5b6c7d8")]
    assert first["text"] == "Great service\n\nThey explained everything and the staff were kind."
    assert first["verified"] is True and first["owner_reply"]["text"] == "Thank you Jonas!"
    assert first["source_url"] == "https://www.trustpilot.com/reviews/64f1c2a0b1e2d3c4a5b6c7d8"
    second = reviews[review_id("trustpilot", "64f1c2a0b1e2d3c4a5b6c7d9")]
    assert second["text"] == "Rude on the phone and they charged me twice."  # the title only repeats it
    assert second["verified"] is False and second["author"] == "kim"


def test_csv_optional_columns_and_defaults(tmp_path):
    import_files(tmp_path, [CSV_FILE], profile_in("America/New_York", "full"))
    by_author = {r["author"]: r for r in reviews_in(tmp_path).values()}
    sam = by_author["Sam Oduya"]
    assert sam["source"] == "yelp" and sam["verified"] is True and sam["owner_reply"]["date"] == "2026-06-02"
    assert by_author["Lee Chen"]["text"] is None and by_author["Lee Chen"]["source"] == "other"
    assert by_author["Ana María Pérez"]["date"] == "2026-06-05"  # 23:30 in UTC-7 is 02:30 in New York


@pytest.mark.parametrize(
    "content, message",
    [
        ("author,rating,date\nA,5,2026-01-01\n", "the header lacks text"),
        ("author,rating,date,text\nA B,6,2026-01-01,ok\n", "line 2: rating '6' is not a whole number"),
        ("author,rating,date,text\nA B,5,2026-02-30,ok\n", "line 2: date '2026-02-30' is not a date on"),
        ("author,rating,date,text,source\nA B,5,2026-01-01,ok,Yelp!\n", "line 2: source 'Yelp!'"),
        ("author,rating,date,text\nA B,5,2026-01-01,ok\nC D,4,2026-01-02\n", "line 3: 3 fields"),
        ('{"hello": "world"}', "JSON, but not a reviews export"),
        ('{"reviews": [{"starRating": "FIVE"}]}', "reviews[0]: not a Google review"),
    ],
)
def test_bad_input_names_file_and_record_and_writes_nothing(tmp_path, content, message):
    data = tmp_path / "data"
    data.mkdir()
    import_files(data, [GOOGLE_API], profile_in())
    before = (data / "reviews.json").read_bytes()
    bad = tmp_path / "bad.csv"
    bad.write_text(content, "utf-8")
    with pytest.raises(InputError) as caught:
        import_files(data, [TRUSTPILOT, bad], profile_in())  # the good file first: still nothing written
    assert str(caught.value).startswith(str(bad)) and message in str(caught.value)
    assert (data / "reviews.json").read_bytes() == before


def test_cli_reports_one_summary_line_and_errors_exit_1(tmp_path, capsys):
    (tmp_path / "business.toml").write_text(render_preset("chiropractic"), "utf-8")
    assert import_main(["--data-dir", str(tmp_path), str(GOOGLE_API)]) == 0
    assert (
        capsys.readouterr()
        .out.strip()
        .endswith("3 new, 0 updated, 0 unchanged, 1 skipped (1 STAR_RATING_UNSPECIFIED)")
    )
    assert import_main(["--data-dir", str(tmp_path), str(tmp_path / "missing.json")]) == 1
    assert "nothing written" in capsys.readouterr().err


def test_import_without_files_rewrites_the_business_block(tmp_path):
    (tmp_path / "business.toml").write_text(render_preset("chiropractic"), "utf-8")
    assert import_main(["--data-dir", str(tmp_path), str(CSV_FILE)]) == 0
    with (tmp_path / "business.toml").open("a", encoding="utf-8") as out:
        out.write('[[service_areas]]\nid = "riverside"\nlabel = "Riverside"\n')
    assert import_main(["--data-dir", str(tmp_path)]) == 0
    business = json.loads((tmp_path / "reviews.json").read_text("utf-8"))["business"]
    assert business["service_areas"][-1] == {"id": "riverside", "label": "Riverside"}
    assert len(reviews_in(tmp_path)) == 3


def test_a_profile_without_business_keeps_the_block_but_lists_its_services(tmp_path):
    (tmp_path / "reviews.json").write_bytes((ROOT / "examples" / "minimal" / "reviews.json").read_bytes())
    (tmp_path / "business.toml").write_text('[[services]]\nid = "sourdough"\nlabel = "Sourdough"\n', "utf-8")
    assert import_main(["--data-dir", str(tmp_path), str(CSV_FILE)]) == 0
    business = json.loads((tmp_path / "reviews.json").read_text("utf-8"))["business"]
    minimal = json.loads((ROOT / "examples" / "minimal" / "reviews.json").read_text("utf-8"))["business"]
    assert business["name"] == minimal["name"] and business["service_areas"] == minimal["service_areas"]
    assert business["services"] == [{"id": "sourdough", "label": "Sourdough", "description": ""}]
    assert len(reviews_in(tmp_path)) == 6


def test_reimport_changes_nothing_not_even_the_file(tmp_path):
    files = [GOOGLE_API, TAKEOUT, TRUSTPILOT, CSV_FILE]
    import_files(tmp_path, files, profile_in())
    before = (tmp_path / "reviews.json").read_bytes()
    result = import_files(tmp_path, files, profile_in())
    assert (result.new, result.updated, result.unchanged) == (0, 0, 9)
    assert (tmp_path / "reviews.json").read_bytes() == before


def _edited(tmp_path: Path, comment: str, update_time: str) -> Path:
    doc = json.loads(GOOGLE_API.read_text("utf-8"))
    doc["reviews"][1].update(comment=comment, updateTime=update_time)
    path = tmp_path / f"edit-{update_time[:10]}.json"
    path.write_text(json.dumps(doc), "utf-8")
    return path


def test_newest_edit_wins_whatever_the_import_order(tmp_path):
    older = _edited(tmp_path, "Okay I guess.", "2026-02-12T00:00:00Z")
    newer = _edited(tmp_path, "Better on second visit.", "2026-03-12T00:00:00Z")
    for name, order in (("a", [older, newer]), ("b", [newer, older])):
        data = tmp_path / name
        data.mkdir()
        for path in order:
            import_files(data, [path], profile_in())
        assert reviews_in(data)[google("AbFvOqmA2")]["text"] == "Better on second visit."
    assert reviews_in(tmp_path / "a") == reviews_in(tmp_path / "b")


def test_detect_export_and_the_hint_for_check(tmp_path):
    assert detect_export(GOOGLE_API) == "google" and detect_export(TRUSTPILOT) == "trustpilot"
    assert detect_export(CSV_FILE) == "csv" and detect_export(TAKEOUT) == "google-takeout"
    assert detect_export(ROOT / "data" / "reviews.json") is None
    assert detect_export(tmp_path / "nothing-here.json") is None
    assert detect_export(json.loads(GOOGLE_API.read_text("utf-8"))) == "google"
    assert detect_export({"reviews": []}) == "google" and detect_export({"reviews": [{"x": 1}]}) is None
    assert import_hint(GOOGLE_API) == (
        f"this looks like a Google Business Profile reviews export; run `reviewsd import {GOOGLE_API}`"
    )


@pytest.mark.parametrize(
    "comment, kept",
    [
        ("(Translated by Google) Great\n\n(Original)\nGenial", "Genial"),
        ("Genial\n\n(Translated by Google)\nGreat", "Genial"),
        ("Plain", "Plain"),
        ("  ", None),
        (None, None),
    ],
)
def test_original_text(comment, kept):
    assert original_text(comment) == kept


def test_author_display_styles():
    assert display_author("Jane van Dyke", "first-initial") == "Jane D."
    assert display_author("Jane van Dyke", "first") == "Jane"
    assert display_author("  Jane   van Dyke ", "full") == "Jane van Dyke"
    assert display_author("Cher", "first-initial") == "Cher" and display_author("", "full") == "Anonymous"


def test_import_then_analyze_passes_check(tmp_path):
    (tmp_path / "business.toml").write_text(render_preset("chiropractic"), "utf-8")
    assert (
        import_main(
            ["--data-dir", str(tmp_path), str(GOOGLE_API), str(TAKEOUT), str(TRUSTPILOT), str(CSV_FILE)]
        )
        == 0
    )
    assert analyze_main(["--data-dir", str(tmp_path)]) == 0
    checked = check(tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


ROWS = st.lists(
    st.tuples(
        st.sampled_from(["Ann Lee", "Bo Li", "Cy Young", "Di Ma"]),
        st.integers(1, 5),
        st.dates(min_value=dt.date(2024, 1, 1), max_value=dt.date(2025, 12, 31)),
        st.sampled_from(
            ["Great care.", "Long wait.", "", "Rude front desk, spotless rooms.", " great  CARE."]
        ),
    ),
    max_size=12,
    unique_by=lambda row: (row[0], row[2], " ".join(row[3].split()).casefold()),  # one file: each review once
)


def _csv(path: Path, rows) -> Path:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["author", "rating", "date", "text"])
        writer.writerows((a, r, d.isoformat(), t) for a, r, d, t in rows)
    return path


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=ROWS, second=ROWS)
def test_import_order_does_not_matter_and_reimport_is_idempotent(tmp_path_factory, first, second):
    work = tmp_path_factory.mktemp("order")
    a, b = _csv(work / "a.csv", first), _csv(work / "b.csv", second)
    results = []
    for name, order in (("ab", [a, b]), ("ba", [b, a])):
        data = work / name
        data.mkdir()
        for path in order:
            import_files(data, [path], profile_in())
        again = import_files(data, [a, b], profile_in())
        assert again.new == again.updated == 0
        results.append(reviews_in(data))
    assert results[0] == results[1]
    # A row vanishes only into the same review: same author, day and words (whitespace and case folded).
    same = {(author, day, " ".join(text.split()).casefold()) for author, _, day, text in first + second}
    assert len(results[0]) == len(same)
