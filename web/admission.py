"""Fair CPU: requests priced by their expected cost, expensive ones taking turns within a share of the time.

A substring search over 100,000 reviews held the GIL 120-190 ms (issue 39): five clients asking for it took
the feed from about 7,000 req/s to 26. So an expensive request runs only when fewer than `total` run in all
and fewer than `per_client` for its client, and not before the gate's pause after the last one is over;
otherwise it waits up to `wait` seconds for a turn, then is refused (Busy: a 503 with Retry-After). Cheap
requests never wait here.

One at a time by default: under the GIL two searches at once finish no sooner than one after the other, and
each one running takes a share of the GIL from the thread answering everyone else (bench/attacks.py
stall-cpu: the feed kept 39% of its rate with 1, 19-32% with 2). Back to back, one at a time still kept the
feed at 35-39%: while a search runs, the selector thread waits up to the interpreter's switch interval for
the GIL every time it comes back from select. So after each expensive request the gate pauses twice as long
as it took (`share` 1/3): expensive requests take at most a third of the time, and the feed runs unhindered
in the rest. "As long as it took" is the time it ran, not its thread's CPU time: the feed is held back for as
long as a search runs, and a search waiting for the GIL (behind the feed, or other processes on the machine)
runs longer than its CPU time says. Priced by CPU time, searches ran 40% of the time on a quiet machine (30%
in CPU time), more on a busy one, where the feed kept under 50% of its rate in 2 runs of 6 (issue 39; the
figures: docs/performance.md).

One price for every way in: GET /api/reviews/search, the /reviews page and the MCP tools that search
(SEARCH_TOOLS) ask `is_expensive` with the arguments run_search takes.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable, Mapping, TypeVar

# A text filter's cost is about a pass over every review's text (query) or over the posting lists of its
# words (q: "great adjustment" took 111 ms at 100,000 reviews): below this many reviews that is a few
# milliseconds, cheap enough to run unmetered.
EXPENSIVE_FROM_REVIEWS = 5_000
TEXT_FILTERS = ("query", "q")

# The MCP tools that run a search, and the search arguments (run_search's) of a call's arguments.
SEARCH_TOOLS: Mapping[str, Callable[[Mapping[str, Any]], Mapping[str, Any]]] = {
    "search_reviews": lambda arguments: arguments,
    "search": lambda arguments: {"q": arguments.get("query")},  # its free text is ranked (search_fetch.py)
}

T = TypeVar("T")


def is_expensive(args: Mapping[str, Any], reviews: int) -> bool:
    """Whether a search is priced expensive: a text filter (query, or q) over many reviews. `args` as
    run_search takes them (an empty value is no filter: a form's empty field). Every other filter walks an
    index (search.find_reviews): its cost is its matches', a page's."""
    return reviews >= EXPENSIVE_FROM_REVIEWS and any(args.get(name) for name in TEXT_FILTERS)


def tool_is_expensive(name: str, arguments: Any, reviews: int) -> bool:
    """Whether an MCP tools/call is priced expensive: a search tool whose search is (`is_expensive`)."""
    search_args = SEARCH_TOOLS.get(name)
    return (
        search_args is not None
        and isinstance(arguments, dict)
        and is_expensive(search_args(arguments), reviews)
    )


# The longest pause after one expensive request: the first ranked search of a data version builds its word
# index (5.8 s at 100,000 reviews, bench/ranked_search.py), which would otherwise refuse every text search for
# 12 s after it. A search itself takes tens of milliseconds: its pause is never cut.
MAX_PAUSE = 1.0


class Busy(Exception):
    """No turn came within the gate's wait: answer 503 with Retry-After (RETRY_AFTER seconds)."""


RETRY_AFTER = "1"
BUSY_MESSAGE = "too many text searches at once; try again in a second"


class CostGate:
    """How many expensive requests run now, in all and by client, and when the next may start; `run` runs one
    in a turn, waiting briefly for it."""

    def __init__(
        self,
        total: int = 1,
        per_client: int = 1,
        wait: float = 0.25,
        share: float = 1 / 3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.per_client, self.wait, self.share = total, per_client, wait, share
        self._clock = clock
        self._running = 0
        self._by_client: collections.Counter[str] = collections.Counter()
        self._next_start = 0.0  # by the clock: the pause after the last expensive request ends then
        self._turn = threading.Condition()

    def _free(self, client: str) -> bool:
        return self._running < self.total and self._by_client[client] < self.per_client

    def enter(self, client: str) -> bool:
        """Take a turn for `client` (True), or False if none came within `wait` seconds."""
        with self._turn:
            now = self._clock()
            deadline = now + self.wait
            while not (self._free(client) and now >= self._next_start):
                if now >= deadline:
                    return False
                until = min(deadline, self._next_start) if self._free(client) else deadline
                self._turn.wait(until - now)
                now = self._clock()
            self._running += 1
            self._by_client[client] += 1
            return True

    def leave(self, client: str, cost: float = 0.0) -> None:
        """End `client`'s turn, which ran `cost` seconds: the next starts no sooner than the pause that keeps
        expensive requests within `share` of the time."""
        with self._turn:
            self._running -= 1
            self._by_client[client] -= 1
            if not self._by_client[client]:
                del self._by_client[client]
            pause = min(cost * (1 - self.share) / self.share, MAX_PAUSE)
            self._next_start = max(self._next_start, self._clock() + pause)
            self._turn.notify_all()

    def run(self, client: str, work: Callable[[], T]) -> T:
        """`work()`, an expensive request's, in a turn of `client`'s (or Busy if none comes soon), priced by
        the time it ran."""
        if not self.enter(client):
            raise Busy()
        started = self._clock()
        try:
            return work()
        finally:
            self.leave(client, self._clock() - started)
