"""reviewsd: a read-only API for one business's verified reviews and review insights.

Entry point and WSGI application. `create_app(config)` returns the WSGI app, so
any WSGI server can host it; `python reviewsd.py` serves it with the production
server in server.py, and `python reviewsd.py check --data-dir DIR` validates data.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import gzip
import ipaddress
import logging
import signal
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import parse_qsl

import insights_lane
from config import BUILD_CACHE_FILE, Config, Network, env_value, parse_config, parse_networks


def serve_argv(argv: list[str]) -> list[str] | None:
    """The options of a command line that serves (the default command), or None for `check`."""
    if argv[:1] == ["check"]:
        return None
    return argv[1:] if argv[:1] == ["serve"] else argv


# A SIGHUP before the server takes over its signals (during the first load, which can take
# seconds) would end the process, its default action: kept for after READY instead.
_hup_before_serving = threading.Event()

if __name__ == "__main__" and (_argv := serve_argv(sys.argv[1:])) is not None:
    signal.signal(signal.SIGHUP, lambda signum, frame: _hup_before_serving.set())
    # Until READY the process makes objects it keeps (modules, the data) and hardly any garbage:
    # the collector's passes over them cost about a tenth of the imports' time. serve_main
    # turns it back on before serving.
    gc.disable()
    # Until READY, a first start on a large data set keeps both cores busy; started here,
    # before the imports below (about a fifth of a second of one core), the insights lane
    # does not leave the second core idle meanwhile.
    _config = parse_config(_argv)
    insights_lane.start_early(Path(_config.data_dir),
                              skip_if=Path(_config.state_dir) / BUILD_CACHE_FILE if _config.build_cache else None)

# The imports that take time (werkzeug, jsonschema, compiling the schemas): after the early start.
import werkzeug.urls  # noqa: E402,F401  (registers the "werkzeug.url_quote" codec error handler query_args uses)
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound  # noqa: E402
from werkzeug.routing import BaseConverter, Map, Rule  # noqa: E402
from werkzeug.wrappers import Response  # noqa: E402

import feeds  # noqa: E402
from build_cache import BuildCache  # noqa: E402
from dataset import (INSIGHTS_FILE, REVIEWS_FILE, DataError, DataStore, Dataset, check_data_dir,  # noqa: E402
                     dataset_from_files, encode_json, release_memory)
from logs import configure_logging  # noqa: E402
from openapi import build_openapi  # noqa: E402
from payloads import (ATOM, FEED_JSON, JSON, READ_HEADERS, Payload, Precomputed, Triple, accepts_gzip,  # noqa: E402
                      answer, error_document, make_payload, status_line)
from search import (InvalidParams, decode_query_args, run_search, search_result_json,  # noqa: E402
                    since_result_json, validate_date)

log = logging.getLogger("reviewsd")

FEED_LENGTH = 50
HUB_PATH = "/api/websub/hub"
TOPIC_PATHS = ("/feed.xml", "/api/feed.json", "/reviews.json")
OPENAPI_PATH = "/.well-known/openapi.json"
SEARCH_PATH = "/api/reviews/search"
SINCE_CACHE_ENTRIES = 64
SINCE_CACHE_BYTES = 64 << 20


# --------------------------------------------------------------------------- snapshots


def last_modified(generated_at: str, now: datetime) -> datetime:
    """A data file's generated_at as Last-Modified, but never after `now` (RFC 9110 8.8.2.1: a
    modification time in the future, from a producer whose clock runs ahead, is replaced by now)."""
    return min(datetime.fromisoformat(generated_at.replace("Z", "+00:00")), now)


def link_header(config: Config, topic_path: str) -> str:
    return f'<{config.url(HUB_PATH)}>; rel="hub", <{config.url(topic_path)}>; rel="self"'


class SinceCache:
    """Recently asked since-answers of one snapshot, bounded in entries and bytes."""

    def __init__(self) -> None:
        self._entries: OrderedDict[str, Payload] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, since: str, make: Callable[[], Payload]) -> Payload:
        with self._lock:
            if since in self._entries:
                self._entries.move_to_end(since)
                return self._entries[since]
        payload = make()
        with self._lock:
            self._entries[since] = payload
            while len(self._entries) > SINCE_CACHE_ENTRIES or self._size() > SINCE_CACHE_BYTES:
                if len(self._entries) == 1:
                    break
                self._entries.popitem(last=False)
        return payload

    def _size(self) -> int:
        return sum(len(p.identity.body) + len(p.gzipped.body if p.gzipped else b"") for p in self._entries.values())


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One version of everything served: the dataset and its precomputed responses."""

    dataset: Dataset
    payloads: Mapping[str, Payload]
    since_cache: SinceCache = field(default_factory=SinceCache)

    def topic(self, path: str) -> Payload:
        return self.payloads[path]

    def settled(self) -> "Snapshot":
        """This snapshot with every payload's compression complete (see PendingVariant)."""
        return replace(self, payloads={path: payload.settled() for path, payload in self.payloads.items()})


