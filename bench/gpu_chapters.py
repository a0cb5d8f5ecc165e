"""The training chapters executed on a GPU, and the numbers a reader relies on checked there.

nbval compares a chapter's outputs with its committed ones, to the digit (once sanitised): the
right test on the CPU that made them, the wrong one on a GPU, where the chapters take another
path (device "auto" picks CUDA, the training chapters take more steps, the Trainer computes in
bf16 autocast) and print other numbers. This script executes the four training chapters and
checks, by thresholds, the few numbers that must hold on any device (:data:`CHAPTERS`): a final
loss near the exact floor, a perplexity well below the unigram's, an accuracy far above chance,
and values that do not depend on the device at all.

Does:

* execute ``notebooks/training_{1,2,3,4}_*.ipynb`` top to bottom with nbclient (kernel
  ``python3``, defined here, in a temporary folder on ``JUPYTER_PATH``, as this very
  interpreter; working directory ``notebooks/``; errors allowed, so that one run shows every
  failing cell), each in a process of its own under its own time limit (:data:`CHAPTERS`, or
  ``--timeout``), up to ``--jobs`` at once, into copies in ``--out`` (a new temporary folder
  unless given; each copy is written after every cell, and starts with every output cleared, so
  a chapter stopped half-way never shows the committed outputs of the cells it did not reach);
  the committed chapters are never written;
* read each check's numbers from a copy's printed lines (stdout, and the ``text/plain`` of
  results; not stderr) with regular expressions, compute the checked value and compare it with
  its threshold; with ``--expect-device cuda``, also require that the chapters that train said
  they trained there (their ``device: ...`` line);
* print a table (each chapter: ran without an error, or the cells that failed and how; each
  check: value, threshold, pass or FAIL) and write it as JSON (``--json``, by default
  ``bench/results/gpu-chapters.json``). The exit status is 0 only when every chapter ran
  without an error and every check passed (2: the script could not start).
* ``--check-only DIR_OR_FILES``: the same checks on notebooks already executed (a folder: the
  four chapters in it; files: those), executing nothing; it writes JSON only when ``--json`` is
  given. The committed chapters pass (``tests/test_gpu_chapters.py``).

Does not: install anything (``bench/gpu_check.sh`` installs the wheels of ``make gpu-wheels``);
compare outputs with the committed ones (nbval does, on the CPU); time anything (a chapter's
seconds are wall-clock, with the tests running beside it in ``gpu_check.sh``); need a GPU
(without one the chapters take the CPU path, for which the time limits, sized for a GPU in
``gpu_check.sh``'s budget, are too short on a small machine: raise them with ``--timeout``).

    python -m bench.gpu_chapters --expect-device cuda          # on a GPU machine
    python -m bench.gpu_chapters --out /tmp/chapters --timeout 400 --jobs 2
    python -m bench.gpu_chapters --check-only notebooks        # the committed chapters
    python -m bench.gpu_chapters --check-only /tmp/chapters --json /tmp/chapters.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
JSON = ROOT / "bench" / "results" / "gpu-chapters.json"

NUMBER = r"-?\d+(?:,\d{3})*(?:\.\d+)?"  # as printed: 2.1285, 562,304, -0.5
N = f"({NUMBER})"  # one number, captured
LIST = f"({NUMBER}(?:, {NUMBER})*)"  # numbers separated by ", ", captured as one group
DEVICE = r"device: (\w+)"  # pick_device's choice, as the chapters that train print it
FLOOR = 2.1285  # the toy world's exact Bayes floor on its evaluation set, as printed (nats)


@dataclass(frozen=True)
class Check:
    """One number a reader relies on, read from what a chapter printed, and its bounds.

    ``read`` names regular expressions (multi-line); the first match of each in the chapter's
    printed text gives its name the numbers in its groups: a float when there is one, a tuple
    otherwise. ``value`` computes the checked number from them; it passes when it lies in
    ``[low, high]``.
    """

    name: str
    read: dict[str, str]
    value: Callable[[dict], float]
    low: float = -math.inf
    high: float = math.inf


@dataclass(frozen=True)
class Chapter:
    timeout: int  # seconds for the whole chapter on a GPU, within gpu_check.sh's 3 minutes
    checks: tuple[Check, ...]
    trains: bool = False  # prints "device: ..." and trains there


def _ratio_gap(a: str, b: str) -> Callable[[dict], float]:
    return lambda v: v[a] / v[b] - 1


# Why these numbers and bounds (the committed CPU outputs in brackets):
# 1. No training: an untrained model's loss is log |V| [+0.4%], the exact floor [2.1285], the
#    mini BERT's parameter count [562,304]; none depends on the device: tight bounds.
# 2. The toy world trained to its floor (on a GPU: 4,000 steps, bf16): the final eval loss
#    within 3% of the floor [+0.5%; the recipe's target is 2%, plus room for bf16 and for the
#    next recipe], its accuracy at least 0.35 [0.392; chance is 1/206; the exact lab's models,
#    8% above the floor, reach 0.36], the mean KL to the exact posterior [0.012; about the gap
#    itself: at most 0.065, 3% of the floor]. None depends on the number of encoder layers.
# 3. Real text (on a GPU: 4,000 steps): the validation perplexity at most 0.75 of the
#    unigram's, the chapter's own claim [0.45]; content words costing the model more than
#    function words [+2.9 nats]; NSP accuracy near guessing on every seed, the chapter's point
#    (it says within 0.05; here 0.1, for bf16 and a few hundred pairs) [0.019 at worst].
# 4. The exact lab trains nothing (its trained results are stored): the floor, the mutual
#    information of two blanks [0.2778] and the step-0 loss at the default init [+0.6%].
CHAPTERS = {
    "training_1_mini_bert.ipynb": Chapter(90, (
        Check("untrained loss / log |V| - 1",
              {"loss": rf"mean over 500 slots: {N} ", "log_v": rf"log \|V\| = {N}"},
              _ratio_gap("loss", "log_v"), -0.02, 0.02),
        Check("exact Bayes floor (nats)", {"floor": rf"exact Bayes floor:\s+{N}"},
              lambda v: v["floor"], FLOOR - 1e-3, FLOOR + 1e-3),
        Check("parameters of BertConfig()", {"n": rf"^parameters: {N}$"},
              lambda v: v["n"], 562_304, 562_304),
    )),
    "training_2_toy_world.ipynb": Chapter(150, (
        Check("final eval loss / floor - 1",
              {"loss": rf"eval loss {N}, accuracy", "floor": rf"^Bayes floor:\s+{N}$"},
              _ratio_gap("loss", "floor"), -0.03, 0.03),
        Check("final accuracy", {"accuracy": rf"eval loss {NUMBER}, accuracy {N}"},
              lambda v: v["accuracy"], low=0.35),
        Check("mean KL(exact || model) (nats)",
              {"kl": rf"mean KL\(exact \|\| model\):\s+{N} nats"},
              lambda v: v["kl"], 0.0, 0.065),
    ), trains=True),
    "training_3_real_text.ipynb": Chapter(165, (
        Check("validation perplexity / unigram's",
              {"loss": rf"^validation: loss {N}, perplexity",
               "unigram": rf"^unigram baseline: loss {N}, perplexity"},
              lambda v: math.exp(v["loss"] - v["unigram"]), high=0.75),
        Check("content - function words' loss (nats)",
              {"function": rf"^function word\s*:\s+\d+ targets, model {N} nats",
               "content": rf"^content word\s*:\s+\d+ targets, model {N} nats"},
              lambda v: v["content"] - v["function"], low=0.5),
        Check("NSP accuracy - 0.5, worst seed",
              {"accuracy": rf"^NSP accuracy \(0\.5 is guessing\): {LIST}$"},
              lambda v: max(abs(a - 0.5) for a in _many(v["accuracy"])), high=0.1),
    ), trains=True),
    "training_4_exact_lab.ipynb": Chapter(120, (
        Check("exact floor (nats)", {"floor": rf"^floor\s+{N} nats$"},
              lambda v: v["floor"], FLOOR - 1e-3, FLOOR + 1e-3),
        Check("mutual information of two blanks (nats)",
              {"mi": rf"^mutual information of the two blanks: {N} nats$"},
              lambda v: v["mi"], 0.2778 - 1e-3, 0.2778 + 1e-3),
        Check("step-0 loss / log |V| - 1, std 0.02, worst",
              {"loss": rf"^std 0\.02\s*: step-0 loss {N} to {N}",
               "log_v": rf"^log \|V\| over the model's \d+ outputs: {N}$"},
              lambda v: max(abs(x / v["log_v"] - 1) for x in _many(v["loss"])), high=0.02),
    )),
}


def _many(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)


# ---------------------------------------------------------------------- reading a notebook
def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def printed(nb: dict) -> str:
    """What the code cells printed, in order: stdout, and the plain text of results. A cell's
    stdout pieces are joined as they came (the kernel may flush a line in two pieces)."""
    text = ""
    for cell in nb["cells"]:
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            if out["output_type"] == "stream" and out.get("name") == "stdout":
                text += _text(out["text"])
            elif out["output_type"] in ("execute_result", "display_data"):
                text += "\n" + _text(out.get("data", {}).get("text/plain", "")) + "\n"
        text += "\n"
    return text


def errors(nb: dict) -> list[dict]:
    """Each cell that raised: its index in the notebook, its first line of code, the error."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            if out["output_type"] == "error":
                lines = [s for s in _text(cell["source"]).splitlines()
                         if s.strip() and not s.startswith("#")]
                found.append({"cell": i, "code": lines[0][:60] if lines else "",
                              "error": f"{out['ename']}: {out['evalue']}"[:300]})
    return found


