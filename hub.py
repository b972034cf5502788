"""The WebSub hub: subscriptions, verification of intent and content distribution.

Follows the W3C WebSub Recommendation; what this hub adds or chooses is in docs/websub.md. Which
thread runs what, and how state and delivery work: docs/internals.md, "The WebSub hub".
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import math
import secrets
import threading
import time
from typing import Any, Callable, Sequence

from werkzeug.wrappers import Response

from .config import Config, Network, client_address
from .reviews.datastore import DataStore
from .web.responses import status_line
from .web.snapshot import TOPIC_PATHS, Snapshot, link_header
from .websub.client import (  # noqa: F401  (MAX_URL, Callback, Reply: importable from here as before)
    READ_LIMIT,
    Callback,
    Outbound,
    Refusal,
    Refused,
    Reply,
    Resolver,
    normalise_url,
    parse_callback,
    system_resolver,
    vet_addresses,
    with_query,
)
from .websub.forms import FORM, HUB_FIELDS, MAX_URL, parse_subscription, read_form  # noqa: F401
from .websub.scheduler import RateLimiter, Scheduler
from .websub.store import CapReached, Caps, Intent, Key, Store, StoreClosed, StoreUnavailable, Subscription

log = logging.getLogger("reviewsd.hub")

MAX_FAILURES = 3  # consecutive failed deliveries before removal (docs/websub.md)


def retry_delay(first_delay: float, failures: int) -> float:
    """Seconds from a subscription's `failures`-th consecutive failed delivery to its next attempt:
    `first_delay` (--hub-retry-delay) after the first, doubled after each further one."""
    return first_delay * 2 ** (failures - 1)


CHALLENGE_BYTES = 32
# A callback answering later than this (or not at all) puts its host in the hub's slow lane (Hub._limits).
SLOW_REPLY_SECONDS = 5.0


def text_response(status: int, text: str, headers: Sequence[tuple[str, str]] = ()) -> Response:
    return Response(
        text + "\n",
        status=status_line(status),
        content_type="text/plain; charset=utf-8",
        headers=[("Cache-Control", "no-store"), *headers],
    )


class Hub:
    """The WebSub hub of the topics in `store`'s snapshots. Its threads: docs/internals.md."""

    def __init__(
        self,
        store: DataStore[Snapshot],
        config: Config,
        trusted_proxies: Sequence[Network] = (),
        clock: Callable[[], float] = time.time,
        outbound: Outbound | None = None,
        resolve: Resolver = system_resolver,
    ):
        self.store = store
        self.config = config
        self.trusted_proxies = trusted_proxies
        self.clock = clock
        self.resolve = resolve
        self.topics = {normalise_url(config.url(path)) or config.url(path): path for path in TOPIC_PATHS}
        self.leases = (config.hub_lease_min, config.hub_lease_default, config.hub_lease_max)
        self.caps = Caps(config.hub_max_subscriptions, config.hub_max_per_topic, config.hub_max_per_host)
        self.limiter = RateLimiter(config.hub_rate_limit)
        self.outbound = outbound or Outbound(config.ca_file, config.allow_private_callbacks, resolve)
        if outbound is None:
            self.outbound.total_timeout = config.hub_delivery_timeout
        self.db = Store(config.state_dir, config.hub_state_check)
        # Callback hosts whose last delivery was answered in time: they run in the fast lane. Any other host
        # (new, slow, failing) runs in the slow lane, which leaves a quarter of the workers to the fast one,
        # so subscribers that trickle or time out cannot delay the healthy ones; each host has a cap too.
        self.fast_hosts: set[str] = set()
        self.slow_lane = ("slow lane", max(1, config.hub_workers - max(1, config.hub_workers // 4)))
        self.scheduler = Scheduler(
            self._service,
            config.hub_workers,
            clock,
            retry_after=config.hub_work_retry,
            limits=self._limits,
        )
        self._stopped = threading.Event()
        self._keeper = threading.Thread(target=self._keep_store, name="hub-store", daemon=True)

    def start(self) -> None:
        """Open the store (else the keeper thread retries), start the workers and bring every subscriber
        up to date."""
        if self.db.open():
            subscriptions, intents, expired = self._schedule_all()
            log.info(
                "hub started: %d subscriptions, %d pending verifications, %d expired leases removed",
                subscriptions,
                intents,
                expired,
                extra={"event": "hub_started"},
            )
        else:
            log.info(
                "hub started without its store (%s); retrying every %g s",
                self.db.problem.reason,
                self.config.hub_state_check,
                extra={"event": "hub_started", "available": False},
            )
        self.scheduler.start()
        self._keeper.start()

    def _schedule_all(self) -> tuple[int, int, int]:
        """Schedule every pending intent and every subscriber not at the current content; the counts."""
        expired = self.db.expire(self.clock())
        subscriptions, intents = self.db.all_work()
        current = self._etags()
        for work in subscriptions:
            behind = work.last_etag != current.get(work.key.topic)
            self.scheduler.poke(work.key, work.next_attempt if behind else work.expires_at)
        for key in intents:
            self.scheduler.poke(key)
        return len(subscriptions), len(intents), expired

    def _keep_store(self) -> None:
        """The keeper thread: every --hub-state-check seconds, check the state directory, or retry the
        store if it failed."""
        while not self._stopped.wait(self.config.hub_state_check):
            try:
                if self.db.maintain():
                    self._schedule_all()
            except StoreClosed:
                return
            except Exception:
                log.exception("hub store check failed", extra={"event": "hub_store_check_failed"})

    def stop(self, timeout: float = 10.0) -> None:
        """Stop taking work; in-flight requests get `timeout` seconds, then are cut; close the database."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        if not self.scheduler.stop(timeout):
            self.outbound.abort_all()
            self.scheduler.stop(2.0)
        self.outbound.close()
        if self._keeper.is_alive():
            self._keeper.join(timeout)
        self.db.close()
        log.info("hub stopped", extra={"event": "hub_stopped"})

    def status(self) -> dict[str, Any]:
        """The hub's part of /healthz: running (not stopped), available (its store usable) or why not."""
        if self._stopped.is_set():
            return {"enabled": True, "running": False}
        problem = self.db.problem
        if problem is not None:
            since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(problem.since))
            return {
                "enabled": True,
                "running": True,
                "available": False,
                "reason": problem.reason,
                "unavailable_since": since,
            }
        try:
            groups, intents = self.db.counts()
        except StoreClosed:
            return {"enabled": True, "running": False}
        current = self._etags()
        by_topic = {path: 0 for path in TOPIC_PATHS}
        for topic, etag, count in groups:
            by_topic[topic] = by_topic.get(topic, 0) + count
        outdated = sum(count for topic, etag, count in groups if etag != current.get(topic))
        return {
            "enabled": True,
            "running": True,
            "available": True,
            "subscriptions": sum(by_topic.values()),
            "by_topic": by_topic,
            "pending_verifications": intents,
            "pending_deliveries": outdated,
        }

    # ----------------------------------------------------------------- requests and reloads

    def handle(self, environ: dict) -> Response:
        """POST /api/websub/hub: 202 when accepted (verification follows), else 4xx with a text reason."""
        wait = self.limiter.wait_needed(client_address(environ, self.trusted_proxies))
        if wait > 0:
            seconds = max(1, int(wait + 0.999))
            return text_response(
                429,
                f"too many hub requests from this address; retry in {seconds} s",
                [("Retry-After", str(seconds))],
            )
        try:
            if (problem := self.db.problem) is not None:
                raise StoreUnavailable(problem.reason)
            form = read_form(environ, self.config.max_body)
            callback, intent = parse_subscription(form, self.topics, self.leases, self.clock())
            vet_addresses(callback.host, callback.port, self.config.allow_private_callbacks, self.resolve)
            queued = self.db.add_intent(intent, self.caps)
        except Refusal as refusal:
            return text_response(refusal.status, str(refusal))
        except Refused as exc:
            return text_response(400, f"hub.callback refused: {exc}")
        except CapReached as exc:
            return text_response(403, f"subscription refused: {exc}")
        except StoreClosed:
            return text_response(503, "the hub is stopping; try again shortly", [("Retry-After", "5")])
        except StoreUnavailable as exc:
            retry = max(1, math.ceil(self.config.hub_state_check))
            return text_response(
                503,
                f"the hub is unavailable: {exc}; nothing was stored, try again later",
                [("Retry-After", str(retry))],
            )
        log.info(
            "%s request accepted for %s on %s",
            intent.mode,
            callback.display,
            intent.topic,
            extra={
                "event": "hub_request",
                "mode": intent.mode,
                "callback": callback.display,
                "topic": intent.topic,
                "queued": queued,
            },
        )
        if not queued:
            return text_response(
                202, "unsubscribe request accepted; there is no such subscription, nothing to do"
            )
        self.scheduler.poke(intent.key)
        return text_response(
            202, f"{intent.mode} request accepted; the hub will verify it with a GET to the callback"
        )

    def on_reload(self, old: Any, new: Any) -> None:
        """DataStore listener: schedule a delivery for every subscriber of each topic whose body changed."""
        for path in TOPIC_PATHS:
            etag = new.topic(path).identity.etag
            if old is not None and old.topic(path).identity.etag == etag:
                continue
            try:
                keys = self.db.outdated(path, etag)
            except StoreClosed:
                return  # stopped: the next start compares ETags anyway
            for key in keys:
                self.scheduler.poke(key)
            log.info(
                "topic %s changed: %d subscribers to notify",
                path,
                len(keys),
                extra={"event": "topic_changed", "topic": path, "subscribers": len(keys)},
            )

    def _etags(self) -> dict[str, str]:
        snapshot = self.store.current
        return {path: snapshot.topic(path).identity.etag for path in TOPIC_PATHS}

    # ----------------------------------------------------------------- work (worker threads)

    def _limits(self, key: Key) -> Sequence[tuple[str, int]]:
        """The caps `key` runs under: its callback host's, and the slow lane's unless that host is fast."""
        host = _host(key[0])
        per_host = ("host " + host, self.config.hub_workers_per_host)
        return (per_host,) if host in self.fast_hosts else (per_host, self.slow_lane)

    def _request(self, callback: str, *args: Any) -> Reply:
        """An outbound request to `callback`, which moves its host to the fast lane or out of it."""
        started = time.monotonic()
        reply = self.outbound.request(*args)
        in_time = reply.status is not None and time.monotonic() - started <= SLOW_REPLY_SECONDS
        host = _host(callback)
        if in_time and reply.ok:
            self.fast_hosts.add(host)
        elif not in_time:
            self.fast_hosts.discard(host)
        return reply

    def _service(self, key: Key) -> float | None:
        """One step for a pair: its oldest pending intent, else its delivery. When to look again."""
        try:
            if self.db.problem is not None:
                return None  # nothing is sent that cannot be recorded: rescheduled when the store is back
            intent = self.db.next_intent(key)
            if intent is not None:
                self._verify(intent)
                return None if self._stopped.is_set() else self.clock()
            return self._reconcile(key)
        except StoreClosed:
            return None

    def _verify(self, intent: Intent) -> None:
        if intent.mode == "unsubscribe" and self.db.subscription(intent.key) is None:
            self.db.drop_intent(intent.id)  # already gone (lease ended, failures): nothing to confirm
            return
        challenge = secrets.token_urlsafe(CHALLENGE_BYTES)
        query = {"hub.mode": intent.mode, "hub.topic": intent.topic_url, "hub.challenge": challenge}
        if intent.mode == "subscribe":
            query["hub.lease_seconds"] = str(intent.lease_seconds)
        baseline = self._etags()[intent.topic]  # before asking: a change during verification is delivered
        started = self.clock()
        # Not _request: a quick answer to a verification does not make a host fast (a subscriber could answer
        # those at once and trickle its deliveries); a slow one does make it slow.
        started_at = time.monotonic()
        reply = self.outbound.request(
            "GET", with_query(intent.callback, query), {}, None, len(challenge) + READ_LIMIT
        )
        if reply.status is None or time.monotonic() - started_at > SLOW_REPLY_SECONDS:
            self.fast_hosts.discard(_host(intent.callback))
        if self._stopped.is_set() and not reply.ok:
            return  # cut short by the stop: the intent stays and is verified after the next start
        display = _display(intent.callback)
        if not reply.ok or reply.body != challenge.encode("ascii"):
            self.db.drop_intent(intent.id)
            why = "answer differs from the challenge" if reply.ok else reply.describe()
            log.info(
                "%s of %s to %s not verified: %s",
                intent.mode,
                display,
                intent.topic,
                why,
                extra={"event": "verification_failed", "callback": display, "topic": intent.topic},
            )
        elif intent.mode == "subscribe":
            self.db.apply_subscribe(intent, started, baseline)
            log.info(
                "subscription of %s to %s verified (lease %d s)",
                display,
                intent.topic,
                intent.lease_seconds,
                extra={"event": "subscribed", "callback": display, "topic": intent.topic},
            )
        else:
            self.db.apply_unsubscribe(intent)
            log.info(
                "%s unsubscribed from %s",
                display,
                intent.topic,
                extra={"event": "unsubscribed", "callback": display, "topic": intent.topic},
            )

    def _reconcile(self, key: Key) -> float | None:
        """Bring one subscriber to the current content of its topic, if it is due."""
        sub = self.db.subscription(key)
        if sub is None:
            return None
        now = self.clock()
        if sub.expires_at <= now:
            self.db.remove(key)
            log.info(
                "subscription of %s to %s removed: lease ended",
                _display(sub.callback),
                sub.topic,
                extra={"event": "lease_ended", "callback": _display(sub.callback), "topic": sub.topic},
            )
            return None
        payload = self.store.current.topic(sub.topic)
        if sub.last_etag == payload.identity.etag:
            return sub.expires_at
        if sub.next_attempt > now:
            return min(sub.next_attempt, sub.expires_at)
        return self._deliver(sub, payload)

    def _deliver(self, sub: Subscription, payload: Any) -> float | None:
        body = payload.identity.body
        headers = {"Content-Type": payload.content_type, "Link": link_header(self.config, sub.topic)}
        if sub.secret:
            headers["X-Hub-Signature"] = "sha256=" + signature(sub.secret, body)
        reply = self._request(sub.callback, "POST", sub.callback, headers, body, READ_LIMIT)
        display = _display(sub.callback)
        extra = {"callback": display, "topic": sub.topic, "etag": payload.identity.etag}
        if reply.ok:
            self.db.record_delivery(sub.key, payload.identity.etag)
            log.debug("delivered %s to %s", sub.topic, display, extra={"event": "delivered", **extra})
            return self.clock()  # look again: the data may have changed during the request
        if self._stopped.is_set():
            return None  # cut short by the stop: not the subscriber's failure; still due after the next start
        if reply.status == 410:  # "Gone": the subscriber deleted it (WebSub 7 allows ending it here)
            self.db.remove(sub.key)
            log.info(
                "subscription of %s to %s removed: callback answered 410",
                display,
                sub.topic,
                extra={"event": "removed_gone", **extra},
            )
            return None
        failures = sub.failures + 1
        if failures >= MAX_FAILURES:
            self.db.remove(sub.key)
            log.warning(
                "subscription of %s to %s removed after %d failed deliveries (last: %s)",
                display,
                sub.topic,
                failures,
                reply.describe(),
                extra={"event": "removed_failures", **extra},
            )
            self._deny(sub, f"removed after {failures} consecutive failed deliveries; subscribe again")
            return None
        retry_at = self.clock() + retry_delay(self.config.hub_retry_delay, failures)
        self.db.record_failure(sub.key, failures, retry_at)
        log.info(
            "delivery of %s to %s failed (%s); retry %d of %d in %.1f s",
            sub.topic,
            display,
            reply.describe(),
            failures,
            MAX_FAILURES - 1,
            retry_at - self.clock(),
            extra={"event": "delivery_failed", "failures": failures, **extra},
        )
        return min(retry_at, sub.expires_at)

    def _deny(self, sub: Subscription, reason: str) -> None:
        """Tell the subscriber its subscription is gone (WebSub 5.2); best effort, once."""
        query = {"hub.mode": "denied", "hub.topic": sub.topic_url, "hub.reason": reason}
        reply = self.outbound.request("GET", with_query(sub.callback, query), {}, None, READ_LIMIT)
        log.info(
            "denial sent to %s: %s",
            _display(sub.callback),
            reply.describe(),
            extra={"event": "denial_sent", "callback": _display(sub.callback), "topic": sub.topic},
        )


def signature(secret: str, body: bytes) -> str:
    """Lower-case hex HMAC-SHA256 of the body, keyed with the UTF-8 bytes of the secret."""
    return hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


@functools.lru_cache(maxsize=4096)
def _host(callback_url: str) -> str:
    """The host a stored callback URL names (validated when it was subscribed)."""
    try:
        return parse_callback(callback_url).host
    except Refusal:
        return ""


def _display(callback_url: str) -> str:
    try:
        return parse_callback(callback_url).display
    except Refusal:
        return "<invalid callback>"


def start_hub(
    store: DataStore[Snapshot],
    config: Config,
    trusted_proxies: Sequence[Network] = (),
    *,
    clock: Callable[[], float] = time.time,
    outbound: Outbound | None = None,
    resolve: Resolver = system_resolver,
) -> Hub:
    """Create and start the hub of `store`'s topics, following its data reloads.

    `clock`, `outbound` (anything with Outbound's three methods) and `resolve` (getaddrinfo's shape) are
    for tests.
    """
    hub = Hub(store, config, trusted_proxies, clock=clock, outbound=outbound, resolve=resolve)
    store.subscribe(hub.on_reload)
    hub.start()
    return hub
