"""In-process measurements for bench/compare, run in a child process so the
parent (which drives wrk) stays small and its timings stay undisturbed.

    python inprocess.py search   --data-dir DIR [--seconds 3]
    python inprocess.py app      --data-dir DIR --base-url URL --cases FILE [--seconds 1]
    python inprocess.py download --data-dir DIR --base-url URL [--requests 30]
    python inprocess.py startup  --data-dir DIR
    python inprocess.py memory   --data-dir DIR
    python inprocess.py mcp      --data-dir DIR --call JSON [--seconds 1]
    python inprocess.py --root CHECKOUT search ...   # another checkout's package (bench/compare --before)

Each prints one JSON document on stdout.

* search: p50/p99 of `search.run_search` (validation included: the one path
  HTTP and MCP share) for selective, broad and worst-case filters.
* app: microseconds per call of the WSGI app itself (no server, no socket)
  for each HTTP case, to split a request's cost between app and server.
* download: GET /reviews.json with gzip through the real server.py in this
  process, counting every call of the compression and JSON-encoding functions
  while requests are served (must be 0: the body is precomputed), plus a
  cProfile of the app answering that request.
* startup: cProfile of create_app, the functions with the most own time.
* memory: RSS taken by the two parsed JSON documents alone.
* mcp: microseconds per tools/call through the WSGI app alone.
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import http.client
import io
import json
import pstats
import statistics
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]

NO_HITS = "zzqxj-no-such-text"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed_calls(action: Callable[[], Any], seconds: float, max_calls: int = 100_000) -> list[float]:
    """Seconds per call of `action`, repeated for about `seconds` (at least 20 calls)."""
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(times) < max_calls and (len(times) < 20 or time.perf_counter() < deadline):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return times


# --------------------------------------------------------------------------- search


def search_cases(data: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (kind, arguments); kind is 'selective', 'worst' or 'info'."""
    tech = next(iter(data.technicians.values()))["name"]
    newest = data.reviews[0]["date"]
    return {
        "rating + technician": ("selective", {"rating": 2, "mentions_technician": tech}),
        "narrow date range": ("selective", {"since": newest, "until": newest}),
        "substring, no hits": ("worst", {"query": NO_HITS}),
        "broad (min_rating 1)": ("info", {"min_rating": 1}),
        "substring, common word": ("info", {"query": "back"}),
        # issue 39's expensive search: a letter in nearly every review, a rating sort, the largest page
        "substring 'e', lowest first, limit 100": ("info", {"query": "e", "sort": "lowest", "limit": 100}),
    }


def cmd_search(args: argparse.Namespace) -> dict[str, Any]:
    from reviewsd_app.reviews import dataset as ds
    from reviewsd_app.reviews.search import run_search

    started = time.perf_counter()
    data = ds.load_dataset(args.data_dir)
    load_s = time.perf_counter() - started
    cases = {}
    for name, (kind, arguments) in search_cases(data).items():
        run_search(data, arguments)  # warm
        times = timed_calls(lambda: run_search(data, arguments), args.seconds, max_calls=2000)
        matched = run_search(data, arguments).matched
        cases[name] = {
            "kind": kind,
            "arguments": arguments,
            "matched": matched,
            "calls": len(times),
            "p50_ms": statistics.median(times) * 1000,
            "p99_ms": percentile(times, 0.99) * 1000,
        }
    return {"reviews": len(data.reviews), "load_s": load_s, "cases": cases}


# --------------------------------------------------------------------------- app


def make_app(data_dir: str, base_url: str) -> Any:
    from reviewsd_app import reviewsd

    config = reviewsd.Config(
        data_dir=data_dir,
        state_dir=str(Path(data_dir) / "state"),
        base_url=base_url,
        hub=False,
        reload_interval=0,
    )
    return reviewsd.create_app(config)


def environ_for(path: str, headers: dict[str, str]) -> dict[str, Any]:
    target, _, query = path.partition("?")
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": target,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "SCRIPT_NAME": "",
        "HTTP_HOST": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    for name, value in headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


def call_app(app: Any, path: str, headers: dict[str, str]) -> str:
    status: list[str] = []
    body = app(environ_for(path, headers), lambda s, h, e=None: status.append(s))
    b"".join(body)
    return status[0]


def cmd_app(args: argparse.Namespace) -> dict[str, Any]:
    """Microseconds per app call for each case of the --cases file ([[name, path, headers], ...])."""
    app = make_app(args.data_dir, args.base_url)
    out = {}
    for name, path, headers in json.loads(Path(args.cases).read_text()):
        status = call_app(app, path, headers)
        times = timed_calls(lambda: call_app(app, path, headers), args.seconds)
        out[name] = {"status": status, "p50_us": statistics.median(times) * 1e6, "calls": len(times)}
    return out


# --------------------------------------------------------------------------- download


WATCHED = {
    "zlib.compress": (zlib, "compress"),
    "zlib.compressobj": (zlib, "compressobj"),
    "gzip.compress": (gzip, "compress"),
    "json.dumps": (json, "dumps"),
}


def count_calls(extra: dict[str, tuple[Any, str]]) -> dict[str, int]:
    """Replace each watched function, wherever a loaded module holds it, by a counting wrapper."""
    counts = {name: 0 for name in [*WATCHED, *extra]}
    lock = threading.Lock()
    for name, (module, attr) in {**WATCHED, **extra}.items():
        original = getattr(module, attr)

        def wrapper(*a: Any, _name: str = name, _original: Any = original, **k: Any) -> Any:
            with lock:
                counts[_name] += 1
            return _original(*a, **k)

        for loaded in list(sys.modules.values()):
            for key, value in list(vars(loaded).items()) if hasattr(loaded, "__dict__") else ():
                if value is original:
                    setattr(loaded, key, wrapper)
    return counts


