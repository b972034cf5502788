"""`reviewsd import` as a user and as an attacker try it: no review lost, every bad input one line."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import check
from support.malformed import (
    CSV_CELLS,
    CSV_HEADERS,
    GOOGLE_REVIEWS,
    JSON_VALUES,
    TRUSTPILOT_REVIEWS,
)

from reviewsd_app.authoring.presets import render_preset
from reviewsd_app.authoring.profile import ProfileError, parse_profile
from reviewsd_app.authoring.writelock import data_dir_lock
from reviewsd_app.cli.commands import import_main
from reviewsd_app.ingest.records import InputError
from reviewsd_app.ingest.run import ReadOptions, import_files, parse_source
from reviewsd_app.ingest.sources import export_sources

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "import"
PROFILE = parse_profile(render_preset("chiropractic"))


def reviews_in(data_dir: Path) -> list[dict]:
    return json.loads((data_dir / "reviews.json").read_text("utf-8"))["reviews"]


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir(parents=True)
    (path / "business.toml").write_text(render_preset("chiropractic"), "utf-8")
    return path


# --------------------------------------------------------------------------- identity


def test_two_reviews_by_one_author_on_one_day_are_two_reviews(tmp_path):
    csv = write(
        tmp_path / "yelp.csv",
        "author,rating,date,text\n"
        "Chris P.,5,2026-03-01,Great adjustment.\n"
        "Chris P.,2,2026-03-01,Billing was wrong.\n",
    )
    result = import_files(tmp_path, [csv], PROFILE)
    assert result.new == 2
    assert sorted(r["rating"] for r in reviews_in(tmp_path)) == [2, 5]


def test_reimport_without_the_source_column_finds_the_same_reviews(tmp_path):
    rows = [f"Ann Lee {n},{1 + n % 5},2026-03-0{1 + n},Visit number {n}." for n in range(8)]
    with_source = write(
        tmp_path / "a.csv", "author,rating,date,text,source\n" + "".join(r + ",yelp\n" for r in rows)
    )
    without = write(tmp_path / "b.csv", "author,rating,date,text\n" + "".join(r + "\n" for r in rows))
    assert import_files(tmp_path, [with_source], PROFILE).new == 8
    again = import_files(tmp_path, [without], PROFILE)
    assert (again.new, again.updated, again.unchanged) == (0, 0, 8)
    assert {r["source"] for r in reviews_in(tmp_path)} == {"yelp"}


def test_whitespace_and_case_do_not_make_a_second_review(tmp_path):
    a = write(tmp_path / "a.csv", "author,rating,date,text\nAnn Lee,5,2026-03-01,Great  care.\n")
    b = write(tmp_path / "b.csv", "author,rating,date,text\nann  lee ,5,2026-03-01, great care.\n")
    import_files(tmp_path, [a], PROFILE)
    assert import_files(tmp_path, [b], PROFILE).new == 0


def test_a_reviews_json_from_the_author_and_day_id_keeps_its_ids(tmp_path):
    """Upgrading: a review imported when a CSV row's id was its source, author and day keeps that id."""
    from reviewsd_app.ingest.records import review_id

    csv = write(tmp_path / "a.csv", "author,rating,date,text,source\nAnn Lee,5,2026-03-01,Great care.,yelp\n")
    import_files(tmp_path, [csv], PROFILE)
    doc = json.loads((tmp_path / "reviews.json").read_text("utf-8"))
    old_id = review_id("yelp", "Ann Lee\x1f2026-03-01")
    doc["reviews"][0]["id"] = old_id
    (tmp_path / "reviews.json").write_text(json.dumps(doc), "utf-8")
    result = import_files(tmp_path, [csv], PROFILE)
    assert (result.new, result.unchanged) == (0, 1) and reviews_in(tmp_path)[0]["id"] == old_id


