"""business.toml: read with tomllib, checked against schemas/business.schema.json, returned as a Profile."""

from __future__ import annotations

import re
import tomllib
import zoneinfo
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Mapping

import jsonschema_rs

from ..reviews.dataset import SCHEMAS
from ..reviews.validation import schema_message
from .telephone import international

PROFILE_FILE = "business.toml"
# Far above any real business.toml (the presets are 5 to 15 KB; thousands of terms stay under 200 KB), and far
# below what hurts: tomllib's dotted keys cost time and memory quadratic in their depth (an 80 KB file of
# "a.a.a..." took 6 GB), and nested arrays or inline tables end in a RecursionError.
MAX_PROFILE_CHARS = 1_000_000
MAX_KEY_PARTS = 8
_DEEP_KEY = re.compile(
    r"(?<![A-Za-z0-9_-])(?:(?:[A-Za-z0-9_-]++|\"[^\"\n]*+\"|'[^'\n]*+')[ \t]*+\.[ \t]*+){%d}" % MAX_KEY_PARTS
)
DEFAULT_TIME_ZONE = "UTC"
# reviews.json requires these business keys; a profile may leave them out, and gets these values.
BUSINESS_DEFAULTS: dict[str, Any] = {
    "description": "",
    "telephone": "+1 000 000 0000",
    "address": {"street_address": "", "locality": "", "region": "", "postal_code": "", "country": "US"},
    "geo": {"latitude": 0, "longitude": 0},
    "opening_hours": [],
}


class ProfileError(ValueError):
    """business.toml cannot be used: the message names the file, the key and what is wrong."""


