"""Events out, end to end: a real server process, a real HTTPS receiver (trustme) that checks every webhook
with the Standard Webhooks reference library, and a real SMTP server (aiosmtpd) for the alerts.

The data changes as a user changes it: `reviewsd import` and `reviewsd analyze` into the data directory.
Every wait is on a recorded request, a log line or /healthz, with a deadline; nothing sleeps.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest
from polling import wait_until
from standardwebhooks.webhooks import Webhook
from support.events import SECRET, Mailbox, check_event
from support.https_subscriber import HTTPSSubscriber, Recorded

from reviewsd_app.cli.commands import analyze_main, import_main, init_main

pytestmark = pytest.mark.slow  # live servers as subprocesses, a real HTTPS receiver and SMTP server

BASE = "https://reviews.example.com"
HEADER = "author,rating,date,text,id,source,reply,reply_date\n"
FIRST = [
    "Sam Oduya,5,2026-06-01,Spotless clinic and no wait.,y-1,yelp,,",
    "Lee Chen,4,2026-06-03,Good adjustment.,y-2,yelp,,",
    "Ana Pérez,5,2026-06-04,Dr. Patel really listened.,y-3,yelp,,",
]
NEW = [
    "Kim Lo,5,2026-07-01,Back pain gone after two visits.,y-4,yelp,,",
    "Raj Iyer,4,2026-07-02,Friendly front desk.,y-5,yelp,,",
    "Pat Doe,1,2026-07-03,Waited an hour and nobody said sorry.,y-6,yelp,,",
    "Mo Ali,5,2026-07-04,Great massage.,y-7,yelp,,",
    "Jo Park,3,2026-07-05,Fine.,y-8,yelp,,",
]
# Sam's review edited: a longer text and the owner's reply (the longer encoding wins a tie of edit times).
EDIT = "Sam Oduya,5,2026-06-01,Spotless clinic and no wait; I come back monthly.,y-1,yelp,Thanks!,2026-06-02"


def csv(path: Path, rows: list[str]) -> Path:
    path.write_text(HEADER + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def import_rows(data: Path, rows: list[str]) -> None:
    """`reviewsd import` of a CSV, then `reviewsd analyze`: what a user runs."""
    assert import_main(["--data-dir", str(data), str(csv(data.parent / "export.csv", rows))]) == 0
    assert analyze_main(["--data-dir", str(data)]) == 0


def notify_file(
    tmp: Path, receiver: HTTPSSubscriber, mailbox: Mailbox | None, retry_delay: float = 0.05
) -> Path:
    secret = tmp / "webhook-secret"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    text = f"""
[delivery]
retry_delay = {retry_delay}

[[webhooks]]
name = "automation"
url = "{receiver.url("/standard")}"
secret_file = "webhook-secret"
events = ["review.created", "review.updated"]

[[webhooks]]
name = "team chat"
url = "{receiver.url("/slack")}"
format = "slack"
max_rating = 2
"""
    if mailbox is not None:
        text += f"""
[smtp]
host = "127.0.0.1"
port = {mailbox.port}
starttls = false
from = "reviewsd@clinic.example"

