"""The hub's timing: a token bucket per client for subscription requests, and the scheduler that runs each
subscription's work on a pool of threads when it falls due."""

from __future__ import annotations

import heapq
import logging
import threading
import time
from typing import Callable, Sequence

from .store import Key

log = logging.getLogger("reviewsd.hub")


class RateLimiter:
    """A token bucket per client address: `per_minute` requests a minute, bursts of as many."""

    MAX_CLIENTS = 10000  # buckets kept

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic):
        self._rate = per_minute / 60.0
        self._capacity = max(1.0, per_minute)
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # least recently seen first
        self._lock = threading.Lock()

    def wait_needed(self, client: str) -> float:
        """0 when the request may go ahead (a token is taken), else the seconds until one is free."""
        if self._rate <= 0:
            return 0.0
        now = self._clock()
        with self._lock:
            tokens, then = self._buckets.pop(client, (self._capacity, now))
            tokens = min(self._capacity, tokens + (now - then) * self._rate)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / self._rate
            self._buckets[client] = (tokens - 1 if wait == 0 else tokens, now)
            if len(self._buckets) > self.MAX_CLIENTS:
                del self._buckets[next(iter(self._buckets))]  # the least recently seen client starts afresh
        return wait


class Scheduler:
    """Runs `work(key)` on a pool of threads when each key falls due, never twice at once for one key.

    `work` returns when it wants to run again for that key (a clock time) or None. A key poked while it
    runs is run again right after. Times come from `clock`; after moving a test clock, call `wake()`.
    """

    MAX_WAIT = 30.0  # re-read the clock at least this often

    def __init__(
        self,
        work: Callable[[Key], float | None],
        workers: int,
        clock: Callable[[], float],
        retry_after: float = 30.0,
        limits: Callable[[Key], Sequence[tuple[str, int]]] = lambda key: (),
    ):
        self._work = work
        # The caps a key runs under, as (name, most running at once): one callback host, the slow lane.
        # A due key whose cap is full waits in _blocked[name], still due, until one under that cap ends.
        self._limits = limits
        self._counts: dict[str, int] = {}
        self._held: dict[Key, tuple[tuple[str, int], ...]] = {}
        self._blocked: dict[str, dict[Key, float]] = {}
        self._caps: dict[str, int] = {}  # the most of each cap with blocked keys
        self._clock = clock
        self._retry_after = (
            retry_after  # after `work` raised (a database error, say): try that key again then
        )
        self._cond = threading.Condition()
        self._heap: list[tuple[float, Key]] = []  # (time, key); ties are ordered by the key
        self._due: dict[Key, float] = {}
        self._running: set[Key] = set()
        self._again: dict[Key, float] = {}
        self._stopping = False
        self._threads = [
            threading.Thread(target=self._loop, name=f"hub-worker-{i}", daemon=True)
            for i in range(max(1, workers))
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def poke(self, key: Key, at: float | None = None) -> None:
        """Run `key` at `at` (default: now), or earlier if it is already due earlier."""
        at = self._clock() if at is None else at
        with self._cond:
            if key in self._running:
                self._again[key] = min(at, self._again.get(key, at))
            elif self._push(key, at):
                self._cond.notify()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def busy(self) -> int:
        """Keys due now or running."""
        now = self._clock()
        with self._cond:
            return len(self._running) + sum(1 for at in self._due.values() if at <= now)

    def stop(self, timeout: float) -> bool:
        """Let running work finish within `timeout`; True when every worker has ended."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    def _push(self, key: Key, at: float) -> bool:
        if key in self._due and self._due[key] <= at:
            return False
        self._due[key] = at
        heapq.heappush(self._heap, (at, key))
        if len(self._heap) > 2 * len(self._due) + 1024:
            # Entries superseded by an earlier time stay in the heap until they surface (each change
            # of a topic leaves one per subscriber, for up to a lease): rebuilt from what is due.
            self._heap = [(due_at, due_key) for due_key, due_at in self._due.items()]
            heapq.heapify(self._heap)
        return True

    def _take(self) -> Key | None:
        """The next due key, waiting for one; None when stopping. Called with the condition held."""
        while not self._stopping:
            while self._heap and self._due.get(self._heap[0][1]) != self._heap[0][0]:
                heapq.heappop(self._heap)  # superseded by an earlier time, or already taken
            if (not self._heap or self._heap[0][0] > self._clock()) and self._unblock_all():
                continue
            if not self._heap:
                self._cond.wait()
                continue
            at, key = self._heap[0]
            delay = at - self._clock()
            if delay > 0:
                self._cond.wait(min(delay, self.MAX_WAIT))
                continue
            heapq.heappop(self._heap)
            limits = self._limits(key)
            full = next((name for name, most in limits if self._counts.get(name, 0) >= most), None)
            if full is not None:
                self._blocked.setdefault(full, {})[key] = at
                self._caps[full] = dict(limits)[full]
                # Woken by the end of one under the `full` cap; under its other caps, it may have been the
                # one due key a free place was waiting for: hand that place to the next.
                for name, most in limits:
                    if name != full:
                        self._unblock(name, most)
                continue
            del self._due[key]
            self._running.add(key)
            self._held[key] = tuple(limits)
            for name, _ in limits:
                self._counts[name] = self._counts.get(name, 0) + 1
            return key
        return None

    def _release(self, key: Key) -> None:
        """`key` has ended: a due key waiting for each cap it held goes back on the heap."""
        for name, most in self._held.pop(key, ()):
            self._counts[name] -= 1
            if not self._counts[name]:
                del self._counts[name]
            self._unblock(name, most)

    def _unblock_all(self) -> bool:
        """Before a worker waits: put back a due key of every cap with room (its key may have run under other
        caps since: its host turned fast). True if any went back."""
        before = len(self._heap)
        for name in list(self._blocked):
            self._unblock(name, self._caps[name])
        return len(self._heap) > before

    def _unblock(self, name: str, most: int) -> None:
        """If the cap `name` has room, put its longest-waiting due key back on the heap."""
        blocked = self._blocked.get(name)
        while blocked and self._counts.get(name, 0) < most:
            waiting, at = next(iter(blocked.items()))
            del blocked[waiting]
            if self._due.get(waiting) == at:  # else run or rescheduled since
                heapq.heappush(self._heap, (at, waiting))
                break
        if blocked is not None and not blocked:
            del self._blocked[name], self._caps[name]

    def _loop(self) -> None:
        while True:
            with self._cond:
                key = self._take()
            if key is None:
                return
            try:
                later = self._work(key)
            except Exception:
                log.exception(
                    "hub work failed; trying again in %.0f s",
                    self._retry_after,
                    extra={"event": "hub_work_failed"},
                )
                later = self._clock() + self._retry_after
            with self._cond:
                self._running.discard(key)
                self._release(key)
                self._cond.notify()
                times = [t for t in (later, self._again.pop(key, None)) if t is not None]
                if times and self._push(key, min(times)):
                    self._cond.notify()