@pytest.mark.parametrize(
    "content, where",
    [
        ("author,rating,date,text,id\nAnn,5,2026-03-01,Good.,y-1\nBo,1,2026-03-02,Bad.,y-1\n", "line 3"),
        ("author,rating,date,text\nAnn,5,2026-03-01,Good.\nAnn,1,2026-03-01,good.\n", "line 3"),
    ],
)
def test_one_file_with_one_review_twice_in_two_versions_is_refused(tmp_path, content, where):
    bad = write(tmp_path / "dup.csv", content)
    with pytest.raises(InputError, match=f"dup.csv: {where}: the same review as line 2"):
        import_files(tmp_path, [bad], PROFILE)
    assert not (tmp_path / "reviews.json").exists()


def test_a_google_export_with_one_review_twice_in_two_versions_is_refused(tmp_path):
    doc = json.loads((FIXTURES / "google-api.json").read_text("utf-8"))
    twin = dict(doc["reviews"][0], starRating="ONE")
    doc["reviews"].append(twin)
    bad = write(tmp_path / "g.json", json.dumps(doc))
    with pytest.raises(InputError, match=r"reviews\[4\]: the same review as reviews\[0\]"):
        import_files(tmp_path, [bad], PROFILE)


# --------------------------------------------------------------------------- the data directory


