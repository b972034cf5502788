"""MCP anchor for bench/compare: the official MCP Python SDK serving `search_reviews`.

    python bench/compare_support/sdk_mcp_server.py --data-dir DIR [--port 0]

An `mcp.server.mcpserver.MCPServer` with one tool, `search_reviews`, whose
result is the same document reviewsd's tool returns (the search runs through
reviewsd's own `search.run_search` on the same data, so only the MCP stack
differs). It is written the way the SDK's documentation shows: a typed
function, structured output from a TypedDict, streamable HTTP with
`json_response=True, stateless_http=True`, hosted by uvicorn as
`MCPServer.run_streamable_http_async` does. The one change from that method:
uvicorn's access log is off (reviewsd does log every request), which only
makes this anchor faster.

Prints "listening on http://127.0.0.1:PORT" on stderr once it accepts.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parents[2]

import anyio  # noqa: E402
import uvicorn  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

from reviewsd_app.reviews import dataset as ds  # noqa: E402
from reviewsd_app.reviews import search  # noqa: E402


class SearchResult(TypedDict):
    matched: int
    returned: int
    reviews: list[dict[str, Any]]
    next_cursor: str | None


def build_server(data: ds.Dataset) -> MCPServer:
    server = MCPServer("reviewsd-sdk-anchor", log_level="WARNING")

    @server.tool(name="search_reviews", title="Search reviews")
    def search_reviews(
        rating: int | None = None,
        min_rating: float | None = None,
        since: str | None = None,
        until: str | None = None,
        query: str | None = None,
        mentions_technician: str | None = None,
        mentions_service: str | None = None,
        limit: int = 20,
    ) -> SearchResult:
        """Finds reviews matching every filter given (AND), newest first."""
        given = {
            "rating": rating,
            "min_rating": min_rating,
            "since": since,
            "until": until,
            "query": query,
            "mentions_technician": mentions_technician,
            "mentions_service": mentions_service,
            "limit": limit,
        }
        page = search.run_search(data, {k: v for k, v in given.items() if v is not None})
        return search.search_result(data, page)  # type: ignore[return-value]

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    app = build_server(ds.load_dataset(args.data_dir)).streamable_http_app(
        json_response=True, stateless_http=True
    )
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # socket.create_server's proto is 0; without it every response waits ~40 ms on delayed ACKs.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(1024)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    server = uvicorn.Server(config)

    async def serve() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            while not server.started:
                await anyio.sleep(0.01)
            print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)

    anyio.run(serve)


if __name__ == "__main__":
    main()