def numbers(pattern: str, text: str):
    """The numbers in the groups of ``pattern``'s first match (a float, or a tuple of them);
    None when it does not match."""
    match = re.search(pattern, text, re.MULTILINE)
    if match is None:
        return None
    found = tuple(float(x.replace(",", "")) for group in match.groups()
                  for x in re.findall(NUMBER, group or ""))
    return found[0] if len(found) == 1 else found


def judge(check: Check, text: str) -> dict:
    """``check`` applied to a chapter's printed ``text``: its value and verdict."""
    bounds = {"low": None if check.low == -math.inf else check.low,
              "high": None if check.high == math.inf else check.high}
    read = {name: numbers(pattern, text) for name, pattern in check.read.items()}
    missing = [name for name, value in read.items() if value is None]
    if missing:
        return {"check": check.name, "value": None, **bounds, "passed": False,
                "why": "not printed: " + "; ".join(_plain(check.read[m]) for m in missing)}
    value = float(check.value(read))
    return {"check": check.name, "value": value, **bounds,
            "passed": math.isfinite(value) and check.low <= value <= check.high}


def _plain(pattern: str) -> str:
    """A pattern as a person reads it: # for a number, "#, ..." for a list of them."""
    return pattern.replace(LIST, "#, ...").replace(N, "#").replace(NUMBER, "#")


