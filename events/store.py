"""The events' durable state: the reviews last seen, the events recorded and each target's deliveries.

SQLite at STATE_DIR/events.sqlite3 (WAL, synchronous=NORMAL, like the hub's: a commit survives the
process being killed), under an exclusive lock of its own (events.lock), so two servers sharing a state
directory announce each change once. What was seen and the events it made are written in one
transaction: a crash between them can neither lose an event nor announce it twice. A delivery's outcome
is written after its attempt: a crash between the two sends it again, with the same webhook-id.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

from ..websub.store import StateLock, is_corrupt, move_corrupt_database, open_database

log = logging.getLogger("reviewsd.events")

DB_FILE = "events.sqlite3"
LOCK_FILE = "events.lock"
KEEP_FINISHED = 7 * 86400.0  # seconds a delivered or failed delivery stays counted (and in the database)

SCHEMA = """
CREATE TABLE IF NOT EXISTS seen (id TEXT PRIMARY KEY, digest BLOB NOT NULL, review BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    created_at REAL NOT NULL,
    body BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER NOT NULL,
    target TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt REAL NOT NULL,
    outcome TEXT NOT NULL DEFAULT '',
    updated_at REAL NOT NULL,
    PRIMARY KEY (seq, target)
);
CREATE INDEX IF NOT EXISTS deliveries_by_target ON deliveries (target, state, seq);
PRAGMA user_version = 1;
"""
PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


class LockHeld(Exception):
    """Another process announces the changes of this state directory; the message names it."""


class Seen(NamedTuple):
    """The last-seen record: review id to digest, and the insights file's SHA-256."""

    digests: dict[str, bytes]
    insights_sha256: str


class NewEvent(NamedTuple):
    id: str
    type: str
    created_at: float
    body: bytes
    targets: Sequence[str]  # the keys of the targets it goes to


class Pending(NamedTuple):
    """A target's next delivery."""

    seq: int
    event_id: str
    type: str
    created_at: float
    body: bytes
    attempts: int
    next_attempt: float


