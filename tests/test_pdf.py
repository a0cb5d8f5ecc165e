"""The whole book as one PDF: ``_build/html/mlm-course.pdf``, printed by ``tools/book_pdf.py``
(``make book`` runs it after the html build, where Chromium is installed).

Read with pypdf: the site links the PDF; its text holds every chapter's title and every
exercise's number, with the site's numbering, and no MyST left as source; its bookmarks name the
parts and chapters; its footers number the pages; the solutions are at the end, as the
teachers' page says; and it embeds at least as many pictures as the site has figures (the live
figures as their static pictures).

Without the PDF these tests skip with a message; with ``MLM_REQUIRE_BROWSER=1`` (``.ci/run``
sets it, and installs Chromium) they fail instead.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from html.parser import HTMLParser
from multiprocessing import get_context
from pathlib import Path
from urllib.parse import urlparse

import pytest

from mlmlib.course.book import Book

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
PDF = HTML / "mlm-course.pdf"
# The MyST a page shows when it was not rendered. The API reference is left out: it documents
# mlmlib.course, whose functions read MyST, so it quotes that markup on purpose.
RAW = ["$$", "```{", "{doc}"]
ANSWERS = "Solutions and answers"  # tools/book_pdf.js: where the solutions go

pytestmark = pytest.mark.browser  # the PDF exists where Chromium printed it


def toc_pages() -> list[str]:
    """Every page of _toc.yml, in reading order, as paths without suffix."""
    return Book(ROOT).pages


def _markdown(page: str) -> str:
    path = ROOT / f"{page}.ipynb"
    if path.exists():
        cells = json.loads(path.read_text())["cells"]
        return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return (ROOT / f"{page}.md").read_text()


def _title(page: str) -> str:
    return re.search(r"^# (.+)$", _markdown(page), re.M).group(1).strip()


def chapters() -> list[str]:
    return [p for p in toc_pages() if (ROOT / f"{p}.ipynb").exists()]


def _pattern(title: str) -> re.Pattern:
    """A title's words as they read in a PDF: any spacing, a formula as whatever it became."""
    pieces = re.split(r"\$[^$]+\$", title.replace("`", ""))
    words = [r"\s*".join(re.escape(w) for w in piece.split()) for piece in pieces]
    return re.compile(r"\s*.{1,12}?\s*".join(words), re.S)


def _squash(text: str) -> str:
    """One space between words, and letters as letters (a ligature "ﬁ" as "fi")."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


# ------------------------------------------------------------------------------- the PDF


@pytest.fixture(scope="module")
def reader(unavailable):
    if not PDF.exists():
        unavailable(f"no PDF at {PDF.relative_to(ROOT)} (make book prints it with Chromium)")
    from pypdf import PdfReader

    return PdfReader(PDF)


def _bookmarks(reader, outline=None, depth=0):
    """(depth, title, page index) of every bookmark, in order."""
    for item in reader.outline if outline is None else outline:
        if isinstance(item, list):
            yield from _bookmarks(reader, item, depth + 1)
        else:
            yield depth, item.title, reader.get_destination_page_number(item)


@pytest.fixture(scope="module")
def bookmarks(reader):
    return list(_bookmarks(reader))


@pytest.fixture(scope="module")
def spans(bookmarks, reader) -> dict[str, range]:
    """The pages of each top-level entry and each page of the book, by title (bookmarks)."""
    found = {}
    for i, (depth, title, start) in enumerate(bookmarks):
        later = [p for d, _, p in bookmarks[i + 1:] if d <= depth]
        found.setdefault(title, range(start, later[0] if later else len(reader.pages)))
    return found


def _span(spans: dict[str, range], page: str) -> range:
    """The PDF's pages of a page of the book, found by its title among the bookmarks."""
    pattern = _pattern(_title(page))
    for title, pages in spans.items():
        if pattern.fullmatch(_squash(title)):
            return pages
    raise AssertionError(f"{page}: no bookmark titled {_title(page)!r}")


