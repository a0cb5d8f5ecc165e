"""mlmlib.course._grading - one notebook's way through the grader: read, prepare, run, check.

Does: for :func:`mlmlib.course.grade.grade`, each step a notebook takes and what each step
writes into its gradebook cells and notes:

* :func:`read` - the file as a notebook, or the reason it is not one (over
  :data:`MAX_BYTES`, not JSON, JSON that is not a notebook); the outputs it stored are dropped
  unread;
* :func:`plan` - where its exercises are (another chapter's notebook is told by the labels it
  holds) and the prepared copy with the grader's cells (:func:`mlmlib.course._run.prepared`);
* :func:`execute` - the run, in a child process with a time limit: when time is up, the
  child's process group and its kernel's are killed; how the run ended becomes a note;
* :func:`items` and :func:`check` - what the checking process needs for each saved answer,
  then that process (fresh, one per student), restarted past an answer it hangs on.

Each child is forked from the grader's fork server (:class:`Forker`), a process that imported
nbclient and :mod:`mlmlib.exercises` and ran nothing else: as fresh as a new interpreter,
without paying for those imports each time. POSIX only (Linux, macOS).

Does not: write the gradebook, or choose what to grade (:mod:`mlmlib.course.grade` does).

>>> bool(IMPORT.search("import numpy as np\\nfrom mlmlib.exercises import check_hide"))
True
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from mlmlib.course._run import OUTPUT_CAP, prepared
from mlmlib.course._templates import answer_cells

__all__ = ["IMPORT", "MAX_BYTES", "Forker", "Submission", "check", "execute", "items", "plan",
           "read"]

#: The largest notebook file the grader reads (bytes).
MAX_BYTES = 20_000_000
#: A checker import in a notebook's code.
IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+mlmlib\.exercises\b|import[ \t]+mlmlib\.exercises\b"
                    r"|from[ \t]+mlmlib[ \t]+import[^\n]*\bexercises\b)", re.M)


@dataclass(eq=False)  # each one is itself: a key of the runs
class Submission:
    """One notebook to grade: a student's, or the grader's own run of a student edition."""

    student: str
    name: str                   # the file's name, as the notes show it
    chapter: str                # its chapter's name (its page's stem)
    cells: dict[str, str] = field(default_factory=dict)     # label -> gradebook cell
    notes: list[str] = field(default_factory=list)
    where: Path | None = None   # its folder in the grader's temporary folder
    spots: dict[str, Path] = field(default_factory=dict)    # label -> the file it saves
    answers_at: dict[int, str] = field(default_factory=dict)
    saves_at: dict[int, str] = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)
    stopped: str = ""           # why its run stopped early ("" when it finished)

    def fail(self, labels, cell: str, note: str) -> None:
        self.cells.update({label: f"error: {cell}" for label in labels
                           if label not in self.cells})
        self.notes.append(f"{self.name}: {note}")


# ---------------------------------------------------------------------- child processes
def _env() -> dict[str, str]:
    """The children's environment: they (and kernels) import the mlmlib this one imported."""
    import mlmlib

    env, clone = dict(os.environ), Path(mlmlib.__file__).resolve().parents[1]
    if (clone / "_config.yml").is_file():
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(clone), env.get("PYTHONPATH")) if p)
    return env


def _kill_group(pid) -> None:
    try:
        os.killpg(int(pid), signal.SIGKILL)
    except (ProcessLookupError, PermissionError, TypeError, ValueError):
        pass


def _lines(path: Path) -> list[dict]:
    """The JSON lines a child wrote (a last line cut short by a kill is dropped)."""
    found = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return found


