"""Faults in the state directory: reads keep serving, the hub says why it is unavailable, nothing is lost.

In process (werkzeug's test client, FakeOutbound): a state path that is a file, a
garbage or corrupted database, and SQLite errors injected through a wrapped
connection (disk full, I/O error). Real server processes where processes matter:
two servers on one state directory, kill and take over, the directory deleted
while running.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until
from support.https_subscriber import HTTPSSubscriber
from support.hub import (
    CALLBACK,
    FakeOutbound,
    HubMaker,
    change,
    echo,
    form,
    post,
    subscribe_active,
    wait_idle,
)
from support.hub_live import (
    HubEnv,
    body_version,
    hub_request,
    request,
    settled,
    subscribe,
    wait_status,
)
from werkzeug.test import Client

from reviewsd_app import hub, reviewsd
from reviewsd_app.websub import store as hub_store

pytestmark = pytest.mark.slow  # live servers whose state directory is broken, killed and taken over

CHECK = 0.05  # --hub-state-check in these tests: the keeper's period


# --------------------------------------------------------------------------- injected SQLite errors


class Disk:
    """What the wrapped connections do: work, or fail every write with `error`."""

    def __init__(self) -> None:
        self.error: sqlite3.Error | None = None

    def full(self) -> None:
        self.error = sqlite_error("database or disk is full", 13)  # SQLITE_FULL

    def io_error(self) -> None:
        self.error = sqlite_error("disk I/O error", 10)  # SQLITE_IOERR

    def heal(self) -> None:
        self.error = None


def sqlite_error(message: str, code: int) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code
    return error


class FaultyConnection:
    """A sqlite3.Connection whose writes (anything but SELECT and quick_check) fail while the disk says so."""

    def __init__(self, conn: sqlite3.Connection, disk: Disk):
        self._conn = conn
        self._disk = disk

    def _guard(self, sql: str) -> None:
        reads = sql.lstrip().upper().startswith(("SELECT", "PRAGMA QUICK_CHECK"))
        if self._disk.error is not None and not reads:
            raise self._disk.error

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._guard(sql)
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._guard(sql)
        return self._conn.executemany(sql, *args)

    def executescript(self, sql: str) -> sqlite3.Cursor:
        self._guard(sql)
        return self._conn.executescript(sql)

    def __enter__(self) -> "FaultyConnection":
        self._conn.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._conn.__exit__(*exc)

    def close(self) -> None:
        self._conn.close()


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Disk:
    """Every connection the hub's store opens from now on is a FaultyConnection on this disk."""
    state = Disk()
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: FaultyConnection(connect(*a, **k), state))
    return state


def healthz(app: reviewsd.ReviewsApp) -> tuple[int, dict]:
    response = Client(app).get("/healthz")
    return response.status_code, response.get_json()


def available(app: reviewsd.ReviewsApp) -> bool:
    return healthz(app)[1]["hub"].get("available") is True


def assert_unavailable(app: reviewsd.ReviewsApp, *reason_parts: str) -> None:
    """/healthz 200 and "degraded" with the reason; reads serve; the hub answers 503 + Retry-After, text."""
    status, document = healthz(app)
    assert status == 200 and document["status"] == "degraded", document
    assert document["hub"]["available"] is False and document["hub"]["running"] is True
    assert all(part in document["hub"]["reason"] for part in reason_parts), document["hub"]
    assert document["hub"]["unavailable_since"].endswith("Z")
    assert Client(app).get("/reviews.json").status_code == 200
    response = post(app, form(callback="https://other.example/cb"))
    assert response.status_code == 503 and response.headers["Retry-After"].isdigit()
    assert response.content_type == "text/plain; charset=utf-8"
    assert all(part in response.get_data(as_text=True) for part in reason_parts)


def db_rows(state_dir: str, table: str = "subscriptions") -> list[tuple]:
    with sqlite3.connect(Path(state_dir) / hub_store.DB_FILE) as db:
        return db.execute(f"SELECT callback, topic FROM {table}").fetchall()


# --------------------------------------------------------------------------- start-up


def test_a_state_path_that_is_a_file_leaves_reads_serving_and_the_hub_retrying(make_hub: HubMaker) -> None:
    make_hub.state_dir.write_text("not a directory")
    app = make_hub(FakeOutbound(), hub_state_check=CHECK)
    assert_unavailable(app, str(make_hub.state_dir))
    make_hub.state_dir.unlink()  # the operator moves it aside: the hub resumes by itself
    wait_until(lambda: available(app))
    assert post(app, form()).status_code == 202


