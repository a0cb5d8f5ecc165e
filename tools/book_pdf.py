"""The whole book as one PDF, for reading offline or on paper: ``_build/html/mlm-course.pdf``.

``make book`` runs this after the html build; the site's first page links the PDF.

1. **One page.** Sphinx's ``singlehtml`` builder writes the whole book as one HTML page into
   ``_build/singlehtml``, from the environment the html build left in ``_build/.doctrees``:
   no page is read again and no notebook runs again, only the one page is written.
2. **Printed by a browser.** Headless Chromium (Debian's ``chromium``, driven by Playwright as
   in ``tests/test_site.py``) opens that page from a server on localhost and refuses every
   request to another host. MathJax typesets the formulas, ``tools/book_pdf.js`` shapes the
   page into a book, ``tools/book_pdf.css`` styles it for paper, and Chromium prints it with
   bookmarks (from the headings), tags, and the page number in every footer.
3. **Bookmarks titled.** Chromium's bookmark titles lose the spaces around formulas and
   repeat some headings; pypdf gives them the headings' own text, appending the changed
   outline items to the file (an incremental update: the rest of the PDF stays as printed).

What the PDF holds, against the site:

- a cover, then a linked table of contents (the parts, their chapters and the appendix);
- the parts as top-level headings (and bookmarks), each chapter from a new page;
- every figure; each live ("Try it") figure as its static picture, the one a reader without
  JavaScript sees on the site;
- the exercises where they are, with the site's numbers. What the site hides behind a click,
  the exercises' solutions and the recall questions' answers, is collected at the end under
  "Solutions and answers", chapter by chapter; each question and its answer link to each other;
- no navigation, buttons, search or [source] links; links to the site's other files (the
  downloads) become plain text, since the PDF travels without them.

Without Chromium or Playwright it prints one line saying that the PDF was not built and why,
and exits with status 0: the site is complete without it. CI installs Chromium, and
``tests/test_pdf.py`` then requires the PDF.

Usage (after the html build; ``make book`` passes the html build's flags and configuration)::

    python tools/book_pdf.py [-n] [-W] [--keep-going] [--config FILE] [--out PATH] [--no-build]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import io
import os
import re
import shutil
import sys
import threading
import time
import unicodedata
from pathlib import Path
from urllib.parse import urlparse

import yaml

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
DOCTREES = BUILD / ".doctrees"
SINGLE = BUILD / "singlehtml"
PAGE = "mlm-course.html"  # the one page, moved to the top of _build/singlehtml (see below)
OUT = BUILD / "html" / "mlm-course.pdf"
HERE = Path(__file__).resolve().parent
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
# The footer of every page: the book's title and the page number. Chromium fills in the
# pageNumber and totalPages spans; the template has no styles but its own.
FOOTER = ('<div style="font-family: \'DejaVu Sans\', sans-serif; font-size: 8px; color: #555;'
          ' width: 100%; box-sizing: border-box; padding: 0 16mm; display: flex;'
          ' justify-content: space-between;">'
          '<span class="title"></span>'
          '<span><span class="pageNumber"></span> / <span class="totalPages"></span></span></div>')
MARGIN = {"top": "16mm", "bottom": "18mm", "left": "16mm", "right": "16mm"}


def say(message: str, error: bool = False) -> None:
    print(f"book_pdf: {message}", file=sys.stderr if error else sys.stdout, flush=True)


def find_browser() -> tuple[str | None, str]:
    """Chromium's path, or None and why it cannot be used."""
    executable = (os.environ.get("CHROMIUM") or shutil.which("chromium")
                  or shutil.which("chromium-browser"))
    if not executable:
        return None, "no Chromium found (Debian: apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None, "Playwright is not installed (pip install -e '.[test]')"
    return executable, ""


