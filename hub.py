"""The WebSub hub: subscriptions, verification of intent and content distribution.

Follows the W3C WebSub Recommendation where SPEC.md is silent (see DECISIONS.md). Which
thread runs what, and how state and delivery work: docs/internals.md, "The WebSub hub".
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import heapq
import hmac
import http.client
import ipaddress
import logging
import math
import re
import secrets
import socket
import ssl
import threading
import time
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit

from werkzeug.http import parse_options_header
from werkzeug.wrappers import Response

from .config import Config, Network, client_address
from .reviews.dataset import DataStore
from .web.request_rules import BodyCut, BodyTooLarge, is_utf8_charset, origin, read_body
from .web.responses import status_line
from .web.snapshot import TOPIC_PATHS, Snapshot, link_header
from .websub.store import CapReached, Caps, Intent, Key, Store, StoreClosed, StoreUnavailable, Subscription

log = logging.getLogger("reviewsd.hub")

FORM = "application/x-www-form-urlencoded"
HUB_FIELDS = ("hub.callback", "hub.mode", "hub.topic", "hub.lease_seconds", "hub.secret")
MAX_FIELDS = 100  # form fields in one request
MAX_URL = 2048  # characters in hub.callback / hub.topic
MAX_SECRET_BYTES = 199  # "MUST be less than 200 bytes"
MAX_FAILURES = 3  # consecutive failed deliveries before removal (SPEC.md)


def retry_delay(first_delay: float, failures: int) -> float:
    """Seconds from a subscription's `failures`-th consecutive failed delivery to its next attempt:
    `first_delay` (--hub-retry-delay) after the first, doubled after each further one."""
    return first_delay * 2 ** (failures - 1)


CHALLENGE_BYTES = 32
READ_LIMIT = 1024  # bytes read of any callback answer (beyond the challenge)
# A callback answering later than this (or not at all) puts its host in the hub's slow lane (Hub._limits).
SLOW_REPLY_SECONDS = 5.0
USER_AGENT = "reviewsd-hub/1.0 (+WebSub)"

AddrInfo = tuple[Any, ...]  # one socket.getaddrinfo entry
Resolver = Callable[[str, int], Sequence[AddrInfo]]


class Refusal(Exception):
    """A request the hub answers with a 4xx and a plain-text reason."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status


class Refused(Exception):
    """A callback address the hub will not contact."""


def text_response(status: int, text: str, headers: Sequence[tuple[str, str]] = ()) -> Response:
    return Response(
        text + "\n",
        status=status_line(status),
        content_type="text/plain; charset=utf-8",
        headers=[("Cache-Control", "no-store"), *headers],
    )


# --------------------------------------------------------------------------- URLs


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
_DNS_NAME = re.compile(rf"(?=.{{1,253}}\.?\Z){_LABEL}(\.{_LABEL})*\.?")
_LEGACY_IPV4 = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}", re.I)


def _normalise_escapes(text: str) -> str:
    """Decode escaped unreserved characters and upper-case the other escapes (RFC 3986 6.2.2)."""

    def fix(match: re.Match) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    return _ESCAPE.sub(fix, text)


def normalise_url(url: str) -> str | None:
    """A canonical spelling of an http(s) URL without query or fragment, or None when it has either."""
    if "?" in url or "#" in url:  # even an empty query or fragment: a topic URL has neither
        return None
    try:
        parts = urlsplit(url.strip())
        base = origin(parts)
    except ValueError:  # a port that is not a number, or out of range
        return None
    return None if base is None else base + _normalise_escapes(parts.path or "/")


def literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host string stands for without DNS, as the C resolver reads it.

    Besides the standard forms this covers the legacy IPv4 spellings inet_aton
    accepts (2130706433, 0x7f000001, 0177.0.0.1, 127.1), which getaddrinfo
    turns into addresses without any DNS query.
    """
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host)
    with contextlib.suppress(OSError):
        if _LEGACY_IPV4.fullmatch(host):
            return ipaddress.IPv4Address(socket.inet_aton(host))
    return None


@dataclass(frozen=True)
class Callback:
    """A validated callback URL: the exact string, plus what connecting to it needs."""

    url: str  # exactly as the subscriber gave it; used for every request (WebSub 8.3)
    host: str  # lower-case DNS name, or the canonical address for an IP literal
    port: int
    target: str  # path and query, sent on the request line

    @property
    def display(self) -> str:
        """scheme://host[:port]/path for logs: never the query, which may hold a capability token."""
        port = "" if self.port == 443 else f":{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}{port}{self.target.split('?', 1)[0]}"


def parse_callback(url: str) -> Callback:
    """Validate a callback URL: HTTPS, no fragment or credentials, a sane host. Raises Refusal."""
    if not url.isascii() or any(c <= " " or c in "\x7f\\" for c in url):
        raise Refusal(
            400,
            "hub.callback must be an ASCII URL without spaces, backslashes or control characters "
            "(percent-encode anything else)",
        )
    try:
        parts = urlsplit(url)
        port = 443 if parts.port is None else parts.port
    except ValueError:
        raise Refusal(400, "hub.callback is not a valid URL (bad host or port)") from None
    if not 1 <= port <= 65535:  # urlsplit takes 0, which would be dialled on 443
        raise Refusal(400, "hub.callback port must be 1 to 65535")
    scheme = parts.scheme.lower()
    if scheme == "http":
        raise Refusal(400, "hub.callback must be an https URL; plain http callbacks are refused")
    if scheme != "https":
        raise Refusal(400, "hub.callback must be an absolute https URL")
    if "#" in url:
        raise Refusal(400, "hub.callback must not contain a fragment")
    if "@" in parts.netloc:
        raise Refusal(400, "hub.callback must not contain user credentials")
    host = _callback_host(parts.hostname or "", parts.netloc)
    target = url[url.index("//") + 2 + len(parts.netloc) :]
    # An empty path is "/" on the request line (RFC 9112 3.2.1): `https://host` and `https://host?a=b`.
    return Callback(url, host, port, target if target.startswith("/") else "/" + target)


def _callback_host(hostname: str, netloc: str) -> str:
    if not hostname:
        raise Refusal(400, "hub.callback has no host")
    if "[" in netloc:
        with contextlib.suppress(ValueError):
            if "%" not in hostname:  # a zone id names a local interface: meaningless to anyone else
                ip = ipaddress.IPv6Address(hostname)
                # ::ffff:a.b.c.d is the IPv4 host a.b.c.d: counted (--hub-max-per-host) and vetted as it
                return str(ip.ipv4_mapped or ip)
        raise Refusal(400, "hub.callback has an invalid IPv6 address (zone ids are not allowed)")
    if (address := literal_address(hostname)) is not None:
        return str(address)
    if not _DNS_NAME.fullmatch(hostname):
        raise Refusal(
            400, "hub.callback host is not a valid DNS name (use the xn-- form for international names)"
        )
    return hostname.rstrip(".")


def with_query(url: str, params: Mapping[str, str]) -> str:
    """The URL with `params` appended after its own query string (WebSub 5.1.1)."""
    separator = "" if url.endswith(("?", "&")) else "&" if "?" in url else "?"
    return url + separator + urlencode(params)


# --------------------------------------------------------------------------- addresses


