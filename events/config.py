"""The --notify file (TOML): webhooks, SMTP and email alerts, and how long deliveries are retried.

Read once at start; every mistake is one line naming the file, the entry and the key (`NotifyConfigError`).
Secrets (webhook secrets, the SMTP password) live in files of their own, readable by the service alone (mode
0600), named relative to the --notify file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..websub.client import Refusal, parse_callback

REVIEW_EVENTS = ("review.created", "review.updated", "review.deleted")
EVENT_TYPES = (*REVIEW_EVENTS, "insights.updated")
FORMATS = ("standard", "slack")
SECRET_PREFIX = "whsec_"
SECRET_BYTES = (24, 64)  # Standard Webhooks: at least 24 bytes, at most 512 bits
MAX_RETRY_DELAY = 3600.0  # seconds: the backoff doubles up to this


class NotifyConfigError(Exception):
    """The --notify file cannot be used; the message is one line that says where and why."""


@dataclass(frozen=True)
class Filters:
    """Which events a target gets: their types, and for review events the review's rating."""

    events: tuple[str, ...] = EVENT_TYPES
    min_rating: int | None = None
    max_rating: int | None = None

    @property
    def on_rating(self) -> bool:
        return self.min_rating is not None or self.max_rating is not None

    def wants(self, event_type: str, rating: int | None) -> bool:
        """Whether an event of this type, about a review of this rating (None: no review), is for us.

        A target with a rating filter gets review events only: "tell me about bad reviews" is not
        "and every re-analysis too".
        """
        if event_type not in self.events:
            return False
        if not self.on_rating:
            return True
        if rating is None:
            return False
        return (self.min_rating or 1) <= rating <= (self.max_rating or 5)


@dataclass(frozen=True)
class Target:
    """Where events go: a webhook (`url`, `format`, `secret`) or an email alert (`to`)."""

    key: str  # stable across restarts and safe to store: pending deliveries are found by it
    name: str  # for logs and `notify test`: never the URL's path or query (a Slack URL's path is its secret)
    kind: str  # "webhook" or "email"
    filters: Filters
    url: str = ""
    format: str = "standard"
    secret: bytes = b""  # the HMAC key: the decoded whsec_ value
    host: str = ""  # the webhook's host or the SMTP server: per-host fairness
    to: tuple[str, ...] = ()


@dataclass(frozen=True)
class Smtp:
    host: str
    port: int = 587
    starttls: bool = True
    username: str = ""
    password: str = ""
    sender: str = ""  # `from` in the file


@dataclass(frozen=True)
class NotifyConfig:
    path: str
    targets: tuple[Target, ...]
    smtp: Smtp | None = None
    retry_delay: float = 30.0  # seconds before the first retry; doubles after each failure
    retry_for: float = 86400.0  # seconds after the event: then a delivery still failing is given up


