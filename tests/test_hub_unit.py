"""The hub in process: request parsing, refusals, caps, rate limit, verification, delivery rules, durability.

Outbound requests go to FakeOutbound (nothing touches the network) except in the
Outbound tests, which use a real HTTPS subscriber on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polling import wait_until
from support.https_subscriber import HTTPSSubscriber
from support.hub import (
    BASE,
    CALLBACK,
    FEED,
    FORM,
    Call,
    FakeClock,
    FakeOutbound,
    HubMaker,
    change,
    echo,
    form,
    post,
    subscribe_active,
    wait_idle,
)
from werkzeug.test import Client

from reviewsd_app import hub, reviewsd
from reviewsd_app.config import client_address
from reviewsd_app.web import snapshot
from reviewsd_app.websub import store as hub_store

LEASES = (300, 86400, 30 * 86400)  # minimum, default, maximum
TOPICS = {hub.normalise_url(BASE + p): p for p in snapshot.TOPIC_PATHS}


def version_of(body: bytes) -> int:
    return int(body.split(b" review ")[0].rsplit(b"v", 1)[1])


# --------------------------------------------------------------------------- pure parts


@pytest.mark.parametrize(
    "spelling",
    [
        "https://reviews.example.com/feed.xml",
        "HTTPS://REVIEWS.EXAMPLE.COM/feed.xml",
        "https://reviews.example.com:443/feed.xml",
        "https://reviews.example.com/%66eed%2Exml",
        "https://Reviews.Example.com:443/%66%65%65%64.xml",
    ],
)
def test_topic_spellings_normalise_to_the_topic(spelling: str) -> None:
    assert TOPICS.get(hub.normalise_url(spelling) or "") == "/feed.xml"


@pytest.mark.parametrize(
    "spelling",
    [
        "http://reviews.example.com/feed.xml",
        "https://reviews.example.com:8443/feed.xml",
        "https://reviews.example.com/feed.xml?x=1",
        "https://reviews.example.com/feed.xml#top",
        "https://user@reviews.example.com/feed.xml",
        "https://reviews.example.com/FEED.xml",
        "https://reviews.example.com/feed%2exml/",
        "https://reviews.example.com:99999/feed.xml",
        "feed.xml",
    ],
)
def test_other_urls_are_not_topics(spelling: str) -> None:
    assert TOPICS.get(hub.normalise_url(spelling) or "") is None


def test_a_valid_request_parses() -> None:
    pairs = [
        ("hub.callback", CALLBACK),
        ("hub.mode", "subscribe"),
        ("hub.topic", BASE + "/api/feed.json"),
        ("hub.lease_seconds", "600"),
        ("hub.secret", "s" * 199),
        ("hub.unknown", "x"),
        ("other", "y"),
        ("hub.unknown", "again"),
    ]
    callback, request = hub.parse_subscription(pairs, TOPICS, LEASES, 0.0)
    assert (request.callback, request.topic, request.lease_seconds, request.secret) == (
        CALLBACK,
        "/api/feed.json",
        600,
        "s" * 199,
    )
    assert callback.host == request.host == "sub.example" and callback.target == "/cb?token=CAPABILITY-123"
    assert callback.display == "https://sub.example/cb"


@pytest.mark.parametrize(
    "fields, reason",
    [
        ({"hub.mode": "subscribe", "hub.topic": FEED}, "hub.callback is required"),
        ({"hub.callback": CALLBACK, "hub.topic": FEED}, "hub.mode is required"),
        ({"hub.callback": CALLBACK, "hub.mode": "subscribe"}, "hub.topic is required"),
        (form(mode="publish"), "hub.mode must be"),
        (form(topic=BASE + "/insights.json"), "not a topic"),
        (form(topic="https://elsewhere.example/feed.xml"), "not a topic"),
        (form(callback="http://sub.example/cb"), "plain http"),
        (form(callback="ftp://sub.example/cb"), "https URL"),
        (form(callback="/relative/cb"), "https URL"),
        (form(callback="https://sub.example/cb#frag"), "fragment"),
        (form(callback="https://sub.example/cb#"), "fragment"),
        (form(callback="https://user:pw@sub.example/cb"), "credentials"),
        (form(callback="https:///cb"), "no host"),
        (form(callback="https://sub.example:99999/cb"), "not a valid URL"),
        (form(callback="https://sub example/cb"), "ASCII URL"),
        (form(callback="https://sübexample/cb"), "ASCII URL"),
        (form(callback="https://sub.example/c\\b"), "backslashes"),
        (form(callback="https://[::1/cb"), "not a valid URL"),
        (form(callback="https://[fe80::1%25eth0]/cb"), "IPv6"),
        (form(callback="https://-bad-.example/cb"), "DNS name"),
        (form(callback="https://sub.example/" + "a" * 2048), "longer than"),
        (form(lease_seconds="ten"), "lease_seconds"),
        (form(lease_seconds="-5"), "lease_seconds"),
        (form(lease_seconds="0"), "lease_seconds"),
        (form(lease_seconds="1.5"), "lease_seconds"),
        (form(lease_seconds=" 60"), "lease_seconds"),
        (form(secret="s" * 200), "less than 200 bytes"),
        (form(secret="é" * 100), "less than 200 bytes"),
        ([*form().items(), ("hub.callback", CALLBACK)], "more than once"),
        ([*form().items(), ("hub.secret", "a"), ("hub.secret", "b")], "more than once"),
    ],
)
def test_bad_requests_are_refused_with_a_reason(fields: dict | list, reason: str) -> None:
    pairs = list(fields.items()) if isinstance(fields, dict) else fields
    with pytest.raises(hub.Refusal) as refused:
        hub.parse_subscription(pairs, TOPICS, LEASES, 0.0)
    assert refused.value.status == 400 and reason in str(refused.value)


def test_unsubscribe_ignores_lease_and_secret() -> None:
    _, request = hub.parse_subscription(
        form(mode="unsubscribe", lease_seconds="junk", secret="x" * 500).items(), TOPICS, LEASES, 0.0
    )
    assert request.mode == "unsubscribe" and request.secret is None


@pytest.mark.parametrize(
    "asked, granted", [(None, 86400), ("1", 300), ("600", 600), (str(10**15), 30 * 86400)]
)
def test_leases_are_granted_within_bounds(asked: str | None, granted: int) -> None:
    fields = form() if asked is None else form(lease_seconds=asked)
    assert hub.parse_subscription(fields.items(), TOPICS, LEASES, 0.0)[1].lease_seconds == granted


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://s.example/cb", "https://s.example/cb?hub.mode=subscribe&hub.topic=t%2F1"),
        ("https://s.example/cb?a=1&b=2", "https://s.example/cb?a=1&b=2&hub.mode=subscribe&hub.topic=t%2F1"),
        ("https://s.example/cb?", "https://s.example/cb?hub.mode=subscribe&hub.topic=t%2F1"),
        (
            "https://s.example/cb?hub.mode=mine",
            "https://s.example/cb?hub.mode=mine&hub.mode=subscribe&hub.topic=t%2F1",
        ),
    ],
)
def test_hub_parameters_are_appended_to_the_callback_query(url: str, expected: str) -> None:
    assert hub.with_query(url, {"hub.mode": "subscribe", "hub.topic": "t/1"}) == expected


def test_rate_limiter_is_a_token_bucket_per_client() -> None:
    clock = FakeClock(0)
    limiter = hub.RateLimiter(3, clock=clock)
    assert [limiter.wait_needed("a") for _ in range(3)] == [0, 0, 0]
    assert limiter.wait_needed("a") == pytest.approx(20)
    assert limiter.wait_needed("b") == 0
    clock.advance(20)
    assert limiter.wait_needed("a") == 0 and limiter.wait_needed("a") > 0


@pytest.mark.parametrize(
    "remote, forwarded, client",
    [
        ("198.51.100.7", "203.0.113.9", "198.51.100.7"),  # not a trusted proxy: its header is ignored
        ("10.0.0.2", "203.0.113.9", "203.0.113.9"),
        ("10.0.0.2", "203.0.113.9, 10.0.0.3", "203.0.113.9"),  # two trusted hops
        ("10.0.0.2", "1.2.3.4, 203.0.113.9", "203.0.113.9"),  # the left part is client-controlled
        ("10.0.0.2", "junk", "10.0.0.2"),
    ],
)
def test_client_address_believes_only_trusted_proxies(remote: str, forwarded: str, client: str) -> None:
    trusted = reviewsd.parse_networks("10.0.0.0/8")
    assert client_address({"REMOTE_ADDR": remote, "HTTP_X_FORWARDED_FOR": forwarded}, trusted) == client


def test_signature_is_lowercase_hex_hmac_sha256() -> None:
    assert hub.signature("key", b"body") == hmac.new(b"key", b"body", hashlib.sha256).hexdigest()
    assert hub.signature("clé", b"x") == hmac.new("clé".encode(), b"x", hashlib.sha256).hexdigest()


# --------------------------------------------------------------------------- the request endpoint


def test_accepted_request_is_202_text_and_verified_in_the_background(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    response = post(app, form(lease_seconds="5"))
    assert response.status == "202 Accepted"  # not werkzeug's "202 ACCEPTED"
    assert response.content_type == "text/plain; charset=utf-8" and response.get_data(as_text=True).strip()
    check = outbound.wait_for(1, "GET")[0]
    assert check.url.startswith(CALLBACK + "&hub.mode=subscribe&")
    assert check.param("hub.lease_seconds") == "300" and check.param("hub.topic") == FEED
    wait_idle(app.hub)
    assert app.hub.status()["subscriptions"] == 1


def test_verification_never_blocks_the_answer(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    outbound.hold = True  # the callback never answers
    app = make_hub(outbound)
    started = time.monotonic()
    assert post(app, form()).status_code == 202
    assert time.monotonic() - started < 1
    outbound.wait_for(1, "GET")
    outbound.abort_all()


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "multipart/form-data; boundary=x",
        "",
        "application/x-www-form-urlencoded; charset=latin-1",
    ],
)
def test_other_content_types_are_415(make_hub: HubMaker, content_type: str) -> None:
    app = make_hub(FakeOutbound())
    response = post(app, form(), content_type=content_type)
    assert response.status_code == 415 and response.content_type == "text/plain; charset=utf-8"


def test_large_bodies_are_413(make_hub: HubMaker) -> None:
    app = make_hub(FakeOutbound(), max_body=1000)
    response = post(app, form(secret="x", padding="p" * 1000))
    assert response.status_code == 413 and "1000 bytes" in response.get_data(as_text=True)


def test_bodies_that_are_not_utf8_are_415_as_the_readme_says(make_hub: HubMaker) -> None:
    app = make_hub(FakeOutbound())
    for body in (b"hub.mode=\xff\xfe", b"hub.mode=%ff%fe", b"hub.callback=%C3"):
        response = post(app, body=body)
        assert response.status_code == 415 and "UTF-8" in response.get_data(as_text=True)


def test_a_form_of_too_many_fields_is_400(make_hub: HubMaker) -> None:
    app = make_hub(FakeOutbound())
    response = post(app, body=b"&".join(b"f%d=1" % i for i in range(101)))
    assert response.status_code == 400 and "100 fields" in response.get_data(as_text=True)


@pytest.mark.parametrize(
    "asked, granted",
    [
        ("9" * 30, 30 * 86400),
        ("1" + "0" * 18, 30 * 86400),
        ("999999999999999999", 30 * 86400),
        ("0000600", 600),
        ("1", 300),
    ],
)
def test_any_positive_lease_is_clamped_however_many_digits(asked: str, granted: int) -> None:
    _, request = hub.parse_subscription(form(lease_seconds=asked).items(), TOPICS, LEASES, 0.0)
    assert request.lease_seconds == granted


@pytest.mark.parametrize("asked", ["0" * 30, "٣٠٠", "²", "+300", "3e5"])
def test_leases_that_are_not_positive_ascii_integers_are_400(asked: str) -> None:
    with pytest.raises(hub.Refusal, match="lease_seconds") as refusal:
        hub.parse_subscription(form(lease_seconds=asked).items(), TOPICS, LEASES, 0.0)
    assert refusal.value.status == 400


def test_refusals_store_and_contact_nothing(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    for fields in (
        form(callback="http://sub.example/cb"),
        form(topic=BASE + "/nope"),
        form(lease_seconds="-1"),
    ):
        assert post(app, fields).status_code == 400
    wait_idle(app.hub)
    assert outbound.calls == []
    assert app.hub.status()["subscriptions"] == 0 and app.hub.status()["pending_verifications"] == 0


def test_unsubscribing_an_unknown_pair_is_accepted_and_does_nothing(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    assert post(app, form(mode="unsubscribe")).status_code == 202
    wait_idle(app.hub)
    assert outbound.calls == [] and app.hub.status()["pending_verifications"] == 0


def test_rate_limit_answers_429_with_retry_after(make_hub: HubMaker) -> None:
    app = make_hub(FakeOutbound(), hub_rate_limit=2.0)
    assert [post(app, form(mode="unsubscribe")).status_code for _ in range(2)] == [202, 202]
    refused = post(app, form(mode="unsubscribe"))
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 30
    assert post(app, form(mode="unsubscribe"), remote="198.51.100.8").status_code == 202


@pytest.mark.parametrize(
    "cap, callbacks, topics",
    [
        (
            {"hub_max_per_host": 2},
            ["https://a.example/1", "https://a.example/2", "https://a.example/3"],
            [FEED] * 3,
        ),
        (
            {"hub_max_per_topic": 2},
            ["https://a.example/1", "https://b.example/1", "https://c.example/1"],
            [FEED] * 3,
        ),
        (
            {"hub_max_subscriptions": 2},
            ["https://a.example/1", "https://b.example/1", "https://c.example/1"],
            [FEED, BASE + "/reviews.json", BASE + "/api/feed.json"],
        ),
    ],
)
def test_caps_refuse_new_pairs_but_not_renewals(
    make_hub: HubMaker, cap: dict, callbacks: list[str], topics: list[str]
) -> None:
    outbound = FakeOutbound(lambda call: hub.Reply(404))  # pending verifications count too
    outbound.hold = True
    app = make_hub(outbound, **cap)
    assert post(app, form(callbacks[0], topic=topics[0])).status_code == 202
    assert post(app, form(callbacks[1], topic=topics[1])).status_code == 202
    refused = post(app, form(callbacks[2], topic=topics[2]))
    assert refused.status_code == 403 and "limit" in refused.get_data(as_text=True)
    assert post(app, form(callbacks[1], topic=topics[1], secret="renewal")).status_code == 202
    outbound.abort_all()


def test_stopped_hub_answers_503(make_hub: HubMaker) -> None:
    app = make_hub(FakeOutbound())
    app.hub.stop()
    assert post(app, form()).status_code == 503
    assert app.hub.status() == {"enabled": True, "running": False}


# --------------------------------------------------------------------------- verification


@pytest.mark.parametrize(
    "reply",
    [
        hub.Reply(404),
        hub.Reply(302),
        hub.Reply(500),
        hub.Reply(None, error="timeout"),
        hub.Reply(200, b"wrong"),
        hub.Reply(200, b""),
    ],
)
def test_failed_verification_creates_nothing(make_hub: HubMaker, reply: hub.Reply) -> None:
    app = make_hub(FakeOutbound(lambda call: reply))
    assert post(app, form()).status_code == 202
    app.hub.outbound.wait_for(1, "GET")
    wait_idle(app.hub)
    assert app.hub.status()["subscriptions"] == 0 and app.hub.status()["pending_verifications"] == 0


def test_challenge_must_match_exactly_and_is_single_use(make_hub: HubMaker) -> None:
    def padded(call: Call) -> hub.Reply:
        return hub.Reply(200, (call.param("hub.challenge") or "").encode() + b"\n")

    outbound = FakeOutbound(padded)
    app = make_hub(outbound)
    post(app, form())
    outbound.wait_for(1, "GET")
    outbound.answer = echo
    subscribe_active(app, outbound)
    assert app.hub.status()["subscriptions"] == 1
    challenges = [c.param("hub.challenge") for c in outbound.matching("GET")]
    assert len(set(challenges)) == 2 and all(len(c or "") >= 40 for c in challenges)


def test_accepted_any_2xx(make_hub: HubMaker) -> None:
    outbound = FakeOutbound(lambda call: hub.Reply(299, (call.param("hub.challenge") or "").encode()))
    app = make_hub(outbound)
    subscribe_active(app, outbound)
    assert app.hub.status()["subscriptions"] == 1


def test_resubscription_changes_lease_and_secret_only_when_verified(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    clock = FakeClock()
    app = make_hub(outbound, clock=clock)
    subscribe_active(app, outbound, secret="old", lease_seconds="1000")
    outbound.answer = lambda call: hub.Reply(404)
    subscribe_active(app, outbound, secret="new", lease_seconds="5000")
    sub = app.hub.db.subscription((CALLBACK, "/feed.xml"))
    assert sub.secret == "old" and sub.expires_at == clock.now + 1000
    outbound.answer = echo
    subscribe_active(app, outbound, lease_seconds="5000")  # no secret: deliveries are no longer signed
    sub = app.hub.db.subscription((CALLBACK, "/feed.xml"))
    assert sub.secret is None and sub.expires_at == clock.now + 5000


def test_later_request_replaces_an_unverified_one(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    app.hub.scheduler.stop(2)  # keep intents queued
    assert post(app, form(secret="first")).status_code == 202
    assert post(app, form(secret="second")).status_code == 202
    assert app.hub.status()["pending_verifications"] == 1
    assert app.hub.db.next_intent((CALLBACK, "/feed.xml")).secret == "second"


# --------------------------------------------------------------------------- delivery


def test_delivery_is_the_topic_body_with_headers(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    for path in snapshot.TOPIC_PATHS:
        subscribe_active(app, outbound, callback=f"https://sub.example{path}", topic=BASE + path, secret="k")
    change(make_hub, app, 2)
    posts = outbound.wait_for(3, "POST")
    client = Client(app)
    for call in posts:
        path = call.url.removeprefix("https://sub.example")
        got = client.get(path)
        assert call.body == got.get_data() and call.headers["Content-Type"] == got.headers["Content-Type"]
        assert call.headers["Link"] == got.headers["Link"]
        assert call.headers["X-Hub-Signature"] == "sha256=" + hub.signature("k", call.body)


def test_new_subscribers_get_changes_not_the_current_content(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    subscribe_active(app, outbound)
    wait_idle(app.hub)
    assert outbound.matching("POST") == []


def test_retries_double_then_three_failures_remove_and_deny(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    clock = FakeClock()
    app = make_hub(outbound, clock=clock, hub_retry_delay=10.0)
    subscribe_active(app, outbound)
    outbound.answer = lambda call: hub.Reply(500) if call.method == "POST" else hub.Reply(200)
    change(make_hub, app, 2)
    outbound.wait_for(1, "POST")
    for attempt, delay in ((2, 10), (3, 20)):
        wait_idle(app.hub)
        clock.advance(delay - 0.5)
        app.hub.scheduler.wake()
        wait_idle(app.hub)
        assert len(outbound.matching("POST")) == attempt - 1  # not yet
        clock.advance(0.5)
        app.hub.scheduler.wake()
        outbound.wait_for(attempt, "POST")
    denial = outbound.wait_for(1, "GET", mode="denied")[0]
    assert denial.param("hub.topic") == FEED and "3 consecutive" in (denial.param("hub.reason") or "")
    assert denial.param("token") == "CAPABILITY-123"
    wait_idle(app.hub)
    assert app.hub.status()["subscriptions"] == 0
    change(make_hub, app, 3)
    wait_idle(app.hub)
    assert len(outbound.matching("POST")) == 3 and len(outbound.matching(mode="denied")) == 1


def test_a_success_resets_the_failure_count(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    clock = FakeClock()
    app = make_hub(outbound, clock=clock)
    subscribe_active(app, outbound)
    replies = iter(
        [hub.Reply(500), hub.Reply(500), hub.Reply(204), hub.Reply(500), hub.Reply(500), hub.Reply(204)]
    )
    outbound.answer = lambda call: next(replies)
    for version, first in ((2, 1), (3, 4)):
        change(make_hub, app, version)
        outbound.wait_for(first, "POST")
        for attempt in (first + 1, first + 2):
            wait_idle(app.hub)
            clock.advance(100)
            app.hub.scheduler.wake()
            outbound.wait_for(attempt, "POST")
    wait_idle(app.hub)
    assert app.hub.status()["subscriptions"] == 1 and app.hub.status()["pending_deliveries"] == 0


def test_newer_version_supersedes_a_pending_retry(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    clock = FakeClock()
    app = make_hub(outbound, clock=clock)
    subscribe_active(app, outbound)
    outbound.answer = lambda call: hub.Reply(503)
    change(make_hub, app, 2)
    outbound.wait_for(1, "POST")
    wait_idle(app.hub)
    outbound.answer = echo
    change(make_hub, app, 3)  # while the retry of version 2 waits
    wait_idle(app.hub)
    assert len(outbound.matching("POST")) == 1  # the back-off still applies
    clock.advance(10)
    app.hub.scheduler.wake()
    outbound.wait_for(2, "POST")
    wait_idle(app.hub)
    assert [version_of(c.body) for c in outbound.matching("POST")] == [2, 3]
    assert app.hub.status()["pending_deliveries"] == 0


def test_gone_410_removes_without_denial(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    subscribe_active(app, outbound)
    outbound.answer = lambda call: hub.Reply(410)
    change(make_hub, app, 2)
    outbound.wait_for(1, "POST")
    wait_idle(app.hub)
    assert app.hub.status()["subscriptions"] == 0 and outbound.matching(mode="denied") == []


def test_lease_end_removes_on_its_timer(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    clock = FakeClock()
    app = make_hub(outbound, clock=clock, hub_lease_min=60)
    subscribe_active(app, outbound, lease_seconds="60")
    clock.advance(59)
    app.hub.scheduler.wake()
    wait_idle(app.hub)
    assert app.hub.status()["subscriptions"] == 1
    clock.advance(1)
    app.hub.scheduler.wake()
    assert wait_until(lambda: app.hub.status()["subscriptions"] == 0, timeout=5)


def test_nothing_is_delivered_after_the_lease_ends(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    clock = FakeClock()
    app = make_hub(outbound, clock=clock, hub_lease_min=60)
    subscribe_active(app, outbound, lease_seconds="60")
    clock.advance(61)
    change(make_hub, app, 2)
    app.hub.scheduler.wake()
    wait_idle(app.hub)
    assert outbound.matching("POST") == [] and app.hub.status()["subscriptions"] == 0


def test_a_start_removes_ended_leases(make_hub: HubMaker, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    outbound = FakeOutbound()
    clock = FakeClock()
    app = make_hub(outbound, clock=clock, hub_lease_min=60)
    subscribe_active(app, outbound, lease_seconds="60")
    subscribe_active(app, outbound, callback="https://sub.example/long", lease_seconds="600")
    app.hub.stop()
    clock.advance(100)
    restarted = make_hub(FakeOutbound(), clock=clock, hub_lease_min=60)
    assert restarted.hub.status()["subscriptions"] == 1
    assert any("1 expired leases removed" in r.getMessage() for r in caplog.records)


# --------------------------------------------------------------------------- durability


def test_restart_delivers_what_changed_while_down(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    subscribe_active(app, outbound, secret="k")
    app.hub.stop()
    make_hub.write_version(2)
    again = FakeOutbound()
    restarted = make_hub(again)
    call = again.wait_for(1, "POST")[0]
    assert version_of(call.body) == 2 and call.headers["X-Hub-Signature"] == "sha256=" + hub.signature(
        "k", call.body
    )
    wait_idle(restarted.hub)
    assert restarted.hub.status()["pending_deliveries"] == 0


def test_restart_resumes_a_pending_retry(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    clock = FakeClock()
    app = make_hub(outbound, clock=clock)
    subscribe_active(app, outbound)
    outbound.answer = lambda call: hub.Reply(500)
    change(make_hub, app, 2)
    outbound.wait_for(1, "POST")
    wait_idle(app.hub)
    app.hub.stop()
    again = FakeOutbound(lambda call: hub.Reply(500))
    clock.advance(10)  # the retry fell due while the hub was down
    restarted = make_hub(again, clock=clock)
    again.wait_for(1, "POST")
    wait_idle(restarted.hub)
    clock.advance(20)
    restarted.hub.scheduler.wake()
    again.wait_for(2, "POST")
    again.wait_for(1, mode="denied")  # failures counted across the restart: 1 before, 2 after


def test_stop_cuts_a_verification_and_the_next_start_completes_it(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    outbound.hold = True
    app = make_hub(outbound)
    assert post(app, form()).status_code == 202
    outbound.wait_for(1, "GET")
    app.hub.stop(timeout=0.1)  # past the grace period the request is aborted; the intent stays
    again = FakeOutbound()
    restarted = make_hub(again)
    again.wait_for(1, "GET")
    wait_idle(restarted.hub)
    assert restarted.hub.status()["subscriptions"] == 1


def test_state_is_sqlite_in_the_state_dir(make_hub: HubMaker) -> None:
    outbound = FakeOutbound()
    app = make_hub(outbound)
    subscribe_active(app, outbound, secret="k")
    path = Path(app.config.state_dir) / hub_store.DB_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT callback, topic, secret FROM subscriptions").fetchall() == [
            (CALLBACK, "/feed.xml", "k")
        ]


def test_logs_never_hold_secrets_or_callback_queries(
    make_hub: HubMaker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    outbound = FakeOutbound()
    app = make_hub(outbound, hub_retry_delay=0.01)
    subscribe_active(app, outbound, secret="TOP-SECRET")
    outbound.answer = lambda call: hub.Reply(500) if call.method == "POST" else hub.Reply(200)
    change(make_hub, app, 2)
    outbound.wait_for(1, mode="denied")
    wait_idle(app.hub)
    text = " ".join(f"{r.getMessage()} {vars(r)}" for r in caplog.records)
    assert "https://sub.example/cb" in text
    assert "TOP-SECRET" not in text and "CAPABILITY" not in text


# --------------------------------------------------------------------------- real outbound HTTPS


def test_outbound_verifies_certificates(
    subscriber: HTTPSSubscriber, ca_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = subscriber.url("/x?hub.challenge=abc")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    untrusted = hub.Outbound("", allow_private=True).request("GET", url, {}, None, 100)
    assert untrusted.status is None and "CERTIFICATE_VERIFY_FAILED" in untrusted.error
    trusted = hub.Outbound(str(ca_file), allow_private=True).request("GET", url, {}, None, 100)
    assert (trusted.status, trusted.body) == (200, b"abc")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    from_env = hub.Outbound("", allow_private=True).request("GET", url, {}, None, 100)
    assert from_env.status == 200


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("https://sub.example", "/"),
        ("https://sub.example?tok=1", "/?tok=1"),
        ("https://sub.example:8443", "/"),
        ("https://sub.example/a?b", "/a?b"),
    ],
)
def test_a_callback_without_a_path_is_asked_for_slash(url: str, target: str) -> None:
    assert hub.parse_callback(url).target == target


def test_outbound_to_a_callback_without_a_path_sends_a_valid_request_line(
    subscriber: HTTPSSubscriber, ca_file: Path
) -> None:
    outbound = hub.Outbound(str(ca_file), allow_private=True)
    reply = outbound.request("GET", subscriber.url("?hub.challenge=abc"), {}, None, 100)
    assert (reply.status, reply.body) == (200, b"abc")
    assert [r.path for r in subscriber.requests()] == ["/"]


def test_outbound_does_not_follow_redirects_and_reads_little(
    subscriber: HTTPSSubscriber, ca_file: Path
) -> None:
    subscriber.set("/moved", verify="redirect", redirect_to=subscriber.url("/target"))
    outbound = hub.Outbound(str(ca_file), allow_private=True)
    assert outbound.request("GET", subscriber.url("/moved"), {}, None, 100).status == 302
    assert subscriber.requests("/target") == []
    long_challenge = (
        "c" * 3000
    )  # the callback plus hub parameters may exceed the 2048 allowed in hub.callback
    reply = outbound.request("GET", subscriber.url("/x?hub.challenge=" + long_challenge), {}, None, 100)
    assert reply.status == 200 and reply.body == b"c" * 100


def test_outbound_gives_up_after_its_deadline(subscriber: HTTPSSubscriber, ca_file: Path) -> None:
    subscriber.set("/slow", delay=30)
    outbound = hub.Outbound(str(ca_file), allow_private=True)
    outbound.total_timeout = 0.3
    started = time.monotonic()
    reply = outbound.request("POST", subscriber.url("/slow"), {"Content-Type": "text/plain"}, b"x", 100)
    assert reply.status is None and time.monotonic() - started < 5


def test_outbound_sends_the_exact_callback_and_pins_the_host(
    subscriber: HTTPSSubscriber, ca_file: Path
) -> None:
    outbound = hub.Outbound(str(ca_file), allow_private=True)
    reply = outbound.request(
        "POST", subscriber.url("/p/a%2Fb?q=%20x&y"), {"Content-Type": "text/plain"}, b"hi", 10
    )
    assert reply.status == 204
    record = subscriber.requests("/p/a%2Fb", "POST")[0]
    assert record.query == "q=%20x&y" and record.body == b"hi"
    assert (
        record.headers["host"] == f"127.0.0.1:{subscriber.port}" and record.headers["connection"] == "close"
    )


# --------------------------------------------------------------------------- any form


def fuzz_app(maker: HubMaker) -> reviewsd.ReviewsApp:
    """One app for all examples of a test: outbound stubbed (verifications fail), no rate limit."""
    if not maker.hubs:
        maker(FakeOutbound(lambda call: hub.Reply(404)), hub_rate_limit=0)
    return maker.apps[0]


VALUES = st.one_of(
    st.sampled_from(
        [
            "subscribe",
            "unsubscribe",
            "denied",
            "",
            FEED,
            BASE + "/reviews.json",
            BASE + "/api/feed.json",
            CALLBACK,
            "https://sub.example/cb",
            "http://sub.example/cb",
            "https://[::1]/",
            "https://127.1/",
            "https://[::ffff:127.0.0.1]/x",
            "https://sub.example/#",
            "https://a@b/",
            "https://:80/",
            "https://sub.example:0/",
            "https://[zz::1]/",
            "https://x./",
            "60",
            "-1",
            "0",
            "1e3",
            "99999999999999999999999999",
            "s" * 199,
            "s" * 200,
        ]
    ),
    st.text(max_size=40),
    st.from_regex(r"https://[a-z0-9.\-\[\]:%@]{0,20}(/[^#]{0,10})?", fullmatch=True),
)
NAMES = st.one_of(st.sampled_from([*hub.HUB_FIELDS, "hub.reason", "other"]), st.text(max_size=12))


@pytest.mark.slow
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fields=st.lists(st.tuples(NAMES, VALUES), max_size=8))
def test_any_form_gets_202_or_a_4xx_text(make_hub: HubMaker, fields: list[tuple[str, str]]) -> None:
    response = post(fuzz_app(make_hub), fields)
    assert response.status_code == 202 or 400 <= response.status_code < 500, response.get_data()
    assert response.content_type == "text/plain; charset=utf-8" and response.get_data(as_text=True).strip()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.binary(max_size=300), content_type=st.sampled_from([FORM, FORM + "; charset=UTF-8", "text/plain"])
)
def test_any_body_gets_202_or_a_4xx_text(make_hub: HubMaker, body: bytes, content_type: str) -> None:
    response = post(fuzz_app(make_hub), body=body, content_type=content_type)
    assert response.status_code == 202 or 400 <= response.status_code < 500, response.get_data()
    assert response.content_type == "text/plain; charset=utf-8"


# --------------------------------------------------------------------------- the scheduler


def test_a_key_whose_work_raised_runs_again_after_the_retry_delay(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    runs: list[float] = []
    ran_again = threading.Event()

    def work(key: str) -> float | None:
        runs.append(now[0])
        if len(runs) == 1:
            raise RuntimeError("database or disk is full")
        ran_again.set()
        return None

    scheduler = hub.Scheduler(work, 1, lambda: now[0], retry_after=30.0)
    scheduler.start()
    try:
        scheduler.poke("pair")
        wait_until(lambda: runs and scheduler.busy() == 0)  # failed, and waiting for its retry
        now[0] += 30.0
        scheduler.wake()
        assert ran_again.wait(10) and runs == [1000.0, 1030.0]
    finally:
        assert scheduler.stop(10)
    assert any("trying again in 30 s" in r.getMessage() for r in caplog.records)


def test_superseded_schedule_entries_do_not_pile_up() -> None:
    scheduler = hub.Scheduler(lambda key: None, 1, lambda: 0.0)  # not started: only the bookkeeping runs
    for step in range(20):  # each change of a topic pokes every subscriber earlier than its lease end
        for number in range(500):
            scheduler.poke(("topic", number), at=1e9 - step)
    assert len(scheduler._heap) <= 2 * 500 + 1024
    assert scheduler.busy() == 0 and len(scheduler._due) == 500


@pytest.mark.parametrize("url", ["https://sub.example:0/cb", "https://[2001:db8::1]:0/cb"])
def test_a_callback_on_port_0_is_refused(url: str) -> None:
    # urlsplit reads port 0, which `or 443` turned into 443.
    with pytest.raises(hub.Refusal, match="port must be 1 to 65535"):
        hub.parse_callback(url)


def test_an_ipv4_mapped_callback_host_is_its_ipv4_host() -> None:
    # So --hub-max-per-host counts it with 192.0.2.7, and the per-host cap of deliveries too.
    assert hub.parse_callback("https://[::ffff:192.0.2.7]:8443/cb").host == "192.0.2.7"


def test_the_scheduler_runs_at_most_a_caps_worth_of_keys_at_once() -> None:
    running: list[int] = []
    most = [0]
    lock = threading.Lock()
    done = threading.Event()
    finished: list[tuple[str, str]] = []

    def work(key: tuple[str, str]) -> None:
        with lock:
            running.append(1)
            most[0] = max(most[0], len(running))
        done.wait(0.02)  # each runs a little while, so they overlap if allowed
        with lock:
            running.pop()
            finished.append(key)

    keys = [(f"https://one.example/{i}", "/feed.xml") for i in range(20)]
    scheduler = hub.Scheduler(work, 8, time.time, limits=lambda key: (("host one.example", 2),))
    scheduler.start()
    try:
        for key in keys:
            scheduler.poke(key)
        assert wait_until(lambda: len(finished) == len(keys), 10.0)
    finally:
        scheduler.stop(1.0)
    assert most[0] == 2
