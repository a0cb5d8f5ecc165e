"""mlmlib.course._run - the grader's processes: the run of a notebook, the check of its answers.

Does: the work of the grader's child processes, and the fork server they come from:

* :func:`prepared` - a copy of a notebook with the grader's own cells around each answer: one
  that forgets the answer's names before it (a previous exercise's ``my_answer`` is never
  graded again) and one that saves their values after it (cloudpickle, by value: a student's
  function travels);
* ``run`` - execute a prepared notebook with nbclient (kernel ``python3``, errors allowed),
  keep at most :data:`OUTPUT_CAP` bytes of what it prints, and write, a line at a time, the
  kernel's process id, each cell's exception and how the run ended;
* ``check`` - with the checkers of :mod:`mlmlib.exercises` as this process imported them,
  load the saved answers and the chapter's data saved by the grader's own run, evaluate each
  template's checker call and write each verdict as soon as it has it;
* :func:`serve` - the fork server: a process that imports nbclient and the checkers once, runs
  nothing else, and forks a :func:`child` per request, each as fresh as a new interpreter.

Does not: time or kill anything, or decide what a stopped run means for the gradebook
(:mod:`mlmlib.course._grading` does), or read what a notebook printed: credit comes only from
the ``check`` process's own calls.

>>> nb = {"cells": [{"cell_type": "markdown", "source": "<!-- exercise: ex-x -->"},
...                 {"cell_type": "code", "source": "my_answer = 2"}]}
>>> new, answers_at, saves_at = prepared(nb, [("ex-x", 0, [1], ("my_answer",),
...                                            ("my_answer",), "/tmp/ex-x.pkl")])
>>> [c["metadata"]["tags"][0] if "metadata" in c else c["source"] for c in new["cells"]]
['<!-- exercise: ex-x -->', 'grader-forget', 'my_answer = 2', 'grader-save']
>>> answers_at, saves_at
({2: 'ex-x'}, {3: 'ex-x'})
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import pickle
import sys
from pathlib import Path

__all__ = ["OUTPUT_CAP", "SAVE_CAP", "child", "prepared", "serve"]

#: The most a notebook's outputs may take (bytes) before the runner keeps no more of them.
OUTPUT_CAP = 4_000_000
#: The most one saved answer may take (bytes, pickled).
SAVE_CAP = 20_000_000


# ---------------------------------------------------------------------- the copy
# The grader's cells in a student's kernel; builtins by their module, in case the student
# gave one of their names to something else (max = ..., len = ...).
_FORGET = """\
for _mlmlib_grade_name in {names!r}:  # the grader: start this exercise without old answers
    __import__("builtins").globals().pop(_mlmlib_grade_name, None)
del _mlmlib_grade_name
"""

_SAVE = """\
def _mlmlib_grade_save(path, names, space):  # the grader: keep these names' values
    import builtins
    import pickle

    import cloudpickle

    saved, failed = {{}}, {{}}
    for name in names:
        if name in space:
            try:
                data = cloudpickle.dumps(space[name])
            except builtins.Exception as err:
                failed[name] = f"{{builtins.type(err).__name__}}: {{err}}"[:200]
            else:
                size = builtins.len(data)
                if size > {cap}:
                    failed[name] = f"its value takes {{size:,}} bytes, more than {cap:,}"
                else:
                    saved[name] = data
    with builtins.open(path, "wb") as file:
        pickle.dump({{"saved": saved, "failed": failed}}, file)


