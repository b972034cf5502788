"""Precomputed representations: the gzip coding and the ETag of a body, made at once or later."""

from __future__ import annotations

import gzip
import hashlib
import random

import pytest

from reviewsd_app.web import payloads
from reviewsd_app.web.payloads import (
    GZIP_MIN_BYTES,
    JSON,
    LateGzip,
    Variant,
    accepts_gzip,
    answer,
    make_payload,
)
from reviewsd_app.web.responses import status_line

# Around every size where the coding changes: none below GZIP_MIN_BYTES, level 9, then level 6.
SIZES = [0, 1, GZIP_MIN_BYTES - 1, GZIP_MIN_BYTES, 5000, (64 << 10) - 1, 64 << 10, 300_000]


def body_of(size: int, seed: int) -> bytes:
    """JSON-like text with some noise, so that the levels matter."""
    rng = random.Random(seed)
    words = [b'{"id":"01J', b'"rating":5', b"Dr. Maya Patel", b"\xf0\x9f\x98\x80", b"},{", b" wait ", b"\\n"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) if rng.random() < 0.8 else rng.randbytes(rng.randint(1, 9))
    return bytes(out[:size])


@pytest.mark.parametrize("size", SIZES)
def test_a_payload_carries_both_codings_with_their_own_tags(size: int) -> None:
    body = body_of(size, 1)
    payload = make_payload(body, JSON)
    tag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'  # strong: the body's hash
    assert payload.identity.body == body and payload.identity.etag == tag
    if size < GZIP_MIN_BYTES:
        assert payload.gzipped is None
        return
    assert isinstance(payload.gzipped, Variant) and payload.gzipped.etag == tag[:-1] + '-gzip"'
    assert gzip.decompress(payload.gzipped.body) == body
    assert payload.gzipped.body == gzip.compress(body, compresslevel=9 if size < 64 << 10 else 6, mtime=0)


REAL_GZIP_BODY = payloads.gzip_body


def test_a_late_gzip_serves_identity_until_it_is_made_then_the_same_as_one_made_at_once() -> None:
    body = body_of(5000, 7)
    late, at_once = make_payload(body, JSON, gzip_later=True), make_payload(body, JSON)
    assert isinstance(late.gzipped, LateGzip)
    asks = [
        {"HTTP_ACCEPT_ENCODING": "gzip"},
        {"HTTP_ACCEPT_ENCODING": "identity"},
        {"HTTP_ACCEPT_ENCODING": "gzip", "HTTP_IF_NONE_MATCH": at_once.gzipped.etag},
    ]
    for ask in asks:
        assert answer(ask, late) == answer({}, late)  # identity, 200, whatever is asked
    late.gzipped.compress()
    for ask in asks:
        assert answer(ask, late) == answer(ask, at_once)
    late.gzipped.compress()  # a second call changes nothing
    assert answer(asks[0], late) == answer(asks[0], at_once)


def test_a_small_body_has_no_late_gzip() -> None:
    assert make_payload(b"[]", JSON, gzip_later=True).gzipped is None


def test_status_lines_carry_rfc_9110_reason_phrases() -> None:
    assert [status_line(code) for code in (202, 304, 404, 413, 414, 431)] == [
        "202 Accepted",
        "304 Not Modified",
        "404 Not Found",
        "413 Content Too Large",
        "414 URI Too Long",
        "431 Request Header Fields Too Large",
    ]


@pytest.mark.parametrize(
    ("accept_encoding", "gzip_ok"),
    [
        ("gzip", True),
        ("x-gzip", True),
        ("GZIP", True),
        ("*", True),
        ("br, gzip;q=0.5", True),
        ("deflate, *", True),
        ("gzip;q=0, x-gzip", True),  # contradictory: the alias it lists as acceptable wins
        ("", False),
        ("identity", False),
        ("br", False),
        ("gzip;q=0", False),
        ("gzip;q=0, *", False),
        ("*, x-gzip;q=0", False),
        ("*;q=0", False),
        ("identity, *;q=0", False),
    ],
)
def test_gzip_is_acceptable_as_rfc_9110_says(accept_encoding: str, gzip_ok: bool) -> None:
    # An explicit gzip or x-gzip entry decides; "*" stands only for codings not listed.
    assert accepts_gzip(accept_encoding) is gzip_ok
