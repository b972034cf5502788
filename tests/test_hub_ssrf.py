"""SSRF: callbacks on non-public addresses are refused before anything is contacted, and again at connect
time.

Every test here runs with outbound connections made impossible: socket.socket.connect
and socket.create_connection record the attempt and raise. The hubs use the real
Outbound and, unless a test replaces socket.getaddrinfo, the system resolver.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from typing import Callable, Iterator
from urllib.parse import urlencode

import pytest
from support.hub import FEED, PUBLIC_IP, HubMaker, wait_idle
from werkzeug.test import Client

from reviewsd_app import hub
from reviewsd_app.websub import client

LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "127.0.0.1:8443",
    "127.255.255.254",
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:ffff:127.0.0.1]",  # IPv4-mapped
    "[::127.0.0.1]",  # IPv4-compatible
    "[::ffff:0:127.0.0.1]",  # IPv4-translated
    "[64:ff9b::127.0.0.1]",  # NAT64
    "[2002:7f00:1::]",  # 6to4 of 127.0.0.1
    "2130706433",
    "0x7f000001",
    "0X7F000001",
    "0177.0.0.1",
    "0177.0.0.01",
    "127.1",
    "127.0.1",
    "0x7f.1",
    "017700000001",
    "localhost",
    "LOCALHOST",
    "localhost.",
]
OTHER_NON_PUBLIC = [
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "0",
    "224.0.0.1",
    "239.255.255.250",
    "255.255.255.255",
    "192.0.2.1",
    "198.51.100.1",
    "203.0.113.1",
    "198.18.0.1",
    "240.0.0.1",
    "[fe80::1]",
    "[fc00::1]",
    "[fd12:3456::1]",
    "[fec0::1]",
    "[ff02::1]",
    "[::]",
    "[100::1]",
    "[2001:db8::1]",
    "[64:ff9b::a00:1]",
    "[64:ff9b:1::1]",
    "[2002:c0a8:101::1]",
    "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
    "[::ffff:10.0.0.1]",
    "[::ffff:169.254.169.254]",
    "[::10.0.0.1]",
    "012.0.0.1",
    "0xa9fea9fe",
    "2886729729",
]


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list:
    """Make outbound connections impossible; the list records every attempt."""
    attempts: list = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args[-1] if args else kwargs)
        raise OSError("outbound connections are disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", lambda self, address: refuse(address))
    monkeypatch.setattr(socket.socket, "connect_ex", lambda self, address: refuse(address))
    monkeypatch.setattr(socket, "create_connection", lambda address, *a, **k: refuse(address))
    return attempts


def fake_dns(monkeypatch: pytest.MonkeyPatch, answer: Callable[[str], list[str]]) -> list[str]:
    """Replace getaddrinfo: `answer(host)` gives the addresses. Returns the hosts asked, in order."""
    asked: list[str] = []

    def getaddrinfo(host: str, port: int, *args: object, **kwargs: object) -> list[tuple]:
        asked.append(host)
        infos = []
        for address in answer(host):
            ip = ipaddress.ip_address(address)
            family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
            sockaddr = (address, port, 0, 0) if ip.version == 6 else (address, port)
            infos.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
        return infos

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def subscribe(app: object, callback: str):
    fields = {"hub.callback": callback, "hub.mode": "subscribe", "hub.topic": FEED}
    return Client(app).post(
        "/api/websub/hub", data=urlencode(fields), content_type="application/x-www-form-urlencoded"
    )


def assert_nothing_happened(app: object, attempts: list) -> None:
    wait_idle(app.hub)
    assert attempts == []
    status = app.hub.status()
    assert status["subscriptions"] == 0 and status["pending_verifications"] == 0


@pytest.fixture(scope="module")
def strict_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A hub with the real Outbound and resolver, private callbacks not allowed (shared: refusals store
    nothing)."""
    maker = HubMaker(tmp_path_factory.mktemp("strict"))
    yield maker(None, resolve=hub.system_resolver, hub_rate_limit=0)
    maker.stop_all()


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS + OTHER_NON_PUBLIC)
def test_non_public_callbacks_are_refused_without_contact(
    strict_app: object, no_network: list, host: str
) -> None:
    response = subscribe(strict_app, f"https://{host}/cb?x=1")
    assert response.status_code == 400, response.get_data()
    assert response.content_type == "text/plain; charset=utf-8"
    assert "refused" in response.get_data(as_text=True) and "address" in response.get_data(as_text=True)
    assert_nothing_happened(strict_app, no_network)


