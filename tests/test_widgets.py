"""Drive the widgets as a reader would: change a control, check the figure followed."""

import numpy as np

from mlmlib.loss import softmax
from mlmlib.widgets import mask_picker, neg_log_slider, slot_sliders, softmax_sliders


def test_softmax_sliders_redraw_the_bars():
    w = softmax_sliders([1, 2, 0, 1], ["the", "cat", "mat", "sat"], truth="cat")
    first = w.figure
    assert np.allclose([b.get_height() for b in first.axes[2].patches], softmax([1, 2, 0, 1]))
    w.controls[2].value = 4.0  # "mat"
    assert w.figure is not first
    assert np.allclose([b.get_height() for b in w.figure.axes[2].patches],
                       softmax([1, 2, 4, 1]))
    assert "softmax explorer" in repr(w) and "model_id" not in repr(w)


def test_neg_log_slider_moves_the_point():
    w = neg_log_slider(0.5)
    w.controls[0].value = 0.25
    x, y = w.figure.axes[0].lines[-1].get_data()
    assert np.isclose(x[0], 0.25) and np.isclose(y[0], -np.log(0.25))


def test_slot_sliders_restack_the_tower():
    w = slot_sliders({"P(sat)": 0.4, "P(the)": 0.2})
    tower = w.figure.axes[-1]
    assert np.isclose(sum(p.get_height() for p in tower.patches), -np.log(0.08))
    w.controls[1].value = 1.0
    tower = w.figure.axes[-1]
    assert np.isclose(sum(p.get_height() for p in tower.patches), -np.log(0.4))


def test_mask_picker_updates_m():
    w = mask_picker(["the", "cat", "sat"])
    assert w.figure.texts[0].get_text() == "M = {} (empty)"
    w.controls[1].value = True
    assert w.figure.texts[0].get_text() == "M = {2}"
    reads = [t.get_text() for t in w.figure.axes[0].texts]
    assert reads == ["the", "?", "sat"]
    w.controls[2].value = True
    assert w.figure.texts[0].get_text() == "M = {2, 3}"


# ----------------------------------------------------------------------------- live figures
# (tests/test_site.py moves their controls in Chromium and compares the numbers with mlmlib)

import json  # noqa: E402
import re  # noqa: E402

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from mlmlib.toyworld import ToyWorld  # noqa: E402
from mlmlib.widgets import (  # noqa: E402
    LiveFigure,
    live_dial,
    live_edge_cases,
    live_mask,
    live_neg_log,
    live_posterior,
    live_softmax,
    live_tower,
)

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
    assert html.count("<script>") == 1 and "window.mlmLive" in html
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")  # nothing to fetch
    assert "https://" not in html
    assert "its controls work in a browser" in repr(fig)


def test_live_figures_carry_what_the_page_needs():
    assert live_softmax([1, 2], ["a", "b"]).config["scores"] == [1.0, 2.0]
    assert live_softmax(np.array([0.1, 0.7]) * 3, ["a", "b"]).config["scores"] == [0.3, 2.1]
    assert live_dial(0.1 + 0.2).config["p"] == 0.3  # on the steps, up to float noise
    assert live_tower(SENTENCE, {6: 0.7, 1: 0.4}).config["probs"] == {1: 0.4, 6: 0.7}
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


def test_the_live_script_is_inlined_once_per_figure_and_mounts_every_figure():
    html = live_dial(0.5)._repr_html_()
    script = html.split("<script>", 1)[1]
    assert "if (window.mlmLive) { window.mlmLive.mountAll(); return; }" in script
    assert ".mlm-live:not([data-mounted])" in script


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
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    settings = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "live.js" in settings["package-data"]["mlmlib.widgets"]  # Colab installs a wheel
    assert (root / "mlmlib" / "widgets" / "live.js").is_file()
