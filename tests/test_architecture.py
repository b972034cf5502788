"""The package's shape: its import graph points down (no cycle), only the entry points import the app, and the
code passes the linter and the formatter (ruff, settings in pyproject.toml)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = "reviewsd_app"
# Folders of the checkout that are not the product (they import the package from outside).
NOT_PRODUCT = {"tests", "bench", "tools", "examples", "docs", "build", ".venv", ".git", "state"}
# The modules that may import the app (reviewsd.py): the `reviewsd` command and the WSGI servers' entry.
ENTRY_POINTS = {"", "wsgi"}  # "" is the package itself (__init__.py: main)
APP = "reviewsd"


def product_modules() -> dict[str, Path]:
    """Every module of the package, by its dotted name inside it ("" for __init__.py, "httpserver.server")."""
    modules: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in NOT_PRODUCT or "__pycache__" in relative.parts:
            continue
        parts = list(relative.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that a module imports: anywhere in it (inside functions, under TYPE_CHECKING)."""
    is_package = path.name == "__init__.py"
    package_parts = name.split(".") if name else []
    if not is_package:
        package_parts = package_parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    found.add(alias.name.removeprefix(PACKAGE).lstrip("."))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and (node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
                target = node.module.removeprefix(PACKAGE).lstrip(".")
            else:
                continue
            for alias in node.names:  # `from . import service` imports the module httpserver.service
                submodule = f"{target}.{alias.name}" if target else alias.name
                found.add(submodule if submodule in modules else target)
    found.discard(name)
    unknown = found - modules.keys()
    assert not unknown, f"{path.relative_to(ROOT)} imports modules that are not in the package: {unknown}"
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = product_modules()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that returns to its first module, or None."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once every path from it is seen
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def shown(module: str) -> str:
    return module or "__init__"


def test_the_graph_is_read_from_every_module(graph: dict[str, set[str]]) -> None:
    assert {"", "reviewsd", "hub", "mcp_rpc", "config", "httpserver.server", "web.payloads"} <= graph.keys()
    assert "config" in graph["reviewsd"] and "mcpserver.tools" in graph["mcp_rpc"]
    assert "httpserver.service" in graph["httpserver.server"]  # `from . import service`


def test_the_import_graph_has_no_cycle(graph: dict[str, set[str]]) -> None:
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(map(shown, cycle))


def test_the_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_only_the_entry_points_import_the_app(graph: dict[str, set[str]]) -> None:
    importers = {module for module, targets in graph.items() if APP in targets}
    assert importers <= ENTRY_POINTS, f"modules importing {APP}.py: {sorted(map(shown, importers))}"


def ruff(*args: str) -> subprocess.CompletedProcess:
    """ruff, from the test extras (pyproject.toml), on the whole checkout."""
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_ruff_check_passes() -> None:
    result = ruff("check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_check_passes() -> None:
    result = ruff("format", "--check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr
