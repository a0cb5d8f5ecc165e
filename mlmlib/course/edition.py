"""mlmlib.course.edition - the chapters as any notebook viewer shows them, with and without answers.

Does: write two editions of every chapter from the committed notebooks (their stored outputs,
never a new run), in plain Markdown that JupyterLab, Colab and GitHub render (see
:mod:`mlmlib.course.myst`):

* the **notebook edition**, ``editions/notebooks/``: each exercise a numbered heading, each
  solution (its text, its code as a listing that does not run, and that code's stored output)
  folded in ``<details>`` under its exercise, each recall answer folded too, each figure followed
  by its caption and numbered as on the site, each picture with its alt text;
* the **student edition**, ``editions/student/``: the same, with the solutions taken out and
  every output cleared, so that each exercise's checker answers "Not answered yet".

Every other code cell stays as it is, the Colab set-up cell first. Both editions are committed
(Colab opens them from the repository); ``tests/test_editions.py`` fails when they drift from
the chapters. It also writes the downloads the site offers teachers: the student notebooks, an
archive of them and the answer key (every exercise, numbered, with its solution)::

    python -m mlmlib.course.edition                     # rewrite editions/ (make editions)
    python -m mlmlib.course.edition --check             # exit 1 if editions/ is stale
    python -m mlmlib.course.edition --downloads DIR     # DIR/downloads/ for the site

Does not: change the chapters, or run any notebook.

>>> book = Book(Path(__file__).parents[2])   # the clone this module sits in
>>> cells = [{"cell_type": "markdown", "source": "Intro.\\n\\n```{solution-start} ex-a-slot-loss\\n"
...           ":class: dropdown\\n```\\n\\nThe answer is 2."},
...          {"cell_type": "code", "source": "answer = 2", "outputs": [], "metadata": {}},
...          {"cell_type": "markdown", "source": "```{solution-end}\\n```\\n\\n## Summary"}]
>>> student = [c["source"] for c in student_cells(cells, book, "notebooks/worked_a_standard_mask")]
>>> student[0], student[1][:20], student[2:]   # its first cell, the note on what it is, the rest
('Intro.', '**Student edition.**', ['*(The solution is in the answer key.)*', '## Summary'])
>>> print(notebook_cells(cells, book, "notebooks/worked_a_standard_mask")[1]["source"])
<details>
<summary><b>Solution to Exercise 9</b></summary>
<BLANKLINE>
The answer is 2.
<BLANKLINE>
```python
answer = 2
```
<BLANKLINE>
</details>
"""

from __future__ import annotations

import argparse
import copy
import html
import json
import shutil
import sys
import zipfile
from pathlib import Path

from mlmlib._checks import items, kind
from mlmlib.course.book import Book, cell_text, directives
from mlmlib.course.myst import convert, fold
from mlmlib.plots import png_alt  # the figures' alt text, which their PNGs carry

__all__ = ["answer_key", "edition_cells", "notebook_cells", "stale", "student_cells",
           "write_downloads", "write_editions"]

FOLDERS = {"notebooks": "editions/notebooks", "student": "editions/student"}
NOTE = "*(The solution is in the answer key.)*"
# The student edition's first note (after the Colab cell), which says what the notebook is.
STUDENT_NOTE = ("**Student edition.** Nothing in this notebook has run yet: run its cells in "
                "order. Each exercise leaves you a cell to fill in, then a checker that says "
                "whether your answer is right or names the usual mistake. The solutions are not "
                "here: they are in the answer key, and on [this chapter's page]({url}) of the "
                "course's site, so try each exercise before you look.")
SOLUTION = ("solution-start", "solution-end")


def _code(cell: dict) -> str:
    """A code cell's source without the test suite's ``# NBVAL_...`` marker lines (nbval reads
    them in the chapters; a reader of an edition has no use for them)."""
    return "".join(line for line in cell_text(cell).splitlines(keepends=True)
                   if not line.strip().startswith("# NBVAL_"))


