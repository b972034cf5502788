"""Same bytes for every server: capture reviewsd's answers, replay them from the
stdlib anchor and nginx, and check every server against them before any load.

What "the same" means here: status, body, and these headers: Content-Type,
Content-Encoding, Content-Length, ETag, Last-Modified, Cache-Control, Vary,
Access-Control-Allow-Origin, Access-Control-Expose-Headers and Link. Date,
Server and connection-management headers (Connection, Keep-Alive) and nginx's
Accept-Ranges are not compared.

nginx and ETags. nginx computes its own ETag from mtime and size, and its
conditional-request filter runs before `add_header`, so a tag added with
add_header is never compared with If-None-Match. The config therefore turns
`etag off`, adds reviewsd's tag with add_header (through a map on
Accept-Encoding, because the gzip representation has its own tag) and answers
304 itself: `map $http_if_none_match` to a flag, `if ($flag) { return 304; }`
(an exact string compare, which is all the benchmark sends). Last-Modified
comes from the file's mtime, set to reviewsd's Last-Modified; an answer without
one gets `add_header Last-Modified ""`, which removes nginx's. The gzip
representation is a precompressed `.gz` beside the file (`gzip_static on`),
the very bytes reviewsd sends.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from reviewsd_app import config  # noqa: E402  (reviewsd's options; no third-party imports)

COMPARED = (
    "content-type",
    "content-encoding",
    "content-length",
    "etag",
    "last-modified",
    "cache-control",
    "vary",
    "access-control-allow-origin",
    "access-control-expose-headers",
    "link",
)
# For multi-megabyte bodies over loopback, sendfile was the slower nginx here: in alternating wrk runs of
# the 8.7 MB /reviews.json.gz, "sendfile off; output_buffers 2 1m" served ~15% more downloads/s than
# "sendfile on" (with or without sendfile_max_chunk). The anchor gets the faster one.
LARGE = 1 << 20
BIG_BODY = ["sendfile off;", "output_buffers 2 1m;"]
# Every server's connections get reviewsd's default send buffer (--send-buffer), so all four
# are loaded through the same sockets. On loopback it is also nginx's best here: in alternating
# wrk runs of the 8.7 MB /reviews.json.gz, sndbuf=256k served ~460 downloads/s, 512k ~470 (alike),
# 128k ~420, 64k ~300, and the kernel's autotuning (up to 4 MiB per connection) ~395.
SEND_BUFFER = config.Config().send_buffer
NOT_REPLAYED_BY_NGINX = {
    "date",
    "server",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-type",
    "content-encoding",
    "etag",
    "last-modified",
}


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def compared(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers if k.lower() in COMPARED}


@dataclass(frozen=True)
class Representation:
    """One target in one content-coding: reviewsd's 200 and, if it has an ETag, its 304."""

    target: str  # path and query, as sent
    gzip: bool
    ok: Answer
    not_modified: Answer | None

    @property
    def etag(self) -> str | None:
        return self.ok.header("etag")


def fetch(
    base: str, target: str, headers: dict[str, str], method: str = "GET", body: bytes | None = None
) -> Answer:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.request(method, target, body=body, headers=headers)
        response = conn.getresponse()
        return Answer(response.status, response.reason, tuple(response.getheaders()), response.read())
    finally:
        conn.close()


def capture(base: str, target: str) -> list[Representation]:
    """reviewsd's identity and (when it has one) gzip representation of a target, each with its 304."""
    found = []
    for gzip in (False, True):
        headers = {"Accept-Encoding": "gzip"} if gzip else {}
        ok = fetch(base, target, headers)
        if ok.status != 200:
            raise RuntimeError(f"reviewsd answered {ok.status} to GET {target}: {ok.body[:200]!r}")
        if gzip and ok.header("content-encoding") != "gzip":
            continue
        not_modified = None
        if ok.header("etag"):
            not_modified = fetch(base, target, {**headers, "If-None-Match": ok.header("etag") or ""})
            if not_modified.status != 304:
                raise RuntimeError(f"reviewsd answered {not_modified.status} to a conditional GET {target}")
        found.append(Representation(target, gzip, ok, not_modified))
    return found


def _replayable(answer: Answer) -> list[list[str]]:
    return [
        [k, v] for k, v in answer.headers if k.lower() not in ("date", "server", "connection", "keep-alive")
    ]


def write_manifest(directory: Path, representations: list[Representation]) -> Path:
    """The stdlib anchor's table: headers as reviewsd sent them, bodies in files."""
    items = []
    for i, rep in enumerate(representations):
        body_file = f"body-{i}.bin"
        (directory / body_file).write_bytes(rep.ok.body)
        items.append(
            {
                "target": rep.target,
                "gzip": rep.gzip,
                "status": f"{rep.ok.status} {rep.ok.reason}",
                "headers": _replayable(rep.ok),
                "body_file": body_file,
                "etag": rep.etag,
                "not_modified_headers": _replayable(rep.not_modified) if rep.not_modified else None,
            }
        )
    path = directory / "manifest.json"
    path.write_text(json.dumps(items, indent=1))
    return path


# --------------------------------------------------------------------------- nginx


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _write_static(www: Path, name: str, rep: Representation) -> None:
    path = www / name.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path = path.with_name(path.name + ".gz") if rep.gzip else path
    path.write_bytes(rep.ok.body)
    path.chmod(0o644)
    modified = rep.ok.header("last-modified")
    if modified:  # nginx's Last-Modified is the file's mtime: make it reviewsd's
        stamp = email.utils.parsedate_to_datetime(modified).timestamp()
        os.utime(path, (stamp, stamp))


