"""MCP sessions (the 2025 revisions): what the server remembers about a client between requests, and the
bounded store that keeps them by id. A 2026-07-28 request is stateless: it gets a Session of its own."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Callable

from .protocol import HEADER_DEFAULT_VERSION, MODERN_VERSION

log = logging.getLogger("reviewsd.mcp")


@dataclass
class Session:
    """What the server remembers about one client between requests."""

    protocol_version: str = HEADER_DEFAULT_VERSION
    last_used: float = 0.0
    client: str = ""  # who started it (config.client_group): its share of the sessions

    @property
    def modern(self) -> bool:
        """A 2026-07-28 request: one request, no session (mcpserver/transport.py makes a Session for it)."""
        return self.protocol_version == MODERN_VERSION


class SessionStore:
    """Sessions by id, least recently used first; thread-safe, with an injectable monotonic clock."""

    def __init__(self, max_sessions: int, idle_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.max_sessions = max(1, max_sessions)
        # One client's share: past it, its own least recently used session ends, not another client's
        # (1,000 initialize requests from one address ended every other session in 0.7 s).
        self.per_client = max(1, self.max_sessions // 10)
        self.idle_seconds = idle_seconds
        self.clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._per_client: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, session: Session) -> str:
        """Keep `session` under a new random id, making room if the store (or its client's share) is full."""
        session_id = secrets.token_urlsafe(32)  # 43 visible ASCII characters, 256 bits
        with self._lock:
            now = self.clock()
            self._drop_expired(now)
            if self._per_client[session.client] >= self.per_client:
                own = next(sid for sid, s in self._sessions.items() if s.client == session.client)
                self._evict(own, f"the client's share ({self.per_client}) reached")
            while len(self._sessions) >= self.max_sessions:
                self._evict(next(iter(self._sessions)), f"the cap ({self.max_sessions}) reached")
            session.last_used = now
            self._sessions[session_id] = session
            self._per_client[session.client] += 1
        return session_id

    def _evict(self, session_id: str, why: str) -> None:
        self._remove(session_id)
        log.info(
            "MCP session %s: ended the least recently used session %s…",
            why,
            session_id[:8],
            extra={"event": "mcp_session_evicted"},
        )

    def _remove(self, session_id: str) -> Session | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            self._per_client[session.client] -= 1
            if not self._per_client[session.client]:
                del self._per_client[session.client]
        return session

    def get(self, session_id: str) -> Session | None:
        """The live session with this id (now marked as used), or None if unknown, ended or expired."""
        with self._lock:
            now = self.clock()
            self._drop_expired(now)
            session = self._sessions.get(session_id)
            if session is not None:
                session.last_used = now
                self._sessions.move_to_end(session_id)
            return session

    def end(self, session_id: str) -> bool:
        with self._lock:
            return self._remove(session_id) is not None

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _drop_expired(self, now: float) -> None:
        # Least recently used first, so the expired ones are at the front.
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if now - oldest.last_used <= self.idle_seconds:
                return
            self._remove(next(iter(self._sessions)))
