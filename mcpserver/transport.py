"""MCP over HTTP at POST /mcp: `McpEndpoint(server, config).handle(environ) -> (status, headers, body)` around
the pure `mcp_rpc.McpServer`. Origin (403), Content-Type (415), Accept (406) and body size (413) are checked
first; then the message picks its era ("a dual-era server selects its behavior from how the client opens", MCP
2026-07-28 basic/versioning): a stateless 2026-07-28 request, or a 2025 session, as docs/mcp.md tables them.
"""

from __future__ import annotations

import base64
import binascii
import functools
import time
from typing import Any, Callable, Mapping, Protocol, Sequence, TypeVar
from urllib.parse import urlsplit

from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header, parse_options_header

from .. import surface
from ..config import Config, client_group
from ..web.admission import BUSY_MESSAGE, RETRY_AFTER, Busy, CostGate, tool_is_expensive
from ..web.request_rules import BodyCut, BodyTooLarge, is_utf8_charset, origin, read_body
from ..web.responses import Triple, status_line
from .protocol import (
    LEGACY_VERSIONS,
    MODERN_VERSION,
    SUPPORTED_VERSIONS,
    EncodedJson,
    ErrorCode,
    Message,
    RpcError,
    RpcNotification,
    RpcRequest,
    RpcResponse,
    classify,
    encode_message,
    encode_response,
    parse,
    rpc_error,
)
from .sessions import Session, SessionStore

T = TypeVar("T")

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
NAME_SOURCES = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}  # what Mcp-Name mirrors

# Caching hints (server/utilities/caching; docs/mcp.md): a reload can swap the data at any moment, so a
# result built from it is stale at once (0); the lists of tools, prompts and templates change only with
# a new server build. Every result is the same for every caller (public, read-only data): "public".
STATIC_TTL_MS = 3_600_000
CACHE_TTL_MS = {
    "tools/list": STATIC_TTL_MS,
    "prompts/list": STATIC_TTL_MS,
    "resources/templates/list": STATIC_TTL_MS,
    "server/discover": 0,
    "resources/list": 0,
    "resources/read": 0,
}
_CACHE_FIELDS = {method: {"ttlMs": ttl, "cacheScope": "public"} for method, ttl in CACHE_TTL_MS.items()}


@functools.lru_cache(maxsize=64)
def _result_head(method: str, info: bytes) -> bytes:
    """The members 2026-07-28 adds to `method`'s result, encoded once per server info, as an object's head to
    splice in front of a pre-encoded result's members."""
    fields = {"resultType": "complete", "_meta": {SERVER_INFO_KEY: 0}, **_CACHE_FIELDS.get(method, {})}
    return encode_message(fields).replace(b":0}", b":" + info + b"}", 1)[:-1]


def header_version(environ: Mapping[str, Any]) -> str | None:
    value = environ.get("HTTP_MCP_PROTOCOL_VERSION")
    return None if value is None else value.strip()


def request_meta(message: Message) -> Mapping[str, Any]:
    params = message.params if isinstance(message, (RpcRequest, RpcNotification)) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else {}


