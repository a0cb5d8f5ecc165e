"""mlmlib.plots - the course's figures, drawn from numbers the chapters compute.

Does: draw each picture of the course with matplotlib's object API (no global pyplot state),
so a figure appears once in a notebook and renders the same on the static site. Every
function takes ``ax=None`` (make a new figure) or the axes to draw on, and returns the figure.
Colours come from the Okabe-Ito palette, which stays distinguishable for colour-blind
readers, and the true word is marked by a hatch as well as by colour.

Does not: compute anything the loss depends on - it calls :mod:`mlmlib.loss` for that - and
it is never imported by the core modules.

>>> from mlmlib.plots import softmax_stages
>>> fig = softmax_stages([1, 2, 0, 1], ["the", "cat", "sat", "mat"], truth="cat")
>>> fig.axes[0].get_title(loc="left")
'1. raw scores $s_v$'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from mlmlib.loss import softmax

# Okabe & Ito (2008), "Color Universal Design": safe for the common colour-vision deficiencies.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
}


def _show_in_notebooks() -> None:
    """Let IPython draw a returned figure as a PNG.

    pyplot would register this on its first figure; the course's figures avoid pyplot's global
    state (so each appears exactly once), so register it here, and only inside IPython.
    """
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # plain Python: nothing to display on
        return
    if get_ipython() is not None:
        set_matplotlib_formats("png")


_show_in_notebooks()

TRUTH_COLOUR = OKABE_ITO["vermillion"]
OTHER_COLOUR = OKABE_ITO["blue"]
FONT_SIZE = 12  # large enough to stay readable when a phone shrinks the figure


def _axes(ax, count: int, size: tuple[float, float]):
    """The axes to draw on: new ones stacked vertically (phone-friendly), or the caller's."""
    if ax is None:
        fig = Figure(figsize=size, layout="constrained")
        axes = fig.subplots(count, 1, sharex=True, squeeze=False)[:, 0]
        return fig, list(axes)
    axes = list(np.atleast_1d(ax))
    if len(axes) != count:
        raise ValueError(f"this figure needs {count} axes, got {len(axes)}")
    return axes[0].figure, axes


def _bars(ax, words, values, truth_index, fmt, ylabel):
    colours = [TRUTH_COLOUR if i == truth_index else OTHER_COLOUR for i in range(len(words))]
    bars = ax.bar(words, values, color=colours, edgecolor="black", linewidth=0.6)
    if truth_index is not None:
        bars[truth_index].set_hatch("//")
    ax.bar_label(bars, labels=[fmt.format(v) for v in values], fontsize=FONT_SIZE - 1,
                 padding=2)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel(ylabel, fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE)
    low, high = min(0.0, float(np.min(values))), max(0.0, float(np.max(values)))
    pad = 0.25 * (high - low or 1.0)
    ax.set_ylim(low - (pad if low < 0 else 0), high + pad)
    ax.spines[["top", "right"]].set_visible(False)


def softmax_stages(scores: Sequence[float], words: Sequence[str], truth: str | None = None,
                   ax=None) -> Figure:
    """Three stacked bar charts: raw scores -> exp(score) -> probability, truth highlighted.

    Args:
        scores: one raw score per word (any real numbers).
        words: the vocabulary, in the order of ``scores``.
        truth: the true word, drawn hatched in vermillion; None highlights nothing.
        ax: three axes to draw on, or None for a new figure.
    """
    scores = np.asarray(scores, dtype=float)
    if len(words) != len(scores):
        raise ValueError(f"{len(words)} words but {len(scores)} scores")
    if truth is not None and truth not in words:
        raise ValueError(f"the true word {truth!r} is not among {list(words)}")
    truth_index = None if truth is None else list(words).index(truth)
    fig, (a1, a2, a3) = _axes(ax, 3, (5.6, 7.0))
    weights = np.exp(scores)  # the figure is for teaching-sized scores; softmax() is the stable one
    probs = softmax(scores)
    _bars(a1, words, scores, truth_index, "{:g}", "score")
    _bars(a2, words, weights, truth_index, "{:.4f}", "exp(score)")
    _bars(a3, words, probs, truth_index, "{:.4f}", "probability")
    a1.set_title("1. raw scores $s_v$", fontsize=FONT_SIZE, loc="left")
    a2.set_title(f"2. exponentiate: every weight positive (total Z = {weights.sum():.4f})",
                 fontsize=FONT_SIZE, loc="left")
    a3.set_title("3. divide by Z: probabilities that sum to 1", fontsize=FONT_SIZE, loc="left")
    a3.set_xlabel("word $v$ of the vocabulary" + ("" if truth is None else
                  f"  (hatched: the true word, {truth!r})"), fontsize=FONT_SIZE)
    return fig
