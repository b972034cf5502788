"""The README against the code: its curl examples, run as written (but for the port) against the
real server on 127.0.0.1, and its table of options.

A documented example that no longer works (a renamed parameter, a technician the
bundled data no longer has, a status that changed) or an option documented with
another name or default fails here, not for a reader.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import socket
import subprocess
from dataclasses import fields
from pathlib import Path
from typing import Iterator

import pytest

from config import Config
from dataset import SEARCH_PARAMS_SCHEMA
from conftest import ROOT, LiveServer

README = (ROOT / "README.md").read_text("utf-8")
DOCUMENTED = "127.0.0.1:8080"  # the address every example uses
SETUP = ("apt-get", "systemctl", "pip install")  # install and deployment steps: not run here
# The hub example's callback is on the internet; here it is a port on 127.0.0.1 where nothing listens.
CALLBACK = "https://subscriber.example.net/cb"

# What an example must print besides exiting 0 with some output, keyed by a piece of its text.
EXPECTED = {
    "search?rating=5\\&limit=2": ['"reviews":[', '"rating":5'],
    "/reviews.json | python3 -m json.tool": ['"business": {'],
    "/insights.json | python3 -m json.tool": ['"aspects": ['],
    "/api/feed.json | python3 -m json.tool": ['"version": "https://jsonfeed.org/version/1.1"', "<feed xmlns"],
    "mentions_technician=dr.%20maya%20patel": ['"returned":3,', '"rating":5'],
    "/api/reviews/since/2026-10-01": ['"since":"2026-10-01"'],
    "/api/reviews/$(curl": ['"id":"'],
    "/.well-known/openapi.json": ['"openapi": "3.1.0"'],
    "/healthz": ['"status":"ok"'],
    "If-None-Match: $etag": ["HTTP/1.1 304 Not Modified", " bytes gzip", "HTTP/1.1 204",
                             "Access-Control-Allow-Origin: *"],
    "notifications/initialized": ["HTTP/1.1 202", '"name":"search_reviews"', '"structuredContent":', "HTTP/1.1 204"],
    "hub.mode=subscribe": ["HTTP/1.1 202 Accepted"],
}


def shell_examples() -> list[tuple[int, str]]:
    """(line, text) of every ```sh block of the README that talks to the server."""
    found = []
    for block in re.finditer(r"```sh\n(.*?)```", README, re.S):
        text = block.group(1)
        if DOCUMENTED in text and "curl " in text and not any(step in text for step in SETUP):
            found.append((README.count("\n", 0, block.start()) + 2, text))
    return found


def error_examples() -> list[tuple[str, str, str]]:
    """(status, error code, command) of each row of the README's error table that has an example."""
    rows = re.findall(r"^\| (\d{3}) \| `(\w+)` \|.*\| `(curl [^`]+|head [^`]+)` \|$", README, re.M)
    return [(status, code, command.replace("\\|", "|")) for status, code, command in rows]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    running = LiveServer(["--data-dir", str(ROOT / "data"), "--state-dir", str(tmp_path_factory.mktemp("state")),
                          "--reload-interval", "0", "--allow-private-callbacks"])
    yield running
    running.stop()


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound here, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def run(command: str, server: LiveServer, closed_port: int) -> subprocess.CompletedProcess:
    if shutil.which("curl") is None:
        pytest.fail("curl not found: install it (apt-get install -y curl); the README's examples use it")
    script = command.replace(DOCUMENTED, f"127.0.0.1:{server.port}")
    script = script.replace(CALLBACK, f"https://127.0.0.1:{closed_port}/cb")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_the_readme_has_the_examples_this_test_knows() -> None:
    examples = [text for _, text in shell_examples()]
    for piece in EXPECTED:
        assert sum(piece in text for text in examples) == 1, piece
    assert len(examples) == len(EXPECTED)
    assert [status for status, _, _ in error_examples()] == ["400", "404", "405", "413", "414", "431"]


@pytest.mark.parametrize(("line", "example"), shell_examples(), ids=lambda value: str(value)[:40])
def test_each_example_works_as_written(line: int, example: str, server: LiveServer, closed_port: int) -> None:
    done = run(example, server, closed_port)
    assert (done.returncode, done.stderr) == (0, ""), f"README line {line}:\n{example}"
    assert done.stdout.strip()
    assert '"error":' not in done.stdout, done.stdout[:2000]
    expected = [wanted for piece, strings in EXPECTED.items() if piece in example for wanted in strings]
    assert expected, f"README line {line}: an example this test does not know"
    for wanted in expected:
        assert wanted in done.stdout, (wanted, done.stdout[:3000])


@pytest.mark.parametrize(("status", "code", "command"), error_examples(), ids=lambda value: str(value)[:40])
def test_each_error_example_answers_its_documented_error(status: str, code: str, command: str, server: LiveServer,
                                                         closed_port: int) -> None:
    done = run(command, server, closed_port)
    assert done.returncode == 0, done.stderr
    assert f'"error":"{code}"' in done.stdout, done.stdout[:2000]
    if " -si " in command:
        assert done.stdout.startswith(f"HTTP/1.1 {status} ")


def test_the_options_table_names_every_option_with_its_variable_and_default() -> None:
    section = README[README.index("## Options"):README.index("## Deploy on a VM")]
    rows = re.findall(r"^\| `--([a-z-]+)`(?: / `--no-[a-z-]+`)? \| `(REVIEWSD_[A-Z_]+)` \|([^|]*)\|", section, re.M)
    documented = {flag.replace("-", "_"): (variable, default.strip()) for flag, variable, default in rows}
    assert len(rows) == len(documented) and set(documented) == {f.name for f in fields(Config)}
    for option in fields(Config):
        variable, default = documented[option.name]
        assert variable == f"REVIEWSD_{option.name.upper()}"
        if isinstance(option.default, bool):
            assert default == ("on" if option.default else "off"), option.name
        elif isinstance(option.default, (int, float)):
            assert float(default.strip("`")) == option.default, option.name
        elif option.default == "":
            assert default in ("", "system store", "`http://HOST:PORT`"), option.name  # an empty value, described
        elif option.name in ("data_dir", "state_dir"):
            assert default == f"`{Path(option.default).name}/` beside reviewsd.py", option.name
        else:
            assert default == f"`{option.default}`", option.name


