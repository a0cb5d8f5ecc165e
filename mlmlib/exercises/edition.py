"""mlmlib.exercises.edition - the student edition of the chapters, and its answer key.

Does: read every chapter notebook and write a copy with each exercise's solution taken out
(the ``{solution-start}`` ... ``{solution-end}`` part: its text and its code cells) and every
output cleared, so that a student who opens it in Jupyter or Colab sees the exercises, with
their checkers saying "Not answered yet", and no answer. The answer key gathers each exercise
with its solution, chapter by chapter, in one Markdown file. ``make student`` runs it::

    python -m mlmlib.exercises.edition --out _build/student-edition

writes ``downloads/student/<chapter>.ipynb``, ``downloads/mlm-course-student.zip`` (the
folder ``student/``, to unpack at the root of a clone of the course, beside ``notebooks/``,
so that the chapters' relative paths hold) and ``downloads/answer-key.md``; the site serves
``downloads/`` (``html_extra_path``).

Does not: change the chapters themselves, or run the student notebooks (tests/test_student.py
does, and checks that no solution leaked).

>>> cells = [{"cell_type": "markdown", "source": "Intro.\\n\\n```{solution-start} ex-1\\n"
...           ":class: dropdown\\n```\\n\\nThe answer is 2."},
...          {"cell_type": "code", "source": "answer = 2", "outputs": [], "metadata": {}},
...          {"cell_type": "markdown", "source": "```{solution-end}\\n```\\n\\n## Summary"}]
>>> [c["source"] for c in student_cells(cells)]
['Intro.\\n\\n*(The solution is in the answer key.)*', '## Summary']
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import zipfile
from pathlib import Path

__all__ = ["answer_key", "student_cells", "write_edition"]

START = re.compile(r"```\{solution-start\}\s*(?P<label>[\w-]+)[^\n]*\n(?::[^\n]*\n)*```\n?")
END = re.compile(r"```\{solution-end\}\s*\n```\n?")
EXERCISE = re.compile(r"````\{exercise\}[^\n]*\n:label:\s*(?P<label>[\w-]+)\n(?P<body>.*?)\n````",
                      re.S)
NOTE = "*(The solution is in the answer key.)*"


def _check_cells(cells, name: str) -> list[dict]:
    """``cells`` as a notebook's list of cells, each a dict with a cell_type and a source."""
    if isinstance(cells, str | bytes | dict) or not isinstance(cells, list | tuple):
        raise TypeError(f"{name} must be a notebook's list of cells (nb['cells']), got "
                        f"{type(cells).__name__}")
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict) or "cell_type" not in cell or "source" not in cell:
            raise ValueError(f"{name}[{i}] is not a notebook cell (a dict with 'cell_type' and "
                             f"'source'), got {str(cell)[:60]!r}")
    return list(cells)


def _text(cell: dict) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def student_cells(cells: list[dict]) -> list[dict]:
    """The cells without their solutions (a note where each was) and without outputs."""
    cells = _check_cells(cells, "cells")
    out, inside = [], False
    for cell in cells:
        text = _text(cell)
        if cell["cell_type"] != "markdown":
            if not inside:
                cell = copy.deepcopy(cell)
                if cell["cell_type"] == "code":
                    cell.update(outputs=[], execution_count=None)
                    cell.get("metadata", {}).pop("execution", None)
                out.append(cell)
            continue
        kept, at = [], 0
        while at <= len(text):
            fence = (END if inside else START).search(text, at)
            if fence is None:
                if not inside:
                    kept.append(text[at:])
                break
            if not inside:
                kept.append(text[at:fence.start()] + NOTE)
            inside, at = not inside, fence.end()
        source = "".join(kept).strip()
        if source:
            out.append({**copy.deepcopy(cell), "source": source})
    if inside:
        raise ValueError("a {solution-start} has no {solution-end}")
    return out


def _solutions(cells: list[dict]) -> dict[str, list[str]]:
    """Each solution's parts (its text, its code as Markdown code blocks), by exercise label."""
    found, label = {}, None
    for cell in cells:
        text = _text(cell)
        if cell["cell_type"] != "markdown":
            if label is not None and text.strip():
                found[label].append(f"```python\n{text.strip()}\n```")
            continue
        at = 0
        while True:
            if label is None:
                start = START.search(text, at)
                if start is None:
                    break
                label, at = start["label"], start.end()
                found[label] = []
            else:
                end = END.search(text, at)
                part = text[at:end.start() if end else len(text)].strip()
                if part:
                    found[label].append(part)
                if end is None:
                    break
                label, at = None, end.end()
    return found


def answer_key(chapters: dict[str, list[dict]]) -> str:
    """Every exercise with its solution (its text and code), chapter by chapter, as Markdown."""
    lines = ["# Answer key", "",
             "Each exercise of the course with its solution, chapter by chapter. The chapters "
             "themselves show the same solutions in dropdowns; the student edition leaves them "
             "out.", ""]
    if not isinstance(chapters, dict):
        raise TypeError("chapters must map each chapter's name to its list of cells, got "
                        f"{type(chapters).__name__}")
    chapters = {name: _check_cells(cells, f"chapters[{name!r}]")
                for name, cells in chapters.items()}
    for name, cells in chapters.items():
        exercises = {m["label"]: m["body"].strip() for cell in cells
                     if cell["cell_type"] == "markdown" for m in EXERCISE.finditer(_text(cell))}
        if not exercises:
            continue
        solutions = _solutions(cells)
        lines += [f"## {name}", ""]
        for label, body in exercises.items():
            lines += [f"### {label}", "", body, "", "**Solution**", "",
                      *(solutions.get(label) or ["(no solution written)"]), ""]
    return "\n".join(lines).rstrip() + "\n"


def write_edition(notebooks: Path, out: Path) -> list[Path]:
    """Write the student edition of every notebook in ``notebooks`` under ``out``; the files."""
    notebooks, out = Path(notebooks), Path(out)
    paths = sorted(notebooks.glob("*.ipynb"))
    if not paths:
        raise ValueError(f"no notebooks (*.ipynb) in {notebooks}")
    downloads = out / "downloads"
    shutil.rmtree(downloads, ignore_errors=True)
    folder = downloads / "student"
    folder.mkdir(parents=True)
    chapters, written = {}, []
    for path in paths:
        book = json.loads(path.read_text(encoding="utf-8"))
        chapters[path.stem] = book["cells"]
        student = {**book, "cells": student_cells(book["cells"])}
        target = folder / path.name
        target.write_text(json.dumps(student, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
        written.append(target)
    key = downloads / "answer-key.md"
    key.write_text(answer_key(chapters), encoding="utf-8")
    archive = downloads / "mlm-course-student.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for target in written:  # a fixed date: the same chapters give the same archive
            info = zipfile.ZipInfo(f"student/{target.name}", date_time=(2026, 1, 1, 0, 0, 0))
            z.writestr(info, target.read_bytes(), zipfile.ZIP_DEFLATED)
    return [*written, key, archive]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlmlib.exercises.edition",
                                     description="Write the student edition and answer key.")
    parser.add_argument("--notebooks", type=Path, default=Path("notebooks"))
    parser.add_argument("--out", type=Path, default=Path("_build/student-edition"))
    args = parser.parse_args(argv)
    try:
        files = write_edition(args.notebooks, args.out)
    except (ValueError, OSError) as err:
        print(f"error: {err}")
        return 1
    print(f"student edition: {len(files) - 2} notebooks, the answer key and one archive in "
          f"{args.out / 'downloads'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
