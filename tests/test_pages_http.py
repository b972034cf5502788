"""The pages served by the app: routes, headers, validators, the same search as the API, reloads."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from support.factories import Spec, make_docs, write_docs
from werkzeug.test import Client

from reviewsd_app import reviewsd
from reviewsd_app.pages import PAGE_CSP, WIDGET_CSP

BASE = "https://reviews.example.com"


def test_home_is_html_with_its_security_headers_and_validators(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Content-Security-Policy"] == PAGE_CSP
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "Set-Cookie" not in response.headers
    assert b"Riverbend Spine &amp; Wellness" in response.data
    assert len(response.data) < 60_000
    again = client.get("/", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""


def test_home_is_gzipped_when_asked(client: Client) -> None:
    response = client.get("/", headers={"Accept-Encoding": "gzip"})
    assert response.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(response.data) == client.get("/").data


def test_json_stays_json_for_a_browser(client: Client) -> None:
    for path in ("/reviews.json", "/insights.json", "/api/reviews/search?rating=5"):
        response = client.get(path, headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert response.headers["Content-Type"] == "application/json; charset=utf-8", path


def test_reviews_page_lists_what_the_api_search_finds(client: Client) -> None:
    query = "rating=2&limit=5"
    found = json.loads(client.get(f"/api/reviews/search?{query}").data)
    page = client.get(f"/reviews?{query}")
    assert page.status_code == 200
    assert page.headers["Content-Security-Policy"] == PAGE_CSP
    text = page.data.decode()
    assert found["returned"] == 5
    for review in found["reviews"]:
        assert f'href="/reviews/{review["id"]}"' in text
    assert f'href="{BASE}/api/reviews/search?rating=2&amp;limit=5"' in text  # the JSON twin


def test_reviews_page_with_a_bad_parameter_shows_the_form_and_says_why(client: Client) -> None:
    page = client.get("/reviews?rating=9")
    assert page.status_code == 400
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"<form" in page.data and b"rating" in page.data


def test_permalink_page_and_its_json_twin(client: Client) -> None:
    review = json.loads(client.get("/api/reviews/search?limit=1").data)["reviews"][0]
    page = client.get(f"/reviews/{review['id']}")
    assert page.status_code == 200
    text = page.data.decode()
    assert f'<link rel="alternate" type="application/json" href="{BASE}/api/reviews/{review["id"]}"' in text
    assert (
        client.get(f"/reviews/{review['id']}", headers={"If-None-Match": page.headers["ETag"]}).status_code
        == 304
    )
    missing = client.get("/reviews/01AAAAAAAAAAAAAAAAAAAAAAAA")
    assert missing.status_code == 404 and missing.headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"No such review" in missing.data and missing.headers["Content-Security-Policy"] == PAGE_CSP


def test_feed_items_link_to_the_pages_and_keep_their_ids(client: Client) -> None:
    feed = json.loads(client.get("/api/feed.json").data)
    for item in feed["items"][:5]:
        review_id = item["_reviewsd"]["review_id"]
        assert item["id"] == f"{BASE}/api/reviews/{review_id}"
        assert item["url"] == f"{BASE}/reviews/{review_id}"
        assert client.get(item["url"].removeprefix(BASE)).status_code == 200


def test_widget_may_be_framed_and_takes_its_options(client: Client) -> None:
    widget = client.get("/widget?count=2&min_rating=5&theme=dark")
    assert widget.status_code == 200
    assert widget.headers["Content-Security-Policy"] == WIDGET_CSP
    assert "X-Frame-Options" not in widget.headers
    shown = set(re.findall(rf'href="{BASE}/reviews/([0-9A-Z]{{26}})"', widget.data.decode()))
    five_stars = json.loads(client.get("/api/reviews/search?rating=5&limit=2").data)["reviews"]
    assert shown == {review["id"] for review in five_stars}
    assert client.get("/widget").data != widget.data
    bad = client.get("/widget?count=0&theme=neon")
    assert bad.status_code == 400
    assert [issue["path"][0] for issue in json.loads(bad.data)["issues"]] == ["count", "theme"]


@pytest.mark.parametrize(
    "query, code",
    [
        ("count=" + "3" * 4301, "range"),  # was a 500 with a traceback: int() refuses over 4,300 digits
        ("min_rating=" + "4" * 4301, "range"),
        ("count=3&count=4", "repeated_parameter"),  # was the last one, silently
    ],
)
def test_widget_options_are_a_400_whatever_they_are(client: Client, query: str, code: str) -> None:
    bad = client.get(f"/widget?{query}")
    assert bad.status_code == 400
    assert [issue["code"] for issue in json.loads(bad.data)["issues"]] == [code]


def test_pages_follow_a_data_reload(small_data_dir: Path, tmp_path: Path) -> None:
    config = reviewsd.Config(
        data_dir=str(small_data_dir), state_dir=str(tmp_path / "state"), reload_interval=0, hub=False
    )
    app = reviewsd.create_app(config)
    client = Client(app)
    before = client.get("/")
    write_docs(
        small_data_dir, *make_docs([Spec(rating=5, date="2026-01-02", text="A brand new review, XYZZY.")])
    )
    assert app.store.reload() is True
    after = client.get("/")
    assert after.headers["ETag"] != before.headers["ETag"]
    assert b"XYZZY" in after.data and b"XYZZY" not in before.data
    assert b"XYZZY" in client.get("/widget").data
    assert b"XYZZY" in client.get("/reviews?query=xyzzy").data
