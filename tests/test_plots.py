"""The figures draw the numbers they are given, take ax=None or axes, and refuse bad input."""

import base64
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from mlmlib import plots
from mlmlib.loss import softmax
from mlmlib.plots._common import _png
from mlmlib.scaling import PowerLaw


def test_softmax_stages_draws_the_probabilities():
    fig = plots.softmax_stages([1, 2, 0, 1], ["the", "cat", "mat", "sat"], truth="cat")
    heights = [b.get_height() for b in fig.axes[2].patches]
    assert np.allclose(heights, softmax([1, 2, 0, 1]))
    assert fig.axes[2].patches[1].get_hatch() == "//"  # the truth is marked by more than colour
    assert all(ax.get_ylabel() for ax in fig.axes)


def test_softmax_stages_on_given_axes_and_errors():
    fig = Figure()
    axes = fig.subplots(1, 3)
    assert plots.softmax_stages([1, 2], ["a", "b"], ax=axes) is fig
    with pytest.raises(ValueError, match="needs 3 axes"):
        plots.softmax_stages([1, 2], ["a", "b"], ax=axes[:2])
    with pytest.raises(ValueError, match="2 words but 3 scores"):
        plots.softmax_stages([1, 2, 3], ["a", "b"])
    with pytest.raises(ValueError, match="not among"):
        plots.softmax_stages([1, 2], ["a", "b"], truth="c")


def test_token_row():
    fig = plots.token_row(["the", "[MASK]", "sat"], highlight=[1], notes={1: "label: cat"})
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["the", "[MASK]", "label: cat", "sat"]
    with pytest.raises(ValueError, match="outside the 3-token row"):
        plots.token_row(["a", "b", "c"], highlight=[3])


def test_grouped_bars_neg_log_curve_and_tower():
    fig = plots.grouped_bars(["0", "1"], {"a": [0.5, 0.5], "b": [1.0, 0.0]},
                             errors={"a": [0.1, 0.1]}, ylabel="share")
    assert isinstance(fig, Figure) and len(fig.axes[0].patches) == 4
    with pytest.raises(ValueError, match="2 values for 3 categories"):
        plots.grouped_bars(["0", "1", "2"], {"a": [1, 2]})
    fig = plots.neg_log_curve({"p = 0.5": 0.5}, log_x=True)
    line = fig.axes[0].lines[0]
    assert np.allclose(line.get_ydata(), -np.log(line.get_xdata()))
    with pytest.raises(ValueError, match=r"must be a number in \(0, 1\]"):
        plots.neg_log_curve({"bad": 0.0})
    fig = plots.loss_tower({"slot 3": 0.9163, "slot 5": 1.6094})
    assert sum(p.get_height() for p in fig.axes[0].patches) == pytest.approx(2.5257)
    with pytest.raises(ValueError, match=r"the loss 'x' must be a finite number, not negative"):
        plots.loss_tower({"x": -1.0})


def test_walkthrough_figures():
    fig = plots.reads_and_answers(["the", "fat", "cat", "sat"], [2])
    top, bottom = fig.axes
    assert [t.get_text() for t in top.texts] == ["the", "fat", "?", "sat"]
    assert "cat" in [t.get_text() for t in bottom.texts]
    with pytest.raises(ValueError, match="cannot mask position 9 in a 4-token sentence"):
        plots.reads_and_answers(["a", "b", "c", "d"], [9])
    fig = plots.probability_dial(0.25, "P(cat)")
    assert "P(cat) = 0.2500" in [t.get_text() for t in fig.axes[0].texts]
    with pytest.raises(ValueError, match=r"must be a number in \[0, 1\]"):
        plots.probability_dial(1.5)
    fig = plots.slots_and_tower({"a": 0.5, "b": 0.25})
    assert len(fig.axes) == 3
    tower = fig.axes[-1]
    assert sum(p.get_height() for p in tower.patches) == pytest.approx(-np.log(0.125))
    fig = plots.edge_cases()
    assert len(fig.axes) == 4
    fig = plots.pipeline()
    labels = " ".join(t.get_text() for t in fig.axes[0].texts)
    for name in ("mask_tokens", "softmax", "slot_loss", "mlm_loss"):
        assert name in labels


