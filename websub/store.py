"""The hub's state: subscriptions and pending intents, held in memory and written through to SQLite.

Memory is what the running hub reads; SQLite under `--state-dir` is the durable copy a restart
reads back. How the store survives its directory failing (the lock, commit before a 202, write-back,
recreation, corrupt files moved aside): docs/internals.md, "The hub's store". Every method is
thread-safe (one lock); `maintain()` runs on the hub's keeper thread.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import socket
import sqlite3
import threading
import time
from collections import Counter
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, NamedTuple

log = logging.getLogger("reviewsd.hub")

DB_FILE = "hub.sqlite3"
LOCK_FILE = "hub.lock"


def move_corrupt_database(path: Path) -> Path:
    """Rename a corrupt SQLite database (and its -wal and -shm) to PATH.corrupt-<UTC time>, never over an
    earlier one; the new name. The hub's store and the events' store both keep theirs this way."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 0
    while target.exists():  # never over an earlier one
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    for suffix in ("", "-wal", "-shm"):
        with suppress(FileNotFoundError):
            os.replace(f"{path}{suffix}", f"{target}{suffix}")
    return target


class Key(NamedTuple):
    """A subscription's identity: one callback's subscription to one topic (equal to the plain tuple)."""

    callback: str  # the URL exactly as given
    topic: str  # the topic's path


class Work(NamedTuple):
    """A subscription as the hub schedules it at its start (Store.all_work)."""

    key: Key
    last_etag: str | None  # the content last delivered
    next_attempt: float  # when a failed delivery is retried
    expires_at: float


class StoreClosed(Exception):
    """The hub has stopped; its database is closed."""


class StoreUnavailable(Exception):
    """The store cannot be written now; the message says why."""


class CapReached(Exception):
    """A new subscription would pass one of the Caps (total, per topic, per callback host): nothing was
    written, and the caller answers 403 with the message, which names the limit."""


@dataclass(frozen=True)
class Caps:
    total: int
    per_topic: int
    per_host: int


class Intent(NamedTuple):
    """A subscribe or unsubscribe request accepted (202) and waiting for verification: a row of the
    intents table."""

    id: int
    callback: str
    topic: str
    topic_url: str
    host: str
    mode: str
    lease_seconds: int
    secret: str | None
    created_at: float = 0.0

    @property
    def key(self) -> Key:
        return Key(self.callback, self.topic)


class Subscription(NamedTuple):
    """One verified subscription: a row of the subscriptions table."""

    callback: str
    topic: str
    topic_url: str
    host: str
    secret: str | None
    lease_seconds: int
    expires_at: float
    created_at: float
    verified_at: float
    last_etag: str | None
    failures: int = 0
    next_attempt: float = 0.0

    @property
    def key(self) -> Key:
        return Key(self.callback, self.topic)


SCHEMA = """
CREATE TABLE IF NOT EXISTS subscriptions (
    callback TEXT NOT NULL,
    topic TEXT NOT NULL,
    topic_url TEXT NOT NULL,
    host TEXT NOT NULL,
    secret TEXT,
    lease_seconds INTEGER NOT NULL,
    expires_at REAL NOT NULL,
    created_at REAL NOT NULL,
    verified_at REAL NOT NULL,
    last_etag TEXT,
    failures INTEGER NOT NULL DEFAULT 0,
    next_attempt REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (callback, topic)
);
CREATE TABLE IF NOT EXISTS intents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    callback TEXT NOT NULL,
    topic TEXT NOT NULL,
    topic_url TEXT NOT NULL,
    host TEXT NOT NULL,
    mode TEXT NOT NULL,
    lease_seconds INTEGER NOT NULL,
    secret TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS intents_pair ON intents (callback, topic);
PRAGMA user_version = 1;
"""
_SUB_COLUMNS = ", ".join(Subscription._fields)
_INTENT_COLUMNS = ", ".join(Intent._fields)
_INSERT_SUB = (
    f"INSERT OR REPLACE INTO subscriptions ({_SUB_COLUMNS})"
    f" VALUES ({', '.join('?' * len(Subscription._fields))})"
)
_INSERT_INTENT = f"INSERT INTO intents ({_INTENT_COLUMNS}) VALUES ({', '.join('?' * len(Intent._fields))})"
_DELETE_SUB = "DELETE FROM subscriptions WHERE callback = ? AND topic = ?"


