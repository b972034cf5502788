"""Issue 31: subscribers that trickle their answers do not delay the healthy ones. A real server process and
real HTTPS subscribers on loopback addresses; small timeouts so it stays quick."""

from __future__ import annotations

import contextlib
import http.client
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

import pytest
from conftest import LiveServer
from support.https_subscriber import HTTPSSubscriber
from support.hub_live import FEED, HubEnv, settled, wait_status

pytestmark = pytest.mark.slow  # hundreds of trickling HTTPS subscribers

TRICKLING = 500
HOSTS = [f"127.0.0.{i}" for i in range(2, 6)]  # four callback hosts: their caps alone would take every worker


def subscribe_many(server: LiveServer, callbacks: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        for callback in callbacks:
            body = urlencode({"hub.callback": callback, "hub.mode": "subscribe", "hub.topic": FEED})
            conn.request(
                "POST", "/api/websub/hub", body, {"Content-Type": "application/x-www-form-urlencoded"}
            )
            response = conn.getresponse()
            assert response.status == 202, response.read()
            response.read()
    finally:
        conn.close()


def test_a_healthy_subscriber_is_notified_while_500_others_trickle(
    tmp_path: Path,
    ca_file: Path,
    ca,
    subscriber: HTTPSSubscriber,
    live_server_factory: Callable[..., LiveServer],
) -> None:
    env = HubEnv(tmp_path, ca_file, live_server_factory)
    server = env.start(
        *("--hub-workers", "8", "--hub-workers-per-host", "2", "--hub-delivery-timeout", "2"),
        *("--hub-max-per-host", "1000", "--hub-max-per-topic", "1000", "--hub-rate-limit", "0"),
    )
    with contextlib.ExitStack() as stack:
        tricklers = [stack.enter_context(HTTPSSubscriber(ca.issue_cert(host), host)) for host in HOSTS]
        subscribe_many(server, [tricklers[i % len(HOSTS)].url(f"/slow?n={i}") for i in range(TRICKLING)])
        wait_status(server, settled(TRICKLING), timeout=60.0)
        # The healthy subscriber comes last, on a host of its own (the certificate names localhost).
        subscribe_many(server, [f"https://localhost:{subscriber.port}/healthy"])
        wait_status(server, settled(TRICKLING + 1))
        env.write_version(2)  # everyone answers at once: every host earns the fast lane
        subscriber.wait_for(1, "/healthy", "POST", timeout=60.0)
        wait_status(server, lambda s: s["pending_deliveries"] == 0, timeout=60.0)

        for trickler in tricklers:
            trickler.set("/slow", delay=60.0)  # from now on, no delivery is answered in time
        env.write_version(3)
        # Before: 8 workers, each held 30 s by a trickling callback, and 500 of them ahead in the queue.
        post = subscriber.wait_for(2, "/healthy", "POST", timeout=10.0)[1]
        assert b"v3 review" in post.body