def test_import_without_a_data_dir_refuses_naming_both_ways(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("REVIEWSD_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "reviews.json").write_text("{}", "utf-8")  # the bundled sample, say
    assert import_main([str(FIXTURES / "reviews.csv")]) == 1
    err = capsys.readouterr().err
    assert "--data-dir DIR" in err and "REVIEWSD_DATA_DIR" in err and "nothing written" in err
    assert (tmp_path / "data" / "reviews.json").read_text("utf-8") == "{}"
    monkeypatch.setenv("REVIEWSD_DATA_DIR", str(data_dir(tmp_path / "env")))
    assert import_main([str(FIXTURES / "reviews.csv")]) == 0


def test_a_second_writer_is_refused_naming_the_first(tmp_path, capsys):
    data = data_dir(tmp_path)
    with data_dir_lock(data, "import"):
        assert import_main(["--data-dir", str(data), str(FIXTURES / "reviews.csv")]) == 1
        err = capsys.readouterr().err
        assert f"is being written by reviewsd import (pid {os.getpid()}" in err and "nothing written" in err
    assert not (data / "reviews.json").exists()
    assert import_main(["--data-dir", str(data), str(FIXTURES / "reviews.csv")]) == 0


def test_the_lock_goes_with_a_killed_process(tmp_path):
    data = data_dir(tmp_path)
    code = (
        "import sys, time; from reviewsd_app.authoring.writelock import data_dir_lock\n"
        f"with data_dir_lock({str(data)!r}, 'import'):\n    print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert import_main(["--data-dir", str(data), str(FIXTURES / "reviews.csv")]) == 1
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert import_main(["--data-dir", str(data), str(FIXTURES / "reviews.csv")]) == 0


def test_temporaries_of_an_interrupted_write_are_removed_by_the_next_command(tmp_path, capsys):
    data = data_dir(tmp_path)
    stale = data / ".reviews.json.k3j4h5.tmp"
    stale.write_bytes(b"x" * 1000)
    keep = data / "notes.tmp"
    keep.write_text("mine", "utf-8")
    assert import_main(["--data-dir", str(data), str(FIXTURES / "reviews.csv")]) == 0
    assert not stale.exists() and keep.exists()
    assert ".reviews.json.k3j4h5.tmp" in capsys.readouterr().out


def test_a_write_over_the_servers_size_limit_is_refused_before_it_happens(tmp_path):
    import_files(tmp_path, [FIXTURES / "reviews.csv"], PROFILE)
    before = (tmp_path / "reviews.json").read_bytes()
    with pytest.raises(InputError, match=r"would be [\d,]+ bytes, over the server's limit of 3,000"):
        import_files(tmp_path, [FIXTURES / "google-api.json"], PROFILE, max_bytes=3000)
    assert (tmp_path / "reviews.json").read_bytes() == before


def test_the_cli_takes_the_servers_size_limit_from_its_variable(tmp_path, monkeypatch, capsys):
    data = data_dir(tmp_path)
    monkeypatch.setenv("REVIEWSD_MAX_DATA_FILE_BYTES", "2000")
    assert import_main(["--data-dir", str(data), str(FIXTURES / "google-api.json")]) == 1
    assert "over the server's limit of 2,000 (--max-data-file-bytes)" in capsys.readouterr().err
    assert not (data / "reviews.json").exists()


def test_import_after_a_service_is_renamed_leaves_a_directory_the_server_loads(tmp_path, capsys):
    from reviewsd_app.cli.commands import analyze_main

    data = data_dir(tmp_path)
    assert import_main(["--data-dir", str(data), str(FIXTURES / "google-api.json")]) == 0
    assert analyze_main(["--data-dir", str(data)]) == 0
    toml = (data / "business.toml").read_text("utf-8")
    first_service = parse_profile(toml).services[0]["id"]
    (data / "business.toml").write_text(toml.replace(f'"{first_service}"', '"renamed-service"'), "utf-8")
    assert import_main(["--data-dir", str(data)]) == 0
    assert "insights.json no longer matches" in capsys.readouterr().out
    checked = check(data)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --------------------------------------------------------------------------- real exports


@pytest.mark.parametrize("delimiter", [";", "\t", ","])
def test_semicolon_and_tab_separated_csv_are_read(tmp_path, delimiter):
    rows = [["author", "rating", "date", "text"], ["Ana", "5", "2026-03-01", "Top; sehr gut, danke"]]
    text = "\n".join(
        delimiter.join(f'"{cell}"' if delimiter in cell else cell for cell in row) for row in rows
    )
    import_files(tmp_path, [write(tmp_path / "x.csv", text + "\n")], PROFILE)
    assert reviews_in(tmp_path)[0]["text"] == "Top; sehr gut, danke"


@pytest.mark.parametrize(
    "header",
    [
        "Name,Stars,Date,Review",
        "Reviewer,Score,Created,Comment",
        "reviewer_name,star_rating,created_at,body",
        "Author,Rating,Review Date,Review Text",
    ],
)
def test_common_header_names_are_read(tmp_path, header):
    import_files(tmp_path, [write(tmp_path / "x.csv", f"{header}\nAna Diaz,4,2026-03-01,Good.\n")], PROFILE)
    assert reviews_in(tmp_path)[0]["rating"] == 4


def test_trustpilots_csv_export_is_the_same_reviews_as_its_json(tmp_path):
    header = (
        "Review ID,Review Created (UTC),Review Consumer User ID,Review Title,Review Content,Review Stars,"
        "Source Of Review,Business Unit ID,Company Reply Date (UTC),Company Reply Content,Consumer Name"
    )
    row = (
        '64f1c2a0b1e2d3c4a5b6c7d8,2026-05-20T09:15:00Z,5f00,Great service,"They explained everything and '
        'the staff were kind.",5,Organic,5f3c,2026-05-21T10:00:00Z,Thank you Jonas!,Jonas Müller'
    )
    export = write(tmp_path / "trustpilot.csv", f"{header}\n{row}\n")
    profile = parse_profile(render_preset("chiropractic").replace("America/New_York", "Europe/Berlin"))
    result = import_files(tmp_path, [export], profile)
    assert result.new == 1 and any("'Source Of Review'" in line for line in result.warnings)
    [review] = reviews_in(tmp_path)
    assert review["source"] == "trustpilot" and review["owner_reply"]["text"] == "Thank you Jonas!"
    again = import_files(tmp_path, [FIXTURES / "trustpilot.json"], profile)
    assert again.new == 1  # the JSON's other review; Jonas's is the one the CSV brought
    assert len(reviews_in(tmp_path)) == 2


def test_columns_no_synonym_names_are_ignored_with_a_warning(tmp_path):
    csv = write(tmp_path / "x.csv", "Name,Stars,Date,Review,Location\nAna Diaz,4,2026-03-01,Good.,Main St\n")
    result = import_files(tmp_path, [csv], PROFILE)
    assert result.new == 1 and any("columns ignored: 'Location'" in line for line in result.warnings)


def test_windows_1252_says_encoding_and_reads_with_it(tmp_path, capsys):
    data = data_dir(tmp_path)
    csv = write(
        tmp_path / "x.csv", "author,rating,date,text\nRenée Müller,5,2026-03-01,Très bien – merci\n", "cp1252"
    )
    assert import_main(["--data-dir", str(data), str(csv)]) == 1
    err = capsys.readouterr().err
    assert "nor UTF-8 text (byte" in err and "--encoding cp1252" in err and err.count("\n") == 1
    assert import_main(["--data-dir", str(data), "--encoding", "cp1252", str(csv)]) == 0
    assert reviews_in(data)[0]["text"] == "Très bien – merci"
    with pytest.raises(SystemExit) as usage:
        import_main(["--data-dir", str(data), "--encoding", "klingon", str(csv)])
    assert usage.value.code == 2


def test_utf16_with_a_bom_is_read(tmp_path):
    text = "author\trating\tdate\ttext\nAna\t5\t2026-03-01\tGood.\n"
    import_files(tmp_path, [write(tmp_path / "x.txt", "\ufeff" + text, "utf-16-le")], PROFILE)
    assert reviews_in(tmp_path)[0]["author"] == "Ana"


def test_date_format_reads_spreadsheet_dates(tmp_path):
    csv = write(tmp_path / "x.csv", "author,rating,date,text\nAna,5,03/09/2024,Good.\n")
    with pytest.raises(InputError, match=r"line 2: date '03/09/2024' is not a date .*--date-format %m/%d/%Y"):
        import_files(tmp_path, [csv], PROFILE)
    import_files(tmp_path, [csv], PROFILE, ReadOptions(date_format="%m/%d/%Y"))
    assert reviews_in(tmp_path)[0]["date"] == "2024-03-09"


def test_source_is_folded_to_lower_case(tmp_path):
    import_files(
        tmp_path,
        [write(tmp_path / "x.csv", "author,rating,date,text,source\nAna,5,2026-03-01,ok,Yelp\n")],
        PROFILE,
    )
    assert reviews_in(tmp_path)[0]["source"] == "yelp"


@pytest.mark.parametrize(
    "written, country, stored",
    [
        ("(812) 555-0142", "US", "+1 812 555 0142"),
        ("812.555.0142", "US", "+1 812 555 0142"),
        ("1-812-555-0142", "US", "+1 812 555 0142"),
        ("020 7946 0958", "GB", "+44 20 7946 0958"),
        ("0049 30 1234567", "DE", "+49 30 1234567"),
        ("+1 (812) 555-0142", "US", "+1 (812) 555-0142"),
    ],
)
def test_telephone_numbers_as_people_write_them(tmp_path, written, country, stored):
    toml = render_preset("chiropractic")
    start = toml.index("telephone = ")
    toml = toml[:start] + f'telephone = "{written}"' + toml[toml.index("\n", start) :]
    toml = toml.replace('country = "US"', f'country = "{country}"')
    (tmp_path / "business.toml").write_text(toml, "utf-8")
    assert import_main(["--data-dir", str(tmp_path), str(FIXTURES / "reviews.csv")]) == 0
    assert json.loads((tmp_path / "reviews.json").read_text("utf-8"))["business"]["telephone"] == stored


def test_an_unreadable_telephone_number_says_how_to_write_it():
    toml = render_preset("chiropractic")
    start = toml.index("telephone = ")
    toml = toml[:start] + 'telephone = "555-0142"' + toml[toml.index("\n", start) :]
    with pytest.raises(ProfileError) as caught:
        parse_profile(toml)
    assert str(caught.value) == (
        "business.toml: business.telephone: '555-0142' is not a telephone number reviewsd can read; "
        'write it with its country code, e.g. "+1 812 555 0142" (or set business.address.country)'
    )


# --------------------------------------------------------------------------- bounds


def test_a_bad_avatar_url_is_dropped_with_a_warning_not_the_file(tmp_path):
    doc = json.loads((FIXTURES / "google-api.json").read_text("utf-8"))
    doc["reviews"][0]["reviewer"]["profilePhotoUrl"] = "https://exa mple.com/a.png"
    result = import_files(tmp_path, [write(tmp_path / "g.json", json.dumps(doc))], PROFILE)
    assert result.new == 3
    assert [line for line in result.warnings if "reviews[0]: author avatar URL" in line]


@pytest.mark.parametrize(
    "value",
    ["5.0", "1e0", "\uff15", " 5 ", "0", "6", "-1", "five"],
)
def test_only_the_integers_1_to_5_are_ratings(tmp_path, value):
    csv = write(tmp_path / "x.csv", f"author,rating,date,text\nAna,{value},2026-03-01,ok\n")
    if value.strip() == "5":
        import_files(tmp_path, [csv], PROFILE)
        return
    with pytest.raises(InputError, match="line 2: rating .* is not a whole number from 1 to 5"):
        import_files(tmp_path, [csv], PROFILE)


@pytest.mark.parametrize("date", ["9999-12-31", "0001-01-01", "1994-12-31", "2999-01-01T00:00:00Z"])
def test_dates_outside_1995_to_tomorrow_are_refused(tmp_path, date):
    csv = write(tmp_path / "x.csv", f"author,rating,date,text\nAna,5,{date},ok\n")
    with pytest.raises(InputError, match="line 2: date .* is outside 1995-01-01 to"):
        import_files(tmp_path, [csv], PROFILE)


@pytest.mark.parametrize(
    "stamp", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00", "9999-12-31T23:59:59Z"]
)
def test_google_timestamps_at_the_ends_of_the_calendar_are_one_line(tmp_path, stamp):
    doc = json.loads((FIXTURES / "google-api.json").read_text("utf-8"))
    doc["reviews"][1]["createTime"] = stamp
    with pytest.raises(
        InputError, match=r"g.json: reviews\[1\]: not a Google review: .*(out of range|outside)"
    ):
        import_files(tmp_path, [write(tmp_path / "g.json", json.dumps(doc))], PROFILE)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"reviewId": 12345}, "reviewId is an integer, not a string"),
        ({"comment": ["Great", "visit"]}, "comment is a list, not a string"),
        ({"reviewer": "Ann"}, "reviewer is a string, not an object"),
        ({"starRating": 5}, "starRating is an integer, not a string"),
        ({"createTime": None}, "createTime is missing"),
    ],
)
def test_a_google_field_of_the_wrong_type_is_one_line(tmp_path, change, message):
    doc = json.loads((FIXTURES / "google-api.json").read_text("utf-8"))
    doc["reviews"][1].update(change)
    with pytest.raises(InputError) as caught:
        import_files(tmp_path, [write(tmp_path / "g.json", json.dumps(doc))], PROFILE)
    assert str(caught.value) == f"{tmp_path / 'g.json'}: reviews[1]: not a Google review: {message}"


