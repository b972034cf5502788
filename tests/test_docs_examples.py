"""Every shell example of README.md and docs/*.md, run as written against a live server, its output
compared with the output the page shows.

The format (docs/internals.md, "Examples in the docs"):

- a ```sh block runs with bash from the checkout, against a server on the bundled data that
  the examples know as 127.0.0.1:8080 (its real port is put in; so is the throw-away
  WebSub subscriber's for 127.0.0.1:8443, and this interpreter for `.venv/bin/python`);
- the ```text block right after it is what it prints (stdout and stderr together, as a
  terminal shows them), compared exactly but for `...`, which stands for any text;
- a block that cannot run here (installing, systemd, a server of its own) says why on the
  line before it: `<!-- not run: REASON -->`.

So a stale count, a renamed field or an example that stopped working fails here, not for a reader.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
from conftest import ROOT, LiveServer

pytestmark = pytest.mark.slow  # runs every shell example of the docs against a live server

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SERVER = "127.0.0.1:8080"  # the address every example uses
SUBSCRIBER = "127.0.0.1:8443"  # the throw-away WebSub subscriber's (docs/websub.md)
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\n$")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\n", re.M | re.S)


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    script: str
    expected: str | None  # None: not run
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = page.read_text("utf-8")
        blocks = list(FENCE.finditer(text))
        for index, block in enumerate(blocks):
            if block.group(1) != "sh":
                continue
            name, line = page.relative_to(ROOT).as_posix(), text.count("\n", 0, block.start()) + 1
            skipped = NOT_RUN.search(text, 0, block.start())
            if skipped and skipped.end() == block.start():
                found.append(Example(name, line, block.group(2), None, skipped.group(1)))
                continue
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            between = text[block.end() : following.start()] if following else "x"
            assert following is not None and following.group(1) == "text" and not between.strip(), (
                f"{name}:{line}: a ```sh block that runs must be followed by a ```text block of its output"
            )
            found.append(Example(name, line, block.group(2), following.group(2)))
    return found


EXAMPLES = examples()


def matches(expected: str, actual: str) -> bool:
    """`actual` is `expected` with each `...` standing for any text (also several lines, or none)."""
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual, re.S) is not None


def tidy(output: str) -> str:
    return "\n".join(line.rstrip() for line in output.replace("\r\n", "\n").split("\n")).strip("\n") + "\n"


SUBSCRIBER_LINES: "queue.Queue[str]" = queue.Queue()  # what the throw-away subscriber prints


@pytest.fixture(scope="module")
def subscriber(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """tools/websub-subscriber on a free port: (port, its CA file); its lines go to SUBSCRIBER_LINES."""
    ca = tmp_path_factory.mktemp("subscriber") / "ca.pem"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "websub-subscriber"), "--port", "0", "--ca-out", str(ca)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    first = proc.stdout.readline()
    match = re.match(r"listening on https://127\.0\.0\.1:(\d+)/", first)
    assert match, first
    reader = threading.Thread(
        target=lambda: [SUBSCRIBER_LINES.put(line.rstrip("\n")) for line in proc.stdout], daemon=True
    )
    reader.start()
    yield int(match[1]), ca
    proc.terminate()
    proc.wait(10)
    reader.join(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, subscriber: tuple[int, Path]) -> Iterator[LiveServer]:
    running = LiveServer(
        [
            "--data-dir",
            str(ROOT / "data"),
            "--state-dir",
            str(tmp_path_factory.mktemp("state")),
            "--reload-interval",
            "0",
            "--allow-private-callbacks",
            "--ca-file",
            str(subscriber[1]),
        ]
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TMPDIR for the examples: what their mktemp makes is removed with the test's files."""
    return tmp_path_factory.mktemp("scratch")


