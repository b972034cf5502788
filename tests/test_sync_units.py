"""reviewsd-sync.service and .timer: systemd-analyze verify, the server's sandbox, hourly, randomized."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from support.units import MAX_EXPOSURE, analyze, settings

REPO = Path(__file__).resolve().parents[1]
SERVICE = REPO / "reviewsd.service"
SYNC_SERVICE = REPO / "reviewsd-sync.service"
SYNC_TIMER = REPO / "reviewsd-sync.timer"
SANDBOX = (
    "ProtectSystem ProtectHome PrivateTmp PrivateDevices PrivateMounts PrivateIPC PrivateUsers ProtectProc "
    "ProcSubset ProtectKernelTunables ProtectKernelModules ProtectKernelLogs ProtectControlGroups "
    "ProtectClock ProtectHostname NoNewPrivileges CapabilityBoundingSet AmbientCapabilities "
    "RestrictSUIDSGID RemoveIPC "
    "KeyringMode MemoryDenyWriteExecute LockPersonality RestrictRealtime RestrictNamespaces "
    "SystemCallFilter SystemCallErrorNumber SystemCallArchitectures RestrictAddressFamilies DynamicUser UMask"
).split()


def local_units(tmp_path: Path) -> Path:
    """The units with ExecStart pointing at this checkout's reviewsd.py (the installed path may not exist)."""
    text = SYNC_SERVICE.read_text()
    local = f"ExecStart={sys.executable} {REPO / 'reviewsd.py'} sync"
    (tmp_path / SYNC_SERVICE.name).write_text(
        text.replace("ExecStart=/opt/reviewsd/bin/reviewsd sync", local)
    )
    (tmp_path / SYNC_TIMER.name).write_text(SYNC_TIMER.read_text())
    return tmp_path


def test_sync_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    result = analyze("verify", f"./{SYNC_SERVICE.name}", f"./{SYNC_TIMER.name}", cwd=local_units(tmp_path))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert SYNC_SERVICE.name not in output and SYNC_TIMER.name not in output, output


def test_sync_service_exposure_is_at_most_2(tmp_path: Path) -> None:
    result = analyze("security", "--offline=yes", f"./{SYNC_SERVICE.name}", cwd=local_units(tmp_path))
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout + result.stderr)
    assert match and float(match.group(1)) <= MAX_EXPOSURE, result.stdout


def test_sync_service_has_the_servers_sandbox_and_writes_only_the_data_directory() -> None:
    sync, server = settings(SYNC_SERVICE), settings(SERVICE)
    assert {key: sync.get(key) for key in SANDBOX} == {key: server.get(key) for key in SANDBOX}
    assert sync["Type"] == ["oneshot"] and sync["ExecStart"] == ["/opt/reviewsd/bin/reviewsd sync"]
    assert sync["ReadWritePaths"] == server["ReadOnlyPaths"]
    assert f"REVIEWSD_DATA_DIR={server['ReadOnlyPaths'][0]}" in sync["Environment"]


def test_timer_is_hourly_with_a_randomized_delay_and_catches_up() -> None:
    timer = settings(SYNC_TIMER)
    assert timer["OnCalendar"] == ["hourly"] and timer["Persistent"] == ["true"]
    assert timer["RandomizedDelaySec"] and timer["WantedBy"] == ["timers.target"]