def test_a_fifo_and_a_device_are_refused_without_reading(tmp_path):
    fifo = tmp_path / "x.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="x.csv: a FIFO, not a regular file"):
        list(export_sources(fifo))
    takeout = tmp_path / "takeout"
    takeout.mkdir()
    (takeout / "reviews.json").symlink_to("/dev/zero")
    with pytest.raises(InputError, match="reviews.json: a character device, not a regular file"):
        import_files(tmp_path, [takeout], PROFILE)


def test_a_file_over_the_cap_is_refused_before_reading(tmp_path):
    big = write(tmp_path / "big.csv", "author,rating,date,text\n" + "Ana,5,2026-03-01,ok\n" * 100)
    with pytest.raises(InputError, match=r"big.csv: 2,\d\d\d bytes is over the limit of 1,000 bytes"):
        list(export_sources(big, cap=1000))


def test_a_takeout_folder_is_capped_as_a_whole(tmp_path):
    folder = tmp_path / "takeout"
    for n in range(3):
        (folder / f"location{n}").mkdir(parents=True)
        (folder / f"location{n}" / "reviews.json").write_text('{"reviews": []}' + " " * 400, "utf-8")
    assert len(list(export_sources(folder, cap=1300))) == 3
    with pytest.raises(InputError, match=r"takeout: its reviews\*.json hold 1,245 bytes together"):
        list(export_sources(folder, cap=1000))


