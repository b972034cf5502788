"""The HTML pages and the widget, rendered from plain data and read back with the stdlib HTML parser."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from reviewsd_app import pages
from reviewsd_app.pages import policy, render

DATA = Path(__file__).resolve().parent.parent / "data"
SITE = pages.Site(base_url="https://reviews.example")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
HOSTILE_AUTHOR = '<script>alert(1)</script>" onmouseover="alert(2)\u202eevil'
HOSTILE_MARKUP = '</script><script>alert(7)</script>" onmouseover="alert(8)\' & <!--'
HOSTILE_TEXT = (
    "</style></textarea><img src=x onerror=alert(3)>' onfocus='alert(4) " + "W" * 500 + " \u202egnp.exe"
)


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # text directly inside, in order

    def text(self) -> str:
        return "".join(self.texts) + "".join(child.text() for child in self.children)

    def iter(self, tag: str | None = None):
        for child in self.children:
            if tag is None or child.tag == tag:
                yield child
            yield from child.iter(tag)

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class TreeBuilder(HTMLParser):
    """A small DOM: enough to check structure. Raises on a closing tag that closes nothing open."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = [name for name, _ in attrs]
        assert len(names) == len(set(names)), f"<{tag}> repeats an attribute: {names}"
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, dict(attrs), self.current))  # SVG's <rect/>, <path/>

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.current.tag == tag, f"</{tag}> closes <{self.current.tag}>"
        self.current = self.current.parent

    def handle_data(self, data: str) -> None:
        self.current.texts.append(data)


def parse(body: bytes) -> Node:
    builder = TreeBuilder()
    builder.feed(body.decode("utf-8"))
    builder.close()
    assert builder.current is builder.root, f"<{builder.current.tag}> is never closed"
    return builder.root


@pytest.fixture(scope="module")
def docs() -> tuple[dict[str, Any], dict[str, Any]]:
    reviews = json.loads((DATA / "reviews.json").read_text(encoding="utf-8"))
    insights = json.loads((DATA / "insights.json").read_text(encoding="utf-8"))
    return reviews, insights


