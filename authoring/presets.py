"""The starter business.toml files `reviewsd init --preset NAME` writes: one commented TOML file per trade,
shipped in presets/ (the chiropractic one is the bundled sample's taxonomy: data/business.toml adds its staff
and towns)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .profile import PROFILE_FILE, Profile, parse_profile

PRESETS_DIR = Path(__file__).resolve().parent / "presets"
PRESETS: tuple[str, ...] = tuple(sorted(path.stem for path in PRESETS_DIR.glob("*.toml")))


def render_preset(name: str) -> str:
    """The commented starter business.toml of one preset, as shipped."""
    if name not in PRESETS:
        raise KeyError(name)
    return (PRESETS_DIR / f"{name}.toml").read_text(encoding="utf-8")


def write_starter(data_dir: Path, preset: str) -> Path:
    """Write DIR/business.toml from a preset; FileExistsError if there is one already."""
    text = render_preset(preset)
    parse_profile(text, f"preset {preset}")  # a preset that does not validate is our bug, not the user's
    path = Path(data_dir) / PROFILE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as out:  # "x": never overwrite
        out.write(text)
    return path


# The [business] keys every preset ships with a placeholder value (the address is left empty instead).
PLACEHOLDER_KEYS = ("name", "url", "telephone", "geo")


def starter_placeholders(profile: Profile) -> list[str]:
    """The [business] values still as `reviewsd init` wrote them, each as `key = value`; none once edited."""
    if profile.business is None:
        return []
    starter = parse_profile(render_preset(PRESETS[0])).business or {}
    left = []
    for key in PLACEHOLDER_KEYS:
        value = profile.business.get(key)
        if value is None or value != starter.get(key):
            continue
        if key == "geo":
            left.append(f"geo = {value['latitude']}, {value['longitude']}")
        else:
            left.append(f"{key} = {json.dumps(value, ensure_ascii=False)}")
    return left


@functools.cache
def _starter_staff_names() -> frozenset[str]:
    """The staff every preset ships as a placeholder ("Dr. First Last")."""
    names = set()
    for preset in PRESETS:
        names.update(person["name"] for person in parse_profile(render_preset(preset)).practitioners)
    return frozenset(names)


def starter_staff(profile: Profile) -> list[str]:
    """The staff still named as `reviewsd init` wrote them; none once edited or removed."""
    return [person["name"] for person in profile.practitioners if person["name"] in _starter_staff_names()]


def placeholder_warning(profile: Profile, data_dir: Path) -> str | None:
    """What to tell an owner whose business.toml still publishes the starter's placeholders."""
    said = []
    left = starter_placeholders(profile)
    if left:
        said.append(
            f"[business] still has the starter's {'; '.join(left)}: the pages, their structured data, "
            "/reviews.json and MCP's get_business publish them; edit [business], then run "
            f"`reviewsd import --data-dir {data_dir}` (with no files it rewrites the business block)"
        )
    staff = starter_staff(profile)
    if staff:
        names = ", ".join(json.dumps(name, ensure_ascii=False) for name in staff)
        said.append(
            f"[[practitioners]] still has the starter's {names}: the pages, insights.json and MCP's answers "
            "list them as staff; put your staff's names there (or remove the table), then run "
            f"`reviewsd analyze --data-dir {data_dir}`"
        )
    return f"{PROFILE_FILE}: " + "; ".join(said) if said else None
