"""HTML pages and the embeddable widget: pure renderers over the two data documents.

The app calls the render_* functions and answers with the headers of policy.py; see docs/pages.md.
"""

from .forms import (
    SEARCH_FIELDS,
    FieldSpec,
    WidgetOptions,
    WidgetOptionsError,
    parse_widget_options,
)
from .policy import PAGE_CSP, PAGE_HEADERS, WIDGET_CSP, WIDGET_HEADERS
from .render import (
    ReviewsPage,
    Site,
    render_home,
    render_review,
    render_review_not_found,
    render_reviews,
    render_widget,
    review_path,
)

__all__ = [
    "SEARCH_FIELDS",
    "FieldSpec",
    "WidgetOptions",
    "WidgetOptionsError",
    "parse_widget_options",
    "PAGE_CSP",
    "PAGE_HEADERS",
    "WIDGET_CSP",
    "WIDGET_HEADERS",
    "ReviewsPage",
    "Site",
    "render_home",
    "render_review_not_found",
    "render_review",
    "render_reviews",
    "render_widget",
    "review_path",
]
