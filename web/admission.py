"""Fair CPU: requests priced by their expected cost, and at most a few expensive ones at once.

A substring search over 100,000 reviews holds the GIL 120-190 ms (issue 39): five clients asking for it took
the feed from about 7,000 req/s to 26. So an expensive request runs only when fewer than `total` run in all
and fewer than `per_client` for its client; otherwise it waits up to `wait` seconds for a turn, then is
answered 503 with Retry-After. Cheap requests never wait here. One at a time by default: under the GIL two
searches at once finish no sooner than one after the other, and each one running takes a share of the GIL
from the thread answering everyone else (bench/attacks.py stall-cpu: the feed kept 39% of its rate with 1,
19-32% with 2, for the same number of searches answered).
"""

from __future__ import annotations

import collections
import threading
from typing import Mapping, Sequence

# A substring query costs about a pass over every review's text, then a Python step per review that holds
# it: below this many reviews that is under a few milliseconds, cheap enough to run unmetered.
EXPENSIVE_FROM_REVIEWS = 5_000


def is_expensive(args: Mapping[str, Sequence[str]], reviews: int) -> bool:
    """Whether a search (the API's, or the /reviews page's) is priced expensive: a text query over many
    reviews. Every other filter walks an index (search.find_reviews): its cost is its matches', a page's."""
    return reviews >= EXPENSIVE_FROM_REVIEWS and any(value for value in args.get("query", ()))


class CostGate:
    """How many expensive requests run now, in all and by client; enter() waits briefly for a turn."""

    def __init__(self, total: int = 1, per_client: int = 1, wait: float = 0.25) -> None:
        self.total, self.per_client, self.wait = total, per_client, wait
        self._running = 0
        self._by_client: collections.Counter[str] = collections.Counter()
        self._turn = threading.Condition()

    def _free(self, client: str) -> bool:
        return self._running < self.total and self._by_client[client] < self.per_client

    def enter(self, client: str) -> bool:
        """Take a turn for `client` (True), or False if none came within `wait` seconds."""
        with self._turn:
            if not self._turn.wait_for(lambda: self._free(client), self.wait):
                return False
            self._running += 1
            self._by_client[client] += 1
            return True

    def leave(self, client: str) -> None:
        with self._turn:
            self._running -= 1
            self._by_client[client] -= 1
            if not self._by_client[client]:
                del self._by_client[client]
            self._turn.notify_all()
