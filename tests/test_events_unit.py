"""Events out, piece by piece: the --notify file's checks, the diff, the payloads and their signature, the
renderings, `reviewsd notify test`, and a review deleted and insights changed in a server in this process."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import jsonschema_rs
import pytest
from conftest import ROOT
from hypothesis import given
from hypothesis import strategies as st
from polling import wait_until
from standardwebhooks.webhooks import Webhook
from support.events import SECRET, check_event
from support.factories import Spec, make_docs, write_docs
from werkzeug.test import Client

from reviewsd_app import reviewsd
from reviewsd_app.events import payloads
from reviewsd_app.events.command import notify_main
from reviewsd_app.events.config import EVENT_TYPES, Filters, NotifyConfigError, decode_secret, load_notify
from reviewsd_app.events.diff import Changes, changed_fields, compare
from reviewsd_app.openapi import build_openapi
from reviewsd_app.reviews.validation import REGISTRY, SCHEMAS

NOW = 1_790_000_000.0


def write_notify(tmp: Path, text: str, secret: str | None = SECRET, mode: int = 0o600) -> Path:
    if secret is not None:
        (tmp / "webhook-secret").write_text(secret)
        (tmp / "webhook-secret").chmod(mode)
    path = tmp / "notify.toml"
    path.write_text(text)
    return path


HOOK = '[[webhooks]]\nurl = "https://hooks.example.com/r"\nsecret_file = "webhook-secret"\n'


# --------------------------------------------------------------------------- the --notify file


def test_a_good_file_is_read(tmp_path: Path) -> None:
    notify = load_notify(
        write_notify(
            tmp_path,
            HOOK + 'events = ["review.created"]\nmax_rating = 2\n'
            '[[webhooks]]\nurl = "https://hooks.slack.com/services/T/B/XYZ"\nformat = "slack"\n'
            '[smtp]\nhost = "smtp.example.com"\nfrom = "r@example.com"\n'
            '[[alerts]]\nto = ["a@example.com", "b@example.com"]\nmin_rating = 1\nmax_rating = 1\n',
        )
    )
    standard, slack, alert = notify.targets
    assert standard.secret == bytes(range(32)) and standard.filters == Filters(("review.created",), None, 2)
    assert slack.format == "slack" and slack.filters.events == EVENT_TYPES
    assert "XYZ" not in slack.name and "/services" not in slack.name  # its URL path is its secret
    assert alert.to == ("a@example.com", "b@example.com") and notify.smtp.port == 587 and notify.smtp.starttls


@pytest.mark.parametrize(
    "text, secret, mode, message",
    [
        ("[[webhook]]\n", SECRET, 0o600, "top level: unknown key 'webhook'"),
        ('[[webhooks]]\nurl = "http://x.example/"\n', SECRET, 0o600, "the URL must be an https URL"),
        ('[[webhooks]]\nurl = "https://x.example/"\n', SECRET, 0o600, "needs secret_file"),
        (HOOK, SECRET, 0o644, "is readable by others; make it the service's alone: chmod 600"),
        (HOOK, "whsec_c2hvcnQ=", 0o600, "must hold whsec_ and the base64 of 24 to 64 random bytes"),
        (HOOK + 'events = ["review.new"]\n', SECRET, 0o600, "unknown event 'review.new'"),
        (HOOK + "min_rating = 4\nmax_rating = 2\n", SECRET, 0o600, "nothing would match"),
        (HOOK + "max_rating = 6\n", SECRET, 0o600, "max_rating: must be a whole number from 1 to 5"),
        ('[[alerts]]\nto = "a@example.com"\n', None, 0, "[[alerts]] need an [smtp] table"),
        (
            '[smtp]\nhost = "mx"\nfrom = "r@x"\nusername = "u"\npassword_file = "p"\nstarttls = false\n',
            None,
            0,
            "a password is never sent unencrypted",
        ),
        ("[delivery]\nretry_delay = -1\n", None, 0, "retry_delay: must be a number of seconds"),
        ("webhooks = [", None, 0, "not valid TOML"),
    ],
)
def test_each_mistake_is_one_line_naming_where(tmp_path: Path, text: str, secret, mode, message) -> None:
    path = write_notify(tmp_path, text, secret, mode)
    with pytest.raises(NotifyConfigError) as error:
        load_notify(path)
    assert message in str(error.value) and str(error.value).startswith(str(path))
    assert "\n" not in str(error.value)


@pytest.mark.slow  # a server process
def test_the_server_refuses_to_start_on_a_bad_file(tmp_path: Path) -> None:
    path = write_notify(tmp_path, HOOK, mode=0o640)
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "reviewsd.py"),
            "--port",
            "0",
            "--notify",
            str(path),
            "--state-dir",
            str(tmp_path / "state"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().endswith("chmod 600 " + str(tmp_path / "webhook-secret"))
    assert "cannot start: " in done.stderr and "Traceback" not in done.stderr


def test_secrets_decode_as_the_reference_library_reads_them() -> None:
    assert decode_secret(SECRET) == bytes(range(32))
    assert decode_secret(SECRET.removeprefix("whsec_").rstrip("=")) == bytes(range(32))
    assert decode_secret("whsec_not base64!") is None


def test_rating_filters_let_only_review_events_through() -> None:
    bad = Filters(max_rating=2)
    assert bad.wants("review.created", 1) and not bad.wants("review.created", 3)
    assert not bad.wants("insights.updated", None)  # "tell me about bad reviews" is not every re-analysis
    assert Filters().wants("insights.updated", None)
    assert not Filters(("review.created",)).wants("review.updated", 1)


# --------------------------------------------------------------------------- the diff


@given(
    st.dictionaries(st.text(min_size=1, max_size=3), st.binary(min_size=1, max_size=2), max_size=8),
    st.dictionaries(st.text(min_size=1, max_size=3), st.binary(min_size=1, max_size=2), max_size=8),
)
def test_compare_is_the_plain_set_difference(seen: dict, current: dict) -> None:
    found = compare(seen, list(current.items()))
    assert set(found.created) == current.keys() - seen.keys()
    assert set(found.deleted) == seen.keys() - current.keys()
    assert set(found.updated) == {k for k in current.keys() & seen.keys() if current[k] != seen[k]}
    assert len(found.created) == len(set(found.created))


def test_created_reviews_are_announced_oldest_first() -> None:
    assert compare({}, [("newest", b"1"), ("older", b"2")]) == Changes(["older", "newest"], [], [])


def test_changed_fields_name_the_watched_ones_only() -> None:
    old = {"rating": 5, "text": "a", "owner_reply": None, "author": "X"}
    assert changed_fields(old, {**old, "author": "Y"}) == []
    assert changed_fields(old, {**old, "rating": 1, "owner_reply": {"text": "t", "date": "2025-01-01"}}) == [
        "rating",
        "owner_reply",
    ]


# --------------------------------------------------------------------------- payloads and renderings

REVIEW = {
    "id": "01M7F41KJ3CP69BSGAYP9VT16F",
    "author": "Pat <D.> & co",
    "author_avatar_url": None,
    "rating": 1,
    "date": "2026-07-03",
    "text": "Waited an hour.\nNobody said sorry. " + "x" * 400,
    "source": "google",
    "source_url": "https://maps.example/r/1",
    "owner_reply": None,
    "verified": True,
}
BUSINESS = {"id": "test-clinic", "name": "Test Clinic & Spine"}
PAGE = "https://reviews.example.com/reviews/" + REVIEW["id"]
INSIGHTS = {
    "generated_at": "2026-11-15T06:30:00Z",
    "review_count": 3,
    "overall_sentiment": {"score": 0.5, "positive_pct": 60.0, "neutral_pct": 20.0, "negative_pct": 20.0},
}
EVENTS = [
    payloads.review_event("review.created", REVIEW, BUSINESS, PAGE, NOW),
    payloads.review_event(
        "review.updated", {**REVIEW, "rating": 2}, BUSINESS, PAGE, NOW, ["rating"], {**REVIEW, "rating": 5}
    ),
    payloads.review_event("review.deleted", REVIEW, BUSINESS, None, NOW),
    payloads.insights_event(INSIGHTS, BUSINESS, "https://reviews.example.com/insights.json", NOW),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e["type"])
def test_every_event_type_matches_its_schema(event: dict) -> None:
    check_event(event)
    schema_id = SCHEMAS["webhook-event.schema.json"]["$id"]
    other = {"review.created": "ReviewDeleted"}.get(event["type"], "ReviewCreated")
    wrong = jsonschema_rs.Draft202012Validator({"$ref": f"{schema_id}#/$defs/{other}"}, registry=REGISTRY)
    assert not wrong.is_valid(event)  # each entry tells its type apart


def test_the_signature_is_what_the_reference_library_checks() -> None:
    body = payloads.encode(EVENTS[0])
    timestamp = int(time.time())
    headers = payloads.standard_headers(bytes(range(32)), "evt_1", timestamp, body)
    assert Webhook(SECRET).verify(body, headers) == EVENTS[0]
    tampered = body.replace(b"Waited", b"waited")
    with pytest.raises(Exception, match="No matching signature"):
        Webhook(SECRET).verify(tampered, headers)


def test_the_slack_message_escapes_and_shortens() -> None:
    text = json.loads(payloads.slack_body(EVENTS[0]))["text"]
    assert text.startswith("*New 1-star review of Test Clinic &amp; Spine by Pat &lt;D.&gt; &amp; co*")
    assert ">Waited an hour.\n>Nobody said sorry." in text and "…" in text and len(text) < 600
    assert f"<{PAGE}|Open the review> · no reply yet" in text
    updated = json.loads(payloads.slack_body(EVENTS[1]))["text"]
    assert updated.startswith("*Changed (rating 5 → 2): the 2-star review")


def test_the_email_says_who_when_what_and_how_to_answer() -> None:
    message = payloads.email_message(EVENTS[0], "reviewsd@clinic.example", ("owner@clinic.example",))
    assert message["Subject"] == "New 1-star review of Test Clinic & Spine by Pat <D.> & co"
    body = message.get_content()
    assert "★☆☆☆☆ (1 of 5)" in body and "From: Pat <D.> & co, 2026-07-03, on google" in body
    assert REVIEW["text"] in body and f"Read it: {PAGE}" in body
    assert "To answer it, reply where it was posted (https://maps.example/r/1)" in body


def test_the_openapi_document_describes_every_event_as_a_webhook() -> None:
    webhooks = build_openapi("https://reviews.example.com")["webhooks"]
    assert set(webhooks) == set(EVENT_TYPES)
    post = webhooks["review.updated"]["post"]
    assert [p["name"] for p in post["parameters"]] == ["webhook-id", "webhook-timestamp", "webhook-signature"]
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    assert schema["allOf"][1] == {"$ref": "#/components/schemas/WebhookEvent/$defs/ReviewUpdated"}


# --------------------------------------------------------------------------- notify test


def test_notify_test_sends_a_sample_to_every_target(
    tmp_path,
    ca_file,
    subscriber,
    mailbox,
    capsys,
) -> None:
    path = write_notify(
        tmp_path,
        f"""