_mlmlib_grade_save({path!r}, {names!r}, __import__("builtins").globals())
del _mlmlib_grade_save
"""


def _code(source: str, tag: str) -> dict:
    return {"cell_type": "code", "source": source, "metadata": {"tags": [tag]},
            "outputs": [], "execution_count": None}


def prepared(nb: dict, spots: list[tuple[str, int, list[int], tuple, tuple, str]]
             ) -> tuple[dict, dict[int, str], dict[int, str]]:
    """A copy of ``nb`` with the grader's cells injected, and where its cells came from.

    Each spot is ``(label, markdown index, answer cell indices, names to forget before the
    answer, names to save after it, the file to save them to)``. Returns the new notebook,
    ``{new index: label}`` of each answer cell and ``{new index: label}`` of each save cell.
    """
    forget, save = {}, {}   # original index -> cells to insert before it
    answer_of = {}
    for label, heading, answers, names, keep, path in spots:
        start, stop = (answers[0], answers[-1] + 1) if answers else (heading + 1, heading + 1)
        if names:
            forget.setdefault(start, []).append((label, _code(_FORGET.format(
                names=tuple(names)), "grader-forget")))
        save.setdefault(stop, []).append((label, _code(_SAVE.format(
            cap=SAVE_CAP, path=str(path), names=tuple(keep)), "grader-save")))
        answer_of.update({i: label for i in answers})
    cells, answers_at, saves_at = [], {}, {}
    for i in range(len(nb["cells"]) + 1):
        for label, cell in save.get(i, []):
            saves_at[len(cells)] = label
            cells.append(cell)
        for _, cell in forget.get(i, []):
            cells.append(cell)
        if i < len(nb["cells"]):
            if i in answer_of:
                answers_at[len(cells)] = answer_of[i]
            cells.append(nb["cells"][i])
    return {**nb, "cells": cells}, answers_at, saves_at


# ---------------------------------------------------------------------- child: run
def _size(content: dict) -> int:
    """About how many bytes an output message carries."""
    if "text" in content:
        return len(content["text"])
    if "data" in content:
        return sum(len(str(v)) for v in content["data"].values())
    return sum(len(str(v)) for v in content.get("traceback", [])) + 200


def _run(job: dict) -> None:
    """Execute the prepared notebook ``job["notebook"]``; events go to ``job["events"]``."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    with open(job["events"], "a", encoding="utf-8") as events:
        def event(**fields):
            events.write(json.dumps(fields) + "\n")
            events.flush()

        class Client(NotebookClient):
            printed = 0

            async def async_start_new_kernel(self, **kwargs):
                await super().async_start_new_kernel(**kwargs)
                pid = getattr(getattr(self.km, "provisioner", None), "pid", None)
                event(kernel=pid)

            def output(self, outs, msg, display_id, cell_index):
                before, self.printed = self.printed, self.printed + _size(msg["content"])
                if self.printed > job["cap"]:
                    if before <= job["cap"]:
                        event(capped=job["cap"])
                    return None
                return super().output(outs, msg, display_id, cell_index)

        def on_error(cell, cell_index, execute_reply):
            content = execute_reply["content"]
            event(error=[cell_index, f"{content.get('ename')}: {content.get('evalue')}"[:300]])

        nb = nbformat.from_dict(json.loads(Path(job["notebook"]).read_text(encoding="utf-8")))
        client = Client(nb, kernel_name="python3", allow_errors=True, timeout=None,
                        startup_timeout=max(10, int(job["limit"])), on_cell_error=on_error,
                        record_timing=False, shutdown_kernel="immediate",
                        resources={"metadata": {"path": job["cwd"]}})
        try:
            client.execute()
            event(end="finished")
        except DeadKernelError:
            event(end="died")
        except Exception as err:  # the kernel would not start, a message it could not read
            event(end="failed", why=f"{type(err).__name__}: {err}".splitlines()[0][:200])


# ---------------------------------------------------------------------- child: check
#: The modules the checkers lean on, besides mlmlib's own: a name of theirs that an answer
#: replaces (by unpickling, or when the checker calls it) voids that answer's check.
GUARDED = ("builtins", "functools", "math", "numbers", "numpy", "torch", "torch.nn.functional")


def _names(verdict_class) -> dict[tuple[str, str], object]:
    """Every name of mlmlib's modules, of :data:`GUARDED` and of ``Verdict``, with its object."""
    spaces = {name: vars(module) for name, module in list(sys.modules.items())
              if module is not None and (name in GUARDED or name.split(".")[0] == "mlmlib")}
    spaces["Verdict"] = vars(verdict_class)
    return {(where, key): value for where, space in spaces.items()
            for key, value in list(space.items())}


def _changed(before: dict, verdict_class) -> list[str]:
    """The names of ``before`` that now hold another object (new names are fine: a lazy
    import adds some)."""
    now = _names(verdict_class)
    return [f"{where}.{key}" for (where, key), value in before.items()
            if now.get((where, key), before) is not value]


def _load(path: str) -> dict:
    with open(path, "rb") as file:
        return pickle.load(file)


