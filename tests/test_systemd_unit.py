"""reviewsd.service / reviewsd.socket: systemd-analyze verify, security exposure, required settings."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from support.units import MAX_EXPOSURE, analyze, settings

REPO = Path(__file__).resolve().parents[1]
SERVICE = REPO / "reviewsd.service"
SOCKET = REPO / "reviewsd.socket"
SHUTDOWN_GRACE = 10.0  # server.run()'s default, which TimeoutStopSec must leave room for


@pytest.fixture
def unit_dir(tmp_path: Path) -> Path:
    """The units in a temp dir, ExecStart pointing at executables that exist on this machine."""
    text = SERVICE.read_text()
    exec_start = settings(SERVICE)["ExecStart"][0]
    args = exec_start.split(" ", 1)[1]  # keep the options, replace the installed command
    local = f"ExecStart={sys.executable} {REPO / 'server.py'} {args}"
    (tmp_path / SERVICE.name).write_text(text.replace(f"ExecStart={exec_start}", local))
    shutil.copy(SOCKET, tmp_path / SOCKET.name)
    return tmp_path


def test_units_pass_systemd_analyze_verify(unit_dir: Path) -> None:
    result = analyze("verify", f"./{SERVICE.name}", f"./{SOCKET.name}", cwd=unit_dir)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # verify exits 0 on "Unknown key" and unparsable values, but names the file: none of that.
    assert SERVICE.name not in output and SOCKET.name not in output, output


def test_service_exposure_is_at_most_2(unit_dir: Path) -> None:
    result = analyze("security", "--offline=yes", f"./{SERVICE.name}", cwd=unit_dir)
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout + result.stderr)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) <= MAX_EXPOSURE, result.stdout


def test_service_settings() -> None:
    unit = settings(SERVICE)
    expected = {
        "Type": "notify",
        "NotifyAccess": "main",
        "ExecReload": "/bin/kill -HUP $MAINPID",
        "Restart": "on-failure",
        "DynamicUser": "yes",
        "StateDirectory": "reviewsd",
        "ReadOnlyPaths": "/srv/reviewsd/data",
        "WatchdogSec": "30s",
        "UMask": "0077",
        "ProtectSystem": "strict",
        "MemoryDenyWriteExecute": "yes",
        "NoNewPrivileges": "yes",
        "CapabilityBoundingSet": "",
        "AmbientCapabilities": "",
        "SystemCallArchitectures": "native",
        "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
        "ProcSubset": "pid",
        "ProtectProc": "invisible",
    }
    assert {key: unit.get(key, [None])[0] for key in expected} == expected
    assert unit["SystemCallFilter"] == ["@system-service", "~@privileged @resources"]
    # Only what the unit itself decides is a flag; every site setting is a variable a drop-in can override.
    assert unit["ExecStart"] == ["/opt/reviewsd/bin/reviewsd --state-dir ${STATE_DIRECTORY}"]
    variables = dict(item.split("=", 1) for line in unit["Environment"] for item in line.split())
    assert {
        name: variables.get(name) for name in ("REVIEWSD_HOST", "REVIEWSD_PORT", "REVIEWSD_DATA_DIR")
    } == {
        "REVIEWSD_HOST": "127.0.0.1",
        "REVIEWSD_PORT": "8080",
        "REVIEWSD_DATA_DIR": unit["ReadOnlyPaths"][0],
    }
    assert "REVIEWSD_BASE_URL" not in variables  # the site's: set in a drop-in (docs/deployment.md)
    # The hub delivers to arbitrary subscribers: an IP allow list would break it.
    assert "IPAddressDeny" not in unit and "IPAddressAllow" not in unit


def seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(s|min)?", value)
    assert match, f"unsupported time span {value!r}"
    return float(match.group(1)) * (60 if match.group(2) == "min" else 1)


def test_stop_timeout_leaves_room_for_the_graceful_drain() -> None:
    unit = settings(SERVICE)
    assert seconds(unit["TimeoutStopSec"][0]) >= SHUTDOWN_GRACE + 10
    assert int(unit["LimitNOFILE"][0]) > 1000 + 64  # max_connections plus files and hub sockets


def test_socket_unit_listens_where_the_service_does() -> None:
    unit = settings(SOCKET)
    assert unit["ListenStream"] == ["127.0.0.1:8080"]
    assert unit.get("Accept", ["no"]) == ["no"]


def test_the_documented_drop_in_sets_the_base_url_and_no_flag_overrides_it() -> None:
    """The unit's options are variables, so the site's drop-in (docs/deployment.md) decides them."""
    from reviewsd_app.config import parse_config

    page = (REPO / "docs" / "deployment.md").read_text("utf-8")
    drop_in = re.search(r"```ini\n(.*?)```", page, re.S).group(1)
    environment = {}
    for line in [*SERVICE.read_text().splitlines(), *drop_in.splitlines()]:  # a drop-in comes after the unit
        if line.startswith("Environment="):
            environment.update(item.split("=", 1) for item in line[len("Environment=") :].split())
    assert environment["REVIEWSD_BASE_URL"] == "https://reviews.example.com"
    environment["REVIEWSD_BASE_URL"] = "https://site.example"  # any site's own settings win over the unit's
    environment["REVIEWSD_DATA_DIR"] = "/srv/site/data"
    flags = settings(SERVICE)["ExecStart"][0].split()[1:]
    flags = [flag if flag != "${STATE_DIRECTORY}" else "/var/lib/reviewsd" for flag in flags]
    saved = {name: value for name, value in os.environ.items() if name.startswith("REVIEWSD_")}
    try:
        for name in saved:
            del os.environ[name]
        os.environ.update(environment)
        config = parse_config(flags)
    finally:
        for name in environment:
            os.environ.pop(name, None)
        os.environ.update(saved)
    assert (config.public_base_url, config.host, config.port, config.data_dir) == (
        "https://site.example",
        "127.0.0.1",
        8080,
        "/srv/site/data",
    )
