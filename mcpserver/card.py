"""How the MCP server describes itself: serverInfo, the tool and prompt lists in the words of the business
served, and the server card (SEP-2127) with the AI Catalog that lists it, for discovery before connecting.

Pure functions of the business block and the public base URL; cached per business, since a reload rarely
changes it.
"""

from __future__ import annotations

import base64
import functools
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..reviews.dataset import Dataset, encode_json
from ..surface import AI_CATALOG, INSIGHTS_JSON, MCP, OPENAPI, REVIEWS_JSON, SERVER_CARDS
from ..web.payloads import JSON
from ..web.snapshot import Document
from . import prompts
from .protocol import MODERN_CAPABILITIES, MODERN_VERSION, SERVER_INFO, SUPPORTED_VERSIONS, encode_message
from .tools import TOOLS, BusinessWords

SERVER_CARD_PATHS, AI_CATALOG_PATH = SERVER_CARDS, AI_CATALOG  # the names callers used before surface.py
SERVER_CARD = "application/mcp-server-card+json"
SERVER_CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
# The MCP resources: path under the public base URL -> (name, title, description).
RESOURCES = {
    REVIEWS_JSON: (
        "reviews.json",
        "Reviews dataset",
        "The business, its aggregate rating and every review, newest first.",
    ),
    INSIGHTS_JSON: (
        "insights.json",
        "Insights dataset",
        "Aspect-based sentiment, technicians, services, topics, monthly trend, per-review "
        "mentions, FAQ and an editorial summary.",
    ),
}


def resource_entries(base_url: str) -> list[dict[str, Any]]:
    """The resources as resources/list names them (without their sizes, which change with the data)."""
    return [
        {
            "uri": base_url + path,
            "name": name,
            "title": title,
            "description": description,
            "mimeType": "application/json",
        }
        for path, (name, title, description) in RESOURCES.items()
    ]


@functools.lru_cache(maxsize=8)
def tool_list(words: BusinessWords) -> list[dict[str, Any]]:
    """tools/list's tools, described in the words of the business (made once per business name)."""
    return [tool.definition(words) for tool in TOOLS.values()]


@functools.lru_cache(maxsize=8)
def prompt_list(words: BusinessWords) -> list[dict[str, Any]]:
    return [prompt.definition(words) for prompt in prompts.PROMPTS.values()]


# An icon every client can show (MCP asks clients to render PNG and JPEG, SHOULD SVG): a star, inline.
ICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path fill="#f5a623" d="M12 2l3 6.9 7.5.6'
    '-5.7 4.9 1.8 7.3L12 17.8 5.4 21.7l1.8-7.3L1.5 9.5 9 8.9z"/></svg>'
)
ICONS = [
    {
        "src": "data:image/svg+xml;base64," + base64.b64encode(ICON_SVG.encode()).decode(),
        "mimeType": "image/svg+xml",
        "sizes": ["any"],
    }
]
# Implementation.description, websiteUrl and icons arrived with 2025-11-25 (and stay in 2026-07-28).
RICH_INFO_VERSIONS = frozenset({MODERN_VERSION, "2025-11-25"})


@functools.lru_cache(maxsize=32)
def server_info(words: BusinessWords, website: str | None, version: str) -> dict[str, Any]:
    """serverInfo: this server's name and version, a title and description naming the business served."""
    info = {
        **SERVER_INFO,
        "title": f"{words.name}: reviews and insights (read-only)",
    }
    if version in RICH_INFO_VERSIONS:
        info["description"] = (
            f"Customer reviews of {words.name} ({words.category}; {words.sources}) and their analysis: "
            f"search, sentiment by aspect, {words.people} and services, rating trend. Read-only."
        )
        if website:
            info["websiteUrl"] = website
        info["icons"] = ICONS
    return info


@functools.lru_cache(maxsize=8)
def encoded_server_info(words: BusinessWords, website: str | None, version: str) -> bytes:
    return encode_message(server_info(words, website, version))


CARD_DESCRIPTION_LIMIT = 100  # characters: the MCP Registry's server.json schema allows no more


def card_description(name: str) -> str:
    """The server card's description: the business and what is offered, within the registry's limit."""
    for description in (
        f"Customer reviews of {name}: search, sentiment by aspect, rating trend. Read-only.",
        f"Customer reviews of {name}. Read-only.",
    ):
        if len(description) <= CARD_DESCRIPTION_LIMIT:
            return description
    return description[: CARD_DESCRIPTION_LIMIT - 1] + "…"


def registry_name(base_url: str, business_id: str) -> str:
    """The server's reverse-DNS name, as the MCP Registry wants it: the public host reversed, then the
    business id ("https://reviews.example.com" and "riverbend" give "com.example.reviews/riverbend")."""
    host = urlsplit(base_url).hostname or "localhost"
    if "." not in host or host.replace(".", "").isdigit() or ":" in host:  # localhost or an IP address
        return f"localhost/{business_id}"
    return ".".join(reversed(host.split("."))) + "/" + business_id


def server_card(dataset: Dataset, base_url: str) -> dict[str, Any]:
    """The MCP server card (SEP-2127) of this server: who it is, where to connect, what it offers."""
    business, words = dataset.business, BusinessWords.of(dataset)
    info = server_info(words, business.get("url"), MODERN_VERSION)
    card = {
        "$schema": SERVER_CARD_SCHEMA,
        "name": registry_name(base_url, business["id"]),
        "version": info["version"],
        "description": card_description(words.name),
        "title": info["title"],
        **({"websiteUrl": info["websiteUrl"]} if "websiteUrl" in info else {}),
        "icons": info["icons"],
        "remotes": [
            {
                "type": "streamable-http",
                "url": base_url + MCP,
                "supportedProtocolVersions": list(SUPPORTED_VERSIONS),
            }
        ],
        "capabilities": MODERN_CAPABILITIES,
        "resources": resource_entries(base_url),
        "tools": tool_list(words),
        "prompts": prompt_list(words),
    }
    return card


def ai_catalog(business: Mapping[str, Any], base_url: str, documentation: str) -> dict[str, Any]:
    """/.well-known/ai-catalog.json: one entry, the server card (AI Catalog's mapping of MCP servers)."""
    host = urlsplit(base_url).hostname or "localhost"
    return {
        "specVersion": "1.0",
        "host": {"displayName": business["name"], "documentationUrl": documentation},
        "entries": [
            {
                "identifier": f"urn:air:{host}:mcp:{business['id']}",
                "type": SERVER_CARD,
                "url": base_url + SERVER_CARD_PATHS[1],
                "tags": ["mcp", "reviews", "read-only"],
            }
        ],
    }


def discovery_documents(dataset: Dataset, base_url: str) -> dict[str, Document]:
    """The MCP server card at both its paths, and the AI Catalog listing it: what discovery reads (every
    snapshot serves them: they name the business)."""
    card = encode_json(server_card(dataset, base_url))
    catalog = encode_json(ai_catalog(dataset.business, base_url, base_url + OPENAPI))
    return {
        **{path: Document(card, SERVER_CARD) for path in SERVER_CARD_PATHS},
        AI_CATALOG_PATH: Document(catalog, JSON),
    }
