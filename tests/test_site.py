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
import html
import http.server
import json
import math
import re
import threading
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

import numpy as np
import pytest
import torch
import yaml

from mlmlib.course.book import Book
from mlmlib.loss import neg_log, softmax
from mlmlib.masking import mask_positions
from mlmlib.toyworld import ToyWorld, compare_with_exact
from mlmlib.widgets import read_sentence, stored_toy_model, toy_model_ids

pytestmark = pytest.mark.browser  # the built site, in Chromium

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
ALLOWED_HOSTS: set[str] = set()  # the site serves everything itself, MathJax included
KEY_PAGES = {"intro": "book/intro", "walkthrough-step": "notebooks/walkthrough_4_softmax",
             "worked-example": "notebooks/worked_a_standard_mask",
             "training": "notebooks/training_2_toy_world", "api": "book/api"}


def toc_pages() -> list[str]:
    """Every page of _toc.yml, in reading order, as paths without suffix."""
    return Book(ROOT).pages


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
def site(unavailable):
    if not (HTML / "index.html").exists():
        unavailable("no built site in _build/html (run: make book)")
    handler = functools.partial(_Quiet, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(chromium):
    return chromium


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
            edition = f"editions/notebooks/{page.split('/')[-1]}.ipynb"  # plain Markdown
            want = (f"https://colab.research.google.com/github/{slug}/blob/"
                    f"{repo.get('branch', 'main')}/{edition}")
            assert colab == [want], f"{page}: Colab button {colab}, expected {want}"
            assert (ROOT / edition).is_file(), f"{page}: Colab opens {edition}, which is missing"
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


# ---------------------------------------------------------------------- live figures
# Every "Try it" figure of the site: its controls are set, the numbers it draws (each carries
# its full value in data-v) are compared with mlmlib's for the same inputs, and the picture
# must have changed; on a desktop and at a phone's width.

LIVE = {"mask-1": ("notebooks/walkthrough_1_hide", "mask"),
        "mask-2": ("notebooks/walkthrough_2_sees", "mask"),
        "dial": ("notebooks/walkthrough_3_probability", "dial"),
        "softmax": ("notebooks/walkthrough_4_softmax", "softmax"),
        "neglog": ("notebooks/walkthrough_5_logarithm", "neglog"),
        "tower": ("notebooks/walkthrough_6_full_loss", "tower"),
        "edge": ("notebooks/walkthrough_7_edge_cases", "edge"),
        "posterior": ("notebooks/training_2_toy_world", "posterior"),
        "ask": ("notebooks/training_2_toy_world", "ask"),
        "attention": ("notebooks/encoder_inside", "attention")}
SENTENCE = ["the", "fat", "cat", "sat", "on", "the", "mat"]


class Live:
    """One live figure on a page: set its controls, read the numbers it draws."""

    def __init__(self, page, kind):
        self.root = page.locator(f'.mlm-live[data-kind="{kind}"]')
        assert self.root.count() == 1, f"{self.root.count()} live figures of kind {kind}"
        self.root.locator("svg").first.wait_for(timeout=10000)
        assert self.root.get_attribute("data-mounted") == "true"
        assert not self.root.locator(".mlm-static").is_visible(), "the static picture still shows"

    def set(self, control, value):
        self.root.locator(f'[data-control="{control}"]').evaluate(
            "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); }",
            str(value))

    def click(self, control):
        self.root.locator(f'[data-control="{control}"]').click()

    def numbers(self) -> dict[str, float]:
        pairs = self.root.evaluate("r => Array.from(r.querySelectorAll('[data-q][data-v]'))"
                                   ".map(e => [e.dataset.q, e.dataset.v])")
        return {q: float(v) if v not in ("Infinity",) else math.inf for q, v in pairs
                if not v.startswith("[")}

    def texts(self, prefix) -> list[str]:
        return self.root.evaluate("(r, p) => Array.from(r.querySelectorAll('[data-q]'))"
                                  ".filter(e => e.dataset.q.startsWith(p)).map(e => e.textContent)",
                                  prefix)

    def said(self) -> str:
        """What a screen reader is told after the last move."""
        return self.root.locator(".mlm-say").text_content()

    def picture(self) -> str:
        return self.root.locator(".mlm-picture").inner_html()


def _same(shown: float, exact: float, what: str) -> None:
    assert abs(shown - exact) <= 1e-12 * max(1.0, abs(exact)), f"{what}: page {shown}, " \
        f"mlmlib {exact}"


def _check_mask(live):
    live.click("token-0")
    live.click("token-4")
    reads, _ = mask_positions(SENTENCE, [0, 2, 4])
    assert live.texts("reads-") == reads
    assert live.root.locator('[data-q="M"]').text_content() == "M = {1, 3, 5}"
    live.click("token-0")
    live.click("token-2")
    live.click("token-4")
    assert live.texts("reads-") == SENTENCE
    assert live.root.locator('[data-q="M"]').text_content() == "M = {} (empty)"


def _check_dial(live):
    live.set("p", 0.37)
    got = live.numbers()
    _same(got["p"], 0.37, "P(cat)")
    _same(got["rest"], 1 - 0.37, "1 - P")


def _check_softmax(live):
    scores = [0.5, 3.2, -1.0, 2.0]
    words = ["the", "cat", "mat", "sat"]
    for i, s in enumerate(scores):
        live.set(f"score-{i}", s)
    got, probs = live.numbers(), softmax(scores)
    for w, s, p in zip(words, scores, probs, strict=True):
        _same(got[f"prob:{w}"], float(p), f"P({w})")
        _same(got[f"exp:{w}"], math.exp(s), f"exp(score({w}))")
    _same(got["Z"], sum(math.exp(s) for s in scores), "Z")
    _same(got["truth"], float(probs[1]), "P(cat)")
    assert live.root.locator('[data-q="truth"]').text_content().endswith(f"{probs[1]:.4f}")
    assert f"P(cat) = {probs[1]:.4f}" in live.said()


def _check_neglog(live):
    for p in (0.123, 1.0, 0.001):
        live.set("p", p)
        _same(live.numbers()["loss"], float(neg_log(p)), f"-log {p}")


def _check_tower(live):
    live.click("token-3")  # reveal "sat"
    live.click("token-2")  # hide "cat"
    live.set("p-2", 0.05)
    live.set("p-1", 0.9)
    got = live.numbers()
    parts = {1: 0.9, 2: 0.05, 6: 0.7}  # positions of fat, cat, mat
    for i, p in parts.items():
        _same(got[f"part:{i}"], float(neg_log(p)), f"-log P(x{i + 1})")
    assert "part:3" not in got
    _same(got["L"], sum(float(neg_log(p)) for p in parts.values()), "the loss")
    assert "P(x₃ = cat)" in live.root.locator(".mlm-sliders").inner_text()
    live.click("token-5")  # the second "the": its own slider and block, told apart by position
    assert "−log P(x₆ = the) = 0.6931" in live.texts("part:5")[0]
    for i in (1, 2, 5, 6):
        live.click(f"token-{i}")  # hide nothing: the empty sum
    assert live.numbers()["L"] == 0.0


def _check_edge(live):
    live.set("k", 4)
    live.set("log10p", -7.5)
    got = live.numbers()
    _same(got["p"], 10 ** -7.5, "P")
    _same(got["loss"], 4 * float(neg_log(10 ** -7.5)), "4 slots")
    assert live.root.locator('[data-q="case"]').text_content().startswith("C.")
    live.set("log10p", -1.5)
    _same(live.numbers()["slot"], float(neg_log(10 ** -1.5)), "one slot")
    assert live.texts("p")[0] == "P(truth) = 1 in 32"
    assert live.root.locator('[data-q="case"]').text_content().startswith("an ordinary")
    live.set("k", 0)
    assert live.numbers()["loss"] == 0.0
    assert live.root.locator('[data-q="case"]').text_content().startswith("A.")
    live.set("k", 2)
    live.set("log10p", 0)
    assert live.numbers()["loss"] == 0.0
    assert live.root.locator('[data-q="case"]').text_content().startswith("B.")


def _check_posterior(live):
    world = ToyWorld()
    for sentence in ("the ___ read a book .", "the small ___ ___ .",
                     "a ___ chased the ___ .", "___ cat sat on the ___ ."):
        live.set("sentence", sentence)
        words = sentence.split()
        masked = [i for i, w in enumerate(words) if w == "___"]
        exact = world.posterior([w if w != "___" else "the" for w in words], masked)
        got = live.numbers()
        for k, row in enumerate(exact):
            shown = {q.split(":", 1)[1]: v for q, v in got.items() if q.startswith(f"post-{k}:")}
            best = row.topk(len(shown))
            assert list(shown) == [world.words[int(v)] for v in best.indices], sentence
            for v, p in zip(best.indices, best.values, strict=True):
                _same(shown[world.words[int(v)]], float(p), f"{sentence}: {world.words[int(v)]}")
    live.set("sentence", "The small ___ barked.")  # capitals and a full stop with no space
    _same(live.numbers()["post-0:cat"], float(world.posterior("the small cat barked .".split(),
                                                              [2])[0, world.word_id["cat"]]), "cat")
    live.set("sentence", "the small ___ meowed .")
    assert "'meowed' is not a word of the toy world" in live.texts("error")[0]
    live.set("sentence", "the small ___ constructor .")  # not a word, whatever JavaScript knows
    assert "'constructor' is not a word" in live.texts("error")[0]
    live.set("sentence", "the ___ cat .")
    assert "impossible" in live.texts("error")[0] and "up to word 4" in live.texts("error")[0]
    box = live.root.locator('[data-q="error"]').bounding_box()
    assert box["width"] <= live.root.bounding_box()["width"] + 1, "the message is cut off"
    live.set("sentence", "the cat sat .")
    assert "no blank" in live.texts("error")[0]
    live.set("sentence", "the ___ sat .")  # back to a sentence, and its drawing


def _check_ask(live):
    """The stored model beside the exact posterior (tests/test_live_ask.py checks it on 60
    sentences): each blank's shown probabilities and its KL divergence, against MiniBert in
    float64 (as the page computes) and ToyWorld.posterior."""
    world, (model, vocab) = ToyWorld(), stored_toy_model()
    first = len(vocab) - world.vocab_size  # the special tokens, then the world's words
    for sentence in ("the ___ read a book .", "The small ___ ___.", "a ___ chased the ___ ."):
        live.set("sentence", sentence)
        words, masked = read_sentence(sentence)
        exact = world.posterior([world.words[0] if i in masked else w
                                 for i, w in enumerate(words)], masked)
        with torch.no_grad():
            logits = model.double()(torch.tensor([toy_model_ids(sentence)[0]]),
                                    score_all=True).logits[0]
        q = logits[[i + 1 for i in masked], first:].softmax(-1)
        kl, got = compare_with_exact(exact, q)["kl"], live.numbers()
        for k in range(len(masked)):
            for column, probs in (("exact", exact[k]), ("model", q[k])):
                shown = {name.split(":", 1)[1]: v for name, v in got.items()
                         if name.startswith(f"{column}-{k}:")}
                assert len(shown) == 5, (sentence, column, shown)
                for word, v in shown.items():
                    assert abs(v - float(probs[world.word_id[word]])) <= 1e-9, (sentence, word)
            assert abs(got[f"kl-{k}"] - float(kl[k])) <= 1e-9, sentence
    live.set("sentence", "the small ___ meowed .")
    assert "'meowed' is not a word of the toy world" in live.texts("error")[0]
    live.set("sentence", "the ___ cat .")
    assert "impossible" in live.texts("error")[0]
    live.set("sentence", "the ___ sat .")


def _check_attention(live):
    """The stored model's attention weights, from the blank and from a picked position."""
    model, _ = stored_toy_model()
    for sentence, pick in (("the small ___ barked .", "blank"),
                           ("My teacher read the old ___.", "2")):
        live.set("sentence", sentence)
        live.set("query", pick)
        ids, masked = toy_model_ids(sentence)
        query = masked[0] + 1 if pick == "blank" else int(pick)
        with torch.no_grad():
            out = model.double()(torch.tensor([ids]), score_all=True, return_attention=True)
        weights, got = torch.stack(out.attentions)[:, 0, :, query].numpy(), live.numbers()
        for (layer, head, key), w in np.ndenumerate(weights):
            assert abs(got[f"att-{layer}-{head}:{key}"] - w) <= 1e-9, (sentence, layer, head)
        assert f"(position {query})" in live.said()
    live.set("sentence", "the cat sat .")
    assert "no blank" in live.texts("error")[0]
    live.set("sentence", "the ___ sat .")


@pytest.mark.parametrize("name", list(LIVE))
@pytest.mark.parametrize("device,size", [("desktop", (1280, 900)), ("phone", (390, 844))])
def test_live_figures_compute_what_mlmlib_computes(name, device, size, browser, site, external):
    page, kind = LIVE[name]
    with Visit(browser, site, external, f"{site}{page}.html", *size) as visit:
        live = Live(visit.page, kind)
        before = live.picture()
        globals()[f"_check_{kind}"](live)
        assert live.picture() != before, f"{name}: the picture did not change"
        box = live.root.locator("svg").first.bounding_box()
        assert box["width"] > 0.5 * min(size[0], 600), f"{name}: the drawing is tiny ({box})"
        assert box["x"] + box["width"] <= size[0] + 1, f"{name}: the drawing sticks out"
        width = visit.page.evaluate("document.documentElement.scrollWidth")
        assert width <= size[0] + 1, f"{name}: the page scrolls sideways on a {device}"
        assert not visit.errors, visit.errors


def test_without_javascript_a_live_figure_shows_its_static_picture(browser, site):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{site}notebooks/walkthrough_4_softmax.html")
        still = page.locator('.mlm-live[data-kind="softmax"] .mlm-static img')
        assert still.is_visible()
        assert still.evaluate("i => i.complete && i.naturalWidth > 0")
        assert page.locator(".mlm-live svg").count() == 0
    finally:
        context.close()


# Every figure says what it shows, with its numbers: a matplotlib output's alt text comes from
# its PNG (book/_ext/alt_text.py), a live figure's static picture's from its plotting function.
FIGURES = "Array.from(document.querySelectorAll('.cell_output img, .mlm-static img'))"
OUTPUT_PNG = re.compile(r'<img [^>]*src="[^"]*_images/[0-9a-f]{64}\.png"')


@pytest.mark.browser
@pytest.mark.parametrize("page", toc_pages())
def test_every_figure_has_an_alt_text_with_a_number(page, browser, site, external):
    with Visit(browser, site, external, f"{site}{page}.html") as visit:
        figures = visit.page.evaluate(f"{FIGURES}.map(i => [i.getAttribute('src'), "
                                      "i.getAttribute('alt')])")
    raw = (HTML / f"{page}.html").read_text()
    assert len(figures) == len(OUTPUT_PNG.findall(raw)) + raw.count('class="mlm-static"'), \
        f"{page}: the selectors miss figures"
    for src, alt in figures:
        what = f"{page}: the figure {src[:60]}"
        assert alt and alt.strip(), f"{what} has no alt text"
        name = PurePosixPath(alt.strip())
        assert name.suffix.lower() not in {".png", ".jpg", ".jpeg", ".svg", ".gif"} \
            and name.name not in src, f"{what} has a file name for alt text: {alt!r}"
        assert re.search(r"\d", alt), f"{what}: its alt text names no number: {alt!r}"


# How Jupyter and Colab show an output: JupyterLab sets a detached host's innerHTML, replaces
# each <script> by a fresh copy (so that it runs) and attaches the host; a later cell's output
# arrives the same way; Colab puts each output in an iframe of its own.
JUPYTERLAB_INSERT = """html => {
  const host = document.createElement('div');
  host.innerHTML = html;
  host.querySelectorAll('script').forEach(old => {
    const fresh = document.createElement('script');
    for (const a of old.attributes) fresh.setAttribute(a.name, a.value);
    fresh.textContent = old.textContent;
    old.replaceWith(fresh);
  });
  document.body.appendChild(host);
}"""


def test_live_figures_mount_where_jupyterlab_and_colab_put_outputs(browser):
    from mlmlib.widgets import live_dial, live_softmax

    first = live_softmax([1, 2, 0, 1], ["the", "cat", "mat", "sat"], truth="cat")._repr_html_()
    later = live_dial(0.7, label="P(cat)")._repr_html_()
    context = browser.new_context()
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_content("<html><head></head><body></body></html>")
        page.evaluate(JUPYTERLAB_INSERT, first)
        page.evaluate(JUPYTERLAB_INSERT, later)  # the next cell's output, the script again
        page.wait_for_selector('.mlm-live[data-kind="dial"][data-mounted]', timeout=5000)
        assert page.locator(".mlm-live[data-mounted]").count() == 2
        assert page.locator('.mlm-live[data-kind="softmax"] svg').count() == 1  # mounted once
        live = Live(page, "softmax")
        live.set("score-2", 3.0)
        _same(live.numbers()["prob:mat"], float(softmax([1, 2, 3, 1])[2]), "P(mat)")
        page.set_content(f'<iframe srcdoc="{html.escape(first)}" width="700" height="900">'
                         "</iframe>")
        frame = page.frames[1]
        frame.wait_for_selector(".mlm-live[data-mounted] svg", timeout=5000)
        live = Live(frame, "softmax")
        live.set("score-0", -2.0)
        _same(live.numbers()["truth"], float(softmax([-2, 2, 0, 1])[1]), "P(cat)")
        assert not errors, errors
    finally:
        context.close()


def test_no_page_says_live_notebook_only(browser, site, external):
    for page in toc_pages():
        text = (HTML / f"{page}.html").read_text()
        assert "live notebook only" not in text, page
    figure = '<div class="mlm-live" data-kind='
    n = sum((HTML / f"{p}.html").read_text().count(figure) for p in toc_pages())
    assert n == len(LIVE), f"{n} live figures on the site, {len(LIVE)} tested"


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


def test_every_name_a_chapter_imports_has_an_api_entry(unavailable):
    """The API page (generated by autodoc) documents everything the chapters call."""
    api = HTML / "book" / "api.html"
    if not api.exists():
        unavailable("no built site in _build/html (run: make book)")
    anchors = _documented(set(re.findall(r'id="(mlmlib\.[\w.]+)"', api.read_text())))
    names = _imported_names()
    assert len(names) > 30, names  # the pattern above still finds the chapters' imports
    assert not names - anchors, f"not on the API page: {sorted(names - anchors)}"