_SPECIAL_NETWORKS = [
    (name, ipaddress.ip_network(net))
    for name, net in (
        ("shared (carrier-grade NAT)", "100.64.0.0/10"),
        ("documentation", "192.0.2.0/24"),
        ("documentation", "198.51.100.0/24"),
        ("documentation", "203.0.113.0/24"),
        ("documentation", "2001:db8::/32"),
        ("benchmarking", "198.18.0.0/15"),
        ("NAT64 local-use", "64:ff9b:1::/48"),
        ("discard-only", "100::/64"),
    )
]
_ADDRESS_FLAGS = ("loopback", "unspecified", "link_local", "multicast", "site_local", "private", "reserved")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, translated, NAT64, 6to4, Teredo)."""
    value = int(ip)
    if value >> 32 == 0 and value > 1:  # IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks)
        return ipaddress.IPv4Address(value)
    if value >> 32 == 0xFFFF0000 or ip in _NAT64:  # IPv4-translated ::ffff:0:a.b.c.d, NAT64 well-known prefix
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)  # the ranges are disjoint


def address_problem(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why this address must not be contacted ("loopback",
    "private", ...), or None for a public unicast address."""
    inner = embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
    if inner is not None and (problem := address_problem(inner)):
        return f"embeds {inner}: {problem}"
    for name, network in _SPECIAL_NETWORKS:
        if ip.version == network.version and ip in network:
            return name
    for flag in _ADDRESS_FLAGS:  # ipaddress's is_<flag>; the reason says link-local, site-local
        if getattr(ip, "is_" + flag, False):
            return flag.replace("_", "-")
    return None if ip.is_global else "non-global"


def system_resolver(host: str, port: int) -> Sequence[AddrInfo]:
    """socket.getaddrinfo for TCP, looked up at call time (tests replace it)."""
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


LOOKUP_TIMEOUT = 5.0  # seconds a callback host's DNS lookup may take
_LOOKUPS_AT_ONCE = threading.BoundedSemaphore(16)


def resolve_within(resolve: Resolver, host: str, port: int, timeout: float) -> Sequence[AddrInfo]:
    """resolve(host, port), or TimeoutError after `timeout` seconds (why a thread: docs/internals.md)."""
    if not _LOOKUPS_AT_ONCE.acquire(timeout=max(0.0, timeout)):
        raise TimeoutError("too many DNS lookups in progress")
    answer: futures.Future[Sequence[AddrInfo]] = futures.Future()

    def lookup() -> None:
        try:
            answer.set_result(resolve(host, port))
        except BaseException as exc:  # handed to the caller
            answer.set_exception(exc)
        finally:
            _LOOKUPS_AT_ONCE.release()

    threading.Thread(target=lookup, name="hub-dns", daemon=True).start()
    if not futures.wait([answer], max(0.0, timeout)).done:
        raise TimeoutError(f"no answer within {timeout:g} s")
    return answer.result()


