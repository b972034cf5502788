"""Tests for http_parser.py: valid requests against h11 (hypothesis), invalid ones against a table."""

from __future__ import annotations

import h11
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reviewsd_app.httpserver.parser import (
    MAX_HEADER_BYTES,
    MAX_REMEMBERED_HEAD,
    MAX_REQUEST_LINE,
    HTTPError,
    Request,
    RequestParser,
)  # noqa: E402

# -- generating valid requests -------------------------------------------------------------

TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
PCHAR = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@%/"
VCHAR = "".join(chr(c) for c in range(0x21, 0x7F))
SPECIAL = {"host", "content-length", "transfer-encoding", "connection", "expect", "te", "trailer", "upgrade"}

tokens = st.text(TCHAR, min_size=1, max_size=12)
header_names = tokens.filter(lambda n: n.lower() not in SPECIAL)
# A field value: visible characters (and obs-text) with single spaces or tabs inside, none around.
field_values = st.lists(st.text(VCHAR + "\x80\xe9\xff", min_size=1, max_size=10), max_size=4).map(" ".join)
hosts = st.sampled_from(["example.com", "127.0.0.1:8080", "[::1]:80", "a-b.c_d~e", "x.example:1", ""])
targets = st.builds(
    lambda path, query: "/" + path + (f"?{query}" if query is not None else ""),
    st.text(PCHAR, max_size=20),
    st.none() | st.text(PCHAR + "?", max_size=20),
)
methods = st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"])
ows = st.sampled_from(["", " ", "\t", "  "])
chunk_exts = st.lists(
    st.tuples(
        tokens,
        st.none()
        | tokens
        | st.text(VCHAR.replace('"', "").replace("\\", ""), max_size=6).map(lambda v: f'"{v}"'),
    ),
    max_size=2,
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[bytes, dict]:
    """One valid request as bytes, and what a parser must see in it."""
    method, target = draw(methods), draw(targets)
    headers = [("Host", draw(hosts))]
    headers += draw(st.lists(st.tuples(header_names, field_values), max_size=5))
    framing = draw(st.sampled_from(["none", "length", "chunked"]))
    body = draw(st.binary(max_size=300))
    if framing == "length":
        headers.append(("Content-Length", str(len(body))))
    elif framing == "chunked":
        headers.append(
            ("Transfer-Encoding", draw(st.sampled_from(["chunked", "Chunked", "chunked "]).map(str.strip)))
        )
    else:
        body = b""
    draw(st.randoms()).shuffle(headers)
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(
        f"{n}:{draw(ows)}{v}{draw(ows)}\r\n" for n, v in headers
    )
    data = head.encode("latin-1") + b"\r\n"
    if framing == "length":
        data += body
    elif framing == "chunked":
        data += draw(chunked(body))
    expected = {
        "method": method,
        "target": target,
        "body": body,
        "headers": [(n.lower(), v) for n, v in headers],
    }
    return data, expected


@st.composite
def chunked(draw: st.DrawFn, body: bytes) -> bytes:
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=4)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)]) if b > a]
    out = b""
    for piece in [*pieces, b""]:
        size = draw(st.sampled_from(["%x", "%X", "00%x"])) % len(piece)
        # No whitespace before ";": RFC 9112 allows it (BWS), h11 does not (pinned in a test below).
        exts = "".join(
            f";{draw(ows)}{n}" + (f"{draw(ows)}={draw(ows)}{v}" if v is not None else "")
            for n, v in draw(chunk_exts)
        )
        out += f"{size}{exts}\r\n".encode() + piece + (b"\r\n" if piece else b"")
    trailer = draw(st.lists(st.tuples(header_names, field_values), max_size=2))
    return out + "".join(f"{n}: {v}\r\n" for n, v in trailer).encode("latin-1") + b"\r\n"


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)]) if b > a]  # b"" is EOF to h11


# -- the two parsers on one byte stream --------------------------------------------------------


def ours(pieces: list[bytes]) -> list[dict]:
    parser, seen = RequestParser(max_body=1 << 20), []
    for piece in pieces:
        parser.feed(piece)
        while (request := parser.next_request()) is not None:
            seen.append(summary(request))
    assert not parser.buf and parser.pending is None
    return seen


def summary(request: Request) -> dict:
    return {
        "method": request.method,
        "target": request.target,
        "body": request.body or b"",
        "headers": [(n.lower(), v) for n, v in request.headers],
    }


