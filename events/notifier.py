"""The events at run time: a watcher thread that turns accepted reloads into recorded events, and the
delivery workers that send them, with the hub's outbound rules and scheduler.

Threads: `events-watch` (opens the store, records the baseline, compares each accepted version with the
last-seen record; it also retries a store it cannot use, or another server's lock, every
--hub-state-check seconds); the scheduler's workers, one target's deliveries at a time and in order,
at most --hub-workers-per-host to one host; the outbound reaper (deadlines). docs/events.md says what
users see.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from typing import Any, Callable, Mapping, Sequence

import orjson

from ..config import Config
from ..reviews.datastore import DataStore
from ..web.snapshot import Snapshot
from ..websub.client import READ_LIMIT, Outbound
from ..websub.scheduler import Scheduler
from . import payloads
from .config import MAX_RETRY_DELAY, NotifyConfig, Target
from .diff import changed_fields, compare, digest
from .email import Outcome, send_mail
from .store import DELIVERED, FAILED, KEEP_FINISHED, EventStore, LockHeld, NewEvent

log = logging.getLogger("reviewsd.events")

PRUNE_EVERY = 3600.0  # seconds between removals of deliveries finished KEEP_FINISHED ago


def retry_delay(first: float, attempts: int) -> float:
    """Seconds before the next attempt after `attempts` failed ones: doubling, at most MAX_RETRY_DELAY."""
    return min(first * 2 ** min(attempts - 1, 40), MAX_RETRY_DELAY)  # the exponent bounded: no overflow


def attempt(
    target: Target,
    notify: NotifyConfig,
    config: Config,
    outbound: Any,
    event_id: str,
    body: bytes,
    now: float,
    mailer: Callable[..., Outcome] = send_mail,
) -> Outcome:
    """One attempt to give one event (its stored JSON `body`) to one target."""
    if target.kind == "email":
        assert notify.smtp is not None  # load_notify refuses alerts without [smtp]
        message = payloads.email_message(orjson.loads(body), notify.smtp.sender, target.to)
        return mailer(notify.smtp, message, config.hub_delivery_timeout, config.ca_file)
    if target.format == "slack":
        body = payloads.slack_body(orjson.loads(body))
        headers = {"Content-Type": "application/json"}
    else:
        headers = payloads.standard_headers(target.secret, event_id, int(now), body)
    reply = outbound.request("POST", target.url, headers, body, READ_LIMIT)
    # 410 Gone: the receiver says it wants no more (Standard Webhooks): not retried.
    return Outcome(reply.ok, reply.describe(), permanent=reply.status == 410)


class Notifier:
    """Events for the targets of one --notify file, from `store`'s reloads."""

    def __init__(
        self,
        store: DataStore[Snapshot],
        config: Config,
        notify: NotifyConfig,
        *,
        clock: Callable[[], float] = time.time,
        outbound: Any = None,
        mailer: Callable[..., Outcome] = send_mail,
    ):
        self.store = store
        self.config = config
        self.notify = notify
        self.targets: Mapping[str, Target] = {target.key: target for target in notify.targets}
        self.clock = clock
        self.mailer = mailer
        self.db = EventStore(config.state_dir)
        self.outbound = outbound or Outbound(config.ca_file, config.allow_private_callbacks)
        if outbound is None:
            self.outbound.total_timeout = config.hub_delivery_timeout
        self.scheduler = Scheduler(
            self._deliver_next,
            max(1, min(8, len(self.targets))),
            clock,
            retry_after=config.hub_work_retry,
            limits=self._limits,
        )
        self.problem: str | None = "not started yet"  # why the store cannot be used; None while it can
        self._changed = threading.Event()
        self._stopped = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="events-watch", daemon=True)

    def start(self) -> None:
        self.scheduler.start()
        self._changed.set()  # compare at once: changes made while stopped are announced now
        self._watcher.start()

    def on_reload(self, old: Any, new: Any) -> None:
        """DataStore listener: the watcher compares the new version (it never blocks the reload)."""
        self._changed.set()

    def stop(self, timeout: float = 10.0) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._changed.set()
        self._watcher.join(timeout)
        if not self.scheduler.stop(timeout):
            self.outbound.abort_all()
            self.scheduler.stop(2.0)
        self.outbound.close()
        self.db.close()
        log.info("events stopped", extra={"event": "events_stopped"})

    def status(self) -> dict[str, Any]:
        """The events' part of /healthz: counts only."""
        answer: dict[str, Any] = {
            "enabled": True,
            "running": not self._stopped.is_set(),
            "available": self.problem is None,
            "targets": len(self.targets),
        }
        if self.problem is not None:
            answer["reason"] = self.problem
            return answer
        try:
            pending, failed = self.db.counts()
        except sqlite3.Error:
            return {**answer, "available": False, "reason": "the events store cannot be read"}
        return {**answer, "pending_deliveries": pending, "failed_deliveries": failed}

    # ----------------------------------------------------------------- watching (events-watch thread)

    def _watch(self) -> None:
        last_prune = 0.0
        while not self._stopped.is_set():
            if self.problem is not None and not self._open():
                self._stopped.wait(self.config.hub_state_check)
                continue
            if self.clock() - last_prune > PRUNE_EVERY:
                last_prune = self.clock()
                self._quietly(lambda: self.db.prune(self.clock() - KEEP_FINISHED))
            if not self._changed.wait(PRUNE_EVERY):
                continue
            self._changed.clear()
            if self._stopped.is_set():
                return
            try:
                self.check()
            except (sqlite3.Error, OSError) as exc:
                log.error(
                    "cannot record events (%s); trying again in %g s; nothing is lost: the next try "
                    "compares with the last record written",
                    exc,
                    self.config.hub_state_check,
                    extra={"event": "events_record_failed"},
                )
                self.problem = f"cannot record events: {exc}"
                self._changed.set()
                self._stopped.wait(self.config.hub_state_check)

    def _open(self) -> bool:
        try:
            self.db.open()
        except LockHeld as exc:
            self._unavailable(str(exc), "this server announces nothing until that one stops")
            return False
        except (sqlite3.Error, OSError) as exc:
            self._unavailable(f"cannot use {self.db.path}: {exc}", f"check {self.db.directory}")
            return False
        try:
            gone = set(self.db.pending_targets()) - set(self.targets)
            if gone:
                count = self.db.abandon(gone, self.clock())
                log.warning(
                    "%d pending deliveries dropped: their targets are no longer in %s",
                    count,
                    self.notify.path,
                    extra={"event": "deliveries_dropped", "count": count},
                )
            pending = self.db.pending_targets()
        except sqlite3.Error as exc:
            self._unavailable(f"cannot use {self.db.path}: {exc}", f"check {self.db.directory}")
            return False
        was, self.problem = self.problem, None
        for key in pending:
            self.scheduler.poke(key)
        self._changed.set()
        log.info(
            "events available: %d targets from %s (was: %s)",
            len(self.targets),
            self.notify.path,
            was,
            extra={"event": "events_available", "targets": len(self.targets)},
        )
        return True

    def _unavailable(self, reason: str, remedy: str) -> None:
        if self.problem != reason:
            log.warning(
                "events not announced: %s; %s (retried every %g s)",
                reason,
                remedy,
                self.config.hub_state_check,
                extra={"event": "events_unavailable"},
            )
        self.problem = reason

    def _quietly(self, work: Callable[[], object]) -> None:
        try:
            work()
        except sqlite3.Error as exc:
            log.warning("events store upkeep failed: %s", exc, extra={"event": "events_upkeep_failed"})

    def check(self) -> int:
        """Compare the version served with the last-seen record, record the events; how many."""
        snapshot = self.store.current
        dataset = snapshot.dataset
        current = [(dataset.ids[pos], dataset.review_json(pos)) for pos in range(len(dataset.reviews))]
        digests = [(review_id, digest(body)) for review_id, body in current]
        seen = self.db.seen()
        now = self.clock()
        if seen is None:
            rows = [(rid, d, body) for (rid, d), (_, body) in zip(digests, current)]
            self.db.commit(rows, [], dataset.insights_sha256, [], now)
            log.info(
                "events baseline recorded: %d reviews; changes from now on are announced",
                len(rows),
                extra={"event": "events_baseline", "reviews": len(rows)},
            )
            return 0
        changes = compare(seen.digests, digests)
        if not (changes.created or changes.updated or changes.deleted) and (
            dataset.insights_sha256 == seen.insights_sha256
        ):
            log.info(
                "events: nothing changed since the last record (%d reviews)",
                len(digests),
                extra={"event": "events_unchanged"},
            )
            return 0
        bodies = dict(current)
        before = self.db.reviews([*changes.updated, *changes.deleted])
        business = dataset.business
        made: list[dict[str, Any]] = []
        for review_id in changes.created:
            review = orjson.loads(bodies[review_id])
            made.append(payloads.review_event("review.created", review, business, self._page(review_id), now))
        for review_id in changes.updated:
            old, new = orjson.loads(before[review_id]), orjson.loads(bodies[review_id])
            fields = changed_fields(old, new)
            if fields:
                made.append(
                    payloads.review_event(
                        "review.updated", new, business, self._page(review_id), now, fields, old
                    )
                )
        for review_id in changes.deleted:
            made.append(
                payloads.review_event("review.deleted", orjson.loads(before[review_id]), business, None, now)
            )
        if dataset.insights_sha256 != seen.insights_sha256:
            made.append(
                payloads.insights_event(
                    dataset.insights_doc, business, self.config.url("/insights.json"), now
                )
            )
        events = []
        for event in made:
            review = event["data"].get("review")
            rating = review["rating"] if review is not None else None
            keys = [
                key for key, target in self.targets.items() if target.filters.wants(event["type"], rating)
            ]
            if keys:
                events.append(
                    NewEvent(payloads.new_event_id(), event["type"], now, payloads.encode(event), keys)
                )
        d = dict(digests)
        upserts = [(rid, d[rid], bodies[rid]) for rid in (*changes.created, *changes.updated)]
        self.db.commit(upserts, changes.deleted, dataset.insights_sha256, events, now)
        counts = {
            kind: sum(e["type"] == kind for e in made) for kind in dict.fromkeys(e["type"] for e in made)
        }
        log.info(
            "events recorded: %s; %d deliveries to make",
            ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "none",
            sum(len(e.targets) for e in events),
            extra={"event": "events_recorded", **{kind.replace(".", "_"): n for kind, n in counts.items()}},
        )
        for key in dict.fromkeys(key for event in events for key in event.targets):
            self.scheduler.poke(key)
        return len(made)

    def _page(self, review_id: str) -> str:
        return self.config.url("/reviews/" + review_id)

    # ----------------------------------------------------------------- delivering (scheduler workers)

    def _limits(self, key: str) -> Sequence[tuple[str, int]]:
        target = self.targets.get(key)
        return (("host " + target.host, self.config.hub_workers_per_host),) if target else ()

    def _deliver_next(self, key: str) -> float | None:
        """One attempt at the target's oldest pending delivery; when to look again."""
        target = self.targets.get(key)
        if target is None or self.problem is not None or self._stopped.is_set():
            return None
        pending = self.db.next_delivery(key)
        if pending is None:
            return None
        now = self.clock()
        if pending.next_attempt > now:
            return pending.next_attempt
        outcome = attempt(
            target, self.notify, self.config, self.outbound, pending.event_id, pending.body, now, self.mailer
        )
        attempts = pending.attempts + 1
        now = self.clock()
        extra = {
            "target": target.name,
            "event_id": pending.event_id,
            "type": pending.type,
            "attempts": attempts,
        }
        # What each of the three log lines below says, in this order.
        said = (pending.type, pending.event_id, target.name, outcome.description, attempts)
        if outcome.ok:
            self.db.finish(pending.seq, key, DELIVERED, attempts, outcome.description, now)
            log.info(
                "%s %s delivered to %s (%s, attempt %d)", *said, extra={"event": "event_delivered", **extra}
            )
            return now
        if self._stopped.is_set():
            return None  # cut short by the stop: still pending, sent after the next start
        delay = retry_delay(self.notify.retry_delay, attempts)
        if outcome.permanent or now + delay > pending.created_at + self.notify.retry_for:
            self.db.finish(pending.seq, key, FAILED, attempts, outcome.description, now)
            log.warning(
                "%s %s not delivered to %s: %s; given up after %d attempts",
                *said,
                extra={"event": "event_failed", **extra},
            )
            return now
        self.db.retry(pending.seq, key, attempts, now + delay, outcome.description, now)
        log.debug(
            "%s %s to %s: %s (attempt %d); next in %.1f s",
            *said,
            delay,
            extra={"event": "event_attempt_failed", **extra},
        )
        return now + delay


def start_notifier(
    store: DataStore[Snapshot], config: Config, notify: NotifyConfig, **kwargs: Any
) -> Notifier:
    """Create and start the events of `notify`, following `store`'s reloads."""
    notifier = Notifier(store, config, notify, **kwargs)
    store.subscribe(notifier.on_reload)
    notifier.start()
    return notifier