def vet_addresses(
    host: str,
    port: int,
    allow_private: bool,
    resolve: Resolver = system_resolver,
    timeout: float | None = None,
) -> list[AddrInfo]:
    """Resolve `host` once (within `timeout`) and check every address: what to connect to. Raises Refused."""
    literal = literal_address(host)
    if literal is not None:  # AI_NUMERICHOST: getaddrinfo only converts the address, no DNS
        infos = socket.getaddrinfo(str(literal), port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    else:
        try:
            found = resolve_within(resolve, host, port, LOOKUP_TIMEOUT if timeout is None else timeout)
            infos = [info for info in found if info[0] in (socket.AF_INET, socket.AF_INET6)]
        except TimeoutError as exc:
            raise Refused(f"callback host {host} does not resolve ({exc})") from None
        except (OSError, UnicodeError):
            raise Refused(f"callback host {host} does not resolve") from None
        if not infos:
            raise Refused(f"callback host {host} has no address")
    if not allow_private:
        for info in infos:
            ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            problem = address_problem(ip)
            if problem:
                raise Refused(
                    f"callback host {host} is or resolves to {ip} ({problem}); "
                    "only public addresses are allowed"
                )
    return infos


# --------------------------------------------------------------------------- outbound HTTPS


@dataclass(frozen=True)
class Reply:
    """What a callback answered: a status and the first bytes of the body, or why there was no answer."""

    status: int | None  # None: no HTTP answer (refused address, network, TLS or timeout error)
    body: bytes = b""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def describe(self) -> str:
        return f"HTTP {self.status}" if self.status is not None else self.error


def _connect_any(addresses: Sequence[AddrInfo], timeout: float, deadline: float) -> socket.socket:
    """A TCP connection to the first vetted address that answers (no second DNS lookup), before `deadline`."""
    error: OSError = OSError("no address to connect to")
    for family, socktype, proto, _, sockaddr in addresses:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no address answered before the request's deadline")
        sock = socket.socket(family, socktype, proto)
        try:
            sock.settimeout(min(timeout, left))
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error


class Outbound:
    """Requests to callbacks: vetted addresses, verified TLS, no redirects, bounded time and size."""

    connect_timeout = 5.0
    read_timeout = 10.0
    total_timeout = 30.0  # a callback trickling bytes is cut off after this

    def __init__(self, ca_file: str, allow_private: bool, resolve: Resolver = system_resolver):
        # Without a CA file, OpenSSL's defaults (and SSL_CERT_FILE) apply.
        self._context = ssl.create_default_context(cafile=ca_file or None)
        self._allow_private = allow_private
        self._resolve = resolve
        self._inflight: dict[socket.socket, float] = {}  # a duplicate of each request's socket: its deadline
        self._lock = threading.Lock()
        self._closed = threading.Event()
        threading.Thread(target=self._reap_loop, name="hub-reaper", daemon=True).start()

    def request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, limit: int
    ) -> Reply:
        """One request; reads at most `limit` bytes of the answer. Never raises for network trouble.

        TCP goes to the addresses vetted beforehand, TLS and Host use the URL's host name:
        DNS rebinding between the check and the connection gains nothing.
        """
        deadline = time.monotonic() + self.total_timeout  # lookup, connection and answer together
        conn = watch = None
        try:
            callback = parse_callback(url)  # no MAX_URL here: the hub's parameters are appended
            addresses = vet_addresses(
                callback.host,
                callback.port,
                self._allow_private,
                self._resolve,
                min(LOOKUP_TIMEOUT, deadline - time.monotonic()),
            )
            conn = http.client.HTTPSConnection(callback.host, callback.port, context=self._context)
            conn.sock = _connect_any(addresses, self.connect_timeout, deadline)
            watch = (
                conn.sock.dup()
            )  # shutdown() on a duplicate ends the connection even after ssl takes it over
            with self._lock:
                self._inflight[watch] = deadline
            conn.sock.settimeout(self.read_timeout)
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.sock = self._context.wrap_socket(conn.sock, server_hostname=callback.host)
            conn.request(
                method,
                callback.target,
                body=body,
                headers={"User-Agent": USER_AGENT, "Connection": "close", **headers},
            )
            response = conn.getresponse()
            return Reply(response.status, response.read(limit))
        except (Refusal, Refused) as exc:
            return Reply(None, error=f"refused: {exc}")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            return Reply(None, error=f"{type(exc).__name__}: {exc}"[:200])
        finally:
            if conn is not None:
                conn.close()
            if watch is not None:
                with self._lock:
                    del self._inflight[watch]
                watch.close()

    def abort_all(self) -> None:
        """Cut every request in flight (used when stopping past the grace period)."""
        self._reap(float("inf"))

    def close(self) -> None:
        self._closed.set()

    def _reap_loop(self) -> None:
        while not self._closed.wait(0.5):
            self._reap(time.monotonic())

    def _reap(self, now: float) -> None:
        with self._lock:
            late = [sock for sock, deadline in self._inflight.items() if deadline <= now]
        for sock in late:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


# --------------------------------------------------------------------------- subscription requests