[[webhooks]]
name = "automation"
url = "{subscriber.url("/standard")}"
secret_file = "webhook-secret"
max_rating = 1
[[webhooks]]
url = "{subscriber.url("/slack")}"
format = "slack"
[smtp]
host = "127.0.0.1"
port = {mailbox.port}
starttls = false
from = "r@clinic.example"
[[alerts]]
to = "owner@clinic.example"
events = ["insights.updated"]
""",
    )
    options = ["--notify", str(path), "--ca-file", str(ca_file)]
    assert notify_main(["test", *options, "--allow-private-callbacks"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "automation: delivered (HTTP 204)",
        "slack webhook #2 (127.0.0.1): delivered (HTTP 204)",
        "email alert #1 (owner@clinic.example): delivered (sent)",
    ]
    (standard,) = subscriber.requests(path="/standard")
    assert Webhook(SECRET).verify(standard.body, standard.headers)["data"]["review"]["source"] == "reviewsd"
    assert "notify test" in mailbox.received()[0]["Subject"]

    assert notify_main(["test", *options]) == 1  # 127.0.0.1 is refused without --allow-private-callbacks
    refused = capsys.readouterr().out.splitlines()[0]
    assert refused.startswith(
        "automation: FAILED (refused: callback host 127.0.0.1 is or resolves to 127.0.0.1"
    )


# --------------------------------------------------------------------------- in this process


def test_a_deleted_review_and_new_insights_are_announced(tmp_path: Path, ca_file, subscriber) -> None:
    data = tmp_path / "data"
    specs = [Spec(rating=5, date="2025-03-01"), Spec(rating=2, date="2025-02-01", text="Rude.")]
    write_docs(data, *make_docs(specs))
    url = subscriber.url("/all")
    path = write_notify(tmp_path, f'[[webhooks]]\nurl = "{url}"\nsecret_file = "webhook-secret"\n')
    config = reviewsd.Config(
        data_dir=str(data),
        state_dir=str(tmp_path / "state"),
        reload_interval=0,
        base_url="https://reviews.example.com",
        hub=False,
        notify=str(path),
        allow_private_callbacks=True,
        ca_file=str(ca_file),
    )
    app = reviewsd.create_app(config)
    try:
        wait_until(lambda: app.notifier.problem is None and app.notifier.db.seen() is not None)
        gone = app.store.current.dataset.reviews[1]
        write_docs(data, *make_docs(specs[:1], generated_at="2026-11-16T06:00:00Z"))
        assert app.store.reload(force=True)
        subscriber.wait_for(2, path="/all")
        wait_until(lambda: app.notifier.status()["pending_deliveries"] == 0)
        events = [Webhook(SECRET).verify(r.body, r.headers) for r in subscriber.requests(path="/all")]
        assert [event["type"] for event in events] == ["review.deleted", "insights.updated"]
        for event in events:
            check_event(event)
        assert events[0]["data"]["review"] == gone and "url" not in events[0]["data"]
        assert events[1]["data"]["review_count"] == 1
        assert app.notifier.status() == {
            "enabled": True,
            "running": True,
            "available": True,
            "targets": 1,
            "pending_deliveries": 0,
            "failed_deliveries": 0,
        }
        assert Client(app).get("/healthz").get_json()["events"]["targets"] == 1
    finally:
        app.notifier.stop()


def test_one_store_per_state_directory(tmp_path: Path) -> None:
    from reviewsd_app.events.store import EventStore, LockHeld

    first, second = EventStore(str(tmp_path)), EventStore(str(tmp_path))
    first.open()
    try:
        with pytest.raises(LockHeld, match="another reviewsd announces the changes of .* \\(pid "):
            second.open()
    finally:
        first.close()
    second.open()  # taken over once the first let go
    assert second.seen() is None  # no baseline yet
    second.close()
    assert (tmp_path / "events.sqlite3").stat().st_mode & 0o077 == 0


def test_the_counts_kept_in_memory_are_what_the_database_holds(tmp_path: Path) -> None:
    """/healthz reads the deliveries' counts from memory (issue 39): added to at each change, counted again at
    open and after a prune; each step compared with a count in SQLite."""
    from reviewsd_app.events.store import DELIVERED, FAILED, EventStore, NewEvent

    store = EventStore(str(tmp_path))
    store.open()

    def counted() -> tuple[int, int]:
        with store._lock:
            rows = dict(store._db().execute("SELECT state, count(*) FROM deliveries GROUP BY state"))
        return rows.get("pending", 0), rows.get("failed", 0)

    try:
        assert store.counts() == counted() == (0, 0)
        events = [NewEvent(f"e{i}", "review.created", 1.0, b"{}", ("a", "b", "c")) for i in range(4)]
        store.commit([], [], "sha", events, at=1.0)
        assert store.counts() == counted() == (12, 0)
        first = store.next_delivery("a")
        store.retry(first.seq, "a", 1, 5.0, "timed out", at=2.0)
        assert store.counts() == counted()
        store.finish(first.seq, "a", DELIVERED, 2, "200", at=3.0)
        second = store.next_delivery("a")
        store.finish(second.seq, "a", FAILED, 5, "given up", at=3.0)
        assert store.counts() == counted() == (10, 1)
        assert store.abandon(["b"], at=4.0) == 4
        assert store.counts() == counted() == (6, 5)
        store.prune(before=10.0)  # every finished delivery
        assert store.counts() == counted() == (6, 0)
    finally:
        store.close()
    with pytest.raises(sqlite3.Error):  # closed: unknown, as SQLite said before
        store.counts()


@pytest.mark.parametrize("damage", ["garbage", "pages"])
def test_a_corrupt_events_database_is_moved_aside_and_a_new_one_opened(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    from reviewsd_app.events.store import DB_FILE, EventStore

    path = tmp_path / DB_FILE
    store = EventStore(str(tmp_path))
    store.open()
    store.close()
    data = bytearray(path.read_bytes())
    if damage == "garbage":  # not a database at all: SQLITE_NOTADB
        data = bytearray(b"garbage " * 1000)
    else:  # every page after the first: the header survives, PRAGMA quick_check does not pass
        assert len(data) >= 2 * 4096
        data[4096:] = b"\xa5" * (len(data) - 4096)
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.ERROR):
        store.open()
    try:
        assert store.seen() is None
    finally:
        store.close()
    (moved,) = tmp_path.glob(DB_FILE + ".corrupt-*")
    assert moved.read_bytes() == bytes(data)
    (record,) = [r for r in caplog.records if getattr(r, "event", "") == "events_store_corrupt"]
    assert moved.name in record.getMessage()


def test_an_unusable_state_directory_is_degraded_not_a_crash(tmp_path: Path, small_data_dir: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state directory should be")
    config = reviewsd.Config(
        data_dir=str(small_data_dir),
        state_dir=str(blocker),
        reload_interval=0,
        hub=False,
        notify=str(write_notify(tmp_path, HOOK)),
        hub_state_check=0.05,
    )
    app = reviewsd.create_app(config)
    try:
        wait_until(lambda: app.notifier.problem != "not started yet")
        health = Client(app).get("/healthz")
        assert health.status_code == 200 and health.get_json()["status"] == "degraded"
        events = health.get_json()["events"]
        assert events["available"] is False and str(blocker) in events["reason"]
        blocker.unlink()  # fixed: the watcher's next try opens the store and records the baseline
        wait_until(lambda: app.notifier.status()["available"])
        wait_until(lambda: app.notifier.db.seen() is not None)
    finally:
        app.notifier.stop()


def test_retries_double_up_to_an_hour() -> None:
    from reviewsd_app.events.notifier import retry_delay

    assert [retry_delay(30, n) for n in (1, 2, 3)] == [30, 60, 120]
    assert retry_delay(30, 8) == 3600 and retry_delay(0.01, 5000) == 3600
