"""MCP server at POST /mcp: the JSON-RPC methods, 2026-07-28 (stateless) and the 2025 sessions.

`McpServer.handle(session, message)` looks the method up, calls it and wraps the result, with no I/O;
method errors become JSON-RPC error objects there and only there. The wire vocabulary (versions, error
codes, parsing, encoding) is mcpserver/protocol.py, the tools mcpserver/tools.py, prompts and completion
mcpserver/prompts.py, the HTTP layer (Origin, media types, body size, sessions by header, the 2026-07-28
per-request rules) mcpserver/transport.py. Every tool and resource reads the store's current snapshot when
it is called, so after a data reload the next call sees the new data. Choices where the specifications
leave room: docs/internals.md ("MCP"), `protocol.valid_id` (which request ids we take) and
`McpServer.call_tool` (which errors are tool results).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any, Callable

from .config import Config
from .mcpserver import app, prompts
from .mcpserver.card import RESOURCES, encoded_server_info, prompt_list, server_info, tool_list
from .mcpserver.prompts import REVIEW_PATH, PromptError
from .mcpserver.protocol import (
    CAPABILITIES,
    HEADER_DEFAULT_VERSION,
    LATEST_VERSION,
    LEGACY_VERSIONS,
    MODERN_CAPABILITIES,
    MODERN_VERSION,
    SUPPORTED_VERSIONS,
    EncodedJson,
    ErrorCode,
    Message,
    RpcError,
    RpcRequest,
    encode_message,
    encoded,
    json_string,
    rpc_error,
)
from .mcpserver.sessions import Session
from .mcpserver.tools import TOOLS, BusinessWords, ToolError, ToolOutput, resource_link, run_tool
from .reviews.dataset import Dataset
from .reviews.datastore import DataStore
from .reviews.search import InvalidParams
from .web.snapshot import Snapshot

log = logging.getLogger("reviewsd.mcp")


def _client_capabilities(params: Any) -> Any:
    """A 2026-07-28 request's client capabilities (its _meta), or None."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("io.modelcontextprotocol/clientCapabilities") if isinstance(meta, dict) else None


@dataclass(frozen=True)
class Call:
    """One message being answered: its session and the one snapshot every part of the answer reads (a reload
    meanwhile swaps the store's current one, never this)."""

    session: Session
    snapshot: Snapshot
    apps: bool = False  # the client offered the MCP Apps extension: tools name the app, which it may read

    @property
    def dataset(self) -> Any:
        return self.snapshot.dataset

    @property
    def words(self) -> BusinessWords:
        return BusinessWords.of(self.snapshot.dataset)


