"""mlmlib.course.grade - grade a class's notebooks with the course's own checks: a gradebook.

Does: ``python -m mlmlib.course.grade SUBMISSIONS/ --out gradebook``, where
``SUBMISSIONS/<student>/<chapter>.ipynb`` is a folder per student holding any of the chapters
(the student edition, the notebook edition or the chapter itself, answered):

* **running**: each notebook runs in its own process (nbclient, kernel ``python3``, in the
  course's ``notebooks/`` folder so that its relative paths hold), ``--jobs`` at a time (1 by
  default), each within ``--timeout`` seconds (120 by default); when time is up the process and
  its kernel are killed, and what the notebook saved before still counts (a student's checks
  get the same time; one that hangs costs only its answer). The grader keeps at most 4 MB of
  what a notebook prints (it never reads it) and refuses a file over 20 MB unread;
* **credit comes only from the grader's own checks**: the exercises' templates are read from
  the course's chapters (:mod:`mlmlib.course._templates`), never from the submission. The
  grader injects its own cells around each answer (the code cells right after an exercise's
  heading): one forgets the answer's names (``my_answer``), one saves their values
  (cloudpickle, by value). Then a fresh process per student imports the checkers from
  :mod:`mlmlib.exercises` itself and calls each template's checker call on the saved values,
  with the chapter's data (``W``, ``h_new``) taken from the grader's own run of the student
  edition, made once per chapter per grading run where a checker call reads such data;
* **the gradebook**: ``DIR/gradebook.csv`` and ``DIR/gradebook.html``, a row per student
  (sorted), a column per exercise of the chapters present (its label and the site's number:
  ``ex-a-slot-loss (Exercise 9)``, in book order), the number of right answers and a notes
  column. Each cell is ``right``; ``wrong: <the checker's message, naming the mistake>``;
  ``not answered`` (the template untouched, the answer's name missing, an answer of the wrong
  kind with the checker's message, or no notebook for the chapter); or ``error: <one line>``
  (the answer's cells raised and left no answer, the notebook stopped before the answer was
  saved, the file is not a notebook of this chapter);
* **bad submissions** get a note and the run goes on: a file that is not JSON, or JSON that is
  not a notebook; another chapter's notebook under this chapter's name (told by the exercise
  labels it holds); a cell that never ends; a kernel that exits; a very large output; a
  notebook without the checker import (graded all the same); a folder with no notebook; a
  file that is not a chapter of the course.

The command prints a one-line summary and exits 0 when it graded, whatever the students got;
1 with ``error: ...`` for a bad command line (no such folder, no notebook at all). POSIX only
(Linux, macOS): it kills process groups.

Threat model: the grader guards against a submission that prints "Correct", fakes its stored
outputs, or replaces or patches the checkers or mlmlib inside its own kernel: none of that
reaches the checking process, which imports mlmlib afresh and reads only the saved values. An
answer that replaces a name of mlmlib, NumPy, PyTorch, ``math`` or the builtins while it is
loaded or checked gets an error, and the next answers are checked in a new process.
Does not: sandbox deliberately malicious code. A student's notebook runs with the teacher's
rights, and a student's function runs inside the checking process when the checker calls it
(unpickling a value can run code too): grade untrusted work inside a container.

>>> book = Gradebook([("ex-a-slot-loss", 9)], [Row("ada", {"ex-a-slot-loss": "right"})])
>>> print(book.csv(), end="")
student,ex-a-slot-loss (Exercise 9),right answers,notes
ada,right,1,
>>> book = grade("submissions", timeout=60, jobs=2)    # doctest: +SKIP
>>> write_gradebook(book, "gradebook")                 # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import html
import io
import re
import sys
import tempfile
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from mlmlib._checks import kind, number, pathlike, whole
from mlmlib.course import _grading
from mlmlib.course._grading import IMPORT, MAX_BYTES, Submission
from mlmlib.course._templates import templates
from mlmlib.course.book import Book

__all__ = ["MAX_BYTES", "Gradebook", "Row", "chapter_name", "grade", "main", "write_gradebook"]

STATES = ("right", "wrong", "not answered", "error")


# ---------------------------------------------------------------------- the gradebook
@dataclass
class Row:
    """A student's row: ``{label: cell}`` and the notes on their notebooks."""

    student: str
    cells: dict[str, str]
    notes: list[str] = field(default_factory=list)

    @property
    def right(self) -> int:
        return sum(cell == "right" for cell in self.cells.values())