def load_notify(path: str | Path) -> NotifyConfig:
    """Read and check the --notify file and the secret files it names. Raises NotifyConfigError."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise NotifyConfigError(f"{path}: no such file (--notify, REVIEWSD_NOTIFY)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise NotifyConfigError(f"{path}: cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise NotifyConfigError(f"{path}: not valid TOML: {exc}") from None
    reader = _Reader(path)
    reader.keys("", doc, {"delivery", "webhooks", "smtp", "alerts"})
    delivery = reader.table("delivery", doc.get("delivery", {}))
    reader.keys("[delivery]", delivery, {"retry_delay", "retry_for"})
    retry_delay = reader.number("[delivery] retry_delay", delivery.get("retry_delay", 30.0), 0.01, 86400)
    retry_for = reader.number("[delivery] retry_for", delivery.get("retry_for", 86400.0), 0, 30 * 86400)
    targets = [reader.webhook(i, entry) for i, entry in enumerate(reader.array("webhooks", doc), 1)]
    smtp = reader.smtp(doc["smtp"]) if "smtp" in doc else None
    alerts = reader.array("alerts", doc)
    if alerts and smtp is None:
        raise NotifyConfigError(f"{path}: [[alerts]] need an [smtp] table (host, port, from)")
    targets += [reader.alert(i, entry, smtp) for i, entry in enumerate(alerts, 1)]  # type: ignore[arg-type]
    keys = [target.key for target in targets]
    if len(set(keys)) != len(keys):
        raise NotifyConfigError(f"{path}: the same webhook URL or alert address list is given twice")
    return NotifyConfig(str(path), tuple(targets), smtp, retry_delay, retry_for)


class _Reader:
    """Checks one file's values; every error names the file and where in it."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, message: str) -> NotifyConfigError:
        return NotifyConfigError(f"{self.path}: {where}: {message}")

    def keys(self, where: str, table: Mapping[str, Any], known: set[str]) -> None:
        unknown = sorted(set(table) - known)
        if unknown:
            place = where or "top level"
            raise self.fail(place, f"unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")

    def table(self, where: str, value: Any) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "must be a table")
        return value

    def array(self, name: str, doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        value = doc.get(name, [])
        if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
            raise self.fail(name, f"must be written as [[{name}]] tables")
        return value

    def text(self, where: str, value: Any, required: bool = True) -> str:
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            raise self.fail(where, "must be a non-empty string")
        return value.strip()

    def number(self, where: str, value: Any, low: float, high: float) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise self.fail(where, f"must be a number of seconds from {low:g} to {high:g}")
        return float(value)

    def filters(self, where: str, entry: Mapping[str, Any]) -> Filters:
        events = entry.get("events", list(EVENT_TYPES))
        if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
            raise self.fail(f"{where} events", "must be a non-empty list of event types")
        for event in events:
            if event not in EVENT_TYPES:
                raise self.fail(
                    f"{where} events", f"unknown event {event!r} (known: {', '.join(EVENT_TYPES)})"
                )
        ratings = {}
        for name in ("min_rating", "max_rating"):
            value = entry.get(name)
            if value is not None and (isinstance(value, bool) or value not in (1, 2, 3, 4, 5)):
                raise self.fail(f"{where} {name}", "must be a whole number from 1 to 5")
            ratings[name] = value
        low, high = ratings["min_rating"], ratings["max_rating"]
        if low is not None and high is not None and low > high:
            raise self.fail(where, f"min_rating {low} is above max_rating {high}: nothing would match")
        return Filters(tuple(dict.fromkeys(events)), low, high)

    def secret_file(self, where: str, value: Any) -> str:
        """The content of a secret file, which only its owner may read."""
        name = self.text(where, value)
        file = self.path.parent / name
        try:
            info = file.stat()
            content = file.read_text("utf-8").strip()
        except OSError as exc:
            raise self.fail(where, f"cannot read {file}: {exc.strerror or exc}") from None
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise self.fail(
                where, f"{file} is readable by others; make it the service's alone: chmod 600 {file}"
            )
        if not content:
            raise self.fail(where, f"{file} is empty")
        return content

    def webhook(self, index: int, entry: Mapping[str, Any]) -> Target:
        where = f"[[webhooks]] #{index}"
        self.keys(
            where, entry, {"name", "url", "secret_file", "events", "format", "min_rating", "max_rating"}
        )
        url = self.text(f"{where} url", entry.get("url"))
        try:
            callback = parse_callback(url)
        except Refusal as exc:
            raise self.fail(f"{where} url", str(exc).replace("hub.callback", "the URL")) from None
        kind = entry.get("format", "standard")
        if kind not in FORMATS:
            raise self.fail(f"{where} format", f"must be one of {', '.join(FORMATS)}, not {kind!r}")
        secret = b""
        if kind == "standard":
            if "secret_file" not in entry:
                raise self.fail(where, "a standard webhook needs secret_file (a whsec_... secret, mode 0600)")
            secret = decode_secret(self.secret_file(f"{where} secret_file", entry["secret_file"]))
            if secret is None:
                raise self.fail(
                    f"{where} secret_file",
                    f"must hold {SECRET_PREFIX} and the base64 of {SECRET_BYTES[0]} to {SECRET_BYTES[1]} "
                    "random bytes (docs/events.md says how to make one)",
                )
        elif "secret_file" in entry:
            raise self.fail(where, "a slack webhook is not signed: its URL is its secret; drop secret_file")
        name = self.text(f"{where} name", entry.get("name"), required=False)
        return Target(
            key="webhook " + hashlib.sha256(url.encode()).hexdigest()[:16],
            name=name or f"{kind} webhook #{index} ({callback.host})",
            kind="webhook",
            filters=self.filters(where, entry),
            url=url,
            format=kind,
            secret=secret,
            host=callback.host,
        )

    def smtp(self, value: Any) -> Smtp:
        table = self.table("[smtp]", value)
        self.keys("[smtp]", table, {"host", "port", "starttls", "username", "password_file", "from"})
        host = self.text("[smtp] host", table.get("host"))
        port = table.get("port", 587)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise self.fail("[smtp] port", "must be a port number from 1 to 65535")
        starttls = table.get("starttls", True)
        if not isinstance(starttls, bool):
            raise self.fail("[smtp] starttls", "must be true or false")
        username = self.text("[smtp] username", table.get("username"), required=False)
        password = ""
        if username:
            if "password_file" not in table:
                raise self.fail("[smtp]", "username needs password_file (mode 0600)")
            if not starttls and host not in ("localhost", "127.0.0.1", "::1"):
                raise self.fail("[smtp]", "a password is never sent unencrypted: set starttls = true")
            password = self.secret_file("[smtp] password_file", table["password_file"])
        sender = self.text("[smtp] from", table.get("from"))
        if "@" not in sender:
            raise self.fail("[smtp] from", f"{sender!r} is not an email address")
        return Smtp(host, port, starttls, username, password, sender)

    def alert(self, index: int, entry: Mapping[str, Any], smtp: Smtp) -> Target:
        where = f"[[alerts]] #{index}"
        self.keys(where, entry, {"name", "to", "events", "min_rating", "max_rating"})
        raw = entry.get("to")
        to: Sequence[Any] = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
        if not to or not all(isinstance(a, str) and "@" in a and "\n" not in a for a in to):
            raise self.fail(f"{where} to", "must be an email address or a list of them")
        addresses = tuple(address.strip() for address in to)
        name = self.text(f"{where} name", entry.get("name"), required=False)
        return Target(
            key="email " + ",".join(sorted(addresses)),
            name=name or f"email alert #{index} ({', '.join(addresses)})",
            kind="email",
            filters=self.filters(where, entry),
            host=smtp.host,
            to=addresses,
        )


def decode_secret(text: str) -> bytes | None:
    """The key of a Standard Webhooks secret (`whsec_` and base64), or None when it is not one."""
    body = text.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return key if SECRET_BYTES[0] <= len(key) <= SECRET_BYTES[1] else None
