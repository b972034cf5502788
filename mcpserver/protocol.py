"""The JSON-RPC 2.0 and MCP vocabulary: protocol versions, error codes, message shapes, parsing and encoding.

Pure, no I/O: `parse` a body, `classify` the envelope into a message, `encode_response` an answer.
Errors are `RpcError` values with named `ErrorCode`s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Mapping

from ..reviews.dataset import encode_json, loads_data

MODERN_VERSION = "2026-07-28"  # stateless: version and capabilities in every request's _meta
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")  # initialize and a session; newest first
LATEST_VERSION = LEGACY_VERSIONS[0]  # what initialize answers to a version we do not speak
SUPPORTED_VERSIONS = (MODERN_VERSION, *LEGACY_VERSIONS)  # server/discover's supportedVersions
HEADER_DEFAULT_VERSION = "2025-03-26"  # what an absent MCP-Protocol-Version header means
# serverInfo's fixed part; mcp_rpc.server_info adds a title and description naming the business served.
SERVER_INFO = {"name": "reviewsd", "title": "Reviews and insights (read-only)", "version": "1.0.0"}
CAPABILITIES = {
    "tools": {"listChanged": False},
    "resources": {"subscribe": False, "listChanged": False},
    "prompts": {"listChanged": False},
    "completions": {},
}
MODERN_CAPABILITIES = {
    **CAPABILITIES,
    "resources": {"listChanged": False},
}  # 2026-07-28 removed resources/subscribe


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    TRANSPORT = -32000  # refused by the HTTP layer in a 2025 session; the HTTP status says why
    RESOURCE_NOT_FOUND = -32002  # MCP 2025-06-18 and 2025-11-25, server/resources (2026-07-28: -32602)
    HEADER_MISMATCH = -32020  # MCP 2026-07-28: an MCP header missing, malformed or not matching the body
    UNSUPPORTED_VERSION = -32022  # MCP 2026-07-28: UnsupportedProtocolVersionError


class RpcError(Exception):
    """A JSON-RPC error as a value: code, message, optional data, and the request id if it was read."""

    def __init__(self, code: ErrorCode, message: str, data: Any = None, request_id: Any = None):
        super().__init__(message)
        self.code, self.message, self.data, self.request_id = code, message, data, request_id


def rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def encode_message(message: Any) -> bytes:
    """Compact UTF-8 JSON; \\u escapes when a string holds a lone surrogate (valid JSON, not UTF-8)."""
    try:
        return encode_json(message)
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode("ascii")


class EncodedJson(bytes):
    """A JSON value already encoded (compact UTF-8), spliced into a message as is.

    A tool result's reviews are cut from the pre-encoded /reviews.json body, and the result is written once
    as bytes instead of being encoded for structuredContent, again for the text block and a third time for
    the envelope.
    """


def encoded(value: Any) -> EncodedJson:
    return value if isinstance(value, EncodedJson) else EncodedJson(encode_message(value))


_CONTROL_CHARACTERS = bytes(range(0x20))


def json_string(text: bytes) -> bytes:
    """The JSON string literal whose content is the UTF-8 `text` (a text block carrying JSON).

    Text without raw control characters (JSON written by `json` has none: it escapes them inside strings)
    needs only backslashes and quotes escaped: two `bytes.replace` passes, several times faster than
    decoding the text and encoding it as a string.
    """
    if len(text.translate(None, _CONTROL_CHARACTERS)) != len(text):
        return encode_message(text.decode("utf-8"))
    return b'"' + text.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def with_reviews(fields: Mapping[str, Any], reviews: bytes) -> EncodedJson:
    """The object `fields` plus `"reviews": [...]` from comma-separated pre-encoded reviews."""
    head = encode_message(fields)[:-1] + (b"," if fields else b"")
    return EncodedJson(head + b'"reviews":[' + reviews + b"]}")


def encode_response(response: Mapping[str, Any]) -> bytes:
    """A response message on the wire; a pre-encoded result is spliced in, not decoded and encoded again."""
    result = response.get("result")
    if not isinstance(result, EncodedJson):
        return encode_message(response)
    request_id = response["id"]
    encoded_id = b"%d" % request_id if type(request_id) is int else encode_message(request_id)
    return b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (encoded_id, result)


@dataclass(frozen=True)
class RpcRequest:
    id: str | int
    method: str
    params: Any


@dataclass(frozen=True)
class RpcNotification:
    method: str
    params: Any


@dataclass(frozen=True)
class RpcResponse:
    """A response the client sent us (we never send requests, so it is only acknowledged)."""

    id: Any


Message = RpcRequest | RpcNotification | RpcResponse


def parse(body: bytes) -> Any:
    try:
        return loads_data(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise RpcError(ErrorCode.PARSE_ERROR, "Parse error: the body is not UTF-8") from None
    except (ValueError, RecursionError):  # JSONDecodeError, NaN/Infinity, over-long integers, deep nesting
        raise RpcError(ErrorCode.PARSE_ERROR, "Parse error: the body is not valid JSON") from None


def valid_id(value: Any) -> bool:
    """Strings and integers. Not null (MCP forbids it), booleans, or numbers with a fraction or exponent
    (1.5, 1.0, 1e3: JSON-RPC says ids SHOULD NOT have fractions): those are -32600 Invalid Request."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(value: Any) -> Message:
    """Check the JSON-RPC 2.0 envelope of one parsed message; RpcError(-32600) if it is not one."""
    if isinstance(value, list):
        raise RpcError(
            ErrorCode.INVALID_REQUEST,
            "Invalid Request: batches are not supported (MCP 2025-06-18 "
            "removed JSON-RPC batching); send one message per POST",
        )
    if not isinstance(value, dict):
        raise RpcError(ErrorCode.INVALID_REQUEST, "Invalid Request: a JSON-RPC message must be a JSON object")
    request_id = value.get("id") if valid_id(value.get("id")) else None

    def invalid(why: str) -> RpcError:
        return RpcError(ErrorCode.INVALID_REQUEST, f"Invalid Request: {why}", request_id=request_id)

    if value.get("jsonrpc") != "2.0":
        raise invalid('"jsonrpc" must be exactly "2.0"')
    if "method" not in value:  # a response from the client
        if ("result" in value) == ("error" in value):
            raise invalid('a request needs "method"; a response needs exactly one of "result" and "error"')
        if "id" not in value or not (value["id"] is None or valid_id(value["id"])):
            raise invalid('a response needs an "id" that is a string, an integer or null')
        return RpcResponse(value["id"])
    if not isinstance(value["method"], str):
        raise invalid('"method" must be a string')
    params = value.get("params")
    if "params" in value and not isinstance(params, (dict, list)):
        raise invalid('"params" must be an object or an array')
    if "id" not in value:
        return RpcNotification(value["method"], params)
    if not valid_id(value["id"]):
        raise invalid('"id" must be a string or an integer (not null, a boolean or a fraction)')
    return RpcRequest(value["id"], value["method"], params)