def test_training_figures():
    history = [{"step": 10, "eval_loss": 3.0}, {"step": 20, "eval_loss": 2.5}]
    fig = plots.training_curve(history, {"floor": 2.0, "uniform": 5.0})
    assert list(fig.axes[0].lines[0].get_ydata()) == [3.0, 2.5]
    assert len(fig.axes[0].lines) == 3
    with pytest.raises(ValueError, match="history is empty"):
        plots.training_curve([])
    fig = plots.attention_bars(["[CLS]", "the", "[MASK]"], [0.2, 0.5, 0.3], query=2)
    assert [p.get_height() for p in fig.axes[0].patches] == [0.2, 0.5, 0.3]


def test_lines_with_spread_draws_means_and_bands():
    fig = plots.lines_with_spread([1, 2, 3], {"a": ([1, 2, 3], [0.5, 1.5, 2.5], [1.5, 2.5, 3.5]),
                                              "exact": ([3, 2, 1], [3, 2, 1], [3, 2, 1])},
                                  xlabel="x", ylabel="y", lines={"log |V|": 2.5})
    ax = fig.axes[0]
    assert [list(line.get_ydata()) for line in ax.lines[:2]] == [[1, 2, 3], [3, 2, 1]]
    assert len(ax.collections) == 1  # a band only where there is a spread
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y"
    with pytest.raises(ValueError, match="needs 3 means"):
        plots.lines_with_spread([1, 2, 3], {"a": ([1, 2], [1, 2], [1, 2])})


def test_lines_with_spread_skips_a_series_and_keeps_the_others_colours():
    series = {"far": ([9, 9], [9, 9], [9, 9]), "a": ([1, 2], [1, 2], [1, 2]),
              "b": ([2, 1], [2, 1], [2, 1])}
    full = plots.lines_with_spread([1, 2], series).axes[0]
    close = plots.lines_with_spread([1, 2], series, skip=["far"]).axes[0]
    assert [line.get_label() for line in close.lines] == ["a", "b"]
    assert [line.get_color() for line in close.lines] == [line.get_color()
                                                          for line in full.lines[1:]]
    assert "far" not in [t.get_text() for t in close.get_legend().get_texts()]
    for skip in (["nope"], ["far", "a", "b"]):
        with pytest.raises(ValueError, match="skip must name some of the series"):
            plots.lines_with_spread([1, 2], series, skip=skip)


def test_reliability_diagram_and_joint_tables():
    fig = plots.reliability_diagram([0.01, 0.1, 0.5], [0.02, 0.1, 0.4], [100, 10, 1])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert np.allclose(ax.collections[0].get_offsets(), [[0.01, 0.02], [0.1, 0.1], [0.5, 0.4]])
    with pytest.raises(ValueError, match="one value per bin"):
        plots.reliability_diagram([0.1], [0.1, 0.2], [1])
    joint = np.array([[0.3, 0.0], [0.1, 0.6]])
    product = joint.sum(1)[:, None] * joint.sum(0)[None, :]
    fig = plots.joint_and_product(["a", "b"], ["x", "y"], joint, product)
    assert len(fig.axes) == 3  # two tables and their shared colour bar
    assert [t.get_text() for t in fig.axes[0].texts] == ["0.300", "0.000", "0.100", "0.600"]
    with pytest.raises(ValueError, match="2 x 2"):
        plots.joint_and_product(["a", "b"], ["x", "y"], joint[:1], product)


