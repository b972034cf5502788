"""The starter business.toml files `reviewsd init --preset NAME` writes: one commented TOML file per trade,
shipped in presets/ (the chiropractic one is also the taxonomy of tools/generate_data.py's sample)."""

from __future__ import annotations

from pathlib import Path

from .profile import PROFILE_FILE, parse_profile

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
