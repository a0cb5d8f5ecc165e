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


def _output_text(nb) -> str:
    """Everything the code cells printed or displayed as text."""
    return "\n".join("".join(out.get("text", "")) + "\n"
                     + "".join(out.get("data", {}).get("text/plain", ""))
                     for c in nb["cells"] for out in c.get("outputs", []))


def _printed(nb) -> list[str]:
    """Every number the code cells printed or displayed as text."""
    text = _output_text(nb)
    return NUMBER.findall(text) + re.findall(r"-?\d+\.\d+", text)


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


# The lab chapters quote their measurements with one or two decimals and as percentages too:
# each such number in their prose must be one the code printed. The exceptions are facts from
# papers and tables, each with its source.
LAB_CHAPTERS = ("training_5_what_it_knows.ipynb", "training_6_spans_scaling.ipynb")
SHORT_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d{1,2})?%|(?<![\w.])\d+\.\d{1,2}(?![\d%])")
NOT_MEASURED = {
    "2.78": "Student's t quantile, 4 degrees of freedom (checked below)",
    "0.34": "Hoffmann et al. 2022's fitted alpha",
    "0.28": "Hoffmann et al. 2022's fitted beta",
    "0.08": "Kaplan et al. 2020's exponent for non-embedding parameters (about 0.076)",
}


@pytest.mark.parametrize("name", LAB_CHAPTERS)
def test_every_short_number_in_a_lab_chapter_was_printed(name):
    """A percentage, or a number with one or two decimals, in the lab chapters' prose matches
    (after rounding, either sign) one the code printed, or is a fact from a paper or table."""
    from mlmlib.seeds import t_quantile

    assert round(t_quantile(4), 2) == 2.78
    nb = _load(ROOT / "notebooks" / name)
    outputs = _output_text(nb)
    printed_pct = set(re.findall(r"\d+(?:\.\d+)?%", outputs))
    printed = [abs(float(x)) for x in re.findall(r"-?\d+\.\d+", outputs)]
    missing = []
    for typed in sorted(set(SHORT_NUMBER.findall(_prose(nb)))):
        if typed.endswith("%"):
            ok = typed in printed_pct
        else:
            decimals = len(typed.split(".")[1])
            ok = typed in NOT_MEASURED or any(round(p, decimals) == float(typed) for p in printed)
        if not ok:
            missing.append(typed)
    assert not missing, f"{name}: typed in the prose but never printed: {missing}"


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


PAPERS = {  # a name in the text -> the bibtex key a page that uses it must cite
    r"RoBERTa": "liu2019roberta",
    r"Cramming": "geiping2023cramming",
    r"XLNet": "yang2019xlnet",
    r"Wettig": "wettig2023mask",
    r"Jain and Wallace": "jain2019attention",
    r"Vaswani": "vaswani2017attention",
    r"Devlin|80%, 10%|Google's (original )?(BERT|code)": "devlin2019bert",
    r"SpanBERT": "joshi2020spanbert",
    r"Hewitt": "hewitt2019designing",
    r"Shai et al": "shai2024transformers",
    r"Kaplan et al": "kaplan2020scaling",
    r"Hoffmann et al": "hoffmann2022training",
    r"Zhang and Bowman": "zhang2018language",
    r"Muennighoff": "muennighoff2023scaling",
    r"Besiroglu": "besiroglu2024chinchilla",
    r"Alain and Bengio": "alain2016understanding",
}
PAGES = NOTEBOOKS + sorted((ROOT / "book").glob("*.md"))
BIB_KEYS = set(re.findall(r"@\w+\{([^,]+),", (ROOT / "book" / "references.bib").read_text()))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_a_page_that_uses_a_paper_cites_it(path):
    if path.name == "references.md":
        return
    text = _prose(_load(path)) if path.suffix == ".ipynb" else path.read_text()
    cited = set(re.findall(r"\{cite[:\w]*\}`([^`]+)`", text))
    cited = {k.strip() for group in cited for k in group.split(",")}
    assert cited <= BIB_KEYS, f"unknown keys {cited - BIB_KEYS}"
    for pattern, key in PAPERS.items():
        if re.search(pattern, text):
            assert key in cited, f"{path.name} mentions {pattern!r} without {{cite}}`{key}`"