def _zip(path: Path, content: bytes, method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        archive.writestr("Takeout/Google Business Profile/reviews.json", content)
    return path


def _patch_zip(path: Path, **fields: int) -> None:
    """Rewrite header fields of the only member in both the local and the central header."""
    data = bytearray(path.read_bytes())
    local, central = data.index(b"PK\x03\x04"), data.index(b"PK\x01\x02")
    offsets = {"flags": (6, 8, "<H"), "method": (8, 10, "<H"), "size": (22, 24, "<I")}
    for name, value in fields.items():
        local_at, central_at, fmt = offsets[name]
        struct.pack_into(fmt, data, local + local_at, value)
        struct.pack_into(fmt, data, central + central_at, value)
    path.write_bytes(bytes(data))


def test_a_zip_bomb_is_refused_at_the_cap(tmp_path):
    bomb = _zip(tmp_path / "bomb.zip", b"[" + b" " * 5_000_000 + b"]")
    assert bomb.stat().st_size < 20_000
    with pytest.raises(InputError, match=r"reviews.json: 5,000,002 bytes is over the limit of 1,000,000"):
        list(export_sources(bomb, cap=1_000_000))
    _patch_zip(bomb, size=100)  # a header that lies: zipfile reads what it says, then the CRC fails
    with pytest.raises(InputError, match=r"bomb.zip: cannot be read as a zip archive: Bad CRC-32"):
        list(export_sources(bomb, cap=1_000_000))


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"flags": 1}, "encrypted; unzip it yourself"),
        ({"method": 9}, "compression method 9 is not supported"),
    ],
)
def test_encrypted_and_deflate64_zips_are_one_line(tmp_path, patch, message):
    archive = _zip(tmp_path / "t.zip", b'{"reviews": []}')
    _patch_zip(archive, **patch)
    with pytest.raises(InputError, match=message):
        import_files(tmp_path, [archive], PROFILE)


