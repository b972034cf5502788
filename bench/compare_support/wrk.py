"""The one load client of bench/compare: wrk (Debian package), one thread, keep-alive.

Request headers go on the command line (-H); a Lua script sets the method and
body (for MCP's POSTs) and, in done(), prints the exact figures in one
machine-readable line (wrk's text report rounds latencies). Responses are not
seen by Lua (a response() callback would slow wrk down); correctness of the
bytes is checked before any load, and wrk counts non-2xx/3xx answers itself.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

LUA = r"""
-- bench/compare: method and body from the environment, one result line at the end
local method = os.getenv("COMPARE_METHOD")
if method and method ~= "" then wrk.method = method end
local body_file = os.getenv("COMPARE_BODY_FILE")
if body_file and body_file ~= "" then
  local f = assert(io.open(body_file, "rb"))
  wrk.body = f:read("*a")
  f:close()
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.stderr:write(string.format("COMPARE-RESULT %d %d %d %d %d %d %d %d %.1f %.1f\n",
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


@dataclass(frozen=True)
class WrkResult:
    requests: int
    seconds: float
    bytes: int
    errors: dict[str, int]  # connect, read, write, status (non-2xx/3xx), timeout
    p50_ms: float
    p99_ms: float
    server_cpu_s: float = 0.0  # CPU the server used during the run (filled in by the caller)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_request(self) -> float:
        return self.server_cpu_s / self.requests * 1e6 if self.requests else 0.0

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def write_script(directory: Path) -> Path:
    path = directory / "compare.lua"
    path.write_text(LUA)
    return path


def run(
    url: str,
    *,
    connections: int,
    seconds: int,
    script: Path,
    headers: dict[str, str] | None = None,
    method: str = "",
    body_file: Path | None = None,
    timeout_s: float = 10.0,
) -> WrkResult:
    """One wrk run; raises RuntimeError if wrk fails or prints no result."""
    argv = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        f"--timeout={timeout_s:.0f}s",
        "-s",
        str(script),
    ]
    for name, value in (headers or {}).items():
        argv += ["-H", f"{name}: {value}"]
    argv.append(url)
    env = {**os.environ, "COMPARE_METHOD": method, "COMPARE_BODY_FILE": str(body_file or "")}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds + timeout_s + 30)
    for line in done.stderr.splitlines():
        if line.startswith("COMPARE-RESULT "):
            n = line.split()[1:]
            return WrkResult(
                requests=int(n[0]),
                seconds=int(n[1]) / 1e6,
                bytes=int(n[2]),
                errors=dict(zip(("connect", "read", "write", "status", "timeout"), map(int, n[3:8]))),
                p50_ms=float(n[8]) / 1000,
                p99_ms=float(n[9]) / 1000,
            )
    raise RuntimeError(
        f"wrk printed no result (exit {done.returncode}): {done.stdout[-400:]} {done.stderr[-400:]}"
    )
