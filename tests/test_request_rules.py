"""The rules the MCP transport and the hub share (web/request_rules.py), and the hub's retry policy."""

from __future__ import annotations

import io
import sqlite3
from urllib.parse import urlsplit

import pytest

from reviewsd_app import hub
from reviewsd_app.mcpserver.transport import origin_of
from reviewsd_app.web.request_rules import BodyCut, BodyTooLarge, is_utf8_charset, origin, read_body
from reviewsd_app.websub.store import SQLITE_FULL, sqlite_code


def environ(body: bytes, length: str | None, terminated: bool = False) -> dict:
    env: dict = {"wsgi.input": io.BytesIO(body)}
    if length is not None:
        env["CONTENT_LENGTH"] = length
    if terminated:
        env["wsgi.input_terminated"] = True
    return env


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (environ(b"abc", "3"), b"abc"),
        (environ(b"abcdef", "3"), b"abc"),  # never past Content-Length
        (environ(b"", "0"), b""),
        (environ(b"abc", None), b""),  # no length, a stream the server does not end: not read
        (environ(b"abc", None, terminated=True), b"abc"),
    ],
)
def test_read_body(env: dict, expected: bytes) -> None:
    assert read_body(env, 4) == expected


@pytest.mark.parametrize(
    ("env", "error"),
    [
        (environ(b"", "5"), BodyTooLarge),  # by its Content-Length: nothing is read
        (environ(b"abcde", None, terminated=True), BodyTooLarge),
        (environ(b"ab", "3"), BodyCut),
    ],
)
def test_read_body_refuses(env: dict, error: type) -> None:
    with pytest.raises(error):
        read_body(env, 4)


def test_utf8_charset() -> None:
    assert (
        is_utf8_charset({}) and is_utf8_charset({"charset": "UTF8"}) and is_utf8_charset({"charset": "utf-8"})
    )
    assert not is_utf8_charset({"charset": "latin-1"})


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTPS://Reviews.Example:443/x", "https://reviews.example"),
        ("http://reviews.example:8080", "http://reviews.example:8080"),
        ("http://[::1]:80/", "http://[::1]"),
        ("ftp://reviews.example", None),
        ("https://user@reviews.example", None),
        ("https://@reviews.example", None),
        ("https:///path", None),
    ],
)
def test_origin_and_the_two_callers(url: str, expected: str | None) -> None:
    assert origin(urlsplit(url)) == expected
    assert origin_of(url, with_path=True) == expected
    assert hub.normalise_url(url) == (None if expected is None else expected + (urlsplit(url).path or "/"))


def test_a_bad_port_is_no_url() -> None:
    assert origin_of("https://reviews.example:99999") is None
    assert hub.normalise_url("https://reviews.example:x/feed") is None


def test_retry_delay_doubles_after_each_failure() -> None:
    assert [hub.retry_delay(30.0, failures) for failures in range(1, hub.MAX_FAILURES)] == [30.0, 60.0]


def test_sqlite_code_is_the_primary_result_code() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = SQLITE_FULL | (1 << 8)  # an extended code
    assert sqlite_code(full) == SQLITE_FULL and sqlite_code(OSError()) == 0
