"""The security headers of the HTML pages and the widget, and the stylesheet their CSP allows.

The pages carry their CSS inline (one request per page load), so the Content-Security-Policy
names that stylesheet by its hash, computed here when the module loads: edit style.css freely.
No page has a script, a style attribute or an outside source, so nothing else is allowed.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"

STYLESHEET = (TEMPLATES / "style.css").read_text(encoding="utf-8")
STYLE_HASH = "'sha256-" + base64.b64encode(hashlib.sha256(STYLESHEET.encode()).digest()).decode() + "'"

_COMMON = (
    f"default-src 'none'; style-src {STYLE_HASH}; img-src 'self' data:; base-uri 'none'; form-action 'self'"
)

PAGE_CSP = _COMMON + "; frame-ancestors 'none'"
"""Content-Security-Policy of /, /reviews and /reviews/{id}: never shown in a frame."""

WIDGET_CSP = _COMMON + "; frame-ancestors *"
"""Content-Security-Policy of /widget: made to be framed by any site (so no X-Frame-Options either)."""

HTML_CONTENT_TYPE = "text/html; charset=utf-8"

PAGE_HEADERS: tuple[tuple[str, str], ...] = (
    ("Content-Type", HTML_CONTENT_TYPE),
    ("Content-Security-Policy", PAGE_CSP),
    ("X-Frame-Options", "DENY"),  # for browsers older than frame-ancestors
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
)
"""Every header an HTML page's answer must carry (the app adds ETag, caching and gzip as for JSON)."""

WIDGET_HEADERS: tuple[tuple[str, str], ...] = (
    ("Content-Type", HTML_CONTENT_TYPE),
    ("Content-Security-Policy", WIDGET_CSP),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
)
"""Every header the widget's answer must carry; it sets no cookie and has no X-Frame-Options."""
