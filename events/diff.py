"""What changed between the reviews last seen and the current ones (pure functions).

A review is remembered by a digest of its JSON as served; only the reviews whose digest differs are
parsed again, to say which of the fields an owner cares about changed.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, NamedTuple, Sequence

# A change to one of these is a review.updated; any other (author's display name, avatar, verified) is
# remembered quietly.
WATCHED_FIELDS = ("rating", "text", "owner_reply")


def digest(review_json: bytes) -> bytes:
    return hashlib.blake2b(review_json, digest_size=16).digest()


class Changes(NamedTuple):
    """Review ids by what happened to them; created and updated oldest first, as they are announced."""

    created: list[str]
    updated: list[str]
    deleted: list[str]


def compare(seen: Mapping[str, bytes], current: Sequence[tuple[str, bytes]]) -> Changes:
    """`seen` maps id to digest; `current` is (id, digest) newest first, as the dataset holds them."""
    created, updated = [], []
    present = set()
    for review_id, review_digest in reversed(current):
        present.add(review_id)
        before = seen.get(review_id)
        if before is None:
            created.append(review_id)
        elif before != review_digest:
            updated.append(review_id)
    deleted = [review_id for review_id in seen if review_id not in present]
    return Changes(created, updated, deleted)


def changed_fields(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The watched fields whose value differs, in WATCHED_FIELDS order."""
    return [name for name in WATCHED_FIELDS if old.get(name) != new.get(name)]
