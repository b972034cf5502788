"""tools/browser-check's parts that need no browser: rendering the pages from data/ and serving them with the
pages' own headers (its --render, --files and --docs modes once failed at their first import)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import urllib.request
from pathlib import Path

from reviewsd_app.pages import policy

ROOT = Path(__file__).resolve().parent.parent


def load_tool():
    loader = importlib.machinery.SourceFileLoader("browser_check", str(ROOT / "tools" / "browser-check"))
    spec = importlib.util.spec_from_loader("browser_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_render_writes_the_pages_and_serve_gives_them_the_pages_headers(tmp_path):
    tool = load_tool()
    tool.render_pages(tmp_path)
    names = sorted(path.stem for path in tmp_path.glob("*.html"))
    assert names == sorted(
        ["index", "reviews", "review", "widget", "hostile-index", "hostile-review", "hostile-widget"]
    )
    assert "<script>alert(1)</script>" not in (tmp_path / "hostile-index.html").read_text()
    with tool.serve_files(tmp_path) as origin:
        with urllib.request.urlopen(origin + "/", timeout=10) as response:
            assert response.read() == (tmp_path / "index.html").read_bytes()
            for header, value in policy.PAGE_HEADERS:
                assert response.headers[header] == value
        with urllib.request.urlopen(origin + "/widget", timeout=10) as response:
            for header, value in policy.WIDGET_HEADERS:
                assert response.headers[header] == value
