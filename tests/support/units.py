"""systemd units in tests: systemd-analyze, and a unit file's settings (reviewsd's and reviewsd-sync's)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

MAX_EXPOSURE = 2.0  # `systemd-analyze security`'s rating: at most this for every service we ship


def systemd_analyze() -> str:
    path = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
    if not Path(path).exists():
        pytest.fail("systemd-analyze not found: install systemd (CI has it at /usr/bin/systemd-analyze)")
    return path


def settings(unit: Path) -> dict[str, list[str]]:
    """Key -> values (in order) of a unit file, comments dropped."""
    out: dict[str, list[str]] = {}
    for line in unit.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def analyze(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([systemd_analyze(), *args], cwd=cwd, capture_output=True, text=True, timeout=60)