@pytest.mark.parametrize(
    "addresses",
    [
        ["127.0.0.1"],
        ["::1"],
        ["::ffff:127.0.0.1"],
        [PUBLIC_IP, "10.1.2.3"],
        ["fe80::1%eth0"],
        ["2606:4700:4700::1111", "169.254.169.254"],
    ],
)
def test_names_resolving_to_non_public_addresses_are_refused(
    strict_app: object, no_network: list, monkeypatch: pytest.MonkeyPatch, addresses: list[str]
) -> None:
    asked = fake_dns(monkeypatch, lambda host: addresses)
    response = subscribe(strict_app, "https://innocent-looking.example/cb")
    assert response.status_code == 400 and "refused" in response.get_data(as_text=True)
    assert asked == ["innocent-looking.example"]
    assert_nothing_happened(strict_app, no_network)


def test_names_that_do_not_resolve_are_refused(
    strict_app: object, no_network: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    def nxdomain(host: str) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    fake_dns(monkeypatch, nxdomain)
    response = subscribe(strict_app, "https://nowhere.example/cb")
    assert response.status_code == 400 and "does not resolve" in response.get_data(as_text=True)
    assert_nothing_happened(strict_app, no_network)


def test_a_name_server_that_never_answers_costs_a_subscriber_a_refusal_not_a_request_thread(
    strict_app: object, no_network: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()

    def silent(host: str) -> list[str]:
        release.wait(60)  # as getaddrinfo waits on a name server that never answers
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    fake_dns(monkeypatch, silent)
    monkeypatch.setattr(client, "LOOKUP_TIMEOUT", 0.2)
    try:
        response = subscribe(strict_app, "https://slow-dns.example/cb")
        assert response.status_code == 400
        assert "does not resolve (no answer within 0.2 s)" in response.get_data(as_text=True)
        assert_nothing_happened(strict_app, no_network)
    finally:
        release.set()  # the lookup's own thread ends


def test_connecting_stops_at_the_request_deadline(no_network: list) -> None:
    infos = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_IP, 443))] * 3
    with pytest.raises(TimeoutError):
        client._connect_any(infos, timeout=5.0, deadline=time.monotonic() - 1)
    assert no_network == []  # not one attempt once the deadline has passed
    with pytest.raises(OSError):
        client._connect_any(infos, timeout=5.0, deadline=time.monotonic() + 30)
    assert len(no_network) == 3  # before it, every address is tried


def test_rebinding_to_loopback_at_connect_time_is_refused(
    strict_app: object, no_network: list, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "reviewsd.hub")
    asked = fake_dns(monkeypatch, lambda host: [PUBLIC_IP] if len(asked) == 1 else ["127.0.0.1"])
    assert subscribe(strict_app, "https://rebinding.example/cb").status_code == 202
    wait_idle(strict_app.hub)
    assert asked == ["rebinding.example", "rebinding.example"]  # at subscribe time, then before connecting
    assert no_network == []  # in particular, nothing went to 127.0.0.1
    failed = [r for r in caplog.records if getattr(r, "event", "") == "verification_failed"]
    assert len(failed) == 1 and "loopback" in failed[0].getMessage()
    assert strict_app.hub.status()["subscriptions"] == 0


def test_connections_go_to_the_vetted_address_only(
    strict_app: object, no_network: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control for the test above: with a public address the connection is attempted, to that address."""
    asked = fake_dns(monkeypatch, lambda host: [PUBLIC_IP])
    assert subscribe(strict_app, "https://public.example:8443/cb").status_code == 202
    wait_idle(strict_app.hub)
    assert asked == ["public.example", "public.example"]
    assert no_network == [(PUBLIC_IP, 8443)]


def test_private_callbacks_can_be_allowed_for_development(make_hub: HubMaker, no_network: list) -> None:
    app = make_hub(None, resolve=hub.system_resolver, allow_private_callbacks=True)
    assert subscribe(app, "https://127.0.0.1:9/cb").status_code == 202
    wait_idle(app.hub)
    assert no_network == [("127.0.0.1", 9)]


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", PUBLIC_IP, "2606:4700:4700::1111", "2a00:1450::1"])
def test_public_addresses_pass(address: str) -> None:
    assert client.address_problem(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "host, expected",
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("example.com", None),
        ("1.2.3.4.5", None),
        ("0x0", "0.0.0.0"),
        ("00", "0.0.0.0"),
        ("0x", None),
        ("09", None),
        ("1.2.3.256", None),
        ("deadbeef", None),
    ],
)
def test_literal_addresses_read_like_the_c_resolver(host: str, expected: str | None) -> None:
    address = client.literal_address(host)
    assert (str(address) if address is not None else None) == expected
