"""The live figures: one deterministic HTML output each, the settings the page needs, bad input
refused, the script's modules shipped with the package, and every committed live output
carrying the current script (tests/test_live_js.py and tests/test_site.py run it in Chromium)."""

import fnmatch
import hashlib
import json
import re
import tomllib
from pathlib import Path, PurePosixPath

import numpy as np
import pytest
from matplotlib.figure import Figure

from mlmlib.plots.walkthrough import DIAL_BANDS, EDGE_TITLES, SOFTMAX_STAGES
from mlmlib.toyworld import ToyWorld
from mlmlib.widgets import (
    MODULES,
    LiveFigure,
    live_ask_model,
    live_attention,
    live_dial,
    live_edge_cases,
    live_mask,
    live_neg_log,
    live_posterior,
    live_softmax,
    live_tower,
    read_sentence,
    script,
    script_hash,
)

ROOT = Path(__file__).resolve().parent.parent
JS = ROOT / "mlmlib" / "widgets" / "js"

SENTENCE = ["the", "fat", "cat", "sat", "on", "the", "mat"]
LIVE = {
    "mask": lambda: live_mask(SENTENCE, hidden=[2]),
    "dial": lambda: live_dial(0.7, label="P(cat)"),
    "softmax": lambda: live_softmax(np.array([1.0, 2.0, 0.0, 1.0]), ["the", "cat", "mat", "sat"],
                                    truth="cat"),
    "neglog": lambda: live_neg_log(0.5, {"A": 0.5344}),
    "tower": lambda: live_tower(SENTENCE, {1: 0.4, 3: 0.2, 6: 0.7}),
    "edge": lambda: live_edge_cases(k=3, log10p=-10),
    "posterior": lambda: live_posterior(ToyWorld(), "the small ___ barked ."),
    "ask": lambda: live_ask_model(ToyWorld(), "the small ___ barked ."),  # tests/test_live_ask.py
    "attention": lambda: live_attention("the small ___ barked ."),
}


def _settings(html: str) -> dict:
    found = re.search(r'<script type="application/json" class="mlm-config">(.*?)</script>', html,
                      re.S)
    return json.loads(found.group(1))


@pytest.mark.parametrize("kind", list(LIVE))
def test_a_live_figure_is_one_deterministic_html_output_with_a_static_picture(kind):
    fig = LIVE[kind]()
    html = fig._repr_html_()
    assert html == LIVE[kind]()._repr_html_()  # nbval compares it: no ids, no timestamps
    assert html.startswith(f'<div class="mlm-live" data-kind="{kind}">')
    assert _settings(html)["kind"] == kind and _settings(html) == json.loads(
        json.dumps(fig.config))  # the settings survive the trip through JSON
    assert re.search(r'<img alt="[^"]+" style="max-width:100%" src="data:image/png;base64,'
                     r'iVBOR', html), "no static picture for a reader without JavaScript"
    assert isinstance(fig.static(), Figure)
    assert html.count(f'<script data-mlm-script="{script_hash()}">{script()}</script>') == 1
    assert html.count("<script") == 2  # the settings (JSON) and the script, nothing else
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")  # nothing to fetch
    assert "https://" not in html
    assert "its controls work in a browser" in repr(fig)


def _values(fig: LiveFigure) -> list:
    return [s["value"] for s in fig.config["sliders"]]


def test_live_figures_carry_what_the_page_needs():
    assert _values(live_softmax([1, 2], ["a", "b"])) == [1.0, 2.0]
    assert _values(live_softmax(np.array([0.1, 0.7]) * 3, ["a", "b"])) == [0.3, 2.1]
    assert _values(live_dial(0.1 + 0.2)) == [0.3]  # on the steps, up to float noise
    wide = live_softmax([8.0, -6.5, 0.0], ["a", "b", "c"]).config["sliders"]
    assert [(s["min"], s["max"], s["step"]) for s in wide] == [(-5, 8, 0.1), (-7, 5, 0.1),
                                                              (-5, 5, 0.1)]
    tower = live_tower(SENTENCE, {6: 0.7, 1: 0.4}).config
    assert tower["probs"] == {1: 0.4, 6: 0.7}
    assert tower["slot_names"][5] == "P(x₆ = the)" and tower["blocks"][1] == "−log P(x₂ = fat)"
    world = ToyWorld(max_len=12)
    tables = live_posterior(world, "the ___ sat .").config["world"]
    assert tables["max_len"] == 12 and len(tables["states"]) == 14
    assert tables["words"] == world.words
    emit = np.zeros((14, world.vocab_size))
    for s, row in enumerate(tables["emit"]):  # only the words a state can write travel
        for v, p in row.items():
            emit[s, v] = p
    assert np.array_equal(emit, world.emit.numpy())
    assert tables["trans"] == world.trans.tolist() and tables["stop"] == world.stop.tolist()


