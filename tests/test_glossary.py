"""The glossary (book/glossary.md): every term is defined before a chapter first uses it.

Each row of the glossary's table names a term and where it is defined: a chapter and the heading
of its section. The definition is the term written in bold (``**seed**``) in that section. The
tests check, in the reading order of ``_toc.yml``, that

- the bold definition is where the glossary says it is;
- no page uses the term in its prose (Markdown cells and figure captions) before the cell that
  defines it (a use in the defining cell itself, its heading say, is fine).

A term's uses are found by the pattern below (``USES``): its word forms, and for a word that
also has an everyday meaning ("step"), only the phrases of its technical sense. A new glossary
row needs a pattern here, or the test fails and says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mlmlib.course.book import Book

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "book" / "glossary.md"

# The list of terms (every one must be in the glossary), then the others the glossary
# keeps. Patterns are case-insensitive unless they start with (?-i).
USES = {
    "seed": r"\bseeds?\b",
    "step": r"\b(?:training|optimi[sz]er|update|AdamW|gradient[- ]descent) steps?\b"
            r"|\b\d[\d,]* (?:training |more |optimi[sz]er )?steps\b|\bsteps? of (?:training|AdamW)"
            r"|\bper (?:training )?step\b|\btrain(?:s|ed|ing)? for [\d,]+ steps\b",
    "batch": r"\bbatch(?:es)?\b",
    "learning rate": r"\blearning[- ]rates?\b",
    "AdamW": r"(?-i:\bAdamW?\b)",
    "warm-up": r"\bwarm-?\s?ups?\b(?! steps off the clock)",
    "dropout": r"\bdropout\b",
    "overfitting": r"\boverfit(?:s|ting|ted)?\b",
    "posterior": r"\bposteriors?\b",
    "hidden Markov model": r"\bhidden Markov\b|(?-i:\bHMMs?\b)",
    "forward-backward": r"\bforward[- ]backward\b",
    "nats": r"\bnats?\b",
    "cross-entropy": r"\bcross[- ]entropy\b",
    # kept in the glossary beyond the list
    "log-sum-exp": r"\blog[- ]sum[- ]exp\b|\blogsumexp\b",
    "gradient": r"\bgradients?\b",
    "fine-tuning": r"\bfine-?tun(?:e|es|ed|ing)\b",
    "WordPiece": r"(?-i:\bWordPiece\b)",
    "prior": r"\bpriors?\b(?! to\b)",
    "floor": r"\bfloors?\b",
    "unigram baseline": r"\bunigram (?:baselines?|guess|loss)\b",
    "evaluation loss": r"\beval(?:uation)? loss(?:es)?\b",
    "KL divergence": r"(?-i:\bKL\b)|\bKullback",
    "entropy": r"(?<!cross-)(?<!cross )\bentropy\b",  # not cross-entropy, a term of its own
    "validation set": r"\bvalidation\b",
    "perplexity": r"\bperplexit(?:y|ies)\b",
    "bootstrap": r"\bbootstrap(?:ped|ping|s)?\b",
    "linear probe": r"\blinear probes?\b",
    "belief": r"\bbeliefs?\b",
    "control task": r"\bcontrol tasks?\b",
    "selectivity": r"\bselectivit(?:y|ies)\b",
    "95% interval": r"\b95% intervals?\b",
    "one-hot": r"\bone-hot\b",
    "memorisation": r"\bmemori[sz]ation\b(?!\.json)",  # not the file memorisation.json
    "dynamic masking": r"\b(?:dynamic|static) masking\b",
    "span": r"\bspans?\b",
    "power law": r"\bpower[- ]laws?\b",
    "scaling law": r"\bscaling laws?\b",
    "least squares": r"\bleast[- ]squares\b",
    "median": r"\bmedians?\b",
    "irreducible loss": r"\birreducible loss(?:es)?\b",
}
# A definition is the term in bold: its word forms, whatever the sense of the word elsewhere.
DEFINED = {**USES, "step": r"\bsteps?\b"}
REQUIRED = set(list(USES)[:13])  # the list; the rest are kept beyond it
ROW = re.compile(r"^\| (?P<term>[^|]+?) \| (?P<short>[^|]+?) \| \{doc\}`(?:[^`<]*<)?\.\./"
                 r"(?P<page>[\w/]+)>?`, \*(?P<heading>[^*]+)\* \|$", re.M)


def glossary() -> dict[str, tuple[str, str]]:
    """term -> (page, heading) from the glossary's table."""
    rows = {m["term"]: (m["page"], m["heading"]) for m in ROW.finditer(GLOSSARY.read_text())}
    assert rows, "book/glossary.md: no rows | term | in short | {doc}`page`, *heading* |"
    return rows