def _extract(job: tuple[str, list[int]]) -> list[str]:
    from pypdf import PdfReader

    reader = PdfReader(job[0])
    return [reader.pages[i].extract_text() for i in job[1]]


@pytest.fixture(scope="module")
def texts(reader, spans) -> dict[int, str]:
    """The text of every page but the API reference's, by page index (pypdf takes about 0.1 s
    a page, so the pages are shared among the CPU's cores)."""
    api = _span(spans, "book/api")
    pages = [i for i in range(len(reader.pages)) if i not in api]
    workers = max(1, min(4, os.cpu_count() or 1))
    jobs = [(str(PDF), pages[k::workers]) for k in range(workers)]
    with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
        done = list(pool.map(_extract, jobs))
    return {i: text for (_, part), got in zip(jobs, done, strict=True)
            for i, text in zip(part, got, strict=True)}


@pytest.fixture(scope="module")
def text(texts) -> str:
    return _squash("\n".join(texts[i] for i in sorted(texts)))


def test_the_site_links_the_pdf(reader):
    intro = (HTML / "book" / "intro.html").read_text()
    assert 'href="../mlm-course.pdf"' in intro, "book/intro.html does not link the PDF"
    assert len(reader.pages) > 100, f"{len(reader.pages)} pages: the book is not all there"


@pytest.mark.slow
@pytest.mark.parametrize("page", chapters())
def test_every_chapter_title_is_in_the_text(page, text):
    title = _title(page)
    assert _pattern(title).search(text), f"{page}: its title {title!r} is not in the PDF"


def _exercise_count() -> int:
    """The exercises of the chapters, as their sources declare them."""
    directive = re.compile(r"^(?:`{3,}|:{3,})\{exercise(?:-start)?\}", re.M)
    return sum(len(directive.findall(_markdown(p))) for p in toc_pages())


@pytest.mark.slow
def test_every_exercise_number_is_in_the_text(text):
    count = _exercise_count()
    assert count >= 20, f"only {count} exercise blocks found: has their syntax changed?"
    shown = {int(n) for n in re.findall(r"\bExercise (\d+)\b", text)}
    assert shown == set(range(1, count + 1)), f"exercise numbers {sorted(shown)}, " \
        f"expected 1 to {count}"


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in chapters() if "{exercise}" in _markdown(p)])
def test_a_chapter_has_the_site_numbers_of_its_exercises(page, texts, spans):
    site = (HTML / f"{page}.html").read_text()
    numbers = re.findall(r'class="caption-number">Exercise (\d+)\s*</span>', site)
    assert numbers, f"{page}.html shows no exercise number"
    pages = _span(spans, page)
    inside = _squash(" ".join(texts[i] for i in pages))
    for n in numbers:
        assert re.search(rf"\bExercise {n}\b", inside), \
            f"{page}: Exercise {n} of the site is not in the chapter's pages {pages}"


@pytest.mark.slow
def test_no_markup_is_left_as_source(texts):
    for i, page_text in texts.items():
        for raw in RAW:
            assert raw not in page_text, f"page {i + 1} shows {raw!r}: " \
                f"...{page_text[max(0, page_text.find(raw) - 80):page_text.find(raw) + 80]}..."
        for tex in (r"\(", r"\["):  # MathJax's delimiters: a formula it did not typeset
            assert tex not in page_text, f"page {i + 1} shows TeX that was not typeset: {tex!r}"


def test_bookmarks_name_the_parts_and_chapters(bookmarks):
    titles = [_squash(t) for _, t, _ in bookmarks]
    toc = Book(ROOT).toc
    top = {t for d, t, _ in bookmarks if d == 0}
    for part in toc.get("parts", []):
        assert part["caption"] in top, f"no top-level bookmark for the part {part['caption']!r}"
    for page in chapters():
        title = _title(page)
        assert any(_pattern(title).fullmatch(t) for t in titles), \
            f"{page}: no bookmark titled {title!r}"
    assert ANSWERS in top