def _file_id(file: Path | int) -> tuple[int, int]:
    """A file's device and inode, by path or descriptor: equal only for the same file."""
    info = os.stat(file)
    return info.st_dev, info.st_ino


@dataclass(frozen=True)
class StoreProblem:
    """Why the store cannot be used (for 503s and /healthz), since when."""

    reason: str
    since: float
    held: bool = False  # another process holds the lock (not a fault of this one)


class Corrupt(sqlite3.DatabaseError):
    """PRAGMA quick_check found the database file unsound."""


def open_database(path: Path, schema: str) -> sqlite3.Connection:
    """The SQLite database at `path` (made mode 0600: it holds subscribers' secrets, or the reviews and what
    was sent where), checked sound (Corrupt if not), in WAL with synchronous=NORMAL (a commit survives a
    kill; a power loss may lose the last ones), `schema` applied. The hub's and the events' stores."""
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    conn = sqlite3.connect(path, check_same_thread=False, timeout=10)
    try:
        if (found := conn.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
            raise Corrupt(found)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(schema)
    except BaseException:
        conn.close()
        raise
    return conn


def is_corrupt(exc: sqlite3.Error) -> bool:
    """Whether an error says the database file is unsound (then it is moved aside: move_corrupt_database)."""
    return isinstance(exc, Corrupt) or sqlite_code(exc) in (SQLITE_CORRUPT, SQLITE_NOTADB)


# SQLite's primary result codes (https://sqlite.org/rescode.html) that the store tells apart.
SQLITE_READONLY = 8
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_NOTADB = 26


def sqlite_code(exc: BaseException) -> int:
    """SQLite's primary result code of an exception (SQLITE_FULL is 13); 0 for one SQLite did not raise.

    Every sqlite3.Error SQLite raises carries its extended code (`sqlite_errorcode`); its low byte is the
    primary code.
    """
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def remedy_for(exc: BaseException, directory: Path) -> str:
    """What an operator should do about `exc` (for the log)."""
    code = sqlite_code(exc)
    if code == SQLITE_FULL or getattr(exc, "errno", None) == errno.ENOSPC:
        return f"free space on the file system of {directory}"
    if code == SQLITE_READONLY or getattr(exc, "errno", None) == errno.EROFS:
        return f"make {directory} writable by this service"
    if isinstance(exc, (NotADirectoryError, FileExistsError)):
        return f"{directory} must be a directory: move what is there aside"
    return f"check {directory} and the disk holding it"


class StateLock:
    """An exclusive flock on STATE_DIR/hub.lock (or `name`: the events' lock), which names its holder."""

    def __init__(self, directory: Path, name: str = LOCK_FILE):
        self.path = directory / name
        self._fd: int | None = None

    def acquire(self) -> str | None:
        """Take the lock: None when held here now, else who holds it. Raises OSError."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            return holder
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on host {socket.gethostname()}\n".encode(), 0)
        self._fd = fd
        return None

    def intact(self) -> bool:
        """Held here, and the file at its path is the one locked."""
        try:
            return self._fd is not None and _file_id(self.path) == _file_id(self._fd)
        except OSError:
            return False

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor releases the flock
            self._fd = None


class Counts(NamedTuple):
    """(topic, last ETag, count) groups of subscriptions, and the number of pending intents."""

    groups: tuple[tuple[str, str | None, int], ...]
    intents: int


class Store:
    """Subscriptions and intents in memory, written through to STATE_DIR/hub.sqlite3 (module docstring).

    The contract: `add_intent` returns only once SQLite has committed the intent (so the hub's 202 comes
    after it is durable), or raises StoreUnavailable (`problem` says why) or CapReached, and nothing was
    queued; reading or changing subscriptions raises StoreClosed after `close()`. WAL with
    synchronous=NORMAL: a commit survives the process being killed at any moment; a power loss may lose
    the last commits (a delivery is then sent again). One process holds the state directory at a time (a
    lock file); every method is thread-safe.
    """

    def __init__(self, state_dir: str, retry_every: float = 5.0):
        self.directory = Path(state_dir)
        self.path = self.directory / DB_FILE
        self._retry_every = retry_every
        self._state_lock = StateLock(self.directory)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None  # the database file, by device and inode
        self._subs: dict[Key, Subscription] = {}
        self._intents: dict[Key, Intent] = {}  # a pair's one pending intent (a new one replaces it)
        self._next_id = 1
        # Subscriptions by (topic, last ETag), kept as they change, and published with the intents' number as
        # one immutable Counts: /healthz reads it without the lock, which a write to a locked database holds
        # for up to SQLite's timeout (issue 39).
        self._groups: Counter[tuple[str, str | None]] = Counter()
        self._counts = Counts((), 0)
        self._loaded = False  # memory holds the database's content (else it is read at the next open)
        self._closed = False
        self.problem: StoreProblem | None = StoreProblem(
            "the hub's store has not been opened yet", time.time()
        )

    def open(self) -> bool:
        """Take the lock and open the database: True when the store can be used."""
        with self._lock:
            return self._reopen(first=True)

    def maintain(self) -> bool:
        """Check the directory, or retry a store that failed: True when it has just become usable."""
        with self._lock:
            if self._closed:
                return False
            if self.problem is None:
                self._ensure_intact()
                return False
            return self._reopen()

    def close(self) -> None:
        """Write back what a failed store holds (one last try), close the database and release the lock."""
        with self._lock:
            if self._closed:
                return
            if self.problem is not None and self._loaded and not self.problem.held and not self._reopen():
                log.error(
                    "hub stopping with changes its store could not take (%s): subscriptions verified since "
                    "then are lost; pending verifications in the database are verified again at the next "
                    "start",
                    self.problem.reason,
                    extra={"event": "hub_store_unsaved"},
                )
            self._closed = True
            self._disconnect()
            self._state_lock.release()

    def _reopen(self, first: bool = False) -> bool:
        """(Lock held.) Lock, connect, then load the database (first time) or write memory back into it."""
        was = self.problem
        self._disconnect()
        try:
            if not self._state_lock.intact():
                self._state_lock.release()
                holder = self._state_lock.acquire()
                if holder is not None:
                    return self._unavailable(
                        f"another reviewsd runs the hub on {self.directory} ({holder})",
                        "this server serves reads and MCP and takes the hub over when that one stops",
                        held=True,
                    )
            conn = self._connect()
            if self._loaded:
                self._write_back(conn)
            else:
                self._load(conn)
            self._identity = _file_id(self.path)
        except (sqlite3.Error, OSError) as exc:
            return self._failed(exc)  # which closes the connection
        if was is not None and not first:  # a recovery or a takeover
            log.info(
                "hub store available: %d subscriptions, %d pending verifications (was: %s)",
                len(self._subs),
                len(self._intents),
                was.reason,
                extra={"event": "hub_store_available"},
            )
        self._loaded = True
        self.problem = None
        return True

    def _connect(self) -> sqlite3.Connection:
        """(Lock held.) Connect to a sound database as self._conn (a corrupt one is moved aside first), which
        a later failure's _disconnect closes. Raises sqlite3.Error, OSError."""
        try:
            self._conn = open_database(self.path, SCHEMA)
        except sqlite3.Error as exc:
            if not is_corrupt(exc):
                raise
            self._move_aside(exc)
            self._conn = open_database(self.path, SCHEMA)
        return self._conn

    def _move_aside(self, exc: BaseException) -> None:
        """Keep a corrupt database under a name that says when and why; the store then starts empty."""
        target = move_corrupt_database(self.path)
        log.error(
            "hub database %s is corrupt (%s): moved aside to %s; the hub starts with %s; subscribers "
            "come back at their next renewal",
            self.path,
            str(exc)[:200],
            target.name,
            "the subscriptions it holds in memory" if self._loaded else "no subscriptions",
            extra={"event": "hub_store_corrupt", "moved_to": str(target)},
        )

    def _load(self, conn: sqlite3.Connection) -> None:
        subs = [Subscription(*row) for row in conn.execute(f"SELECT {_SUB_COLUMNS} FROM subscriptions")]
        intents = [Intent(*row) for row in conn.execute(f"SELECT {_INTENT_COLUMNS} FROM intents")]
        self._subs = {sub.key: sub for sub in subs}
        self._intents = {intent.key: intent for intent in intents}
        self._next_id = max((intent.id for intent in intents), default=0) + 1
        self._groups = Counter((sub.topic, sub.last_etag) for sub in subs)
        self._publish()

    def _put(self, sub: Subscription) -> None:
        """(Lock held.) Hold `sub` in memory, in place of its pair's subscription if any."""
        self._forget(sub.key)
        self._subs[sub.key] = sub
        self._groups[sub.topic, sub.last_etag] += 1

    def _forget(self, key: Key) -> Subscription | None:
        """(Lock held.) Forget the pair's subscription in memory; the one it was, if any."""
        sub = self._subs.pop(key, None)
        if sub is not None:
            self._groups[sub.topic, sub.last_etag] -= 1
            if not self._groups[sub.topic, sub.last_etag]:
                del self._groups[sub.topic, sub.last_etag]
        return sub

    def _publish(self) -> None:
        """(Lock held, after a change.) The counts `counts()` returns from now on."""
        groups = tuple((topic, etag, n) for (topic, etag), n in self._groups.items())
        self._counts = Counts(groups, len(self._intents))

    def _write_back(self, conn: sqlite3.Connection) -> None:
        """Make the database hold exactly what memory holds (one transaction)."""
        with conn:
            conn.execute("DELETE FROM subscriptions")
            conn.execute("DELETE FROM intents")
            conn.executemany(_INSERT_SUB, self._subs.values())
            conn.executemany(_INSERT_INTENT, self._intents.values())

    def _ensure_intact(self) -> bool:
        """(Lock held.) The database and lock file opened are in place, or, removed or replaced, are
        recreated from memory."""
        with suppress(OSError):
            if _file_id(self.path) == self._identity and self._state_lock.intact():
                return True
        log.error(
            "hub state directory %s or its database was removed or replaced; recreating it and writing back "
            "%d subscriptions and %d pending verifications",
            self.directory,
            len(self._subs),
            len(self._intents),
            extra={"event": "hub_state_replaced"},
        )
        if not self._reopen():  # keeps the lock when its file is intact: another server cannot slip in
            return False
        log.info(
            "hub state directory %s recreated: %d subscriptions and %d pending verifications written back",
            self.directory,
            len(self._subs),
            len(self._intents),
            extra={"event": "hub_state_recreated"},
        )
        return True

    def _unavailable(self, reason: str, remedy: str, held: bool = False) -> bool:
        """(Lock held.) Record why the store cannot be used; log it, and what to do, when that changes."""
        if self.problem is None or self.problem.reason != reason:
            if held:
                log.warning("hub not running: %s; %s", reason, remedy, extra={"event": "hub_lock_held"})
            else:
                log.error(
                    "hub store unavailable: %s; the hub accepts no subscriptions and sends nothing until it "
                    "works again (retried every %g s): %s",
                    reason,
                    self._retry_every,
                    remedy,
                    extra={"event": "hub_store_unavailable"},
                )
            self.problem = StoreProblem(reason, time.time(), held)
        self._disconnect()
        return False

    def _disconnect(self) -> None:
        if self._conn is not None:
            with suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the store's lock; StoreClosed once the store is closed."""
        with self._lock:
            if self._closed:
                raise StoreClosed()
            yield

    def _write(self, *statements: tuple[str, tuple]) -> bool:
        """(Lock held.) Run `statements` in one transaction; False, the store unavailable, when they cannot
        be run.

        A removed or replaced state directory is first recreated from memory, which may already hold
        the change.
        """
        if self.problem is not None or not self._ensure_intact():
            return False
        try:
            with self._conn:  # type: ignore[union-attr]
                for sql, args in statements:
                    self._conn.execute(sql, args)  # type: ignore[union-attr]
        except (sqlite3.Error, OSError) as exc:
            return self._failed(exc)
        return True

    def _failed(self, exc: BaseException) -> bool:
        return self._unavailable(f"cannot use {self.path}: {exc}", remedy_for(exc, self.directory))

    def add_intent(self, intent: Intent, caps: Caps) -> bool:
        """Queue a request for verification, durably (it replaces any not yet verified for the pair).

        False when there is nothing to do (unsubscribing a pair the hub does not know); raises CapReached
        when a new pair would exceed a cap, StoreUnavailable when it cannot be recorded.
        """
        with self._locked():
            if self.problem is not None:
                raise StoreUnavailable(self.problem.reason)
            known = intent.key in self._subs or intent.key in self._intents
            if intent.mode == "unsubscribe" and not known:
                return False
            if intent.mode == "subscribe" and not known:
                self._check_caps(intent, caps)
            intent = intent._replace(id=self._next_id)
            if not self._write(
                ("DELETE FROM intents WHERE callback = ? AND topic = ?", intent.key), (_INSERT_INTENT, intent)
            ):
                raise StoreUnavailable(self.problem.reason)  # type: ignore[union-attr]
            self._intents[intent.key] = intent
            self._next_id += 1
            self._publish()
            return True

    def _check_caps(self, intent: Intent, caps: Caps) -> None:
        # The host of every pair held or waiting for verification.
        hosts = {key: sub.host for key, sub in self._subs.items()}
        hosts.update((key, i.host) for key, i in self._intents.items() if i.mode == "subscribe")
        for what, count, limit in (
            ("in total", len(hosts), caps.total),
            ("for this topic", sum(topic == intent.topic for _, topic in hosts), caps.per_topic),
            ("for this callback host", list(hosts.values()).count(intent.host), caps.per_host),
        ):
            if count >= limit:
                raise CapReached(f"the hub already holds {count} subscriptions {what}, its limit")

    def next_intent(self, key: Key) -> Intent | None:
        with self._locked():
            return self._intents.get(key)

    def drop_intent(self, intent_id: int) -> None:
        with self._locked():
            self._settle(intent_id)

    def _settle(self, intent_id: int, *statements: tuple[str, tuple]) -> None:
        """(Lock held.) Forget a verified or dropped intent (not a newer one for its pair) and write
        `statements`."""
        self._intents = {key: i for key, i in self._intents.items() if i.id != intent_id}
        self._publish()
        self._write(*statements, ("DELETE FROM intents WHERE id = ?", (intent_id,)))

    def apply_subscribe(self, intent: Intent, verified_at: float, baseline_etag: str) -> None:
        """The verified subscription: a new one, or a renewal, which changes lease and secret and keeps
        its progress."""
        with self._locked():
            old = self._subs.get(intent.key)
            sub = Subscription(
                intent.callback,
                intent.topic,
                intent.topic_url,
                intent.host,
                intent.secret,
                intent.lease_seconds,
                verified_at + intent.lease_seconds,
                old.created_at if old else verified_at,
                verified_at,
                old.last_etag if old else baseline_etag,
            )
            self._put(sub)
            self._settle(intent.id, (_INSERT_SUB, sub))

    def apply_unsubscribe(self, intent: Intent) -> None:
        with self._locked():
            self._forget(intent.key)
            self._settle(intent.id, (_DELETE_SUB, intent.key))

    def subscription(self, key: Key) -> Subscription | None:
        with self._locked():
            return self._subs.get(key)

    def _update(self, key: Key, **changes: object) -> None:
        with self._locked():
            sub = self._subs.get(key)
            if sub is not None:
                sub = sub._replace(**changes)
                self._put(sub)
                self._publish()
                self._write((_INSERT_SUB, sub))

    def record_delivery(self, key: Key, etag: str) -> None:
        self._update(key, last_etag=etag, failures=0, next_attempt=0.0)

    def record_failure(self, key: Key, failures: int, next_attempt: float) -> None:
        self._update(key, failures=failures, next_attempt=next_attempt)

    def remove(self, key: Key) -> None:
        with self._locked():
            if self._forget(key) is not None:
                self._publish()
                self._write((_DELETE_SUB, key))

    def expire(self, now: float) -> int:
        with self._locked():
            ended = [key for key, sub in self._subs.items() if sub.expires_at <= now]
            for key in ended:
                self._forget(key)
            if ended:
                self._publish()
                self._write(("DELETE FROM subscriptions WHERE expires_at <= ?", (now,)))
            return len(ended)

    def outdated(self, topic: str, etag: str) -> list[Key]:
        with self._locked():
            return [key for key, sub in self._subs.items() if sub.topic == topic and sub.last_etag != etag]

    def all_work(self) -> tuple[list[Work], list[Key]]:
        """Every subscription and every pair with a pending intent."""
        with self._locked():
            subs = [Work(key, s.last_etag, s.next_attempt, s.expires_at) for key, s in self._subs.items()]
            return subs, list(self._intents)

    def counts(self) -> Counts:
        """The subscriptions by topic and last ETag, and the pending intents, as of the last change: read
        without waiting for the lock (a write can hold it for seconds), so always at once."""
        if self._closed:
            raise StoreClosed()
        return self._counts
