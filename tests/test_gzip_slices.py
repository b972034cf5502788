"""web/gzip_slices.py: a slice's gzip coding, joined from a shared deflate stream, against gzip itself."""

from __future__ import annotations

import gzip
from array import array

from hypothesis import example, given
from hypothesis import strategies as st

from reviewsd_app.web.gzip_slices import SEGMENT_REVIEWS, gzip_slice, segment

FRAGMENTS = st.lists(st.binary(max_size=40) | st.text(max_size=40).map(str.encode), min_size=1, max_size=60)


def joined(fragments: list[bytes]) -> tuple[bytes, array]:
    """A body as the dataset lays it out: an opening, the fragments joined by commas, a closing."""
    body, offsets = bytearray(b'{"reviews":['), array("q")
    for fragment in fragments:
        offsets.append(len(body))
        body += fragment + b","
    offsets.append(len(body))
    return bytes(body[:-1]) + b"]}", offsets


@given(FRAGMENTS, st.data(), st.integers(1, 5), st.binary(max_size=30), st.binary(max_size=30))
@example([b"a"] * 5, None, 1, b"[", b"]")
def test_the_joined_coding_decodes_to_the_slice(fragments, data, every, prefix, suffix) -> None:
    body, offsets = joined(fragments)
    stream = segment(body, offsets, every)
    if data is None:
        lo, hi = 0, len(fragments)
    else:
        lo = data.draw(st.integers(0, len(fragments)))
        hi = data.draw(st.integers(lo, len(fragments)))
    start, stop = (offsets[lo], offsets[hi] - 1) if hi > lo else (0, 0)
    made, shared, tail = gzip_slice(prefix, start, stop, suffix, stream)
    assert gzip.decompress(made + bytes(shared) + tail) == prefix + body[start:stop] + suffix


def test_a_long_slice_is_mostly_the_shared_stream() -> None:
    fragments = [b'{"text":"review %d, with words to compress"}' % i for i in range(20 * SEGMENT_REVIEWS)]
    body, offsets = joined(fragments)
    stream = segment(body, offsets)
    made, shared, tail = gzip_slice(b"[", offsets[3], offsets[-2] - 1, b"]", stream)
    assert shared.obj is stream.compressed  # a view, not a copy
    assert len(made) + len(tail) < len(shared) / 5