# A duration in the prose: a number with a unit of time ("13 s", "2 minutes", "40ms"), or one
# spelled out ("a few seconds", "about a minute"). Inline code and maths are not prose.
DURATION = re.compile(
    r"(?<![\w.$])\d[\d,.]*(?:\s(?:s|ms|seconds?|minutes?|hours?|h)|(?:ms|min))\b"
    r"|\b(?:one|two|three|four|five|ten|twenty|thirty|a few|several|some|many)\s"
    r"(?:seconds|minutes|hours)\b|\b(?:an?|one)\s(?:minute|hour)\b|\bhalf an hour\b"
    r"|\b(?:takes?|took|taking|lasts?)\s+(?:\w+\s+)?(?:seconds|minutes|hours)\b", re.I)


def test_the_duration_pattern():
    for typed in ("takes 13 s", "about a minute", "in a few seconds", "2 minutes", "40ms",
                  "those runs take minutes", "took hours"):
        assert DURATION.search(typed), typed
    for fine in ("a second game", "ten 1s", "`13 s`", "2 seeds", "a 5-minute"):
        assert not DURATION.search(re.sub(r"`[^`\n]*`", "", fine)), fine


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_markdown_types_a_duration(path):
    """Durations depend on the machine: the prose quotes the times the cells print instead."""
    for k, cell in enumerate(_load(path)["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        text = re.sub(r"\$[^$]*\$", "", re.sub(r"`[^`\n]*`", "", "".join(cell["source"])))
        typed = DURATION.search(text)
        assert not typed, f"{path.name}, cell {k}: a typed duration, {typed.group()!r}"


WORDS = {w: str(k) for k, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
SEED_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?|\b(?:" + "|".join(WORDS) + r")\b", re.I)


def _seed_sentences(cell) -> list[str]:
    """The clauses of a Markdown cell that speak of seeds, without code, maths or links."""
    text = "".join(cell["source"])
    text = re.sub(r"\{\w+\}`[^`]*`|`[^`\n]*`|\$[^$]*\$|\([^()]*\.json\)", " ", text)
    clauses = re.split(r"(?<=[.!?:;])\s+|,\s|[()]|\s-\s", text)  # numbers about seeds sit
    return [s for s in clauses if re.search(r"\bseeds?\b", s, re.I)]  # in a clause on seeds


def _compared_seed_lines(nb) -> str:
    """Lines that nbval compares (outputs of cells not marked NBVAL_IGNORE_OUTPUT) or that the
    code sets, and that speak of seeds."""
    lines = []
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        source = "".join(c["source"])
        lines += source.splitlines()
        if "NBVAL_IGNORE_OUTPUT" in source or "NBVAL_SKIP" in source:
            continue
        for out in c.get("outputs", []):
            lines += "".join(out.get("text", "")).splitlines()
            lines += "".join(out.get("data", {}).get("text/plain", "")).splitlines()
    return "\n".join(x for x in lines if re.search(r"seed", x, re.I)).replace(",", "")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_number_said_of_seeds_is_printed_and_compared(path):
    """A number the prose states about seeds is on a compared line about seeds, or in the code.

    nbval compares the outputs of every cell not marked NBVAL_IGNORE_OUTPUT; a number that
    depends on the hardware's last digits is printed by such a cell as a thresholded verdict.
    So a count of seeds, a seed, or a result said of them must be printed there on a line
    that names seeds (or be a setting the code types on such a line), never only in prose.
    """
    nb = _load(path)
    compared = set(re.findall(r"\d+(?:\.\d+)?", _compared_seed_lines(nb)))
    for k, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        for sentence in _seed_sentences(cell):
            for typed in SEED_NUMBER.findall(sentence):
                number = WORDS.get(typed.lower(), typed.replace(",", ""))
                assert number in compared or number.rstrip("0").rstrip(".") in compared, (
                    f"{path.name}, cell {k}: {typed!r} is said of seeds but no compared cell "
                    f"prints it: {' '.join(sentence.split())[:160]!r}")
