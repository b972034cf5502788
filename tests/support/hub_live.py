"""The hub against a real server process: its environment (a fixture), requests, waiting on its status."""

from __future__ import annotations

import http.client
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import urlencode

import pytest
from polling import wait_until

from support.factories import Spec, make_docs, write_docs
from support.hub import BASE, FEED  # noqa: F401 (FEED: importable from here)

if TYPE_CHECKING:  # conftest imports this module for its fixture: no import back at run time
    from conftest import LiveServer


def version_docs(n: int) -> tuple[dict, dict]:
    """Data version n: n reviews whose texts all carry "v<n>", so any topic body tells its version."""
    specs = [Spec(rating=5 - i % 3, date=f"2025-01-{i + 1:02d}", text=f"v{n} review {i}") for i in range(n)]
    return make_docs(specs, generated_at=f"2026-11-15T06:{n:02d}:00Z")


def body_version(body: bytes) -> int:
    versions = set(re.findall(rb"v(\d+) review", body))
    assert len(versions) == 1, body[:200]
    return int(versions.pop())


class HubEnv:
    """A data directory, a state directory and a way to start servers on them."""

    def __init__(self, tmp: Path, ca_path: Path, start: Callable[..., LiveServer]):
        self.data_dir = tmp / "data"
        self.state_dir = tmp / "state"
        self.ca_path = ca_path
        self._start = start
        self.write_version(1)

    def write_version(self, n: int) -> None:
        write_docs(self.data_dir, *version_docs(n))

    def start(self, *extra: str) -> LiveServer:
        return self._start(
            "--data-dir",
            str(self.data_dir),
            "--state-dir",
            str(self.state_dir),
            "--allow-private-callbacks",
            "--ca-file",
            str(self.ca_path),
            "--base-url",
            BASE,
            "--hub-retry-delay",
            "0.2",
            "--reload-interval",
            "0.1",
            *extra,
        )


@pytest.fixture
def hub_env(tmp_path: Path, ca_file: Path, live_server_factory: Callable[..., LiveServer]) -> HubEnv:
    return HubEnv(tmp_path, ca_file, live_server_factory)


def request(
    server: LiveServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def hub_request(
    server: LiveServer, callback: str, topic: str = FEED, mode: str = "subscribe", **params: str
) -> tuple[int, bytes]:
    fields = {
        "hub.callback": callback,
        "hub.mode": mode,
        "hub.topic": topic,
        **{f"hub.{name}": value for name, value in params.items()},
    }
    status, _, body = request(
        server,
        "POST",
        "/api/websub/hub",
        urlencode(fields).encode(),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    return status, body


def subscribe(server: LiveServer, callback: str, topic: str = FEED, **params: str) -> None:
    status, body = hub_request(server, callback, topic, **params)
    assert status == 202, body


def hub_status(server: LiveServer) -> dict[str, Any]:
    status, _, body = request(server, "GET", "/healthz")
    return json.loads(body)["hub"]


def wait_status(
    server: LiveServer, predicate: Callable[[dict], bool], timeout: float = 10.0
) -> dict[str, Any]:
    """Poll the hub's status in /healthz until `predicate` holds (a deadline, not a fixed sleep)."""
    seen: list[dict[str, Any]] = []
    wait_until(lambda: predicate(seen.append(hub_status(server)) or seen[-1]), timeout, interval=0.02)
    return seen[-1]


def settled(count: int) -> Callable[[dict], bool]:
    """`count` active subscriptions and nothing waiting for verification."""
    return lambda s: s["subscriptions"] == count and s["pending_verifications"] == 0
