"""Precomputed representations: the gzip coding (in blocks, on threads) and the ETag of a body."""

from __future__ import annotations

import gzip
import random
import threading
import zlib
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import payloads
from payloads import (GZIP_BLOCK, GZIP_MIN_BYTES, JSON, PendingVariant, Precomputed, Variant, answer, gzip_body, gzip_level,
                      accepts_gzip, make_payload, status_line, strong_etag)

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
    broken._body, broken._tag, broken._gzip = body, Future(), Future()  # as after threads that raised
    broken._tag.set_exception(OSError("hash failed"))
    broken._gzip.set_exception(MemoryError())
    assert broken.result() == (strong_etag(body), gzip_body(body))
    assert broken.result() == (strong_etag(body), gzip_body(body))  # kept, and the body let go
    assert broken._body is None


def test_a_finished_precomputed_gives_its_result() -> None:
    assert Precomputed.finished('"tag"', b"gz").result() == ('"tag"', b"gz")
    assert Precomputed.finished('"tag"', None).result() == ('"tag"', None)


class GatedCompression:
    """Precomputed's compression held until `release` is set (inline gzip_body calls pass through)."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.held_too_long = False

    def __call__(self, body: bytes, pool: ThreadPoolExecutor | None = None) -> bytes | None:
        if pool is not None:
            self.started.set()
            self.held_too_long |= not self.release.wait(timeout=30)
        return REAL_GZIP_BODY(body, pool)


REAL_GZIP_BODY = payloads.gzip_body


def test_a_pending_gzip_variant_answers_304_at_once_and_then_the_same_as_a_finished_one(monkeypatch) -> None:
    body = body_of(5000, 7)
    gate = GatedCompression()
    monkeypatch.setattr(payloads, "gzip_body", gate)
    pending = make_payload(body, JSON, precomputed=Precomputed(body), wait=False)
    assert isinstance(pending.gzipped, PendingVariant)
    gzip_tag = strong_etag(body)[:-1] + '-gzip"'
    ask = {"HTTP_ACCEPT_ENCODING": "gzip", "HTTP_IF_NONE_MATCH": gzip_tag}
    status, headers, _ = answer(ask, pending)  # the compression is still held
    assert status == "304 Not Modified" and ("ETag", gzip_tag) in headers and not gate.held_too_long
    assert answer({"HTTP_ACCEPT_ENCODING": "identity"}, pending)[2] == body
    gate.release.set()
    finished = make_payload(body, JSON, precomputed=Precomputed(body))
    assert isinstance(finished.gzipped, Variant)
    for ask in ({"HTTP_ACCEPT_ENCODING": "gzip"}, ask):
        assert answer(ask, pending) == answer(ask, finished)
    assert gzip.decompress(answer({"HTTP_ACCEPT_ENCODING": "gzip"}, pending)[2]) == body
    assert not gate.held_too_long


def test_waiting_gives_a_finished_variant_and_small_bodies_have_none(monkeypatch) -> None:
    body = body_of(5000, 8)
    assert isinstance(make_payload(body, JSON, precomputed=Precomputed(body), wait=True).gzipped, Variant)
    tiny = b"[]"
    assert make_payload(tiny, JSON, precomputed=Precomputed(tiny), wait=False).gzipped is None


def test_status_lines_carry_rfc_9110_reason_phrases() -> None:
    assert [status_line(code) for code in (202, 304, 404, 413, 414, 431)] == [
        "202 Accepted", "304 Not Modified", "404 Not Found", "413 Content Too Large", "414 URI Too Long",
        "431 Request Header Fields Too Large"]


@pytest.mark.parametrize(("accept_encoding", "gzip_ok"), [
    ("gzip", True), ("x-gzip", True), ("GZIP", True), ("*", True), ("br, gzip;q=0.5", True), ("deflate, *", True),
    ("gzip;q=0, x-gzip", True),  # contradictory: the alias it lists as acceptable wins
    ("", False), ("identity", False), ("br", False), ("gzip;q=0", False), ("gzip;q=0, *", False),
    ("*, x-gzip;q=0", False), ("*;q=0", False), ("identity, *;q=0", False),
])
def test_gzip_is_acceptable_as_rfc_9110_says(accept_encoding: str, gzip_ok: bool) -> None:
    # An explicit gzip or x-gzip entry decides; "*" stands only for codings not listed.
    assert accepts_gzip(accept_encoding) is gzip_ok
