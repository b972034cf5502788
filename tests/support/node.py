"""Node.js scripts the tests run (the TypeScript SDK client, the MCP App's host page): their pinned
packages installed with `npm ci` on the first run, so the README's test command alone runs every test."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def node_script(folder: Path, installed: str, script: str) -> list[str]:
    """The command that runs `folder/script` under Node.js, after `npm ci` in `folder` if
    `folder/node_modules/installed` is not there yet; a test failure that says what is missing otherwise."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("Node.js 18 or later and npm are needed on PATH (Debian: apt-get install nodejs npm)")
    if not (folder / "node_modules" / installed).is_dir():
        install = subprocess.run(
            [npm, "ci", "--prefix", str(folder), "--no-audit", "--no-fund"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if install.returncode != 0:
            pytest.fail(f"`npm ci --prefix {folder}` failed:\n{install.stderr[-2000:]}")
    return [node, str(folder / script)]