def build_snapshot(dataset: Dataset, config: Config) -> Snapshot:
    """Encode and compress every static body of this data version, once.

    The data files' gzip codings may still be compressing when it returns (see
    PendingVariant): a gzip request for one waits for it, and `settled()` for all.
    """
    now = datetime.now(timezone.utc)
    reviews_modified = last_modified(dataset.reviews_doc["generated_at"], now)
    insights_modified = last_modified(dataset.insights_doc["generated_at"], now)
    site = feeds.FeedSite(config.public_base_url, dataset.business)
    newest = dataset.reviews[:FEED_LENGTH]
    bodies = {
        "/reviews.json": (dataset.reviews_document[0], JSON, reviews_modified, _precomputed(dataset, REVIEWS_FILE)),
        "/insights.json": (dataset.insights_document, JSON, insights_modified, _precomputed(dataset, INSIGHTS_FILE)),
        "/api/feed.json": (feeds.render_json_feed(newest, site), FEED_JSON, reviews_modified, None),
        "/feed.xml": (feeds.render_atom_feed(newest, site), ATOM, reviews_modified, None),
    }
    payloads = {
        path: make_payload(body, ctype, modified,
                           [("Link", link_header(config, path))] if path in TOPIC_PATHS else [], precomputed=pre,
                           wait=False)
        for path, (body, ctype, modified, pre) in bodies.items()
    }
    return Snapshot(dataset, payloads)


def _precomputed(dataset: Dataset, name: str) -> Precomputed | None:
    """The ETag and gzip work the load started for a data file's body (see ReviewsApp's DataStore).

    Taken out of the dataset: once the payload holds the result, nothing should keep
    the object (made mid-build, it would keep that memory from being returned).
    """
    found = dataset.prepared.pop(name, None)
    return found if isinstance(found, Precomputed) else None


# --------------------------------------------------------------------------- client addresses

def client_address(environ: Mapping[str, Any], trusted: Sequence[Network]) -> str:
    """REMOTE_ADDR, or behind trusted proxies the right-most X-Forwarded-For entry that is not one of them."""
    address = str(environ.get("REMOTE_ADDR") or "")
    hops = [h.strip() for h in str(environ.get("HTTP_X_FORWARDED_FOR", "")).split(",") if h.strip()]
    while _is_trusted(address, trusted) and hops:
        candidate = hops.pop()
        try:
            address = str(ipaddress.ip_address(candidate))
        except ValueError:
            break
    return address


def _is_trusted(address: str, trusted: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip.version == net.version and ip in net for net in trusted)


# --------------------------------------------------------------------------- the application

JSON_HEADERS = [("Content-Type", JSON), *READ_HEADERS]


def json_error(status: int, code: str, message: str, issues: Iterable[Mapping[str, Any]] | None = None,
               headers: Sequence[tuple[str, str]] = ()) -> Triple:
    body = error_document(code, message, issues)
    return status_line(status), [("Content-Type", JSON), ("Access-Control-Allow-Origin", "*"), *headers,
                                  ("Content-Length", str(len(body)))], body


ERROR_CODES = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large", 400: "bad_request"}


GET = ["GET"]  # werkzeug adds HEAD


class AnySegmentsConverter(BaseConverter):
    """Everything after the prefix, newlines and slashes included, so that a bad date is a 400, not a 404."""

    regex = r"(?s:.*)"
    part_isolating = False


