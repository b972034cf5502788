"""pages/display_text.py and its use: no HTML parse error from the data's text, no name that turns a title."""

from __future__ import annotations

import unicodedata
from html.parser import HTMLParser

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from support.factories import Spec, make_docs

from reviewsd_app import pages
from reviewsd_app.pages.display_text import isolated, printable

RLO, PDF, FSI, PDI, LRI = "\u202e", "\u202c", "\u2068", "\u2069", "\u2066"
SITE = pages.Site("https://reviews.example.com")
# What the HTML standard reports as parse errors in the input stream (13.2.3.5), checked one by one.
ERRORS = [chr(c) for c in range(0x20) if chr(c) not in "\t\n\x0c\r"] + [chr(c) for c in range(0x7F, 0xA0)]
NONCHARACTERS = [chr(c) for c in range(0xFDD0, 0xFDF0)] + ["\ufffe", "\uffff", "\U0001fffe", "\U0010ffff"]


def is_html_error(character: str) -> bool:
    code = ord(character)
    control = (code < 0x20 and character not in "\t\n\x0c\r") or 0x7F <= code <= 0x9F
    return control or 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE or 0xD800 <= code <= 0xDFFF


@given(st.text())
@example("".join(ERRORS + NONCHARACTERS) + "kept")
def test_printable_removes_exactly_the_errors(text: str) -> None:
    assert printable(text) == "".join(c for c in text if not is_html_error(c))


@given(st.text())
@example("Ann" + RLO + "eeL")
@example(PDI + "x" + RLO)
def test_isolated_names_end_their_own_direction(name: str) -> None:
    shown = isolated(name)
    inner = shown[1:-1] if shown.startswith(FSI) else shown
    assert not any(c in inner for c in "\u2066\u2067\u2068\u2069")  # nothing can close the isolate early
    turning = {"R", "AL", "RLE", "RLO", "LRE", "LRO", "PDF"}
    if any(unicodedata.bidirectional(c) in turning for c in inner):
        assert shown.startswith(FSI) and shown.endswith(PDI)
    else:
        isolate_controls = str.maketrans("", "", "\u2066\u2067\u2068\u2069")
        assert shown == printable(name).translate(isolate_controls)


class ErrorCounter(HTMLParser):
    """Collects the characters of the page's text that the HTML standard calls errors."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.errors: list[str] = []

    def handle_data(self, data: str) -> None:
        self.errors += [c for c in data if is_html_error(c)]


@pytest.mark.parametrize("page", ["home", "reviews", "review", "widget"])
def test_pages_hold_no_character_html_calls_an_error(page: str) -> None:
    hostile = "bad\x00\x01\x08\x0b\x1f\x7f\x85\x9f\ufdd0\uffff\U0010fffe" + RLO + "text"
    reviews, insights = make_docs([Spec(rating=1, text=hostile, extra={"author": "Eve" + RLO + "lin"})])
    reviews["reviews"][0]["owner_reply"] = {"text": hostile, "date": reviews["reviews"][0]["date"]}
    review = reviews["reviews"][0]
    one_page = pages.ReviewsPage(reviews["reviews"], matched=1)
    rendered = {
        "home": lambda: pages.render_home(reviews, insights, SITE),
        "reviews": lambda: pages.render_reviews(reviews, one_page, SITE),
        "review": lambda: pages.render_review(review, reviews, SITE),
        "widget": lambda: pages.render_widget(reviews, pages.parse_widget_options({}), SITE),
    }[page]()
    text = rendered.decode("utf-8")
    counter = ErrorCounter()
    counter.feed(text)
    assert counter.errors == [] and not any(is_html_error(c) for c in text)
    assert "badtext" in text.replace(RLO, "")  # the text stays, without the errors
    if page == "review":
        title = text[text.index("<title>") + 7 : text.index("</title>")]
        assert title.startswith(f"Review by {FSI}Eve{RLO}lin{PDI}: ")  # the override ends with the name