def test_a_damaged_zip_is_one_line(tmp_path):
    archive = _zip(tmp_path / "t.zip", b'{"reviews": []}' * 1000)
    data = bytearray(archive.read_bytes())
    start = data.index(b"PK\x03\x04") + 80
    data[start : start + 20] = b"\x00" * 20
    archive.write_bytes(bytes(data))
    with pytest.raises(InputError, match="t.zip: cannot be read as a zip archive"):
        import_files(tmp_path, [archive], PROFILE)


def test_a_csv_field_over_128_kb_is_one_line(tmp_path):
    csv = write(tmp_path / "x.csv", 'author,rating,date,text\nAna,5,2026-03-01,"' + "a" * 200_000 + '"\n')
    with pytest.raises(InputError, match="x.csv: line 2: not CSV"):
        import_files(tmp_path, [csv], PROFILE)


# --------------------------------------------------------------------------- malformed records, generated


def _assert_one_line_or_records(name: str, data: bytes) -> None:
    try:
        parse_source(name, data, PROFILE)
    except InputError as error:
        message = str(error)
        assert message.startswith(f"{name}: ") and "\n" not in message and len(message) < 600, message


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reviews=st.lists(GOOGLE_REVIEWS | JSON_VALUES, min_size=1, max_size=3))
def test_malformed_google_records_are_one_line_refusals(reviews):
    reviews[0] = reviews[0] if isinstance(reviews[0], dict) else {}
    reviews[0].setdefault("starRating", "FIVE")  # so the document is detected as Google's
    _assert_one_line_or_records("g.json", json.dumps({"reviews": reviews}).encode())


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reviews=st.lists(TRUSTPILOT_REVIEWS, min_size=1, max_size=3), extra=st.lists(JSON_VALUES, max_size=2))
def test_malformed_trustpilot_records_are_one_line_refusals(reviews, extra):
    _assert_one_line_or_records("t.json", json.dumps({"reviews": reviews + extra}).encode())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=CSV_HEADERS,
    rows=st.lists(st.lists(CSV_CELLS, max_size=9), max_size=4),
    delimiter=st.sampled_from([",", ";", "\t"]),
)
def test_malformed_csv_records_are_one_line_refusals(header, rows, delimiter):
    lines = [delimiter.join(header)] + [delimiter.join(row) for row in rows]
    _assert_one_line_or_records("x.csv", ("\n".join(lines) + "\n").encode())


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_any_bytes_are_records_or_a_one_line_refusal(data):
    _assert_one_line_or_records("x.bin", data)


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(5)), repeat=st.lists(st.integers(0, 4), max_size=3))
def test_import_order_and_repetition_never_change_the_reviews(tmp_path_factory, order, repeat):
    work = tmp_path_factory.mktemp("orders")
    csv = write(
        work / "x.csv", "Name;Stars;Date;Review\nChris P.;5;2026-03-01;Great.\nChris P.;2;2026-03-01;Slow.\n"
    )
    files = [
        FIXTURES / "google-api.json",
        FIXTURES / "takeout",
        FIXTURES / "trustpilot.json",
        FIXTURES / "reviews.csv",
        csv,
    ]
    once = work / "once"
    once.mkdir()
    import_files(once, files, PROFILE)
    data = work / "data"
    data.mkdir()
    for index in [*order, *repeat]:
        import_files(data, [files[index]], PROFILE)
    assert reviews_in(data) == reviews_in(once)


