"""A real install: the wheel of this checkout, installed into a fresh virtualenv, used from elsewhere."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import site
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from urllib.request import urlopen

import pytest
from conftest import ROOT, LiveServer

pytestmark = pytest.mark.slow  # builds the wheel and installs it in a fresh virtualenv

# What the checkout holds that is not the product (never in the wheel).
NOT_SHIPPED = {
    ".git",
    ".venv",
    ".ci",
    "tests",
    "bench",
    "tools",
    "docs",
    "state",
    "build",
    ".hypothesis",
    ".pytest_cache",
    "__pycache__",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip install .` builds, from a copy of the checkout (a build leaves build/ behind)."""
    source = tmp_path_factory.mktemp("source")
    shutil.copytree(
        ROOT,
        source,
        dirs_exist_ok=True,
        ignore=lambda folder, names: [n for n in names if n in NOT_SHIPPED or n.endswith(".egg-info")],
    )
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("reviewsd-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel installed (its dependencies seen from the test environment)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # The dependencies from the test environment's site-packages, without a download (a .pth line adds a
    # directory only: that environment's own .pth files, an editable install of this checkout, stay out).
    (site_packages,) = venv.glob("lib/python*/site-packages")
    (site_packages / "test-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return venv


def installed_env(**variables: str) -> dict[str, str]:
    """This process's environment, less what could put the checkout on the path instead of the install."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    return {**env, **variables}


def run(venv: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [venv / "bin" / "reviewsd", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=installed_env(**(env or {})),
    )


def test_the_wheel_holds_one_package_with_every_module_and_file_the_server_needs(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {name.split("/")[0] for name in names if not name.startswith("reviewsd-")} == {"reviewsd_app"}
    modules = {
        f"reviewsd_app/{path.relative_to(ROOT)}"
        for pattern in ("*.py", "*/*.py")
        for path in ROOT.glob(pattern)
    }
    modules -= {
        name
        for name in modules
        if name.startswith(("reviewsd_app/tests/", "reviewsd_app/bench/", "reviewsd_app/tools/"))
    }
    files = {
        f"reviewsd_app/{path.relative_to(ROOT)}"
        for pattern in (
            "schemas/*.json",
            "data/*.json",
            "data/business.toml",
            "examples/minimal/*.json",
            "authoring/presets/*.toml",
        )
        for path in ROOT.glob(pattern)
    }
    units = {"reviewsd_app/reviewsd.service", "reviewsd_app/reviewsd.socket", "reviewsd_app/LICENSE"}
    units |= {"reviewsd_app/reviewsd-sync.service", "reviewsd_app/reviewsd-sync.timer"}
    assert modules | files | units <= names
    assert not [
        name
        for name in names
        if name.startswith(("reviewsd_app/tests/", "reviewsd_app/bench/", "reviewsd_app/tools/"))
    ]


def test_installed_command_checks_and_versions_from_any_directory(installed: Path, tmp_path: Path) -> None:
    version = run(installed, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("reviewsd ")
    check = run(installed, "check", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert check.stdout.strip().endswith("reviewsd_app/data: OK")
    # the bundled sample's business.toml is installed beside it: --explain reads the sample as analyze does
    explain = run(installed, "analyze", "--explain", "01M6XPBNSX2KAW7FV4X5AB2CR1", cwd=tmp_path)
    assert explain.returncode == 0 and "technicians dr-sofia-ramirez: positive" in explain.stdout, (
        explain.stderr
    )
    example = run(installed, "check", "--data-dir", str(ROOT / "examples" / "minimal"), cwd=tmp_path)
    assert example.returncode == 0, example.stderr
    init = run(installed, "init", "--preset", "general", "--data-dir", str(tmp_path / "mine"), cwd=tmp_path)
    assert init.returncode == 0 and "quality" in (tmp_path / "mine" / "business.toml").read_text(), (
        init.stderr
    )
    bad = run(installed, "--bogus", cwd=tmp_path)
    assert (bad.returncode, bad.stderr) == (
        2,
        "reviewsd: error: unrecognized arguments: --bogus (see reviewsd --help)\n",
    )


def test_installed_command_serves_the_bundled_data_and_stops_on_ctrl_c(
    installed: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    server = LiveServer(
        [],
        program=[str(installed / "bin" / "reviewsd")],
        cwd=tmp_path,
        env={"HOME": str(home), "XDG_STATE_HOME": "", "PYTHONPATH": ""},  # the install, not a checkout
    )
    with urlopen(server.base_url + "/api/reviews/since/2026-10-01", timeout=10) as response:
        assert response.status == 200 and b'"count":9' in response.read()
    server.signal(signal.SIGINT)
    assert server.proc.wait(timeout=30) == 130
    server.stop()
    # Installed, the state directory is the user's (XDG), never inside site-packages.
    assert (home / ".local" / "state" / "reviewsd" / "hub.sqlite3").exists()
    assert not list((installed / "lib").glob("python*/site-packages/reviewsd_app/state"))


def test_our_modules_are_not_importable_under_generic_names(installed: Path, tmp_path: Path) -> None:
    probe = (
        "import importlib.util as u; print([m for m in ('config', 'server', 'dataset', 'hub', 'search') "
        "if u.find_spec(m)])"
    )
    run_probe = subprocess.run(
        [installed / "bin" / "python", "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert run_probe.stdout.strip() == "[]"


def test_modules_without_their_schemas_say_what_is_missing(tmp_path: Path) -> None:
    for module in ROOT.rglob("*.py"):  # the package's modules, without schemas/
        relative = module.relative_to(ROOT)
        if relative.parts[0] not in ("tests", "bench", "tools", "examples", ".venv", "build"):
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(module, tmp_path / relative)
    run_check = subprocess.run(
        [sys.executable, "reviewsd.py", "check", "--data-dir", str(ROOT / "data")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run_check.returncode == 1
    last_line = run_check.stderr.strip().splitlines()[-1]
    assert last_line.startswith(
        "RuntimeError: reviewsd's JSON Schemas are missing (reviews.schema.json, "
        "insights.schema.json, search-params.schema.json not in "
    )


@pytest.fixture(scope="module")
def gunicorn(installed: Path) -> list[str]:
    """gunicorn, from the package registry, for the virtualenv of the install (the command that runs it
    there: pip leaves no script in the virtualenv when the test environment already has gunicorn)."""
    subprocess.run(
        [installed / "bin" / "python", "-m", "pip", "install", "-q", "gunicorn"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return [str(installed / "bin" / "python"), "-m", "gunicorn"]


def test_gunicorn_hosts_the_installed_app_configured_from_the_environment(
    installed: Path, gunicorn: list[str], tmp_path: Path
) -> None:
    env = installed_env(
        REVIEWSD_STATE_DIR=str(tmp_path / "state"),
        REVIEWSD_BASE_URL="https://reviews.example",
        REVIEWSD_LOG_FORMAT="json",
        REVIEWSD_RELOAD_INTERVAL="0.5",
    )
    command = [
        *gunicorn,
        "--bind",
        "127.0.0.1:0",
        "--workers",
        "1",
        "--threads",
        "4",
        "reviewsd_app.wsgi:app",
    ]
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    lines: "queue.Queue[str]" = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        for raw in proc.stderr:
            lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        lines.put("<process ended>")

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        while not (match := re.search(r"Listening at: (http://127\.0\.0\.1:\d+)", seen[-1] if seen else "")):
            seen.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))
            assert seen[-1] != "<process ended>", "\n".join(seen)
        base_url = match.group(1)
        with urlopen(base_url + "/reviews.json", timeout=60) as response:  # waits for the worker's data load
            assert response.status == 200
            assert response.headers["Content-Type"] == "application/json; charset=utf-8"
            assert json.loads(response.read())["reviews"]
        with urlopen(base_url + "/api/feed.json", timeout=10) as response:
            assert json.loads(response.read())["feed_url"] == "https://reviews.example/api/feed.json"
        with urlopen(base_url + "/healthz", timeout=10) as response:
            health = json.loads(response.read())
        assert health["status"] == "ok" and health["hub"]["running"] is True
        # reviewsd's own log lines (JSON, as REVIEWSD_LOG_FORMAT asks) among gunicorn's
        deadline = time.monotonic() + 10
        while not any(line.startswith("{") and '"reviewsd' in line for line in seen):
            seen.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))
            assert seen[-1] != "<process ended>", "\n".join(seen)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    # The worker stopped its hub on the way out: its state directory's lock is free for the next server.
    assert (tmp_path / "state" / "hub.sqlite3").exists()