# ---------------------------------------------------------------------- alt text
# Every figure says what it shows, with its numbers: each number in its alt text must be one of
# the data passed in (the numbers in its labels included) or one that mlmlib computed from them,
# after rounding to the digits the text shows.

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
S = ["the", "fat", "cat", "sat", "on", "the", "mat"]
W = ["the", "cat", "mat", "sat"]
RNG = np.random.default_rng(0)
A = RNG.normal(size=(5, 3))
B = RNG.normal(size=(5, 2))
AGREE = RNG.normal(size=12)
STEPS, FLOOR = [100, 200, 300], 1.9
RUNS = {"full": [[2.6, 2.1, 1.95], [2.5, 2.2, 1.97]], "one head": [[2.9, 2.5, 2.3]]}
SEEDS = {"full": [0.012, 0.015, 0.011], "untied": [0.05, 0.041]}
JOINT = np.array([[0.3, 0.05], [0.1, 0.55]])
PRODUCT = JOINT.sum(1)[:, None] * JOINT.sum(0)[None, :]
ATTENTION = np.array([[0.6, 0.3, 0.1], [0.25, 0.7, 0.05], [0.2, 0.3, 0.5]])
SCALE_SIZES, SCALE_FLOOR = [1e3, 4e3, 1.6e4], 2.125
SCALE_RUNS = [[2.625, 2.65, 2.6], [2.3, 2.325, 2.31], [2.2, 2.21, 2.19]]
SCALE_FITS = {"E fixed to the floor": PowerLaw(2.125, 300.0, 0.9, False, 0.01),
              "E fitted": PowerLaw(2.15, 900.0, 1.1, True, 0.005),
              "E fitted, lower": PowerLaw(2.1, 13.5, 0.7, True, 0.02)}  # below 2.125 from 8000
HISTORY = [{"step": 50, "eval_loss": 3.125}, {"step": 100, "eval_loss": 2.25},
           {"step": 150, "eval_loss": 2.375}]


def _neg_log(values):
    return [0.0 - math.log(v) for v in values]


def _gelu(values):
    return torch.nn.functional.gelu(torch.tensor(values, dtype=torch.float64)).tolist()