def lower_codings(seen: list[dict]) -> list[dict]:
    """h11 lowercases Transfer-Encoding's value (codings are case-insensitive); we keep it as sent."""
    return [
        {**r, "headers": [(n, v.lower() if n == "transfer-encoding" else v) for n, v in r["headers"]]}
        for r in seen
    ]


def h11s(pieces: list[bytes]) -> list[dict]:
    conn, seen, current = h11.Connection(h11.SERVER), [], None
    for piece in pieces:
        conn.receive_data(piece)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED:
                break
            if isinstance(event, h11.Request):
                current = {
                    "method": event.method.decode(),
                    "target": event.target.decode("latin-1"),
                    "body": b"",
                    "headers": [(n.decode(), v.decode("latin-1")) for n, v in event.headers],
                }
            elif isinstance(event, h11.Data):
                current["body"] += event.data
            elif isinstance(event, h11.EndOfMessage):
                seen.append(current)
                conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
                conn.send(h11.EndOfMessage())
                conn.start_next_cycle()
    return seen


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(requests(), min_size=1, max_size=3), st.lists(st.integers(0, 10_000), max_size=6))
@example(
    [
        (
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            {"method": "GET", "target": "/", "body": b"", "headers": [("host", "x")]},
        )
    ],
    [],
)
def test_valid_requests_parse_as_h11_parses_them(stream: list[tuple[bytes, dict]], cuts: list[int]) -> None:
    data = b"".join(d for d, _ in stream)  # pipelined: several requests back to back
    pieces = split(data, cuts)
    got = ours(pieces)
    assert lower_codings(got) == lower_codings(h11s(pieces))
    assert got == [expected for _, expected in stream]


@given(requests())
def test_a_request_fed_one_byte_at_a_time_parses_the_same(generated: tuple[bytes, dict]) -> None:
    data, expected = generated
    assert ours([data[i : i + 1] for i in range(len(data))]) == [expected]


# -- invalid requests --------------------------------------------------------------------------

H = b"Host: x\r\n"
CHUNKED = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"

