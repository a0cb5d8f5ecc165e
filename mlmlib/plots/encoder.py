"""mlmlib.plots.encoder - the figures of the encoder chapter (encoder_inside): h_i opened up.

Does: draw matrices of numbers as heat maps with a colour bar, one panel per matrix, tokens
across and dimensions down (embeddings, queries, keys, values, a layer's output), the numbers
written out in one chosen column only (so that they stay readable on a phone); one head's
attention weights as a query-by-key grid with the padding marked and the chosen query's row
written out; the GELU curve with the values that went through it; a check that two
computations of the same scores agree (one point per score on the diagonal, next to the size
of each difference on a logarithmic axis); a measurement repeated over seeds as one dot per
seed for each variant of the model; and training curves as the distance above a floor, on a
logarithmic axis. As everywhere in :mod:`mlmlib.plots`, each function takes
``ax=None`` and returns the figure; heat maps use colour maps that stay readable for
colour-blind readers (``PuOr``, ``cividis``).

Does not: compute the forward pass (:mod:`mlmlib.byhand` and :mod:`mlmlib.model` do) or train
anything; the chapter passes in the numbers.

>>> fig = attention_map([[0.5, 0.5], [0.2, 0.8]], ["the", "cat"], query=1)
>>> fig.axes[0].get_xlabel()
'key (the token read)'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from mlmlib._checks import indices, items, mapping, numbers
from mlmlib.plots._common import (
    FONT_SIZE,
    OKABE_ITO,
    OTHER_COLOUR,
    TRUTH_COLOUR,
    _alt,
    _fmt,
    _given_axes,
    _listing,
    _plain,
    _single_axes,
    _titled,
)

_COLOURS = [OKABE_ITO[c] for c in ("blue", "vermillion", "green", "orange", "purple", "sky")]


def _annotate(ax, table: np.ndarray, colour_of, rows=None, columns=None) -> None:
    """Write the numbers of ``table`` in their cells: only ``rows`` / ``columns`` when given."""
    for (r, c), value in np.ndenumerate(table):
        if (rows is None or r in rows) and (columns is None or c in columns):
            ax.text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=FONT_SIZE - 2,
                    color=colour_of(value))


def heat_panels(panels: dict[str, Sequence], tokens: Sequence[str], title: str | None = None,
                shared: bool = True, annotate: int | None = None, ax=None) -> Figure:
    """One heat map per ``(T, d)`` matrix: tokens across, dimensions down, with a colour bar.

    Args:
        panels: ``name -> matrix`` with one row per token (all with as many rows as
            ``tokens``; widths may differ).
        shared: one colour scale for every panel (compare them), else one each.
        annotate: the position of one token whose numbers are written in its cells (the
            others are colour only, so that the numbers stay legible on a small screen).
        title: written above the first panel.

    Purple is negative and orange positive (the reversed ``PuOr`` map), white is zero.
    """
    panels = mapping(panels, "panels", "name -> (T, d) matrix")
    tokens = items(tokens, "tokens", "words", empty=False)
    columns = None if annotate is None else indices([annotate], "annotate", len(tokens))
    for name, table in panels.items():
        table = numbers(table, f"panel {name!r}", ndim=2)
        if table.shape[0] != len(tokens):
            raise ValueError(f"panel {name!r} has {table.shape[0]} rows but there are "
                             f"{len(tokens)} tokens")
        panels[name] = table.T  # (d, T): dimensions down, tokens across
    top = max(float(np.abs(t).max()) for t in panels.values()) or 1.0
    heights = [t.shape[0] for t in panels.values()]
    if ax is None:  # new panels, stacked (phone-friendly), each as tall as its rows
        fig = Figure(figsize=(max(5.0, 0.75 * len(tokens) + 1.6),
                              0.42 * sum(heights) + 0.9 * len(panels)), layout="constrained")
        axes = list(fig.subplots(len(panels), 1, sharex=True, squeeze=False,
                                 gridspec_kw={"height_ratios": heights})[:, 0])
    else:
        axes = _given_axes(ax, len(panels))
        fig = axes[0].figure
    for a, (name, table) in zip(axes, panels.items(), strict=True):
        scale = top if shared else (float(np.abs(table).max()) or 1.0)
        image = a.imshow(table, cmap="PuOr_r", vmin=-scale, vmax=scale, aspect="auto")
        if columns is not None:
            _annotate(a, table, lambda v, s=scale: "white" if abs(v) > 0.6 * s else "black",
                      columns=columns)
        if not shared or a is axes[-1]:
            bar = fig.colorbar(image, ax=a if not shared else axes, shrink=0.9, pad=0.02)
            bar.set_label("purple < 0 < orange", fontsize=FONT_SIZE - 2)
            bar.ax.tick_params(labelsize=FONT_SIZE - 2)
        a.set_yticks(range(table.shape[0]), [str(k) for k in range(table.shape[0])],
                     fontsize=FONT_SIZE - 2)
        a.set_ylabel(name, fontsize=FONT_SIZE - 1, rotation=0, ha="right", va="center")
        a.tick_params(length=0)
    axes[-1].set_xticks(range(len(tokens)), list(tokens), rotation=45, ha="right",
                        fontsize=FONT_SIZE - 1)
    axes[-1].set_xlabel("token (position 0, 1, ...)", fontsize=FONT_SIZE - 1)
    if title:
        axes[0].set_title(title, fontsize=FONT_SIZE, loc="left")
    widths = sorted({t.shape[0] for t in panels.values()})
    values = np.concatenate([t.ravel() for t in panels.values()])
    _alt(axes, f"{len(panels)} heat maps ({', '.join(_plain(n) for n in panels)})"
         f"{_titled(title)}, of {len(tokens)} tokens by "
         f"{' or '.join(str(w) for w in widths)} dimensions, purple negative and orange "
         f"positive, with {'one colour scale' if shared else 'a colour scale each'}; the "
         f"numbers run from {_fmt(values.min())} to {_fmt(values.max())}" + ("" if columns is None
         else f"; those of {_plain(tokens[columns[0]])} (position {columns[0]}) are written in "
         "its column") + ".")
    return fig


def attention_map(weights: Sequence[Sequence[float]], tokens: Sequence[str],
                  query: int | None = None, keep: Sequence[int] | None = None,
                  title: str | None = None, ax=None) -> Figure:
    """One head's attention weights: row ``i`` (a query) spreads 1 over the keys ``j``.

    The ``query`` row is outlined and its weights written in its cells (the other cells are
    colour only: dark for 0, yellow for 1, as the colour bar says); the columns of padded keys
    (``keep`` 0) are hatched.
    """
    tokens = items(tokens, "tokens", "words", empty=False)
    weights = numbers(weights, "weights", 0, 1, ndim=2)
    T = len(tokens)
    if weights.shape != (T, T):
        raise ValueError(f"weights must be ({T}, {T}) for {T} tokens, got {weights.shape}")
    keep = np.ones(T) if keep is None else numbers(keep, "keep", 0, 1, ndim=1)
    if keep.shape != (T,):
        raise ValueError(f"keep needs one 0/1 per token ({T}), got {keep.shape[0]}")
    fig, ax = _single_axes(ax, (max(4.8, 0.7 * T + 1.8), max(4.0, 0.6 * T + 1.4)))
    image = ax.imshow(weights, cmap="cividis", vmin=0, vmax=1, aspect="auto")
    for j in np.flatnonzero(keep == 0):  # padded keys: hatched columns
        ax.add_patch(Rectangle((j - 0.5, -0.5), 1, T, fill=False, hatch="//",
                               edgecolor=OKABE_ITO["sky"], linewidth=0))
    ax.set_xticks(range(T), list(tokens), rotation=45, ha="right", fontsize=FONT_SIZE - 1)
    ax.set_yticks(range(T), list(tokens), fontsize=FONT_SIZE - 1)
    ax.set_xlabel("key (the token read)", fontsize=FONT_SIZE)
    ax.set_ylabel("query (the token reading)", fontsize=FONT_SIZE)
    if query is not None:
        (query,) = indices([query], "query", T)
        ax.add_patch(_box(query, T))
        _annotate(ax, weights, lambda v: "black" if v > 0.55 else "white", rows=[query])
    fig.colorbar(image, ax=ax, shrink=0.8, label="attention weight")
    if title:
        ax.set_title(title, fontsize=FONT_SIZE, loc="left")
    padded = int((keep == 0).sum())
    row = query if query is not None else int(np.argmax(weights.max(axis=1)))  # or the surest
    _alt(ax, f"Heat map of attention weights{_titled(title)}, {T} queries by {T} keys, dark "
         "for none and yellow for all" + f", {padded} of the key columns hatched as padding"
         * bool(padded) + f". The row of {_plain(tokens[row])} (position {row}"
         + ", outlined" * (query is not None) + ") reads: "
         + _listing(tokens, weights[row], "{:.2f}".format, most=T) + ".")
    return fig


def _box(row: int, T: int):
    return Rectangle((-0.5, row - 0.5), T, 1, fill=False, edgecolor=TRUTH_COLOUR, linewidth=3)


def gelu_curve(points: Sequence[float] | None = None, ax=None) -> Figure:
    """GELU (x times the chance that a standard normal is below x) next to ReLU, with the
    values a layer really fed it as dots on the curve."""
    points = np.array([]) if points is None else numbers(points, "points").ravel()
    fig, ax = _single_axes(ax, (5.6, 3.8))
    low = min(-3.0, float(points.min()) if points.size else 0.0)
    high = max(3.0, float(points.max()) if points.size else 0.0)
    x = np.linspace(low, high, 400)
    erf = np.vectorize(math.erf, otypes=[float])

    def gelu(v):
        return 0.5 * v * (1 + erf(v / math.sqrt(2)))

    ax.plot(x, gelu(x), color=OTHER_COLOUR, linewidth=2.5, label="GELU (exact)")
    ax.plot(x, np.maximum(x, 0), color=OKABE_ITO["orange"], linestyle="--", linewidth=1.8,
            label="ReLU, for comparison")
    if points.size:
        ax.plot(points, gelu(points), "o", color=TRUTH_COLOUR, markersize=6,
                markeredgecolor="black", label="this layer's values")
    ax.axhline(0, color="grey", linewidth=0.6)
    ax.set_xlabel("input x", fontsize=FONT_SIZE)
    ax.set_ylabel("GELU(x)", fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE - 1)
    ax.legend(fontsize=FONT_SIZE - 2, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    ends = [] if not points.size else [points.min(), points.max()]
    _alt(ax, f"The GELU curve beside ReLU (dashed) for x from {_fmt(low)} to {_fmt(high)}"
         + ("" if not ends else f", with this layer's {points.size} values as dots on it: "
            + " to ".join(f"x = {_fmt(v)} (GELU {_fmt(gelu(v))})" for v in ends)) + ".")
    return fig


def agreement(by_hand: Sequence[float], library: Sequence[float], xlabel: str = "MiniBert",
              ylabel: str = "by hand (NumPy)", also: dict[str, Sequence[float]] | None = None,
              ax=None) -> Figure:
    """Two panels for numbers computed twice. Left: one point per number, on the dashed
    diagonal when the two agree. Right: the size of each difference, ``|by_hand - library|``,
    on a logarithmic axis, where the left panel cannot show it; ``also`` adds more
    ``name -> numbers`` compared with ``by_hand`` (a 64-bit model, say) to the right panel.
    A difference of exactly 0 is drawn at the bottom of the axis.
    """
    a = numbers(by_hand, "by_hand").ravel()
    b = numbers(library, "library").ravel()
    if a.shape != b.shape:
        raise ValueError(f"by_hand has {a.size} numbers but library has {b.size}")
    if not a.size:
        raise ValueError("by_hand is empty: there is nothing to draw")
    others = {xlabel: b}
    for name, values in mapping(also, "also", "name -> numbers", empty=True).items():
        others[name] = numbers(values, f"also {name!r}").ravel()
        if others[name].shape != a.shape:
            raise ValueError(f"also {name!r} has {others[name].size} numbers, not {a.size}")
    if ax is None:
        fig = Figure(figsize=(5.2, 8.2), layout="constrained")
        left, right = fig.subplots(2, 1)
    else:
        left, right = _given_axes(ax, 2)
        fig = left.figure
    low, high = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
    left.plot([low, high], [low, high], "--", color="grey", linewidth=1.2, label="equal")
    left.plot(b, a, "o", color=OTHER_COLOUR, markersize=5, alpha=0.7, label=f"{a.size} scores")
    left.set_xlabel(xlabel, fontsize=FONT_SIZE)
    left.set_ylabel(ylabel, fontsize=FONT_SIZE)
    gaps = {name: np.abs(a - v) for name, v in others.items()}
    positive = np.concatenate([g[g > 0] for g in gaps.values()])
    bottom = float(positive.min()) / 10 if positive.size else 1e-17
    for k, (name, gap) in enumerate(gaps.items()):
        right.plot(b, np.maximum(gap, bottom), "os^"[k % 3], color=_COLOURS[k % 6],
                   markersize=5, alpha=0.7, label=f"by hand vs {name}")
    right.set_yscale("log")
    right.set_xlabel("score", fontsize=FONT_SIZE)
    right.set_ylabel("|difference| (log scale)", fontsize=FONT_SIZE)
    for axis in (left, right):
        axis.tick_params(labelsize=FONT_SIZE - 1)
        axis.legend(fontsize=FONT_SIZE - 2, frameon=False)
        axis.spines[["top", "right"]].set_visible(False)
    _alt([left, right], f"Two panels of {a.size} numbers computed twice. Above: "
         f"{_plain(ylabel)} against {_plain(xlabel)}, one dot each, on the diagonal where they "
         f"agree, from {_fmt(low)} to {_fmt(high)}. Below: the size of each difference on a "
         "logarithmic axis; the largest difference " + ", ".join(
             f"from {_plain(name)} is {_fmt(gap.max())}" for name, gap in gaps.items()) + ".")
    return fig


def excess_curves(steps: Sequence[float], runs: dict[str, Sequence[Sequence[float]]],
                  floor: float, lines: dict[str, float] | None = None, ax=None) -> Figure:
    """Training curves as the distance above ``floor``, on a logarithmic axis.

    Args:
        steps: the training steps of the evaluations.
        runs: ``label -> (seeds, evaluations)`` losses, one curve per seed.
        floor: the lowest loss any model can reach (every loss must lie above it).
        lines: ``name -> distance above the floor`` drawn as dotted lines.

    Each variant is drawn as its mean over the seeds with a band from the smallest to the
    largest; the logarithmic axis separates variants whose losses differ by little near the
    floor.
    """
    from mlmlib.plots.lab import _lines_alt, lines_with_spread

    floor = float(numbers(floor, "floor", ndim=0))
    series = {}
    for name, curves in mapping(runs, "runs", "label -> (seeds, evaluations) losses").items():
        excess = numbers(curves, f"runs {name!r}", ndim=2) - floor
        if (excess <= 0).any():
            raise ValueError(f"runs {name!r} has a loss at or below the floor {floor}")
        series[name] = (excess.mean(axis=0), excess.min(axis=0), excess.max(axis=0))
    labels = {"xlabel": "training step", "ylabel": "eval loss above the floor (nats, log scale)"}
    fig = lines_with_spread(steps, series, **labels, lines=lines, ax=ax)
    axis = fig.axes[0] if ax is None else _given_axes(ax, 1)[0]
    axis.set_yscale("log")
    _alt(axis, _lines_alt(np.atleast_1d(np.asarray(steps, dtype=float)), series, title=None,
                          log_x=False, lines=mapping(lines, "lines", "name -> value", empty=True),
                          **labels)
         + f" The floor is {floor:.4f}.")
    return fig


def seed_dots(values: dict[str, Sequence[float]], xlabel: str,
              lines: dict[str, float] | None = None, log_x: bool = False, ax=None) -> Figure:
    """One row per variant: a dot per seed and a black bar at their mean, so overlaps show.

    Args:
        values: ``label -> one number per seed`` (the first label is drawn on top).
        lines: ``name -> value`` drawn as vertical reference lines (the floor, ...).
        log_x: a logarithmic axis (every value and line positive), so that variants far
            apart and variants close together can both be read.
    """
    low = 0.0 if log_x else -np.inf
    values = mapping(values, "values", "label -> one number per seed")
    for name, v in values.items():
        values[name] = numbers(v, f"values {name!r}", low, above=log_x, ndim=1)
        if not values[name].size:
            raise ValueError(f"values {name!r} is empty: give one number per seed")
    lines = mapping(lines, "lines", "name -> value", empty=True)
    for name, value in lines.items():
        lines[name] = float(numbers(value, f"line {name!r}", low, above=log_x, ndim=0))
    fig, ax = _single_axes(ax, (6.0, 0.6 * len(values) + 1.6))
    rows = np.arange(len(values))[::-1]
    for y, v in zip(rows, values.values(), strict=True):
        ax.plot([v.mean()] * 2, [y - 0.3, y + 0.3], color="black", linewidth=2,
                label="mean over the seeds" if y == rows[0] else None)
        ax.plot(v, [y] * len(v), "o", color=OTHER_COLOUR, markersize=8, alpha=0.8,
                markeredgecolor="black")
    for k, (name, value) in enumerate(lines.items()):
        ax.axvline(value, linestyle=[":", "--", "-."][k % 3], color=_COLOURS[(k + 1) % 6],
                   linewidth=1.8, label=name)
    if log_x:
        ax.set_xscale("log")
    ax.set_yticks(rows, list(values), fontsize=FONT_SIZE - 1)
    ax.set_xlabel(xlabel, fontsize=FONT_SIZE)
    ax.tick_params(axis="x", labelsize=FONT_SIZE - 1)
    ax.set_ylim(-0.7, len(values) - 0.3)
    ax.legend(fontsize=FONT_SIZE - 2, frameon=False, loc="best")
    ax.spines[["top", "right"]].set_visible(False)
    _alt(ax, f"Dot plot of {_plain(xlabel) or 'values'}"
         + " on a logarithmic axis" * log_x + f", {len(values)} rows, one per variant, with a "
         "dot per seed and a bar at the mean" + "".join(
             f"; {_plain(name)}: mean {_fmt(v.mean())} over {v.size} seeds, from "
             f"{_fmt(v.min())} to {_fmt(v.max())}" for name, v in values.items()) + "".join(
             f"; a line for {_plain(name)} at {_fmt(value)}" for name, value in lines.items())
         + ".")
    return fig