# name -> (arguments, what mlmlib computes from them), for ``plots.<name>(*args, **kwargs)``
ALT_CASES = {
    "token_row": ((S,), {"highlight": [1], "notes": {1: "label: cat"}, "covered": [4],
                         "title": "M = {5}"}, [len(S), 2]),
    "reads_and_answers": ((S, [2, 4]), {}, [len(S), 3, 5]),
    "probability_dial": ((0.3125, "P(cat)"), {}, []),
    "softmax_stages": (([1, 2, 0, 1], W), {"truth": "cat"},
                       [*softmax([1, 2, 0, 1]).tolist(), *np.exp([1, 2, 0, 1]),
                        np.exp([1, 2, 0, 1]).sum(), len(W)]),
    "neg_log_curve": (({"A": 0.5344, "slot 5": 0.2},), {"log_x": True, "p_min": 0.01},
                      _neg_log([0.5344, 0.2])),
    "loss_tower": (({"slot 3": 0.9163, "NSP": 1.6094},), {"title": "step 6"},
                   [2, 0.9163 + 1.6094]),
    "slots_and_tower": (({"P(cat)": 0.5, "P(mat)": 0.25},), {},
                        [2, *_neg_log([0.5, 0.25]), sum(_neg_log([0.5, 0.25]))]),
    "edge_cases": ((), {}, None),  # no data passed in: the numbers it draws
    "pipeline": ((), {}, list(range(1, len(plots.PIPELINE) + 1))),
    "grouped_bars": ((["0", "1", "2"], {"expected": [1.5, 2.25, 3.0],
                                        "measured": [1.4, 2.3, 2.9]}),
                     {"errors": {"expected": [0.1, 0.2, 0.3]}, "ylabel": "tokens",
                      "xlabel": "k"}, [3, 2]),
    "hidden_chain": ((["det_s", "animal", "end"], ["the", "cat", "."], [0.3, 1.0],
                      [0.34, 0.25, 1.0]), {}, [3]),
    "top_words": ((["cat", "dog", "mat"], [0.61, 0.25, 0.0625]),
                  {"truth": "cat", "title": "the small ___ barked ."}, [3]),
    "training_curve": ((HISTORY, {"floor": 1.875, "uniform": 5.25}), {}, [len(HISTORY)]),
    "learning_rate_curve": (([0.5, 1.0, 0.75, 0.5, 0.25],), {"warmup": 2}, [1, 5]),
    "train_and_held_out": (([0, 10, 20], [5.25, 3.5, 1.25], [5.5, 4.75, 5.0]),
                           {"lines": {"log |V|": 5.375}}, [3]),
    "attention_bars": ((["[CLS]", "the", "[MASK]", "sat", "[SEP]"],
                        [0.125, 0.5, 0.25, 0.0625, 0.0625]), {"query": 2}, [5, 5 - 3]),
    "lines_with_spread": (([0.1, 0.2, 0.4], {"trained": ([2.5, 2.25, 2.125], [2.4, 2.2, 2.1],
                                                         [2.6, 2.3, 2.2]),
                                             "exact": ([2.0, 1.5, 1.25],) * 3}),
                          {"xlabel": "rate", "ylabel": "loss", "log_x": True,
                           "lines": {"log |V|": 5.3}}, [2]),
    "reliability_diagram": (([0.01, 0.1, 0.5, None], [0.02, 0.1, 0.4, None], [100, 10, 1, 0]),
                            {"title": "seed 0"}, [3]),
    "joint_and_product": ((["a", "b"], ["x", "y"], JOINT, PRODUCT),
                          {"row_label": "noun", "col_label": "verb"},
                          [2, JOINT.sum(), PRODUCT.sum()]),
    "heat_panels": (({"word": A, "sum": B}, S[:5]), {"annotate": 2, "title": "block 0"},
                    [2, 5, 3, 2]),
    "attention_map": ((ATTENTION, ["the", "cat", "[PAD]"]),
                      {"query": 1, "keep": [1, 1, 0], "title": "head 0"}, [3, 1]),
    "gelu_curve": (([-3.5, 0.25, 4.0],), {}, [3, *_gelu([-3.5, 0.25, 4.0])]),
    "agreement": ((AGREE, AGREE + 1e-7), {"also": {"64-bit": AGREE + 1e-15}},
                  [AGREE.size, *[np.abs(AGREE - (AGREE + d)).max() for d in (1e-7, 1e-15)]]),
    "excess_curves": ((STEPS, RUNS, FLOOR), {"lines": {"unigram": 1.5}},
                      [len(RUNS), *[np.subtract(c, FLOOR).mean(0) for c in RUNS.values()],
                       *[np.subtract(c, FLOOR) for c in RUNS.values()]]),
    "seed_dots": ((SEEDS,), {"xlabel": "excess (nats)", "log_x": True,
                             "lines": {"unigram": 1.5}},
                  [len(SEEDS), *[len(v) for v in SEEDS.values()],
                   *[np.mean(v) for v in SEEDS.values()]]),
    "power_law_fits": ((SCALE_SIZES, SCALE_RUNS, SCALE_FLOOR, SCALE_FITS),
                       {"xlabel": "parameters", "title": "3 seeds"},
                       [len(SCALE_FITS), *np.subtract(SCALE_RUNS, SCALE_FLOOR).mean(1),
                        *[v for f in SCALE_FITS.values() for v in (f.alpha, f.E, f.E - SCALE_FLOOR,
                                                                   SCALE_FLOOR - f.E)],
                        (13.5 / (SCALE_FLOOR - 2.1)) ** (1 / 0.7)]),
}


def _numbers_in(*things) -> list[float]:
    """Every number in ``things``: numbers, arrays, tensors, dicts, and the digits of labels."""
    out = []
    for thing in things:
        thing = thing.tolist() if hasattr(thing, "tolist") else thing
        if isinstance(thing, str):
            out += [float(m) for m in NUMBER.findall(thing)]
        elif isinstance(thing, dict):
            out += _numbers_in(*thing.keys(), *thing.values())
        elif isinstance(thing, list | tuple):
            out += _numbers_in(*thing)
        elif isinstance(thing, int | float) and not isinstance(thing, bool):
            out.append(float(thing))
    return out


def _rounds_to(shown: str, value: float) -> bool:
    mantissa, _, exponent = shown.partition("e")
    digits = len(mantissa.partition(".")[2]) - int(exponent or 0)
    return abs(value - float(shown)) <= 0.5 * 10.0 ** -digits * 1.001 + 1e-300


def _drawn(fig) -> list[float]:
    """The numbers a figure draws: its lines' points and its bars' heights."""
    out = []
    for ax in fig.axes:
        out += [v for line in ax.lines for v in [*line.get_xdata(), *line.get_ydata()]]
        out += [p.get_height() for p in ax.patches if hasattr(p, "get_height")]
    return [float(v) for v in out]


