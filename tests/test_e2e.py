"""The real server on 127.0.0.1: HTTP on the wire, signals, reloads, refusal of bad data, the contract."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ROOT, SMALL_SPECS, LiveServer
from polling import wait_until
from support.factories import Spec, make_docs, write_docs

pytestmark = pytest.mark.slow  # live servers as subprocesses, schemathesis over the served OpenAPI


def get(server: LiveServer, path: str, headers: dict | None = None, method: str = "GET"):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request(method, path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


def test_conditional_get_over_http(live_server: LiveServer) -> None:
    for path in ("/reviews.json", "/api/feed.json", "/feed.xml", "/api/reviews/since/2025-01-01"):
        response, body = get(live_server, path)
        assert response.status == 200 and len(body) == int(response.getheader("Content-Length"))
        etag = response.getheader("ETag")
        again, empty = get(live_server, path, {"If-None-Match": etag})
        assert again.status == 304 and empty == b"" and again.getheader("ETag") == etag
        if "/since/" in path:
            continue  # a slice of /reviews.json: always identity
        # The data files' gzip is made just after READY; until then identity answers.
        assert wait_until(
            lambda: get(live_server, path, {"Accept-Encoding": "gzip"})[0].getheader("Content-Encoding")
        )
        zipped, zbody = get(live_server, path, {"Accept-Encoding": "gzip"})
        assert zipped.getheader("Content-Encoding") == "gzip" and gzip.decompress(zbody) == body


def test_keep_alive_head_and_errors_on_one_connection(live_server: LiveServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=10)
    for method, path, status in [
        ("GET", "/insights.json", 200),
        ("HEAD", "/reviews.json", 200),
        ("GET", "/nope", 404),
        ("POST", "/reviews.json", 405),
        ("GET", "/api/reviews/search?limit=1000", 400),
        ("GET", "/api/reviews/search?rating=5&limit=3", 200),
    ]:
        conn.request(method, path)
        response = conn.getresponse()
        body = response.read()
        assert response.status == status, (method, path, body)
        assert response.getheader("Connection", "").lower() != "close"
        if method == "HEAD":
            assert body == b"" and int(response.getheader("Content-Length")) > 0
        elif status >= 400:
            assert json.loads(body)["error"]
    conn.close()


def test_sighup_reloads_at_once(live_server_factory, small_data_dir: Path, tmp_path: Path) -> None:
    server = live_server_factory(
        "--data-dir", str(small_data_dir), "--state-dir", str(tmp_path / "s"), "--reload-interval", "0"
    )
    old = get(server, "/reviews.json")[0].getheader("ETag")
    write_docs(small_data_dir, *make_docs([*SMALL_SPECS, Spec(date="2025-05-05", text="After SIGHUP")]))
    server.signal(signal.SIGHUP)
    server.wait_for_log(lambda e: e.get("event") == "reloaded")
    response, body = get(server, "/reviews.json")
    assert response.getheader("ETag") != old
    assert json.loads(body)["reviews"][0]["text"] == "After SIGHUP"


def test_polling_reload_and_refused_file_keeps_old_data(
    live_server_factory, small_data_dir: Path, tmp_path: Path
) -> None:
    server = live_server_factory(
        "--data-dir", str(small_data_dir), "--state-dir", str(tmp_path / "s"), "--reload-interval", "0.1"
    )
    first = get(server, "/api/feed.json")[0].getheader("ETag")
    write_docs(small_data_dir, *make_docs([*SMALL_SPECS, Spec(date="2025-05-05", text="Polled in")]))
    wait_until(lambda: get(server, "/api/feed.json")[0].getheader("ETag") != first)
    good = get(server, "/api/feed.json")[0].getheader("ETag")
    (small_data_dir / "reviews.json").write_text('{"business": {"half', "utf-8")  # a half-written file
    entry = server.wait_for_log(lambda e: e.get("event") == "reload_refused")
    assert "reviews.json" in entry["message"] and "not valid JSON" in entry["message"]
    assert get(server, "/api/feed.json")[0].getheader("ETag") == good
    assert get(server, "/healthz")[0].status == 200


def test_server_refuses_to_start_on_bad_data(small_data_dir: Path, tmp_path: Path) -> None:
    doc = json.loads((small_data_dir / "reviews.json").read_text("utf-8"))
    doc["reviews"][0]["date"] = "2025-02-30"
    (small_data_dir / "reviews.json").write_text(json.dumps(doc), "utf-8")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "reviewsd.py"),
            "--port",
            "0",
            "--data-dir",
            str(small_data_dir),
            "--state-dir",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "reviews.json: $.reviews[0].date: schema:format" in result.stderr


def test_text_access_lines_reach_stderr_even_at_exit(
    live_server_factory, sample_data_dir: Path, tmp_path: Path
) -> None:
    """Access lines are batched (written every 50 ms): each one still arrives, complete, before the exit."""
    server = live_server_factory(
        "--data-dir", str(sample_data_dir), "--state-dir", str(tmp_path / "s"), "--log-format", "text"
    )
    size = len(get(server, "/reviews.json")[1])
    etag = get(server, "/feed.xml")[0].getheader("ETag")
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/feed.xml", headers={"If-None-Match": etag})
    assert conn.getresponse().status == 304
    conn.close()
    assert server.stop() == 0
    lines = [entry["message"] for entry in server.log if entry.get("raw")]
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO reviewsd.access: 127\.0\.0\.1 "
    assert any(re.fullmatch(stamp + rf'"GET /reviews\.json" 200 {size} \d+\.\dms', line) for line in lines)
    assert any(re.fullmatch(stamp + r'"GET /feed\.xml" 304 0 \d+\.\dms', line) for line in lines)


def test_send_buffer_reaches_the_server(live_server_factory, sample_data_dir: Path, tmp_path: Path) -> None:
    """--send-buffer is set on the listening socket: one the kernel must cap says so in the log."""
    server = live_server_factory(
        "--data-dir", str(sample_data_dir), "--state-dir", str(tmp_path / "s"), "--send-buffer", str(1 << 30)
    )
    assert any("send buffer of 1073741824 bytes asked" in entry.get("message", "") for entry in server.log)


def test_sigterm_exits_cleanly(live_server: LiveServer) -> None:
    assert get(live_server, "/healthz")[0].status == 200
    assert live_server.stop() == 0


def test_schemathesis_contract(live_server: LiveServer, tmp_path: Path) -> None:
    """A seeded schemathesis run of every check over the read paths.

    One worker and no time budget, so the same cases run every time (with --max-time,
    fuzzing repeats until the time is spent and the cases depend on the machine's speed).
    """
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(ROOT / "tests" / "schemathesis.toml"),
        "run",
        live_server.url("/.well-known/openapi.json"),
        "--checks",
        "all",
        "--seed",
        "20261122",
        "--max-examples",
        "100",
        "--workers",
        "1",
        "--include-method",
        "GET",
        "--exclude-path",
        "/mcp",
        "--exclude-path",
        "/api/websub/hub",
        "--request-timeout",
        "10",
        "--no-color",
        "--suppress-health-check",
        "all",
    ]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "schemathesis_hooks", "PYTHONPATH": str(ROOT / "tests")}
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "No issues found" in result.stdout


def test_an_mcp_body_over_max_body_is_413_by_content_length_or_while_dechunked(
    live_server_factory, sample_data_dir: Path, tmp_path: Path
) -> None:
    server = live_server_factory(
        "--data-dir",
        str(sample_data_dir),
        "--state-dir",
        str(tmp_path / "state"),
        "--max-body",
        "1000",
        "--no-hub",
    )
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    body = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"f":"' + b"x" * 2000 + b'"}}'
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("POST", "/mcp", body, headers)  # Content-Length: refused by the HTTP server, before the app
    response = conn.getresponse()
    assert (response.status, json.loads(response.read())["error"]) == (413, "body_too_large")
    conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("POST", "/mcp", iter([body[:600], body[600:]]), headers, encode_chunked=True)
    response = conn.getresponse()  # the server decodes chunked bodies itself: refused there too (issue 19)
    assert (response.status, json.loads(response.read())["error"]) == (413, "body_too_large")
    conn.close()


def test_a_sighup_during_start_up_reloads_after_ready_instead_of_ending_the_process(
    sample_data_dir: Path, tmp_path: Path
) -> None:
    # The pipeline may publish and signal while the server is still loading (a first start can take
    # seconds): SIGHUP's default action would end it, and systemd counts that as a clean exit.
    def sighup_is_caught(pid: int) -> bool:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)$", status, re.M).group(1), 16)
        return bool(caught & (1 << (signal.SIGHUP - 1)))

    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "reviewsd.py"),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--data-dir",
            str(sample_data_dir),
            "--state-dir",
            str(tmp_path / "state"),
            "--log-format",
            "json",
            "--no-hub",
            "--reload-interval",
            "0",
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    messages: list[str] = []
    reader = threading.Thread(
        target=lambda: messages.extend(json.loads(line)["message"] for line in proc.stderr)
    )
    reader.start()
    try:
        wait_until(lambda: proc.poll() is not None or sighup_is_caught(proc.pid))
        os.kill(proc.pid, signal.SIGHUP)
        sent_before = len(messages)
        wait_until(
            lambda: proc.poll() is not None or any(m.startswith("reloading") for m in messages), timeout=60
        )
        assert proc.poll() is None, messages
        assert not any("listening on" in m for m in messages[:sent_before])  # it came before READY
        order = [
            next(i for i, m in enumerate(messages) if m.startswith(start))
            for start in ("listening on", "a SIGHUP came during start-up", "reloading")
        ]
        assert order == sorted(order), messages  # after READY, and then the reload
    finally:
        proc.terminate()
        proc.wait(15)
        reader.join(15)
