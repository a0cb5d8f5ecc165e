"""mlmlib.course._templates - each exercise as the course writes it, and where a notebook has it.

Does: read an exercise's **template** from the course's own chapter, never from a submission:
its stub is the first code cell after its ``{exercise}``; its checker call is the stub's last
statement (a ``print(...)`` around it unwrapped), a call to a ``check_...`` function; its
*answers* are the names the stub binds (``def``, assignments) that the call's first argument
reads (``my_answer``, ``my_slot_loss``); its *context* is every other name the call reads, the
chapter's data (``W``, ``h_new``, ``scores``), which the grader takes from its own run of the
student edition. Then find an exercise in a notebook, any edition of it: a Markdown cell that
holds its ``:label:`` (a chapter's MyST) or its marker (the editions'); the code cells right
after it answer it.

Does not: run or check anything (:mod:`mlmlib.course._run` does); a stub's names bound inside
a comprehension or a lambda of the call are taken as free names, which no stub of the course
has.

>>> t = stub_template("ex-demo", "h_new = np.array([1.0, 0.0])\\nmy_answer = None\\n"
...                   "check_loss_value(my_answer, scores=W @ h_new + b, target=1)")
>>> t.checker, t.answers, t.context
('check_loss_value', ('my_answer',), ('W', 'h_new', 'b'))
>>> stub_template("ex-demo", "my_gap = None\\nprint(check_seed_gap(my_gap, with_pos, 2.0))").call
'check_seed_gap(my_gap, with_pos, 2.0)'
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from mlmlib._checks import kind
from mlmlib.course.book import Book, cell_text, directives

__all__ = ["MARKER", "Template", "answer_cells", "stub_template", "templates"]

#: An exercise's label in the editions (``<!-- exercise: LABEL -->``) or in a chapter's MyST.
MARKER = re.compile(r"<!--\s*exercise:\s*([\w.:-]+)\s*-->|^:label:[ \t]*([\w.:-]+)[ \t]*$", re.M)


@dataclass(frozen=True)
class Template:
    """One exercise as the course writes it: where, which checker call, which names."""

    label: str
    checker: str               # "check_slot_loss"
    call: str                  # "check_slot_loss(my_slot_loss)", as the stub writes it
    answers: tuple[str, ...]   # the names the grader takes from the student's notebook
    context: tuple[str, ...]   # the names it takes from its own run of the student edition
    chapter: str = ""          # "worked_a_standard_mask"
    number: int = 0            # the site's number: Exercise 9


def _free_names(node: ast.AST) -> list[str]:
    """The names ``node`` reads, in order, each once."""
    names = sorted((n.lineno, n.col_offset, n.id) for n in ast.walk(node)
                   if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    return list(dict.fromkeys(name for *_, name in names))


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """The names a cell binds at top level by ``def``, ``class`` or an assignment."""
    bound = set()
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bound


def stub_template(label: str, source: str) -> Template:
    """The template of the exercise ``label`` whose stub cell is ``source``."""
    kind(label, "label", str)
    kind(source, "source", str)
    try:
        body = ast.parse(source).body
    except SyntaxError as err:
        raise ValueError(f"{label}: its stub cell is not Python ({err.msg}, line {err.lineno})"
                         ) from None
    call = body[-1].value if body and isinstance(body[-1], ast.Expr) else None
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "print" and len(call.args) == 1):
        call = call.args[0]
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id.startswith("check_")):
        raise ValueError(f"{label}: its stub cell does not end with a call to a checker "
                         "(check_...(...)) of mlmlib.exercises")
    first = call.args[0] if call.args else call.keywords[0].value if call.keywords else None
    bound = _bound_names(body)
    answers = tuple(n for n in (_free_names(first) if first is not None else []) if n in bound)
    if not answers:
        raise ValueError(f"{label}: the checker call {ast.unparse(call)} grades no name that "
                         "its stub cell defines")
    context = tuple(n for n in _free_names(call) if n not in answers and n != call.func.id)
    return Template(label, call.func.id, ast.unparse(call), answers, context)


def templates(book: Book, page: str) -> list[Template]:
    """The templates of ``page``'s exercises, in order, from the course's own chapter."""
    kind(book, "book", Book, "a mlmlib.course.book.Book")
    if page not in book.pages:
        raise ValueError(f"{page!r} is not a page of the book's _toc.yml")
    cells, numbers, found = book.cells(page), book.exercise_numbers(), []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        for *_, name, _, options, _ in directives(cell_text(cell)):
            if name != "exercise" or "label" not in options:
                continue
            label = options["label"]
            stub = next((c for c in cells[i + 1:] if c["cell_type"] == "code"), None)
            if stub is None:
                raise ValueError(f"{page}: the exercise {label} has no code cell after it")
            t = stub_template(label, cell_text(stub))
            found.append(Template(label, t.checker, t.call, t.answers, t.context,
                                  Path(page).name, numbers[label]))
    return found


def answer_cells(cells: list[dict], labels) -> dict[str, tuple[int, list[int]]]:
    """``{label: (index of the Markdown cell holding it, indices of the code cells right
    after)}`` for each of ``labels`` that ``cells`` hold (the first place each appears)."""
    labels, found = set(labels), {}
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "markdown":
            continue
        text = cell.get("source", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        for match in MARKER.finditer(text):
            label = match[1] or match[2]
            if label in labels and label not in found:
                after = []
                while (i + 1 + len(after) < len(cells)
                       and cells[i + 1 + len(after)].get("cell_type") == "code"):
                    after.append(i + 1 + len(after))
                found[label] = (i, after)
    return found
