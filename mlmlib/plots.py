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
from matplotlib.patches import FancyBboxPatch

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


def _single_axes(ax, size: tuple[float, float]):
    if ax is None:
        fig = Figure(figsize=size, layout="constrained")
        return fig, fig.subplots()
    return ax.figure, ax


def token_row(tokens: Sequence[str], highlight: Sequence[int] = (),
              notes: dict[int, str] | None = None, title: str | None = None, ax=None) -> Figure:
    """A sentence as a row of boxes; highlighted boxes hatched in vermillion, notes beneath.

    Args:
        tokens: the words to draw, left to right.
        highlight: positions (from 0) to mark, e.g. the masked or corrupted ones.
        notes: text to write under a box, e.g. ``{1: "label: cat"}``.
        title: a line above the row.
    """
    notes = notes or {}
    for i in [*highlight, *notes]:
        if not 0 <= i < len(tokens):
            raise ValueError(f"position {i} is outside the {len(tokens)}-token row")
    fig, ax = _single_axes(ax, (max(4.0, 1.05 * len(tokens)), 1.9 if notes else 1.4))
    for i, tok in enumerate(tokens):
        marked = i in highlight
        ax.add_patch(_box(i, marked))
        ax.text(i + 0.5, 0.5, tok, ha="center", va="center", fontsize=FONT_SIZE,
                fontweight="bold" if marked else "normal")
        if i in notes:
            ax.text(i + 0.5, -0.35, notes[i], ha="center", va="center", fontsize=FONT_SIZE - 1,
                    color=TRUTH_COLOUR)
    ax.set_xlim(-0.1, len(tokens) + 0.1)
    ax.set_ylim(-0.6 if notes else -0.1, 1.1)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=FONT_SIZE, loc="left")
    return fig


def _box(i: int, marked: bool) -> FancyBboxPatch:
    return FancyBboxPatch((i + 0.06, 0.06), 0.88, 0.88, boxstyle="round,pad=0.02",
                          facecolor="#FBE3D6" if marked else "#E8F1F8",
                          edgecolor=TRUTH_COLOUR if marked else OTHER_COLOUR,
                          hatch="//" if marked else None, linewidth=1.6 if marked else 1.0)


def grouped_bars(categories: Sequence[str], series: dict[str, Sequence[float]],
                 errors: dict[str, Sequence[float]] | None = None, ylabel: str = "",
                 xlabel: str = "", title: str | None = None, ax=None) -> Figure:
    """Bars for several series side by side per category, with optional error bars.

    Used for the three ways of choosing M (worked example 4) and for expected against
    measured counts (worked example 7).
    """
    errors = errors or {}
    colours = [OKABE_ITO[c] for c in ("blue", "orange", "green", "purple", "sky")]
    hatches = [None, "//", "..", "xx", "\\\\"]
    fig, ax = _single_axes(ax, (6.0, 3.6))
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(categories))
    for j, (name, values) in enumerate(series.items()):
        if len(values) != len(categories):
            raise ValueError(f"series {name!r} has {len(values)} values for "
                             f"{len(categories)} categories")
        ax.bar(x + (j - (len(series) - 1) / 2) * width, values, width, label=name,
               color=colours[j % 5], hatch=hatches[j % 5], edgecolor="black", linewidth=0.6,
               yerr=errors.get(name), capsize=4 if name in errors else 0)
    ax.set_xticks(x, list(categories), fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE)
    ax.set_ylabel(ylabel, fontsize=FONT_SIZE)
    ax.set_xlabel(xlabel, fontsize=FONT_SIZE)
    ax.legend(fontsize=FONT_SIZE - 1, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(title, fontsize=FONT_SIZE, loc="left")
    return fig


def neg_log_curve(points: dict[str, float] | None = None, log_x: bool = False,
                  p_min: float = 1e-3, ax=None) -> Figure:
    """The curve ``y = -log p`` for ``p`` in ``(0, 1]``, with named points marked on it.

    Args:
        points: ``{label: p}``; each is drawn at ``(p, -log p)`` and labelled.
        log_x: put ``p`` on a logarithmic axis, so tiny probabilities (1/30000) are visible.
        p_min: the left end of the curve.
    """
    points = points or {}
    for name, p in points.items():
        if not 0 < p <= 1:
            raise ValueError(f"point {name!r}: p must lie in (0, 1], got {p}")
    fig, ax = _single_axes(ax, (6.0, 4.0))
    low = min([p_min, *points.values()])
    p = np.geomspace(low, 1, 400) if log_x else np.linspace(low, 1, 400)
    ax.plot(p, -np.log(p), color=OTHER_COLOUR, linewidth=2.2, label=r"$-\log p$")
    for k, (name, value) in enumerate(points.items()):
        y = 0.0 - np.log(value)  # 0.0 - x: -log 1 shows as 0, not -0
        ax.plot(value, y, "o", color=TRUTH_COLOUR, markersize=7, zorder=3)
        right_edge = value > 0.5  # keep labels of points near p = 1 inside the axes
        ax.annotate(f"{name}\n$-\\log p$ = {y:.4f}", (value, y), textcoords="offset points",
                    xytext=(-10 if right_edge else 10, 10 + 14 * (k % 2)),
                    ha="right" if right_edge else "left", fontsize=FONT_SIZE - 2)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("p, the probability given to the true word", fontsize=FONT_SIZE)
    ax.set_ylabel("loss  $-\\log p$", fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE)
    ax.set_ylim(bottom=0)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def loss_tower(parts: dict[str, float], title: str | None = None, ax=None) -> Figure:
    """One stacked bar: each part (a masked slot, or NSP) a block, the total on top."""
    if not parts:
        raise ValueError("loss_tower needs at least one part")
    if any(v < 0 for v in parts.values()):
        raise ValueError("a loss cannot be negative")
    colours = [OKABE_ITO[c] for c in ("blue", "orange", "green", "purple", "sky", "yellow")]
    hatches = [None, "//", "..", "xx", "\\\\", "--"]
    fig, ax = _single_axes(ax, (4.2, 4.6))
    bottom = 0.0
    for k, (name, value) in enumerate(parts.items()):
        ax.bar(0, value, 0.6, bottom=bottom, color=colours[k % 6], hatch=hatches[k % 6],
               edgecolor="black", linewidth=0.6)
        ax.text(0.36, bottom + value / 2, f"{name}: {value:.4f}", va="center",
                fontsize=FONT_SIZE - 1)
        bottom += value
    ax.text(0, bottom * 1.02, f"total {bottom:.4f}", ha="center", va="bottom",
            fontsize=FONT_SIZE, fontweight="bold")
    ax.set_xlim(-0.5, 1.9)
    ax.set_ylim(0, bottom * 1.15)
    ax.set_xticks([])
    ax.set_ylabel("loss (sum of $-\\log p$)", fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE)
    ax.spines[["top", "right", "bottom"]].set_visible(False)
    if title:
        ax.set_title(title, fontsize=FONT_SIZE, loc="left")
    return fig