AUTHORS = ["Chris P.", "chris p.", "Chris  P.", "Dana K."]
TEXTS = ["Great visit.", "great visit. ", "Slow service.", "Slow  service.", "Fine"]
DAYS = ["2026-03-01", "2026-03-02"]


def folded(text: str) -> str:
    return " ".join(text.split()).casefold()


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(AUTHORS), st.sampled_from(DAYS), st.sampled_from(TEXTS)), max_size=12
    ),
    files=st.integers(1, 3),
)
def test_a_row_never_vanishes_unless_the_same_review_is_there(tmp_path_factory, rows, files):
    # CSV rows without id or source: each distinct (author, day, words), whitespace and case folded, is one
    # review, whichever files the rows are spread over and however often they repeat; the only other outcome
    # is a refusal that writes nothing.
    work = tmp_path_factory.mktemp("rows")
    data = work / "data"
    data.mkdir()
    paths = []
    for number in range(files):
        lines = ["author,rating,date,text"]
        for author, day, text in rows[number::files]:
            rating = len(folded(text)) % 5 + 1  # the same review always has the same stars: no conflict
            lines.append(f'"{author}",{rating},{day},"{text}"')
        paths.append(write(work / f"part{number}.csv", "\n".join(lines) + "\n"))
    try:
        import_files(data, paths, PROFILE)
    except InputError as refused:  # one file holding one review spelt two ways: said, and nothing written
        assert "the same review as line" in str(refused)
        assert not (data / "reviews.json").exists()
        return
    distinct = {(folded(author), day, folded(text)) for author, day, text in rows}
    stored = reviews_in(data) if (data / "reviews.json").exists() else []
    assert len(stored) == len(distinct)