INVALID = [
    # the request line (RFC 9112 3, RFC 9110 9.1)
    (b"get / HTTP/1.1\r\n" + H + b"\r\n", 501),  # methods are case-sensitive
    (b"FOO / HTTP/1.1\r\n" + H + b"\r\n", 501),
    (b"CONNECT x:443 HTTP/1.1\r\n" + H + b"\r\n", 501),
    (b"G(T / HTTP/1.1\r\n" + H + b"\r\n", 400),  # not a token
    (b"GET  / HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET / HTTP/1.1 \r\n" + H + b"\r\n", 400),
    (b" GET / HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET\t/ HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET /\r\n" + H + b"\r\n", 400),  # HTTP/0.9
    (b"GET / HTTP/2.0\r\n" + H + b"\r\n", 505),
    (b"GET / HTTP/0.9\r\n" + H + b"\r\n", 505),
    (b"GET / HTTP/3.0\r\n" + H + b"\r\n", 505),
    (b"GET / http/1.1\r\n" + H + b"\r\n", 400),
    (b"GET / HTTP/1.10\r\n" + H + b"\r\n", 400),
    (b"GET / HTTP/1\r\n" + H + b"\r\n", 400),
    (b"GET / HTTP/11\r\n" + H + b"\r\n", 400),
    # the request-target (RFC 9112 3.2)
    (b"GET /a\x01b HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET /a\x7fb HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET /a\x00b HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET /healthz#frag HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET /caf\xc3\xa9 HTTP/1.1\r\n" + H + b"\r\n", 400),  # not ASCII: a URI has none
    (b"GET nopath HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET * HTTP/1.1\r\n" + H + b"\r\n", 400),  # asterisk-form is OPTIONS' only
    (b"GET example.com:80 HTTP/1.1\r\n" + H + b"\r\n", 400),  # authority-form is CONNECT's only
    (b"GET ftp://x/ HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET http:///x HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET http://a/b/../#f HTTP/1.1\r\n" + H + b"\r\n", 400),
    (b"GET http://ev il/ HTTP/1.1\r\n" + H + b"\r\n", 400),
    # Host (RFC 9112 3.2)
    (b"GET / HTTP/1.1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: evil.example/x\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a:b\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a?b\r\n\r\n", 400),
    (b"GET / HTTP/1.0\r\nHost: a/b\r\n\r\n", 400),  # optional in 1.0, but valid when sent
    (b"GET http://a/ HTTP/1.1\r\n\r\n", 400),  # absolute-form still needs Host on 1.1
    # header lines (RFC 9112 5)
    (b"GET / HTTP/1.1\r\n" + H + b"X-A: 1\r\n folded\r\n\r\n", 400),  # obs-fold
    (b"GET / HTTP/1.1\r\n" + H + b"X-A: 1\r\n\tfolded\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n Host: x\r\n\r\n", 400),  # whitespace before the first field
    (b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),  # whitespace before the colon
    (b"GET / HTTP/1.1\r\nHost\t: x\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n" + H + b"X A: 1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n" + H + b": 1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n" + H + b"NoColon\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x00b\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x7fb\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x0bb\r\n\r\n", 400),
    # line ends (RFC 9112 2.2): CRLF only
    (b"GET / HTTP/1.1\n" + H + b"\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\nX-A: 1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\nHost: x\n\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\rX-A: 1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nX-A: a\rb\r\n" + H + b"\r\n", 400),
    (b"GET /\r HTTP/1.1\r\n" + H + b"\r\n", 400),
    # Content-Length and Transfer-Encoding (RFC 9112 6)
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1e3\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: -1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: +1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 0x1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1 1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length:\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: \xd9\xa1\r\n\r\n", 400),  # a non-ASCII digit
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1, 1\r\n\r\n1", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1\r\nContent-Length: 1\r\n\r\n1", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n12", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 99999999999999999999\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 2000000\r\n\r\n", 413),
    (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip\r\n\r\n", 400),  # chunked is not final
    (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, gzip\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, chunked\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: xchunked\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked;q=1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: \r\n\r\n", 400),
    (
        b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n",
        501,
    ),  # a coding not implemented
    (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    # chunked framing (RFC 9112 7.1)
    (CHUNKED + b"2\r\n{}\r\n0\r\nXXGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", 400),  # issue 19's repro 2
    (CHUNKED + b"0x2\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"+2\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"-0\r\n\r\n", 400),
    (CHUNKED + b"0_2\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b" 2\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"\x0b2\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"2\x0c\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"2 \r\n{}\r\n0\r\n\r\n", 400),  # whitespace is only allowed before ";"
    (CHUNKED + b"\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"g\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"11111111111111111\r\n", 400),  # a chunk-size of 17 hex digits
    (CHUNKED + b"fffffffffff\r\n", 413),
    (CHUNKED + b"2;\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"2;a=\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b'2;a="b\r\n{}\r\n0\r\n\r\n', 400),
    (CHUNKED + b"2;a=b c\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"2;a\x00\r\n{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"2\r\n{}XX0\r\n\r\n", 400),  # no CRLF after the data
    (CHUNKED + b"2\r\n{}\n0\r\n\r\n", 400),
    (CHUNKED + b"2\n{}\r\n0\r\n\r\n", 400),  # bare LF ends a chunk-size line
    (CHUNKED + b"2\r{}\r\n0\r\n\r\n", 400),
    (CHUNKED + b"0\r\n\n", 400),
    (CHUNKED + b"0\r\nX-T: 1\n\r\n", 400),
    (CHUNKED + b"0\r\nX-T : 1\r\n\r\n", 400),  # a trailer field is still a field line
    (CHUNKED + b"0\r\n folded\r\n\r\n", 400),
    (CHUNKED + b"0\r\nX-T: a\x01\r\n\r\n", 400),
    (CHUNKED + b"0\r\n" + b"X-T: " + b"t" * MAX_HEADER_BYTES + b"\r\n\r\n", 431),
    (CHUNKED + b"1" + b";a=b" * 2000 + b"\r\n", 400),  # a chunk line over its bound
    # limits
    (b"GET /" + b"a" * MAX_REQUEST_LINE + b" HTTP/1.1\r\n" + H + b"\r\n", 414),
    (b"GET / HTTP/1.1\r\n" + H + b"X-B: " + b"b" * MAX_HEADER_BYTES + b"\r\n\r\n", 431),
    (b"GET / HTTP/1.1\r\n" + H + b"".join(b"X-%d: v\r\n" % i for i in range(100)) + b"\r\n", 431),
]


@pytest.mark.parametrize("data, status", INVALID, ids=[repr(d[:60]) for d, _ in INVALID])
def test_invalid_requests_are_refused_with_their_status(data: bytes, status: int) -> None:
    for pieces in ([data], [data[i : i + 1] for i in range(len(data))]):  # whole, then byte by byte
        parser = RequestParser(max_body=1 << 20)
        with pytest.raises(HTTPError) as refused:
            for piece in pieces:
                parser.feed(piece)
                while parser.next_request() is not None:
                    pass
        assert refused.value.status == status, refused.value.message


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", ("/a", "", "x", True)),
        (b"\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n", ("/a", "", "x", True)),  # empty lines first: ignored
        (b"GET /a?b=c?d HTTP/1.1\r\nHost: x\r\n\r\n", ("/a", "b=c?d", "x", True)),
        (
            b"GET http://h:1/p?q HTTP/1.1\r\nHost: x\r\n\r\n",
            ("/p", "q", "h:1", True),
        ),  # the target's authority wins
        (b"GET HTTP://h HTTP/1.1\r\nHost: x\r\n\r\n", ("/", "", "h", True)),
        (b"GET https://h?q HTTP/1.1\r\nHost: x\r\n\r\n", ("/", "q", "h", True)),
        (b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", ("*", "", "x", True)),
        (b"GET / HTTP/1.0\r\n\r\n", ("/", "", None, False)),
        (b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", ("/", "", None, True)),
        (b"GET / HTTP/1.1\r\nHost: x\r\nConnection: a, Close\r\n\r\n", ("/", "", "x", False)),
        (b"GET / HTTP/1.1\r\nHost:\r\n\r\n", ("/", "", "", True)),  # an empty Host is valid (RFC 9112 3.2)
        (b"GET / HTTP/1.9\r\nHost: x\r\n\r\n", ("/", "", "x", True)),  # served as HTTP/1.1
    ],
)
def test_head_fields(data: bytes, expected: tuple) -> None:
    parser = RequestParser()
    parser.feed(data)
    request = parser.next_request()
    assert request is not None
    assert (request.path, request.query, request.host, request.keep_alive) == expected


def test_chunk_extensions_and_trailers_are_ignored() -> None:
    parser = RequestParser()
    parser.feed(
        CHUNKED + b'2;name=value\r\n{}\r\n3 ; a = "q\\"x" ;b\r\nabc\r\n000;z\r\nX-Sum: 1\r\n\r\n'
        b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    first, second = parser.next_request(), parser.next_request()
    assert first is not None and first.body == b"{}abc"
    assert second is not None and second.target == "/next"


def test_a_body_waits_for_all_its_bytes_and_leaves_the_next_request() -> None:
    parser = RequestParser()
    parser.feed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nab")
    assert parser.next_request() is None
    assert parser.pending is not None and parser.pending.expect_continue
    parser.feed(b"cdeGET /")
    request = parser.next_request()
    assert request is not None and request.body == b"abcde" and parser.pending is None
    assert parser.next_request() is None and parser.buf == b"GET /"


def test_body_over_max_body_in_chunks_is_413() -> None:
    parser = RequestParser(max_body=5)
    parser.feed(CHUNKED + b"3\r\nabc\r\n3\r\n")
    with pytest.raises(HTTPError) as refused:
        parser.next_request()
    assert refused.value.status == 413


def test_a_refusal_names_the_request_it_refused() -> None:
    parser = RequestParser(max_body=5)
    parser.feed(b"POST /up?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\n")
    with pytest.raises(HTTPError) as refused:
        parser.next_request()
    assert (refused.value.method, refused.value.target) == ("POST", "/up?x=1")


def test_a_head_sent_again_is_not_parsed_again() -> None:
    """A keep-alive client's repeated head (a poll with its If-None-Match) reuses the last parse; any other
    head, a long one among them, is parsed anew, and a body still comes from the bytes that follow."""
    poll = b'GET /api/feed.json HTTP/1.1\r\nHost: x\r\nIf-None-Match: W/"1"\r\n\r\n'
    post = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"
    long = b"GET / HTTP/1.1\r\nHost: x\r\nCookie: " + b"c" * MAX_REMEMBERED_HEAD + b"\r\n\r\n"
    parser = RequestParser()
    parser.feed(poll * 2 + post + b"{}" + post + b"[]" + long * 2 + poll)
    first, again = parser.next_request(), parser.next_request()
    assert again is first and first.headers[1] == ("If-None-Match", 'W/"1"')
    one, two = parser.next_request(), parser.next_request()
    assert (one.body, two.body) == (b"{}", b"[]") and one.method == "POST"
    big, big_again = parser.next_request(), parser.next_request()
    assert big == big_again and big is not big_again
    assert parser.next_request() == first and parser.next_request() is None
