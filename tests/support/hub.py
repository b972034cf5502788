"""Support for the in-process hub tests (no tests here): a clock that moves only when told,
an outbound stub that records, and a factory of apps with hubs.

Shared by tests/test_hub_unit.py and tests/test_hub_ssrf.py.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from polling import wait_until
from werkzeug.test import Client

from reviewsd_app import hub, reviewsd
from support.factories import Spec, make_docs, write_docs

BASE = "https://reviews.example.com"
FEED = BASE + "/feed.xml"
PUBLIC_IP = "93.184.216.34"


def version_docs(n: int) -> tuple[dict, dict]:
    """Data version n: n reviews whose texts carry "v<n>"."""
    specs = [Spec(rating=5, date=f"2025-01-{i + 1:02d}", text=f"v{n} review {i}") for i in range(n)]
    return make_docs(specs, generated_at=f"2026-11-15T06:{n:02d}:00Z")


class FakeClock:
    """time.time stand-in that moves only when told."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class Call:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None

    def param(self, name: str) -> str | None:
        values = parse_qs(urlsplit(self.url).query, keep_blank_values=True).get(name)
        return values[-1] if values else None


def echo(call: Call) -> hub.Reply:
    """A well-behaved subscriber: echoes challenges, acknowledges notifications."""
    if call.method == "GET":
        return hub.Reply(200, (call.param("hub.challenge") or "").encode())
    return hub.Reply(204)


class FakeOutbound:
    """Records every outbound request and answers with `answer(call)`; nothing touches the network.

    `hold` makes requests wait until `abort_all()` (what Hub.stop calls past its grace period).
    """

    def __init__(self, answer: Callable[[Call], hub.Reply] = echo):
        self.answer = answer
        self.calls: list[Call] = []
        self.hold = False
        self._released = threading.Event()
        self._cond = threading.Condition()

    def request(self, method: str, url: str, headers: dict, body: bytes | None, limit: int) -> hub.Reply:
        call = Call(method, url, dict(headers), body)
        with self._cond:
            self.calls.append(call)
            self._cond.notify_all()
        if self.hold:
            self._released.wait(10)
            return hub.Reply(None, error="aborted")
        return self.answer(call)

    def abort_all(self) -> None:
        self._released.set()

    def close(self) -> None:
        pass

    def matching(self, method: str | None = None, mode: str | None = None) -> list[Call]:
        with self._cond:
            return [
                c
                for c in self.calls
                if (method is None or c.method == method) and (mode is None or c.param("hub.mode") == mode)
            ]

    def wait_for(
        self, count: int, method: str | None = None, mode: str | None = None, timeout: float = 5.0
    ) -> list[Call]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.matching(method, mode)) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"expected {count} {method or ''} calls, got {self.calls}")
                self._cond.wait(remaining)
        return self.matching(method, mode)


def public_resolver(host: str, port: int) -> list[tuple]:
    """Every name resolves to one public address (nothing is looked up)."""
    import socket

    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_IP, port))]


def wait_idle(the_hub: hub.Hub, timeout: float = 5.0) -> None:
    """Until no work is due or running (work scheduled for later does not count)."""
    wait_until(lambda: not the_hub.scheduler.busy(), timeout, interval=0.005)


class HubMaker:
    """Builds apps with hubs on one data and state directory; stops them all at the end."""

    def __init__(self, tmp: Path):
        self.data_dir = tmp / "data"
        self.state_dir = tmp / "state"
        self.hubs: list[hub.Hub] = []
        self.apps: list[reviewsd.ReviewsApp] = []
        self.write_version(1)

    def write_version(self, n: int) -> None:
        write_docs(self.data_dir, *version_docs(n))

    def config(self, **overrides: object) -> reviewsd.Config:
        options = dict(
            data_dir=str(self.data_dir),
            state_dir=str(self.state_dir),
            reload_interval=0,
            base_url=BASE,
            hub_retry_delay=10.0,
        )
        options.update(overrides)
        return reviewsd.Config(**options)  # type: ignore[arg-type]

    def __call__(
        self,
        outbound: object = None,
        clock: Callable[[], float] = time.time,
        resolve: hub.Resolver = public_resolver,
        **overrides: object,
    ) -> reviewsd.ReviewsApp:
        config = self.config(**overrides)
        store = reviewsd.open_store(config)
        self.hubs.append(hub.start_hub(store, config, clock=clock, outbound=outbound, resolve=resolve))
        self.apps.append(reviewsd.ReviewsApp(config, store, hub=self.hubs[-1]))
        return self.apps[-1]

    def stop_all(self) -> None:
        for h in self.hubs:
            h.stop(timeout=2)


@pytest.fixture
def make_hub(tmp_path: Path) -> Iterator[HubMaker]:
    maker = HubMaker(tmp_path)
    yield maker
    maker.stop_all()


FORM = "application/x-www-form-urlencoded"


CALLBACK = "https://sub.example/cb?token=CAPABILITY-123"


def post(
    app: reviewsd.ReviewsApp,
    fields: dict | list | None = None,
    body: bytes | None = None,
    content_type: str = FORM,
    remote: str = "198.51.100.7",
):
    data = body if body is not None else urlencode(fields or {}).encode()
    return Client(app).post(
        "/api/websub/hub", data=data, content_type=content_type, environ_base={"REMOTE_ADDR": remote}
    )


def form(
    callback: str = CALLBACK, mode: str = "subscribe", topic: str = FEED, **params: str
) -> dict[str, str]:
    return {
        "hub.callback": callback,
        "hub.mode": mode,
        "hub.topic": topic,
        **{f"hub.{name}": value for name, value in params.items()},
    }


def subscribe_active(
    app: reviewsd.ReviewsApp,
    outbound: FakeOutbound,
    callback: str = CALLBACK,
    topic: str = FEED,
    **params: str,
) -> None:
    """Subscribe and wait until the verification has been applied."""
    before = len(outbound.matching("GET"))
    assert post(app, form(callback, topic=topic, **params)).status_code == 202
    outbound.wait_for(before + 1, "GET")
    wait_idle(app.hub)


def change(maker: HubMaker, app: reviewsd.ReviewsApp, version: int) -> None:
    maker.write_version(version)
    assert app.store.reload(force=True)