def decode_header(value: str) -> str | None:
    """A header value as the client meant it: the `=?base64?...?=` form decoded; None if malformed.

    Header values reach us as latin-1 text; anything but visible ASCII, space and tab is invalid.
    """
    if any(not (" " <= c <= "~" or c == "\t") for c in value):
        return None
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= len("=?base64??="):
        try:
            return base64.b64decode(value[len("=?base64?") : -len("?=")], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
    return value


def check_modern_request(environ: Mapping[str, Any], message: RpcRequest, methods: Mapping[str, Any]) -> None:
    """The 2026-07-28 request rules, in the order docs/mcp.md gives; HttpRefusal on the first broken."""
    request_id, method = message.id, message.method
    if method not in methods:
        gone = (
            " (removed in 2026-07-28: send requests with _meta, no initialize)"
            if method in ("initialize", "ping", "logging/setLevel", "resources/subscribe")
            else ""
        )
        raise HttpRefusal(
            404,
            f"Method not found: {method}{gone}",
            request_id,
            ErrorCode.METHOD_NOT_FOUND,
            data={"method": method},
        )
    meta = request_meta(message)
    version = meta.get(META_VERSION)
    if not isinstance(version, str):
        raise HttpRefusal(
            400,
            f"Invalid params: params._meta must carry {META_VERSION} (a string) and "
            f"{META_CAPABILITIES} (an object)",
            request_id,
            ErrorCode.INVALID_PARAMS,
        )
    check_header(environ, "MCP-Protocol-Version", version, request_id)
    if version != MODERN_VERSION:
        legacy = (
            f"; {version} is served through initialize and a session" if version in LEGACY_VERSIONS else ""
        )
        raise HttpRefusal(
            400,
            f"Unsupported protocol version {version!r}{legacy}",
            request_id,
            ErrorCode.UNSUPPORTED_VERSION,
            data={"supported": list(SUPPORTED_VERSIONS), "requested": version},
        )
    if not isinstance(meta.get(META_CAPABILITIES), dict):
        raise HttpRefusal(
            400,
            f"Invalid params: params._meta must carry {META_CAPABILITIES} (an object)",
            request_id,
            ErrorCode.INVALID_PARAMS,
        )
    check_header(environ, "Mcp-Method", method, request_id)
    if method in NAME_SOURCES:
        body_name = message.params.get(NAME_SOURCES[method]) if isinstance(message.params, dict) else None
        check_header(environ, "Mcp-Name", body_name, request_id, decode_header)


def check_header(
    environ: Mapping[str, Any],
    header: str,
    body: Any,
    request_id: Any,
    decode: Callable[[str], str | None] = str,
) -> None:
    """HeaderMismatch unless the header, stripped (and decoded), is the value the body gives."""
    value = environ.get("HTTP_" + header.upper().replace("-", "_"))
    if value is None or decode(value.strip()) != body:
        said = "missing" if value is None else f"{value.strip()!r}"
        raise HttpRefusal(
            400,
            f"Header mismatch: {header} header {said} does not match the body's {body!r}",
            request_id,
            ErrorCode.HEADER_MISMATCH,
        )


def modern_result(
    method: str, result: dict[str, Any] | EncodedJson, info: Mapping[str, Any], info_json: bytes
) -> dict[str, Any] | EncodedJson:
    """A result as 2026-07-28 writes it: resultType, serverInfo (`info`, encoded as `info_json`), and caching
    hints where the revision wants them."""
    if not isinstance(result, EncodedJson):
        meta = {"resultType": "complete", "_meta": {SERVER_INFO_KEY: info}}
        return {**result, **meta, **_CACHE_FIELDS.get(method, {})}
    head = _result_head(method, info_json)
    return EncodedJson(head + b"}" if result == b"{}" else head + b"," + result[1:])


class HttpRefusal(RpcError):
    """A request the transport refuses before dispatch: a JSON-RPC error with its HTTP status and headers."""

    def __init__(
        self,
        status: int,
        message: str,
        request_id: Any = None,
        code: ErrorCode = ErrorCode.TRANSPORT,
        headers: Sequence[tuple[str, str]] = (),
        data: Any = None,
    ):
        super().__init__(code, message, data, request_id)
        self.status, self.headers = status, headers


def origin_of(url: str, with_path: bool = False) -> str | None:
    """`scheme://host[:port]` in lower case without the default port; None if `url` is not an http(s) origin.

    An Origin header has no path; a configured URL (`with_path`) may have one, which is ignored.
    """
    try:
        parts = urlsplit(url.strip())
        if not with_path and (parts.path not in ("", "/") or parts.query or parts.fragment):
            return None
        return origin(parts)
    except ValueError:
        return None


class Dispatcher(Protocol):
    """What the transport needs of the JSON-RPC methods (mcp_rpc.McpServer is one): answer a message."""

    modern_methods: Mapping[str, Any]  # the methods a 2026-07-28 request may call

    store: Any  # its `current` snapshot: an answer takes it once and reads only it

    def handle(self, session: Session, message: Message, snapshot: Any = None) -> dict[str, Any] | None: ...

    def server_info(self, version: str, snapshot: Any) -> dict[str, Any]: ...

    def server_info_json(self, snapshot: Any) -> bytes: ...


class McpEndpoint:
    """POST/DELETE /mcp: the transport rules around a Dispatcher (mcp_rpc.McpServer)."""

    def __init__(
        self,
        server: Dispatcher,
        config: Config,
        clock: Callable[[], float] = time.monotonic,
        gate: CostGate | None = None,
    ):
        self.server = server
        self.gate = gate if gate is not None else CostGate()  # the app's: one gate for HTTP and MCP searches
        self.sessions = SessionStore(config.mcp_max_sessions, config.mcp_session_idle, clock)
        self.max_body = config.max_body
        self.client_prefix_v6 = config.client_prefix_v6
        # Origins allowed to call /mcp: the public base URL's, loopback on any port, and configured extras.
        extra = [v.strip() for v in config.mcp_allowed_origins.split(",") if v.strip()]
        self.origins = {
            o for o in (origin_of(url, with_path=True) for url in [config.public_base_url, *extra]) if o
        }
        self.any_origin = "*" in extra

    def allows_origin(self, origin: str) -> bool:
        if self.any_origin:
            return origin.strip() != "null"
        normal = origin_of(origin)
        return normal is not None and (
            normal in self.origins or urlsplit(normal).hostname in ("localhost", "127.0.0.1", "::1")
        )

    def handle(self, environ: dict) -> Triple:
        try:
            origin = environ.get("HTTP_ORIGIN")
            if origin is not None and not self.allows_origin(origin):
                raise HttpRefusal(403, f"Origin {origin!r} is not allowed to use this MCP endpoint")
            if environ["REQUEST_METHOD"] == "POST":
                return self.post(environ)
            if environ["REQUEST_METHOD"] == "DELETE":
                return self.delete(environ)
            raise HttpRefusal(
                405,
                "Method not allowed: POST JSON-RPC messages here, DELETE ends a session "
                "(this server offers no SSE stream)",
                headers=[("Allow", "DELETE, OPTIONS, POST")],
            )
        except HttpRefusal as refusal:
            code = refusal.code
            if code == ErrorCode.TRANSPORT and header_version(environ) == MODERN_VERSION:
                code = ErrorCode.INVALID_REQUEST  # 2026-07-28: no new use of the legacy -32000..-32019 range
            body = rpc_error(refusal.request_id, code, refusal.message, refusal.data)
            return json_response(body, refusal.status, refusal.headers)

    def post(self, environ: dict) -> Triple:
        check_content_type(environ.get("CONTENT_TYPE", ""))
        check_accept(environ.get("HTTP_ACCEPT", ""))
        body = self.read_body(environ)
        try:
            message = classify(parse(body))
        except RpcError as error:
            raise HttpRefusal(400, error.message, error.request_id, error.code) from None
        if META_VERSION in request_meta(message) or header_version(environ) == MODERN_VERSION:  # 2026-07-28
            return self.post_modern(environ, message)
        if isinstance(message, RpcRequest) and message.method == "initialize":
            return self.initialize(environ, message)
        # A refusal answers a request by its id; a notification or a client response gets one without.
        request_id = message.id if isinstance(message, RpcRequest) else None
        session = self.sessions.get(
            session_header(
                environ,
                request_id,
                "send initialize first, then the session id from its response on every request",
            )
        )
        if session is None:
            raise HttpRefusal(
                404,
                "Unknown or ended session: send initialize (without Mcp-Session-Id) to start a new one",
                request_id,
            )
        snapshot = self.server.store.current  # once: priced and answered on one version
        reply = self.metered(
            environ, message, snapshot, lambda: self.server.handle(session, message, snapshot)
        )
        return json_response(reply, 200) if reply is not None else empty_response(202)

    def initialize(self, environ: dict, message: RpcRequest) -> Triple:
        if environ.get("HTTP_MCP_SESSION_ID"):
            raise HttpRefusal(
                400, "initialize starts a new session: send it without Mcp-Session-Id", message.id
            )
        client = environ.get("reviewsd.client") or environ.get("REMOTE_ADDR") or ""
        session = Session(client=client_group(client, self.client_prefix_v6))
        reply = self.server.handle(session, message)
        if reply is None or "error" in reply:  # None never happens for a request; it keeps the types honest
            return json_response(reply, 200)
        return json_response(reply, 200, [("Mcp-Session-Id", self.sessions.add(session))])

    def post_modern(self, environ: dict, message: Message) -> Triple:
        """One 2026-07-28 message: checked, answered and forgotten (no session)."""
        if isinstance(message, RpcResponse):
            raise HttpRefusal(
                400,
                "Invalid Request: a 2026-07-28 client sends no responses",
                None,
                ErrorCode.INVALID_REQUEST,
            )
        if isinstance(message, RpcNotification):
            return empty_response(202)  # 2026-07-28 defines none over HTTP; accepted and ignored
        check_modern_request(environ, message, self.server.modern_methods)
        snapshot = self.server.store.current  # once: the result and the serverInfo beside it are one version
        reply = self.metered(
            environ,
            message,
            snapshot,
            lambda: self.server.handle(Session(protocol_version=MODERN_VERSION), message, snapshot),
        )
        if reply is not None and "result" in reply:
            info = self.server.server_info(MODERN_VERSION, snapshot)
            info_json = self.server.server_info_json(snapshot)
            reply["result"] = modern_result(message.method, reply["result"], info, info_json)
        return json_response(reply, 200)

    def metered(
        self, environ: Mapping[str, Any], message: Message, snapshot: Any, handle: Callable[[], T]
    ) -> T:
        """`handle()` now, or for a search tool priced expensive on `snapshot` (web/admission.py, as HTTP's
        search) in a turn of the cost gate's; 503 with Retry-After if none comes soon."""
        expensive = (
            isinstance(message, RpcRequest)
            and message.method == "tools/call"
            and isinstance(message.params, dict)
            and tool_is_expensive(
                message.params.get("name"),
                message.params.get("arguments"),
                len(snapshot.dataset.reviews),
            )
        )
        if not expensive:
            return handle()
        address = environ.get("reviewsd.client") or environ.get("REMOTE_ADDR") or ""
        try:
            return self.gate.run(client_group(address, self.client_prefix_v6), handle)
        except Busy:
            request_id = message.id if isinstance(message, RpcRequest) else None
            raise HttpRefusal(503, BUSY_MESSAGE, request_id, headers=[("Retry-After", RETRY_AFTER)]) from None

    def read_body(self, environ: dict) -> bytes:
        """At most max_body bytes: Content-Length is checked first, and the read itself is bounded, to
        Content-Length or, on a stream the server terminates itself (a chunked body), to max_body + 1."""
        try:
            return read_body(environ, self.max_body)
        except BodyTooLarge:
            raise HttpRefusal(413, f"Request body larger than {self.max_body} bytes") from None
        except BodyCut:
            raise HttpRefusal(400, "Request body ended before Content-Length bytes") from None

    def delete(self, environ: dict) -> Triple:
        if not self.sessions.end(session_header(environ, None, "name the session to end")):
            raise HttpRefusal(404, "Unknown or ended session")
        return empty_response(204)


def session_header(environ: dict, request_id: Any, missing: str) -> str:
    """A 2025 message's Mcp-Session-Id, once its MCP-Protocol-Version, if it has one, is a version that
    initialize negotiates."""
    version = header_version(environ)
    if version is not None and version not in LEGACY_VERSIONS:
        raise HttpRefusal(
            400,
            f"Unsupported MCP-Protocol-Version {version!r} in a session; supported: "
            f"{', '.join(LEGACY_VERSIONS)} (2026-07-28 needs no session: send its _meta)",
            request_id,
        )
    session_id = environ.get("HTTP_MCP_SESSION_ID", "").strip()
    if not session_id:
        raise HttpRefusal(400, f"Missing Mcp-Session-Id header: {missing}", request_id)
    return session_id


# A client sends the same Content-Type and Accept on every request: parsing them is a large share of
# a small call, so a value that passes is remembered (bounded: headers are client input; a refusal raises,
# which lru_cache does not keep).


@functools.lru_cache(maxsize=256)
def check_content_type(value: str) -> None:
    mimetype, options = parse_options_header(value)
    if mimetype.lower() != "application/json" or not is_utf8_charset(options):
        raise HttpRefusal(415, "Content-Type must be application/json (UTF-8)")


@functools.lru_cache(maxsize=256)
def check_accept(value: str) -> None:
    """Lenient: no or an empty Accept, */*, application/* or application/json will do (SSE is never used)."""
    if value and parse_accept_header(value, MIMEAccept).quality("application/json") <= 0:
        raise HttpRefusal(
            406,
            "This endpoint answers application/json; include it in Accept "
            "(MCP clients send: application/json, text/event-stream)",
        )


MCP_HEADERS = list(surface.MCP_HEADERS)


# Plain WSGI answers, not werkzeug Responses: an MCP call is small, and building and serialising a Response
# object cost a measurable share of it.
def json_response(
    message: Mapping[str, Any] | None, status: int, headers: Sequence[tuple[str, str]] = ()
) -> Triple:
    body = encode_response(message) if message is not None else b""
    return (
        status_line(status),
        [*MCP_HEADERS, *headers, ("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        body,
    )


def empty_response(status: int) -> Triple:
    """No body and no Content-Type; a 204 carries no Content-Length either (RFC 9110)."""
    return status_line(status), [*MCP_HEADERS, *([] if status == 204 else [("Content-Length", "0")])], b""