class ReviewsApp:
    """The WSGI application: routes, handlers and the one place errors become responses."""

    url_map = Map(
        [
            Rule("/reviews.json", endpoint="payload", methods=GET),
            Rule("/insights.json", endpoint="payload", methods=GET),
            Rule("/api/feed.json", endpoint="payload", methods=GET),
            Rule("/feed.xml", endpoint="payload", methods=GET),
            Rule(SEARCH_PATH, endpoint="search", methods=GET),
            Rule("/api/reviews/since/<anything:date>", endpoint="since", methods=GET),
            Rule("/api/reviews/<review_id>", endpoint="review", methods=GET),
            Rule(OPENAPI_PATH, endpoint="payload", methods=GET),
            Rule("/healthz", endpoint="healthz", methods=GET),
            Rule("/mcp", endpoint="mcp", methods=["POST", "DELETE"]),
            Rule(HUB_PATH, endpoint="hub", methods=["POST"]),
        ],
        merge_slashes=False,
        strict_slashes=False,
        converters={"anything": AnySegmentsConverter},
    )

    def __init__(self, config: Config, store: DataStore[Snapshot] | None = None, release: bool = True):
        self.config = config
        self.build_cache = BuildCache(config.state_dir) if config.build_cache and store is None else None
        # Precomputed: each data body's ETag and gzip start on threads as soon as it is encoded,
        # except the first load's gzip, which starts once that load is done (see _build_snapshot).
        self._first_load_done = threading.Event()
        try:
            self.store: DataStore[Snapshot] = store or DataStore(
                config.data_dir, self._build_snapshot,
                prepare=partial(Precomputed, compress_after=self._first_load_done),
                load=self.build_cache.load if self.build_cache else dataset_from_files, release=release)
        finally:
            self._first_load_done.set()
        self.openapi_document = build_openapi(config.public_base_url)
        self.openapi = make_payload(encode_json(self.openapi_document), JSON)
        self.trusted_proxies = parse_networks(config.trusted_proxies)
        self.mcp: Any = None  # set by attach_mcp (mcp_rpc.py)
        self.hub: Any = None  # set by attach_hub (hub.py)

    def _build_snapshot(self, dataset: Dataset) -> Snapshot:
        """The snapshot to serve; on the first load, before the data files' gzip has begun.

        On the first load nothing is served yet, so the two largest compressions (about
        a second of CPU for 100,000 reviews) start only when it is done, instead of
        taking cores from it: READY comes that much sooner, and a gzip request that
        comes first waits for them. A reload swaps only a complete snapshot, while the
        previous one keeps answering.
        """
        snapshot = build_snapshot(dataset, self.config)
        return snapshot.settled() if self._first_load_done.is_set() else snapshot

    # ----------------------------------------------------------------- WSGI

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if self.trusted_proxies:  # the access log and the hub's rate limit use the real client
            environ["reviewsd.client"] = client_address(environ, self.trusted_proxies)
        if method in ("GET", "HEAD"):
            # Precomputed payloads skip routing, a large share of their cost; their
            # rules stay in url_map for OPTIONS, 405 and the route listing.
            payload = self.static_payload(environ.get("PATH_INFO", ""))
            if payload is not None:
                status, headers, body = answer(environ, payload)
                start_response(status, headers)
                return [b"" if method == "HEAD" else body]
        try:
            if method in ("GET", "HEAD") and environ.get("PATH_INFO") == SEARCH_PATH:
                # The busiest dynamic route, found without binding the Map (its rule stays there too).
                status, headers, body = self.on_search(environ)
                start_response(status, headers)
                return [b"" if method == "HEAD" else body]
            adapter = self.url_map.bind_to_environ(environ)
            if method == "OPTIONS":
                status, headers, body = self.preflight(environ, adapter.allowed_methods())
            else:
                endpoint, args = adapter.match()
                result = getattr(self, f"on_{endpoint}")(environ, **args)
                if isinstance(result, Response):
                    return result(environ, start_response)
                status, headers, body = result
        except HTTPException as exc:
            status, headers, body = self.http_error(exc)
        except InvalidParams as exc:
            names = ", ".join(dict.fromkeys(str(i["path"][0]) for i in exc.issues if i["path"]))
            status, headers, body = json_error(400, "invalid_parameters", f"invalid parameters: {names}; see issues",
                                               exc.issues)
        except Exception:
            log.exception("unhandled error for %s %s", method, environ.get("PATH_INFO"))
            status, headers, body = json_error(500, "internal_error", "internal server error")
        start_response(status, headers)
        return [b"" if method == "HEAD" else body]

    def http_error(self, exc: HTTPException) -> Triple:
        code = exc.code or 500
        if isinstance(exc, MethodNotAllowed):
            allowed = sorted(set(exc.valid_methods or ()) | {"OPTIONS"})
            return json_error(405, "method_not_allowed", f"this path allows {', '.join(allowed)}",
                              headers=[("Allow", ", ".join(allowed))])
        if isinstance(exc, NotFound):
            return json_error(404, "not_found", "no such path; see /.well-known/openapi.json")
        return json_error(code, ERROR_CODES.get(code, exc.name.lower().replace(" ", "_")), exc.description or exc.name)

    def preflight(self, environ: Mapping[str, Any], allowed: list[str]) -> Triple:
        """CORS preflight (and plain OPTIONS) for any path that exists."""
        if not allowed:
            raise NotFound()
        methods = ", ".join(sorted(set(allowed) | {"OPTIONS"}))
        headers = [
            ("Allow", methods),
            ("Access-Control-Allow-Origin", "*"),
            ("Access-Control-Allow-Methods", methods),
            ("Access-Control-Allow-Headers",
             "Content-Type, If-None-Match, If-Modified-Since, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"),
            ("Access-Control-Expose-Headers", "ETag, Last-Modified, Link, Mcp-Session-Id"),
            ("Access-Control-Max-Age", "86400"),
        ]
        return "204 No Content", headers, b""  # no Content-Length on a 204 (RFC 9110 8.6)

    # ----------------------------------------------------------------- handlers

    def static_payload(self, path: str) -> Payload | None:
        """The precomputed payload served at `path` (datasets, feeds, OpenAPI), if any."""
        return self.store.current.payloads.get(path) or (self.openapi if path == OPENAPI_PATH else None)

    def on_payload(self, environ: Mapping[str, Any]) -> Triple:
        """The routed twin of the fast path in __call__ (which answers GET and HEAD first).

        Routed here: the path with a trailing slash, which the Map matches (strict_slashes=False).
        """
        payload = self.static_payload(environ["PATH_INFO"].rstrip("/"))
        if payload is None:
            raise NotFound()
        return answer(environ, payload)

    def on_search(self, environ: Mapping[str, Any]) -> Triple:
        args = decode_query_args(query_args(environ))
        dataset = self.store.current.dataset
        matched, positions = run_search(dataset, args)
        return self.dynamic(environ, search_result_json(dataset, matched, positions))

    def on_since(self, environ: Mapping[str, Any], date: str) -> Triple:
        since = validate_date("date", date)
        snapshot = self.store.current
        payload = snapshot.since_cache.get(since, lambda: make_payload(
            since_result_json(snapshot.dataset, since), JSON,
            snapshot.payloads["/reviews.json"].last_modified))
        return answer(environ, payload)

    def on_review(self, environ: Mapping[str, Any], review_id: str) -> Triple:
        snapshot = self.store.current
        review = snapshot.dataset.review_by_id(review_id)
        if review is None:
            raise NotFound()
        position = snapshot.dataset.position_of[review_id]
        return answer(environ, make_payload(snapshot.dataset.review_json(position), JSON,
                                            snapshot.payloads["/reviews.json"].last_modified))

    def on_healthz(self, environ: Mapping[str, Any]) -> Triple:
        """200 when every part serves; 503 when the hub is enabled but its workers stopped."""
        snapshot = self.store.current
        dataset = snapshot.dataset
        hub_status = self.hub.status() if self.hub is not None else {"enabled": False}
        ready = self.hub is None or bool(hub_status.get("running"))
        document = {
            "status": "ok" if ready else "not_ready",
            "data": {
                "reviews": {"generated_at": dataset.reviews_doc["generated_at"], "count": len(dataset.reviews),
                            "sha256": dataset.reviews_sha256},
                "insights": {"generated_at": dataset.insights_doc["generated_at"],
                             "version": dataset.insights_doc["version"], "sha256": dataset.insights_sha256},
                "loaded_at": self.store.loaded_at.isoformat().replace("+00:00", "Z"),
                "last_reload_error": str(self.store.last_error) if self.store.last_error else None,
            },
            "hub": hub_status,
        }
        body = encode_json(document)
        status = "200 OK" if ready else "503 Service Unavailable"
        return status, [("Content-Type", JSON), ("Cache-Control", "no-store"),
                        ("Content-Length", str(len(body)))], body

    def on_mcp(self, environ: dict) -> Any:
        if self.mcp is None:
            raise NotFound()
        return self.mcp.handle(environ)

    def on_hub(self, environ: dict) -> Any:
        if self.hub is None:
            raise NotFound()
        return self.hub.handle(environ)

    def dynamic(self, environ: Mapping[str, Any], body: bytes) -> Triple:
        """A JSON body computed for this request: gzip only when asked, at a cheap level."""
        headers = [*JSON_HEADERS, ("Vary", "Accept-Encoding")]
        encoding = environ.get("HTTP_ACCEPT_ENCODING")
        if encoding and len(body) >= 512 and accepts_gzip(encoding):
            body = gzip.compress(body, compresslevel=5, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        headers.append(("Content-Length", str(len(body))))
        return "200 OK", headers, body


def query_args(environ: Mapping[str, Any]) -> dict[str, list[str]]:
    """The query string's parameters, each with every value given, as werkzeug's `Request.args` reads them.

    Bytes that are not UTF-8 stay percent-encoded (werkzeug's "werkzeug.url_quote"
    error handler, registered when werkzeug.urls is imported), whether they came
    percent-encoded or raw; werkzeug itself fails on raw ones.
    """
    text = environ.get("QUERY_STRING", "")
    if not text.isascii():  # WSGI carries the raw bytes as latin-1
        text = text.encode("latin-1").decode("utf-8", "werkzeug.url_quote")
    multi: dict[str, list[str]] = {}
    for name, value in parse_qsl(text, keep_blank_values=True, errors="werkzeug.url_quote"):
        multi.setdefault(name, []).append(value)
    return multi


def create_app(config: Config | None = None, release: bool = True) -> ReviewsApp:
    """The WSGI application for `config` (data loaded, MCP and hub attached when available).

    With `release=False` the memory the first load left behind is the caller's to give back
    (dataset.release_memory): `python reviewsd.py` does it right after READY.
    """
    config = config or Config()
    app = ReviewsApp(config, release=release)
    try:
        import mcp_rpc
    except ImportError:
        mcp_rpc = None  # type: ignore[assignment]
    if mcp_rpc is not None and hasattr(mcp_rpc, "attach"):
        mcp_rpc.attach(app)
    if config.hub:
        import hub  # here, not at the top: hub imports this module

        hub.attach(app)
    return app


# --------------------------------------------------------------------------- command line


def check_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="reviewsd.py check", description="Validate a data directory.")
    parser.add_argument("--data-dir", default=env_value("data_dir", Config.data_dir))
    args = parser.parse_args(argv)
    problems = check_data_dir(args.data_dir)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{args.data_dir}: {len(problems)} problem(s); these files would be refused.", file=sys.stderr)
        return 1
    print(f"{args.data_dir}: OK")
    return 0