def run(example: Example, server: LiveServer, subscriber_port: int, scratch: Path) -> tuple[int, str]:
    if shutil.which("curl") is None:
        pytest.fail("curl not found: the docs' examples use it; install it (apt-get install -y curl)")
    script = (
        example.script.replace(SERVER, f"127.0.0.1:{server.port}")
        .replace(SUBSCRIBER, f"127.0.0.1:{subscriber_port}")
        .replace(".venv/bin/python", sys.executable)
    )
    done = subprocess.run(
        ["bash", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    output = done.stdout.replace(f"127.0.0.1:{server.port}", SERVER).replace(
        f"127.0.0.1:{subscriber_port}", SUBSCRIBER
    )
    return done.returncode, tidy(output)


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.expected is not None], ids=str)
def test_each_example_prints_what_the_docs_show(
    example: Example, server: LiveServer, subscriber: tuple[int, Path], scratch: Path
) -> None:
    status, output = run(example, server, subscriber[0], scratch)
    assert status == 0, f"{example}: exit status {status}\n{example.script}\n{output}"
    assert matches(tidy(example.expected), output), (
        f"{example}: the output differs from the docs.\n--- docs:\n{example.expected}\n--- actual:\n{output}"
    )


def test_the_docs_have_examples_and_say_why_any_is_not_run() -> None:
    run_here = [e for e in EXAMPLES if e.expected is not None]
    assert len(run_here) >= 20
    assert {e.page for e in run_here} >= {
        "README.md",
        "docs/http-api.md",
        "docs/websub.md",
        "docs/data-format.md",
    }
    for example in EXAMPLES:
        if example.expected is None:
            assert len(example.reason) > 10, example


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_bytes()) < 12_000


def test_the_quick_start_commands_are_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    setup = next(e for e in EXAMPLES if e.page == "README.md" and e.expected is None)
    commands = [line for line in setup.script.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2, setup
    ci = (ROOT / ".ci" / "run").read_text("utf-8").strip().splitlines()[-1]
    assert commands[1] == ci
    assert "Ctrl-C" in readme


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        ("a\n", "a\n", True),
        ("a ... c\n", "a b b c\n", True),
        ("...\n", "x\ny\n", True),
        ("count 9\n", "count 12\n", False),
        ('"matched":40...', '"matched":41,"x":1', False),
    ],
)
def test_the_comparison(expected: str, actual: str, same: bool) -> None:
    assert matches(expected, actual) is same


def help_options() -> dict[str, str | None]:
    """Each option `reviewsd.py --help` lists (by its first flag) -> the default it shows (None: none)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("REVIEWSD_")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "reviewsd.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "COLUMNS": "200"},
        check=True,
    )
    entries = re.split(r"\n  (?=-)", done.stdout.split("\noptions:\n", 1)[1].split("\n\n", 1)[0])
    options = {}
    for entry in entries:
        text = " ".join(entry.split())
        flag = text.split()[0].rstrip(",")
        if flag not in ("-h", "--help", "--version"):
            default = re.search(r"\(default: ([^)]*)\)$", text)
            options[flag] = default[1] if default else None
    return options


def documented_options() -> dict[str, tuple[str, str]]:
    """Each row of docs/configuration.md's options table: flag -> (variable, default cell)."""
    page = (ROOT / "docs" / "configuration.md").read_text("utf-8")
    section = page[page.index("## Options") : page.index("## Other environment variables")]
    rows = re.findall(
        r"^\| `(--[a-z0-9-]+)`(?: / `--no-[a-z-]+`)? \| `(REVIEWSD_[A-Z0-9_]+)` \| ([^|]*) \|", section, re.M
    )
    assert len(rows) == len({flag for flag, _, _ in rows})
    return {flag: (variable, default.strip()) for flag, variable, default in rows}


def test_the_configuration_page_lists_every_option_of_help_with_its_variable_and_default() -> None:
    shown, documented = help_options(), documented_options()
    assert set(documented) == set(shown), "options documented but not in --help, or the other way round"
    for flag, (variable, cell) in documented.items():
        assert variable == "REVIEWSD_" + flag[2:].replace("-", "_").upper(), flag
        default = shown[flag]
        literal = re.fullmatch(r"`([^`]*)`( beside reviewsd\.py)?(?:;? \(.*\)|; installed.*)?", cell)
        if default in ("True", "False"):
            assert cell == ("on" if default == "True" else "off"), flag
        elif default is None or not default.strip():
            assert literal is None and cell, (
                f"{flag}: --help shows no default, the page must say what empty means"
            )
        elif literal and literal[2]:  # a directory beside the code
            assert Path(default) == ROOT / literal[1].rstrip("/"), flag
        elif literal and re.fullmatch(r"\d+(\.\d+)?", literal[1]):
            assert float(literal[1]) == float(default), flag
        else:
            assert literal and literal[1] == default, (flag, cell, default)