def _check_one(item: dict, checkers: dict, verdict_class) -> tuple[str, str]:
    """One exercise's cell: ``(state, message)``, state right / wrong / not answered / error."""
    try:
        saved = _load(item["values"])
    except Exception as err:
        return "error", f"the grader could not read the saved answer ({type(err).__name__})"
    values = {}
    for name in item["answers"]:
        if name in saved["failed"]:
            return "error", f"{name} could not be saved for grading: {saved['failed'][name]}"
        if name not in saved["saved"]:
            if item.get("cell_error"):
                return "error", item["cell_error"]
            return "not answered", f"no {name} after the exercise's cells"
        try:
            values[name] = pickle.loads(saved["saved"][name])
        except Exception as err:
            return "error", f"{name} could not be loaded: {type(err).__name__}: {err}"[:200]
    context = {}
    if item["context"]:
        if not item.get("context_file"):
            return "error", item.get("context_error") or "the grader's reference run failed"
        reference = _load(item["context_file"])
        for name in item["context"]:
            if name in reference["saved"]:
                context[name] = pickle.loads(reference["saved"][name])
            elif not hasattr(builtins, name):
                return "error", f"the grader's run of the student edition did not define {name}"
    if item["checker"] not in checkers:
        return "error", f"{item['checker']} is not a checker of mlmlib.exercises"
    space = {"__builtins__": builtins, **context, **values, item["checker"]: checkers[
        item["checker"]]}
    try:
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), \
                contextlib.redirect_stderr(null):
            verdict = eval(compile(item["call"], "<checker call>", "eval"), space)
    except BaseException as err:  # a student's function may even call exit()
        if isinstance(err, KeyboardInterrupt):
            raise
        return "error", f"the check raised {type(err).__name__}: {err}"[:200]
    if not isinstance(verdict, verdict_class):
        return "error", f"the check gave {type(verdict).__name__}, not a Verdict"
    message = " ".join(str(verdict.message).split())
    if verdict.passed:
        return "right", message
    if message.startswith("Not answered yet"):  # plain when the template is untouched
        untouched = all(v is None for v in values.values()) or "returns None" in message
        return "not answered", "" if untouched else message
    return "wrong", message


def _check(job: dict) -> None:
    """Check each item of ``job``; one JSON line per verdict goes to ``job["results"]``."""
    with open(job["results"], "a", encoding="utf-8") as out:
        try:  # the checkers as mlmlib.exercises defines them, before any answer is loaded
            import mlmlib.exercises as exercises

            checkers = {name: getattr(exercises, name) for name in exercises.__all__}
            verdict_class = exercises.Verdict
        except Exception as err:
            out.write(json.dumps({"fatal": f"{type(err).__name__}: {err}"[:200]}) + "\n")
            return
        before = _names(verdict_class)
        for item in job["items"]:
            state, message = _check_one(item, checkers, verdict_class)
            changed = _changed(before, verdict_class)
            if changed:  # this process is no longer the grader's: the next one starts afresh
                state, message = "error", (f"checking the answer replaced {', '.join(changed[:3])}"
                                           " of the checkers' code; not graded")
            out.write(json.dumps({"key": item["key"], "state": state, "message": message}) + "\n")
            out.flush()
            if changed:
                return


def child(kind: str, job_path: str, cwd: str, stderr: str) -> None:
    """A grader's child process: its own session and process group, nothing on the terminal
    (its errors go to ``stderr``, a file), the course's folder; then ``run`` or ``check``."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    err = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for fd, to in ((0, null), (1, null), (2, err)):
        os.dup2(to, fd)
    os.chdir(cwd)
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    (_run if kind == "run" else _check)(job)


def serve() -> None:
    """The grader's fork server: import nbclient and the checkers once, run nothing else, and
    fork a :func:`child` for each request read on standard input (a JSON line: ``id``,
    ``kind``, ``job``, ``cwd``, ``stderr``); each child starts as fresh as a new process, without
    paying for those imports again. Standard output answers ``{"id", "pid"}`` for each child,
    then ``{"exit": pid, "status": code}`` when it ends. Stops when standard input closes."""
    import select
    import traceback

    for name in ("cloudpickle", "nbformat", "nbclient", "mlmlib.exercises"):
        with contextlib.suppress(ImportError):
            __import__(name)
    fd, pending, children = sys.stdin.fileno(), b"", set()

    def say(**fields) -> None:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()

    while True:
        if select.select([fd], [], [], 0.05)[0]:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:  # the child
                    code = 1
                    try:
                        child(request["kind"], request["job"], request["cwd"], request["stderr"])
                        code = 0
                    except BaseException:
                        traceback.print_exc()
                    finally:
                        os._exit(code)
                children.add(pid)
                say(id=request["id"], pid=pid)
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                children.discard(pid)
                say(exit=pid, status=os.waitstatus_to_exitcode(status))


def main(argv=None) -> int:
    """``serve`` (the grader starts it), or ``run JOB.json`` / ``check JOB.json`` by hand."""
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["serve"]:
        serve()
        return 0
    if len(argv) != 2 or argv[0] not in ("run", "check"):
        print("usage: python -m mlmlib.course._run serve | run JOB.json | check JOB.json",
              file=sys.stderr)
        return 2
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    (_run if argv[0] == "run" else _check)(job)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
