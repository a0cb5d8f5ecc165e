"""The built site in a real browser: every page of the table of contents, as a reader sees it.

Serves ``_build/html`` (built by ``make book``, which ``make test`` runs first) on localhost and
drives headless Chromium through Playwright. Without Chromium or a built site these tests skip
with a message; with ``MLM_REQUIRE_BROWSER=1`` (``.ci/run`` sets it) they fail instead.

Requests that leave localhost are blocked and recorded, so the test also pins down what the site
loads from the network: nothing. MathJax comes with the site (sphinx-mathjax-offline), and the
test waits for it to typeset every page that has math.

Screenshots of the key pages land in ``_build/screenshots/`` for a person to look at.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
REQUIRED = os.environ.get("MLM_REQUIRE_BROWSER") == "1"
ALLOWED_HOSTS: set[str] = set()  # the site serves everything itself, MathJax included
KEY_PAGES = {"intro": "book/intro", "walkthrough-step": "notebooks/walkthrough_4_softmax",
             "worked-example": "notebooks/worked_a_standard_mask",
             "training": "notebooks/training_2_toy_world", "api": "book/api"}
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def _unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (MLM_REQUIRE_BROWSER=1 makes this a failure)")
    pytest.skip(f"{reason}; the browser test is skipped (CI installs Chromium and runs it)")


def toc_pages() -> list[str]:
    """Every page of _toc.yml, in reading order, as paths without suffix."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                pages.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("parts"))
    walk(toc.get("chapters"))
    return pages


def _source(page: str) -> str:
    for suffix in (".md", ".ipynb"):
        path = ROOT / f"{page}{suffix}"
        if path.exists():
            if suffix == ".md":
                return path.read_text()
            cells = json.loads(path.read_text())["cells"]
            return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    raise FileNotFoundError(page)


