"""The grader, ``python -m mlmlib.course.grade``, checked cell by cell on made-up submissions.

One grading run (module-scoped, ``--jobs 3``: the hanging notebook only sleeps) over a folder
holding every case, two short chapters (walkthrough step 1 and worked example A) and the
walkthrough's summary, whose checker call reads the chapter's data (``W``, ``h_new``, ``b``):

* ``a-key``: the answer key's solutions put into the stub cells: every cell right;
* ``b-untouched``: the student edition as it is: every cell not answered;
* ``c-mistake-N``: answers that make each checker's named mistakes: each cell names its own;
* ``d-...``: every bad submission (not JSON, not a notebook, another chapter's notebook, a cell
  that never ends, a kernel that exits, a huge output, no checker import, a folder with no
  notebook, a file that is not a chapter, a file over the size limit): a clear note, and the
  rest of the class still graded;
* ``e-patch``: a kernel that replaces the checkers (and prints "Correct") while answering
  wrongly; ``e-stale``: an exercise answered only by an earlier cell's ``my_answer``;
  ``e-tamper``: a function that replaces ``math.isclose`` when the checker calls it;
* ``f-cheat``: a student who changes the exercise's data (``h_new``) to fit a wrong answer.

The submissions are the student edition or, to keep the run short, notebooks cut down to the
exercises' headings and answer cells (the grader needs nothing else).
"""

import contextlib
import copy
import csv
import functools
import io
import json
import math
import re
from pathlib import Path

import pytest

from mlmlib.course import grade as grader
from mlmlib.course._run import prepared
from mlmlib.course._templates import answer_cells, stub_template, templates
from mlmlib.course.book import Book, cell_text
from mlmlib.course.myst import exercise_marker
from mlmlib.loss import log_softmax, slot_loss

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
WALK, WORKED, SUMMARY = "walkthrough_1_hide", "worked_a_standard_mask", "walkthrough_summary"
HIDE, SLOT, RAISE, SUM = "ex-walk-1-hide", "ex-a-slot-loss", "ex-a-raise-cat", "ex-walk-summary"
TIMEOUT = 20  # a graded notebook takes under 5 s here, 3 at once; the hanging one waits 20 s


# ----------------------------------------------------------------------------- notebooks
def _student(chapter: str) -> dict:
    return json.loads((ROOT / "editions" / "student" / f"{chapter}.ipynb").read_text())


def _stub_at(nb: dict, label: str) -> int:
    _, answers = answer_cells(nb["cells"], [label])[label]
    return answers[0]


def _solution(chapter: str, label: str) -> str:
    """The code of ``label``'s solution in the chapter (the answer key's)."""
    cells, code, inside = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())[
        "cells"], [], False
    for cell in cells:
        text = cell_text(cell)
        if cell["cell_type"] == "markdown":
            inside = f"{{solution-start}} {label}" in text or (inside and "solution-end" not in
                                                              text)
        elif inside:
            code.append(text)
    assert code, label
    return "\n\n".join(code)


def _answered(nb: dict, answers: dict[str, str]) -> dict:
    """``nb`` with each label's stub cell replaced by the code given."""
    nb = copy.deepcopy(nb)
    for label, code in answers.items():
        nb["cells"][_stub_at(nb, label)]["source"] = code
    return nb


def _key(chapter: str) -> dict:
    """The student edition with the answer key's solution after each stub, in its cell."""
    nb = _student(chapter)
    stubs = {label: cell_text(nb["cells"][_stub_at(nb, label)])
             for label in answer_cells(nb["cells"], Book(ROOT).exercises(f"notebooks/{chapter}"))}
    return _answered(nb, {label: f"{stub}\n\n{_solution(chapter, label)}"
                          for label, stub in stubs.items()})


def _code(source: str, outputs=()) -> dict:
    return {"cell_type": "code", "source": source, "metadata": {}, "outputs": list(outputs),
            "execution_count": None}


