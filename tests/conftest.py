"""Shared fixtures: data directories, the app and a client, and a real server process."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence

import pytest
from werkzeug.test import Client

ROOT = Path(__file__).resolve().parent.parent

# The shared fixtures, for every test (tests/support/ defines them): no test module imports one by name.
from support.events import mailbox  # noqa: E402,F401
from support.factories import Spec, make_docs, write_docs  # noqa: E402
from support.https_subscriber import ca, ca_file, subscriber  # noqa: E402,F401
from support.hub import make_hub  # noqa: E402,F401
from support.hub_live import hub_env  # noqa: E402,F401
from support.mcp import mcp_data_dir  # noqa: E402,F401

from reviewsd_app import reviewsd  # noqa: E402

STARTUP_TIMEOUT = 30.0


@pytest.fixture
def sample_data_dir(tmp_path: Path) -> Path:
    """A private copy of the bundled sample data."""
    target = tmp_path / "data"
    shutil.copytree(ROOT / "data", target)
    return target


@pytest.fixture
def small_data_dir(tmp_path: Path) -> Path:
    """A few hand-made reviews, for tests that replace files."""
    target = tmp_path / "small"
    write_docs(target, *make_docs(SMALL_SPECS))
    return target


SMALL_SPECS = [
    Spec(
        rating=5,
        date="2025-03-01",
        text="Dr. Maya Patel fixed my back.",
        technicians=["dr-maya-patel"],
        services=["spinal-adjustment"],
    ),
    Spec(
        rating=4,
        date="2025-02-01",
        text="Great massage with Liam.",
        technicians=["liam-oconnor"],
        services=["massage-therapy"],
        reply=True,
    ),
    Spec(rating=2, date="2025-01-15", text="Long wait time & <script>alert(1)</script>"),
    Spec(rating=3, date="2024-12-31", text=None),
]


@pytest.fixture
def config(sample_data_dir: Path, tmp_path: Path) -> reviewsd.Config:
    return reviewsd.Config(
        data_dir=str(sample_data_dir),
        state_dir=str(tmp_path / "state"),
        reload_interval=0,
        base_url="https://reviews.example.com",
    )


@pytest.fixture
def app(config: reviewsd.Config) -> Iterator[reviewsd.ReviewsApp]:
    application = reviewsd.create_app(config)
    yield application
    if application.hub is not None:
        application.hub.stop()


@pytest.fixture
def client(app: reviewsd.ReviewsApp) -> Client:
    return Client(app)


class LiveServer:
    """`python reviewsd.py` in a subprocess on 127.0.0.1, on a port the OS picked."""

    def __init__(
        self,
        args: Sequence[str],
        env: dict[str, str] | None = None,
        program: Sequence[str] = (sys.executable, str(ROOT / "reviewsd.py")),
        cwd: Path = ROOT,
    ):
        command = [*program, "--host", "127.0.0.1", "--port", "0", "--log-format", "json", *args]
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.lines: "queue.Queue[dict]" = queue.Queue()
        self.log: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        line = self.wait_for_log(lambda entry: "listening on" in entry.get("message", ""), STARTUP_TIMEOUT)
        self.base_url = re.search(r"listening on (http://\S+)", line["message"]).group(1).rstrip("/")
        self.port = int(self.base_url.rsplit(":", 1)[1])

    def _read(self) -> None:
        for raw in self.proc.stderr:
            text = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                entry = json.loads(text)
            except ValueError:
                entry = {"message": text, "raw": True}
            self.log.append(entry)
            self.lines.put(entry)
        self.lines.put({"message": "<process ended>", "eof": True})

    def wait_for_log(self, predicate, timeout: float = 10.0) -> dict:
        """The next log entry matching `predicate`; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no matching log line within {timeout}s; log: {self.log[-20:]}")
            try:
                entry = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if entry.get("eof"):
                raise AssertionError(f"server exited ({self.proc.poll()}); log: {self.log[-20:]}")
            if predicate(entry):
                return entry

    def url(self, path: str) -> str:
        return self.base_url + path

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._reader.join(5)
        return self.proc.returncode


@pytest.fixture
def live_server_factory(tmp_path: Path) -> Iterator:
    """Start real servers with extra arguments; every one is stopped at the end."""
    started: list[LiveServer] = []

    def start(*args: str, env: dict[str, str] | None = None) -> LiveServer:
        server = LiveServer(args, env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def live_server(live_server_factory, sample_data_dir: Path, tmp_path: Path) -> LiveServer:
    return live_server_factory(
        "--data-dir", str(sample_data_dir), "--state-dir", str(tmp_path / "state"), "--reload-interval", "0.2"
    )
