"""The notebook and student editions (editions/): current, free of MyST, numbered as the site.

JupyterLab, Colab and GitHub do not render MyST: in the chapters, an exercise's solution and
every recall answer would sit in plain sight under the question. The editions are the chapters
in plain Markdown (mlmlib.course.edition). These tests check that the committed editions are
what the chapters give now, that no directive or role survives (parsed by MyST's own parser),
that every exercise and figure carries the number the built site gives it, that nothing of a
solution is left in the student edition, and that a cell outside the solutions never needs a
name only a solution defines (the editions do not run the solutions). ``tests/test_lab.py``
opens them in a real JupyterLab.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mlmlib.course.book import Book, cell_text, directives
from mlmlib.course.edition import FOLDERS, NOTE, answer_key, stale, write_downloads
from mlmlib.course.myst import exercise_marker

ROOT = Path(__file__).resolve().parent.parent
BOOK = Book(ROOT)
CHAPTERS = [p for p in BOOK.pages if BOOK.path(p).suffix == ".ipynb"]
HTML = ROOT / "_build" / "html"
REQUIRED = os.environ.get("MLM_REQUIRE_BROWSER") == "1"  # CI: the built site must be there


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _edition(kind: str, page: str) -> list[dict]:
    return _cells(ROOT / FOLDERS[kind] / f"{page.split('/')[-1]}.ipynb")


def _markdown(cells) -> str:
    return "\n\n".join(cell_text(c) for c in cells if c["cell_type"] == "markdown")


def _solution_code(cells: list[dict]) -> list[str]:
    """The code cells inside the chapter's solutions (as the editions show them: without nbval's
    marker lines)."""
    code, inside = [], False
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for *_, name, _, _, _ in directives(cell_text(cell)):
                if name in ("solution-start", "solution-end"):
                    inside = name == "solution-start"
        elif inside:
            code.append("".join(line for line in cell_text(cell).splitlines(keepends=True)
                                if not line.startswith("# NBVAL_")).strip())
    return code


def test_the_committed_editions_are_what_the_chapters_give_now():
    bad = stale(ROOT)
    assert not bad, f"the editions differ from the chapters (run: make editions): {bad[:5]}"


@pytest.mark.slow
def test_make_editions_writes_them_and_the_check_flag_agrees():
    result = subprocess.run(["make", "-n", "editions"], cwd=ROOT, capture_output=True, text=True)
    assert "mlmlib.course.edition" in result.stdout
    check = subprocess.run([sys.executable, "-m", "mlmlib.course.edition", "--check"], cwd=ROOT,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def _myst_tokens(text: str):
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(enable_extensions={"amsmath", "dollarmath", "colon_fence",
                                               "deflist", "substitution"})
    stack = list(create_md_parser(config, RendererHTML).parse(text))
    while stack:
        token = stack.pop()
        yield token
        stack.extend(token.children or [])


def _markup(text: str) -> list[str]:
    """MyST markup in ``text`` as MyST's parser reads it: roles, directives, targets."""
    found = []
    for token in _myst_tokens(text):
        if token.type in ("myst_role", "myst_target", "myst_line_comment", "myst_block_break",
                          "substitution_inline", "substitution_block"):
            found.append(f"{token.type}: {token.content[:40]!r}")
        elif token.type in ("fence", "colon_fence") and token.info.strip().startswith("{"):
            found.append(f"directive {token.info.strip()[:40]}")
    return found


def test_the_parser_sees_the_chapters_markup():
    """The check below can fail: in the source chapters it finds every kind of markup."""
    found = " ".join(m for p in CHAPTERS for m in _markup(_markdown(BOOK.cells(p))))
    for kind in ("{exercise}", "{admonition}", "{solution-start}", "myst_role"):
        assert kind in found, kind


