"""The one response seam: what every answer carries, the app's and the HTTP server's own refusals alike.

The headers every response has are the rows of `surface.HEADERS` with where="every": the app adds them
where each answer leaves it (`ReviewsApp.__call__` calls `with_common_headers`, so the precomputed
payloads, the errors, the MCP endpoint and the hub are all covered), the server adds them to the refusals
it answers itself (httpserver/connection.py), and the OpenAPI document lists them for every response
(openapi.py). (Date and Server are the HTTP server's, like any WSGI server's: they are not in the table.)

The status line and the error code of a status are here too: the app and the server name a status the
same way.
"""

from __future__ import annotations

from typing import Sequence

from werkzeug.http import HTTP_STATUS_CODES

from .. import surface

EVERY_RESPONSE = surface.EVERY_RESPONSE  # read at each answer: a test may add one

Headers = list[tuple[str, str]]
# A body in parts, written one after the other without being joined (httpserver/connection.py): a since answer
# is a made prefix, a view of the shared /reviews.json body and a suffix.
Parts = tuple[bytes | memoryview, ...]
# A response body: bytes made for this request; a memoryview of a body shared by every request for it (a
# precomputed payload's, which the server does not count as this request's buffered output); or Parts.
Body = bytes | memoryview | Parts
# A plain WSGI answer: status line, headers, body (what the app's handlers return instead of a Response).
Triple = tuple[str, Headers, Body]


# RFC 9110's reason phrases where werkzeug's table (and Python 3.11's http.HTTPStatus) keeps older names;
# a werkzeug Response would also upper-case them ("202 ACCEPTED").
REASON_PHRASES = {**HTTP_STATUS_CODES, 413: "Content Too Large", 414: "URI Too Long"}


def with_common_headers(headers: Sequence[tuple[str, str]]) -> Sequence[tuple[str, str]]:
    """An answer's headers followed by every response's (the same list when there are none)."""
    if not EVERY_RESPONSE:
        return headers
    return [*headers, *EVERY_RESPONSE]


def reason_phrase(status: int) -> str:
    return REASON_PHRASES.get(status, "Unknown")


def status_line(status: int) -> str:
    """The WSGI status of a plain answer, as "202 Accepted"."""
    return f"{status} {reason_phrase(status)}"


def error_code(status: int, reason: str) -> str:
    """The `error` of an error body: the reason in snake case ("uri_too_long"), but 413's is the app's own
    ("body_too_large": the only limit a client's request body can break)."""
    return "body_too_large" if status == 413 else reason.lower().replace(" ", "_")