def test_the_minimal_example_is_accepted_and_served(tmp_path: Path) -> None:
    from werkzeug.test import Client

    from reviewsd_app import reviewsd
    from reviewsd_app.reviews.dataset import check_data_dir

    minimal = ROOT / "examples" / "minimal"
    assert check_data_dir(str(minimal)) == []
    app = reviewsd.create_app(
        reviewsd.Config(data_dir=str(minimal), state_dir=str(tmp_path), hub=False, reload_interval=0)
    )
    found = Client(app).get("/api/reviews/search?mentions_technician=Sam").get_json()
    assert [review["author"] for review in found["reviews"]] == ["Ana P."]


def page(name: str) -> str:
    return (ROOT / name).read_text("utf-8")


def test_the_search_parameters_table_states_the_schema() -> None:
    from reviewsd_app.reviews.dataset import SEARCH_PARAMS_SCHEMA

    section = page("docs/http-api.md").split("### GET /api/reviews/search", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| ([^|]+) \|", section, re.M)
    assert [name for name, _, _ in rows] == list(SEARCH_PARAMS_SCHEMA["properties"])
    for name, kind, constraint in rows:
        schema = SEARCH_PARAMS_SCHEMA["properties"][name]
        assert kind == ("date" if schema.get("format") == "date" else schema["type"]), name
        low, high = (
            schema.get("minimum", schema.get("minLength")),
            schema.get("maximum", schema.get("maxLength")),
        )
        bounds = re.match(r"(\d+)–(\d+)", constraint)
        assert ((int(bounds[1]), int(bounds[2])) if bounds else (None, None)) == (low, high), name
        assert ("characters" in constraint) == ("minLength" in schema), name
        if isinstance(schema.get("default"), str):  # an enum's: "`newest` (default)"
            assert f"`{schema['default']}` (default)" in constraint, name
            continue
        default = re.search(r"default (\d+)", constraint)
        assert (int(default[1]) if default else None) == schema.get("default"), name


@pytest.mark.parametrize("name", ["README.md", "docs/http-api.md"])
def test_the_endpoints_table_lists_every_operation_of_the_openapi_document(name: str) -> None:
    from reviewsd_app import openapi

    section = page(name).split("| Method and path |", 1)[1].split("\n\n", 1)[0]
    documented = {
        (method, path.split("?")[0]) for method, path in re.findall(r"`([A-Z]+) (/[^`]*)`", section)
    }
    described = {
        (method.upper(), path)
        for path, item in openapi.build_openapi("http://x")["paths"].items()
        for method in item
    }
    assert documented == described


def test_the_throw_away_subscriber_is_verified_as_websub_md_shows(
    server: LiveServer, subscriber: tuple[int, Path], scratch: Path
) -> None:
    text = page("docs/websub.md").split("## Trying it on one machine", 1)[1]
    example = next(
        e
        for e in EXAMPLES
        if e.page == "docs/websub.md"
        and e.expected is not None
        and "8443/cb" in e.script
        and "token" not in e.script
    )
    shown = re.search(
        r"The subscriber prints the verification it answered:\n\n```text\n(.*?)```", text, re.S
    )[1]
    wanted = shown.splitlines()[1].replace(SERVER, f"127.0.0.1:{server.port}")
    assert run(example, server, subscriber[0], scratch) == (0, "HTTP/1.1 202 Accepted\n")
    deadline = time.monotonic() + 30
    while (SUBSCRIBER_LINES.get(timeout=max(0.1, deadline - time.monotonic()))) != wanted:
        assert time.monotonic() < deadline, f"the subscriber never printed {wanted!r}"


@pytest.mark.parametrize("path", PAGES, ids=lambda path: path.name)
def test_every_json_snippet_is_json(path: Path) -> None:
    """Configuration snippets (Claude Desktop's, say) are copied as they are: they must parse."""
    import json

    for block in FENCE.finditer(path.read_text("utf-8")):
        if block.group(1) == "json":
            json.loads(block.group(2))