def device_check(text: str, expected: str) -> dict:
    """The device a chapter that trains said it trained on, against ``expected``."""
    match = re.search(DEVICE, text)
    said = match.group(1) if match else None
    return {"check": "trained on", "value": said, "low": expected, "high": expected,
            "passed": said == expected, **({} if said else {"why": "not printed: " + DEVICE})}


def chapter_result(name: str, path: Path, run: dict | None = None,
                   expect_device: str | None = None) -> dict:
    """One chapter's line of the report: how it ran (``run``: the process's status and
    seconds, when it was executed here), its errors and its checks."""
    chapter, run = CHAPTERS[name], run or {}
    out = {"chapter": name.removesuffix(".ipynb"), "notebook": str(path),
           "status": run.get("status", "checked only"), "seconds": run.get("seconds")}
    if not path.exists():
        return {**out, "ran": "missing", "errors": [], "checks": [], "passed": False}
    nb = json.loads(path.read_text())
    text, failed = printed(nb), errors(nb)
    checks = [judge(c, text) for c in chapter.checks]
    if expect_device and chapter.trains:
        checks.append(device_check(text, expect_device))
    ran = "error" if failed else "ok"
    if run.get("status") not in (None, "finished"):
        ran = run["status"]  # timed out, or the process failed: the checks read what it left
    return {**out, "ran": ran, "errors": failed, "checks": checks,
            "passed": ran == "ok" and all(c["passed"] for c in checks)}