def hostile_docs(reviews: dict[str, Any], insights: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The bundled data with hostile text in every field a customer writes, markup in the business's."""
    reviews, insights = copy.deepcopy(reviews), copy.deepcopy(insights)
    for review in render.newest_reviews(reviews["reviews"], 25):
        review.update(
            author=HOSTILE_AUTHOR,
            text=HOSTILE_TEXT,
            source='x" onclick="alert(5)',
            source_url="javascript:alert(6)",
            owner_reply={"text": HOSTILE_TEXT, "date": review["date"]},
        )
    reviews["business"]["name"] = HOSTILE_MARKUP
    reviews["business"]["description"] = HOSTILE_MARKUP
    insights["summary"] = HOSTILE_MARKUP
    insights["pull_quote"]["text"] = HOSTILE_TEXT
    insights["faq"][0]["question"] = HOSTILE_MARKUP
    insights["aspects"][0]["label"] = HOSTILE_MARKUP
    insights["entities"]["technicians"][0]["name"] = HOSTILE_AUTHOR
    return reviews, insights


def all_pages(reviews: dict[str, Any], insights: dict[str, Any]) -> dict[str, bytes]:
    newest = render.newest_reviews(reviews["reviews"], 20)
    page = pages.ReviewsPage(
        newest, {"rating": "5", "query": "wait"}, matched=40, next_url="/reviews?cursor=x"
    )
    return {
        "home": pages.render_home(reviews, insights, SITE),
        "reviews": pages.render_reviews(reviews, page, SITE),
        "review": pages.render_review(newest[1], reviews, SITE),
        "widget": pages.render_widget(reviews, pages.parse_widget_options({"count": ["10"]}), SITE),
    }


@pytest.fixture(scope="module")
def rendered(docs) -> dict[str, bytes]:
    return all_pages(*docs)


@pytest.fixture(scope="module")
def hostile(docs) -> dict[str, bytes]:
    return all_pages(*hostile_docs(*docs))


PAGE_NAMES = ["home", "reviews", "review", "widget"]


# Structure


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_document_basics(rendered, name):
    root = parse(rendered[name])
    html = next(root.iter("html"))
    assert html.attrs["lang"] == "en"
    assert next(root.iter("title")).text().strip()
    assert [n.attrs.get("charset") for n in root.iter("meta") if "charset" in n.attrs] == ["utf-8"]
    assert any(n.attrs.get("name") == "viewport" for n in root.iter("meta"))
    assert len(list(root.iter("h1"))) == 1
    assert len(list(root.iter("main"))) == 1


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_headings_never_skip_a_level(rendered, name):
    levels = [int(n.tag[1]) for n in parse(rendered[name]).iter() if re.fullmatch(r"h[1-6]", n.tag)]
    assert levels[0] == 1
    for before, after in zip(levels, levels[1:]):
        assert after <= before + 1, levels


@pytest.mark.parametrize("name", ["home", "reviews", "review"])
def test_pages_have_the_site_landmarks(rendered, name):
    root = parse(rendered[name])
    body = next(root.iter("body"))
    assert [child.tag for child in body.children] == ["a", "header", "main", "footer"]
    assert body.children[0].attrs["href"] == "#main" and next(root.iter("main")).attrs["id"] == "main"
    nav = next(root.iter("nav"))
    assert nav.attrs["aria-label"] and {a.attrs["href"] for a in nav.iter("a")} == {"/", "/reviews"}


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_ids_are_unique_and_references_resolve(rendered, name):
    root = parse(rendered[name])
    ids = [n.attrs["id"] for n in root.iter() if "id" in n.attrs]
    assert len(ids) == len(set(ids))
    for node in root.iter():
        for attr in ("aria-labelledby", "aria-describedby"):
            for ref in (node.attrs.get(attr) or "").split():
                assert ref in ids, f"{attr}={ref} on <{node.tag}>"
        if node.tag == "a" and (node.attrs.get("href") or "").startswith("#"):
            assert node.attrs["href"][1:] in ids


def test_every_form_control_has_a_label(rendered):
    root = parse(rendered["reviews"])
    labels = {n.attrs["for"]: n.text().strip() for n in root.iter("label")}
    controls = [n for n in root.iter() if n.tag in ("input", "select", "textarea")]
    assert {c.attrs["name"] for c in controls} == {spec.name for spec in pages.SEARCH_FIELDS}
    for control in controls:
        assert labels[control.attrs["id"]], control.attrs
    form = next(root.iter("form"))
    assert form.attrs["method"] == "get" and form.attrs["action"] == "/reviews"


def test_the_form_shows_the_query_and_takes_new_fields_in_one_line(docs):
    reviews, _ = docs
    page = pages.ReviewsPage(
        [],
        {"rating": "5", "query": '"><script>x', "limit": "37", "sort": "oldest"},
        matched=0,
        fields=pages.SEARCH_FIELDS,
    )
    root = parse(pages.render_reviews(reviews, page, SITE))
    inputs = {n.attrs["name"]: n for n in root.iter("input")}
    assert inputs["query"].attrs["value"] == '"><script>x'
    assert inputs["limit"].attrs["value"] == "37"
    selected = {
        n.parent.attrs["name"]: n.attrs["value"] for n in root.iter("option") if "selected" in n.attrs
    }
    assert selected == {
        "rating": "5",
        "sort": "oldest",
        "min_rating": "",
        "has_text": "",
        "has_reply": "",
        "max_rating": "",
        "aspect_sentiment": "",
    }
    labels = {n.attrs["for"] for n in root.iter("label")}
    assert labels == {f"f-{spec.name}" for spec in pages.SEARCH_FIELDS}
    assert "No review matches" in root.text()


def test_every_select_of_the_empty_form_shows_a_label(docs):
    """The Order box showed blank: its default (no sort) had no option of its own."""
    root = parse(pages.render_reviews(docs[0], pages.ReviewsPage([], {}, fields=pages.SEARCH_FIELDS), SITE))
    shown = {n.parent.attrs["name"]: n.text() for n in root.iter("option") if "selected" in n.attrs}
    assert shown["sort"] == "Newest first, or best match"
    assert all(text.strip() for text in shown.values()), shown


def test_a_select_keeps_a_value_it_does_not_list(docs):
    page = pages.ReviewsPage([], {"min_rating": "4.5"})
    root = parse(pages.render_reviews(docs[0], page, SITE))
    chosen = [
        n for n in root.iter("option") if "selected" in n.attrs and n.parent.attrs["name"] == "min_rating"
    ]
    assert [n.attrs["value"] for n in chosen] == ["4.5"]


def test_search_issues_are_shown_beside_their_fields(docs):
    issue = {
        "path": ["since"],
        "code": "date_order",
        "message": "since (2026-05-01) is after until (2026-01-01)",
    }
    page = pages.ReviewsPage([], {"since": "2026-05-01", "until": "2026-01-01"}, issues=[issue])
    root = parse(pages.render_reviews(docs[0], page, SITE))
    since = next(n for n in root.iter("input") if n.attrs["name"] == "since")
    assert since.attrs["aria-invalid"] == "true"
    error = next(n for n in root.iter() if n.attrs.get("id") == since.attrs["aria-describedby"])
    assert error.text() == issue["message"]
    assert not any("aria-invalid" in n.attrs for n in root.iter("input") if n.attrs["name"] != "since")


def test_reviews_page_links_its_next_page_and_json_twin(rendered):
    root = parse(rendered["reviews"])
    assert [a.attrs["href"] for a in root.iter("a") if a.attrs.get("rel") == "next"] == ["/reviews?cursor=x"]
    twins = [n.attrs["href"] for n in root.iter("link") if n.attrs.get("type") == "application/json"]
    assert twins == ["https://reviews.example/api/reviews/search?rating=5&query=wait"]
    assert len(list(root.iter("article"))) == 20


def test_home_links_its_twin_the_feeds_the_api_and_mcp(rendered):
    root = parse(rendered["home"])
    alternates = {
        n.attrs["type"]: n.attrs["href"] for n in root.iter("link") if n.attrs.get("rel") == "alternate"
    }
    assert alternates == {
        "application/json": "https://reviews.example/insights.json",
        "application/atom+xml": "https://reviews.example/feed.xml",
        "application/feed+json": "https://reviews.example/api/feed.json",
    }
    hrefs = {a.attrs["href"] for a in root.iter("a")}
    assert {"/.well-known/openapi.json", "/feed.xml", "/api/feed.json", "/reviews"} <= hrefs
    assert "https://reviews.example/mcp" in root.text()


def test_home_shows_the_business_and_its_insights(docs, rendered):
    reviews, insights = docs
    text = " ".join(parse(rendered["home"]).text().split())
    business = reviews["business"]
    for shown in (
        business["name"],
        business["category"],
        business["address"]["street_address"],
        "Mon, Wed, Fri",
        "08:00–18:00",
        insights["summary"],
        insights["faq"][0]["question"],
        insights["entities"]["technicians"][0]["name"],
        insights["entities"]["services"][0]["label"],
        "320 reviews",
    ):
        assert " ".join(shown.split()) in text, shown
    newest = render.newest_reviews(reviews["reviews"], render.HOME_REVIEWS)
    articles = list(parse(rendered["home"]).iter("article"))
    assert [a.attrs["aria-labelledby"] for a in articles] == [f"r-{r['id']}" for r in newest]
    replied = next(r for r in newest if r["owner_reply"])
    assert replied["owner_reply"]["text"][:40] in text


def test_permalink_and_widget_twins(docs, rendered):
    review = render.newest_reviews(docs[0]["reviews"], 2)[1]
    root = parse(rendered["review"])
    twins = [n.attrs["href"] for n in root.iter("link") if n.attrs.get("rel") == "alternate"]
    assert twins == [f"https://reviews.example/api/reviews/{review['id']}"]
    assert pages.review_path(review["id"]) == f"/reviews/{review['id']}"
    assert review["text"] in root.text()


def test_charts_have_a_title_a_description_and_a_table(rendered):
    root = parse(rendered["home"])
    charts = list(root.iter("svg"))
    assert len(charts) == 3
    for svg in charts:
        assert svg.attrs["role"] == "img"
        title, desc = svg.attrs["aria-labelledby"].split()
        by_id = {n.attrs.get("id"): n for n in svg.iter()}
        assert by_id[title].tag == "title" and by_id[title].text().strip()
        assert by_id[desc].tag == "desc" and by_id[desc].text().strip()
        figure = next(a for a in svg.ancestors() if a.tag == "figure")
        table = next(figure.iter("table"))
        assert next(table.iter("caption")).text() and len(list(table.iter("tr"))) > 1


# Structured data


def json_ld(root: Node) -> list[dict[str, Any]]:
    return [json.loads(n.text()) for n in root.iter("script") if n.attrs.get("type") == "application/ld+json"]


def test_home_has_local_business_json_ld_and_no_review_markup(docs, rendered):
    [data] = json_ld(parse(rendered["home"]))
    business = docs[0]["business"]
    assert (
        data["@type"] == "LocalBusiness"
        and data["name"] == business["name"]
        and data["url"] == business["url"]
    )
    assert data["address"]["streetAddress"] == business["address"]["street_address"]
    assert data["geo"] == {"@type": "GeoCoordinates", **business["geo"]}
    assert data["openingHoursSpecification"][0] == {
        "@type": "OpeningHoursSpecification",
        "dayOfWeek": ["Monday", "Wednesday", "Friday"],
        "opens": "08:00",
        "closes": "18:00",
    }
    for body in rendered.values():
        assert b"AggregateRating" not in body and b"aggregateRating" not in body
        assert b'"Review"' not in body and b"itemprop" not in body and b"itemtype" not in body
    for name in ("reviews", "review", "widget"):
        assert json_ld(parse(rendered[name])) == []


def test_json_ld_text_cannot_close_its_script(docs, hostile):
    reviews, _ = hostile_docs(*docs)
    root = parse(hostile["home"])
    [script] = [n for n in root.iter("script")]
    assert not re.search(r"[<>&]", script.text())
    assert json.loads(script.text())["name"] == reviews["business"]["name"]


# Escaping of hostile text


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_hostile_text_stays_text(hostile, name):
    root = parse(hostile[name])
    assert [n.attrs.get("type") for n in root.iter("script")] == (
        ["application/ld+json"] if name == "home" else []
    )
    assert list(root.iter("img")) == [] and list(root.iter("textarea")) == []
    for node in root.iter():
        assert not [attr for attr in node.attrs if attr.startswith("on")], node.attrs
        assert "style" not in node.attrs
        assert not (node.attrs.get("href") or "").lower().startswith("javascript:")
    [style] = root.iter("style")
    assert style.text() == policy.STYLESHEET
    assert HOSTILE_TEXT[:60] in root.text()


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_customer_text_is_isolated_for_bidi(hostile, name):
    """A right-to-left override in an author's name or a review ends with it, not with the line."""
    root = parse(hostile[name])
    authors = [n for n in root.iter() if HOSTILE_AUTHOR in "".join(n.texts) and n.tag != "title"]
    assert authors and all(n.tag == "bdi" for n in authors)
    texts = [n for n in root.iter() if HOSTILE_TEXT[:30] in "".join(n.texts)]
    assert texts and all(any(a.attrs.get("dir") == "auto" for a in (n, *n.ancestors())) for n in texts)


def test_long_words_wrap():
    assert "overflow-wrap:anywhere" in policy.STYLESHEET


# Security headers


def style_hash(body: bytes) -> str:
    [style] = parse(body).iter("style")
    return "'sha256-" + base64.b64encode(hashlib.sha256(style.text().encode()).digest()).decode() + "'"


def test_csp_values():
    assert pages.PAGE_CSP == (
        f"default-src 'none'; style-src {policy.STYLE_HASH}; img-src 'self' data:; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    assert pages.WIDGET_CSP == pages.PAGE_CSP.replace("frame-ancestors 'none'", "frame-ancestors *")
    page_headers, widget_headers = dict(pages.PAGE_HEADERS), dict(pages.WIDGET_HEADERS)
    assert (
        page_headers["Content-Security-Policy"] == pages.PAGE_CSP
        and page_headers["X-Frame-Options"] == "DENY"
    )
    assert (
        widget_headers["Content-Security-Policy"] == pages.WIDGET_CSP
        and "X-Frame-Options" not in widget_headers
    )
    for headers in (page_headers, widget_headers):
        assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "no-referrer"
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        assert "Set-Cookie" not in headers


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_the_csp_allows_exactly_the_page_style_and_nothing_outside(rendered, name):
    assert style_hash(rendered[name]) == policy.STYLE_HASH
    root = parse(rendered[name])
    for node in root.iter():
        assert "style" not in node.attrs and "src" not in node.attrs
        if node.tag == "link":
            assert node.attrs["rel"] in ("alternate", "canonical") or node.attrs == {
                "rel": "icon",
                "href": "data:,",
            }


# Size


def test_home_is_under_60_kb(rendered):
    assert len(rendered["home"]) < 60_000


def test_home_stays_small_with_the_longest_reviews(docs):
    reviews, insights = copy.deepcopy(docs[0]), docs[1]
    for review in render.newest_reviews(reviews["reviews"], 10):
        review.update(text="long " * 4000, owner_reply={"text": "reply " * 3000, "date": review["date"]})
    assert len(pages.render_home(reviews, insights, SITE)) < 60_000


# The widget


def test_widget_options_defaults_and_values():
    assert pages.parse_widget_options({}) == pages.WidgetOptions(count=3, min_rating=1, theme="auto")
    assert pages.parse_widget_options(
        {"count": ["10"], "min_rating": ["4"], "theme": ["dark"]}
    ) == pages.WidgetOptions(count=10, min_rating=4, theme="dark")


@pytest.mark.parametrize(
    "args, bad",
    [
        ({"count": "0"}, ["count"]),
        ({"count": "11"}, ["count"]),
        ({"count": "two"}, ["count"]),
        ({"count": "٣"}, ["count"]),
        ({"count": "-1"}, ["count"]),
        ({"count": ""}, ["count"]),
        ({"min_rating": "6"}, ["min_rating"]),
        ({"min_rating": "4.5"}, ["min_rating"]),
        ({"theme": "blue"}, ["theme"]),
        ({"colour": "red"}, ["colour"]),
        (
            {"count": "0", "theme": "x", "min_rating": "0", "lang": "fr"},
            ["lang", "count", "min_rating", "theme"],
        ),
        ({"count": "3" * 4301}, ["count"]),  # past int()'s digit limit: was a 500 with a traceback
        ({"min_rating": "1" + "0" * 5000}, ["min_rating"]),
        ({"count": ["3", "4"]}, ["count"]),  # given twice: refused, as the API refuses it
    ],
)
def test_widget_options_are_refused_with_every_reason(args, bad):
    given = {name: value if isinstance(value, list) else [value] for name, value in args.items()}
    with pytest.raises(pages.WidgetOptionsError) as refused:
        pages.parse_widget_options(given)
    assert [issue["path"][0] for issue in refused.value.issues] == bad
    for name in bad:
        assert name in str(refused.value)


def test_widget_shows_the_newest_reviews_above_the_minimum(docs):
    reviews = docs[0]
    options = pages.parse_widget_options({"count": ["4"], "min_rating": ["5"], "theme": ["light"]})
    root = parse(pages.render_widget(reviews, options, SITE))
    expected = render.newest_reviews(reviews["reviews"], 4, lambda r: r["rating"] == 5)
    assert [a.attrs["aria-labelledby"] for a in root.iter("article")] == [f"r-{r['id']}" for r in expected]
    assert next(root.iter("html")).attrs["class"] == "theme-light"
    links = [a for a in root.iter("a")]
    assert links and all(a.attrs["target"] == "_blank" and "noopener" in a.attrs["rel"] for a in links)
    assert all(
        a.attrs["href"].startswith(("https://reviews.example/", "https://www.google.com/", "https://"))
        for a in links
    )


def test_widget_auto_theme_has_no_class(docs):
    root = parse(pages.render_widget(docs[0], pages.WidgetOptions(), SITE))
    assert "class" not in next(root.iter("html")).attrs


def test_newest_reviews_ignores_input_order(docs):
    shuffled = sorted(docs[0]["reviews"], key=lambda r: r["author"])
    newest = render.newest_reviews(shuffled, 5)
    assert [(r["date"], r["id"]) for r in newest] == sorted(
        ((r["date"], r["id"]) for r in shuffled), reverse=True
    )[:5]


def test_the_people_heading_follows_the_trade_and_an_unpublished_trend_is_not_described(docs):
    reviews, insights = copy.deepcopy(docs[0]), copy.deepcopy(docs[1])
    insights["people_label"] = "Staff"
    insights["temporal"]["trend"] = None
    body = pages.render_home(reviews, insights, SITE).decode()
    assert '<h2 id="practitioners">Staff</h2>' in body and "Practitioners" not in body
    assert "the average rating is" not in body
    default = pages.render_home(*docs, SITE).decode()
    assert '<h2 id="practitioners">Practitioners</h2>' in default and "the average rating is" in default


def test_a_share_and_score_are_shown_only_from_three_reviews(docs):
    """One complaint must not show a named server as "0% positive, -1.00" on the home page: under three
    reviews the row shows how many, not a share or a score (as the summary names no one under three)."""
    reviews, insights = copy.deepcopy(docs[0]), copy.deepcopy(docs[1])
    few, enough = insights["entities"]["technicians"][:2]
    few.update(mention_count=2, positive_count=0, neutral_count=1, negative_count=1, score=-0.5)
    enough.update(mention_count=3, positive_count=2, neutral_count=0, negative_count=1, score=0.333)
    root = parse(pages.render_home(reviews, insights, SITE))

    def figures(record):
        [row] = [
            row
            for row in root.iter("tr")
            if next(row.iter("bdi"), None) and next(row.iter("bdi")).text() == record["name"]
        ]
        return [cell.text() for cell in row.children if cell.tag == "td"]

    assert figures(few) == ["2", "–", "–", "–"]
    assert figures(enough) == ["3", "67%", "33%", "+0.33"]
    assert "– under 3 reviews" in pages.render_home(reviews, insights, SITE).decode()


def test_an_aspects_bar_gives_a_share_only_from_three_mentions(docs):
    """As the tables: one complaint about the prices is no "0% positive" on the home page."""
    reviews, insights = copy.deepcopy(docs[0]), copy.deepcopy(docs[1])
    once, thrice = insights["aspects"][:2]
    once.update(mention_count=1, positive_count=0, neutral_count=0, negative_count=1, positive_pct=0.0)
    thrice.update(mention_count=3, positive_count=2, neutral_count=1, negative_count=0, positive_pct=66.7)
    chart = pages.render_home(reviews, insights, SITE).decode()
    assert re.search(f">{re.escape(once['label'])} \\(1\\)</text><text [^>]*>–</text>", chart)
    assert re.search(f">{re.escape(thrice['label'])} \\(3\\)</text><text [^>]*>67% positive</text>", chart)
    assert ">0% positive</text>" not in chart


def test_a_starters_empty_address_leaves_no_stray_commas(docs):
    """A business straight from `reviewsd init` has an empty address: no "Restaurant in ," or empty
    Address line; with a town only, just the town."""
    reviews, insights = copy.deepcopy(docs[0]), copy.deepcopy(docs[1])
    address = reviews["business"]["address"]
    address.update(street_address="", locality="", region="", postal_code="")
    body = pages.render_home(reviews, insights, SITE).decode()
    category = reviews["business"]["category"]
    assert f'<p class="muted">{category}</p>' in body
    assert f"{category} in" not in body and "<dt>Address</dt>" not in body
    address["locality"] = "Springfield"
    body = pages.render_home(reviews, insights, SITE).decode()
    assert f'<p class="muted">{category} in Springfield</p>' in body
    assert "<address>Springfield</address>" in body and f"{category} in Springfield." in body


def test_the_aspect_chart_says_one_mention_and_not_mentioned(docs):
    reviews, insights = copy.deepcopy(docs[0]), copy.deepcopy(docs[1])
    once, never = insights["aspects"][:2]
    once.update(mention_count=1, positive_count=0, neutral_count=0, negative_count=1)
    never.update(mention_count=0, positive_count=0, neutral_count=0, negative_count=0)
    body = pages.render_home(reviews, insights, SITE).decode()
    assert f"{once['label']}: 1 mention, 0 positive" in body
    assert f"{never['label']}: 0 mentions" in body
    assert ">not mentioned</text>" in body and not re.search(r"\b1 mentions", body)  # not "41 mentions"


def test_the_rating_chart_says_1_star_and_1_review(docs):
    reviews, insights = copy.deepcopy(docs[0]), copy.deepcopy(docs[1])
    body = pages.render_home(reviews, insights, SITE).decode()
    assert '<th scope="row">1 star</th>' in body and ">1 star</text>" in body and "1 stars" not in body
    reviews["aggregate_rating"].update(review_count=1, distribution={"1": 0, "2": 0, "3": 0, "4": 0, "5": 1})
    assert "1 review: 1 rated 5, 0 rated 4" in pages.render_home(reviews, insights, SITE).decode()


def test_the_trend_chart_says_a_direction_only_from_three_months_with_reviews(docs):
    reviews, insights = copy.deepcopy(docs[0]), copy.deepcopy(docs[1])
    body = pages.render_home(reviews, insights, SITE).decode()
    assert "months the average rating is" in body  # the sample: three years of months with reviews
    monthly = insights["temporal"]["monthly"]
    for month in monthly[:-2]:
        month.update(review_count=0, average_rating=None, sentiment_score=None)
    body = pages.render_home(reviews, insights, SITE).decode()
    assert "months the average rating is" not in body
