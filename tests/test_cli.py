"""The command line as a newcomer meets it: --help, --version, a bad option, a port in use, Ctrl-C."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, LiveServer
from support.factories import Spec, make_docs, write_docs

from reviewsd_app import config


def reviewsd(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "reviewsd.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        **kwargs,
    )


def test_help_shows_the_commands_and_each_option_with_its_default() -> None:
    done = reviewsd("--help")
    assert done.returncode == 0 and done.stderr == ""
    usage = done.stdout.split("\n\n")[0]
    assert "reviewsd.py check [--data-dir DIR]" in usage and "[serve]" in usage and "--version" in usage
    text = " ".join(done.stdout.split())  # argparse wraps lines
    assert "--port PORT port to listen on (default: 8080)" in text
    assert "--hub, --no-hub run the WebSub hub (--no-hub on read-only replicas) (default: True)" in text
    assert "(default: )" not in text  # an empty default is described by its help instead


def test_check_has_its_own_help() -> None:
    done = reviewsd("check", "--help")
    assert done.returncode == 0 and "--data-dir" in done.stdout and "JSON path" in done.stdout


def test_check_takes_the_data_file_limit_as_the_server_does(tmp_path: Path) -> None:
    for name in ("reviews.json", "insights.json"):
        shutil.copy(ROOT / "examples" / "minimal" / name, tmp_path / name)
    size = (tmp_path / "insights.json").stat().st_size
    by_flag = reviewsd("check", "--data-dir", str(tmp_path), "--max-data-file-bytes", str(size - 1))
    env = {**os.environ, "REVIEWSD_MAX_DATA_FILE_BYTES": str(size - 1)}
    by_env = reviewsd("check", "--data-dir", str(tmp_path), env=env)
    for done in (by_flag, by_env):
        assert done.returncode == 1
        assert (
            f"insights.json: $: size: {size:,} bytes is over the limit of {size - 1:,} bytes" in done.stdout
        )
    assert reviewsd("check", "--data-dir", str(tmp_path), "--max-data-file-bytes", str(size)).returncode == 0


def test_version_is_the_projects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    done = reviewsd("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"reviewsd {project}\n", "")
    assert config.version() == project


def test_version_without_an_installed_distribution_reads_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert (
        config.version() == tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "reviewsd.py: error: unrecognized arguments: --bogus (see reviewsd.py --help)"),
        (
            ["--threads", "0"],
            "reviewsd.py: error: --threads must be at least 1, got 0 (see reviewsd.py --help)",
        ),
        (
            ["--port", "eighty"],
            "reviewsd.py: error: argument --port: invalid int value: 'eighty' (see reviewsd.py --help)",
        ),
        (
            ["serve", "--log-format", "xml"],
            "reviewsd.py: error: argument --log-format: invalid choice: 'xml' "
            "(choose from 'text', 'json') (see reviewsd.py --help)",
        ),
        (
            ["check", "--bogus"],
            "reviewsd.py check: error: unrecognized arguments: --bogus (see reviewsd.py check --help)",
        ),
    ],
)
def test_a_bad_command_line_is_one_line_and_a_pointer_to_help(args: list[str], message: str) -> None:
    done = reviewsd(*args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message + "\n")


def test_a_port_in_use_names_the_option_to_change(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = reviewsd("--port", str(port), "--state-dir", str(tmp_path / "state"))
    assert done.returncode == 1
    [line] = done.stderr.splitlines()  # one line, no traceback
    assert line.endswith(
        f" ERROR reviewsd: cannot listen on 127.0.0.1:{port}: {os.strerror(errno.EADDRINUSE)}; "
        "choose another port with --port or REVIEWSD_PORT"
    )


@pytest.mark.slow
def test_ctrl_c_during_the_first_load_exits_quietly_with_130(tmp_path: Path) -> None:
    # 20,000 reviews take a good fraction of a second to load: the signal comes right after the load starts.
    # (A named pipe held the load open before; data files that are not regular files are now refused.)
    data = tmp_path / "data"
    write_docs(data, *make_docs([Spec(rating=5, date="2025-01-01", text="x" * 200)] * 20_000))
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "reviewsd.py"),
            "--port",
            "0",
            "--data-dir",
            str(data),
            "--state-dir",
            str(tmp_path / "state"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        lines = []
        for line in proc.stderr:  # ends if the process does
            lines.append(line)
            if "loading" in line:
                proc.send_signal(signal.SIGINT)
                break
        stdout, rest = proc.communicate(timeout=30)
        stderr = "".join(lines) + rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert stdout == ""


@pytest.mark.slow
def test_ctrl_c_while_serving_stops_gracefully_with_130(tmp_path: Path) -> None:
    server = LiveServer(
        ["--data-dir", str(ROOT / "data"), "--state-dir", str(tmp_path / "state"), "--reload-interval", "0"]
    )
    server.signal(signal.SIGINT)
    assert server.proc.wait(timeout=30) == 130
    server.stop()  # joins the log reader
    assert any(entry.get("message") == "stopped" for entry in server.log)
    assert not any("Traceback" in entry.get("message", "") for entry in server.log)


def test_sigterm_still_stops_with_0(tmp_path: Path) -> None:
    server = LiveServer(
        ["--data-dir", str(ROOT / "data"), "--state-dir", str(tmp_path / "state"), "--reload-interval", "0"]
    )
    assert server.stop() == 0