@dataclass
class Gradebook:
    """The columns (``(label, site number)`` in book order) and the rows (students, sorted)."""

    columns: list[tuple[str, int]]
    rows: list[Row]
    warnings: list[str] = field(default_factory=list)

    def header(self) -> list[str]:
        return ["student", *(f"{label} (Exercise {n})" for label, n in self.columns),
                "right answers", "notes"]

    def table(self) -> list[list[str]]:
        return [[row.student, *(row.cells.get(label, "not answered") for label, _ in
                                self.columns), str(row.right), "; ".join(row.notes)]
                for row in self.rows]

    def csv(self) -> str:
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerows([self.header(), *self.table()])
        return text.getvalue()

    def counts(self) -> dict[str, int]:
        """How many cells are right, wrong, not answered, error."""
        cells = [row.cells.get(label, "not answered") for row in self.rows
                 for label, _ in self.columns]
        return {s: sum(c == s or c.startswith(f"{s}:") for c in cells) for s in STATES}

    def summary(self) -> str:
        counts = ", ".join(f"{n} {s}{'s' * (s == 'error' and n != 1)}"
                           for s, n in self.counts().items())
        return (f"graded {len(self.rows)} student{'s' * (len(self.rows) != 1)} on "
                f"{len(self.columns)} exercise{'s' * (len(self.columns) != 1)}: {counts}")

    def html(self) -> str:
        def cell(text: str) -> str:
            state = text.split(":")[0]
            kind = f' class="{state.replace(" ", "-")}"' if state in STATES else ""
            return f"<td{kind}>{html.escape(text)}</td>"

        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header())
        body = "\n".join(f"<tr><th>{html.escape(r[0])}</th>" + "".join(cell(c) for c in r[1:])
                         + "</tr>" for r in self.table())
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Gradebook</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #999; padding: 0.3em 0.5em; text-align: left; vertical-align: top;
         max-width: 30em; }}
