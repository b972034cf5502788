"""`reviewsd check` that guides: an export in place of reviews.json, and fix: hints for the usual mistakes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from support.cli import check

ROOT = Path(__file__).resolve().parent.parent


def test_an_export_in_place_of_reviews_json_is_named_with_the_import_command(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "fixtures" / "import" / "google-api.json", tmp_path / "reviews.json")
    shutil.copy(ROOT / "data" / "insights.json", tmp_path / "insights.json")
    done = check(tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == (
        "reviews.json: this looks like a Google Business Profile reviews export; "
        f"run `reviewsd import {tmp_path / 'reviews.json'}`"
    )


def test_the_usual_mistakes_get_a_fix_hint(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "data", tmp_path, dirs_exist_ok=True)
    doc = json.loads((tmp_path / "reviews.json").read_text("utf-8"))
    doc["business"]["address"]["country"] = "USA"
    doc["business"]["opening_hours"][0]["days"][0] = "Monday"
    doc["business"]["opening_hours"][0]["opens"] = "8am"
    doc["reviews"][0]["id"] = "review-1"
    (tmp_path / "reviews.json").write_text(json.dumps(doc), "utf-8")
    lines = check(tmp_path).stdout.splitlines()
    hints = {
        lines[i].split(": ")[1]: lines[i + 1]
        for i in range(len(lines) - 1)
        if lines[i + 1].startswith("  fix:")
    }
    assert "ISO 3166-1" in hints["$.business.address.country"]
    assert "mo, tu, we, th, fr, sa, su" in hints["$.business.opening_hours[0].days[0]"]
    assert "24-hour HH:MM" in hints["$.business.opening_hours[0].opens"]
    assert "26-character ULID" in hints["$.reviews[0].id"]
