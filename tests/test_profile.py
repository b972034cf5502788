"""business.toml: the schema's key-naming errors, the rules beyond it, the presets, and `reviewsd init`."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.starter import business_filled_in, staff_named

from reviewsd_app.analysis.batch import analyse_reviews
from reviewsd_app.authoring.presets import PRESETS, render_preset
from reviewsd_app.authoring.profile import Profile, ProfileError, load_profile, parse_profile
from reviewsd_app.authoring.schemas import schema_errors
from reviewsd_app.cli.commands import analyze_main, import_main, init_main

ROOT = Path(__file__).resolve().parent.parent

MINIMAL = """
[business]
id = "corner-bakery"
name = "Corner Bakery"
category = "Bakery"
url = "https://bakery.example/"
"""


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_is_a_valid_profile_whose_business_block_reviews_json_accepts(preset):
    profile = parse_profile(render_preset(preset), preset)
    assert profile.aspects
    doc = {
        "business": profile.business_block(),
        "generated_at": "2026-01-01T00:00:00Z",
        "reviews": [],
        "aggregate_rating": {
            "rating_value": 0,
            "review_count": 0,
            "best_rating": 5,
            "worst_rating": 1,
            "distribution": {s: 0 for s in "12345"},
        },
    }
    assert schema_errors("reviews.schema.json", doc) == []


def _uncommented_tables(text: str) -> str:
    """The starter with its commented-out example tables ("# [[practitioners]]", "# [publish]" and the
    "# key = value" lines under each) uncommented, as an owner filling one in would."""
    lines, in_example = [], False
    for line in text.splitlines():
        if line.startswith("# ["):
            in_example = True
        elif not (in_example and line.startswith("# ") and " = " in line):
            in_example = False
        lines.append(line[2:] if in_example else line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_commented_example_in_a_preset_is_valid_once_uncommented(preset):
    text = render_preset(preset)
    # a correction's review id is the one placeholder an owner must replace: with a review id, it is valid
    uncommented = _uncommented_tables(text).replace('"01J..."', '"01JB8ZQ3X5G7T2V9W4Y6R0K1MN"')
    profile = parse_profile(uncommented, preset)
    commented = parse_profile(text, preset)
    # each example that was commented out is now a record of its table
    for table in ("practitioners", "service_areas", "problems", "corrections"):
        examples = text.count(f"# [[{table}]]")
        assert len(getattr(profile, table)) == len(getattr(commented, table)) + examples
    analyse_reviews([], profile)  # analyze accepts it: a correction names one of the preset's own records
    assert commented.publish == {} and profile.publish == {
        "people": False,
        "trend": False,
        "people_label": "Team",
    }


def test_restaurant_preset_has_the_trade_aspects():
    ids = {a["id"] for a in parse_profile(render_preset("restaurant")).aspects}
    assert {"food", "drinks", "service", "ambience", "price", "location"} <= ids


def test_general_preset_has_a_local_business_aspects(tmp_path):
    assert init_main(["--preset", "general", "--data-dir", str(tmp_path)]) == 0
    profile = load_profile(tmp_path)
    assert [a["id"] for a in profile.aspects] == [
        "quality",
        "customer-service",
        "price",
        "wait-time",
        "selection",
        "cleanliness",
        "location",
    ]
    assert profile.faq and all(a["terms"] for a in profile.aspects)


def test_presets_are_the_shipped_toml_files():
    assert set(PRESETS) == {"chiropractic", "dental", "general", "home-services", "restaurant"}
    for name in PRESETS:
        assert render_preset(name).startswith("# business.toml")
        assert f"reviewsd init --preset {name}`" in render_preset(name)


def test_the_bundled_samples_business_toml_is_the_chiropractic_preset_with_its_own_staff_and_towns():
    """The sample's taxonomy is the preset's; its staff and towns are the clinic's own, and the preset's are
    placeholders (a chiropractor's `init` listed the sample's five practitioners and six towns as theirs)."""
    import json

    insights = json.loads((ROOT / "data" / "insights.json").read_text("utf-8"))
    sample = load_profile(ROOT / "data")
    preset = parse_profile(render_preset("chiropractic"))
    for group in ("aspects", "services", "problems", "topics"):
        assert [r["id"] for r in getattr(sample, group)] == [r["id"] for r in getattr(preset, group)], group
    assert [a["terms"] for a in sample.aspects] == [a["terms"] for a in preset.aspects]
    assert [a["id"] for a in sample.aspects] == [a["id"] for a in insights["aspects"]]
    assert [p["id"] for p in sample.practitioners] == [t["id"] for t in insights["entities"]["technicians"]]
    assert [t["id"] for t in sample.topics] == [t["id"] for t in insights["topics"]]
    assert [p["name"] for p in preset.practitioners] == ["Dr. First Last"]
    assert preset.service_areas == () and len(sample.service_areas) == 6


def test_minimal_profile_fills_reviews_json_defaults():
    block = parse_profile(MINIMAL).business_block()
    assert block["telephone"].startswith("+") and block["address"]["country"] == "US"
    assert block["services"] == [] and block["service_areas"] == []


@pytest.mark.parametrize(
    "extra, names",
    [
        ('[business.address]\ncountry = "usa"', "business.address.country"),
        ('[[aspects]]\nid = "Wait Time"\nlabel = "Wait"', "aspects[0].id"),
        ('[[aspects]]\nid = "wait"', "aspects[0]"),
        ('time_zone = "Mars/Olympus"', "time_zone"),
        ('[[topics]]\nid = "a"\nlabel = "A"\n[[topics]]\nid = "a"\nlabel = "B"', "topics[1].id"),
        ('[[faq]]\nquestion = "Q?"\nabout = ["nothing"]', "faq[0].about"),
        ('author_display = "initials"', "author_display"),
        ('[sentiment_overrides]\n"meh" = 9', "sentiment_overrides.meh"),
        ('[[practitioners]]\nid = "jo"\nname = "Jo"\npronouns = "xe"', "practitioners[0].pronouns"),
    ],
)
def test_errors_name_the_key_and_what_is_wrong(extra, names):
    with pytest.raises(ProfileError) as caught:
        # top-level keys go before [business]: after it, TOML puts them in that table
        parse_profile(MINIMAL + extra if extra.startswith("[") else extra + MINIMAL, "business.toml")
    assert f"business.toml: {names}" in str(caught.value)


def test_a_value_not_in_a_list_is_told_every_value_the_list_allows():
    """jsonschema-rs names two options and counts the rest ("or 1 other candidate"): the error names all."""
    with pytest.raises(ProfileError) as caught:
        parse_profile('author_display = "initials"\n' + MINIMAL, "business.toml")
    expected = 'business.toml: author_display: "initials" is not one of "first-initial", "full", "first"'
    assert expected in str(caught.value)


def test_invalid_toml_says_so():
    with pytest.raises(ProfileError, match="not valid TOML"):
        parse_profile("[business\n")


def test_missing_profile_is_empty_unless_required(tmp_path):
    assert load_profile(tmp_path) == Profile()
    with pytest.raises(ProfileError, match="reviewsd init"):
        load_profile(tmp_path, required=True)


def test_init_writes_a_starter_and_refuses_to_overwrite(tmp_path, capsys):
    assert init_main(["--preset", "dental", "--data-dir", str(tmp_path)]) == 0
    written = (tmp_path / "business.toml").read_text("utf-8")
    assert written.startswith("# business.toml") and load_profile(tmp_path).business["category"] == "Dentist"
    (tmp_path / "business.toml").write_text(written + "\n# mine\n", "utf-8")
    assert init_main(["--preset", "restaurant", "--data-dir", str(tmp_path)]) == 1
    assert (tmp_path / "business.toml").read_text("utf-8").endswith("# mine\n")
    assert "not overwritten" in capsys.readouterr().err


def test_the_starters_placeholders_are_said_until_edited(tmp_path, capsys):
    """import warns and check notes (exit 0) while [business] publishes init's name, url, telephone, geo."""
    from reviewsd_app import reviewsd

    assert init_main(["--preset", "restaurant", "--data-dir", str(tmp_path)]) == 0
    assert import_main(["--data-dir", str(tmp_path)]) == 0
    warned = capsys.readouterr().err
    assert "reviewsd import: warning: business.toml: [business] still has the starter's " in warned
    for left in ('name = "My Business"', 'url = "https://example.com/"', "geo = 0.0, 0.0"):
        assert left in warned
    assert analyze_main(["--data-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert reviewsd.check_main(["--data-dir", str(tmp_path)]) == 0
    noted = capsys.readouterr().out
    assert noted.startswith("note: business.toml: [business] still has the starter's name = ")
    assert noted.endswith(": OK\n")

    toml = business_filled_in((tmp_path / "business.toml").read_text("utf-8"))
    (tmp_path / "business.toml").write_text(toml, "utf-8")
    assert import_main(["--data-dir", str(tmp_path)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert reviewsd.check_main(["--data-dir", str(tmp_path)]) == 0
    assert "note" not in capsys.readouterr().out


@pytest.mark.parametrize("preset", ["chiropractic", "dental", "general", "home-services"])
def test_the_starters_placeholder_staff_are_said_until_named(tmp_path, capsys, preset):
    """Every starter but the restaurant's ships one staff member, "First Last" or "Dr. First Last": import
    and check said nothing of it, and insights.json listed them as staff."""
    from reviewsd_app import reviewsd

    assert init_main(["--preset", preset, "--data-dir", str(tmp_path)]) == 0
    toml = business_filled_in((tmp_path / "business.toml").read_text("utf-8"))
    (tmp_path / "business.toml").write_text(toml, "utf-8")
    assert import_main(["--data-dir", str(tmp_path)]) == 0
    warned = capsys.readouterr().err
    assert warned.startswith(
        "reviewsd import: warning: business.toml: [[practitioners]] still has the starter's "
    )
    assert "First Last" in warned and "[business]" not in warned
    assert analyze_main(["--data-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert reviewsd.check_main(["--data-dir", str(tmp_path)]) == 0
    noted = capsys.readouterr().out
    assert noted.startswith("note: business.toml: [[practitioners]] still has the starter's ")
    assert f"then run `reviewsd analyze --data-dir {tmp_path}`" in noted

    (tmp_path / "business.toml").write_text(staff_named(toml, "Ana Reyes"), "utf-8")
    assert import_main(["--data-dir", str(tmp_path)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert analyze_main(["--data-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert reviewsd.check_main(["--data-dir", str(tmp_path)]) == 0
    assert "note" not in capsys.readouterr().out


def test_init_usage_errors_exit_2(tmp_path):
    with pytest.raises(SystemExit) as caught:
        init_main(["--preset", "bakery", "--data-dir", str(tmp_path)])
    assert caught.value.code == 2