@pytest.mark.parametrize("name", list(ALT_CASES))
def test_every_figure_says_what_it_shows_with_its_numbers(name):
    args, kwargs, computed = ALT_CASES[name]
    fig = getattr(plots, name)(*args, **kwargs)
    alt = plots.alt_text(fig)
    assert isinstance(alt, str) and len(alt) > 40, alt
    if computed is None:  # no data passed in: what it drew, and the total of its tower
        known = [*_drawn(fig), sum(p.get_height() for p in fig.axes[3].patches)]
    else:
        known = _numbers_in(args, kwargs, computed)
    found = NUMBER.findall(alt)
    assert found, f"{name}: no number in {alt!r}"
    for shown in found:
        assert any(_rounds_to(shown, v) for v in known), f"{name}: {shown} in {alt!r} is not " \
            "a number of the data (nor one computed from it)"
    assert plots.png_alt(_png(fig)) == alt  # what IPython shows carries it
    assert plots.png_alt(base64.b64decode(_png(fig))) == alt  # raw bytes too


def test_every_public_plotting_function_has_an_alt_text_case():
    figures = {name for name in plots.__all__ if callable(getattr(plots, name))
               and getattr(plots, name).__annotations__.get("return") in ("Figure", Figure)}
    assert figures == set(ALT_CASES)


def test_functions_that_share_a_figure_join_their_texts():
    fig = Figure()
    left, right = fig.subplots(1, 2)
    plots.top_words(["cat", "dog"], [0.75, 0.125], truth="cat", title="mini BERT", ax=left)
    plots.top_words(["cat", "dog"], [0.5, 0.25], truth="cat", title="exact", ax=right)
    alt = plots.alt_text(fig)
    assert alt.index("'mini BERT'") < alt.index("'exact'") and "0.750" in alt and "0.250" in alt
    plots.top_words(["cow"], [0.875], title="again", ax=right)  # drawn over: replaces its text
    assert "'exact'" not in plots.alt_text(fig) and "0.875" in plots.alt_text(fig)
    whole = plots.slots_and_tower({"P(cat)": 0.5})  # its parts' own texts give way to its own
    assert plots.alt_text(whole).count("P(cat) = 0.5000") == 1
    assert "dial" in plots.alt_text(whole) and "One bar" not in plots.alt_text(whole)
    assert plots.alt_text(Figure()) is None


def test_an_alt_text_outside_latin_1_travels_in_an_itxt_chunk():
    fig = plots.token_row(["naïve", "→", "ω"], highlight=[1])
    assert "→" in plots.alt_text(fig)
    assert plots.png_alt(_png(fig)) == plots.alt_text(fig)


NOTEBOOK = """
import base64, io, json
import matplotlib.image
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.pylabtools import print_figure
shell = InteractiveShell.instance()
from mlmlib import plots  # registers the course's PNG formatter, inside IPython only
fig = plots.softmax_stages([1, 2, 0, 1], ["the", "cat", "mat", "sat"], truth="cat")
data, _ = shell.display_formatter.format(fig)
plain = print_figure(fig, "png", bbox_inches="tight")  # what set_matplotlib_formats("png") shows
ours = base64.b64decode(data["image/png"])
same = (matplotlib.image.imread(io.BytesIO(ours)) == matplotlib.image.imread(io.BytesIO(plain)))
print(json.dumps({"alt": plots.png_alt(data["image/png"]), "expected": plots.alt_text(fig),
                  "plain": plots.png_alt(plain), "same_pixels": bool(same.all()),
                  "formats": sorted(k for k, v in data.items() if v)}))
"""


@pytest.mark.slow
def test_a_notebook_shows_the_figure_as_a_png_that_carries_its_alt_text():
    """In IPython, a returned figure becomes a PNG with the same pixels as before, plus the alt
    text in its Description chunk (a fresh process: the formatter is registered on import)."""
    out = subprocess.run([sys.executable, "-c", NOTEBOOK], capture_output=True, text=True,
                         check=True, timeout=300)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["alt"] == got["expected"] and got["alt"].startswith("Three bar charts")
    assert got["plain"] is None  # the chunk is ours
    assert got["same_pixels"]
    assert "image/png" in got["formats"]
