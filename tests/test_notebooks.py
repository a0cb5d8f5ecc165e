"""Checks on the chapters as files (nbval runs them; this checks what nbval cannot)."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d{3,}(?![\d])")


def _load(path):
    return json.loads(path.read_text())


def _prose(nb) -> str:
    """Markdown cells and figure captions: the text a reader takes on trust."""
    parts = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    for c in nb["cells"]:
        figure = c.get("metadata", {}).get("mystnb", {}).get("figure", {})
        parts.append(figure.get("caption", ""))
    return "\n".join(parts)


def _printed(nb) -> list[str]:
    """Every number the code cells printed or displayed as text."""
    texts = []
    for c in nb["cells"]:
        for out in c.get("outputs", []):
            texts.append("".join(out.get("text", "")))
            texts.append("".join(out.get("data", {}).get("text/plain", "")))
    return NUMBER.findall("\n".join(texts)) + re.findall(r"-?\d+\.\d+", "\n".join(texts))


def test_there_are_chapters():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_number_in_the_prose_was_computed(path):
    """A number with 3+ decimals in the text must match (after rounding) one the code printed."""
    nb = _load(path)
    printed = _printed(nb)
    for typed in sorted(set(NUMBER.findall(_prose(nb)))):
        decimals = len(typed.split(".")[1])
        matches = [p for p in printed if len(p.split(".")[1]) >= decimals
                   and round(float(p), decimals) == float(typed)]
        assert matches, f"{path.name}: {typed} appears in the text but no cell printed it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_shape(path):
    """Committed with outputs, a title, a Summary and Exercises, clean metadata."""
    nb = _load(path)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert any(c.get("outputs") for c in code), "commit notebooks with their outputs"
    prose = _prose(nb)
    assert prose.lstrip().startswith("# "), "the first cell is the chapter title"
    assert "## Summary" in prose and "## Exercises" in prose
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    counts = [c.get("execution_count") for c in code if c.get("execution_count")]
    assert counts == sorted(counts), "run the notebook top to bottom before committing"
