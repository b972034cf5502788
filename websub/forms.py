"""The hub's subscription requests: reading the form body and validating its fields (W3C WebSub 5.1)."""

from __future__ import annotations

from typing import Iterable, Mapping
from urllib.parse import parse_qsl

from werkzeug.http import parse_options_header

from ..web.request_rules import BodyCut, BodyTooLarge, is_utf8_charset, read_body
from .client import Callback, Refusal, normalise_url, parse_callback
from .store import Intent

FORM = "application/x-www-form-urlencoded"
HUB_FIELDS = ("hub.callback", "hub.mode", "hub.topic", "hub.lease_seconds", "hub.secret")
MAX_FIELDS = 100  # form fields in one request
MAX_URL = 2048  # characters in hub.callback / hub.topic
MAX_SECRET_BYTES = 199  # "MUST be less than 200 bytes"


def parse_subscription(
    pairs: Iterable[tuple[str, str]], topics: Mapping[str, str], leases: tuple[int, int, int], now: float
) -> tuple[Callback, Intent]:
    """Validate a form: its callback, parsed, and the intent to store (the store gives its id); Refusal if
    the form is refused.

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
    """The lease granted: the one asked for (any positive whole number, however many digits), brought
    within the bounds."""
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
