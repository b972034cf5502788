"""reviewsd: a read-only API for one business's verified reviews and review insights.

Entry point and WSGI application. `create_app(config)` returns the WSGI app, so any WSGI server can host
it; `python reviewsd.py` serves it with the production server in httpserver/, and `python reviewsd.py check
--data-dir DIR` validates data.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:
    # `python reviewsd.py` from a checkout: run this folder as the package it is (reviewsd_app, whose modules
    # import each other relatively), the way the installed `reviewsd` command runs it.
    import importlib.util
    import sys
    from pathlib import Path

    _here = Path(__file__).resolve().parent
    if sys.path and Path(sys.path[0] or ".").resolve() == _here:
        del sys.path[0]  # no module of ours importable under a generic top-level name (config, logs, ...)
    _spec = importlib.util.spec_from_file_location(
        "reviewsd_app", _here / "__init__.py", submodule_search_locations=[str(_here)]
    )
    _package = importlib.util.module_from_spec(_spec)
    sys.modules["reviewsd_app"] = _package
    _spec.loader.exec_module(_package)
    sys.exit(_package.main())

import dataclasses
import errno
import gzip
import logging
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import parse_qsl, urlencode

import werkzeug.urls  # noqa: F401  (registers the "werkzeug.url_quote" codec error handler query_args uses)
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.routing import BaseConverter, Map, Rule
from werkzeug.wrappers import Response

from .cli.checks import freshness_problems, missing_insights, placeholder_note, profile_problems
from .cli.commands import analyze_main, import_main, init_main, sync_main
from .config import (
    PROG,
    Config,
    HelpFormatter,
    Network,
    Parser,
    client_address,
    client_group,
    env_value,
    parse_config,
    parse_networks,
    resolve_data_dir,
)
from .events.command import notify_main
from .events.config import NotifyConfigError, load_notify
from .events.notifier import Notifier, start_notifier
from .httpserver import server
from .httpserver.connection import BUFFERS_KEY
from .httpserver.options import ServerOptions
from .httpserver.service import hup_before_serving
from .hub import Hub, start_hub
from .ingest.detect import import_hint
from .logs import configure_logging
from .mcp_rpc import McpServer
from .mcpserver.card import discovery_documents
from .mcpserver.transport import McpEndpoint
from .openapi import build_openapi
from .pages import PAGE_HEADERS, ReviewsPage, WidgetOptionsError, parse_widget_options, render_reviews
from .reviews.dataset import DataError, check_data_dir, encode_json
from .reviews.datastore import DataStore
from .reviews.search import (
    SINCE_PARAMS_VALIDATOR,
    InvalidParams,
    decode_query_args,
    run_search,
    search_result_json,
    since_page,
    validate_date,
    validate_since_args,
)
from .surface import (
    CORS_MAX_AGE,
    CORS_REQUEST_HEADERS,
    CORS_RESPONSE_HEADERS,
    GZIP_MIN_BYTES,
    HEALTHZ,
    READ_HEADERS,
    REVIEWS_JSON,
    ROUTES,
    SEARCH,
    SINCE_PREFIX,
    review_id_of_page,
)
from .web.admission import BUSY_MESSAGE, RETRY_AFTER, Busy, CostGate, is_expensive
from .web.payloads import JSON, Payload, accepts_gzip, answer, error_document, make_payload
from .web.responses import Body, Triple, error_code, status_line, with_common_headers
from .web.snapshot import Snapshot, build_snapshot, pages_document

log = logging.getLogger("reviewsd")


def json_error(
    status: int,
    code: str,
    message: str,
    issues: Iterable[Mapping[str, Any]] | None = None,
    headers: Sequence[tuple[str, str]] = (),
) -> Triple:
    body = error_document(code, message, issues)
    return (
        status_line(status),
        [
            ("Content-Type", JSON),
            ("Access-Control-Allow-Origin", "*"),
            *headers,
            ("Content-Length", str(len(body))),
        ],
        body,
    )


def common_headers_added(start_response: Callable) -> Callable:
    """start_response for a werkzeug Response (the hub's answers): its headers followed by the common ones."""

    def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable:
        return start_response(status, with_common_headers(headers), exc_info)

    return start


class AnySegmentsConverter(BaseConverter):
    """Everything after the prefix, newlines and slashes included, so that a bad date is a 400, not a 404."""

    regex = r"(?s:.*)"
    part_isolating = False


class ReviewsApp:
    """The WSGI application: routes, handlers and the one place errors become responses."""

    # Every route of surface.ROUTES; "attached" ones reach on_attached with the part's name.
    url_map = Map(
        [
            Rule(route.rule, endpoint=route.endpoint, methods=list(route.methods))
            if route.kind != "attached"
            else Rule(
                route.rule,
                endpoint="attached",
                defaults={"part": route.endpoint},
                methods=list(route.methods),
            )
            for route in ROUTES
        ],
        merge_slashes=False,
        strict_slashes=False,
        converters={"anything": AnySegmentsConverter},
    )

    def __init__(
        self,
        config: Config,
        store: DataStore[Snapshot],
        trusted_proxies: Sequence[Network] = (),
        *,
        mcp: McpEndpoint | None = None,
        hub: Hub | None = None,
        notifier: Notifier | None = None,
        gate: CostGate | None = None,
    ):
        self.config = config
        self.store = store
        self.trusted_proxies = trusted_proxies
        self.mcp = mcp  # POST/DELETE /mcp; 404 without
        self.hub = hub  # POST /api/websub/hub; 404 without (--no-hub)
        self.gate = gate if gate is not None else CostGate()  # the expensive searches now (web/admission.py)
        self.notifier = notifier  # events out (--notify); /healthz shows its counts

    def is_precomputed(self, path: str) -> bool:
        """Whether a GET of `path` (as sent) is answered from memory at once: a payload route, a review page
        already rendered, or /healthz (built from what the store, the hub and the events hold in memory:
        never a wait for SQLite or a lock). The server answers those on the thread that read them
        (server.answers_here), so /healthz never waits behind a queue of requests (issue 39). The same rule
        as __call__'s fast path: `payload` (a trailing slash too) and `review_id_of_page`."""
        if self.payload(path) is not None or path == HEALTHZ:
            return True
        review_id = review_id_of_page(path)
        return review_id is not None and self.store.current.has_review_page(review_id)

    def compress_late(self) -> None:
        """Compress the first snapshot's data files on a background thread (see __init__)."""
        threading.Thread(
            target=self.store.current.compress_late, name="gzip-after-start", daemon=True
        ).start()

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if self.trusted_proxies:  # the access log and the hub's rate limit use the real client
            environ["reviewsd.client"] = client_address(environ, self.trusted_proxies)
        reading = method in ("GET", "HEAD")
        path = environ.get("PATH_INFO", "")
        try:
            # The precomputed payloads, search and review pages, the busiest routes, skip routing: it
            # is most of their cost (a review page: 12 against 2 us in-process). Their rules stay in
            # url_map for OPTIONS, 405 and the route listing.
            payload = self.payload(path) if reading else None
            if payload is not None:
                status, headers, body = answer(environ, payload)
            elif reading and path == SEARCH:
                status, headers, body = self.on_search(environ)
            elif reading and (review_id := review_id_of_page(path)) is not None:
                status, headers, body = self.on_review_page(environ, review_id)
            elif reading and path.startswith(SINCE_PREFIX):  # the rule's converter takes all that follows
                status, headers, body = self.on_since(environ, path[len(SINCE_PREFIX) :])
            else:
                adapter = self.url_map.bind_to_environ(environ)
                if method == "OPTIONS":
                    status, headers, body = self.preflight(adapter.allowed_methods())
                else:
                    endpoint, args = adapter.match()
                    if endpoint == "payload":  # the fast path above answers every path of a payload
                        raise NotFound()
                    result = getattr(self, f"on_{endpoint}")(environ, **args)
                    if isinstance(result, Response):
                        return result(environ, common_headers_added(start_response))
                    status, headers, body = result
        except HTTPException as exc:
            status, headers, body = self.http_error(exc)
        except InvalidParams as exc:
            names = ", ".join(dict.fromkeys(str(i["path"][0]) for i in exc.issues if i["path"]))
            more = f" (and {exc.more} more)" if exc.more else ""
            status, headers, body = json_error(
                400, "invalid_parameters", f"invalid parameters: {names}{more}; see issues", exc.issues
            )
        except Exception:
            log.exception("unhandled error for %s %s", method, environ.get("PATH_INFO"))
            status, headers, body = json_error(500, "internal_error", "internal server error")
        start_response(status, with_common_headers(headers))  # the one exit of every plain answer
        if method == "HEAD":
            return [b""]
        return wsgi_body(body, environ.get(BUFFERS_KEY, False))

    def http_error(self, exc: HTTPException) -> Triple:
        code = exc.code or 500
        if isinstance(exc, MethodNotAllowed):
            allowed = sorted(set(exc.valid_methods or ()) | {"OPTIONS"})
            return json_error(
                405,
                "method_not_allowed",
                f"this path allows {', '.join(allowed)}",
                headers=[("Allow", ", ".join(allowed))],
            )
        if isinstance(exc, NotFound):
            return json_error(404, "not_found", "no such path; see /.well-known/openapi.json")
        return json_error(code, error_code(code, exc.name), exc.description or exc.name)  # werkzeug's name

    def preflight(self, allowed: list[str]) -> Triple:
        """CORS preflight (and plain OPTIONS) for any path that exists."""
        if not allowed:
            raise NotFound()
        methods = ", ".join(sorted(set(allowed) | {"OPTIONS"}))
        headers = [
            ("Allow", methods),
            ("Access-Control-Allow-Origin", "*"),
            ("Access-Control-Allow-Methods", methods),
            ("Access-Control-Allow-Headers", ", ".join(CORS_REQUEST_HEADERS)),
            ("Access-Control-Expose-Headers", CORS_RESPONSE_HEADERS),
            ("Access-Control-Max-Age", CORS_MAX_AGE),
        ]
        return "204 No Content", headers, b""  # no Content-Length on a 204 (RFC 9110 8.6)

    def payload(self, path: str) -> Payload | None:
        """The precomputed payload of a path as the routes take it: with one trailing slash too
        (strict_slashes=False), and an empty path (a WSGI server's root) as /."""
        payloads = self.store.current.payloads
        found = payloads.get(path or "/")
        if found is None and path.endswith("/") and len(path) > 1 and not path.endswith("//"):
            found = payloads.get(path[:-1])
        return found

    def metered(
        self, environ: Mapping[str, Any], args: Mapping[str, list[str]], run: Callable[[], Triple]
    ) -> Triple:
        """`run()` now if the search is cheap; if expensive, once the cost gate gives its client a turn, or a
        503 with Retry-After if none comes soon (web/admission.py)."""
        priced = {name: values[0] for name, values in args.items() if values}  # as run_search takes them
        if not is_expensive(priced, len(self.store.current.dataset.reviews)):
            return run()
        address = environ.get("reviewsd.client") or environ.get("REMOTE_ADDR") or ""
        try:
            return self.gate.run(client_group(address, self.config.client_prefix_v6), run)
        except Busy:
            return json_error(503, "busy", BUSY_MESSAGE, headers=[("Retry-After", RETRY_AFTER)])

    def on_search(self, environ: Mapping[str, Any]) -> Triple:
        args = query_args(environ)
        return self.metered(environ, args, lambda: self._search(environ, args))

    def _search(self, environ: Mapping[str, Any], args: dict[str, list[str]]) -> Triple:
        dataset = self.store.current.dataset
        body = search_result_json(dataset, run_search(dataset, decode_query_args(args)))
        return made_for_request(environ, "200 OK", body, [("Content-Type", JSON)])

    def on_reviews_page(self, environ: Mapping[str, Any]) -> Triple:
        """The search form and one page of its results, found by the same code as /api/reviews/search."""
        # A form's empty fields mean "any": left out, as if the browser had not sent them.
        given = {name: values for name, values in query_args(environ).items() if values != [""]}
        return self.metered(environ, given, lambda: self._reviews_page(environ, given))

    def _reviews_page(self, environ: Mapping[str, Any], given: dict[str, list[str]]) -> Triple:
        snapshot = self.store.current
        params = {name: values[0] for name, values in given.items()}  # shown back in the form
        status = "200 OK"
        try:
            found = run_search(snapshot.dataset, decode_query_args(given))
            reviews = [snapshot.dataset.reviews[p] for p in found.positions]
            following = {**params, "cursor": found.next_cursor} if found.next_cursor else None
            next_url = "/reviews?" + urlencode(following) if following else None
            page = ReviewsPage(reviews, params, found.matched, next_url)
        except InvalidParams as exc:  # the form again, each problem beside its field
            status, page = "400 Bad Request", ReviewsPage([], params, issues=exc.issues)
        body = render_reviews(pages_document(snapshot.dataset, ()), page, snapshot.site)
        return made_for_request(environ, status, body, PAGE_HEADERS)

    def on_review_page(self, environ: Mapping[str, Any], review_id: str) -> Triple:
        snapshot = self.store.current
        payload = snapshot.review_page(review_id)
        if payload is None:  # a person following an old link: a page that says so, not the API's JSON
            return made_for_request(environ, "404 Not Found", snapshot.review_missing, PAGE_HEADERS)
        return answer(environ, payload)

    def on_widget(self, environ: Mapping[str, Any]) -> Triple:
        try:
            options = parse_widget_options(query_args(environ))
        except WidgetOptionsError as exc:
            raise InvalidParams(exc.issues) from None
        return answer(environ, self.store.current.widget(options))

    def on_since(self, environ: Mapping[str, Any], date: str) -> Triple:
        """Every review since the date, or with limit or cursor one page of them."""
        since = validate_date("date", date)
        args = decode_query_args(query_args(environ), SINCE_PARAMS_VALIDATOR, lambda a: None)
        snapshot = self.store.current
        return answer(
            environ,
            snapshot.since(
                since_page(snapshot.dataset, since, *validate_since_args(since, args)),
                gzip=accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING") or ""),
            ),
        )

    def on_review(self, environ: Mapping[str, Any], review_id: str) -> Triple:
        snapshot = self.store.current
        position = snapshot.dataset.position_of.get(review_id)
        if position is None:
            raise NotFound()
        return answer(
            environ,
            make_payload(
                snapshot.dataset.review_json(position), JSON, snapshot.payloads[REVIEWS_JSON].last_modified
            ),
        )

    def on_healthz(self, environ: Mapping[str, Any]) -> Triple:
        """200 while reads are served ("degraded" when the hub's store is unavailable); 503 once the hub
        has stopped."""
        dataset = self.store.current.dataset
        hub_status = self.hub.status() if self.hub is not None else {"enabled": False}
        events_status = self.notifier.status() if self.notifier is not None else {"enabled": False}
        ready = self.hub is None or bool(hub_status.get("running"))
        health = "ok"
        if not ready:
            health = "not_ready"
        elif hub_status.get("available") is False or events_status.get("available") is False:
            health = "degraded"
        document = {
            "status": health,
            "data": {
                "reviews": {
                    "generated_at": dataset.reviews_doc["generated_at"],
                    "count": len(dataset.reviews),
                    "sha256": dataset.reviews_sha256,
                },
                "insights": {
                    "generated_at": dataset.insights_doc["generated_at"],
                    "version": dataset.insights_doc["version"],
                    "sha256": dataset.insights_sha256,
                },
                "loaded_at": self.store.loaded_at.isoformat().replace("+00:00", "Z"),
                "last_reload_error": str(self.store.last_error) if self.store.last_error else None,
            },
            "hub": hub_status,
            "events": events_status,
        }
        body = encode_json(document)
        status = "200 OK" if ready else "503 Service Unavailable"
        return (
            status,
            [("Content-Type", JSON), ("Cache-Control", "no-store"), ("Content-Length", str(len(body)))],
            body,
        )

    def on_attached(self, environ: dict, part: str) -> Any:
        if getattr(self, part) is None:
            raise NotFound()
        return getattr(self, part).handle(environ)


def made_for_request(
    environ: Mapping[str, Any], status: str, body: bytes, headers: Sequence[tuple[str, str]]
) -> Triple:
    """An answer made for one request (search, /reviews): no validators; gzip when asked, at a cheap level."""
    headers = [*headers[:1], *READ_HEADERS, *headers[1:], ("Vary", "Accept-Encoding")]
    encoding = environ.get("HTTP_ACCEPT_ENCODING")
    if encoding and len(body) >= GZIP_MIN_BYTES and accepts_gzip(encoding):
        body = gzip.compress(body, compresslevel=5, mtime=0)
        headers.append(("Content-Encoding", "gzip"))
    headers.append(("Content-Length", str(len(body))))
    return status, headers, body


def wsgi_body(body: Body, buffers: bool) -> list[Any]:
    """The WSGI iterable of a body. Our server (BUFFERS_KEY) writes parts and views as they are, without
    a copy; PEP 3333 asks for bytes, which other servers check: a view of a whole body gives that body,
    parts are joined (a since answer's copy, under another server only)."""
    parts = body if type(body) is tuple else (body,)
    if buffers:
        return list(parts)
    if len(parts) == 1 and type(parts[0]) is bytes:
        return [parts[0]]
    if len(parts) == 1 and isinstance(parts[0], memoryview) and parts[0].nbytes == len(parts[0].obj):
        return [parts[0].obj]
    return [b"".join(parts)]


def query_args(environ: Mapping[str, Any]) -> dict[str, list[str]]:
    """The query string's parameters, each with every value given, as werkzeug's `Request.args` reads them.

    Bytes that are not UTF-8 stay percent-encoded, whether they came percent-encoded or raw (werkzeug's
    "werkzeug.url_quote" error handler, registered when werkzeug.urls is imported; werkzeug itself fails
    on raw ones).
    """
    text = environ.get("QUERY_STRING", "")
    if not text.isascii():  # WSGI carries the raw bytes as latin-1
        text = text.encode("latin-1").decode("utf-8", "werkzeug.url_quote")
    return MultiDict(parse_qsl(text, keep_blank_values=True, errors="werkzeug.url_quote")).to_dict(flat=False)


def open_store(config: Config, gzip_later: bool = False) -> DataStore[Snapshot]:
    """The data of `config.data_dir`, loaded now (DataError if refused), as snapshots of everything served.

    With `gzip_later`, the first snapshot's data files are compressed after it is served (the caller starts
    `compress_late`): gzip of 100,000 reviews' files takes about a second. Reloads compress before the swap.
    """
    openapi = make_payload(encode_json(build_openapi(config.public_base_url)), JSON)  # the same for all

    def build(dataset: Any, later: bool = False) -> Snapshot:
        discovery = partial(discovery_documents, base_url=config.public_base_url)  # MCP's, per business
        return build_snapshot(dataset, config, openapi, gzip_later=later, documents=discovery)

    def derive_insights(reviews_content: bytes) -> bytes | None:
        from .analysis.derived import derived_insights

        content = derived_insights(reviews_content)
        if content is not None:
            log.warning(
                "%s has no insights.json: serving insights derived from reviews.json alone (counts, "
                "ratings, trend); run `reviewsd analyze --data-dir %s` for aspects, people and services",
                config.data_dir,
                config.data_dir,
                extra={"event": "insights_derived"},
            )
        return content

    return DataStore(
        config.data_dir,
        build,
        max_bytes=config.max_data_file_bytes,
        first_build=lambda dataset: build(dataset, later=gzip_later),
        derive_insights=derive_insights,
    )


def create_app(
    config: Config, gzip_later: bool = False, *, mcp_clock: Callable[[], float] = time.monotonic
) -> ReviewsApp:
    """The WSGI application for `config`: the one place its parts are made and handed what they need.

    The data is loaded, the MCP endpoint made, and (unless --no-hub) the hub started and following reloads,
    and with --notify the events (NotifyConfigError for a bad file, before anything starts).
    With `gzip_later`, compressing the first data files is the caller's to start (`app.compress_late()`).
    `mcp_clock` (the MCP session store's monotonic clock) is for tests.
    """
    notify = load_notify(config.notify) if config.notify else None
    store = open_store(config, gzip_later)
    trusted = parse_networks(config.trusted_proxies)
    gate = CostGate()  # one for the HTTP searches and the MCP tools that search
    mcp = McpEndpoint(McpServer(store, config), config, mcp_clock, gate)
    hub = start_hub(store, config, trusted) if config.hub else None
    notifier = start_notifier(store, config, notify) if notify is not None else None
    return ReviewsApp(config, store, trusted, mcp=mcp, hub=hub, notifier=notifier, gate=gate)


def check_main(argv: Sequence[str]) -> int:
    parser = Parser(
        prog=f"{PROG} check",
        formatter_class=HelpFormatter,
        description="Validate the data files of a directory (reviews.json and insights.json) as the "
        "server would, and business.toml as import and analyze would; print every problem as `file: "
        "JSON path: rule: message` (insights that no longer match the reviews too, with the command that "
        "refreshes them), and exit 0 when there is none, 1 otherwise.",
    )
    parser.add_argument(
        "--data-dir",
        default=str(resolve_data_dir(None, writes=False)),
        help="directory holding reviews.json and insights.json (REVIEWSD_DATA_DIR)",
    )
    parser.add_argument(
        "--max-data-file-bytes",
        type=int,
        metavar="BYTES",
        default=env_value("max_data_file_bytes", Config.max_data_file_bytes),
        help="largest data file loaded, as the server's option (REVIEWSD_MAX_DATA_FILE_BYTES)",
    )
    args = parser.parse_args(argv)
    problems = check_data_dir(args.data_dir, args.max_data_file_bytes)
    missing = missing_insights(args.data_dir)  # served with derived insights: say so, and what to run
    if missing and all(problem.file == missing[0].file for problem in problems):
        problems = [p for p in problems if p.file != missing[0].file] + missing
    problems += freshness_problems(args.data_dir) if not problems else profile_problems(args.data_dir)
    for name in dict.fromkeys(problem.file for problem in problems):  # a review export in place of our file?
        hint = import_hint(Path(args.data_dir) / name)
        if hint:
            print(f"{name}: {hint}")
    for problem in problems:
        print(problem)
        if problem.hint:
            print(f"  fix: {problem.hint}")
    note = placeholder_note(args.data_dir)
    if note:
        print(f"note: {note}")
    if problems:
        refused = [p for p in problems if p.file != "business.toml" and p.rule not in ("stale", "missing")]
        verdict = (
            "these files would be refused" if refused else "the server would serve these files as they are"
        )
        print(f"{args.data_dir}: {len(problems)} problem(s); {verdict}.", file=sys.stderr)
        return 1
    print(f"{args.data_dir}: OK")
    return 0


def log_refused_data(config: Config, exc: DataError) -> None:
    """Why the server cannot start: the data directory and every problem of its files."""
    log.error("cannot start: the data in %s is refused:", config.data_dir)
    for problem in exc.problems:
        log.error("  %s", problem)


def serve_main(argv: Sequence[str]) -> int:
    config = parse_config(argv)
    configure_logging(config.log_format)
    try:
        sock = server.listen(config.host, config.port)
    except OSError as exc:
        log.error(
            "cannot listen on %s:%s: %s%s",
            config.host,
            config.port,
            exc.strerror or exc,
            "; choose another port with --port or REVIEWSD_PORT" if exc.errno == errno.EADDRINUSE else "",
        )
        return 1
    # Absolute URLs must name the port really listened on (--port 0, socket activation).
    config = dataclasses.replace(config, port=sock.getsockname()[1])
    try:
        app = create_app(config, gzip_later=True)  # compressed after READY (on_ready below)
    except DataError as exc:
        log_refused_data(config, exc)
        sock.close()
        return 2
    except NotifyConfigError as exc:
        log.error("cannot start: %s", exc)
        sock.close()
        return 2
    app.store.start_polling(config.reload_interval)

    def on_stop() -> None:
        app.store.stop_polling()
        if app.hub is not None:
            app.hub.stop()
        if app.notifier is not None:
            app.notifier.stop()

    count = len(app.store.current.dataset.reviews)  # not the dataset itself: a reload must be able to free it
    return server.run(
        app,
        ServerOptions.from_config(config),
        on_reload=lambda: app.store.reload(force=True),
        on_stop=on_stop,
        on_ready=app.compress_late,
        ready_status=f"serving {count} reviews",
        sock=sock,
        reload_pending=hup_before_serving,
    )


COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "serve": serve_main,
    "check": check_main,
    "init": init_main,
    "import": import_main,
    "analyze": analyze_main,
    "sync": sync_main,
    "notify": notify_main,
}


def main() -> int:
    """`reviewsd [COMMAND] [OPTION ...]`: the command named first, `serve` when none is."""
    command = sys.argv[1] if sys.argv[1:2] and sys.argv[1] in COMMANDS else "serve"
    return COMMANDS[command](sys.argv[2:] if sys.argv[1:2] == [command] else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
