"""The student edition runs, and its exercises wait for an answer.

``tests/test_editions.py`` checks the student edition as files (current, no solution left, no
MyST, and no cell after a solution that needs what only the solution defines). What a student
notebook runs differently from its chapter, which nbval runs whole, is only its template
cells. So a few short chapters' student notebooks run here, from the course's ``notebooks/``
folder, and every exercise's template must answer "Not answered yet"; the grader's tests
(``tests/test_grade.py``) run the untouched student edition of the same chapters and grade it
"not answered" with the grader's own checks. Every other chapter's templates run too, in the
chapter itself: each template cell's stored output says "Not answered yet", and nbval runs the
chapter and compares that output (the test below checks no template's output is exempt).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mlmlib.course.book import Book
from mlmlib.course.edition import FOLDERS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
BOOK = Book(ROOT)
CHAPTERS = [p.split("/")[-1] for p in BOOK.pages if BOOK.path(p).suffix == ".ipynb"]
SHORT = ("walkthrough_1_hide", "worked_a_standard_mask")  # a function and a number to answer


def test_make_student_writes_the_downloads_the_site_offers():
    result = subprocess.run(["make", "-n", "student"], cwd=ROOT, capture_output=True, text=True)
    assert "mlmlib.course.edition --downloads _build/student-edition" in result.stdout
    config = (ROOT / "_config.yml").read_text()
    assert "html_extra_path: [_build/student-edition]" in config


@pytest.mark.parametrize("chapter", SHORT)
def test_every_student_notebook_runs_and_its_checkers_wait_for_an_answer(chapter):
    import nbformat
    from nbclient import NotebookClient

    book = nbformat.read(ROOT / FOLDERS["student"] / f"{chapter}.ipynb", as_version=4)
    NotebookClient(book, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    templates = [c for c in book.cells if c.cell_type == "code" and "# your" in c.source]
    assert templates, f"{chapter}: no exercise template"
    for cell in templates:
        shown = "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/plain", ""))
                        for o in cell.outputs)
        assert "Not answered yet" in shown, f"{chapter}: {cell.source[:60]!r} printed " \
            f"{shown[:200]!r}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_template_answers_not_answered_yet_in_its_chapter_and_nbval_checks_it(chapter):
    from mlmlib.course._templates import answer_cells

    cells = list(BOOK.cells(f"notebooks/{chapter}"))
    found = answer_cells(cells, list(BOOK.exercises(f"notebooks/{chapter}")))
    assert found, f"{chapter}: no exercise"
    for label, (_, answers) in found.items():
        stub = cells[answers[0]]
        shown = "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get(
            "text/plain", "")) for o in stub.get("outputs", []))
        assert "Not answered yet" in shown, f"{chapter} {label}: its template printed {shown!r}"
        assert "NBVAL_IGNORE_OUTPUT" not in "".join(stub["source"]), \
            f"{chapter} {label}: nbval must compare the template's output"


def test_the_edition_command_refuses_a_folder_that_is_not_the_course(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mlmlib.course.edition", "--root",
                             str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1 and "not a clone of the course" in result.stderr
    assert not (tmp_path / "editions").exists()


def test_the_teachers_page_offers_every_chapter_of_the_book():
    page = (ROOT / "book" / "teachers.md").read_text()
    for chapter in CHAPTERS:
        assert f'href="../downloads/student/{chapter}.ipynb"' in page, chapter
        assert BOOK.colab_url(f"{FOLDERS['student']}/{chapter}.ipynb") in page, chapter
    assert 'href="../downloads/mlm-course-student.zip"' in page
    assert 'href="../downloads/answer-key.md"' in page