def parse_subscription(
    pairs: Iterable[tuple[str, str]], topics: Mapping[str, str], leases: tuple[int, int, int], now: float
) -> tuple[Callback, Intent]:
    """Validate a form: its callback, parsed, and the intent
    to store (the store gives its id). Raises Refusal.

    `topics` maps each normalised topic URL to its path; `leases` are (minimum, default, maximum).
    """
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in HUB_FIELDS:
            if name in fields:
                raise Refusal(400, f"{name} is given more than once")
            fields[name] = value
    for name in ("hub.callback", "hub.mode", "hub.topic"):
        if not fields.get(name):
            raise Refusal(400, f"{name} is required")
    mode = fields["hub.mode"]
    if mode not in ("subscribe", "unsubscribe"):
        raise Refusal(400, "hub.mode must be subscribe or unsubscribe")
    topic_url = fields["hub.topic"]
    topic = topics.get(normalise_url(topic_url) or "") if len(topic_url) <= MAX_URL else None
    if topic is None:
        raise Refusal(400, "hub.topic is not a topic of this hub; topics: " + ", ".join(sorted(topics)))
    if len(fields["hub.callback"]) > MAX_URL:
        raise Refusal(400, f"hub.callback is longer than {MAX_URL} characters")
    callback = parse_callback(fields["hub.callback"])
    lease, secret = 0, None  # lease and secret "MUST be ignored" on unsubscribe
    if mode == "subscribe":
        lease, secret = _lease(fields.get("hub.lease_seconds"), leases), _secret(fields.get("hub.secret"))
    return callback, Intent(0, callback.url, topic, topic_url, callback.host, mode, lease, secret, now)


def _lease(raw: str | None, bounds: tuple[int, int, int]) -> int:
    """The lease granted: the one asked for (any positive
    whole number, however many digits) within the bounds."""
    minimum, asked, maximum = bounds  # none asked for: the default
    if raw:
        digits = raw.lstrip("0")
        if not raw.isascii() or not raw.isdigit() or not digits:
            raise Refusal(400, "hub.lease_seconds must be a positive whole number of seconds")
        asked = int(digits[:19])  # a longer number is beyond every lease bound all the same: --hub-lease-max
    return max(minimum, min(maximum, asked))


def _secret(raw: str | None) -> str | None:
    if not raw:
        return None  # an empty secret would sign with an empty key: treated as no secret
    if len(raw.encode("utf-8")) > MAX_SECRET_BYTES:
        raise Refusal(400, f"hub.secret must be less than 200 bytes (got {len(raw.encode('utf-8'))})")
    return raw


def read_form(environ: dict, max_body: int) -> list[tuple[str, str]]:
    """The decoded fields of a UTF-8 form body; raises Refusal (415, 413, 400)."""
    mimetype, options = parse_options_header(environ.get("CONTENT_TYPE", ""))
    if mimetype.lower() != FORM:
        raise Refusal(415, f"send the request as {FORM}, not {mimetype[:80] or 'without a Content-Type'}")
    if not is_utf8_charset(options):
        raise Refusal(415, "the form must be encoded in UTF-8")
    try:
        body = read_body(environ, max_body)
    except BodyTooLarge:
        raise Refusal(413, f"the request body is larger than {max_body} bytes") from None
    except BodyCut:
        raise Refusal(400, "the request body ended before Content-Length bytes") from None
    try:
        # Bytes that are not UTF-8, raw or percent-encoded, are an unsupported encoding of the form: 415.
        return parse_qsl(
            body.decode("utf-8"), keep_blank_values=True, errors="strict", max_num_fields=MAX_FIELDS
        )
    except UnicodeDecodeError:
        raise Refusal(415, "the form must be encoded in UTF-8 (raw or percent-encoded)") from None
    except ValueError:
        raise Refusal(400, f"the form has more than {MAX_FIELDS} fields") from None


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

    `work` returns when it wants to run again for that key (a clock time) or None.
    A key poked while it runs is run again right after. Times come from `clock`;
    after moving a test clock, call `wake()`.
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
        """Open the store (else the keeper thread retries),
        start the workers, bring every subscriber up to date."""
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
        """The keeper thread: every --hub-state-check seconds,
        check the state directory or retry the store."""
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
        baseline = self._etags()[
            intent.topic
        ]  # before asking: a change during verification is then delivered
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

    `clock`, `outbound` (anything with Outbound's three methods) and `resolve`
    (getaddrinfo's shape) are for tests.
    """
    hub = Hub(store, config, trusted_proxies, clock=clock, outbound=outbound, resolve=resolve)
    store.subscribe(hub.on_reload)
    hub.start()
    return hub