class Forker:
    """The grader's fork server (:func:`mlmlib.course._run.serve`), from the grader's side:
    start a child, wait for it with a time limit, kill its process group when time is up."""

    def __init__(self, where: Path):
        self._stderr = where / "server-stderr.txt"
        with open(self._stderr, "wb") as err:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "mlmlib.course._run", "serve"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, env=_env(), start_new_session=True)
        self._changed = threading.Condition()
        self._pids, self._exits, self._closed, self._ids = {}, {}, False, itertools.count()
        self._events = {}  # pid -> the events file of a run (its kernel's id is there)
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self) -> None:
        for line in self._proc.stdout:
            message = json.loads(line)
            with self._changed:
                if "pid" in message:
                    self._pids[message["id"]] = message["pid"]
                else:
                    self._exits[message["exit"]] = message["status"]
                self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _until(self, ready, timeout=None) -> bool:
        with self._changed:
            if not self._changed.wait_for(lambda: ready() or self._closed, timeout):
                return False
            if not ready():
                raise OSError("the grader's fork server stopped: " + (_last_line(
                    self._stderr) or f"exit status {self._proc.poll()}"))
            return True

    def run(self, kind: str, job: dict, where: Path, limit: float, cwd: Path
            ) -> tuple[bool, int | None]:
        """Run ``kind`` on ``job`` in a child: (finished in time, exit status). When time is
        up, its process group and the group of a kernel it started are killed."""
        path = where / f"{kind}-job.json"
        path.write_text(json.dumps(job), encoding="utf-8")
        with self._changed:
            number = next(self._ids)
            self._proc.stdin.write(json.dumps({"id": number, "kind": kind, "job": str(path),
                                               "cwd": str(cwd), "stderr": str(
                                                   where / f"{kind}-stderr.txt")}).encode()
                                   + b"\n")
            self._proc.stdin.flush()
        self._until(lambda: number in self._pids)
        pid = self._pids[number]
        self._events[pid] = Path(job["events"]) if "events" in job else None
        try:
            if self._until(lambda: pid in self._exits, limit):
                return True, self._exits[pid]
            self._kill(pid)
            self._until(lambda: pid in self._exits)
            return False, self._exits[pid]
        finally:
            self._events.pop(pid, None)

    def _kill(self, pid: int) -> None:
        """Kill a child's process group, and its kernel's."""
        _kill_group(pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # killed before it had its own group
        events = self._events.get(pid)
        for line in _lines(events) if events else []:
            if "kernel" in line:
                _kill_group(line["kernel"])

    def stop(self) -> None:
        """Kill every child still running (the grader was interrupted)."""
        for pid in list(self._events):
            self._kill(pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def _last_line(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines() if path.is_file() else []
    return lines[-1][:200] if lines else ""


# ---------------------------------------------------------------------- the steps
def read(path: Path) -> tuple[dict | None, str, str]:
    """The notebook at ``path``, or None with the reason for its cells and for its note."""
    size = path.stat().st_size
    if size > MAX_BYTES:
        return None, f"the file is over {MAX_BYTES // 10**6} MB", (
            f"{size / 10**6:.0f} MB, over the {MAX_BYTES // 10**6} MB a notebook may take; "
            "not read")
    try:
        nb = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        return None, "the file is not JSON", f"not JSON ({str(err).splitlines()[0][:100]})"
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if (not isinstance(cells, list) or not isinstance(nb.get("nbformat"), int) or not all(
            isinstance(c, dict) and c.get("cell_type") in ("code", "markdown", "raw")
            and isinstance(c.get("source", ""), str | list) for c in cells)):
        return None, "the file is not a notebook", ("JSON, but not a notebook (no nbformat, "
                                                     "or cells without a cell_type)")
    for cell in cells:
        source = cell.get("source", "")
        cell["source"] = "".join(map(str, source)) if isinstance(source, list) else source
        cell.setdefault("metadata", {})
        if cell["cell_type"] == "code":
            cell.update(outputs=[], execution_count=None)  # what it printed before is not read
    return nb, "", ""


def plan(entry: Submission, nb: dict, templates: list, labels: dict[str, str], tmp: Path,
         reference: bool = False) -> dict | None:
    """Prepare ``nb``'s run (the grader's cells in, the copy written); its job, or None when
    there is nothing to run. A reference run saves each exercise's context, not its answer."""
    mine = [t.label for t in templates]
    found = answer_cells(nb["cells"], labels)
    if not any(label in found for label in mine):
        others = sorted({labels[label] for label in found})
        if others:
            entry.fail(mine, f"another chapter's notebook ({', '.join(others)})",
                       f"holds the exercises of {', '.join(others)}, not those of "
                       f"{entry.chapter}; not graded")
        else:
            entry.fail(mine, "the exercise is not in the notebook",
                       "holds none of this chapter's exercises (their headings were removed?); "
                       "not graded")
        return None
    for label in mine:
        if label not in found:
            entry.fail([label], "the exercise is not in the notebook",
                       f"the heading of {label} is not in the notebook")
    entry.where = Path(tempfile.mkdtemp(dir=tmp))
    spots = []
    for t in templates:
        names = t.context if reference else t.answers
        if t.label in found and t.label not in entry.cells and names:
            heading, answers = found[t.label]
            entry.spots[t.label] = entry.where / f"{t.label}.pkl"
            spots.append((t.label, heading, answers, () if reference else names, names,
                          entry.spots[t.label]))
    new, entry.answers_at, entry.saves_at = prepared(nb, spots)
    (entry.where / "notebook.ipynb").write_text(json.dumps(new), encoding="utf-8")
    return {"notebook": str(entry.where / "notebook.ipynb"),
            "events": str(entry.where / "events.jsonl"), "cap": OUTPUT_CAP}


def execute(forker: Forker, entry: Submission, job: dict, limit: float, cwd: Path) -> None:
    """Run ``entry``'s prepared notebook: its events, why it stopped, its notes."""
    job.update(limit=limit, cwd=str(cwd))
    in_time, status = forker.run("run", job, entry.where, limit, cwd)
    entry.events = _lines(Path(job["events"]))
    ends = [e["end"] for e in entry.events if "end" in e]
    if not in_time:
        entry.stopped = f"the notebook did not finish within {limit:g} s"
        entry.notes.append(f"{entry.name}: did not finish within {limit:g} s; its kernel was "
                           "stopped (what it saved before was graded)")
    elif ends and ends[-1] == "died":
        entry.stopped = "the kernel died"
        entry.notes.append(f"{entry.name}: the kernel died while it ran (what it saved before "
                           "was graded)")
    elif not ends or ends[-1] != "finished":
        why = next((e["why"] for e in entry.events if "why" in e), "") or _last_line(
            entry.where / "run-stderr.txt") or f"exit status {status}"
        entry.stopped = f"the notebook could not be run: {why}"
        entry.notes.append(f"{entry.name}: {entry.stopped}")
    if any("capped" in e for e in entry.events):
        entry.notes.append(f"{entry.name}: printed more than {OUTPUT_CAP // 10**6} MB; the "
                           "grader kept none of the rest")


def items(entry: Submission, templates: list, reference: Submission | None) -> list[dict]:
    """What the checking process needs for each of ``entry``'s saved answers; the cells of
    answers that were not saved are filled in here."""
    errors = {}
    for e in entry.events:
        if "error" in e:
            errors.setdefault(e["error"][0], e["error"][1])

    def first_error(where: dict[int, str], label: str) -> str:
        return next((errors[i] for i, at in sorted(where.items()) if at == label
                     and i in errors), "")

    found = []
    for t in templates:
        if t.label in entry.cells or t.label not in entry.spots:
            continue
        if not entry.spots[t.label].is_file():
            save_error = first_error(entry.saves_at, t.label)
            entry.cells[t.label] = "error: " + (
                entry.stopped or (f"the grader's save cell failed: {save_error}" if save_error
                                  else "the grader could not save the answer"))
            continue
        context_file, context_error = "", ""
        if t.context:
            saved = reference.spots.get(t.label) if reference else None
            if saved is not None and saved.is_file():
                context_file = str(saved)
            else:
                context_error = ("the grader's own run of the student edition stopped: "
                                 + (reference.stopped if reference and reference.stopped
                                    else "it saved no data for this exercise"))
        found.append({"key": t.label, "call": t.call, "checker": t.checker,
                      "answers": list(t.answers), "context": list(t.context),
                      "values": str(entry.spots[t.label]),
                      "cell_error": first_error(entry.answers_at, t.label),
                      "context_file": context_file, "context_error": context_error})
    return found


def check(forker: Forker, entries: list[Submission], todo: dict[int, list[dict]], where: Path,
          limit: float, cwd: Path) -> None:
    """Check one student's answers (``todo``: index in ``entries`` -> items) in a fresh
    process; one that stops or hangs costs only the answer it stopped on, and goes on."""
    pending = [(i, item) for i, found in todo.items() for item in found]
    while pending:
        results = where / "results.jsonl"
        results.unlink(missing_ok=True)
        job = {"items": [dict(item, key=[i, item["key"]]) for i, item in pending],
               "results": str(results)}
        in_time, status = forker.run("check", job, where, limit, cwd)
        done = {}
        for line in _lines(results):
            if "fatal" in line:
                done = {(i, item["key"]): ("error", f"the checking process failed: "
                                                    f"{line['fatal']}") for i, item in pending}
                break
            done[tuple(line["key"])] = (line["state"], line["message"])
        for (i, label), (state, message) in done.items():
            entries[i].cells[label] = state if state == "right" or not message else \
                f"{state}: {message}"
        pending = [(i, item) for i, item in pending if (i, item["key"]) not in done]
        if pending and in_time and status == 0 and done:
            continue  # it stopped on purpose (an answer replaced the checkers): start afresh
        if pending:  # the first one left is the answer the process stopped on
            i, item = pending.pop(0)
            entries[i].cells[item["key"]] = "error: " + (
                f"checking the answer did not finish within {limit:g} s" if not in_time
                else f"the checking process stopped (exit status {status})")