@pytest.mark.parametrize("kind", list(FOLDERS))
@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.split("/")[-1])
def test_no_myst_markup_is_left(page, kind):
    cells = _edition(kind, page)
    left = [m for c in cells if c["cell_type"] == "markdown" for m in _markup(cell_text(c))]
    assert not left, f"{kind} edition of {page}: {left[:3]}"
    text = _markdown(cells)
    assert "```{" not in text and "{doc}" not in text and "{cite}" not in text
    assert ":class: dropdown" not in text and ":label:" not in text


def test_the_editions_carry_no_test_markers():
    """nbval's ``# NBVAL_...`` lines steer the tests of the chapters; a reader never sees them."""
    assert any("# NBVAL_" in cell_text(c) for p in CHAPTERS for c in BOOK.cells(p))
    for kind in FOLDERS:
        for page in CHAPTERS:
            left = [c for c in _edition(kind, page) if "# NBVAL_" in cell_text(c)]
            assert not left, f"{kind} edition of {page}: {cell_text(left[0])[:80]!r}"


@pytest.mark.parametrize("kind", list(FOLDERS))
@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.split("/")[-1])
def test_every_exercise_is_a_heading_numbered_as_on_the_site(page, kind):
    numbers = BOOK.exercise_numbers()
    text = _markdown(_edition(kind, page))
    for label in BOOK.exercises(page):
        assert f"{exercise_marker(label)}\n### Exercise {numbers[label]}\n" in text, label
    cells = _edition(kind, page)
    assert cell_text(cells[0]).startswith("#@title Set-up for Google Colab"), "Colab cell first"


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.split("/")[-1])
def test_solutions_fold_in_the_notebook_edition_and_leave_the_student_edition(page):
    source, notebook, student = list(BOOK.cells(page)), _edition("notebooks", page), \
        _edition("student", page)
    solutions = _solution_code(source)
    assert solutions, f"{page} has no solution"
    folded = [cell_text(c) for c in notebook if cell_text(c).startswith("<details>\n<summary>"
                                                                        "<b>Solution to")]
    assert len(folded) == len(BOOK.exercises(page))
    for code in solutions:  # each solution's code is in its fold, as a listing
        assert any(f"```python\n{code}\n```" in f for f in folded), code[:60]
    notebook_code = {cell_text(c).strip() for c in notebook if c["cell_type"] == "code"}
    assert not set(solutions) & notebook_code, "a solution is still a code cell that runs"
    text = _markdown(student)
    assert "Solution to" not in text and text.count(NOTE) == len(BOOK.exercises(page))
    student_code = {cell_text(c).strip() for c in student if c["cell_type"] == "code"}
    assert not set(solutions) & student_code
    for code in solutions:
        assert code not in text, f"{page}: a solution's code left in the student edition"
    assert all(not c.get("outputs") for c in student if c["cell_type"] == "code")
    assert any("# your" in cell_text(c) for c in student if c["cell_type"] == "code")
    assert cell_text(student[1]).startswith("**Student edition.**"), "it says what it is"
    assert f"]({BOOK.page_url(page)})" in cell_text(student[1])
    recall = _markdown(source).count(":class: dropdown") - len(BOOK.exercises(page))
    assert text.count("<details>") == recall, "every recall answer is folded in the student edition"