def test_the_endpoints_table_lists_every_operation_of_the_openapi_document(server: LiveServer) -> None:
    section = README[README.index("| Method and path |"):README.index("### GET /reviews.json")]
    documented = {(method, path.split("?")[0]) for method, path in re.findall(r"`([A-Z]+) (/[^`]*)`", section)}
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/.well-known/openapi.json")
    openapi = json.loads(conn.getresponse().read())
    conn.close()
    described = {(method.upper(), path) for path, item in openapi["paths"].items() for method in item
                 if method in ("get", "post", "delete", "put", "patch")}
    assert documented == described


def mcp_tools(server: LiveServer) -> list[dict]:
    """tools/list from the server, over one MCP session."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}), headers)
    response = conn.getresponse()
    response.read()
    headers = {**headers, "Mcp-Session-Id": response.getheader("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-06-18"}
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), headers)
    tools = json.loads(conn.getresponse().read())["result"]["tools"]
    conn.close()
    return tools


def test_the_tools_table_lists_every_mcp_tool_with_its_result_fields(server: LiveServer) -> None:
    section = README[README.index("| Tool | Arguments | Result |"):README.index("**Resources.**")]
    documented = {name: set(re.findall(r"\w+", fields_)) for name, fields_ in
                  re.findall(r"^\| `(\w+)` \|.*?\| `\{([\w, ]+)\}`", section, re.M)}
    described = {tool["name"]: set(tool["outputSchema"]["properties"]) for tool in mcp_tools(server)}
    assert documented == described


def test_the_search_parameters_table_states_the_schema() -> None:
    section = README[README.index("## Search parameters"):README.index("## Conditional requests")]
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| ([^|]+) \|", section, re.M)
    assert [name for name, _, _ in rows] == list(SEARCH_PARAMS_SCHEMA["properties"])
    for name, kind, constraint in rows:
        schema = SEARCH_PARAMS_SCHEMA["properties"][name]
        assert kind == ("date" if schema.get("format") == "date" else schema["type"]), name
        low, high = (schema.get("minimum", schema.get("minLength")), schema.get("maximum", schema.get("maxLength")))
        bounds = re.match(r"(\d+)–(\d+)", constraint)
        assert ((int(bounds[1]), int(bounds[2])) if bounds else (None, None)) == (low, high), name
        assert ("characters" in constraint) == ("minLength" in schema), name
        default = re.search(r"default (\d+)", constraint)
        assert (int(default[1]) if default else None) == schema.get("default"), name