def prose(page: str) -> list[str]:
    """A page's prose, one string per cell (Markdown, or a code cell's figure caption)."""
    path = ROOT / f"{page}.ipynb"
    if not path.exists():
        return [(ROOT / f"{page}.md").read_text()]
    cells = json.loads(path.read_text())["cells"]
    return ["".join(c["source"]) if c["cell_type"] == "markdown" else
            c.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption", "")
            for c in cells]


def reading_order() -> list[tuple[str, list[str]]]:
    return [(page, prose(page)) for page in Book(ROOT).pages if page != "book/glossary"]


def definition(term: str, page: str, heading: str, pages) -> tuple[int, int]:
    """(page number, cell number) of the bold definition of ``term`` under ``heading``."""
    use = re.compile(DEFINED[term], re.I)
    order = [p for p, _ in pages]
    assert page in order, f"glossary: {term!r} is defined in {page}, which is not in _toc.yml"
    current = None
    for k, text in enumerate(dict(pages)[page]):
        pieces = re.split(r"^(#{1,6} .*)$", text, flags=re.M)
        for piece in pieces:
            if re.match(r"#{1,6} ", piece):
                current = piece.lstrip("#").strip()
            elif current == heading and any(use.search(b) for b in
                                            re.findall(r"\*\*(.+?)\*\*", piece, re.S)):
                return order.index(page), k
    raise AssertionError(f"glossary: no bold **{term}** under the heading {heading!r} of {page}")


def first_use(term: str, pages) -> tuple[int, int, str, str] | None:
    use = re.compile(USES[term], re.I)
    for n, (page, cells) in enumerate(pages):
        for k, text in enumerate(cells):
            if m := use.search(text):
                return n, k, page, text[max(0, m.start() - 60):m.end() + 40].replace("\n", " ")
    return None


def test_the_glossary_lists_every_required_term_and_each_has_a_pattern():
    rows = glossary()
    assert not REQUIRED - set(rows), f"missing from book/glossary.md: {REQUIRED - set(rows)}"
    assert not set(rows) - set(USES), \
        f"add a pattern for {set(rows) - set(USES)} to USES in tests/test_glossary.py"


def test_the_glossary_is_in_the_book():
    assert "book/glossary" in Book(ROOT).pages


def test_the_patterns():
    step = re.compile(USES["step"], re.I)
    assert step.search("after 1,400 steps") and step.search("one training step")
    assert not step.search("Step 4 of the walkthrough") and not step.search("step by step")
    assert re.search(USES["AdamW"], "BERT's AdamW", re.I)
    assert not re.search(USES["AdamW"], "adam", re.I)
    assert re.search(USES["hidden Markov model"], "an HMM", re.I)
    assert not re.search(USES["hidden Markov model"], "hmm, well", re.I)


@pytest.mark.parametrize("term", sorted(USES))
def test_each_term_is_defined_before_its_first_use(term):
    rows = glossary()
    if term not in rows:
        pytest.fail(f"{term!r} is not in book/glossary.md")
    pages = reading_order()
    defined = definition(term, *rows[term], pages)
    used = first_use(term, pages)
    assert used is not None, f"{term!r} is never used: drop it from the glossary"
    assert used[:2] >= defined, (
        f"{term!r} is used in {used[2]} (cell {used[1]}: ...{used[3]}...) before its "
        f"definition in {rows[term][0]} (cell {defined[1]})")
