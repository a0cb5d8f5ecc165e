"""The student edition runs, and every exercise in it waits for an answer.

``tests/test_editions.py`` checks the student edition as files (current, no solution left, no
MyST). Here its notebooks run, from the course's ``notebooks/`` folder (a relative path such as
``../bench/results`` holds from there, as from ``editions/student/``), and every exercise's
template cell must answer "Not answered yet". nbval already runs every source chapter; what a
student notebook runs differently is only its templates (and no solutions, which
``test_editions.py`` shows nothing after them needs). So the chapters that train for minutes
(``LONG``) run under nbval only; their templates are the same checkers called with ``None``,
which ``tests/test_exercises.py`` covers.
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
LONG = {"training_2_toy_world", "training_3_real_text", "training_4_exact_lab"}


def test_make_student_writes_the_downloads_the_site_offers():
    result = subprocess.run(["make", "-n", "student"], cwd=ROOT, capture_output=True, text=True)
    assert "mlmlib.course.edition --downloads _build/student-edition" in result.stdout
    config = (ROOT / "_config.yml").read_text()
    assert "html_extra_path: [_build/student-edition]" in config


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c not in LONG])
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
