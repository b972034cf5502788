"""The MCP App (extension `io.modelcontextprotocol/ui`, SEP-1865, stable 2026-01-26): one `ui://` resource, an
HTML document the host renders beside the answer of the tools that declare it.

The document is self-contained (the pages' stylesheet and its script inline, no outside request: no
`_meta.ui.csp` is needed, and the host's restrictive default applies). It shows the business's star
distribution, monthly trend and aspect bars (the same SVG as the pages, pages/charts.py, from the snapshot
it was read from), then the tool result the host pushes (`ui/notifications/tool-result`): the quoted reviews
with links to their pages, a range's figures, aspect bars of the result. Its filter form calls
`search_reviews` through the host (`tools/call` over the App bridge, postMessage JSON-RPC). The bridge is
hand-written, following the extension's dialect: `ui/initialize`, then `ui/notifications/initialized`.
The extension is declared to a client that offers it (capabilities.extensions), and only then do tools carry
`_meta.ui.resourceUri`; a host without apps gets the same, complete text results.
"""

from __future__ import annotations

import json
import string
from typing import Any, Mapping

from markupsafe import Markup, escape

from ..pages.charts import aspect_sentiment, monthly_trend, rating_distribution
from ..pages.policy import STYLESHEET, TEMPLATES
from ..reviews.dataset import Dataset

EXTENSION = "io.modelcontextprotocol/ui"
MIME_TYPE = "text/html;profile=mcp-app"
APP_URI = "ui://reviewsd/reviews"
# The tools whose results the app shows: reviews or figures.
APP_TOOLS = frozenset(
    {
        "search_reviews",
        "search",
        "get_review",
        "get_aspect_sentiment",
        "get_technician",
        "get_service",
        "get_rating_trend",
        "get_insights_summary",
        "compare_periods",
    }
)
RESOURCE_META = {"ui": {"prefersBorder": True}}  # no csp: nothing outside the document is fetched


def offered(capabilities: Any) -> bool:
    """Whether a client's capabilities offer the extension with our MIME type."""
    if not isinstance(capabilities, Mapping):
        return False
    extensions = capabilities.get("extensions")
    setting = extensions.get(EXTENSION) if isinstance(extensions, Mapping) else None
    mime_types = setting.get("mimeTypes") if isinstance(setting, Mapping) else None
    return isinstance(mime_types, list) and MIME_TYPE in mime_types


def server_extension() -> dict[str, Any]:
    """What the server's capabilities add for a client that offered the extension."""
    return {"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}


def with_app(tool: dict[str, Any]) -> dict[str, Any]:
    """A tools/list entry with the app's resource, for the tools that show results in it."""
    if tool["name"] not in APP_TOOLS:
        return tool
    return {**tool, "_meta": {"ui": {"resourceUri": APP_URI}}}


def resource_entry() -> dict[str, Any]:
    return {
        "uri": APP_URI,
        "name": "reviews-app",
        "title": "Reviews and insights, on screen",
        "description": "The star distribution, monthly trend, aspect bars and the quoted reviews of a tool "
        "result, with filters that search again.",
        "mimeType": MIME_TYPE,
    }


def app_html(dataset: Dataset, base_url: str) -> str:
    """The app's document for one snapshot: its charts, and the script that renders tool results."""
    doc = dataset.insights_doc
    business = dataset.business
    aspects = [a for a in doc["aspects"] if a["mention_count"]]
    charts = Markup("").join(
        [
            rating_distribution(dataset.reviews_doc["aggregate_rating"]),
            monthly_trend(doc["temporal"]),
            aspect_sentiment(aspects) if aspects else Markup(""),
        ]
    )
    options = Markup("").join(
        Markup('<option value="{}">{}</option>').format(a["id"], a["label"]) for a in aspects
    )
    config = json.dumps({"reviewPages": base_url + "/reviews/"}).replace("<", "\\u003c")
    return _TEMPLATE.substitute(
        name=escape(business["name"]), style=STYLESHEET, charts=charts, options=options, config=config
    )


# The document, its own style and its script (pages/templates/, beside the pages' stylesheet it inlines too).
# Its script builds the DOM with textContent, never innerHTML with data: review texts are data.
_TEMPLATE = string.Template((TEMPLATES / "mcp-app.html").read_text(encoding="utf-8"))
