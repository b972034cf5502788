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

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ROOT, LiveServer

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
            between = text[block.end():following.start()] if following else "x"
            assert following is not None and following.group(1) == "text" and not between.strip(), (
                f"{name}:{line}: a ```sh block that runs must be followed by a ```text block of its output")
            found.append(Example(name, line, block.group(2), following.group(2)))
    return found


EXAMPLES = examples()


def matches(expected: str, actual: str) -> bool:
    """`actual` is `expected` with each `...` standing for any text (also several lines, or none)."""
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual, re.S) is not None


def tidy(output: str) -> str:
    return "\n".join(line.rstrip() for line in output.replace("\r\n", "\n").split("\n")).strip("\n") + "\n"


@pytest.fixture(scope="module")
def subscriber(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """tools/websub-subscriber on a free port: (port, its CA file)."""
    ca = tmp_path_factory.mktemp("subscriber") / "ca.pem"
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "websub-subscriber"), "--port", "0",
                             "--ca-out", str(ca)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = proc.stdout.readline()
    match = re.match(r"listening on https://127\.0\.0\.1:(\d+)/", first)
    assert match, first
    yield int(match[1]), ca
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, subscriber: tuple[int, Path]) -> Iterator[LiveServer]:
    running = LiveServer(["--data-dir", str(ROOT / "data"), "--state-dir", str(tmp_path_factory.mktemp("state")),
                          "--reload-interval", "0", "--allow-private-callbacks", "--ca-file", str(subscriber[1])])
    yield running
    running.stop()


def run(example: Example, server: LiveServer, subscriber_port: int) -> tuple[int, str]:
    if shutil.which("curl") is None:
        pytest.fail("curl not found: the docs' examples use it; install it (apt-get install -y curl)")
    script = (example.script.replace(SERVER, f"127.0.0.1:{server.port}")
              .replace(SUBSCRIBER, f"127.0.0.1:{subscriber_port}").replace(".venv/bin/python", sys.executable))
    done = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=60, cwd=ROOT)
    output = done.stdout.replace(f"127.0.0.1:{server.port}", SERVER).replace(f"127.0.0.1:{subscriber_port}",
                                                                                SUBSCRIBER)
    return done.returncode, tidy(output)


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.expected is not None], ids=str)
def test_each_example_prints_what_the_docs_show(example: Example, server: LiveServer,
                                                subscriber: tuple[int, Path]) -> None:
    status, output = run(example, server, subscriber[0])
    assert status == 0, f"{example}: exit status {status}\n{example.script}\n{output}"
    assert matches(tidy(example.expected), output), (
        f"{example}: the output differs from the docs.\n--- docs:\n{example.expected}\n--- actual:\n{output}")


def test_the_docs_have_examples_and_say_why_any_is_not_run() -> None:
    run_here = [e for e in EXAMPLES if e.expected is not None]
    assert len(run_here) >= 20
    assert {e.page for e in run_here} >= {"README.md", "docs/http-api.md", "docs/websub.md", "docs/data-format.md"}
    for example in EXAMPLES:
        if example.expected is None:
            assert len(example.reason) > 10, example


def test_the_quick_start_commands_are_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    setup = next(e for e in EXAMPLES if e.page == "README.md" and e.expected is None)
    commands = [line for line in setup.script.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2, setup
    ci = (ROOT / ".ci" / "run").read_text("utf-8").strip().splitlines()[-1]
    assert commands[1] == ci
    assert "Ctrl-C" in readme


@pytest.mark.parametrize(("expected", "actual", "same"), [
    ("a\n", "a\n", True), ("a ... c\n", "a b b c\n", True), ("...\n", "x\ny\n", True),
    ("count 9\n", "count 12\n", False), ('"matched":40...', '"matched":41,"x":1', False),
])
def test_the_comparison(expected: str, actual: str, same: bool) -> None:
    assert matches(expected, actual) is same