def _links(page) -> tuple[int, list[str]]:
    """A page's links: how many lead within the PDF, and the addresses of the others."""
    inside, addresses = 0, []
    for annotation in page.get("/Annots") or []:
        annotation = annotation.get_object()
        action = annotation.get("/A") or {}
        if "/URI" in action:
            addresses.append(str(action["/URI"]))
        elif "/Dest" in annotation or action.get("/S") == "/GoTo":
            inside += 1
    return inside, addresses


def test_the_contents_are_linked_and_no_link_leads_to_the_printing_machine(reader, spans):
    contents = spans["Contents"]
    inside = sum(_links(reader.pages[i])[0] for i in contents)
    assert inside >= len(toc_pages()), f"the contents link {inside} places in the PDF"
    for i, page in enumerate(reader.pages):
        for address in _links(page)[1]:
            host = urlparse(address).hostname
            assert host and host not in ("127.0.0.1", "localhost"), \
                f"page {i + 1} links {address}, which only existed while it was printed"


def test_the_footers_number_the_pages(reader):
    n = len(reader.pages)
    for i in sorted({0, 1, n // 2, n - 1}):
        footer = _squash(reader.pages[i].extract_text())
        assert re.search(rf"\b{i + 1} / {n}\b", footer), f"page {i + 1}: no '{i + 1} / {n}'"


@pytest.mark.slow
def test_the_solutions_are_at_the_end(texts, spans):
    answers = spans[ANSWERS]
    assert answers.stop == max(texts) + 1, "the solutions are not the PDF's last part"
    for i, page_text in texts.items():
        if i not in answers:
            assert not re.search(r"Recall: |Back to the exercise", page_text), \
                f"page {i + 1}: a solution or an answer outside {ANSWERS!r}"
    solutions = _squash(" ".join(texts[i] for i in answers))
    for n in range(1, _exercise_count() + 1):
        assert re.search(rf"Solution to\s*Exercise {n}\b", solutions), \
            f"the solution of Exercise {n} is not in {ANSWERS!r}"


# ------------------------------------------------------------------------------- pictures


class _Figures(HTMLParser):
    """Counts the figures of a page: pictures in a cell's output (the live figures' static
    pictures are there too)."""

    VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
                      "meta", "source", "track", "wbr"})  # elements that have no end tag

    def __init__(self):
        super().__init__()
        self.open: list[list[str]] = []
        self.count = 0

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag == "img":
            inside = {c for cs in self.open for c in cs}
            self.count += bool(inside & {"cell_output", "mlm-static"})
        elif tag not in self.VOID:
            self.open.append(classes)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.open:
            self.open.pop()


@cache
def site_figures() -> int:
    total = 0
    for page in toc_pages():
        parser = _Figures()
        parser.feed((HTML / f"{page}.html").read_text())
        total += parser.count
    return total


def _images(resources, seen) -> int:
    """The pictures a page draws: image objects in its resources and in its forms'."""
    xobjects = resources.get("/XObject") if resources else None
    count = 0
    for ref in (xobjects.get_object() if xobjects else {}).values():
        obj = ref.get_object()
        if obj.get("/Subtype") == "/Image":
            count += 1
        elif obj.get("/Subtype") == "/Form" and id(obj) not in seen:
            seen.add(id(obj))
            count += _images(obj.get("/Resources"), seen)
    return count


def test_every_figure_of_the_site_is_a_picture_in_the_pdf(reader):
    """Counted page by page: Chromium stores a picture that appears twice only once."""
    figures = site_figures()
    assert figures >= 40, f"only {figures} figures on the site: has the HTML changed?"
    pictures = sum(_images(page.get("/Resources"), set()) for page in reader.pages)
    assert pictures >= figures, f"{pictures} pictures in the PDF, {figures} figures on the site"
