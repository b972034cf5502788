"""The WebSub hub end to end: a real server process and a real HTTPS subscriber, both on 127.0.0.1.

Every wait is on an event (a recorded request, a log line) or a poll of /healthz
with a deadline; nothing sleeps for a fixed time.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest
from support.https_subscriber import HTTPSSubscriber
from support.hub_live import (
    BASE,
    FEED,
    HubEnv,
    body_version,
    hub_request,
    request,
    settled,
    subscribe,
    wait_status,
)

from reviewsd_app.web import snapshot

pytestmark = pytest.mark.slow  # live servers and a real HTTPS subscriber, restarts and kills

# --------------------------------------------------------------------------- data versions


# --------------------------------------------------------------------------- servers


# --------------------------------------------------------------------------- HTTP helpers


def signed(record: Any, secret: str) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), record.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(record.headers.get("x-hub-signature", ""), expected)


# --------------------------------------------------------------------------- tests


def test_subscribe_verify_and_receive_each_topic(hub_env: HubEnv, subscriber: HTTPSSubscriber) -> None:
    server = hub_env.start()
    for i, path in enumerate(snapshot.TOPIC_PATHS):
        subscribe(
            server,
            subscriber.url(f"/t{i}?token=abc&x=1"),
            BASE + path,
            secret=f"secret-{i}",
            lease_seconds="3600",
        )
    for i, path in enumerate(snapshot.TOPIC_PATHS):
        check = subscriber.wait_for(1, f"/t{i}", "GET")[0]
        assert check.param("token") == "abc" and check.param("x") == "1"  # the callback's own query is kept
        assert check.query.startswith("token=abc&x=1&hub.")
        assert check.param("hub.mode") == "subscribe" and check.param("hub.topic") == BASE + path
        assert check.param("hub.lease_seconds") == "3600" and len(check.param("hub.challenge") or "") >= 32
    wait_status(server, settled(3))

    hub_env.write_version(2)
    for i, path in enumerate(snapshot.TOPIC_PATHS):
        post = subscriber.wait_for(1, f"/t{i}", "POST")[0]
        status, headers, body = request(server, "GET", path)
        assert status == 200 and post.body == body and body_version(body) == 2
        assert post.query == "token=abc&x=1"
        assert post.headers["content-type"] == headers["content-type"]
        assert (
            post.headers["link"]
            == headers["link"]
            == (f'<{BASE}/api/websub/hub>; rel="hub", <{BASE}{path}>; rel="self"')
        )
        assert signed(post, f"secret-{i}")
    assert wait_status(server, lambda s: s["pending_deliveries"] == 0)["subscriptions"] == 3


def test_failed_verifications_activate_nothing(hub_env: HubEnv, subscriber: HTTPSSubscriber) -> None:
    subscriber.set("/wrong", verify="wrong")
    subscriber.set("/missing", verify="status", verify_status=404)
    subscriber.set("/error", verify="status", verify_status=500)
    subscriber.set("/moved", verify="redirect", redirect_to=subscriber.url("/target"))
    server = hub_env.start()
    for path in ("/wrong", "/missing", "/error", "/moved", "/control"):
        subscribe(server, subscriber.url(path))
    for path in ("/wrong", "/missing", "/error", "/moved", "/control"):
        subscriber.wait_for(1, path, "GET")
    wait_status(server, settled(1))

    hub_env.write_version(2)
    subscriber.wait_for(1, "/control", "POST")
    wait_status(server, lambda s: s["pending_deliveries"] == 0)
    assert subscriber.requests(method="POST") == subscriber.requests("/control", "POST")
    assert subscriber.requests("/target") == []  # the redirect was not followed


def test_resubscription_changes_secret_only_when_verified(
    hub_env: HubEnv, subscriber: HTTPSSubscriber
) -> None:
    server = hub_env.start()
    callback = subscriber.url("/cb?id=7")
    subscribe(server, callback, secret="first")
    wait_status(server, settled(1))
    subscribe(server, callback, secret="second")
    subscriber.wait_for(2, "/cb", "GET")
    wait_status(server, settled(1))

    hub_env.write_version(2)
    post = subscriber.wait_for(1, "/cb", "POST")[0]
    assert signed(post, "second") and not signed(post, "first")

    subscriber.set("/cb", verify="wrong")
    subscribe(server, callback, secret="third")
    subscriber.wait_for(3, "/cb", "GET")
    wait_status(server, settled(1))
    hub_env.write_version(3)
    post = subscriber.wait_for(2, "/cb", "POST")[1]
    assert body_version(post.body) == 3 and signed(post, "second")


def test_unsubscribe_reruns_the_handshake(hub_env: HubEnv, subscriber: HTTPSSubscriber) -> None:
    server = hub_env.start()
    subscribe(server, subscriber.url("/leaving"))
    subscribe(server, subscriber.url("/control"))
    wait_status(server, settled(2))
    assert hub_request(server, subscriber.url("/leaving"), mode="unsubscribe")[0] == 202
    assert hub_request(server, subscriber.url("/never-subscribed"), mode="unsubscribe")[0] == 202
    check = subscriber.wait_for(1, "/leaving", "GET", mode="unsubscribe")[0]
    assert check.param("hub.topic") == FEED and check.param("hub.lease_seconds") is None
    wait_status(server, settled(1))

    hub_env.write_version(2)
    subscriber.wait_for(1, "/control", "POST")
    wait_status(server, lambda s: s["pending_deliveries"] == 0)
    assert subscriber.requests("/leaving", "POST") == [] and subscriber.requests("/never-subscribed") == []


def test_three_failed_deliveries_remove_and_deny(hub_env: HubEnv, subscriber: HTTPSSubscriber) -> None:
    subscriber.set("/flaky", post_status=503)
    server = hub_env.start()
    subscribe(server, subscriber.url("/flaky?k=1"))
    wait_status(server, settled(1))

    hub_env.write_version(2)
    denial = subscriber.wait_for(1, "/flaky", "GET", mode="denied", timeout=15)[0]
    posts = subscriber.requests("/flaky", "POST")
    assert len(posts) == 3 and all(body_version(p.body) == 2 for p in posts)
    assert posts[1].at - posts[0].at >= 0.15 and posts[2].at - posts[1].at >= 0.3  # 0.2 s, then doubled
    assert denial.param("k") == "1" and denial.param("hub.topic") == FEED and denial.param("hub.reason")
    assert denial.at > posts[2].at
    wait_status(server, settled(0))

    hub_env.write_version(3)  # removed: nothing more is sent
    feed_changed = lambda e: e.get("event") == "topic_changed" and e.get("topic") == "/feed.xml"  # noqa: E731
    server.wait_for_log(feed_changed)  # version 2
    assert server.wait_for_log(feed_changed)["subscribers"] == 0  # version 3
    assert len(subscriber.requests("/flaky", "POST")) == 3


def test_lease_end_removes_the_subscription(hub_env: HubEnv, subscriber: HTTPSSubscriber) -> None:
    server = hub_env.start("--hub-lease-min", "1")
    subscribe(server, subscriber.url("/short"), lease_seconds="1")
    subscribe(server, subscriber.url("/control"), lease_seconds="3600")
    assert subscriber.wait_for(1, "/short", "GET")[0].param("hub.lease_seconds") == "1"
    server.wait_for_log(lambda e: e.get("event") == "lease_ended", timeout=10)
    wait_status(server, settled(1))

    hub_env.write_version(2)
    subscriber.wait_for(1, "/control", "POST")
    wait_status(server, lambda s: s["pending_deliveries"] == 0)
    assert subscriber.requests("/short", "POST") == []


def test_restart_loses_nothing(hub_env: HubEnv, subscriber: HTTPSSubscriber) -> None:
    server = hub_env.start()
    subscribe(server, subscriber.url("/cb"), secret="kept")
    wait_status(server, settled(1))
    assert server.stop() == 0

    hub_env.write_version(2)  # changed while the hub is down
    server = hub_env.start()
    post = subscriber.wait_for(1, "/cb", "POST")[0]
    _, _, body = request(server, "GET", "/feed.xml")
    assert post.body == body and body_version(body) == 2 and signed(post, "kept")


def test_sigkill_during_delivery_then_current_version_once(
    hub_env: HubEnv, subscriber: HTTPSSubscriber
) -> None:
    subscriber.set("/slow", delay=60)
    server = hub_env.start()
    subscribe(server, subscriber.url("/slow"))
    wait_status(server, settled(1))

    hub_env.write_version(2)
    subscriber.wait_for(1, "/slow", "POST")  # the hub is now waiting for the answer
    server.proc.kill()
    server.proc.wait(10)
    subscriber.set("/slow", delay=0)
    hub_env.write_version(3)

    server = hub_env.start()
    subscriber.wait_for(2, "/slow", "POST")
    wait_status(server, lambda s: s["pending_deliveries"] == 0)
    hub_env.write_version(4)
    subscriber.wait_for(3, "/slow", "POST")
    wait_status(server, lambda s: s["pending_deliveries"] == 0)
    assert [body_version(p.body) for p in subscriber.requests("/slow", "POST")] == [2, 3, 4]


def test_versions_never_go_backwards(hub_env: HubEnv, subscriber: HTTPSSubscriber) -> None:
    subscriber.set("/cb", delay=0.3)
    server = hub_env.start()
    subscribe(server, subscriber.url("/cb"))
    wait_status(server, settled(1))

    hub_env.write_version(2)
    subscriber.wait_for(1, "/cb", "POST")  # v2 in flight
    for n in (3, 4, 5):
        hub_env.write_version(n)
    subscriber.wait_until(
        lambda records: any(r.method == "POST" and body_version(r.body) == 5 for r in records)
    )
    wait_status(server, lambda s: s["pending_deliveries"] == 0)
    versions = [body_version(p.body) for p in subscriber.requests("/cb", "POST")]
    assert versions == sorted(set(versions)) and versions[0] == 2 and versions[-1] == 5