.right {{ background: #e2f3df; }} .wrong {{ background: #fbe1e1; }}
.error {{ background: #fdefd3; }} .not-answered {{ color: #555; }}
</style>
</head>
<body>
<h1>Gradebook</h1>
<p>{html.escape(self.summary())}</p>
<table>
<thead><tr>{head}</tr></thead>
<tbody>
{body}
</tbody>
</table>
</body>
</html>
"""


def write_gradebook(gradebook: Gradebook, out: Path | str) -> list[Path]:
    """Write ``out``/gradebook.csv and ``out``/gradebook.html; the two paths."""
    kind(gradebook, "gradebook", Gradebook)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "gradebook.csv", out / "gradebook.html"]
    paths[0].write_text(gradebook.csv(), encoding="utf-8")
    paths[1].write_text(gradebook.html(), encoding="utf-8")
    return paths


# ---------------------------------------------------------------------- grading
def _root(root) -> Path:
    if root is not None:
        return pathlike(root, "root")
    if Path("_config.yml").is_file():
        return Path(".")
    import mlmlib

    clone = Path(mlmlib.__file__).resolve().parents[1]
    if not (clone / "_config.yml").is_file():
        raise ValueError("no course here: run in a clone of the course or pass --root")
    return clone


def _settings(submissions, timeout, jobs) -> tuple[Path, float, int]:
    submissions = pathlike(submissions, "submissions")
    if not submissions.is_dir():
        raise ValueError(f"{submissions} is not a folder (expected SUBMISSIONS/<student>/"
                         "<chapter>.ipynb)")
    return submissions, number(timeout, "timeout", 0, above=True), whole(jobs, "jobs", least=1)


def chapter_name(filename: str) -> str:
    """The chapter a submitted file's name stands for: what Colab and browsers add to a
    download (``Copy of ...``, `` (1)``, ``-2``) taken off.

    >>> chapter_name("Copy of worked_a_standard_mask (1).ipynb")
    'worked_a_standard_mask'
    """
    stem = Path(filename).stem.strip()
    stem = re.sub(r"^(Copy of )+", "", stem)  # Colab's "Save a copy in Drive"
    return re.sub(r"(\s*\(\d+\)|-\d+)$", "", stem).strip()  # a browser's repeat download


def _students(submissions: Path, book: Book, pages: dict[str, str]
              ) -> tuple[list[Row], dict[str, list[tuple[Submission, Path]]], list[str]]:
    """Each student's row, their chapters' notebooks, and warnings about the folder."""
    folders = sorted(p for p in submissions.iterdir() if p.is_dir() and not
                     p.name.startswith("."))
    warnings = [f"{p.name}: not a student's folder; not graded" for p in
                sorted(submissions.iterdir()) if not p.is_dir() and not p.name.startswith(".")]
    if not any(f.suffix == ".ipynb" for folder in folders for f in folder.iterdir()):
        raise ValueError(f"no notebook in {submissions} (expected SUBMISSIONS/<student>/"
                         "<chapter>.ipynb)")
    rows, mine = [], {}
    for folder in folders:
        files = sorted(f for f in folder.iterdir() if not f.name.startswith("."))
        row = Row(folder.name, {}, [] if any(f.suffix == ".ipynb" for f in files)
                  else ["no notebook (.ipynb) in the folder"])
        rows.append(row)
        mine[row.student] = []
        seen = {}
        for f in files:
            name = chapter_name(f.name)
            if f.suffix != ".ipynb" or not f.is_file():
                row.notes.append(f"{f.name}: not a notebook (.ipynb); not graded")
            elif name not in pages:
                row.notes.append(f"{f.name}: not a chapter of the course; not graded")
            elif not book.exercises(pages[name]):
                row.notes.append(f"{f.name}: a chapter without exercises; nothing to grade")
            elif name in seen:
                row.notes.append(f"{f.name}: a second file for {name} (after {seen[name]}); "
                                 "not graded: hand in one")
            else:
                seen[name] = f.name
                mine[row.student].append((Submission(row.student, f.name, name), f))
    return rows, mine, warnings


def grade(submissions: Path | str, *, root: Path | str | None = None, timeout: float = 120,
          jobs: int = 1) -> Gradebook:
    """Grade every ``submissions/<student>/<chapter>.ipynb``; the gradebook (see the module).

    ``root`` is the course's clone (by default the current folder if it holds ``_config.yml``,
    else the clone mlmlib was imported from); ``timeout`` the seconds each notebook may run;
    ``jobs`` how many notebooks run at once.
    """
    submissions, timeout, jobs = _settings(submissions, timeout, jobs)
    book = Book(_root(root))
    pages = {Path(p).name: p for p in book.pages if book.path(p).suffix == ".ipynb"}
    labels = {label: name for name, page in pages.items() for label in book.exercises(page)}
    rows, mine, warnings = _students(submissions, book, pages)
    present = [name for name in pages if any(s.chapter == name for found in mine.values()
                                             for s, _ in found)]
    chapter = {name: templates(book, pages[name]) for name in present}
    numbers = book.exercise_numbers()
    columns = [(t.label, numbers[t.label]) for name in present for t in chapter[name]]
    cwd = {name: book.path(pages[name]).parent.resolve() for name in present}
    with tempfile.TemporaryDirectory(prefix="mlmlib-grade-") as tmp, \
            contextlib.closing(_grading.Forker(Path(tmp))) as forker, \
            ThreadPoolExecutor(max_workers=jobs) as pool:
        tmp, runs, references = Path(tmp), {}, {}
        for name in present:  # the chapter's data, where a checker call reads some
            if any(t.context for t in chapter[name]):
                ref = references[name] = Submission("", f"editions/student/{name}.ipynb", name)
                path = book.root / ref.name
                nb = _grading.read(path)[0] if path.is_file() else None
                job = nb and _grading.plan(ref, nb, chapter[name], labels, tmp, reference=True)
                if job:
                    runs[ref] = pool.submit(_grading.execute, forker, ref, job, timeout, cwd[name])
                else:
                    ref.stopped = f"{ref.name} is missing or holds none of its exercises"
        for found in mine.values():
            for entry, path in found:
                nb, cell, note = _grading.read(path)
                if nb is None:
                    entry.fail([t.label for t in chapter[entry.chapter]], cell, note)
                    continue
                if not any(IMPORT.search(c["source"]) for c in nb["cells"]
                           if c["cell_type"] == "code"):
                    entry.notes.append(f"{entry.name}: no checker import (from mlmlib.exercises "
                                       "import ...); graded by the grader's checks all the same")
                job = _grading.plan(entry, nb, chapter[entry.chapter], labels, tmp)
                if job:
                    runs[entry] = pool.submit(_grading.execute, forker, entry, job, timeout,
                                              cwd[entry.chapter])

        def check(student: str) -> None:
            entries = [entry for entry, _ in mine[student]]
            todo = {i: found for i, e in enumerate(entries) if e in runs and (
                found := _grading.items(e, chapter[e.chapter], references.get(e.chapter)))}
            if todo:
                _grading.check(forker, entries, todo, Path(tempfile.mkdtemp(dir=tmp)), timeout,
                               book.root.resolve())

        # each student's check starts once their notebooks (and the references) have run
        needs = {student: {runs[s] for s, _ in found if s in runs} | {
            runs[references[s.chapter]] for s, _ in found
            if s.chapter in references and references[s.chapter] in runs}
            for student, found in mine.items()}
        checks, waiting = [], set(runs.values())
        try:
            while needs:
                for student in [s for s, need in needs.items() if all(f.done() for f in need)]:
                    del needs[student]
                    checks.append(pool.submit(check, student))
                if needs:
                    waiting = wait(waiting, return_when=FIRST_COMPLETED).not_done
            for future in [*runs.values(), *checks]:
                future.result()  # a bug of the grader's own surfaces here
        except BaseException:  # Ctrl-C: stop every child now, not after its time limit
            for future in [*runs.values(), *checks]:
                future.cancel()
            forker.stop()
            raise
    warnings += [f"the grader's own run of {ref.name} stopped: {ref.stopped}"
                 for ref in references.values() if ref.stopped]
    for row in rows:
        for entry, _ in mine[row.student]:
            row.cells.update(entry.cells)
        row.notes = [note for entry, _ in mine[row.student] for note in entry.notes] + row.notes
        row.cells = {label: row.cells.get(label, "not answered: no notebook for this chapter")
                     for label, _ in columns}
    return Gradebook(columns, rows, warnings)


def main(argv=None) -> int:
    """The command line; the exit status (0: graded, 1: refused)."""
    parser = argparse.ArgumentParser(
        prog="python -m mlmlib.course.grade",
        description="Grade SUBMISSIONS/<student>/<chapter>.ipynb with the course's own checks: "
                    "DIR/gradebook.csv and DIR/gradebook.html.")
    parser.add_argument("submissions", type=Path, help="a folder per student, holding chapters")
    parser.add_argument("--out", type=Path, default=Path("gradebook"), metavar="DIR",
                        help="where the gradebook goes (default: gradebook)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S",
                        help="seconds each notebook may run (default: 120)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="notebooks run at once (default: 1)")
    parser.add_argument("--root", type=Path, metavar="DIR",
                        help="the course's clone (default: here if it holds _config.yml, else "
                             "the clone mlmlib is imported from)")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    args = parser.parse_args(argv)
    try:
        if args.submissions.is_dir() and args.out.resolve().is_relative_to(
                args.submissions.resolve()):
            raise ValueError(f"--out {args.out} is inside {args.submissions}: it would be read "
                             "as a student's folder next time")
        gradebook = grade(args.submissions, root=args.root, timeout=args.timeout,
                          jobs=args.jobs)
        paths = write_gradebook(gradebook, args.out)
    except (ValueError, TypeError, OSError) as err:
        if args.debug:
            raise
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: no gradebook written", file=sys.stderr)
        return 130
    for warning in gradebook.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{gradebook.summary()}; the gradebook is in {paths[0]} and {paths[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
