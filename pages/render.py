"""The HTML pages and the widget: pure functions from plain data (the two documents) to bytes.

No app object, request or clock: the app calls these once per data snapshot (or per query for
/reviews) and adds the headers of policy.py. Templates autoescape, so text from the data (authors,
reviews, replies, the business itself) is always text, never markup.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import urlencode

import jinja2
from markupsafe import Markup

from .. import surface
from ..analysis.english import MONTHS
from ..analysis.thresholds import MIN_COUNT
from . import charts
from .display_text import isolated, printable
from .forms import SEARCH_FIELDS, FieldSpec, WidgetOptions
from .policy import STYLESHEET, TEMPLATES
from .structured_data import json_ld_script, local_business

NOT_FILTERS = {"limit", "sort", "cursor"}  # parameters that page or order the reviews but keep them all
HOME_REVIEWS = 6  # the newest reviews on /
HOME_EXCERPT = 420  # characters of a review or a reply shown on /; the permalink shows all
WIDGET_EXCERPT = 280  # the same in the widget
DAY_NAMES = {"mo": "Mon", "tu": "Tue", "we": "Wed", "th": "Thu", "fr": "Fri", "sa": "Sat", "su": "Sun"}
SOURCE_NAMES = {
    "google": "Google",
    "yelp": "Yelp",
    "facebook": "Facebook",
    "healthgrades": "Healthgrades",
    "tripadvisor": "Tripadvisor",
    "trustpilot": "Trustpilot",
}


@dataclass(frozen=True)
class Site:
    """Settings of the site rather than of the data: the public base URL (`--base-url`) and the language."""

    base_url: str
    lang: str = "en"

    def url(self, path: str) -> str:
        """The absolute URL of a path on this site."""
        return self.base_url.rstrip("/") + path


@dataclass(frozen=True)
class ReviewsPage:
    """One page of /reviews, as the search code made it.

    `reviews` are already filtered, sorted and cut to the page; `params` are the query's values as
    given (shown back in the form and in the JSON twin's URL); `matched` counts every match;
    `next_url` is the site-relative link to the next page, if any; `issues` are the search's
    validation issues ({path, code, message}), shown beside their fields.
    """

    reviews: Sequence[Mapping[str, Any]]
    params: Mapping[str, str] = field(default_factory=dict)
    matched: int | None = None
    next_url: str | None = None
    issues: Sequence[Mapping[str, Any]] = ()
    fields: Sequence[FieldSpec] = SEARCH_FIELDS


review_path = surface.review_page_path  # every link to one review's page (its permalink)


def render_home(reviews_doc: Mapping[str, Any], insights_doc: Mapping[str, Any], site: Site) -> bytes:
    """GET /: the business at a glance, its ratings, insights and newest reviews."""
    business = reviews_doc["business"]
    entities = insights_doc["entities"]
    address = business["address"]
    place = _place(address)
    category_in_place = f"{business['category']} in {place}" if place else business["category"]
    town_line = " ".join(part for part in (place, address["postal_code"]) if part)
    address_lines = [line for line in (address["street_address"], town_line) if line]  # none in a starter
    return _render(
        "home.html",
        site,
        reviews_doc,
        title=f"{business['name']}: reviews and ratings",
        description=f"{reviews_doc['aggregate_rating']['review_count']} verified reviews of "
        f"{business['name']}, {category_in_place}.",
        place=place,
        address_lines=address_lines,
        canonical=site.url("/"),
        alternates=[
            ("application/json", site.url(surface.INSIGHTS_JSON), "Review insights (JSON)"),
            ("application/atom+xml", site.url(surface.ATOM_FEED), "Newest reviews (Atom)"),
            ("application/feed+json", site.url(surface.JSON_FEED), "Newest reviews (JSON Feed)"),
        ],
        insights=insights_doc,
        hours=[
            (", ".join(DAY_NAMES[d] for d in h["days"]), f"{h['opens']}–{h['closes']}")
            for h in business["opening_hours"]
        ],
        practitioners=sorted(entities["technicians"], key=lambda e: -e["mention_count"]),
        services=sorted(entities["services"], key=lambda e: -e["mention_count"]),
        chart_ratings=charts.rating_distribution(reviews_doc["aggregate_rating"]),
        chart_aspects=charts.aspect_sentiment(insights_doc["aspects"]),
        chart_trend=charts.monthly_trend(insights_doc["temporal"]),
        newest=newest_reviews(reviews_doc["reviews"], HOME_REVIEWS),
        json_ld=json_ld_script(local_business(business, site.url("/"))),
        mcp_url=site.url(surface.MCP),
    )


def render_reviews(reviews_doc: Mapping[str, Any], page: ReviewsPage, site: Site) -> bytes:
    """GET /reviews: the search form and one page of its results."""
    given = {name: value for name, value in page.params.items() if value != ""}
    query = urlencode(given)
    errors = {issue["path"][0]: issue["message"] for issue in page.issues if issue.get("path")}
    return _render(
        "reviews.html",
        site,
        reviews_doc,
        title=f"Reviews of {reviews_doc['business']['name']}",
        description=f"Search the verified reviews of {reviews_doc['business']['name']}.",
        canonical=site.url("/reviews" + ("?" + query if query else "")),
        alternates=[
            (
                "application/json",
                site.url(surface.SEARCH + ("?" + query if query else "")),
                "These reviews (JSON)",
            )
        ],
        page=page,
        params=page.params,
        errors=errors,
        filtered=bool(set(given) - NOT_FILTERS),
    )


def render_review(review: Mapping[str, Any], reviews_doc: Mapping[str, Any], site: Site) -> bytes:
    """GET /reviews/{id}: one review's permalink page."""
    path = review_path(review["id"])
    return _render(
        "review.html",
        site,
        reviews_doc,
        title=f"Review by {isolated(review['author'])}: {reviews_doc['business']['name']}",
        description=f"A {review['rating']}-star review of {reviews_doc['business']['name']}.",
        canonical=site.url(path),
        alternates=[("application/json", site.url(surface.review_path(review["id"])), "This review (JSON)")],
        review=review,
    )


def render_review_not_found(reviews_doc: Mapping[str, Any], site: Site) -> bytes:
    """The 404 page of /reviews/{id} for an id no review has: a person following an old link lands here."""
    return _render(
        "not_found.html",
        site,
        reviews_doc,
        title=f"No such review: {reviews_doc['business']['name']}",
        description="",
        canonical=None,
        alternates=[],
    )


def render_widget(reviews_doc: Mapping[str, Any], options: WidgetOptions, site: Site) -> bytes:
    """GET /widget: the newest reviews in a small page made to be framed by the business's own site."""
    chosen = newest_reviews(
        reviews_doc["reviews"], options.count, lambda r: r["rating"] >= options.min_rating
    )
    return _render(
        "widget.html",
        site,
        reviews_doc,
        title=f"Reviews of {reviews_doc['business']['name']}",
        description="",
        canonical=None,
        alternates=[],
        theme_class="" if options.theme == "auto" else f"theme-{options.theme}",
        options=options,
        reviews=chosen,
    )


def newest_reviews(
    reviews: Iterable[Mapping[str, Any]],
    count: int,
    keep: Callable[[Mapping[str, Any]], bool] = lambda review: True,
) -> list[Mapping[str, Any]]:
    """The `count` newest reviews that `keep` accepts, newest first (date, then id), in any input order."""
    return heapq.nlargest(count, (r for r in reviews if keep(r)), key=lambda r: (r["date"], r["id"]))


def _render(template: str, site: Site, reviews_doc: Mapping[str, Any], **context: Any) -> bytes:
    context.setdefault("theme_class", "")
    html = _ENV.get_template(template).render(
        site=site, business=reviews_doc["business"], aggregate=reviews_doc["aggregate_rating"], **context
    )
    return html.encode("utf-8")


# Filters the templates use


def _stars(rating: float) -> Markup:
    """★★★★☆ for 4: whole stars, half up (round() would show 4.5 as four); the label has the figure."""
    whole = max(0, min(5, math.floor(rating + 0.5)))
    label = f"{rating:g} out of 5 stars"
    return Markup('<span class="stars" role="img" aria-label="{}">{}</span>').format(
        label, "★" * whole + "☆" * (5 - whole)
    )


def _date(value: str) -> Markup:
    """'2026-03-07' -> <time datetime="2026-03-07">Mar 7, 2026</time>."""
    year, month, day = value.split("-")
    shown = f"{MONTHS[int(month) - 1][:3]} {int(day)}, {year}"
    return Markup('<time datetime="{}">{}</time>').format(value, shown)


def _excerpt(text: str, limit: int) -> str:
    """`text` cut at a word boundary to about `limit` characters, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(None, 1)[0] if " " in text[:limit] else text[:limit]
    return cut.rstrip(",.;:") + "…"


def _source_name(source: str) -> str:
    return SOURCE_NAMES.get(source, source.replace("_", " ").replace("-", " ").capitalize())


def _safe_url(url: str | None) -> str | None:
    """An http(s) URL, or None: the schema guarantees it, and a javascript: link must never slip through."""
    return url if url and url.lower().startswith(("https://", "http://")) else None


def _tel(telephone: str) -> str:
    return "tel:" + "".join(c for c in telephone if c.isdigit() or c == "+")


def _place(address: Mapping[str, str]) -> str:
    """ "Springfield, IL": the town and region given, "" with neither (a starter's address is empty)."""
    return ", ".join(part for part in (address["locality"], address["region"]) if part)


def _percent(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%" if whole else "–"


def _shown(value: Any) -> Any:
    """Every value a template writes: text from the data loses what HTML calls an error (display_text)."""
    if type(value) is str:  # not Markup, which is ours
        return printable(value)
    return value


_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=True,
    finalize=_shown,
    undefined=jinja2.StrictUndefined,  # a misspelt name fails the render (and the tests), not the page
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters.update(
    stars=_stars,
    date=_date,
    excerpt=_excerpt,
    source_name=_source_name,
    safe_url=_safe_url,
    tel=_tel,
    percent=_percent,
)
_ENV.globals.update(
    stylesheet=Markup(STYLESHEET),
    review_path=review_path,
    HOME_EXCERPT=HOME_EXCERPT,
    WIDGET_EXCERPT=WIDGET_EXCERPT,
    FIGURE_MIN_REVIEWS=MIN_COUNT,  # a share and a score from this many reviews on (analysis/thresholds.py)
)
