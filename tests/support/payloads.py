"""Holding a payload's late compression until a test lets it go."""

from __future__ import annotations

import threading

from reviewsd_app.web import payloads

REAL_GZIP_BODY = payloads.gzip_body


class GatedCompression:
    """gzip_body held until `release` is set."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.held_too_long = False

    def __call__(self, body: bytes) -> bytes:
        self.started.set()
        self.held_too_long |= not self.release.wait(timeout=30)
        return REAL_GZIP_BODY(body)
