"""A review edited at its source: date_published stays, date_modified and Atom's <updated> follow the edit,
and so do the feed's ETag and body (what the WebSub hub compares to notify)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from werkzeug.test import Client

from reviewsd_app import reviewsd
from reviewsd_app.authoring.presets import render_preset
from reviewsd_app.cli.commands import analyze_main, import_main
from reviewsd_app.ingest.records import review_id

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "import"
ATOM = "{http://www.w3.org/2005/Atom}"


def google_export(tmp_path: Path, name: str, **changes) -> Path:
    doc = json.loads((FIXTURES / "google-api.json").read_text("utf-8"))
    first = doc["reviews"][0]  # AbFvOqmA1: created 2026-03-02, the owner replied 2026-03-03
    first.update(changes)
    path = tmp_path / name
    path.write_text(json.dumps(doc), "utf-8")
    return path


def feeds(data: Path) -> tuple[dict, ET.Element, str]:
    config = reviewsd.Config(data_dir=str(data), state_dir=str(data / "state"), reload_interval=0, hub=False)
    client = Client(reviewsd.create_app(config))
    item_id = review_id("google", "AbFvOqmA1")
    feed = client.get("/api/feed.json")
    item = next(i for i in feed.json["items"] if i["_reviewsd"]["review_id"] == item_id)
    atom = ET.fromstring(client.get("/feed.xml").data)
    entry = next(e for e in atom.iter(f"{ATOM}entry") if e.findtext(f"{ATOM}id").endswith(item_id))
    return item, entry, feed.headers["ETag"]


def test_an_edit_moves_date_modified_and_updated_past_the_reply(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "business.toml").write_text(render_preset("chiropractic"), "utf-8")
    assert import_main(["--data-dir", str(data), str(FIXTURES / "google-api.json")]) == 0
    assert analyze_main(["--data-dir", str(data)]) == 0
    item, entry, etag = feeds(data)
    assert item["date_published"] == "2026-03-02T00:00:00Z"
    assert item["date_modified"] == "2026-03-03T00:00:00Z"  # the reply
    edited = google_export(tmp_path, "edited.json", starRating="FOUR", updateTime="2026-04-09T17:45:12.5Z")
    assert import_main(["--data-dir", str(data), str(edited)]) == 0
    review = json.loads((data / "reviews.json").read_text("utf-8"))["reviews"]
    assert next(r for r in review if r["id"] == review_id("google", "AbFvOqmA1"))["updated_at"] == (
        "2026-04-09T17:45:12Z"
    )
    item, entry, new_etag = feeds(data)
    assert item["date_published"] == "2026-03-02T00:00:00Z" and item["_reviewsd"]["rating"] == 4
    assert item["date_modified"] == "2026-04-09T17:45:12Z"
    assert entry.findtext(f"{ATOM}updated") == "2026-04-09T17:45:12Z"
    assert entry.findtext(f"{ATOM}published") == "2026-03-02T00:00:00Z"
    assert new_etag != etag


def test_the_hub_sees_the_edit_as_a_changed_topic(tmp_path):
    """The hub notifies each topic whose ETag a reload changed (hub.on_reload): the feeds' ETags move."""
    from reviewsd_app.web.snapshot import TOPIC_PATHS

    data = tmp_path / "data"
    data.mkdir()
    (data / "business.toml").write_text(render_preset("chiropractic"), "utf-8")
    assert import_main(["--data-dir", str(data), str(FIXTURES / "google-api.json")]) == 0
    assert analyze_main(["--data-dir", str(data)]) == 0
    config = reviewsd.Config(data_dir=str(data), state_dir=str(data / "state"), reload_interval=0, hub=False)
    store = reviewsd.create_app(config).store
    before = {path: store.current.topic(path).identity.etag for path in TOPIC_PATHS}
    edited = google_export(
        tmp_path, "edited.json", comment="Edited later.", updateTime="2026-04-09T17:45:12Z"
    )
    assert import_main(["--data-dir", str(data), str(edited)]) == 0
    assert store.reload(force=True)
    after = {path: store.current.topic(path).identity.etag for path in TOPIC_PATHS}
    assert {"/api/feed.json", "/feed.xml"} <= {path for path in TOPIC_PATHS if before[path] != after[path]}


def test_an_unedited_review_has_no_updated_at_and_reimport_changes_nothing(tmp_path):
    (tmp_path / "business.toml").write_text(render_preset("chiropractic"), "utf-8")
    assert import_main(["--data-dir", str(tmp_path), str(FIXTURES / "google-api.json")]) == 0
    reviews = {r["id"]: r for r in json.loads((tmp_path / "reviews.json").read_text("utf-8"))["reviews"]}
    assert "updated_at" not in reviews[review_id("google", "AbFvOqmA1")]  # updateTime == createTime
    assert reviews[review_id("google", "AbFvOqmA2")]["updated_at"] == "2026-02-11T08:00:00Z"
    before = (tmp_path / "reviews.json").read_bytes()
    assert import_main(["--data-dir", str(tmp_path), str(FIXTURES / "google-api.json")]) == 0
    assert (tmp_path / "reviews.json").read_bytes() == before


def test_trustpilot_updated_at_and_a_csv_updated_column(tmp_path):
    (tmp_path / "business.toml").write_text(render_preset("chiropractic"), "utf-8")
    csv = tmp_path / "x.csv"
    csv.write_text("author,rating,date,text,id,updated\nAna,4,2026-03-01,Good.,y-1,2026-03-05T10:00:00Z\n")
    assert import_main(["--data-dir", str(tmp_path), str(FIXTURES / "trustpilot.json"), str(csv)]) == 0
    reviews = {r["id"]: r for r in json.loads((tmp_path / "reviews.json").read_text("utf-8"))["reviews"]}
    assert (
        reviews[review_id("trustpilot", "64f1c2a0b1e2d3c4a5b6c7d9")]["updated_at"] == "2026-05-23T07:00:00Z"
    )
    assert "updated_at" not in reviews[review_id("trustpilot", "64f1c2a0b1e2d3c4a5b6c7d8")]  # updatedAt null
    assert reviews[review_id("other", "y-1")]["updated_at"] == "2026-03-05T10:00:00Z"
