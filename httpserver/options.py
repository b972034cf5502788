"""Everything the HTTP server takes, as one object (waitress's `Adjustments` is the model)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..config import Config, Network, parse_networks


@dataclass(frozen=True)
class ServerOptions:
    """The listening address, the worker pool, the deadlines, the size limits and the connection caps.

    docs/configuration.md says what each does (the options of the same names); `from_config` takes them
    from the server's Config.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    threads: int = 8
    backlog: int = 1024
    socket_timeout: float = 30.0
    keepalive_timeout: float = 15.0
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_body: int = 1 << 20
    max_connections: int = 1000
    max_connections_per_client: int = 100
    trusted_proxies: tuple[Network, ...] = ()
    send_buffer: int = 0
    output_budget: int = 0
    client_prefix_v6: int = 64
    shutdown_grace: float = 10.0  # seconds requests in flight may take to finish after SIGTERM

    @classmethod
    def from_config(cls, config: Config, **overrides: Any) -> ServerOptions:
        """The options `config` has under these names (one added to both flows through; the trusted proxies
        parsed from their text), then `overrides`."""
        names = [field.name for field in dataclasses.fields(cls)]
        given = {name: getattr(config, name) for name in names if hasattr(config, name)}
        given["trusted_proxies"] = tuple(parse_networks(config.trusted_proxies))
        return cls(**{**given, **overrides})

    def replaced(self, **changes: Any) -> ServerOptions:
        return dataclasses.replace(self, **changes) if changes else self