def _check_cells(cells, name: str) -> list[dict]:
    """``cells`` as a notebook's list of cells, each a dict with a cell_type and a source."""
    cells = items(cells, name, "cells (a notebook's nb['cells'])")
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict) or "cell_type" not in cell or "source" not in cell:
            raise ValueError(f"{name}[{i}] is not a notebook cell (a dict with 'cell_type' and "
                             f"'source'), got {str(cell)[:60]!r}")
    return cells


# ---------------------------------------------------------------------- pictures
def _with_alt(output: dict) -> dict:
    """An output whose PNG carries alt text gains an HTML ``<img>`` with it: Jupyter and Colab
    prefer the HTML, so a screen reader hears the description there too."""
    png = output.get("data", {}).get("image/png")
    alt = png_alt("".join(png)) if png else None
    if alt is None or "text/html" in output["data"]:
        return output
    output = copy.deepcopy(output)
    output["data"]["text/html"] = (f'<img src="data:image/png;base64,{"".join(png).strip()}" '
                                   f'alt="{html.escape(alt)}" style="max-width:100%"/>')
    return output


# ---------------------------------------------------------------------- cells
def _listing(cell: dict) -> list[str]:
    """A solution's code cell as Markdown: the code as a listing, then its stored output."""
    parts = [f"```python\n{_code(cell).strip()}\n```"]
    shown = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if output["output_type"] == "stream":
            shown.append("".join(output["text"]).rstrip("\n"))
        elif "image/png" in data:
            alt = png_alt("".join(data["image/png"])) or "a figure"
            parts.append(f'<img src="data:image/png;base64,{"".join(data["image/png"])}" '
                         f'alt="{html.escape(alt)}"/>')
        elif "text/plain" in data:
            shown.append("".join(data["text/plain"]).rstrip("\n"))
        elif output["output_type"] == "error":
            shown.append(f"{output['ename']}: {output['evalue']}")
    if shown:
        parts.append("Its output:\n\n```text\n" + "\n".join(shown) + "\n```")
    return parts


def _new_cell(source: str, like: dict | None, suffix: str) -> dict:
    cell = {"cell_type": "markdown", "metadata": {}, "source": source}
    if like is not None and "id" in like:
        cell["id"] = f"{like['id']}-{suffix}"[:64]
    return cell


def edition_cells(cells: list[dict], book: Book, page: str, student: bool) -> list[dict]:
    """``cells`` of ``page`` as the notebook edition (``student=False``) or the student edition.

    Markdown is rewritten by :func:`mlmlib.course.myst.convert`; a solution (the cells between
    ``{solution-start} label`` and ``{solution-end}``) becomes one folded Markdown cell, or, in
    the student edition, a note that the answer key has it; the student edition also opens,
    after the Colab cell, with a note that says what it is (``STUDENT_NOTE``).
    """
    cells = _check_cells(cells, "cells")
    numbers, figures = book.exercise_numbers(), book.figure_numbers()
    out, solution = [], None  # solution: (label, parts) while inside one

    def markdown(text: str, like: dict, suffix: str):
        text = text.strip()
        if not text:
            return
        if solution is not None:
            solution[1].append(convert(text, book, page))
        else:
            cell = {**copy.deepcopy(like), "source": convert(text, book, page)}
            if suffix:
                cell = {**_new_cell(cell["source"], like, suffix), "metadata":
                        copy.deepcopy(like.get("metadata", {}))}
            out.append(cell)

    for cell in cells:
        if cell["cell_type"] != "markdown":
            if solution is not None:
                solution[1].extend(_listing(cell) if cell["cell_type"] == "code" else [])
                continue
            cell = copy.deepcopy(cell)
            if cell["cell_type"] == "code":
                cell["source"] = _code(cell).splitlines(keepends=True)
                if student:
                    cell.update(outputs=[], execution_count=None)
                    cell.get("metadata", {}).pop("execution", None)
                else:
                    cell["outputs"] = [_with_alt(o) for o in cell.get("outputs", [])]
            out.append(cell)
            figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
            if figure.get("caption"):
                number = figures.get(figure.get("name"))
                label = f"Figure {number}." if number else "Figure."
                caption = convert(figure["caption"], book, page)
                out.append(_new_cell(f"**{label}** {caption}", cell, "caption"))
            continue
        text, at, piece = cell_text(cell), 0, 0
        for start, end, name, argument, _, _ in directives(text):
            if name not in SOLUTION:
                continue
            markdown(text[at:start], cell, f"part{piece}" if piece else "")
            piece += 1
            if name == "solution-start":
                if solution is not None:
                    raise ValueError(f"{page}: a {{solution-start}} inside another solution")
                solution = (argument, [])
            else:
                if solution is None:
                    raise ValueError(f"{page}: a {{solution-end}} with no {{solution-start}}")
                label, parts = solution
                solution = None
                if student:
                    out.append(_new_cell(NOTE, cell, f"note{piece}"))
                else:
                    number = numbers.get(label)
                    if number is None:
                        raise ValueError(f"{page}: a solution to {label!r}, which is not an "
                                         "exercise of the book")
                    out.append(_new_cell(fold(f"Solution to Exercise {number}", parts), cell,
                                         f"solution{piece}"))
            at = end
        markdown(text[at:], cell, f"part{piece}" if piece else "")
    if solution is not None:
        raise ValueError(f"{page}: a {{solution-start}} has no {{solution-end}}")
    if student and out:  # after the Colab cell, which stays first
        out.insert(1, _new_cell(STUDENT_NOTE.format(url=book.page_url(page)), out[0], "student"))
    return out


def notebook_cells(cells: list[dict], book: Book, page: str) -> list[dict]:
    """The notebook edition of ``page``'s cells (solutions folded, outputs kept)."""
    return edition_cells(cells, book, page, student=False)


def student_cells(cells: list[dict], book: Book, page: str) -> list[dict]:
    """The student edition of ``page``'s cells (solutions out, outputs cleared)."""
    return edition_cells(cells, book, page, student=True)


# ---------------------------------------------------------------------- the key
def _solutions(cells: list[dict], book: Book, page: str) -> dict[str, list[str]]:
    """Each solution's parts (its text, its code as listings), by exercise label."""
    found, label = {}, None
    for cell in cells:
        text = cell_text(cell)
        if cell["cell_type"] != "markdown":
            if label is not None and cell["cell_type"] == "code" and text.strip():
                found[label].append(f"```python\n{text.strip()}\n```")
            continue
        at = 0
        for start, end, name, argument, _, _ in directives(text):
            if name not in SOLUTION:
                continue
            if label is not None and text[at:start].strip():
                found[label].append(convert(text[at:start], book, page))
            label = argument if name == "solution-start" else None
            if label is not None:
                found[label] = []
            at = end
        if label is not None and text[at:].strip():
            found[label].append(convert(text[at:], book, page))
    return found


def answer_key(book: Book) -> str:
    """Every exercise of the book, numbered, with its solution (text and code), as Markdown."""
    kind(book, "book", Book, "a mlmlib.course.book.Book")
    lines = ["# Answer key", "",
             "Each exercise of the course with its solution, chapter by chapter, numbered as on "
             "the site. The chapters show the same solutions folded under each exercise; the "
             "student edition leaves them out.", ""]
    numbers = book.exercise_numbers()
    for page in book.pages:
        exercises = book.exercises(page)
        if not exercises:
            continue
        solutions = _solutions(list(book.cells(page)), book, page)
        lines += [f"## {book.title(page)}", ""]
        for label, body in exercises.items():
            lines += [f"### Exercise {numbers[label]} ({label})", "", convert(body, book, page),
                      "", "**Solution**", "", *(solutions.get(label) or ["(no solution written)"]),
                      ""]
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------------- files
def _chapters(book: Book) -> list[str]:
    return [page for page in book.pages if book.path(page).suffix == ".ipynb"]