def _bound(code: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def _used(code: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.split("/")[-1])
def test_no_cell_outside_the_solutions_needs_what_only_a_solution_defines(page):
    """The editions do not run the solutions, so the cells after them must not need them."""
    defined, only_in_solutions, inside = set(), set(), False
    for cell in BOOK.cells(page):
        if cell["cell_type"] == "markdown":
            for *_, name, _, _, _ in directives(cell_text(cell)):
                if name in ("solution-start", "solution-end"):
                    inside = name == "solution-start"
            continue
        if cell["cell_type"] != "code" or cell_text(cell).lstrip().startswith(("%", "!")):
            continue
        code = cell_text(cell)
        if inside:
            only_in_solutions |= _bound(code) - defined
            continue
        needed = _used(code) & only_in_solutions - _bound(code)
        assert not needed, f"{page}: {sorted(needed)} used after a solution that alone defines it"
        defined |= _bound(code)
        only_in_solutions -= _bound(code)


def test_the_answer_key_holds_every_exercise_numbered_with_its_solution():
    key = answer_key(BOOK)
    numbers = BOOK.exercise_numbers()
    assert len(numbers) >= 20
    for label, number in numbers.items():
        assert f"### Exercise {number} ({label})\n" in key
    assert "(no solution written)" not in key
    for page in CHAPTERS:
        for code in _solution_code(list(BOOK.cells(page))):
            assert code in key, f"{page}: a solution is missing from the answer key"
    assert not _markup(key), _markup(key)[:3]


def test_the_downloads_hold_the_student_edition_and_the_key(tmp_path):
    files = write_downloads(ROOT, tmp_path)
    downloads = tmp_path / "downloads"
    names = sorted(p.name for p in (downloads / "student").glob("*.ipynb"))
    assert names == sorted(f"{p.split('/')[-1]}.ipynb" for p in CHAPTERS)
    for name in names:
        assert (downloads / "student" / name).read_bytes() == \
            (ROOT / FOLDERS["student"] / name).read_bytes()
    with zipfile.ZipFile(downloads / "mlm-course-student.zip") as z:
        assert sorted(z.namelist()) == [f"student/{n}" for n in names]
    assert (downloads / "answer-key.md").read_text() == answer_key(BOOK)
    assert len(files) == len(names) + 2


def _site(page: str) -> str:
    path = HTML / f"{page}.html"
    if not path.exists():
        if REQUIRED:
            pytest.fail("no built site in _build/html (run: make book)")
        pytest.skip("no built site in _build/html (run: make book)")
    return path.read_text(encoding="utf-8")


def test_the_site_numbers_exercises_and_figures_as_the_editions_do():
    """The numbers are derived from _toc.yml; the built site must agree, every one."""
    exercises, figures = BOOK.exercise_numbers(), BOOK.figure_numbers()
    seen_exercises, seen_figures = {}, {}
    for page in BOOK.pages:
        html = _site(page)
        for label, number in re.findall(r'class="exercise admonition" id="([\w-]+)">\s*'
                                        r'<p class="admonition-title"><span class="caption-number">'
                                        r"Exercise (\d+) ", html):
            seen_exercises[label] = int(number)
        for name, number in re.findall(r'<figure[^>]* id="([\w-]+)">.*?<span class="caption-'
                                       r'number">Fig\. (\d+) ', html, re.S):
            seen_figures[name] = int(number)
    assert seen_exercises == exercises
    assert seen_figures == figures


def test_the_editions_link_the_sites_pages_as_the_site_names_them():
    text = "\n".join(_markdown(_edition("notebooks", p)) for p in CHAPTERS)
    links = set(re.findall(r"\]\((https?://[^)\s]+)\)", text))
    site = [u for u in links if u.startswith(BOOK.site_url)]
    assert len(site) >= 10, "the chapters' {doc} and {cite} links"
    pages = {u.removeprefix(BOOK.site_url).split("#")[0].removesuffix(".html") for u in site}
    assert pages <= set(BOOK.pages), pages - set(BOOK.pages)
    assert "[Devlin et al., 2019](" in text  # {cite}, as the site writes it


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.split("/")[-1])
def test_the_sites_colab_button_and_download_give_the_notebook_edition(page):
    html = _site(page)
    edition = ROOT / FOLDERS["notebooks"] / f"{page.split('/')[-1]}.ipynb"
    colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', html)
    assert colab == [BOOK.colab_url(edition.relative_to(ROOT).as_posix())], colab
    assert edition.is_file()
    download = HTML / "_sources" / f"{page}.ipynb"
    assert download.read_bytes() == edition.read_bytes(), "the .ipynb download is the edition"