@dataclass(frozen=True)
class Profile:
    """A validated business profile; every list is present (maybe empty)."""

    business: Mapping[str, Any] | None = None
    time_zone: str = DEFAULT_TIME_ZONE
    author_display: str = "first-initial"
    taxonomy_version: int = 1
    practitioners: tuple[Mapping[str, Any], ...] = ()
    services: tuple[Mapping[str, Any], ...] = ()
    service_areas: tuple[Mapping[str, Any], ...] = ()
    aspects: tuple[Mapping[str, Any], ...] = ()
    topics: tuple[Mapping[str, Any], ...] = ()
    problems: tuple[Mapping[str, Any], ...] = ()
    faq: tuple[Mapping[str, Any], ...] = ()
    sentiment_overrides: Mapping[str, float] = field(default_factory=dict)
    hide_reviews: frozenset[str] = frozenset()
    corrections: tuple[Mapping[str, Any], ...] = ()
    sources: tuple[Mapping[str, Any], ...] = ()  # [[sources]]: what `reviewsd sync` pulls from
    publish: Mapping[str, Any] = field(default_factory=dict)  # [publish]: people, trend, people_label

    def business_block(self, current: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """reviews.json's `business`: the profile's, with defaults for what it leaves out; without a
        [business], the `current` block with the profile's services and areas (if it lists any)."""
        if self.business is None:
            if current is None:
                return None
            block = dict(current)
            block["services"] = self._services() if self.services else block["services"]
            block["service_areas"] = self._areas() if self.service_areas else block["service_areas"]
            return block
        block = {**BUSINESS_DEFAULTS, **self.business}
        block["address"] = {**BUSINESS_DEFAULTS["address"], **block["address"]}
        block["service_areas"], block["services"] = self._areas(), self._services()
        order = (
            "id",
            "name",
            "category",
            "description",
            "url",
            "telephone",
            "address",
            "geo",
            "opening_hours",
            "service_areas",
            "services",
        )
        return {key: block[key] for key in order}

    def _services(self) -> list[dict[str, str]]:
        return [
            {"id": s["id"], "label": s["label"], "description": s.get("description", "")}
            for s in self.services
        ]

    def _areas(self) -> list[dict[str, str]]:
        return [{"id": a["id"], "label": a["label"]} for a in self.service_areas]


@cache
def _validator() -> Any:
    return jsonschema_rs.validator_for(SCHEMAS["business.schema.json"])


def _key_path(parts: list) -> str:
    """TOML-style key path: business.address.country, aspects[2].terms."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def schema_problems(doc: Mapping[str, Any]) -> list[str]:
    """`key: what is wrong` for each schema violation, in document order."""
    return [
        f"{_key_path(list(error.instance_path))}: {schema_message(error)}"
        for error in _validator().iter_errors(doc)
    ]


def _rule_problems(doc: Mapping[str, Any]) -> list[str]:
    """What a schema cannot say: a real time zone, ids unique per list, FAQ `about` ids that exist."""
    problems = []
    zone = doc.get("time_zone", DEFAULT_TIME_ZONE)
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        problems.append(f"time_zone: {zone!r} is not an IANA time zone name (e.g. America/Chicago)")
    known = set()
    for group in ("practitioners", "services", "service_areas", "aspects", "topics", "problems"):
        seen = set()
        for index, item in enumerate(doc.get(group, [])):
            if item["id"] in seen:
                problems.append(f"{group}[{index}].id: {item['id']!r} is used twice in {group}")
            seen.add(item["id"])
        known |= seen
    for index, entry in enumerate(doc.get("faq", [])):
        problems += [
            f"faq[{index}].about: {about!r} is not the id of an aspect, topic, service or problem"
            for about in entry["about"]
            if about not in known
        ]
    return problems


def _telephone_problems(doc: dict[str, Any]) -> list[str]:
    """business.telephone as people write it ((812) 555-0142), rewritten in international form in `doc`;
    a line saying how to write it when it cannot be read."""
    business = doc.get("business")
    if not isinstance(business, dict) or "telephone" not in business:
        return []
    written = business["telephone"]
    address = business.get("address")
    country = address.get("country", "") if isinstance(address, dict) else ""
    number = (
        international(written, country if isinstance(country, str) else "")
        if isinstance(written, str)
        else None
    )
    if number is None:
        return [
            f"business.telephone: {str(written)[:40]!r} is not a telephone number reviewsd can read; "
            'write it with its country code, e.g. "+1 812 555 0142" (or set business.address.country)'
        ]
    business["telephone"] = number
    return []


def parse_profile(text: str, source: str = PROFILE_FILE) -> Profile:
    """The Profile that TOML text describes; ProfileError naming every problem."""
    if len(text) > MAX_PROFILE_CHARS:
        raise ProfileError(
            f"{source}: {len(text):,} characters is larger than any business profile needs "
            f"(at most {MAX_PROFILE_CHARS:,})"
        )
    deep = _DEEP_KEY.search(text)
    if deep:
        line = text.count("\n", 0, deep.start()) + 1
        raise ProfileError(
            f"{source}: line {line}: a key of more than {MAX_KEY_PARTS} dotted parts; none is needed"
        )
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ProfileError(f"{source}: not valid TOML: {error}") from None
    except RecursionError:
        raise ProfileError(
            f"{source}: arrays or tables nested deeper than any business profile needs"
        ) from None
    problems = _telephone_problems(doc)
    problems += [problem for problem in schema_problems(doc) if not problem.startswith("business.telephone:")]
    problems += [] if problems else _rule_problems(doc)
    if problems:
        raise ProfileError("\n".join(f"{source}: {problem}" for problem in problems))
    lists = {
        name: tuple(doc.get(name, ()))
        for name in (
            "practitioners",
            "services",
            "service_areas",
            "aspects",
            "topics",
            "problems",
            "faq",
            "corrections",
            "sources",
        )
    }
    return Profile(
        business=doc.get("business"),
        time_zone=doc.get("time_zone", DEFAULT_TIME_ZONE),
        author_display=doc.get("author_display", "first-initial"),
        taxonomy_version=doc.get("taxonomy_version", 1),
        sentiment_overrides=dict(doc.get("sentiment_overrides", {})),
        hide_reviews=frozenset(doc.get("hide_reviews", ())),
        publish=dict(doc.get("publish", {})),
        **lists,
    )


def load_profile(data_dir: Path, required: bool = False) -> Profile:
    """DIR/business.toml as a Profile; an empty Profile if the file is missing and not required."""
    path = Path(data_dir) / PROFILE_FILE
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        if required:
            raise ProfileError(f"{path}: not found; write one with `reviewsd init --preset NAME`") from None
        return Profile()
    except (OSError, UnicodeDecodeError) as error:
        raise ProfileError(f"{path}: cannot be read: {error}") from None
    return parse_profile(text, str(path))
