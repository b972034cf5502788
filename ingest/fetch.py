"""HTTP for `reviewsd sync`: one JSON request with bounded retries, and the endpoint rules.

The standard library's urllib does the HTTP (and HTTPS, with the system's certificates). A 429 waits its
Retry-After; a 5xx or a network error retries with doubling waits; both within one budget of waiting per
request, then fail. Nothing here prints a request's headers or a body, so no secret reaches a log."""

from __future__ import annotations

import email.utils
import ipaddress
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

MAX_RESPONSE_BYTES = 32 << 20  # one page of 50 to 100 reviews is well under 1 MB
USER_AGENT = "reviewsd-sync"


class FetchError(Exception):
    """A request failed for good: the message says what happened, never with a secret in it."""

    def __init__(self, message: str, status: int | None = None, error_code: str | None = None):
        super().__init__(message)
        self.status = status
        self.error_code = error_code  # OAuth's "error" (invalid_grant), when the body said one


def checked_endpoint(url: str, name: str) -> str:
    """`url` without a trailing slash when it is https, or http to a loopback address; ValueError else."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{name} {url!r} is not an http(s) URL")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise ValueError(f"{name} {url!r}: plain http only to a loopback address (127.0.0.1, ::1, localhost)")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"{name} {url!r}: no query, fragment or user name in an endpoint")
    return url.rstrip("/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def retry_after(value: str | None, now: float) -> float | None:
    """Retry-After in seconds: delta-seconds or an HTTP date (RFC 9110, 10.2.3); None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


@dataclass
class Http:
    """Requests with retries. `sleep` and `clock` are for tests; `budget` is the most waited per request."""

    budget: float = 120.0
    timeout: float = 30.0
    first_backoff: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    requests: int = 0
    waits: list[float] = field(default_factory=list)

    def json(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        what: str = "the API",
    ) -> Any:
        """The parsed JSON answer of a 2xx; FetchError for a 4xx, or when the retries ran out."""
        waited, backoff = 0.0, self.first_backoff
        while True:
            try:
                status, reply_headers, content, problem = self._once(method, url, headers, body)
            except FetchError as error:  # an answer over the size cap
                raise FetchError(f"{what}: {error}") from None
            if status is not None and 200 <= status < 300:
                try:
                    return json.loads(content)
                except (ValueError, UnicodeDecodeError):
                    raise FetchError(
                        f"{what} answered {status} with something that is not JSON", status
                    ) from None
            if status == 429:
                wait = retry_after(reply_headers.get("Retry-After"), self.clock())
                wait = backoff if wait is None else wait
                reason = "rate limited (429)"
            elif status is None or status >= 500:
                wait, reason = backoff, problem or f"server error {status}"
                backoff *= 2
            else:
                raise FetchError(
                    f"{what} answered {status}{_error_text(content)}", status, _error_code(content)
                )
            if waited + wait > self.budget:
                raise FetchError(
                    f"{what}: {reason}, still after {len(self.waits)} retries and {waited:.0f} s of waiting",
                    status,
                )
            self.waits.append(wait)
            self.sleep(wait)
            waited += wait

    def _once(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int | None, Mapping[str, str], bytes, str | None]:
        """(status, headers, body, None), or (None, {}, b"", why) for a network error."""
        self.requests += 1
        request = urllib.request.Request(
            url, data=body, method=method, headers={"User-Agent": USER_AGENT, **headers}
        )
        try:
            opener = _DIRECT if _loopback(urlsplit(url).hostname or "") else _OPENER
            with opener.open(request, timeout=self.timeout) as response:
                return response.status, response.headers, _read(response), None
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.headers, _read(error), None
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            return None, {}, b"", f"network error ({reason})"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is not followed: it would carry the Authorization header or the key elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())  # HTTPS_PROXY and the like apply
_DIRECT = urllib.request.build_opener(_NoRedirect(), urllib.request.ProxyHandler({}))  # loopback: no proxy


def _read(response: Any) -> bytes:
    content = response.read(MAX_RESPONSE_BYTES + 1)
    if len(content) > MAX_RESPONSE_BYTES:
        raise FetchError(f"an answer over {MAX_RESPONSE_BYTES:,} bytes")
    return content


def _error_code(content: bytes) -> str | None:
    """OAuth's `error` ("invalid_grant") or Google's `error.status` ("PERMISSION_DENIED"), if any."""
    try:
        doc = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    error = doc.get("error")
    if isinstance(error, str):
        return error[:60]
    if isinstance(error, dict) and isinstance(error.get("status"), str):
        return error["status"][:60]
    return None


def _error_text(content: bytes) -> str:
    code = _error_code(content)
    return f" ({code})" if code else ""