def _markdown(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def _short(chapter: str, answers: dict, before: dict | None = None) -> dict:
    """The chapter cut down to its exercises: each heading, then the code cells given."""
    nb = _student(chapter)
    cells = []
    for label in answer_cells(nb["cells"], Book(ROOT).exercises(f"notebooks/{chapter}")):
        if (before or {}).get(label):  # a Markdown cell first: not part of an answer
            cells.append(_markdown("Some work of my own:"))
            cells += [_code(c) for c in before[label]]
        cells.append(_markdown(f"{exercise_marker(label)}\n### Exercise"))
        stub = cell_text(nb["cells"][_stub_at(nb, label)])
        parts = answers.get(label)
        cells += [_code(stub) if c is None else _code(c) if isinstance(c, str) else c
                  for c in (parts if isinstance(parts, list) else [parts])]
    return {**nb, "cells": cells}


HIDE_IMPORT = "from mlmlib.exercises import check_hide\n\n"
HIDE_RIGHT = ("def my_hide(tokens, positions):\n"
              "    return ['[MASK]' if i in positions else t for i, t in enumerate(tokens)]\n")
HIDE_MISTAKES = [  # (its body, the words of the mistake's hint)
    ("    for p in positions:\n        tokens[p] = '[MASK]'\n    return tokens",
     "changed the caller's list"),
    ("    return ['[MASK]' if i - 1 in positions else t for i, t in enumerate(tokens)]",
     "hid the word one to the right"),
    ("    gone = {tokens[p] for p in positions}\n"
     "    return ['[MASK]' if t in gone else t for t in tokens]", "hid every copy of the word"),
    ("    return ' '.join(tokens)", "expected a list of tokens, got str"),
    ("    return 1 / 0", "raised ZeroDivisionError"),
]
SLOT_HEAD = ("import math\n\nimport numpy as np\n\n"
             "from mlmlib.exercises import check_loss_value, check_slot_loss\n\n\n"
             "def reference(scores, target):\n    z = np.asarray(scores, dtype=float)\n"
             "    z = z - z.max()\n    return np.log(np.exp(z).sum()) - z[target]\n\n\n")
SLOT_MISTAKES = [
    ("-reference(scores, target)", "the sign is flipped"),
    ("reference(scores, target) / math.log(10)", "log base 10"),
    ("reference(scores, target) / math.log(2)", "log base 2"),
    ("math.exp(-reference(scores, target))", "the probability P itself"),
    ("sum(reference(scores, v) for v in range(len(scores)))", "over every word"),
    ("reference(scores, int(np.argmax(scores)))", "the highest-scoring word"),
    ("-np.log(np.exp(scores)[target] / np.exp(scores).sum())", "exp(1000) overflows"),
]
CAT = [1.0, 3.0, 0.0, 1.0]
CAT_LOSS = slot_loss(CAT, 1)
RAISE_CALL = "check_loss_value(my_answer, scores=[1.0, 3.0, 0.0, 1.0], target=1)"
RAISE_MISTAKES = [
    (-CAT_LOSS, "the sign is flipped"),
    (CAT_LOSS / math.log(10), "log base 10"),
    (CAT_LOSS / math.log(2), "log base 2"),
    (math.exp(-CAT_LOSS), "the probability P itself"),
    (float(-log_softmax(CAT).sum()), "over every word"),
    (0.5, "is not"),
]


def _slot(body: str) -> str:
    return f"{SLOT_HEAD}def my_slot_loss(scores, target):\n    return {body}\n\n\n" \
           "check_slot_loss(my_slot_loss)\n"


def _raise(value) -> str:
    return f"my_answer = {value!r}\n{RAISE_CALL}\n"


PATCH = """\
import mlmlib.exercises
import mlmlib.exercises.functions
import mlmlib.exercises.walkthrough
import mlmlib.loss
from mlmlib.exercises import Verdict

always = lambda *args, **kwargs: Verdict(True, "Correct: patched")  # noqa: E731
for module in (mlmlib.exercises, mlmlib.exercises.functions, mlmlib.exercises.walkthrough):
    module.check_slot_loss = module.check_loss_value = always
mlmlib.loss.slot_loss = lambda scores, target: 0.0
Verdict.__bool__ = lambda self: True
print("Correct: every exercise of this chapter")
"""
FAKE = [{"output_type": "stream", "name": "stdout", "text": "Correct: all 5 cases.\n"}]


def _submissions(folder: Path) -> None:
    def put(student, chapter, nb, raw=None):
        (folder / student).mkdir(parents=True, exist_ok=True)
        path = folder / student / f"{chapter}.ipynb"
        path.write_text(raw if raw is not None else json.dumps(nb, indent=1))
        return path

    for chapter in (WALK, WORKED, SUMMARY):
        put("a-key", chapter, _key(chapter))
    for chapter in (WALK, WORKED):
        put("b-untouched", chapter, _student(chapter))
    for i, (body, _) in enumerate(HIDE_MISTAKES):
        put(f"c-mistake-{i}", WALK, _short(WALK, {HIDE: HIDE_IMPORT + "def my_hide(tokens, "
                                                   f"positions):\n{body}\n\n\ncheck_hide(my_hide)"}))
    for i, (body, _) in enumerate(SLOT_MISTAKES):
        raise_cat = _raise(RAISE_MISTAKES[i][0]) if i < len(RAISE_MISTAKES) else None
        put(f"c-mistake-{i}", WORKED, _short(WORKED, {SLOT: _slot(body), RAISE: raise_cat}))
    # bad submissions
    put("d-not-json", WALK, None, raw='{"cells": [ this is not JSON')
    put("d-not-notebook", WORKED, None, raw='{"hello": "world"}')
    put("d-other-chapter", WALK, _student(WORKED))
    hang = "import time\n\nwhile True:\n    time.sleep(1)\n"
    put("a-hang", WORKED, _short(WORKED, {SLOT: _slot("reference(scores, target)"),
                                          RAISE: _raise(CAT_LOSS)}, before={RAISE: [hang]}))
    put("d-dead-kernel", WORKED, _short(WORKED, {SLOT: _slot("reference(scores, target)"),
                                                 RAISE: _raise(CAT_LOSS)},
                                        before={RAISE: ["import os\n\nos._exit(3)\n"]}))
    put("d-huge-output", WALK, _short(WALK, {HIDE: HIDE_IMPORT + HIDE_RIGHT}, before={
        HIDE: ["for _ in range(60):\n    print('x' * 200_000)\n"]}))
    put("d-no-import", WALK, _short(WALK, {HIDE: HIDE_RIGHT + "\n\ncheck_hide(my_hide)\n"}))
    (folder / "d-no-notebook").mkdir()
    (folder / "d-no-notebook" / "README.txt").write_text("I forgot to attach my work.\n")
    put("d-not-a-chapter", "scratch", _student(WALK))
    with open(put("d-too-large", WALK, None, raw=""), "wb") as f:
        f.truncate(grader.MAX_BYTES + 1)  # a sparse file: big, but nothing written
    # a kernel that patches the checkers, fakes its outputs, and answers wrongly
    put("e-patch", WORKED, _short(WORKED, {
        SLOT: _code(_slot(SLOT_MISTAKES[0][0]), FAKE), RAISE: _code(_raise(CAT_LOSS / math.log(
            10)), FAKE)}, before={SLOT: [PATCH]}))
    # my_answer set before the exercise, the answer cell only calls the checker
    put("e-stale", WORKED, _short(WORKED, {SLOT: ["from mlmlib.exercises import check_loss_value"
                                                  "\n\nmy_slot_loss = 'minus log P'",
                                                  f"my_answer = {CAT_LOSS!r}"],
                                           RAISE: RAISE_CALL}))
    # a function that patches the checkers' code when the checker calls it
    put("e-tamper", WORKED, _short(WORKED, {SLOT: _slot("0.0").replace(
        "    return 0.0", "    import math\n\n    math.isclose = lambda *args, **kwargs: True\n"
        "    return 0.0"), RAISE: _raise(CAT_LOSS)}))
    # the summary's data changed to fit the answer: the grader uses its own h_new
    put("f-cheat", SUMMARY, _answered(_student(SUMMARY), {SUM: (
        "from mlmlib.exercises import check_loss_value\n\nh_new = np.array([0.0, 0.0, 0.0])\n"
        "my_answer = slot_loss(W @ h_new + b, vocab.index('mat'))\n"
        "check_loss_value(my_answer, scores=W @ h_new + b, target=vocab.index('mat'))\n")}))
    (folder / "stray.txt").write_text("not a student\n")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One grading run over every case: ``(exit status, stdout, stderr, rows, out folder)``."""
    root = tmp_path_factory.mktemp("grade")
    _submissions(root / "submissions")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = grader.main([str(root / "submissions"), "--out", str(root / "out"),
                              "--timeout", str(TIMEOUT), "--jobs", "3", "--root", str(ROOT)])
    rows = list(csv.DictReader((root / "out" / "gradebook.csv").open(encoding="utf-8")))
    return status, stdout.getvalue(), stderr.getvalue(), {r["student"]: r for r in rows}, \
        root / "out"


@functools.cache
def _numbers() -> dict[str, int]:
    return Book(ROOT).exercise_numbers()


def _col(label: str) -> str:
    return f"{label} (Exercise {_numbers()[label]})"


def _cells(graded, student: str) -> dict[str, str]:
    return {label: graded[3][student][_col(label)] for label in (HIDE, SLOT, RAISE, SUM)}


# ----------------------------------------------------------------------------- the run
@pytest.mark.slow
def test_the_run_grades_every_student_and_says_so(graded):
    status, stdout, stderr, rows, out = graded
    assert status == 0, stderr
    assert re.fullmatch(r"graded \d+ students on 4 exercises: \d+ right, \d+ wrong, \d+ not "
                        r"answered, \d+ errors?; the gradebook is in .+gradebook\.csv and "
                        r".+gradebook\.html\n", stdout), stdout
    assert "stray.txt: not a student's folder" in stderr
    header = next(csv.reader((out / "gradebook.csv").open(encoding="utf-8")))
    assert header == ["student", "ex-walk-1-hide (Exercise 1)", "ex-walk-summary (Exercise 8)",
                      "ex-a-slot-loss (Exercise 9)", "ex-a-raise-cat (Exercise 10)",
                      "right answers", "notes"]  # in book order, numbered as on the site
    assert list(rows) == sorted(rows)


@pytest.mark.slow
def test_the_answer_key_is_right_everywhere(graded):
    assert _cells(graded, "a-key") == dict.fromkeys((HIDE, SLOT, RAISE, SUM), "right")
    assert graded[3]["a-key"]["right answers"] == "4"
    assert graded[3]["a-key"]["notes"] == ""


@pytest.mark.slow
def test_the_untouched_student_edition_is_not_answered(graded):
    cells = _cells(graded, "b-untouched")
    assert [cells[label] for label in (HIDE, SLOT, RAISE)] == ["not answered"] * 3
    assert cells[SUM] == "not answered: no notebook for this chapter"
    assert graded[3]["b-untouched"]["right answers"] == "0"


MISTAKES = ([(f"c-mistake-{i}", HIDE, hint) for i, (_, hint) in enumerate(HIDE_MISTAKES)]
            + [(f"c-mistake-{i}", SLOT, hint) for i, (_, hint) in enumerate(SLOT_MISTAKES)]
            + [(f"c-mistake-{i}", RAISE, hint) for i, (_, hint) in enumerate(RAISE_MISTAKES)])


@pytest.mark.slow
@pytest.mark.parametrize(("student", "label", "hint"), MISTAKES,
                         ids=[f"{label}-{hint}" for _, label, hint in MISTAKES])
def test_each_named_mistake_shows_in_its_cell(graded, student, label, hint):
    cell = _cells(graded, student)[label]
    assert cell.startswith("wrong: ") and hint in cell, cell


@pytest.mark.slow
def test_a_mistake_student_without_that_chapter_or_answer(graded):
    assert _cells(graded, "c-mistake-6")[HIDE] == "not answered: no notebook for this chapter"
    assert _cells(graded, "c-mistake-6")[RAISE] == "not answered"


BAD = [  # (student, words of the note, {label: the cell})
    ("d-not-json", "walkthrough_1_hide.ipynb: not JSON", {HIDE: "error: the file is not JSON"}),
    ("d-not-notebook", "worked_a_standard_mask.ipynb: JSON, but not a notebook",
     {SLOT: "error: the file is not a notebook", RAISE: "error: the file is not a notebook"}),
    ("d-other-chapter", "walkthrough_1_hide.ipynb: holds the exercises of worked_a_standard_"
     "mask, not those of walkthrough_1_hide",
     {HIDE: "error: another chapter's notebook (worked_a_standard_mask)",
      SLOT: "not answered: no notebook for this chapter"}),
    ("a-hang", f"worked_a_standard_mask.ipynb: did not finish within {TIMEOUT} s",
     {SLOT: "right", RAISE: f"error: the notebook did not finish within {TIMEOUT} s"}),
    ("d-dead-kernel", "worked_a_standard_mask.ipynb: the kernel died",
     {SLOT: "right", RAISE: "error: the kernel died"}),
    ("d-huge-output", "walkthrough_1_hide.ipynb: printed more than 4 MB", {HIDE: "right"}),
    ("d-no-import", "walkthrough_1_hide.ipynb: no checker import", {HIDE: "right"}),
    ("d-no-notebook", "no notebook (.ipynb) in the folder",
     {HIDE: "not answered: no notebook for this chapter"}),
    ("d-not-a-chapter", "scratch.ipynb: not a chapter of the course",
     {HIDE: "not answered: no notebook for this chapter"}),
    ("d-too-large", "walkthrough_1_hide.ipynb: 20 MB, over the 20 MB",
     {HIDE: "error: the file is over 20 MB"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("student", "note", "cells"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_submission_gets_a_clear_note(graded, student, note, cells):
    row = graded[3][student]
    assert note in row["notes"], row["notes"]
    for label, cell in cells.items():
        assert _cells(graded, student)[label] == cell


@pytest.mark.slow
def test_the_folder_with_no_notebook_notes_the_other_file(graded):
    assert "README.txt: not a notebook (.ipynb); not graded" in graded[3]["d-no-notebook"][
        "notes"]


@pytest.mark.slow
def test_patched_checkers_and_printed_verdicts_earn_nothing(graded):
    cells = _cells(graded, "e-patch")
    assert cells[SLOT].startswith("wrong: ") and "the sign is flipped" in cells[SLOT]
    assert cells[RAISE].startswith("wrong: ") and "log base 10" in cells[RAISE]
    assert graded[3]["e-patch"]["right answers"] == "0"


@pytest.mark.slow
def test_an_earlier_cells_answer_is_forgotten(graded):
    cells = _cells(graded, "e-stale")
    assert cells[RAISE] == "error: NameError: name 'my_answer' is not defined"
    # an answer of the wrong kind is not answered, and says why
    assert cells[SLOT] == "not answered: Not answered yet: expected a function, got str."


@pytest.mark.slow
def test_an_answer_that_patches_the_checkers_when_called_is_not_graded(graded):
    cells = _cells(graded, "e-tamper")
    assert cells[SLOT].startswith("error: checking the answer replaced math.isclose"), cells
    assert cells[RAISE] == "right"  # checked afresh, in a new process


@pytest.mark.slow
def test_the_exercise_data_come_from_the_graders_own_run(graded):
    assert _cells(graded, "f-cheat")[SUM].startswith("wrong: Not yet: ")


@pytest.mark.slow
def test_the_html_table_is_plain_escaped_and_complete(graded):
    page = (graded[4] / "gradebook.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "http" not in page and "src=" not in page
    assert page.count("<tr>") == len(graded[3]) + 1
    assert "caller&#x27;s list" in page and "caller's list" not in page
    for student in graded[3]:
        assert f"<th>{student}</th>" in page


# ----------------------------------------------------------------------------- quick checks
def test_every_chapters_exercises_have_a_template():
    book = Book(ROOT)
    found = {t.label: t for page in book.pages if book.path(page).suffix == ".ipynb"
             for t in templates(book, page)}
    assert list(found) == list(book.exercise_numbers())
    assert found[SLOT].answers == ("my_slot_loss",) and not found[SLOT].context
    assert found[SUM].call == ("check_loss_value(my_answer, scores=W @ h_new + b, "
                               "target=vocab.index('mat'))")
    assert found[SUM].answers == ("my_answer",) and found[SUM].context == ("W", "h_new", "b",
                                                                          "vocab")
    assert found["ex-enc-positions"].call.startswith("check_seed_gap(my_gap, ")  # print(...)
    assert found["ex-train-params"].context == ("shape",)                         # **shape
    assert found[RAISE].number == 10 and found[RAISE].chapter == WORKED


def test_the_grader_finds_exercises_in_chapters_and_editions():
    source = json.loads((ROOT / "notebooks" / f"{WORKED}.ipynb").read_text())["cells"]
    edition = _student(WORKED)["cells"]
    for cells in (source, edition):
        found = answer_cells(cells, [SLOT, RAISE, HIDE])
        assert set(found) == {SLOT, RAISE}
        for _, answers in found.values():
            assert len(answers) == 1 and cells[answers[0]]["cell_type"] == "code"


def test_the_injected_cells_surround_each_answer():
    nb = {"cells": [{"cell_type": "markdown", "source": exercise_marker("x")},
                    _code("my_answer = 1"), _code("print(my_answer)"),
                    {"cell_type": "markdown", "source": "end"}]}
    new, answers_at, saves_at = prepared(nb, [("x", 0, [1, 2], ("my_answer",), ("my_answer",),
                                               "/tmp/x.pkl")])
    kinds = [c.get("metadata", {}).get("tags", [c["cell_type"]])[0] for c in new["cells"]]
    assert kinds == ["markdown", "grader-forget", "code", "code", "grader-save", "markdown"]
    assert answers_at == {2: "x", 3: "x"} and saves_at == {4: "x"}
    assert nb["cells"][1]["source"] == "my_answer = 1"  # the original is left alone


def test_a_stub_must_end_with_a_checker_call():
    with pytest.raises(ValueError, match="does not end with a call to a checker"):
        stub_template("ex-x", "my_answer = None\nprint(my_answer)")
    with pytest.raises(ValueError, match="grades no name"):
        stub_template("ex-x", "check_empty_loss(0.0)")


@pytest.mark.parametrize(("argv", "words"), [
    (["/no/such/folder"], "is not a folder"),
    (["{empty}"], "no notebook in"),
    (["{empty}", "--timeout", "0"], "timeout must be a positive"),
    (["{empty}", "--jobs", "0"], "jobs must be a positive whole number"),
    (["{empty}", "--out", "{empty}/gradebook"], "inside"),
])
def test_a_bad_command_line_is_refused_in_one_line(tmp_path, capsys, argv, words):
    (tmp_path / "ada").mkdir()
    argv = [a.replace("{empty}", str(tmp_path)) for a in argv]
    assert grader.main([*argv, "--root", str(ROOT)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and err.count("\n") == 1, err


def test_a_failed_reference_run_is_an_error_in_each_cell_that_needs_its_data(tmp_path):
    import pickle

    import mlmlib.exercises as exercises
    from mlmlib.course import _grading, _run

    saved = tmp_path / f"{SUM}.pkl"
    saved.write_bytes(pickle.dumps({"saved": {"my_answer": pickle.dumps(0.5)}, "failed": {}}))
    entry = _grading.Submission("ada", f"{SUMMARY}.ipynb", SUMMARY, spots={SUM: saved})
    reference = _grading.Submission("", f"editions/student/{SUMMARY}.ipynb", SUMMARY,
                                    stopped="the kernel died")
    template = next(t for t in templates(Book(ROOT), f"notebooks/{SUMMARY}") if t.label == SUM)
    [item] = _grading.items(entry, [template], reference)
    checkers = {name: getattr(exercises, name) for name in exercises.__all__}
    assert _run._check_one(item, checkers, exercises.Verdict) == (
        "error", "the grader's own run of the student edition stopped: the kernel died")
