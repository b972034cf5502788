"""Waiting for something another thread or process does, without sleeping a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.01) -> bool:
    """Poll `predicate` until it holds (then True); fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)
    return True
