"""What `reviewsd check` sees beside the two files' own rules: business.toml, and insights that no longer
describe the reviews (fewer or other reviews, or made before reviews.json was last written)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..analysis.matcher import GROUP_SOURCES
from ..authoring.presets import placeholder_warning
from ..authoring.profile import PROFILE_FILE, Profile, ProfileError, load_profile
from ..reviews.problems import INSIGHTS_FILE, REVIEWS_FILE, Problem


def profile_problems(data_dir: Path) -> list[Problem]:
    """business.toml's problems, as `import` and `analyze` would refuse it (none when it is absent)."""
    try:
        profile = load_profile(Path(data_dir))
    except ProfileError as error:
        problems = []
        for line in str(error).splitlines():
            _, _, rest = line.partition(f"{PROFILE_FILE}: ")
            key, _, message = (rest or line).partition(": ")
            problems.append(Problem(PROFILE_FILE, key, "profile", message or key))
        return problems
    return _analysis_problems(data_dir, profile)


def _analysis_problems(data_dir: Path, profile: Profile) -> list[Problem]:
    """What analyze refuses in a profile that loads: corrections naming an id the profile lacks, and
    services or areas reviews.json's business block does not list yet (import rewrites it)."""
    problems = []
    known = {group: {record["id"] for record in getattr(profile, source)} for group, source in GROUP_SOURCES}
    for index, correction in enumerate(profile.corrections):
        if correction["id"] not in known[correction["group"]]:
            message = f"{correction['id']!r} is not one of the profile's {correction['group']}"
            problems.append(Problem(PROFILE_FILE, f"corrections[{index}]", "profile", message))
    try:
        business = orjson.loads((Path(data_dir) / REVIEWS_FILE).read_bytes())["business"]
        listed = {item["id"] for item in business["services"] + business["service_areas"]}
    except (OSError, ValueError, KeyError, TypeError):
        return problems  # reviews.json's own problems are reported beside these
    missing = [item["id"] for item in profile.services + profile.service_areas if item["id"] not in listed]
    if missing:
        problems.append(
            Problem(
                PROFILE_FILE,
                "services",
                "profile",
                f"reviews.json's business lacks {', '.join(missing)}: run `reviewsd import --data-dir "
                f"{data_dir}` (with no files it rewrites the business block)",
            )
        )
    return problems


def _analyze(data_dir: Path) -> str:
    return f"run `reviewsd analyze --data-dir {data_dir}`"


def missing_insights(data_dir: Path) -> list[Problem]:
    """insights.json absent beside a reviews.json: what the server does then, and the command."""
    if (Path(data_dir) / INSIGHTS_FILE).exists() or not (Path(data_dir) / REVIEWS_FILE).exists():
        return []
    return [
        Problem(
            INSIGHTS_FILE,
            "$",
            "missing",
            "not found: the server serves insights derived from reviews.json alone (counts, ratings, "
            f"trend); {_analyze(data_dir)}",
        )
    ]


def stale_insights(
    data_dir: Path, reviews_doc: Any, insights_doc: Any, hidden: frozenset[str]
) -> list[Problem]:
    """Insights made from other reviews than reviews.json holds, or before it was last written."""
    reviews = {review["id"] for review in reviews_doc["reviews"]} - hidden
    analysed = set(insights_doc["per_review"])
    problems = []
    if reviews - analysed:
        problems.append(
            Problem(
                INSIGHTS_FILE,
                "$.per_review",
                "stale",
                f"made from {insights_doc['review_count']} reviews; reviews.json has {len(reviews)} "
                f"({len(reviews - analysed)} not analysed); {_analyze(data_dir)}",
            )
        )
    elif insights_doc["generated_at"] < reviews_doc["generated_at"]:  # both RFC 3339 UTC: text order is time
        problems.append(
            Problem(
                INSIGHTS_FILE,
                "$.generated_at",
                "stale",
                f"{insights_doc['generated_at']} is older than reviews.json's {reviews_doc['generated_at']}: "
                f"reviews changed since the analysis; {_analyze(data_dir)}",
            )
        )
    return problems


def freshness_problems(data_dir: Path) -> list[Problem]:
    """For a directory whose files pass: business.toml, and insights that no longer match the reviews."""
    data_dir = Path(data_dir)
    problems = profile_problems(data_dir)
    hidden = frozenset()
    if not problems:
        hidden = load_profile(data_dir).hide_reviews
    try:
        reviews_doc = orjson.loads((data_dir / REVIEWS_FILE).read_bytes())
        insights_doc = orjson.loads((data_dir / INSIGHTS_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return problems  # check_data_dir has said why
    return problems + stale_insights(data_dir, reviews_doc, insights_doc, hidden)


def placeholder_note(data_dir: Path) -> str | None:
    """The starter's placeholders business.toml still publishes: said by check, never a refusal."""
    try:
        profile = load_profile(Path(data_dir))
    except ProfileError:
        return None  # profile_problems says why
    return placeholder_warning(profile, data_dir)