# ---------------------------------------------------------------------- executing
def kernel_env(top: Path, threads: int | None) -> dict:
    """The environment of the executing processes: kernel ``python3`` is this interpreter
    (a kernel spec in the folder ``top``, first on JUPYTER_PATH), mlmlib importable from the
    clone whatever the working directory, and OMP_NUM_THREADS when ``threads`` is given."""
    spec = top / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (bench.gpu_chapters)", "language": "python",
        "metadata": {"debugger": False}}))
    env = dict(os.environ)
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(top), env.get("JUPYTER_PATH")]))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy's frozen-modules note
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def run_one(src: Path, dst: Path, timeout: int) -> None:
    """Execute ``src`` into ``dst``, written after every cell (an executing process's work)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(src, as_version=4)
    for cell in nb.cells:  # a cell never reached must not show its committed output
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, dst)
    client = NotebookClient(nb, kernel_name="python3", timeout=timeout, allow_errors=True,
                            record_timing=False, resources={"metadata": {"path": str(NOTEBOOKS)}},
                            on_cell_executed=lambda **_: nbformat.write(nb, dst))
    client.execute()
    nbformat.write(nb, dst)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()  # its kernel exits within a second (ipykernel watches its parent)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def execute(names: list[str], out: Path, timeouts: dict, jobs: int, env: dict) -> dict:
    """Execute the chapters ``names`` into ``out``, ``jobs`` at a time (the longest limits
    first), each stopped at its time limit; ``{name: {"status", "seconds"}}``."""
    queue = sorted(names, key=lambda n: -timeouts[n])
    running, done = {}, {}
    while queue or running:
        while queue and len(running) < jobs:
            name = queue.pop(0)
            log = (out / f"{name}.log").open("w")
            cmd = [sys.executable, "-m", "bench.gpu_chapters", "--run-one",
                   str(NOTEBOOKS / name), str(out / name), str(timeouts[name])]
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            running[name] = (proc, time.monotonic(), log)
            print(f"gpu_chapters: started {name} (limit {timeouts[name]} s)", flush=True)
        time.sleep(0.5)
        for name, (proc, start, log) in list(running.items()):
            seconds = time.monotonic() - start
            if proc.poll() is not None:
                status = "finished" if proc.returncode == 0 else f"exit {proc.returncode}"
            elif seconds > timeouts[name]:
                _stop(proc)
                status = f"timed out ({timeouts[name]} s)"
            else:
                continue
            log.close()
            del running[name]
            done[name] = {"status": status, "seconds": round(seconds)}
            print(f"gpu_chapters: {name}: {status} in {seconds:.0f} s", flush=True)
            if status.startswith("exit"):
                # why, from the process's own output (the executed copy shows the cells')
                tail = (out / f"{name}.log").read_text(errors="replace").splitlines()[-15:]
                print("\n".join("    " + line for line in tail), flush=True)
    return done


# ---------------------------------------------------------------------- the report
def _show(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value == int(value) and abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4f}"


def _bounds(check: dict) -> str:
    low, high = check["low"], check["high"]
    if low == high:
        return f"= {_show(low)}"
    if low is None:
        return f"<= {_show(high)}"
    if high is None:
        return f">= {_show(low)}"
    return f"{_show(low)} to {_show(high)}"


def table(results: list[dict]) -> str:
    """The report as text: a block of lines per chapter."""
    lines = [f"{'chapter':22s} {'ran':26s} {'check':46s} {'value':>9s}  {'threshold':18s} "
             "verdict"]
    for r in results:
        ran = r["ran"] + (f" (cell {r['errors'][0]['cell']})" if r["errors"] else "")
        ran += f", {r['seconds']} s" if r["seconds"] is not None else ""
        first = f"{r['chapter'][:22]:22s} {ran[:26]:26s}"
        for i, c in enumerate(r["checks"] or [None]):
            head = first if i == 0 else " " * len(first)
            if c is None:
                lines.append(f"{head} (no checks: the notebook is missing)")
                continue
            lines.append(f"{head} {c['check'][:46]:46s} {_show(c['value']):>9s}  "
                         f"{_bounds(c):18s} {'pass' if c['passed'] else 'FAIL'}"
                         + (f" ({c['why']})" if "why" in c else ""))
        for e in r["errors"]:
            lines.append(f"    cell {e['cell']} ({e['code']}): {e['error']}")
    passed = all(r["passed"] for r in results)
    lines.append(f"gpu_chapters: {'every chapter passed' if passed else 'FAILED'}")
    return "\n".join(lines)


def find(paths: list[Path]) -> dict[str, Path]:
    """``{chapter name: notebook}`` for ``--check-only``: a folder gives the four chapters
    (missing or not), a file the chapter of its name."""
    found = {}
    for path in paths:
        if path.is_dir():
            found.update({name: path / name for name in CHAPTERS})
        elif path.name in CHAPTERS:
            found[path.name] = path
        else:
            raise SystemExit(f"gpu_chapters: {path} is neither a folder nor one of the "
                             f"chapters {', '.join(CHAPTERS)}")
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check-only", nargs="+", type=Path, metavar="DIR_OR_FILE",
                   help="check notebooks executed already, executing nothing")
    p.add_argument("--timeout", type=int, help="seconds for each chapter (default: each its "
                   "own, for a GPU: " + ", ".join(f"{n.split('_')[1]} {c.timeout}"
                                                  for n, c in CHAPTERS.items()) + ")")
    p.add_argument("--jobs", type=int, default=len(CHAPTERS), help="chapters at once")
    p.add_argument("--threads", type=int, help="OMP_NUM_THREADS of each kernel (torch's "
                   "threads; default: torch's own)")
    p.add_argument("--out", type=Path, help="folder for the executed copies (default: a new "
                   "temporary folder, kept)")
    p.add_argument("--expect-device", metavar="DEVICE", help="the device the chapters that "
                   "train must say they trained on (cuda on a GPU machine)")
    p.add_argument("--json", type=Path, help=f"where the JSON goes (default: {JSON}; with "
                   "--check-only, nowhere)")
    p.add_argument("--run-one", nargs=3, help=argparse.SUPPRESS)  # SRC DST TIMEOUT: a child
    args = p.parse_args(argv)
    if args.run_one:
        run_one(Path(args.run_one[0]), Path(args.run_one[1]), int(args.run_one[2]))
        return 0
    report = {"benchmark": "gpu-chapters", "expect_device": args.expect_device}
    if args.check_only:
        chapters = find(args.check_only)
        results = [chapter_result(n, path, expect_device=args.expect_device)
                   for n, path in chapters.items()]
        report["mode"] = "check-only"
    else:
        absent = [m for m in ("nbclient", "nbformat", "ipykernel") if
                  importlib.util.find_spec(m) is None]
        if absent:
            print(f"gpu_chapters: {', '.join(absent)} missing: pip install them (on a GPU "
                  "machine: bench/gpu_check.sh installs make gpu-wheels' .gpu-wheels/)")
            return 2
        out = args.out or Path(tempfile.mkdtemp(prefix="gpu-chapters-"))
        out.mkdir(parents=True, exist_ok=True)
        timeouts = {n: args.timeout or c.timeout for n, c in CHAPTERS.items()}
        print(f"gpu_chapters: executing {len(CHAPTERS)} chapters into {out}, {args.jobs} at "
              "once", flush=True)
        with tempfile.TemporaryDirectory(prefix="gpu-chapters-kernel-") as top:
            env = kernel_env(Path(top), args.threads)
            runs = execute(list(CHAPTERS), out, timeouts, args.jobs, env)
        results = [chapter_result(n, out / n, runs[n], args.expect_device) for n in CHAPTERS]
        report.update(mode="execute", out=str(out), jobs=args.jobs, threads=args.threads,
                      timeouts=timeouts, python=sys.executable)
    report["passed"] = all(r["passed"] for r in results)
    report["chapters"] = results
    print(table(results))
    path = args.json or (None if args.check_only else JSON)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1))
        print(f"wrote {path}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