class EventStore:
    """Thread-safe (one lock, one connection)."""

    def __init__(self, state_dir: str):
        self.directory = Path(state_dir)
        self.path = self.directory / DB_FILE
        self._state_lock = StateLock(self.directory, LOCK_FILE)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        # (pending, failed) deliveries, kept by the thread that changes them (counted at open and after a
        # prune, added to at each change): /healthz reads them from memory (it is answered on the server's
        # selector thread, which must never wait for SQLite).
        self._counts: tuple[int, int] | None = None

    def open(self) -> None:
        """Take the lock and open the database. Raises LockHeld, OSError or sqlite3.Error."""
        with self._lock:
            if self._conn is not None:
                return
            holder = self._state_lock.acquire()
            if holder is not None:
                raise LockHeld(f"another reviewsd announces the changes of {self.directory} ({holder})")
            try:
                self._conn = open_database(self.path, SCHEMA)
            except sqlite3.Error as exc:
                if not is_corrupt(exc):
                    self._state_lock.release()
                    raise
                self._move_aside(exc)
                self._conn = open_database(self.path, SCHEMA)
            self._recount()

    def _move_aside(self, exc: BaseException) -> None:
        target = move_corrupt_database(self.path)
        log.error(
            "events database %s is corrupt (%s): moved aside to %s; a new baseline is recorded and "
            "deliveries not yet made are lost",
            self.path,
            str(exc)[:200],
            target.name,
            extra={"event": "events_store_corrupt"},
        )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._counts = None
            self._state_lock.release()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise sqlite3.ProgrammingError("the events store is closed")
        return self._conn

    # ----------------------------------------------------------------- the last-seen record

    def seen(self) -> Seen | None:
        """The last-seen record, or None before the first baseline."""
        with self._lock:
            conn = self._db()
            row = conn.execute("SELECT value FROM meta WHERE key = 'insights_sha256'").fetchone()
            if row is None:
                return None
            digests = dict(conn.execute("SELECT id, digest FROM seen"))
            return Seen(digests, row[0])

    def reviews(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The JSON last seen of these reviews."""
        with self._lock:
            conn = self._db()
            found = {}
            for review_id in ids:
                row = conn.execute("SELECT review FROM seen WHERE id = ?", (review_id,)).fetchone()
                if row is not None:
                    found[review_id] = row[0]
            return found

    def commit(
        self,
        upserts: Sequence[tuple[str, bytes, bytes]],
        deletions: Sequence[str],
        insights_sha256: str,
        events: Sequence[NewEvent],
        at: float,
    ) -> None:
        """Advance the last-seen record and record the events it made, in one transaction."""
        with self._lock:
            conn = self._db()
            with conn:
                conn.executemany("INSERT OR REPLACE INTO seen (id, digest, review) VALUES (?, ?, ?)", upserts)
                conn.executemany("DELETE FROM seen WHERE id = ?", [(rid,) for rid in deletions])
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('insights_sha256', ?)",
                    (insights_sha256,),
                )
                for event in events:
                    cursor = conn.execute(
                        "INSERT INTO events (id, type, created_at, body) VALUES (?, ?, ?, ?)",
                        (event.id, event.type, event.created_at, event.body),
                    )
                    conn.executemany(
                        "INSERT INTO deliveries (seq, target, state, next_attempt, updated_at) "
                        "VALUES (?, ?, 'pending', ?, ?)",
                        [(cursor.lastrowid, target, at, at) for target in event.targets],
                    )
            self._add(pending=sum(len(event.targets) for event in events))

    # ----------------------------------------------------------------- deliveries

    def next_delivery(self, target: str) -> Pending | None:
        """The target's oldest pending delivery: a target gets its events in order."""
        with self._lock:
            row = (
                self._db()
                .execute(
                    "SELECT d.seq, e.id, e.type, e.created_at, e.body, d.attempts, d.next_attempt "
                    "FROM deliveries d JOIN events e ON e.seq = d.seq "
                    "WHERE d.target = ? AND d.state = 'pending' ORDER BY d.seq LIMIT 1",
                    (target,),
                )
                .fetchone()
            )
            return Pending(*row) if row else None

    def finish(self, seq: int, target: str, state: str, attempts: int, outcome: str, at: float) -> None:
        """Record a pending delivery's end: DELIVERED or FAILED."""
        ended = self._set(
            "UPDATE deliveries SET state = ?, attempts = ?, outcome = ?, updated_at = ? "
            "WHERE seq = ? AND target = ?",
            (state, attempts, outcome, at, seq, target),
        )
        with self._lock:
            self._add(pending=-ended, failed=ended if state == FAILED else 0)

    def retry(
        self, seq: int, target: str, attempts: int, next_attempt: float, outcome: str, at: float
    ) -> None:
        self._set(
            "UPDATE deliveries SET attempts = ?, next_attempt = ?, outcome = ?, updated_at = ? "
            "WHERE seq = ? AND target = ?",
            (attempts, next_attempt, outcome, at, seq, target),
        )

    def _set(self, sql: str, args: tuple) -> int:
        """Run one change; the rows it changed."""
        with self._lock:
            conn = self._db()
            with conn:
                return conn.execute(sql, args).rowcount

    def pending_targets(self) -> set[str]:
        with self._lock:
            rows = self._db().execute("SELECT DISTINCT target FROM deliveries WHERE state = 'pending'")
            return {row[0] for row in rows}

    def abandon(self, targets: Iterable[str], at: float) -> int:
        """Fail the pending deliveries of targets no longer configured; how many."""
        total = 0
        for target in targets:
            with self._lock:
                conn = self._db()
                with conn:
                    failed = conn.execute(
                        "UPDATE deliveries SET state = 'failed', outcome = 'target no longer in the --notify "
                        "file', updated_at = ? WHERE target = ? AND state = 'pending'",
                        (at, target),
                    ).rowcount
                self._add(pending=-failed, failed=failed)
                total += failed
        return total

    def counts(self) -> tuple[int, int]:
        """(pending, failed) deliveries as of the last change (failed ones count for KEEP_FINISHED), from
        memory; sqlite3.Error if the store could not count them."""
        counts = self._counts
        if counts is None:
            raise sqlite3.OperationalError("the events store could not count its deliveries")
        return counts

    def _add(self, pending: int = 0, failed: int = 0) -> None:
        """(Lock held, after a change.) What the change added to `counts`."""
        if self._counts is not None:
            self._counts = self._counts[0] + pending, self._counts[1] + failed

    def _recount(self) -> None:
        """(Lock held.) Count the deliveries for `counts`; None if SQLite cannot."""
        try:
            rows = dict(
                self._db().execute(
                    "SELECT state, count(*) FROM deliveries WHERE state != 'delivered' GROUP BY state"
                )
            )
        except sqlite3.Error:
            self._counts = None
            return
        self._counts = rows.get(PENDING, 0), rows.get(FAILED, 0)

    def prune(self, before: float) -> None:
        """Forget deliveries finished before `before`, and events left without a delivery."""
        with self._lock:
            conn = self._db()
            with conn:
                conn.execute("DELETE FROM deliveries WHERE state != 'pending' AND updated_at < ?", (before,))
                conn.execute("DELETE FROM events WHERE seq NOT IN (SELECT seq FROM deliveries)")
            self._recount()
