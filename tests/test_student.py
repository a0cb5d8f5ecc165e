"""The student edition: built by ``make student``, with no solution in it, and every notebook runs.

The edition is written afresh into a temporary folder from the chapters as they are; each
student notebook is then executed from the course's ``notebooks/`` folder (where a student puts
``student/``'s files: the same depth, so relative paths such as ``../bench/results`` hold), and
every exercise cell must answer "Not answered yet".
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mlmlib.exercises.edition import END, EXERCISE, NOTE, START, _text, write_edition

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _solution_code(cells: list[dict]) -> list[str]:
    """The code cells inside the chapter's solutions."""
    code, inside = [], False
    for cell in cells:
        text = _text(cell)
        if cell["cell_type"] == "markdown":
            for fence in sorted([*START.finditer(text), *END.finditer(text)],
                                key=lambda m: m.start()):
                inside = fence.re is START
        elif inside:
            code.append(text.strip())
    return code


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition")
    write_edition(ROOT / "notebooks", out)
    return out / "downloads"


def test_make_student_writes_the_edition_the_site_offers():
    result = subprocess.run(["make", "-n", "student"], cwd=ROOT, capture_output=True, text=True)
    assert "mlmlib.exercises.edition" in result.stdout
    config = (ROOT / "_config.yml").read_text()
    assert "html_extra_path: [_build/student-edition]" in config


def test_every_chapter_is_in_the_edition_the_archive_and_the_key(edition):
    names = sorted(p.name for p in (edition / "student").glob("*.ipynb"))
    assert names == [p.name for p in CHAPTERS]
    with zipfile.ZipFile(edition / "mlm-course-student.zip") as z:
        assert sorted(z.namelist()) == [f"student/{n}" for n in names]
        assert z.read("student/walkthrough_1_hide.ipynb") == \
            (edition / "student" / "walkthrough_1_hide.ipynb").read_bytes()
    key = (edition / "answer-key.md").read_text()
    labels = [m["label"] for p in CHAPTERS for c in _cells(p) if c["cell_type"] == "markdown"
              for m in EXERCISE.finditer(_text(c))]
    assert len(labels) >= 20
    for label in labels:
        assert f"### {label}\n" in key
    assert "(no solution written)" not in key
    for path in CHAPTERS:  # every solution's code is in the key
        for code in _solution_code(_cells(path)):
            assert code in key, f"{path.stem}: a solution is missing from the answer key"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_solution_leaked_into_the_student_notebook(chapter, edition):
    original, student = _cells(chapter), _cells(edition / "student" / chapter.name)
    text = "\n".join(_text(c) for c in student)
    assert "solution-start" not in text and "solution-end" not in text
    solutions = _solution_code(original)
    assert solutions, f"{chapter.stem} has no solution to take out"
    student_code = {_text(c).strip() for c in student if c["cell_type"] == "code"}
    leaked = [s for s in solutions if s in student_code]
    assert not leaked, f"{chapter.stem}: solution code left in: {leaked[0][:80]}"
    assert text.count(NOTE) == len(list(START.finditer(
        "\n".join(_text(c) for c in original if c["cell_type"] == "markdown"))))
    exercises = [m["label"] for c in original if c["cell_type"] == "markdown"
                 for m in EXERCISE.finditer(_text(c))]
    assert all(f":label: {label}" in text for label in exercises)
    assert all(not c.get("outputs") for c in student if c["cell_type"] == "code")
    assert any("# your" in _text(c) for c in student if c["cell_type"] == "code")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_student_notebook_runs_and_its_checkers_wait_for_an_answer(chapter, edition):
    import nbformat
    from nbclient import NotebookClient

    book = nbformat.read(edition / "student" / chapter.name, as_version=4)
    NotebookClient(book, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    for cell in book.cells:
        if cell.cell_type == "code" and "# your" in cell.source:
            shown = "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/plain", ""))
                            for o in cell.outputs)
            assert "Not answered yet" in shown, f"{chapter.stem}: {cell.source[:60]!r} " \
                f"printed {shown[:200]!r}"


def test_the_edition_command_refuses_a_folder_with_no_notebooks(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mlmlib.exercises.edition", "--notebooks",
                             str(tmp_path), "--out", str(tmp_path / "out")], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 1 and "no notebooks" in result.stdout


def test_the_teachers_page_offers_every_chapter_of_the_book():
    page = (ROOT / "book" / "teachers.md").read_text()
    toc = (ROOT / "_toc.yml").read_text()
    for path in CHAPTERS:
        if f"notebooks/{path.stem}" in toc:
            assert f'href="../downloads/student/{path.name}"' in page, path.stem
    assert 'href="../downloads/mlm-course-student.zip"' in page
    assert 'href="../downloads/answer-key.md"' in page
