"""No exercise asks for a number the page has already printed.

An exercise asks before it tells: for each exercise whose solution ends in a numeric verdict
("Correct: 0.2231 matches e^(-loss) = 0.2231.", "Correct: 562,304 weights."), its answer must
not appear above the exercise in its chapter, in a cell's output or in the Markdown, as any
rounding of it that a reader could copy: a printed number with 3 or more significant digits
that equals the answer rounded to its decimals (an integer answer of 10 or more: that integer).

The answer is read from the solution's own output, so the test needs no list to keep in step:
after "matches ... =" it is the number after the last "="; otherwise every number of the line
("Correct: targets 495,000,000, [MASK] 396,000,000, ..."), except in a function check's line,
which counts cases ("... on all 5 cases"), not an answer, and except the numbers the exercise
itself states (they are its data: "-100 elsewhere"). A number printed with a unit of time or
memory ("1.80 ms", "7.0 s", "44 MiB") is a measurement of the machine, never an exercise's
answer (nats, probabilities, ratios, counts), and is not counted.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,])-?\d+(?:\.\d+)?")
TIMED = re.compile(r"\s?(?:ms|s|us|µs|min|h|GiB|MiB|KiB|GB|MB)\b")


def _text(cell) -> str:
    """What a reader sees of a cell: its Markdown, or its outputs as text (HTML without tags)."""
    if cell["cell_type"] == "markdown":
        return "".join(cell["source"])
    parts = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        parts.append("".join(out.get("text", "")))
        parts.append("".join(data.get("text/plain", "")))
        parts.append("".join(data.get("text/markdown", "")))
        visible = re.sub(r"<script.*?</script>|<style.*?</style>", " ",
                         "".join(data.get("text/html", "")), flags=re.S)
        parts.append(html.unescape(re.sub(r"<[^>]*>", " ", visible)))
    caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption", "")
    return "\n".join([*parts, caption])


def _value(number: str) -> float:
    return float(number.replace(",", ""))


def _significant(number: str) -> int:
    digits = number.replace(",", "").replace("-", "").replace(".", "").lstrip("0")
    return len(digits)


def answers(line: str) -> list[str]:
    """The answer(s) a "Correct: ..." line states (see the module's docstring)."""
    if "matches" in line and "=" in line:
        return NUMBER.findall(line.rsplit("=", 1)[1])
    if re.search(r"\bcases?\b", line):
        return []
    return NUMBER.findall(line.split(":", 1)[1])


def gives_away(printed: str, answer: str) -> bool:
    """True when ``printed`` is a rounding of ``answer`` a reader could copy."""
    a, p = _value(answer), _value(printed)
    if "." not in answer.replace(",", "") and abs(a) >= 10:  # an integer answer: that integer
        return "." not in printed and p == a
    if _significant(printed) < 3:
        return False
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(p - a) <= 0.5 * 10**-decimals + 1e-12 * abs(a)


def exercises(nb) -> list[tuple[str, int, list[str]]]:
    """(label, index of the exercise's cell, its answers) for every exercise of a chapter."""
    cells, found = nb["cells"], []
    for k, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] != "markdown" or "{exercise}" not in source:
            continue
        for label in re.findall(r"\{exercise\}\s*\n:label: ([\w-]+)", source):
            start = next(j for j, c in enumerate(cells)
                         if re.search(r"\{solution-start\} " + re.escape(label) + r"\b",
                                      "".join(c["source"])))
            end = next(j for j in range(start, len(cells))
                       if "{solution-end}" in "".join(cells[j]["source"]))
            lines = [line for c in cells[start:end] if c["cell_type"] == "code"
                     for line in _text(c).splitlines() if line.startswith("Correct:")]
            given = {_value(n) for n in NUMBER.findall(source)}
            found.append((label, k, [a for line in lines for a in answers(line)
                                     if _value(a) not in given]))
    return found


def test_the_answer_reader():
    assert answers("Correct: 0.2231 matches e^(-loss) = 0.2231.") == ["0.2231"]
    assert answers("Correct: 562,304 weights.") == ["562,304"]
    assert answers("Correct: your softmax matches on all 5 cases, including scores of 1000.") \
        == []
    assert gives_away("278.8", "278.7959") and gives_away("278.7959", "278.7959")
    assert gives_away("279", "278.7959")  # three significant digits, rounded to 0 decimals
    assert not gives_away("0.65", "0.6466")  # two significant digits: too rough to copy
    assert gives_away("0.647", "0.6466") and not gives_away("0.648", "0.6466")
    assert gives_away("562,304", "562,304") and not gives_away("562,305", "562,304")
    assert NUMBER.findall("a 562,304 b -0.5, 3.25.") == ["562,304", "-0.5", "3.25"]
    assert TIMED.match("1.80 ms", 4) and TIMED.match("7.0 s,", 3) and not TIMED.match("2 seeds", 1)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_exercise_asks_for_a_number_printed_above_it(path):
    nb = json.loads(path.read_text())
    for label, at, wanted in exercises(nb):
        for k, cell in enumerate(nb["cells"][:at]):
            text = _text(cell)
            shown = [m.group() for m in NUMBER.finditer(text)
                     if not TIMED.match(text, m.end())]
            for answer in wanted:
                leaks = [p for p in shown if gives_away(p, answer)]
                assert not leaks, (f"{path.name}: exercise {label} asks for {answer}, but cell "
                                   f"{k} above it shows {leaks[0]}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_solution_cell_shows_its_checker_agreeing(path):
    """A code cell inside a solution runs the exercise's own answer through its checker, and
    the reader sees the checker agree: a verdict left unprinted (returned but not the cell's
    last value) would leave the solution unconfirmed."""
    inside, silent = False, []
    for cell in json.loads(path.read_text())["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            inside = ("{solution-start}" in text or inside) and "{solution-end}" not in text
            continue
        if inside:
            shown = "".join("".join(out.get("text", "")) + "".join(
                out.get("data", {}).get("text/plain", "")) for out in cell.get("outputs", []))
            if not re.search(r"\bmatches\b|\bCorrect\b", shown):
                silent.append(cell.get("id"))
    assert not silent, f"{path.name}: solution cells whose checker's verdict is not shown: {silent}"