def _has_math(page: str) -> bool:
    text = _source(page)
    return bool(re.search(r"\$\$|(?<![\\$])\$[^$\n]+\$|\{math\}", text))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site():
    if not (HTML / "index.html").exists():
        _unavailable("no built site in _build/html (run: make book)")
    handler = functools.partial(_Quiet, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    executable = os.environ.get("CHROMIUM") or shutil.which("chromium") or \
        shutil.which("chromium-browser")
    if not executable:
        _unavailable("no Chromium found (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def external():
    """Hosts outside localhost that pages asked for (blocked, recorded)."""
    return set()


class Visit:
    """A page opened in its own browser context, with everything that went wrong recorded."""

    def __init__(self, browser, site, external, url, width=1280, height=900):
        self.errors, self.missing = [], []
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.site = site

        def route(r):
            if r.request.url.startswith(site):
                r.continue_()
            else:
                external.add(urlparse(r.request.url).hostname)
                r.abort()

        self.context.route("**/*", route)
        page = self.page = self.context.new_page()
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.on("console", self._console)
        page.on("response", lambda r: r.status >= 400 and r.url.startswith(site)
                and self.missing.append(f"{r.status} {r.url}"))
        page.on("requestfailed", lambda r: r.url.startswith(site)
                and self.missing.append(f"failed {r.url}"))
        page.goto(url, wait_until="load")

    def _console(self, msg):
        where = (msg.location or {}).get("url", "")
        if msg.type == "error" and (not where or where.startswith(self.site)):
            self.errors.append(f"console: {msg.text} ({where})")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.context.close()


def _typeset(page) -> int:
    """Wait until MathJax has typeset the page; the number of formulas it typeset."""
    page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise",
                           timeout=15000)
    return page.evaluate("MathJax.startup.promise.then("
                         "() => document.querySelectorAll('mjx-container').length)")


def _local_file(url: str, site: str) -> Path | None:
    if not url.startswith(site):
        return None
    path = HTML / unquote(urlparse(url).path).lstrip("/")
    return path / "index.html" if path.is_dir() else path


@pytest.mark.parametrize("page", toc_pages())
def test_page_reads_correctly(page, browser, site, external):
    with Visit(browser, site, external, f"{site}{page}.html") as visit:
        p = visit.page
        p.wait_for_function("Array.from(document.images).every(i => i.complete)", timeout=15000)
        broken = p.evaluate("Array.from(document.images)"
                            ".filter(i => !(i.naturalWidth > 0)).map(i => i.src)")
        assert not broken, f"images that did not load: {broken}"
        links = p.evaluate("""Array.from(document.querySelectorAll(
            'a[href], link[href], script[src], img[src]'))
            .map(e => e.href || e.src).filter(u => u && !u.startsWith('javascript'))""")
        for url in links:
            local = _local_file(url.split("#")[0].split("?")[0], site)
            if local is not None:
                assert local.exists(), f"{page}: a link or resource points at nothing: {url}"
        text = p.inner_text("main")
        assert len(text) > 200, f"{page}: the page body is (nearly) empty"
        outputs = p.evaluate("Array.from(document.querySelectorAll('.cell_output'))"
                             ".map(e => e.innerText).join('\\n')")
        assert "Traceback (most recent call last)" not in outputs, f"{page}: a cell failed"
        if _has_math(page):
            n = _typeset(p)
            assert n > 0, f"{page}: the source has math but MathJax typeset none"
            raw = p.evaluate("Array.from(document.querySelectorAll('.math'))"
                             ".filter(e => !e.querySelector('mjx-container')).length")
            assert raw == 0, f"{page}: {raw} formulas left as TeX source"
        if page.startswith("notebooks/"):
            download = p.evaluate("Array.from(document.querySelectorAll('a[href$=\".ipynb\"]'))"
                                  ".map(a => a.href)")
            assert download, f"{page}: no notebook download link"
            colab = p.evaluate("Array.from(document.querySelectorAll("
                               "'a[href^=\"https://colab.research.google.com/\"]'))"
                               ".map(a => a.href)")
            repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
            slug = urlparse(repo["url"]).path.strip("/")
            want = (f"https://colab.research.google.com/github/{slug}/blob/"
                    f"{repo.get('branch', 'main')}/{page}.ipynb")
            assert colab == [want], f"{page}: Colab button {colab}, expected {want}"
        p.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing may stick out
        width = p.evaluate("document.documentElement.scrollWidth")
        assert width <= 391, f"{page}: the page scrolls sideways on a phone ({width} px)"
        assert not visit.missing, f"{page}: missing local resources {visit.missing}"
        assert not visit.errors, f"{page}: JavaScript errors {visit.errors}"


def test_a_solution_dropdown_opens_on_click(browser, site, external):
    with Visit(browser, site, external, f"{site}notebooks/worked_a_standard_mask.html") as visit:
        p = visit.page
        solution = p.locator(".solution.dropdown").first
        body = solution.locator(".solution-content, section, p").last
        assert not body.is_visible(), "the solution is visible before the click"
        solution.locator(".admonition-title, summary, button").first.click()
        body.wait_for(state="visible", timeout=5000)
        assert body.inner_text().strip()
        assert not visit.errors


def test_search_finds_softmax(browser, site, external):
    with Visit(browser, site, external, f"{site}search.html?q=softmax") as visit:
        p = visit.page
        results = p.locator("#search-results li")
        results.first.wait_for(timeout=20000)
        hits = results.all_inner_texts()
        assert len(hits) >= 3, hits
        assert any("softmax" in h.lower() for h in hits), hits
        assert not visit.errors


@pytest.mark.parametrize("name,page", list(KEY_PAGES.items()))
@pytest.mark.parametrize("device,size", [("desktop", (1280, 900)), ("phone", (390, 844))])
def test_key_pages_render(name, page, device, size, browser, site, external):
    """A screenshot a person can look at, and not a blank or broken one."""
    import matplotlib.image

    with Visit(browser, site, external, f"{site}{page}.html", *size) as visit:
        if _has_math(page):
            _typeset(visit.page)  # the screenshot shows typeset formulas, not TeX
        SHOTS.mkdir(parents=True, exist_ok=True)
        out = SHOTS / f"{name}-{device}.png"
        visit.page.screenshot(path=str(out), full_page=False)
        pixels = matplotlib.image.imread(out)[..., :3]
        ink = (pixels.mean(axis=-1) < 0.85).mean()  # share of pixels that are not background
        assert ink > 0.02, f"{out.name}: the page looks blank ({ink:.1%} ink)"
        assert pixels.std() > 0.05, f"{out.name}: the page is one flat colour"
        width = visit.page.evaluate("document.documentElement.scrollWidth")
        assert width <= size[0] + 1, f"{name}: the page scrolls sideways on a {device}"
        assert not visit.errors


def test_the_site_loads_nothing_from_the_network(browser, site, external):
    """Runs last in this file: the hosts that every page above asked for."""
    assert external <= ALLOWED_HOSTS, f"the site asks other hosts: {external - ALLOWED_HOSTS}"


def _imported_names() -> set[str]:
    """``mlmlib.module.name`` for every name a chapter imports from mlmlib."""
    names = set()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"]
                         if c["cell_type"] == "code")
        for module, grouped, line in re.findall(
                r"^\s*from (mlmlib(?:\.\w+)+) import (?:\(([^)]*)\)|([^\n]+))", code, re.M):
            for name in (grouped or line).split("#")[0].split(","):
                if name.strip():
                    names.add(f"{module}.{name.split(' as ')[0].strip()}")
    return names


def _documented(anchors: set[str]) -> set[str]:
    """The anchors, plus ``mlmlib.pkg.name`` for each ``mlmlib.pkg.part.name`` documented in a
    module of a subpackage (mlmlib/pkg/part.py): the package re-exports the name, and chapters
    import it from there (``from mlmlib.plots import softmax_stages``)."""
    names = set(anchors)
    for anchor in anchors:
        *module, name = anchor.split(".")
        if len(module) == 3 and ROOT.joinpath(*module[:-1], "__init__.py").is_file() \
                and ROOT.joinpath(*module).with_suffix(".py").is_file():
            names.add(".".join([*module[:-1], name]))
    return names


def test_every_name_a_chapter_imports_has_an_api_entry():
    """The API page (generated by autodoc) documents everything the chapters call."""
    api = HTML / "book" / "api.html"
    if not api.exists():
        _unavailable("no built site in _build/html (run: make book)")
    anchors = _documented(set(re.findall(r'id="(mlmlib\.[\w.]+)"', api.read_text())))
    names = _imported_names()
    assert len(names) > 30, names  # the pattern above still finds the chapters' imports
    assert not names - anchors, f"not on the API page: {sorted(names - anchors)}"
