"""The package ships every module the server imports."""

from __future__ import annotations

import tomllib

from conftest import ROOT


def test_every_top_level_module_is_packaged() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    packaged = set(config["tool"]["setuptools"]["py-modules"])
    modules = {path.stem for path in ROOT.glob("*.py")}
    assert packaged == modules
