"""Precomputed representations: the gzip coding (in blocks, on threads) and the ETag of a body."""

from __future__ import annotations

import gzip
import random
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import payloads
from payloads import GZIP_BLOCK, GZIP_MIN_BYTES, Precomputed, gzip_body, gzip_level, strong_etag

# Around every size where the coding changes: none below GZIP_MIN_BYTES, level 9, level 6, then blocks.
SIZES = [0, 1, GZIP_MIN_BYTES - 1, GZIP_MIN_BYTES, 5000, (64 << 10) - 1, 64 << 10, 300_000]


def body_of(size: int, seed: int) -> bytes:
    """JSON-like text with some noise, so that the levels and the dictionaries matter."""
    rng = random.Random(seed)
    words = [b'{"id":"01J', b'"rating":5', b"Dr. Maya Patel", b"\xf0\x9f\x98\x80", b"},{", b" wait ", b"\\n"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) if rng.random() < 0.8 else rng.randbytes(rng.randint(1, 9))
    return bytes(out[:size])


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> int:
    """Blocks of 40,000 bytes (the window is 32 KiB), so that small bodies have many."""
    monkeypatch.setattr(payloads, "GZIP_BLOCK", 40_000)
    return 40_000


@pytest.mark.parametrize("size", SIZES)
def test_a_body_of_one_block_is_exactly_zlibs_gzip(size: int) -> None:
    body = body_of(size, 1)
    coded = gzip_body(body)
    if size < GZIP_MIN_BYTES:
        assert coded is None
        return
    plain = gzip.compress(body, compresslevel=gzip_level(size), mtime=0)
    assert coded[:9] == plain[:9] and coded[10:] == plain[10:]  # all but the OS byte (255, "unknown", here)
    assert gzip.decompress(coded) == body


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # the fixture is constant
@given(size=st.integers(GZIP_MIN_BYTES, 400_000), seed=st.integers(0, 3), threads=st.sampled_from([None, 1, 3]))
@example(size=80_000, seed=0, threads=3)  # exactly two blocks
@example(size=80_001, seed=0, threads=None)  # a last block of one byte
def test_blocks_make_one_gzip_member_whatever_runs_them(small_blocks: int, size: int, seed: int,
                                                        threads: int | None) -> None:
    body = body_of(size, seed)
    if threads is None:
        coded = gzip_body(body)
    else:
        with ThreadPoolExecutor(threads) as pool:
            coded = gzip_body(body, pool)
    assert coded == gzip_body(body)  # the bytes depend on the body only
    inflate = zlib.decompressobj(31)
    assert inflate.decompress(coded) == body and inflate.eof and not inflate.unused_data  # one member, whole
    blocks = -(-size // small_blocks)
    assert len(coded) <= len(gzip.compress(body, compresslevel=6, mtime=0)) + 48 * blocks  # the dictionaries work


def test_a_large_body_compresses_about_as_well_as_in_one_piece() -> None:
    body = body_of(3 * GZIP_BLOCK + 1234, 5)
    with ThreadPoolExecutor(2) as pool:
        coded = gzip_body(body, pool)
    assert gzip.decompress(coded) == body
    assert len(coded) <= len(gzip.compress(body, compresslevel=6, mtime=0)) * 1.001


@pytest.mark.parametrize("size", SIZES)
def test_precomputed_gives_the_tag_and_the_coding(size: int) -> None:
    body = body_of(size, 2)
    assert Precomputed(body).result() == (strong_etag(body), gzip_body(body))


def test_when_the_thread_fails_the_result_is_computed_inline() -> None:
    body = body_of(5000, 3)
    broken = Precomputed.__new__(Precomputed)
    broken._body, broken._result, broken._thread = body, None, None  # as after a thread that raised
    assert broken.result() == (strong_etag(body), gzip_body(body))
    assert broken.result() == (strong_etag(body), gzip_body(body))  # kept, and the body let go
    assert broken._body is None


def test_a_finished_precomputed_gives_its_result() -> None:
    assert Precomputed.finished('"tag"', b"gz").result() == ('"tag"', b"gz")
    assert Precomputed.finished('"tag"', None).result() == ('"tag"', None)
