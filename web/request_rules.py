"""Rules the app's POST endpoints (the MCP transport, the WebSub hub) apply alike to what they are sent:
the bounded body reader, the UTF-8 charset rule, and the spelling of an http(s) origin."""

from __future__ import annotations

from typing import Mapping
from urllib.parse import SplitResult

from werkzeug.wsgi import get_content_length

DEFAULT_PORTS = {"http": 80, "https": 443}


class BodyTooLarge(Exception):
    """The request body is, or says it is (Content-Length), larger than the endpoint takes: 413."""


class BodyCut(Exception):
    """The request body ended before its Content-Length (the client went away): 400."""


def read_body(environ: Mapping, max_body: int) -> bytes:
    """The request body, never reading more than `max_body` bytes of it.

    Content-Length is checked first (BodyTooLarge, nothing read), then exactly that many bytes are read
    (BodyCut if fewer come). Without a Content-Length the body is read only from a stream the server ends
    itself (`wsgi.input_terminated`, as for a chunked body), to max_body + 1 bytes; from any other stream
    it is empty, as werkzeug's get_input_stream makes it: reading could block forever.
    """
    length = get_content_length(environ)  # None when absent or invalid
    if length is not None and length > max_body:
        raise BodyTooLarge()
    stream = environ["wsgi.input"]
    if length is not None:
        body = stream.read(length) if length else b""  # never past the end: some servers' streams block there
        if len(body) < length:
            raise BodyCut()
        return body
    if not environ.get("wsgi.input_terminated"):
        return b""
    body = stream.read(max_body + 1)
    if len(body) > max_body:
        raise BodyTooLarge()
    return body


def is_utf8_charset(options: Mapping[str, str]) -> bool:
    """Whether a Content-Type's parameters (werkzeug's parse_options_header) allow UTF-8: no charset, or
    utf-8 in either spelling."""
    return options.get("charset", "utf-8").lower() in ("utf-8", "utf8")


def origin(parts: SplitResult) -> str | None:
    """`scheme://host[:port]` of a split http(s) URL, lower case, without the default port; None when it is
    not an http(s) URL with a host, or it names a user (`user@host`: never one we contact or trust).

    urlsplit has already lower-cased the scheme; `hostname` is lower-cased, an IPv6 literal bracketed again.
    ValueError for a port that is not a number or out of range.
    """
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc:
        return None
    port = parts.port
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + ("" if port in (None, DEFAULT_PORTS[parts.scheme]) else f":{port}")
