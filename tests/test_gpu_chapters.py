"""bench/gpu_chapters.py's checks, on the CPU, executing nothing (its --check-only mode).

The script executes the training chapters on a GPU and checks a few of their printed numbers by
thresholds; a pattern that no longer matches what a chapter prints, or a threshold the
committed (CPU) outputs already break, would only show up there, where time is scarce. Here:
every check reads exactly one line of the committed chapters and passes on them, and a number
pushed past its threshold, a missing line, a failing cell or another device fails the run.
"""

import json
import re
import shutil
from pathlib import Path

import pytest

from bench.gpu_chapters import CHAPTERS, main, numbers, printed

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def report(tmp_path, *args):
    """Run the script's --check-only mode in this process; its exit status and JSON."""
    out = tmp_path / "report.json"
    status = main(["--check-only", *map(str, args), "--json", str(out)])
    return status, json.loads(out.read_text())


def chapter_copy(tmp_path, name):
    """A copy of a committed chapter, as JSON, and where it goes."""
    return json.loads((NOTEBOOKS / name).read_text()), tmp_path / name


def edit_output(nb, old, new):
    """Replace ``old`` by ``new`` in the one stdout line that holds it."""
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("name") == "stdout":
                text = "".join(out["text"])
                if old in text:
                    out["text"] = text.replace(old, new)
                    return
    raise AssertionError(f"{old!r} is printed nowhere")


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_pattern_reads_one_line_of_the_committed_chapter(name):
    text = printed(json.loads((NOTEBOOKS / name).read_text()))
    for check in CHAPTERS[name].checks:
        for key, pattern in check.read.items():
            assert numbers(pattern, text) is not None, (check.name, key)
            assert len(re.findall(pattern, text, re.MULTILINE)) == 1, \
                (check.name, key, "matches more than one line")


def test_the_committed_chapters_pass_every_check(tmp_path):
    status, out = report(tmp_path, NOTEBOOKS)
    assert [r["chapter"] + ".ipynb" for r in out["chapters"]] == list(CHAPTERS)
    failed = [(r["chapter"], c) for r in out["chapters"] for c in r["checks"] if not c["passed"]]
    assert failed == []
    assert all(r["ran"] == "ok" and r["errors"] == [] for r in out["chapters"])
    assert status == 0 and out["passed"] and out["mode"] == "check-only"
    assert sum(len(r["checks"]) for r in out["chapters"]) == sum(
        len(c.checks) for c in CHAPTERS.values())


def test_a_loss_past_its_threshold_fails(tmp_path):
    name = "training_2_toy_world.ipynb"
    nb, path = chapter_copy(tmp_path, name)
    text = printed(nb)
    loss = numbers(CHAPTERS[name].checks[0].read["loss"], text)
    edit_output(nb, f"eval loss {loss:.4f}", "eval loss 2.3000")  # 8% above the floor
    path.write_text(json.dumps(nb))
    status, out = report(tmp_path, path)
    checks = out["chapters"][0]["checks"]
    assert status == 1 and not out["passed"]
    assert not checks[0]["passed"] and checks[0]["value"] == pytest.approx(2.3 / 2.1285 - 1)
    assert all(c["passed"] for c in checks[1:])  # the others still read and pass


def test_a_line_no_longer_printed_fails_and_says_which(tmp_path):
    name = "training_3_real_text.ipynb"
    nb, path = chapter_copy(tmp_path, name)
    edit_output(nb, "NSP accuracy (0.5 is guessing)", "NSP accuracy")
    path.write_text(json.dumps(nb))
    status, out = report(tmp_path, path)
    nsp = out["chapters"][0]["checks"][2]
    assert status == 1 and not nsp["passed"] and nsp["value"] is None
    assert "NSP accuracy" in nsp["why"] and "#, ..." in nsp["why"]


def test_a_failing_cell_fails_the_chapter_even_when_its_numbers_pass(tmp_path):
    name = "training_1_mini_bert.ipynb"
    nb, path = chapter_copy(tmp_path, name)
    code = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    nb["cells"][code[-1]]["outputs"].append(
        {"output_type": "error", "ename": "ValueError", "evalue": "on cpu, model on cuda:0",
         "traceback": []})
    path.write_text(json.dumps(nb))
    status, out = report(tmp_path, path)
    chapter = out["chapters"][0]
    assert status == 1 and chapter["ran"] == "error"
    assert chapter["errors"] == [{"cell": code[-1], "code": chapter["errors"][0]["code"],
                                  "error": "ValueError: on cpu, model on cuda:0"}]
    assert all(c["passed"] for c in chapter["checks"])


def test_chapters_that_trained_on_the_cpu_fail_when_cuda_is_expected(tmp_path):
    status, out = report(tmp_path, NOTEBOOKS, "--expect-device", "cuda")
    said = {r["chapter"]: [c for c in r["checks"] if c["check"] == "trained on"]
            for r in out["chapters"]}
    assert status == 1
    assert {k: [c["value"] for c in v] for k, v in said.items()} == {
        "training_1_mini_bert": [], "training_2_toy_world": ["cpu"],
        "training_3_real_text": ["cpu"], "training_4_exact_lab": []}


def test_a_missing_chapter_fails_and_check_only_writes_no_json_by_default(tmp_path, capsys):
    shutil.copy(NOTEBOOKS / "training_4_exact_lab.ipynb", tmp_path)
    assert main(["--check-only", str(tmp_path)]) == 1
    shown = capsys.readouterr().out
    assert "missing" in shown and "wrote" not in shown
    assert not list(tmp_path.glob("*.json"))


def split_output(nb, before):
    """Cut the stdout output holding ``before`` in two pieces, just before it."""
    for cell in nb["cells"]:
        outs = cell.get("outputs", [])
        for k, out in enumerate(outs):
            text = "".join(out.get("text", ""))
            if out.get("name") == "stdout" and before in text:
                cut = text.index(before)
                outs[k:k + 1] = [{**out, "text": text[:cut]}, {**out, "text": text[cut:]}]
                return
    raise AssertionError(f"{before!r} is printed nowhere")


def test_a_line_the_kernel_flushed_in_two_pieces_still_reads(tmp_path):
    nb, path = chapter_copy(tmp_path, "training_2_toy_world.ipynb")
    split_output(nb, ", accuracy")
    path.write_text(json.dumps(nb))
    status, out = report(tmp_path, path)
    assert status == 0 and all(c["value"] is not None for c in out["chapters"][0]["checks"])