class McpServer:
    """JSON-RPC methods over the app's current data: `handle(session, message)` with no I/O."""

    def __init__(self, store: DataStore[Snapshot], config: Config):
        self.store = store
        self.config = config
        common: dict[str, Callable[[Call, Any], Any]] = {
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
            "resources/list": self.list_resources,
            "resources/templates/list": self.list_resource_templates,
            "resources/read": self.read_resource,
            "prompts/list": self.list_prompts,
            "prompts/get": self.get_prompt,
            "completion/complete": self.complete,
        }
        self.methods = {"initialize": self.initialize, "ping": self.ping, **common}  # a 2025 session's
        # 2026-07-28 removed initialize and ping (and logging/setLevel and resources/subscribe, which are
        # never served here).
        self.modern_methods = {"server/discover": self.discover, **common}

    @property
    def base_url(self) -> str:
        """Read per call: a server that binds port 0 may settle the public URL after start-up."""
        return self.config.public_base_url

    @property
    def review_template(self) -> str:
        return self.base_url + REVIEW_PATH + "{id}"

    def handle(
        self, session: Session, message: Message, snapshot: Snapshot | None = None
    ) -> dict[str, Any] | None:
        """The one place where method errors become JSON-RPC error responses; a result may be EncodedJson.
        Every part of the answer reads `snapshot` (the store's current one when none is given)."""
        if not isinstance(message, RpcRequest):  # a notification or a client's response: nothing to do
            return None
        method = (self.modern_methods if session.modern else self.methods).get(message.method)
        params = {} if message.params is None else message.params
        try:
            if method is None:
                raise RpcError(
                    ErrorCode.METHOD_NOT_FOUND,
                    f"Method not found: {message.method}",
                    {"method": message.method},
                )
            if not isinstance(params, dict):  # MCP methods take named parameters only
                raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid params: params must be an object")
            if message.method.endswith("/list") and params.get("cursor") is not None:
                # Every list fits in one page, so any cursor is one we never issued.
                raise RpcError(
                    ErrorCode.INVALID_PARAMS, "Invalid params: unknown cursor (every list has one page)"
                )
            apps = session.apps or (session.modern and app.offered(_client_capabilities(params)))
            call = Call(session, snapshot if snapshot is not None else self.store.current, apps)
            return {"jsonrpc": "2.0", "id": message.id, "result": method(call, params)}
        except RpcError as error:
            return rpc_error(message.id, error.code, error.message, error.data)
        except PromptError as error:
            return rpc_error(message.id, ErrorCode.INVALID_PARAMS, error.message, error.data)
        except Exception:
            log.exception("MCP method %s failed", message.method, extra={"event": "mcp_internal_error"})
            return rpc_error(message.id, ErrorCode.INTERNAL_ERROR, "Internal error")

    def initialize(self, call: Call, params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                "Invalid params: protocolVersion must be a string",
                {"supported": list(LEGACY_VERSIONS)},
            )
        for name in ("capabilities", "clientInfo"):
            if name in params and not isinstance(params[name], dict):
                raise RpcError(ErrorCode.INVALID_PARAMS, f"Invalid params: {name} must be an object")
        session = call.session
        session.protocol_version = requested if requested in LEGACY_VERSIONS else LATEST_VERSION
        session.apps = app.offered(params.get("capabilities"))
        return {
            "protocolVersion": session.protocol_version,
            "capabilities": {**CAPABILITIES, **app.server_extension()} if session.apps else CAPABILITIES,
            "serverInfo": self.server_info(session.protocol_version, call.snapshot),
            "instructions": self.instructions(call.snapshot),
        }

    @staticmethod
    def ping(call: Call, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    def discover(self, call: Call, params: dict[str, Any]) -> dict[str, Any]:
        """server/discover (2026-07-28): versions, capabilities, instructions (+ serverInfo: transport)."""
        return {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": {**MODERN_CAPABILITIES, **app.server_extension()}
            if call.apps
            else MODERN_CAPABILITIES,
            "instructions": self.instructions(call.snapshot),
        }

    def server_info(self, version: str, snapshot: Snapshot) -> dict[str, Any]:
        """serverInfo in the words of the business served, with what `version`'s Implementation admits."""
        dataset = snapshot.dataset
        return server_info(BusinessWords.of(dataset), dataset.business.get("url"), version)

    def server_info_json(self, snapshot: Snapshot) -> bytes:
        """The 2026-07-28 serverInfo, encoded (once per business: results splice it in)."""
        dataset = snapshot.dataset
        return encoded_server_info(BusinessWords.of(dataset), dataset.business.get("url"), MODERN_VERSION)

    def instructions(self, snapshot: Snapshot) -> str:
        words = BusinessWords.of(snapshot.dataset)
        return (
            f"Read-only, public data about {words.name}: customer reviews ({words.sources}) and their "
            "analysis. "
            "Start with get_insights_summary (overall picture, valid aspect/practitioner/service names) or "
            "get_business; use search_reviews to find reviews (filters combine with AND, newest first; "
            "sort and next_cursor for more), search and fetch for free text, and get_review for one review "
            "by id. Results fit an assistant's context: follow next_cursor for more. Nothing can be changed "
            "through this server."
        )

    def list_tools(self, call: Call, params: dict[str, Any]) -> dict[str, Any]:
        tools = tool_list(call.words)
        return {"tools": [app.with_app(tool) for tool in tools] if call.apps else tools}

    def call_tool(self, call: Call, params: dict[str, Any]) -> dict[str, Any] | EncodedJson:
        """Arguments that fail the tool's inputSchema, and values that name nothing in the data, are tool
        execution errors: a result with `isError: true` whose text lists every problem and the valid
        choices, so a model can correct itself (docs/mcp.md; MCP 2025-11-25 says the same of input
        validation errors). A malformed request (params not an object, name missing or unknown, arguments
        not an object) is -32602."""
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                "Invalid params: name must be a string naming a tool",
                {"tools": list(TOOLS)},
            )
        if name not in TOOLS:
            raise RpcError(
                ErrorCode.INVALID_PARAMS,
                f"Unknown tool: {name}; known tools: {', '.join(TOOLS)}",
                {"tool": name, "tools": list(TOOLS)},
            )
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid params: arguments must be an object")
        dataset = call.dataset  # the answer's one snapshot: one call never mixes two data versions
        try:
            output = run_tool(name, dataset, arguments, self.base_url)
        except InvalidParams as exc:
            lines = "".join(f"\n- {i['message']}" for i in exc.issues)
            lines += f"\n- and {exc.more} more" if exc.more else ""
            return tool_error(f"Invalid arguments for {name}; fix these and call again:{lines}")
        except ToolError as exc:
            return tool_error(str(exc))
        # resource_link content arrived with 2025-06-18: a 2025-03-26 client gets the text block alone
        legacy = call.session.protocol_version == HEADER_DEFAULT_VERSION
        links = [] if legacy else self.links(dataset, output)
        return tool_result(encoded(output.structured), links)

    def links(self, dataset: Any, output: ToolOutput) -> list[dict[str, Any]]:
        """A resource_link to each review the result lists (its resource template's URI)."""
        return [resource_link(self.base_url, dataset.ids[pos]) for pos in output.listed]

    def list_resources(self, call: Call, params: dict[str, Any]) -> dict[str, Any]:
        payloads = call.snapshot.payloads
        return {
            "resources": [
                {
                    "uri": self.base_url + path,
                    "name": name,
                    "title": title,
                    "description": description,
                    "mimeType": "application/json",
                    "size": len(payloads[path].identity.body),
                }
                for path, (name, title, description) in RESOURCES.items()
            ]
            + ([app.resource_entry()] if call.apps else [])
        }

    def list_resource_templates(self, call: Call, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "resourceTemplates": [
                {
                    "uriTemplate": self.review_template,
                    "name": "review",
                    "title": "One review",
                    "description": "A single review by its id (ULID), as served by GET /api/reviews/{id}.",
                    "mimeType": "application/json",
                }
            ]
        }

    def read_resource(self, call: Call, params: dict[str, Any]) -> EncodedJson:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid params: uri must be a string")
        snapshot = call.snapshot
        if uri == app.APP_URI:  # the MCP App's document, made from this snapshot
            html = app_document(snapshot.dataset, self.base_url)
            return {
                "contents": [
                    {"uri": uri, "mimeType": app.MIME_TYPE, "text": html, "_meta": app.RESOURCE_META}
                ]
            }
        path = uri[len(self.base_url) :] if uri.startswith(self.base_url + "/") else ""
        # A path not under REVIEW_PATH keeps its leading "/" (or is empty), and no review id is either.
        position = snapshot.dataset.position_of.get(path.removeprefix(REVIEW_PATH))
        if path in RESOURCES:
            body = snapshot.payloads[path].identity.body
            limit = self.config.mcp_max_resource_bytes
            if len(body) > limit:  # as a JSON string in a message, several times its size while it is made
                raise RpcError(
                    ErrorCode.INVALID_PARAMS,
                    f"Resource too large to read over MCP ({len(body)} bytes, more than {limit}): "
                    f"GET {uri} over HTTP instead, or use the search_reviews and get_reviews_since tools",
                    {"uri": uri, "size": len(body), "limit": limit},
                )
        elif position is not None:
            body = snapshot.dataset.review_json(position)
        else:  # 2026-07-28 says -32602 where the 2025 revisions said -32002
            code = ErrorCode.INVALID_PARAMS if call.session.modern else ErrorCode.RESOURCE_NOT_FOUND
            raise RpcError(code, "Resource not found", {"uri": uri})
        # Spliced as bytes, not decoded to a str and encoded again: the text is made once.
        return EncodedJson(
            b'{"contents":[{"uri":%s,"mimeType":"application/json","text":%s}]}'
            % (encode_message(uri), json_string(body))
        )

    def list_prompts(self, call: Call, params: dict[str, Any]) -> dict[str, Any]:
        return {"prompts": prompt_list(call.words)}

    def get_prompt(self, call: Call, params: dict[str, Any]) -> dict[str, Any]:
        return prompts.get_prompt(call.dataset, self.base_url, params)

    def complete(self, call: Call, params: dict[str, Any]) -> dict[str, Any]:
        return prompts.complete(call.dataset, self.review_template, params)


def app_document(dataset: Dataset, base_url: str) -> str:
    """The app's HTML for a dataset, made once per dataset and base URL (its charts are rendered then)."""
    return dataset.derived(_app_maker(base_url))


@functools.lru_cache(maxsize=8)  # one per server's base URL: the same function each time, for Dataset.derived
def _app_maker(base_url: str) -> Callable[[Dataset], str]:
    return lambda dataset: app.app_html(dataset, base_url)


def tool_result(structured: EncodedJson, links: list[dict[str, Any]] = ()) -> EncodedJson:
    """A successful tools/call result: structuredContent, the same JSON as text, then resource links."""
    more = b"".join(b"," + encode_message(link) for link in links)
    return EncodedJson(
        b'{"content":[{"type":"text","text":%s}%s],"structuredContent":%s,"isError":false}'
        % (json_string(structured), more, structured)
    )


def tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}