def _location(index: int, path: str, reps: list[Representation], www: Path) -> tuple[list[str], list[str]]:
    """(maps for the http block, the location block) serving every representation of one path."""
    maps: list[str] = []
    first = reps[0].ok
    queries = sorted({urlsplit(r.target).query for r in reps})
    if queries == [""]:
        file_expr = path + "index.html" if path.endswith("/") else path  # "/": a file, not the folder
        for rep in reps:
            _write_static(www, file_expr, rep)
    else:  # several queries of one path (searches): one file per query string
        maps.append(
            f"map $args $file_{index} {{ default /missing; "
            + " ".join(f"{_quote(q)} /q{index}/{n}.body;" for n, q in enumerate(queries))
            + " }"
        )
        for rep in reps:
            _write_static(www, f"/q{index}/{queries.index(urlsplit(rep.target).query)}.body", rep)
        file_expr = f"$file_{index}"
    etags = {rep.gzip: rep.etag for rep in reps if rep.etag}
    added = [
        f"add_header {key} {_quote(value)};"
        for key, value in first.headers
        if key.lower() not in NOT_REPLAYED_BY_NGINX
    ]
    if etags:
        maps.append(
            f"map $http_accept_encoding $etag_{index} {{ default {_quote(etags.get(False, ''))}; "
            + (f"~gzip {_quote(etags[True])}; " if True in etags else "")
            + "}"
        )
        maps.append(
            f"map $http_if_none_match $not_modified_{index} {{ default 0; "
            + " ".join(f"{_quote(tag)} 1;" for tag in etags.values())
            + " }"
        )
        added.append(f"add_header ETag $etag_{index};")
    lines = [
        f"location = {path} {{",
        "types { }",
        f"default_type {_quote(first.header('content-type') or '')};",
        "gzip_static on;" if any(r.gzip for r in reps) else "gzip_static off;",
        *added,
    ]
    if max(len(r.ok.body) for r in reps) > LARGE:
        lines += BIG_BODY
    if not first.header("last-modified"):
        lines.append('add_header Last-Modified "";')
    if etags:
        # A 304 from `return` in this location would carry Content-Type and lose
        # Last-Modified: answer it from an internal location that sets exactly
        # reviewsd's 304 headers.
        lines.append(f"if ($not_modified_{index}) {{ rewrite ^ /__not_modified_{index} last; }}")
    lines += [f"try_files {file_expr} =404;", "}"]
    if etags:
        not_modified = next(r.not_modified for r in reps if r.not_modified is not None)
        lines += [
            f"location = /__not_modified_{index} {{",
            "internal;",
            "types { }",
            'default_type "";',
            *[
                f"add_header {key} {_quote(value)};"
                for key, value in not_modified.headers
                if key.lower() not in NOT_REPLAYED_BY_NGINX
            ],
            f"add_header ETag $etag_{index};",
        ]
        modified = not_modified.header("last-modified")
        if modified:
            lines.append(f"add_header Last-Modified {_quote(modified)};")
        lines += ["return 304;", "}"]
    return maps, lines


def write_nginx_conf(directory: Path, port: int, representations: list[Representation]) -> Path:
    """A config serving every representation from files, tuned to be as fast as nginx gets here."""
    www = directory / "www"
    www.mkdir(parents=True, exist_ok=True)
    by_path: dict[str, list[Representation]] = {}
    for rep in representations:
        by_path.setdefault(urlsplit(rep.target).path, []).append(rep)
    maps, locations = [], []
    for index, (path, reps) in enumerate(by_path.items()):
        more_maps, block = _location(index, path, reps, www)
        maps += more_maps
        locations += block
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (directory / f"tmp_{sub}").mkdir(exist_ok=True)
    temp_paths = "\n".join(
        f"  {sub}_temp_path {directory}/tmp_{sub};"
        for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = f"""# written by bench/compare
# One worker: the load client (wrk, one thread) needs the machine's other core.
worker_processes 1;
daemon off;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  server_tokens off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 100000000;
  open_file_cache max=64 inactive=600s;
  open_file_cache_valid 600s;
  etag off;
  map_hash_bucket_size 256;
{temp_paths}
  {chr(10).join("  " + m for m in maps).strip()}
  server {{
    listen 127.0.0.1:{port} backlog=1024 sndbuf={SEND_BUFFER};
    root {www};
    {chr(10).join("    " + line for line in locations).strip()}
  }}
}}
"""
    for path in [directory, *www.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)  # nginx's workers run as nobody
    path = directory / "nginx.conf"
    path.write_text(conf)
    return path


# --------------------------------------------------------------------------- checks


def differences(expected: Answer, got: Answer) -> list[str]:
    problems = []
    if got.status != expected.status:
        problems.append(f"status {got.status}, reviewsd {expected.status}")
    if got.body != expected.body:
        problems.append(f"body differs ({len(got.body)} bytes, reviewsd {len(expected.body)})")
    want, have = expected.compared(), got.compared()
    for name in sorted(set(want) | set(have)):
        if name == "content-length" and expected.status == 304:
            continue  # a 304 has no body either way
        if want.get(name) != have.get(name):
            problems.append(f"{name}: {have.get(name)!r}, reviewsd {want.get(name)!r}")
    return problems


def check_server(base: str, representations: list[Representation]) -> list[str]:
    """Every difference between a server's answers and reviewsd's, for 200s and 304s alike."""
    problems = []
    for rep in representations:
        headers = {"Accept-Encoding": "gzip"} if rep.gzip else {}
        where = f"GET {rep.target}{' (gzip)' if rep.gzip else ''}"
        problems += [f"{where}: {p}" for p in differences(rep.ok, fetch(base, rep.target, headers))]
        if rep.not_modified is not None:
            got = fetch(base, rep.target, {**headers, "If-None-Match": rep.etag or ""})
            problems += [f"{where} If-None-Match: {p}" for p in differences(rep.not_modified, got)]
    return problems
