"""The hub's outbound HTTPS client: callback URLs (parsing, normalising), vetting their addresses against
SSRF (docs/security.md), and bounded requests to them with verified TLS and no redirects."""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import re
import socket
import ssl
import threading
import time
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urlencode, urlsplit

from ..web.request_rules import origin

READ_LIMIT = 1024  # bytes read of any callback answer (beyond the challenge)
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

    Besides the standard forms this covers the legacy IPv4 spellings inet_aton accepts (2130706433,
    0x7f000001, 0177.0.0.1, 127.1), which getaddrinfo turns into addresses without any DNS query.
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
    """Why this address must not be contacted ("loopback", "private", ...); None for a public unicast one."""
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
            # shutdown() on a duplicate ends the connection even after ssl takes it over.
            watch = conn.sock.dup()
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
