"""What the pages take from a query string: the /reviews form's fields and the widget's options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..reviews.search import FILTERS

_ANY = ("", "Any")


@dataclass(frozen=True)
class FieldSpec:
    """One control of the /reviews form; `name` is the search parameter it sets."""

    name: str
    label: str
    kind: str  # an <input> type ("search", "text", "number", "date") or "select"
    choices: tuple[tuple[str, str], ...] = ()  # (value, label) of a select's options
    attrs: Mapping[str, str] = field(default_factory=dict)  # extra input attributes: min, max, maxlength, ...


# The form's order: the filters it names here first, then any other (a new filter needs only its row in
# reviews/search.FILTERS), then the page size. Sort sits among the filters, where people look for it.
_FORM_ORDER = (
    "query",
    "rating",
    "min_rating",
    "since",
    "until",
    "mentions_technician",
    "mentions_service",
    "sort",
    "source",
    "has_text",
    "has_reply",
)
_SORT = FieldSpec(
    "sort",
    "Order",
    "select",
    (
        # no sort given: newest first, or the best match when "Words, best match first" is filled in; a
        # blank label here showed an empty box
        ("", "Newest first, or best match"),
        ("newest", "Newest first"),
        ("oldest", "Oldest first"),
        ("highest", "Highest rated"),
        ("lowest", "Lowest rated"),
    ),
)
_LIMIT = FieldSpec("limit", "Per page", "number", attrs={"min": "1", "max": "100", "placeholder": "20"})


def _search_fields() -> tuple[FieldSpec, ...]:
    """The form's controls: one per search filter (label and widget from the filters' table), sort, limit."""
    controls = {
        row.name: FieldSpec(
            row.name,
            row.label,
            row.widget,
            (_ANY, *row.choices) if row.widget == "select" else (),
            dict(row.attrs),
        )
        for row in FILTERS
    }
    controls["sort"] = _SORT
    ordered = [controls.pop(name) for name in _FORM_ORDER]
    return (*ordered, *controls.values(), _LIMIT)


# The search parameters of schemas/search-params.schema.json but cursor, in the order the form shows them.
SEARCH_FIELDS: tuple[FieldSpec, ...] = _search_fields()
# `cursor` is no field: the next-page link carries it, and submitting the form starts again at page one.


@dataclass(frozen=True)
class WidgetOptions:
    """What /widget shows: the `count` newest reviews rated at least `min_rating`, in a colour theme."""

    count: int = 3
    min_rating: int = 1
    theme: str = "auto"  # "light", "dark" or "auto" (follows the visitor's prefers-color-scheme)


WIDGET_THEMES = ("auto", "light", "dark")
WIDGET_COUNT_RANGE = (1, 10)
WIDGET_RATING_RANGE = (1, 5)


class WidgetOptionsError(ValueError):
    """Bad /widget query parameters; `issues` has the search API's shape ({path, code, message})."""

    def __init__(self, issues: list[dict[str, Any]]):
        self.issues = issues
        super().__init__("invalid widget options: " + "; ".join(issue["message"] for issue in issues))


def parse_widget_options(given: Mapping[str, Sequence[str]]) -> WidgetOptions:
    """The options of a /widget query string, each name with every value given; every problem is reported
    at once. A name given twice is refused, as the API refuses it (not the last one silently taken)."""
    issues: list[dict[str, Any]] = []
    known = ("count", "min_rating", "theme")
    for name in sorted(set(given) - set(known)):
        issues.append(
            _issue(name, "unknown_parameter", f"unknown parameter {name!r}; known: {', '.join(known)}")
        )
    for name in known:
        if len(given.get(name, ())) > 1:
            times = len(given[name])
            issues.append(_issue(name, "repeated_parameter", f"{name} is given {times} times; give it once"))
    args = {name: values[0] for name, values in given.items() if len(values) == 1}
    count = _whole_number(args, "count", WidgetOptions.count, WIDGET_COUNT_RANGE, issues)
    min_rating = _whole_number(args, "min_rating", WidgetOptions.min_rating, WIDGET_RATING_RANGE, issues)
    theme = args.get("theme", WidgetOptions.theme)
    if theme not in WIDGET_THEMES:
        issues.append(
            _issue("theme", "enum", f"theme must be one of {', '.join(WIDGET_THEMES)}, got {theme!r}")
        )
    if issues:
        raise WidgetOptionsError(issues)
    return WidgetOptions(count=count, min_rating=min_rating, theme=theme)


def _whole_number(
    args: Mapping[str, str], name: str, default: int, bounds: tuple[int, int], issues: list[dict[str, Any]]
) -> int:
    raw = args.get(name)
    if raw is None:
        return default
    low, high = bounds
    # isdecimal would take other scripts' digits, which int() reads: ASCII only, as in a URL; and at most
    # the bound's digits, so int() never meets a 4,301-digit number (a ValueError past Python's limit).
    in_range = raw.isascii() and raw.isdigit() and len(raw) <= len(str(high)) and low <= int(raw) <= high
    if not in_range:
        issues.append(
            _issue(name, "range", f"{name} must be a whole number from {low} to {high}, got {raw!r}")
        )
        return default
    return int(raw)


def _issue(name: str, code: str, message: str) -> dict[str, Any]:
    return {"path": [name], "code": code, "message": message}