def cmd_download(args: argparse.Namespace) -> dict[str, Any]:
    from reviewsd_app.httpserver import server
    from reviewsd_app.reviews import dataset as ds

    app = make_app(args.data_dir, args.base_url)
    expected = app.store.current.payloads["/reviews.json"].gzipped.body
    counts = count_calls({"dataset.encode_json": (ds, "encode_json")})  # after the snapshot was built
    srv = server.make_server(app, "127.0.0.1", 0, threads=8)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=60)
        times = []
        for _ in range(args.requests):
            started = time.perf_counter()
            conn.request("GET", "/reviews.json", headers={"Accept-Encoding": "gzip"})
            response = conn.getresponse()
            body = response.read()
            times.append(time.perf_counter() - started)
            if response.status != 200 or body != expected:
                raise SystemExit(f"/reviews.json (gzip) answered {response.status} with other bytes")
        conn.close()
    finally:
        srv.shutdown(grace=2)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.requests):
        call_app(app, "/reviews.json", {"Accept-Encoding": "gzip"})
    profile.disable()
    stats = pstats.Stats(profile)
    top = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:6]  # by internal time
    return {
        "requests": args.requests,
        "gzip_bytes": len(expected),
        "calls_during_requests": counts,
        "loopback_ms_p50": statistics.median(times) * 1000,
        "app_profile_top": [
            {
                "function": f"{Path(f[0]).name}:{f[1]}({f[2]})",
                "calls": s[1],
                "tottime_us_per_request": s[2] / args.requests * 1e6,
            }
            for f, s in top
        ],
    }


# --------------------------------------------------------------------------- startup, memory, mcp


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cmd_startup(args: argparse.Namespace) -> dict[str, Any]:
    """Where building the app's data takes its time: cProfile of create_app, top functions by own time."""
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    make_app(args.data_dir, BASE_URL_FOR_PROFILES)
    profile.disable()
    stats = pstats.Stats(profile)
    top = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:8]
    return {
        "profiled_s": time.perf_counter() - started,
        "top": [{"function": f"{Path(f[0]).name}:{f[2]}", "own_s": s[2]} for f, s in top],
    }


def cmd_memory(args: argparse.Namespace) -> dict[str, Any]:
    """RSS of the parsed JSON documents alone, next to the whole app's (both in MB)."""
    base = rss_mb()
    docs = [
        json.loads((Path(args.data_dir) / name).read_bytes()) for name in ("reviews.json", "insights.json")
    ]
    parsed = rss_mb() - base
    del docs
    return {"parsed_documents_mb": parsed}


def cmd_mcp(args: argparse.Namespace) -> dict[str, Any]:
    """Microseconds per tools/call through the WSGI app itself (no server, no socket), p50."""
    app = make_app(args.data_dir, BASE_URL_FOR_PROFILES)
    headers = {"Accept": "application/json, text/event-stream"}

    def post(message: dict[str, Any]) -> tuple[str, dict[str, str]]:
        body = json.dumps(message).encode()
        environ = environ_for("/mcp", headers)
        environ.update(
            {
                "REQUEST_METHOD": "POST",
                "CONTENT_TYPE": "application/json",
                "CONTENT_LENGTH": str(len(body)),
                "wsgi.input": io.BytesIO(body),
            }
        )
        seen: dict[str, Any] = {}
        b"".join(app(environ, lambda s, h, e=None: seen.update(status=s, headers=dict(h))))
        return seen["status"], seen["headers"]

    _, answer = post(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "compare", "version": "1"},
            },
        }
    )
    headers.update({"Mcp-Session-Id": answer["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-06-18"})
    call = json.loads(args.call)
    status, _ = post(call)
    times = timed_calls(lambda: post(call), args.seconds)
    return {"status": status, "p50_us": statistics.median(times) * 1e6, "calls": len(times)}


BASE_URL_FOR_PROFILES = "https://reviews.example.com"


def load_package(root: Path) -> None:
    """Import `root` as the package reviewsd_app (as its `python reviewsd.py` does), not the installed one."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "reviewsd_app", root / "__init__.py", submodule_search_locations=[str(root)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["reviewsd_app"] = package
    spec.loader.exec_module(package)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root", type=Path, help="measure the package of this checkout (bench/compare --before)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("search")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--seconds", type=float, default=3.0, help="per case")
    p = sub.add_parser("app")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--base-url", required=True)
    p.add_argument("--cases", required=True)
    p.add_argument("--seconds", type=float, default=1.0, help="per case")
    p = sub.add_parser("download")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--base-url", required=True)
    p.add_argument("--requests", type=int, default=30)
    p = sub.add_parser("startup")
    p.add_argument("--data-dir", required=True)
    p = sub.add_parser("memory")
    p.add_argument("--data-dir", required=True)
    p = sub.add_parser("mcp")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--call", required=True, help="the JSON-RPC tools/call message")
    p.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    if args.root is not None:
        load_package(args.root.resolve())
    import logging

    logging.disable(logging.CRITICAL)  # the access log would only add noise to these numbers
    command = {
        "search": cmd_search,
        "app": cmd_app,
        "download": cmd_download,
        "startup": cmd_startup,
        "memory": cmd_memory,
        "mcp": cmd_mcp,
    }[args.command]
    print(json.dumps(command(args)))


if __name__ == "__main__":
    main()