def serve_main(argv: Sequence[str]) -> int:
    import server

    config = parse_config(argv)
    configure_logging(config.log_format)
    try:
        sock = server.listen(config.host, config.port)
    except OSError as exc:
        log.error("cannot listen on %s:%s: %s", config.host, config.port, exc)
        return 1
    # Absolute URLs must name the port really listened on (--port 0, socket activation).
    config = dataclasses.replace(config, port=sock.getsockname()[1])
    try:
        app = create_app(config, release=False)  # released after READY (on_ready below): serving does not need it
    except DataError as exc:
        log.error("cannot start: the data in %s is refused:", config.data_dir)
        for problem in exc.problems:
            log.error("  %s", problem)
        sock.close()
        return 2
    finally:
        insights_lane.discard_early()  # one that no load took (the data came from the build cache)
    app.store.start_polling(config.reload_interval)

    def on_stop() -> None:
        app.store.stop_polling()
        if app.hub is not None:
            app.hub.stop()
        if app.build_cache is not None and not app.build_cache.wait_saved(timeout=15):
            log.warning("stopping before the build cache was written; the next start builds from the data files")

    count = len(app.store.current.dataset.reviews)  # not the dataset itself: a reload must be able to free it
    gc.enable()  # off until now when run as a script (see the imports)
    return server.run(app, host=config.host, port=config.port, threads=config.threads, max_body=config.max_body,
                      send_buffer=config.send_buffer, body_timeout=config.body_timeout,
                      max_connections=config.max_connections,
                      max_connections_per_client=config.max_connections_per_client,
                      trusted_proxies=parse_networks(config.trusted_proxies),
                      on_reload=lambda: app.store.reload(force=True), on_stop=on_stop, on_ready=release_memory,
                      ready_status=f"serving {count} reviews", sock=sock, reload_pending=_hup_before_serving)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options = serve_argv(argv)
    return check_main(argv[1:]) if options is None else serve_main(options)


if __name__ == "__main__":
    sys.exit(main())
