#!/usr/bin/env python3
"""The largest MCP tool result per tool on a data directory, in characters (the bound is 50,000).

    python bench/mcp_sizes.py data /tmp/big

Asks every tool for the most it gives (the highest limits, every practitioner, service and aspect, the
longest review) through the JSON-RPC core, as tests/test_mcp_fit.py does, and prints the largest
structured result and the largest text block plus resource links.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.mcp import call  # noqa: E402
from test_mcp_fit import app_for, largest_calls, session_of  # noqa: E402


def main() -> None:
    for data_dir in sys.argv[1:]:
        with tempfile.TemporaryDirectory() as tmp:
            app = app_for(Path(data_dir), Path(tmp))
            server, dataset = app.mcp.server, app.store.current.dataset
            session = session_of(server)
            largest: dict[str, tuple[int, int]] = {}
            for name, arguments in largest_calls(dataset):
                result = call(server, session, name, arguments)["result"]
                text, *links = result["content"]
                structured = len(
                    json.dumps(result["structuredContent"], ensure_ascii=False, separators=(",", ":"))
                )
                shown = len(text["text"]) + sum(len(json.dumps(link, ensure_ascii=False)) for link in links)
                old = largest.get(name, (0, 0))
                largest[name] = (max(old[0], structured), max(old[1], shown))
            print(f"{data_dir}: {len(dataset.ids):,} reviews; largest result per tool, characters")
            print(f"  {'tool':24} {'structured':>10} {'text+links':>10}")
            for name, (structured, shown) in sorted(largest.items(), key=lambda item: -item[1][1]):
                print(f"  {name:24} {structured:>10,} {shown:>10,}")


if __name__ == "__main__":
    main()
