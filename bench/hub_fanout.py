"""Fan-out benchmark: one change of a topic delivered to N subscribers whose callbacks each take 100 ms.

    /tmp/venv/bin/python bench/hub_fanout.py [--subscribers 1000] [--delay 0.1] [--workers 32]

Starts, on 127.0.0.1, one threaded HTTPS callback server (tests/support/https_subscriber.py,
certificate from trustme) and the real server (`reviewsd.py`, with
--allow-private-callbacks --ca-file and raised caps), subscribes N distinct
callback URLs to /feed.xml, waits until all are verified, changes the data
(new files + SIGHUP) and reports how long until every subscriber has received
the new version. Everything it starts is stopped, within --timeout seconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the tests' helpers

import trustme  # noqa: E402
from compare_support.procs import Processes, start_reviewsd  # noqa: E402
from support.factories import Spec, make_docs, write_docs  # noqa: E402
from support.https_subscriber import HTTPSSubscriber  # noqa: E402

BASE = "https://reviews.example.com"
TOPIC = BASE + "/feed.xml"


def write_version(data_dir: Path, n: int) -> None:
    specs = [Spec(rating=5, date=f"2025-01-{i % 28 + 1:02d}", text=f"v{n} review {i}") for i in range(20 + n)]
    write_docs(data_dir, *make_docs(specs, generated_at=f"2026-11-15T06:{n:02d}:00Z"))


def subscribe_all(port: int, callbacks: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for callback in callbacks:
            body = urlencode({"hub.callback": callback, "hub.mode": "subscribe", "hub.topic": TOPIC})
            conn.request(
                "POST", "/api/websub/hub", body, {"Content-Type": "application/x-www-form-urlencoded"}
            )
            response = conn.getresponse()
            response.read()
            if response.status != 202:
                raise SystemExit(f"subscription refused: {response.status}")
    finally:
        conn.close()


def hub_status(port: int) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        return json.loads(conn.getresponse().read())["hub"]
    finally:
        conn.close()


def wait_until(check, deadline: float, what: str) -> None:
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def run(
    args: argparse.Namespace, work: Path, ca_file: Path, subscriber: HTTPSSubscriber, deadline: float
) -> None:
    subscriber.set("/cb", delay=args.delay, post_status=204)
    write_version(work / "data", 1)
    n = args.subscribers
    with Processes(work) as procs:
        hub, base, _ = start_reviewsd(
            procs,
            [
                "--data-dir",
                str(work / "data"),
                "--state-dir",
                str(work / "state"),
                "--base-url",
                BASE,
                "--allow-private-callbacks",
                "--ca-file",
                str(ca_file),
                "--reload-interval",
                "0",
                "--hub-workers",
                str(args.workers),
                "--hub-max-per-host",
                str(n + 10),
                "--hub-workers-per-host",  # every callback is on 127.0.0.1
                str(args.workers),
                "--hub-max-per-topic",
                str(n + 10),
                "--hub-rate-limit",
                "0",
                "--threads",
                "8",
                "--log-format",
                "json",
            ],
            timeout=max(0.0, deadline - time.monotonic()),
        )
        fan_out(args, work, subscriber, deadline, hub.pid, int(base.rsplit(":", 1)[1]))


def fan_out(
    args: argparse.Namespace, work: Path, subscriber: HTTPSSubscriber, deadline: float, pid: int, port: int
) -> None:
    """Subscribe every callback, change the data, and time the deliveries."""
    n = args.subscribers
    started = time.monotonic()
    subscribe_all(port, [subscriber.url(f"/cb?subscriber={i}") for i in range(n)])
    accepted = time.monotonic()
    wait_until(lambda: hub_status(port)["subscriptions"] == n, deadline, "verifications")
    verified = time.monotonic()
    print(
        f"subscribe: {n} requests answered 202 in {accepted - started:.2f} s; "
        f"all verified after {verified - started:.2f} s"
    )

    write_version(work / "data", 2)
    changed = time.monotonic()
    os.kill(pid, signal.SIGHUP)
    subscriber.wait_until(
        lambda records: sum(r.method == "POST" for r in records) >= n,
        timeout=max(0.0, deadline - time.monotonic()),
    )
    done = time.monotonic()
    wait_until(lambda: hub_status(port)["pending_deliveries"] == 0, deadline, "acknowledgements")
    posts = subscriber.requests("/cb", "POST")
    distinct = {p.query for p in posts}
    print(
        f"fan-out: {len(posts)} deliveries to {len(distinct)} distinct callbacks in {done - changed:.2f} s "
        f"({len(posts) / (done - changed):.0f}/s); lower bound with {args.workers} workers and "
        f"{args.delay * 1000:.0f} ms callbacks: {n * args.delay / args.workers:.2f} s"
    )
    if len(posts) != n or len(distinct) != n:
        raise SystemExit(f"expected exactly {n} deliveries, got {len(posts)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument(
        "--delay", type=float, default=0.1, help="seconds each callback takes to answer a POST"
    )
    parser.add_argument("--workers", type=int, default=32, help="--hub-workers of the server")
    parser.add_argument("--timeout", type=float, default=180.0, help="give up after this many seconds")
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    ca = trustme.CA()
    with tempfile.TemporaryDirectory(prefix="hub-fanout-") as tmp:
        work = Path(tmp)
        ca.cert_pem.write_to_path(str(work / "ca.pem"))
        with HTTPSSubscriber(ca.issue_cert("127.0.0.1")) as subscriber:
            run(args, work, work / "ca.pem", subscriber, deadline)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
