"""Precomputed representations: the gzip coding and ETag of a body fed whole or in pieces."""

from __future__ import annotations

import gzip
import logging
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import payloads
from payloads import GZIP_MIN_BYTES, Precomputed, gzip_body, gzip_level, strong_etag

# Around every size where the coding changes: none below GZIP_MIN_BYTES, level 9, then level 6.
SIZES = [0, 1, GZIP_MIN_BYTES - 1, GZIP_MIN_BYTES, 5000, (64 << 10) - 1, 64 << 10, (64 << 10) + 1, 300_000]


def body_of(size: int, seed: int) -> bytes:
    """JSON-like text with some noise, so that the levels really differ."""
    rng = random.Random(seed)
    words = [b'{"id":"01J', b'"rating":5', b"Dr. Maya Patel", b"\xf0\x9f\x98\x80", b"},{", b" wait ", b"\\n"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) if rng.random() < 0.8 else rng.randbytes(rng.randint(1, 9))
    return bytes(out[:size])


def pieces_of(body: bytes, cuts: list[int]) -> list[bytes | memoryview]:
    bounds = sorted({0, len(body), *(c % (len(body) + 1) for c in cuts)})
    return [memoryview(body)[lo:hi] if n % 2 else body[lo:hi] for n, (lo, hi) in enumerate(zip(bounds, bounds[1:]))]


def plain_gzip(body: bytes) -> bytes | None:
    return None if len(body) < GZIP_MIN_BYTES else gzip.compress(body, compresslevel=gzip_level(len(body)), mtime=0)


@settings(max_examples=60, deadline=None)
@given(size=st.sampled_from(SIZES), seed=st.integers(0, 3), cuts=st.lists(st.integers(0, 400_000), max_size=12))
@example(size=(64 << 10) + 1, seed=0, cuts=[(64 << 10) - 1, 64 << 10])  # the level is known one byte later
def test_a_body_fed_in_pieces_gets_the_coding_of_the_whole(size: int, seed: int, cuts: list[int]) -> None:
    body = body_of(size, seed)
    precomputed = Precomputed()
    for piece in pieces_of(body, cuts):
        precomputed.feed(piece)
    precomputed.close()
    assert precomputed.result() == (strong_etag(body), plain_gzip(body))
    assert gzip_body(body) == plain_gzip(body)


@pytest.mark.parametrize("size", SIZES)
def test_a_whole_body_gets_its_tag_and_coding(size: int) -> None:
    body = body_of(size, 1)
    assert Precomputed.of(body).result() == (strong_etag(body), plain_gzip(body))
    if size >= GZIP_MIN_BYTES:
        assert gzip.decompress(gzip_body(body)) == body


def test_when_the_thread_fails_the_result_is_computed_from_the_body(monkeypatch: pytest.MonkeyPatch,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    def fail(self: object, piece: bytes) -> None:
        raise MemoryError("no room")

    monkeypatch.setattr(payloads._GzipCoder, "feed", fail)
    body = body_of(5000, 2)
    with caplog.at_level(logging.WARNING, logger="reviewsd.payloads"):
        broken = Precomputed()
        for piece in pieces_of(body, [10, 20, 30]):
            broken.feed(piece)  # the thread stops at the first, and still takes the rest
        broken.close()
        with pytest.raises(RuntimeError, match="not at hand"):
            broken.result()
    assert "failed" in caplog.text
    monkeypatch.undo()
    assert broken.result(body) == (strong_etag(body), plain_gzip(body))
    assert broken._pieces.empty()  # nothing fed after the failure is held


def test_a_finished_precomputed_gives_its_result() -> None:
    assert Precomputed.finished('"tag"', b"gz").result() == ('"tag"', b"gz")
    assert Precomputed.finished('"tag"', None).result() == ('"tag"', None)