@pytest.mark.parametrize("garbage", [b"this is not a database " * 200, b"\x00" * 8192])
def test_a_garbage_database_is_moved_aside_and_the_hub_starts_empty(
    make_hub: HubMaker, garbage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    make_hub.state_dir.mkdir()
    (make_hub.state_dir / hub_store.DB_FILE).write_bytes(garbage)
    outbound = FakeOutbound()
    app = make_hub(outbound)
    assert_moved_aside(make_hub.state_dir, garbage, caplog)
    assert healthz(app) == (200, healthz(app)[1]) and healthz(app)[1]["status"] == "ok"
    assert app.hub.status()["subscriptions"] == 0
    assert (
        make_hub.state_dir / hub_store.DB_FILE
    ).stat().st_mode & 0o777 == 0o600  # the new one holds secrets too
    subscribe_active(app, outbound)
    assert db_rows(app.config.state_dir) == [(CALLBACK, "/feed.xml")]


def assert_moved_aside(state_dir: Path, content: bytes | None, caplog: pytest.LogCaptureFixture) -> None:
    (moved,) = state_dir.glob(hub_store.DB_FILE + ".corrupt-*")
    assert moved.name[len(hub_store.DB_FILE + ".corrupt-") :].endswith("Z")  # when: 20261124T051500Z
    if content is not None:
        assert moved.read_bytes() == content  # never deleted or changed
    (record,) = [r for r in caplog.records if getattr(r, "event", "") == "hub_store_corrupt"]
    assert record.levelno == logging.ERROR and moved.name in record.getMessage()
    assert "next renewal" in record.getMessage()


def test_corrupt_databases_moved_aside_in_one_second_are_all_kept(
    make_hub: HubMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return datetime(2026, 11, 24, 5, 15, tzinfo=timezone.utc)

    monkeypatch.setattr(hub_store, "datetime", Frozen)
    make_hub.state_dir.mkdir()
    for garbage in (b"first garbage " * 100, b"second garbage " * 100):
        (make_hub.state_dir / hub_store.DB_FILE).write_bytes(garbage)
        make_hub(FakeOutbound()).hub.stop()
    kept = {p.name: p.read_bytes()[:6] for p in make_hub.state_dir.glob(hub_store.DB_FILE + ".corrupt-*")}
    assert kept == {
        "hub.sqlite3.corrupt-20261124T051500Z": b"first ",
        "hub.sqlite3.corrupt-20261124T051500Z-1": b"second",
    }


def test_a_database_with_corrupted_pages_is_moved_aside(
    make_hub: HubMaker, caplog: pytest.LogCaptureFixture
) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    for i in range(40):
        assert post(app, form(callback=f"https://sub{i}.example/cb", secret="s" * 150)).status_code == 202
    outbound.wait_for(40, "GET")
    wait_idle(app.hub)
    app.hub.stop()  # the last connection's close checkpoints the WAL into the file
    path = make_hub.state_dir / hub_store.DB_FILE
    data = bytearray(path.read_bytes())
    assert len(data) >= 4 * 4096
    data[4096 : len(data)] = b"\xa5" * (len(data) - 4096)  # every page after the first: the schema survives
    path.write_bytes(bytes(data))
    restarted = make_hub(FakeOutbound())
    assert_moved_aside(make_hub.state_dir, bytes(data), caplog)
    assert restarted.hub.status()["subscriptions"] == 0 and available(restarted)


@pytest.mark.parametrize(
    "error, remedy",
    [
        (sqlite_error("database or disk is full", 13), "free space on the file system of"),
        (sqlite_error("attempt to write a readonly database", 8), "writable by this service"),
        (sqlite_error("disk I/O error", 10), "the disk holding it"),
    ],
    ids=["SQLITE_FULL", "SQLITE_READONLY", "SQLITE_IOERR"],
)
def test_a_store_that_fails_at_start_keeps_reads_and_the_hub_resumes_by_itself(
    make_hub: HubMaker, disk: Disk, error: sqlite3.Error, remedy: str, caplog: pytest.LogCaptureFixture
) -> None:
    disk.error = error
    app = make_hub(FakeOutbound(), hub_state_check=CHECK)
    assert_unavailable(app, str(error))
    (record,) = [r for r in caplog.records if getattr(r, "event", "") == "hub_store_unavailable"]
    assert record.levelno == logging.ERROR and remedy in record.getMessage()
    disk.heal()
    wait_until(lambda: available(app))
    assert post(app, form()).status_code == 202


def test_no_space_for_the_database_file_at_start(
    make_hub: HubMaker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_open = os.open
    full = [True]

    def open_unless_full(path: Any, flags: int, *args: Any) -> int:
        if full[0] and str(path).endswith(hub_store.DB_FILE):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", open_unless_full)
    app = make_hub(FakeOutbound(), hub_state_check=CHECK)
    assert_unavailable(app, os.strerror(errno.ENOSPC))
    assert any("free space" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
    full[0] = False
    wait_until(lambda: available(app))
    assert post(app, form()).status_code == 202


# --------------------------------------------------------------------------- while running


def test_a_full_disk_refuses_new_requests_with_503_and_sends_nothing(make_hub: HubMaker, disk: Disk) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound, hub_state_check=CHECK, hub_retry_delay=0.01)
    subscribe_active(app, outbound)
    disk.full()
    assert post(app, form(callback="https://new.example/cb")).status_code == 503  # was a 500 and a traceback
    assert_unavailable(app, "database or disk is full")
    change(make_hub, app, 2)
    wait_idle(app.hub)
    assert outbound.matching("POST") == []  # nothing is sent that could not be recorded
    disk.heal()
    wait_until(lambda: available(app))
    outbound.wait_for(1, "POST")
    wait_idle(app.hub)
    assert len(outbound.matching("POST")) == 1 and db_rows(app.config.state_dir) == [(CALLBACK, "/feed.xml")]
    assert db_rows(app.config.state_dir, "intents") == []  # the refused request left nothing behind


def test_a_verification_is_sent_once_when_its_result_cannot_be_written(
    make_hub: HubMaker, disk: Disk
) -> None:
    def fill_the_disk_then_echo(call: Any) -> hub.Reply:
        disk.full()
        return echo(call)

    outbound = FakeOutbound(fill_the_disk_then_echo)
    app = make_hub(outbound, hub_state_check=CHECK, hub_retry_delay=0.01)
    assert post(app, form()).status_code == 202
    outbound.wait_for(1, "GET")
    wait_until(lambda: not available(app))
    wait_idle(app.hub)
    outbound.answer = echo
    disk.heal()
    wait_until(lambda: available(app))
    wait_idle(app.hub)
    assert len(outbound.matching("GET")) == 1  # not again on every retry
    assert db_rows(app.config.state_dir) == [(CALLBACK, "/feed.xml")]  # written back from memory
    assert db_rows(app.config.state_dir, "intents") == []
    app.hub.stop()
    again = FakeOutbound()
    restarted = make_hub(again)
    assert restarted.hub.status()["subscriptions"] == 1
    wait_idle(restarted.hub)
    assert again.calls == []


def test_a_delivery_whose_record_fails_is_not_sent_again(make_hub: HubMaker, disk: Disk) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound, hub_state_check=CHECK, hub_retry_delay=0.01)
    subscribe_active(app, outbound)

    def io_error_after_posts(call: Any) -> hub.Reply:
        if call.method == "POST":
            disk.io_error()
        return echo(call)

    outbound.answer = io_error_after_posts
    change(make_hub, app, 2)
    outbound.wait_for(1, "POST")
    wait_until(lambda: not available(app))
    assert "disk I/O error" in app.hub.status()["reason"]
    disk.heal()
    wait_until(lambda: available(app))
    wait_idle(app.hub)
    app.hub.stop()
    restarted_outbound = FakeOutbound()
    restarted = make_hub(restarted_outbound)
    wait_idle(restarted.hub)
    assert (
        len(outbound.matching("POST")) == 1 and restarted_outbound.calls == []
    )  # once, even across a restart


def test_a_replaced_database_is_noticed_and_written_back(
    make_hub: HubMaker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO)
    outbound = FakeOutbound()
    app = make_hub(outbound, hub_state_check=CHECK)
    subscribe_active(app, outbound)
    released: list[object] = []
    real_release = hub_store.StateLock.release
    monkeypatch.setattr(
        hub_store.StateLock, "release", lambda lock: (released.append(lock), real_release(lock))
    )
    path = make_hub.state_dir / hub_store.DB_FILE
    path.rename(path.with_name("old.sqlite3"))
    wait_until(lambda: any(getattr(r, "event", "") == "hub_state_replaced" for r in caplog.records))
    assert [r.levelno for r in caplog.records if getattr(r, "event", "") == "hub_state_replaced"] == [
        logging.ERROR
    ]
    wait_until(lambda: any(getattr(r, "event", "") == "hub_state_recreated" for r in caplog.records))
    assert db_rows(app.config.state_dir) == [(CALLBACK, "/feed.xml")]
    # Its lock file untouched, the lock is kept throughout: no other server can take the hub meanwhile.
    assert released == []


def test_a_second_hub_on_one_state_directory_waits_for_the_lock(
    make_hub: HubMaker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    first_outbound = FakeOutbound()
    first = make_hub(first_outbound)
    subscribe_active(first, first_outbound)
    second_outbound = FakeOutbound()
    second = make_hub(second_outbound, hub_state_check=CHECK)
    assert_unavailable(second, "another reviewsd runs the hub", "pid ")
    first.hub.stop()
    wait_until(lambda: available(second))
    assert second.hub.status()["subscriptions"] == 1  # read from the database it took over
    (taken,) = [r for r in caplog.records if getattr(r, "event", "") == "hub_store_available"]
    assert "1 subscriptions" in taken.getMessage() and "another reviewsd runs the hub" in taken.getMessage()


# --------------------------------------------------------------------------- real server processes


def test_two_servers_one_hub_and_the_second_takes_over_after_a_kill(
    hub_env: HubEnv, subscriber: HTTPSSubscriber
) -> None:
    first = hub_env.start()
    second = hub_env.start("--hub-state-check", "0.1")
    status, _, body = request(second, "GET", "/reviews.json")
    assert status == 200 and body_version(body) == 1  # reads and MCP do not need the hub
    holder = f"pid {first.proc.pid}"
    assert holder in wait_status(second, lambda s: s.get("available") is False)["reason"]
    status, text = hub_request(second, subscriber.url("/cb"))
    assert status == 503 and holder in text.decode()
    subscribe(first, subscriber.url("/cb"))
    wait_status(first, settled(1))

    first.signal(signal.SIGKILL)
    first.proc.wait(10)
    wait_status(second, lambda s: s.get("available") is True and s["subscriptions"] == 1)
    hub_env.write_version(2)
    delivered = subscriber.wait_for(1, "/cb", "POST")
    wait_status(second, lambda s: s["pending_deliveries"] == 0)
    assert [body_version(r.body) for r in delivered] == [2]
    assert len(subscriber.requests("/cb", "POST")) == 1


def test_the_state_directory_deleted_while_running_loses_no_subscription(
    hub_env: HubEnv, subscriber: HTTPSSubscriber
) -> None:
    server = hub_env.start("--hub-state-check", "0.1")
    subscribe(server, subscriber.url("/before"))
    wait_status(server, settled(1))
    shutil.rmtree(hub_env.state_dir)
    entry = server.wait_for_log(lambda e: e.get("event") == "hub_state_replaced")
    assert entry["level"] == "error"
    subscribe(server, subscriber.url("/after"))
    wait_status(server, settled(2))
    assert server.stop() == 0
    restarted = hub_env.start()
    assert wait_status(restarted, lambda s: "subscriptions" in s)["subscriptions"] == 2
    assert [e for e in restarted.log if e.get("event") == "hub_started"][0]["message"].startswith(
        "hub started: 2 subscriptions"
    )


def test_a_server_started_on_an_unusable_state_directory_serves_reads(
    hub_env: HubEnv, tmp_path: Path
) -> None:
    hub_env.state_dir.write_text("a file where the directory should be")
    server = hub_env.start()
    status, _, _ = request(server, "GET", "/reviews.json")
    assert status == 200
    status, _, body = request(server, "GET", "/healthz")
    assert status == 200 and b'"degraded"' in body
    entry = [e for e in server.log if e.get("event") == "hub_store_unavailable"][0]
    assert entry["level"] == "error" and "must be a directory" in entry["message"]
