"""The package ships every module the server imports."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT


def test_every_top_level_module_is_packaged() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    packaged = set(config["tool"]["setuptools"]["py-modules"])
    modules = {path.stem for path in ROOT.glob("*.py")}
    assert packaged == modules


def test_modules_without_their_schemas_say_how_to_install(tmp_path: Path) -> None:
    # The modules alone, as a plain (non-editable) `pip install .` leaves them.
    for module in ROOT.glob("*.py"):
        shutil.copy(module, tmp_path)
    run = subprocess.run([sys.executable, "reviewsd.py", "check", "--data-dir", str(ROOT / "data")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    last_line = run.stderr.strip().splitlines()[-1]
    assert last_line.startswith("RuntimeError: reviewsd's JSON Schemas are missing (reviews.schema.json, "
                                "insights.schema.json, search-params.schema.json not in ")
    assert "pip install -e ." in last_line