def test_the_live_script_is_its_modules_in_one_function_and_mounts_every_figure():
    built = script()
    body = built[built.index("(function () {"):]
    assert body.startswith('(function () {\n"use strict";\n') and body.endswith("})();\n")
    at = [body.index((JS / name).read_text(encoding="utf-8")) for name in MODULES]
    assert at == sorted(at), "the modules are put together in MODULES' order"
    assert "if (window.mlmLive) { window.mlmLive.mountAll(); return; }" in built
    assert ".mlm-live:not([data-mounted])" in built
    assert script_hash() == hashlib.sha256(built.encode()).hexdigest()[:16]


def test_the_script_modules_are_small_and_say_what_they_do():
    assert sorted(p.name for p in JS.glob("*.js")) == sorted(MODULES), "a module not in MODULES"
    for name in MODULES:
        text = (JS / name).read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 150, f"{name}: more than 150 lines"
        assert text.startswith(f"/* {name} - ") and "Does not" in text.split("*/", 1)[0], \
            f"{name}: open with a comment saying what it does and does not do"
        assert not re.search(r"^(let|var) ", text, re.M), f"{name}: a mutable global"
        assert not re.search(r"^function \w+\((\w+, ){4,}", text, re.M), \
            f"{name}: a helper with five or more positional arguments: take an options object"


def _strings(value, skip=("kind", "tokens", "words", "world", "sentence", "mask_token", "truth",
                          "points", "hidden", "probs", "pattern", "slot_names", "blocks")):
    """The text a figure's settings carry (its data aside: words, tokens, the world)."""
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in skip for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_the_script_holds_no_word_colour_or_number_that_python_sends():
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", "".join(
        (JS / name).read_text(encoding="utf-8") for name in MODULES), flags=re.S)
    sent = {s for make in LIVE.values() for s in _strings(make().config) if len(s) > 5}
    assert "1. raw scores s_v" in sent and "#D55E00" in sent  # the walk sees the settings
    typed = sorted(s for s in sent if s in code)
    assert not typed, f"typed in the script as well as sent by Python: {typed}"
    assert not re.findall(r"#[0-9A-Fa-f]{3,8}\b", code), "a colour in the script: send it"
    literals = set(re.findall(r"(?<![\w.])\d*\.?\d+(?:e-?\d+)?", code))
    for shared in ("1.22", "0.85", "0.8", "0.01", "0.001", "1e-12", "1e-3", "0.1", "___"):
        assert shared not in literals, f"{shared} is typed in the script: send it from Python"
    assert DIAL_BANDS[1][:2] == (0.5, 0.8) and EDGE_TITLES[2].startswith("C.")  # what is sent
    assert next(t for t, _ in SOFTMAX_STAGES) == "1. raw scores $s_v$"


def test_read_sentence_as_the_page_reads_it():
    assert read_sentence("The small ___ barked.") == (["the", "small", "___", "barked", "."], [2])
    assert read_sentence("a [MASK] _ ran .\tThe") == (
        ["a", "[mask]", "_", "ran", ".", "the"], [1, 2])
    assert read_sentence("  ") == ([], [])
    config = live_posterior(ToyWorld(), "the ___ sat .").config
    assert config["rule"]["blanks"] == ["___", "_", "[mask]"]