[[alerts]]
to = "owner@clinic.example"
max_rating = 2
"""
    path = tmp / "notify.toml"
    path.write_text(text)
    return path


class Env:
    def __init__(self, tmp: Path, start, ca_path: Path, notify: Path):
        self.data = tmp / "data"
        self.state = tmp / "state"
        self.start_server = start
        self.ca_path = ca_path
        self.notify = notify
        assert init_main(["--preset", "chiropractic", "--data-dir", str(self.data)]) == 0
        import_rows(self.data, FIRST)

    def start(self):
        server = self.start_server(
            "--data-dir",
            str(self.data),
            "--state-dir",
            str(self.state),
            "--notify",
            str(self.notify),
            "--allow-private-callbacks",
            "--ca-file",
            str(self.ca_path),
            "--base-url",
            BASE,
            "--reload-interval",
            "0.1",
        )
        wait_until(lambda: first_check(server) is not None, timeout=20)
        return server


def first_check(server) -> str | None:
    """What the server's first comparison with the last-seen record found (its log line's event)."""
    found = [
        e["event"]
        for e in list(server.log)
        if e.get("event") in ("events_baseline", "events_recorded", "events_unchanged")
    ]
    return found[0] if found else None


def health(server) -> dict:
    with urllib.request.urlopen(server.url("/healthz"), timeout=10) as response:
        return json.load(response)["events"]


def settled(server) -> bool:
    status = health(server)
    return status["available"] and status["pending_deliveries"] == 0


def verified(request: Recorded) -> dict:
    """The event, once the reference library has checked its signature (it raises otherwise)."""
    return Webhook(SECRET).verify(request.body, request.headers)


def test_an_import_into_a_running_server_is_announced(
    tmp_path,
    live_server_factory,
    ca_file,
    subscriber,
    mailbox,
):
    env = Env(tmp_path, live_server_factory, ca_file, notify_file(tmp_path, subscriber, mailbox))
    server = env.start()
    assert first_check(server) == "events_baseline"  # the first start announces nothing
    assert health(server) == {
        "enabled": True,
        "running": True,
        "available": True,
        "targets": 3,
        "pending_deliveries": 0,
        "failed_deliveries": 0,
    }

    import_rows(env.data, NEW + [EDIT])
    standard = subscriber.wait_for(6, path="/standard")
    wait_until(lambda: settled(server), timeout=20)

    events = [verified(request) for request in subscriber.requests(path="/standard")]
    for event in events:
        check_event(event)
    assert sorted(event["type"] for event in events) == ["review.created"] * 5 + ["review.updated"]
    created = [event["data"]["review"]["author"] for event in events if event["type"] == "review.created"]
    assert sorted(created) == [
        "Jo P.",
        "Kim L.",
        "Mo A.",
        "Pat D.",
        "Raj I.",
    ]  # as business.toml shows authors
    (updated,) = [event for event in events if event["type"] == "review.updated"]
    assert updated["data"]["changes"] == ["text", "owner_reply"]
    assert updated["data"]["previous"] == {"text": "Spotless clinic and no wait.", "owner_reply": None}
    review = updated["data"]["review"]
    assert updated["data"]["url"] == f"{BASE}/reviews/{review['id']}"
    assert len({request.headers["webhook-id"] for request in standard}) == 6

    (slack,) = subscriber.requests(path="/slack")
    text = json.loads(slack.body)["text"]
    assert "New 1-star review" in text and "Pat D." in text and "no reply yet" in text
    assert "webhook-signature" not in slack.headers  # a Slack URL is its own secret
    (mail,) = mailbox.received()
    assert mail["To"] == "owner@clinic.example" and "New 1-star review" in mail["Subject"]
    assert "Waited an hour and nobody said sorry." in mail.get_payload(decode=True).decode()

    def delivered_lines() -> list[dict]:
        return [entry for entry in list(server.log) if entry.get("event") == "event_delivered"]

    wait_until(lambda: len(delivered_lines()) >= 8)  # the log arrives a moment after the receiver's answer
    assert len(delivered_lines()) == 8  # each delivery logged once
    assert not any(SECRET in json.dumps(entry) or "/slack" in json.dumps(entry) for entry in server.log)


def test_a_receiver_failing_twice_gets_the_event_with_the_same_id(
    tmp_path,
    live_server_factory,
    ca_file,
    subscriber,
):
    env = Env(tmp_path, live_server_factory, ca_file, notify_file(tmp_path, subscriber, None))
    server = env.start()
    subscriber.set("/standard", fail_posts=2)
    import_rows(env.data, NEW[2:3])
    attempts = subscriber.wait_for(3, path="/standard")
    wait_until(lambda: settled(server), timeout=20)
    assert len(subscriber.requests(path="/standard")) == 3
    assert len({request.headers["webhook-id"] for request in attempts}) == 1
    assert [verified(request)["type"] for request in attempts] == ["review.created"] * 3

    def lines() -> list[dict]:
        return [
            e for e in list(server.log) if e.get("event") == "event_delivered" and e["target"] == "automation"
        ]

    wait_until(lines)
    (line,) = lines()
    assert line["attempts"] == 3
    assert health(server)["failed_deliveries"] == 0


def test_changes_made_while_stopped_are_announced_at_start_and_a_restart_announces_nothing_more(
    tmp_path,
    live_server_factory,
    ca_file,
    subscriber,
):
    env = Env(tmp_path, live_server_factory, ca_file, notify_file(tmp_path, subscriber, None))
    server = env.start()
    assert server.stop() == 0

    import_rows(env.data, NEW[:2] + [EDIT])  # while no server runs
    server = env.start()
    subscriber.wait_for(3, path="/standard")
    wait_until(lambda: settled(server), timeout=20)
    types = sorted(verified(request)["type"] for request in subscriber.requests(path="/standard"))
    assert types == ["review.created", "review.created", "review.updated"]
    assert server.stop() == 0

    server = env.start()  # nothing changed since
    assert first_check(server) == "events_unchanged"
    assert settled(server)
    assert len(subscriber.requests()) == 3
    assert os.stat(env.state / "events.sqlite3").st_mode & 0o077 == 0


def test_a_pending_delivery_survives_a_restart(tmp_path, live_server_factory, ca_file, subscriber):
    notify = notify_file(tmp_path, subscriber, None, retry_delay=3)
    env = Env(tmp_path, live_server_factory, ca_file, notify)
    server = env.start()
    subscriber.set("/standard", fail_posts=1)
    import_rows(env.data, NEW[:1])
    (first,) = subscriber.wait_for(1, path="/standard")
    assert server.stop() == 0  # the retry, 3 s later, is still pending in events.sqlite3

    server = env.start()
    second = subscriber.wait_for(2, path="/standard")[1]
    assert second.headers["webhook-id"] == first.headers["webhook-id"]
    assert verified(second)["data"]["review"]["author"] == "Kim L."
    wait_until(lambda: settled(server))
    assert health(server)["failed_deliveries"] == 0
    wait_until(
        lambda: any(e.get("event") == "event_delivered" and e["attempts"] == 2 for e in list(server.log))
    )
