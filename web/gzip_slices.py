"""The gzip coding of a slice of a shared body, mostly without compressing it per request.

A since answer is a slice of the newest-first /reviews.json body between two reviews (web/snapshot.py).
Its gzip coding is made from one deflate stream of that body, compressed once per data version with a full
flush every `SEGMENT_REVIEWS` reviews: a full flush ends the compressed bytes on a byte boundary and empties
the window, so the bytes between two flush points decode on their own (RFC 1951 blocks, as pigz joins
its pieces). An answer is then a gzip header, the few reviews before the first flush point and the answer's
own prefix compressed for this request, a view of the shared stream, the few reviews after the last flush
point and the suffix compressed likewise, and the trailer (CRC-32 of the whole, 6 GB/s in zlib, and the
length). Compressing per request instead would cost ~0.1 s of CPU per answer at 10,000 reviews and 1 s at
100,000 (docs/performance.md); a slow reader holds no more of its own memory than with identity.
"""

from __future__ import annotations

import struct
import zlib
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

SEGMENT_REVIEWS = 64  # reviews between flush points: at most 2 x 64 reviews are compressed per answer
LEVEL = 6  # as web/payloads.gzip_body uses for bodies this large
# A gzip member's header (RFC 1952 2.3): deflate, no flags, mtime 0 (equal bodies, equal bytes), OS unknown.
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


@dataclass(frozen=True)
class SegmentedDeflate:
    """One raw deflate stream of body[boundaries[0]:boundaries[-1]], flushed at each boundary."""

    body: bytes
    compressed: bytes
    boundaries: array  # positions in body, increasing
    positions: array  # where the compressed bytes of boundaries[i] onwards start in `compressed`


def segment(body: bytes, review_offsets: array, every: int = SEGMENT_REVIEWS) -> SegmentedDeflate:
    """Compress the reviews of `body` (review i starts at review_offsets[i]), a full flush every `every`."""
    boundaries = array("q", review_offsets[::every])
    if boundaries[-1] != review_offsets[-1]:
        boundaries.append(review_offsets[-1])
    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    view = memoryview(body)
    out, positions = bytearray(), array("q", [0])
    for start, stop in zip(boundaries, boundaries[1:]):
        out += compressor.compress(view[start:stop])
        out += compressor.flush(zlib.Z_FULL_FLUSH)
        positions.append(len(out))
    return SegmentedDeflate(body, bytes(out), boundaries, positions)


def gzip_slice(
    prefix: bytes, start: int, stop: int, suffix: bytes, stream: SegmentedDeflate
) -> tuple[bytes, memoryview, bytes]:
    """The gzip coding of prefix + body[start:stop] + suffix, as bytes made now, a view of the shared stream
    and bytes made now."""
    body = memoryview(stream.body)
    first = bisect_left(stream.boundaries, start)  # the first flush point at or after start
    last = bisect_right(stream.boundaries, stop) - 1  # the last one at or before stop
    if first >= last:  # no whole segment inside: compress it all now (at most 2 x SEGMENT_REVIEWS reviews)
        first = last = None
    head_end = stop if first is None else stream.boundaries[first]
    head = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    made = bytearray(GZIP_HEADER)
    made += head.compress(prefix)
    made += head.compress(body[start:head_end])
    if first is None:
        shared = memoryview(b"")
        tail_start = stop
    else:
        made += head.flush(zlib.Z_FULL_FLUSH)  # byte-aligned and not final: the shared blocks follow
        shared = memoryview(stream.compressed)[stream.positions[first] : stream.positions[last]]
        tail_start = stream.boundaries[last]
        head = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)  # a fresh window after a full flush
    tail = bytearray(head.compress(body[tail_start:stop]))
    tail += head.compress(suffix)
    tail += head.flush(zlib.Z_FINISH)
    crc = zlib.crc32(suffix, zlib.crc32(body[start:stop], zlib.crc32(prefix)))
    size = len(prefix) + (stop - start) + len(suffix)
    tail += struct.pack("<II", crc, size & 0xFFFFFFFF)
    return bytes(made), shared, bytes(tail)