def _dump(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def editions(book: Book) -> dict[Path, str]:
    """Every edition file's path (from the root) and its text."""
    files = {}
    for page in _chapters(book):
        nb = json.loads(book.path(page).read_text(encoding="utf-8"))
        name = book.path(page).name
        for student, folder in ((False, FOLDERS["notebooks"]), (True, FOLDERS["student"])):
            cells = edition_cells(nb["cells"], book, page, student=student)
            files[Path(folder) / name] = _dump({**nb, "cells": cells})
    return files


def write_editions(root: Path | str) -> list[Path]:
    """Rewrite both editions under ``root``/editions; the files written."""
    book = Book(root)
    files = editions(book)
    for folder in FOLDERS.values():
        shutil.rmtree(book.root / folder, ignore_errors=True)
        (book.root / folder).mkdir(parents=True)
    for path, text in files.items():
        (book.root / path).write_text(text, encoding="utf-8")
    return [book.root / p for p in files]


def stale(root: Path | str) -> list[str]:
    """The edition files that differ from what the chapters give now (missing, changed, extra)."""
    book = Book(root)
    files = editions(book)
    found = {p.relative_to(book.root) for folder in FOLDERS.values()
             for p in (book.root / folder).glob("*.ipynb")}
    bad = [str(p) for p, text in files.items()
           if not (book.root / p).is_file() or (book.root / p).read_text(encoding="utf-8") != text]
    return sorted(bad + [f"{p} (no such chapter)" for p in found - set(files)])


def write_downloads(root: Path | str, out: Path | str) -> list[Path]:
    """The site's downloads under ``out``/downloads: the student notebooks, an archive of them
    (the folder ``student/``) and the answer key; the files written."""
    book, out = Book(root), Path(out)
    downloads = out / "downloads"
    shutil.rmtree(downloads, ignore_errors=True)
    (downloads / "student").mkdir(parents=True)
    written = []
    for page in _chapters(book):
        nb = json.loads(book.path(page).read_text(encoding="utf-8"))
        target = downloads / "student" / book.path(page).name
        target.write_text(_dump({**nb, "cells": student_cells(nb["cells"], book, page)}),
                          encoding="utf-8")
        written.append(target)
    key = downloads / "answer-key.md"
    key.write_text(answer_key(book), encoding="utf-8")
    archive = downloads / "mlm-course-student.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for target in written:  # a fixed date: the same chapters give the same archive
            info = zipfile.ZipInfo(f"student/{target.name}", date_time=(2026, 1, 1, 0, 0, 0))
            z.writestr(info, target.read_bytes(), zipfile.ZIP_DEFLATED)
    return [*written, key, archive]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mlmlib.course.edition",
        description="Write the notebook and student editions of the chapters (editions/), or "
                    "the site's downloads.")
    parser.add_argument("--root", type=Path, default=Path("."), help="the course's clone")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if editions/ differs from the chapters")
    parser.add_argument("--downloads", type=Path, metavar="DIR",
                        help="write DIR/downloads (student notebooks, archive, answer key)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            bad = stale(args.root)
            for path in bad:
                print(f"stale: {path}")
            if bad:
                print("the editions differ from the chapters: run make editions")
            return 1 if bad else 0
        if args.downloads:
            files = write_downloads(args.root, args.downloads)
            print(f"downloads: {len(files) - 2} student notebooks, the answer key and one "
                  f"archive in {args.downloads / 'downloads'}")
            return 0
        files = write_editions(args.root)
        print(f"editions: {len(files) // 2} chapters in {', '.join(FOLDERS.values())}")
        return 0
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