LIVE_BAD = [
    (lambda: live_mask("the cat"), TypeError, "tokens", "pass a list"),
    (lambda: live_mask(SENTENCE, hidden=[7]), ValueError, "position 7", "7-token"),
    (lambda: live_dial(1.5), ValueError, "p (a probability)"),
    (lambda: live_dial(0.5, label=3), TypeError, "label", "string"),
    (lambda: live_softmax([1, 2, 3], ["a", "b"]), ValueError, "2 words but 3 scores"),
    (lambda: live_softmax([1, 2], ["a", "a"]), ValueError, "words"),
    (lambda: live_softmax([1, 2], ["a", "b"], truth="c"), ValueError, "'c'", "not among"),
    (lambda: live_softmax([1e3, 2], ["a", "b"]), ValueError, "scores"),
    (lambda: live_neg_log(0.0), ValueError, "p (a probability)"),
    (lambda: live_neg_log(0.5, {"your p": 0.2}), ValueError, "your p"),
    (lambda: live_neg_log(0.5, {"a": 0}), ValueError, "point 'a'"),
    (lambda: live_tower(SENTENCE, {9: 0.5}), ValueError, "position 9"),
    (lambda: live_tower(SENTENCE, {1: 0.0}), ValueError, "p at position 1"),
    (lambda: live_tower(SENTENCE, [0.5]), TypeError, "probs"),
    (lambda: live_edge_cases(k=6), ValueError, "k", "0 to 5"),
    (lambda: live_edge_cases(k=True), ValueError, "k", "whole number"),
    (lambda: live_edge_cases(log10p=-13), ValueError, "log10p"),
    (lambda: live_edge_cases(log10p=-2.3), ValueError, "steps of 0.5"),
    (lambda: live_posterior("world"), TypeError, "ToyWorld"),
    (lambda: live_posterior(ToyWorld(), ["the", "___"]), TypeError, "sentence", "string"),
    (lambda: live_posterior(ToyWorld(), "the cat sat ."), ValueError, "no blank"),
    (lambda: live_posterior(ToyWorld(), "the small ___ meowed ."), ValueError, "'meowed'"),
    (lambda: live_posterior(ToyWorld(), "the ___ cat ."), ValueError, "impossible"),
    (lambda: live_posterior(ToyWorld(), "the ___ sat .", top=0), ValueError, "top"),
    (lambda: live_softmax([1.25, 2], ["a", "b"]), ValueError, "1.25", "steps of 0.1", "1.2"),
    (lambda: live_dial(0.5344), ValueError, "0.5344", "steps of 0.001", "0.534"),
    (lambda: live_neg_log(0.1234), ValueError, "steps of 0.001"),
    (lambda: live_tower(SENTENCE, {1: 0.4001}), ValueError, "position 1", "steps of 0.001"),
    (lambda: live_tower(SENTENCE, {1: 0.4}, mask_token=None), TypeError, "mask_token"),
]


@pytest.mark.parametrize(("call", "error", "words"), [(c, e, w) for c, e, *w in LIVE_BAD])
def test_bad_input_live_figures(refuses, call, error, words):
    refuses(call, error, *words)


def test_live_figure_settings_cannot_close_their_script_tag():
    fig = LiveFigure({"kind": "mask", "tokens": ["</script><b>"], "hidden": []}, Figure, "t")
    html = fig._repr_html_()
    assert "</script><b>" not in html.split("</script>", 1)[0]


def test_the_live_script_ships_with_the_package():
    """Colab installs mlmlib as a wheel: pyproject's package data must take every module."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = settings["package-data"]["mlmlib.widgets"]
    files = [p.relative_to(JS.parent).as_posix() for p in JS.rglob("*") if p.is_file()]
    assert files and set(MODULES) <= {PurePosixPath(f).name for f in files}
    for name in files:
        assert any(fnmatch.fnmatch(name, g) for g in globs), f"{name} is not package data"


# ------------------------------------------------------------- the committed outputs' script
# nbval blanks the script's body (tests/nbval_sanitize.cfg), so an edit to it fails no chapter;
# this test then keeps the committed outputs current: a reader who opens a notebook without
# running it gets the script that mlmlib has now.

SCRIPT = re.compile(r'<script data-mlm-script="([0-9a-f]*)">(.*?)</script>', re.S)
NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("editions/notebooks/*.ipynb")])


def _live_outputs(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    htmls = ["".join(o.get("data", {}).get("text/html", "")) for c in cells
             for o in c.get("outputs", [])]
    return [h for h in htmls if 'class="mlm-live"' in h]


LOADERS = {"stored_toy_model", "toy_model_ids"}  # read the stored model: no live output needed


def _uses_a_widget(text: str) -> bool:
    """True when a notebook imports from mlmlib.widgets anything but the stored model's
    loaders (a chapter may load the stored toy model without showing a live widget)."""
    names = re.findall(r"from mlmlib\.widgets(?:\.\w+)? import ([\w, ]+)", text)
    return any(name.strip() not in LOADERS for group in names for name in group.split(","))


def test_every_committed_live_output_carries_the_current_script():
    stale, found = [], {}
    for path in NOTEBOOKS:
        for html in _live_outputs(path):
            scripts = SCRIPT.findall(html)
            found[path] = found.get(path, 0) + 1
            if len(scripts) != 1 or scripts[0][0] != script_hash() or \
                    hashlib.sha256(scripts[0][1].encode()).hexdigest()[:16] != script_hash():
                stale.append(path.relative_to(ROOT).as_posix())
    assert not stale, (f"live outputs with another script than mlmlib's ({script_hash()}): "
                       f"{sorted(set(stale))}; run make live-chapters, then commit the chapters "
                       "and editions/")
    chapters = [p for p in ROOT.glob("notebooks/*.ipynb") if _uses_a_widget(p.read_text())]
    assert len(chapters) >= 8 and all(p in found for p in chapters), \
        f"a chapter that uses mlmlib.widgets has no live output: {set(chapters) - set(found)}"
    assert all(ROOT / "editions" / "notebooks" / p.name in found for p in chapters)
