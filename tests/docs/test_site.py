"""The documentation site builds in strict mode and renders in a real browser.

The site is built with MkDocs (``mkdocs build --strict``: a broken link, a missing
reference or any warning fails it), served over HTTP on loopback, and opened in Debian's
Chromium, driven by Playwright.  The home page, a guide page and an API page must show
their navigation and search box, the search must find a public name, and no request
for one of the site's own assets may fail.

Building the site needs the ``docs`` extra and the browser needs ``chromium``: where
they are missing these tests skip, unless ``ZARRFAST_REQUIRE_DOCS=1`` (CI sets it after
installing both), where a missing tool fails.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("ZARRFAST_REQUIRE_DOCS") == "1"

#: (path, a heading the page shows, what else must be on it)
PAGES = [
    ("", "zarrfast", "Getting started"),
    ("guide/arrays/", "Arrays", "oindex"),
    ("api/zarrfast/", "zarrfast", "zarrfast.open_array"),
]


def _need(what: str, present: bool) -> None:
    if not present:
        if REQUIRED:
            pytest.fail(f"{what} is missing and ZARRFAST_REQUIRE_DOCS=1")
        pytest.skip(f"{what} is not installed")


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need("mkdocs (the docs extra)", importlib.util.find_spec("mkdocs") is not None)
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
         "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-6000:]}"
    return out


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    _need("playwright (the docs extra)", importlib.util.find_spec("playwright") is not None)
    executable = _chromium()
    _need("chromium (Debian's package)", executable is not None)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


def test_the_site_builds_with_every_page(site: Path) -> None:
    for path, _, _ in PAGES:
        assert (site / path / "index.html").is_file(), path
    assert (site / "search" / "search_index.json").is_file()
    assert (site / "changelog" / "index.html").is_file()


@pytest.mark.parametrize(("path", "heading", "text"), PAGES, ids=["home", "guide", "api"])
def test_a_page_renders_in_a_browser(
    browser, server: str, tmp_path: Path, path: str, heading: str, text: str
) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
    page.on(
        "response",
        lambda r: failed.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None,
    )
    page.goto(server + path, wait_until="networkidle")
    page.screenshot(path=str(tmp_path / "page.png"), full_page=False)
    assert heading.lower() in page.locator("h1").first.inner_text().lower()
    assert page.locator("nav.md-nav--primary").count() >= 1, "no navigation"
    assert page.locator("nav.md-nav--primary a.md-nav__link").count() > 10
    assert page.locator("input.md-search__input").count() == 1, "no search box"
    assert text in page.locator("article").inner_text()
    local = [f for f in failed if f.startswith(server)]
    assert not local, local
    # the theme's fonts are the system's (``font: false``): a reader offline, or behind a
    # firewall, sees the same page, and the site asks no other host for anything
    assert not failed, failed
    page.close()


def test_search_finds_a_public_name(browser, server: str) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(server, wait_until="networkidle")
    page.locator("input.md-search__input").click()
    page.keyboard.type("open_array")
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=20_000)
    assert "open_array" in page.locator(".md-search-result").inner_text()
    page.close()


def test_the_api_reference_renders_every_public_name(site: Path) -> None:
    import importlib
    import inspect
    import re

    from _helpers.public_api import PUBLIC_MODULES

    anchors: set[str] = set()
    for page in (site / "api").rglob("index.html"):
        anchors |= set(re.findall(r'id="([^"]+)"', page.read_text(encoding="utf-8")))
    missing = []
    for modname in PUBLIC_MODULES:
        module = importlib.import_module(modname)
        for name in module.__all__:
            if inspect.ismodule(getattr(module, name)):
                continue  # a submodule: its own names are rendered where they are public
            if f"{modname}.{name}" not in anchors:
                missing.append(f"{modname}.{name}")
    assert not missing, f"public names the API reference does not render: {missing}"