def toc_parts() -> tuple[str, list[dict]]:
    """The root page and the parts of _toc.yml: caption, and each page with its depth."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    parts = []

    def walk(entries, depth, into):
        for entry in entries or []:
            if "file" in entry:
                into.append({"doc": entry["file"], "depth": depth})
                walk(entry.get("sections"), depth + 1, into)

    for part in toc.get("parts", []):
        docs: list[dict] = []
        walk(part.get("chapters"), 1, docs)
        parts.append({"caption": part.get("caption", ""), "docs": docs})
    if toc.get("chapters"):
        docs = []
        walk(toc["chapters"], 1, docs)
        parts.append({"caption": "", "docs": docs})
    return toc["root"], parts


def build_single_page(nitpicky: bool, strict: bool, keep_going: bool, config_file: Path) -> int:
    """Sphinx's singlehtml builder with the html build's configuration, environment and
    doctrees (jupyter-book's own set-up, as ``jupyter-book build --builder singlehtml``)."""
    from jupyter_book.config import get_final_config
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    overrides = {"external_toc_path": (ROOT / "_toc.yml").as_posix(),
                 "latex_individualpages": False}
    if nitpicky:
        overrides["nitpicky"] = True
    config, _ = get_final_config(user_yaml=config_file, cli_config=overrides,
                                 sourcedir=ROOT, use_external_toc=True)
    with patch_docutils(None), docutils_namespace():
        app = Sphinx(srcdir=ROOT, confdir=None, outdir=SINGLE, doctreedir=DOCTREES,
                     buildername="singlehtml", confoverrides=config, status=None,
                     warning=sys.stderr, warningiserror=strict, keep_going=keep_going)
        app.set_html_assets_policy("always")  # MathJax on the page, as jupyter-book does
        # Sphinx gives a builder the node handlers registered under its name, or else those
        # of its format; sphinx-exercise registers some for "singlehtml", so the "html" ones
        # of the other extensions (sphinx-jupyterbook-latex's HiddenCellNode, which Jupyter
        # Book puts beside every table of contents) are lost and the build fails. Give
        # singlehtml every html handler it lacks.
        handlers = app.registry.translation_handlers
        single = handlers.setdefault("singlehtml", {})
        for name, pair in handlers.get("html", {}).items():
            single.setdefault(name, pair)
        app.build()
        return app.statuscode


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def print_pdf(executable: str, root_doc: str, parts: list[dict], out: Path) -> dict:
    """Open the one page in Chromium, shape it into a book and print it to ``out``."""
    from playwright.sync_api import sync_playwright

    # The builder writes the root page to book/intro.html, but with its links written as if
    # it stood at the top (_static/..., _images/...): there it is served.
    shutil.copyfile(SINGLE / f"{root_doc}.html", SINGLE / PAGE)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    book = {"title": config.get("title", ""), "author": config.get("author", ""),
            "root": f"/{root_doc}.html", "parts": parts,
            "date": time.strftime("%Y-%m-%d")}
    handler = functools.partial(_Quiet, directory=str(SINGLE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}/"
    errors: list[str] = []
    refused: set[str] = set()

    def route(r):
        if r.request.url.startswith(site) or r.request.url.startswith("data:"):
            r.continue_()
        else:
            refused.add(urlparse(r.request.url).hostname or r.request.url[:40])
            r.abort()

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
            try:
                context = browser.new_context(viewport={"width": 900, "height": 1200},
                                              color_scheme="light")
                context.route("**/*", route)
                page = context.new_page()
                page.on("pageerror", lambda e: errors.append(str(e)))
                t0 = time.perf_counter()
                page.goto(site + PAGE, wait_until="load", timeout=120_000)
                page.wait_for_function("window.MathJax && MathJax.startup"
                                       " && MathJax.startup.promise", timeout=60_000)
                page.evaluate("MathJax.startup.promise.then(() => true)")
                t1 = time.perf_counter()
                page.add_style_tag(path=str(HERE / "book_pdf.css"))
                shape = (HERE / "book_pdf.js").read_text()
                report = page.evaluate(shape, book)
                page.wait_for_function("Array.from(document.images).every(i => i.complete)",
                                       timeout=60_000)
                broken = page.evaluate("Array.from(document.images)"
                                       ".filter(i => !(i.naturalWidth > 0)).map(i => i.src)")
                if broken:
                    raise RuntimeError(f"images that did not load: {broken[:5]}")
                t2 = time.perf_counter()
                page.pdf(path=str(out), format="A4", margin=MARGIN, print_background=True,
                         display_header_footer=True, header_template="<span></span>",
                         footer_template=FOOTER, outline=True, tagged=True)
                report["times"] = (t1 - t0, t2 - t1, time.perf_counter() - t2)
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
    if refused:
        raise RuntimeError(f"the page asked other hosts for something: {sorted(refused)}")
    if errors:
        raise RuntimeError(f"JavaScript errors on the page: {errors[:5]}")
    return report


def _outline_items(reader) -> list:
    """The outline's items in reading order: (object number, generation, dictionary)."""
    items = []

    def walk(ref):
        while ref is not None:
            obj = ref.get_object()
            items.append((ref.idnum, ref.generation, obj))
            walk(obj.raw_get("/First") if "/First" in obj else None)
            ref = obj.raw_get("/Next") if "/Next" in obj else None

    outlines = reader.trailer["/Root"].get("/Outlines")
    if outlines is not None and "/First" in outlines:
        walk(outlines.raw_get("/First"))
    return items


def _same_heading(chromium: str, ours: str) -> bool:
    """Chromium's title and ours name the same heading: the same letters and digits once
    mathematical letters are plain (NFKC), Chromium's perhaps twice over."""
    def key(text):
        return "".join(c for c in unicodedata.normalize("NFKC", text) if c.isalnum())

    return key(chromium) in (key(ours), key(ours) * 2)


def retitle_bookmarks(path: Path, titles: list[str]) -> str:
    """Give the PDF's bookmarks the headings' own titles (see book_pdf.js), by an incremental
    update that appends the changed outline items to the file. Returns what happened."""
    try:
        from pypdf import PdfReader
        from pypdf.generic import DictionaryObject, NameObject, NumberObject, TextStringObject
    except ImportError:
        return "bookmarks as Chromium titled them (pypdf is not installed)"
    reader = PdfReader(path)
    items = _outline_items(reader)
    if len(items) != len(titles):
        return (f"bookmarks as Chromium titled them: {len(items)} bookmarks for "
                f"{len(titles)} headings")
    for (_, _, obj), title in zip(items, titles, strict=True):
        if not _same_heading(str(obj.get("/Title", "")), title):
            return f"bookmarks as Chromium titled them: {obj.get('/Title')!r} is not {title!r}"
    data = path.read_bytes()
    found = re.search(rb"startxref\s+(\d+)\s+%%EOF\s*$", data)
    if not found:
        return "bookmarks as Chromium titled them (no cross-reference table at the end)"
    update, offsets = io.BytesIO(), {}
    for (number, generation, obj), title in zip(items, titles, strict=True):
        obj[NameObject("/Title")] = TextStringObject(title)
        offsets[number] = (len(data) + update.tell(), generation)
        update.write(f"{number} {generation} obj\n".encode())
        obj.write_to_stream(update)
        update.write(b"\nendobj\n")
    xref = len(data) + update.tell()
    update.write(b"xref\n")
    for number in sorted(offsets):
        offset, generation = offsets[number]
        update.write(f"{number} 1\n{offset:010d} {generation:05d} n\r\n".encode())
    trailer = DictionaryObject({NameObject(k): v for k, v in
                                ((k, reader.trailer.raw_get(k)) for k in reader.trailer)
                                if k not in ("/Prev", "/XRefStm")})
    trailer[NameObject("/Prev")] = NumberObject(int(found.group(1)))
    update.write(b"trailer\n")
    trailer.write_to_stream(update)
    update.write(f"\nstartxref\n{xref}\n%%EOF\n".encode())
    with path.open("ab") as f:
        f.write(update.getvalue())
    return f"{len(reader.pages)} pages, {len(items)} bookmarks"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", dest="nitpicky", action="store_true",
                        help="nitpicky: warn about every missing reference (as the html build)")
    parser.add_argument("-W", dest="strict", action="store_true",
                        help="turn the single page's build warnings into errors")
    parser.add_argument("--keep-going", action="store_true",
                        help="with -W, report every warning before failing")
    parser.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT.relative_to(ROOT)}")
    parser.add_argument("--config", type=Path, default=ROOT / "_config.yml",
                        help="the book's configuration, as the html build used it (make test "
                             "builds with execution off: _build/_config.committed-outputs.yml)")
    parser.add_argument("--no-build", action="store_true",
                        help="print the single page already in _build/singlehtml")
    args = parser.parse_args(argv)
    out = args.out.resolve()

    executable, why = find_browser()
    if not executable:
        out.unlink(missing_ok=True)  # no stale PDF behind the site's link
        say(f"the PDF was not built: {why}")
        return 0
    if not (DOCTREES / "environment.pickle").exists():
        say("error: no html build to print from (_build/.doctrees): build the site first "
            "(make book)", error=True)
        return 1
    root_doc, parts = toc_parts()
    start = time.perf_counter()
    if not args.no_build:
        try:
            status = build_single_page(args.nitpicky, args.strict, args.keep_going,
                                       args.config.resolve())
        except Exception as exc:  # an extension's error: Sphinx has printed what it knows
            say(f"error: the single-page build stopped: {exc!r}", error=True)
            status = 1
        if status:
            out.unlink(missing_ok=True)
            say("error: the single-page build failed (its warnings are above); no PDF",
                error=True)
            return 1
    built = time.perf_counter()
    partial = out.with_name(out.name + ".part")
    try:
        report = print_pdf(executable, root_doc, parts, partial)
    except Exception as exc:  # Playwright's errors, a page error, a refused request
        partial.unlink(missing_ok=True)
        out.unlink(missing_ok=True)
        say(f"error: printing the PDF failed: {exc}", error=True)
        return 1
    bookmarks = retitle_bookmarks(partial, report["titles"])
    partial.replace(out)
    done = time.perf_counter()
    where = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    say(f"wrote {where}, {out.stat().st_size / 2**20:.1f} MB: {bookmarks}; the "
        f"{report['chapters'] + 1} pages of _toc.yml, {report['exercises']} exercises, their "
        f"{report['solutions']} solutions and {report['answers']} recall answers at the end")
    say(f"took {done - start:.0f} s: the single page {built - start:.0f} s, printing "
        f"{done - built:.0f} s (loading and typesetting " + "{:.0f} s, shaping {:.0f} s, "
        "Chromium's PDF {:.0f} s)".format(*report["times"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
