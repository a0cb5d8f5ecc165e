"""mlmlib.plots.lab - the figures of the exact lab (training_4_exact_lab): results over seeds.

Does: draw measurements that come as a mean with a spread over seeds (a line with a shaded
min-max band), a reliability diagram of a model's probabilities against the exact ones, and a
pair of heat maps comparing a joint distribution with the product of its marginals. As
everywhere in :mod:`mlmlib.plots`, each function takes ``ax=None`` and returns the figure.

Does not: train or compute any probability; the chapter passes in the numbers.

>>> fig = lines_with_spread([0.1, 0.5], {"trained": ([2.3, 2.4], [2.2, 2.3], [2.4, 2.5])},
...                         xlabel="masking rate", ylabel="loss")
>>> fig.axes[0].get_xlabel()
'masking rate'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from mlmlib._checks import flag, items, mapping, numbers
from mlmlib.plots._common import (
    FONT_SIZE,
    OKABE_ITO,
    _alt,
    _axes,
    _fmt,
    _plain,
    _single_axes,
    _titled,
)

_COLOURS = [OKABE_ITO[c] for c in ("blue", "vermillion", "green", "orange", "purple", "sky")]
_MARKERS = ["o", "s", "^", "D", "v", "P"]
_STYLES = ["-", "--", "-.", ":", "-", "--"]


def _tidy(ax, xlabel: str, ylabel: str, title: str | None) -> None:
    ax.set_xlabel(xlabel, fontsize=FONT_SIZE)
    ax.set_ylabel(ylabel, fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE - 1)
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(title, fontsize=FONT_SIZE, loc="left")


def lines_with_spread(x: Sequence[float], series: dict[str, tuple], xlabel: str = "",
                      ylabel: str = "", title: str | None = None, log_x: bool = False,
                      lines: dict[str, float] | None = None, skip: Sequence[str] = (),
                      ax=None) -> Figure:
    """One line per series through its means, with its min-max band over seeds shaded.

    Args:
        x: the values on the horizontal axis.
        series: ``name -> (mean, low, high)``, three sequences as long as ``x``; a series
            without spread (an exact number) passes ``low = high = mean``.
        lines: ``name -> value`` drawn as dotted horizontal lines (a landmark such as
            ``log |V|``).
        log_x: a logarithmic horizontal axis.
        skip: names of series left out of the drawing (a close-up without a series far off
            its scale); every other series keeps the colour and style it has in the full
            figure.
    """
    log_x = flag(log_x, "log_x")
    x = numbers(x, "x", 0 if log_x else -np.inf, above=log_x, ndim=1)  # log: x > 0
    series = mapping(series, "series", "name -> (mean, low, high)")
    for name, band in series.items():
        if not (isinstance(band, tuple | list) and len(band) == 3):
            raise TypeError(f"series {name!r} must be three sequences (mean, low, high)")
        mean, low, high = (numbers(v, f"series {name!r}", ndim=1) for v in band)
        if not len(mean) == len(low) == len(high) == len(x):
            raise ValueError(f"series {name!r} needs {len(x)} means, lows and highs")
        slack = 1e-9 * (1 + np.abs(mean))  # a mean of equal values may differ in its last bit
        if (low > mean + slack).any() or (mean > high + slack).any():
            raise ValueError(f"series {name!r}: each mean must lie between its low and high")
        series[name] = (mean, low, high)
    lines = mapping(lines, "lines", "name -> value", empty=True)
    for name, value in lines.items():
        lines[name] = float(numbers(value, f"line {name!r}", ndim=0))
    skip = set(items(skip, "skip", "series names", text=True))
    if skip - set(series) or skip == set(series):
        raise ValueError(f"skip must name some of the series {list(series)}, not all, got "
                         f"{sorted(skip)}")
    fig, ax = _single_axes(ax, (6.4, 4.2))
    for k, (name, (mean, low, high)) in enumerate(series.items()):
        if name in skip:
            continue  # its colour and style stay unused, so the others keep theirs
        colour = _COLOURS[k % len(_COLOURS)]
        ax.plot(x, mean, linestyle=_STYLES[k % 6], marker=_MARKERS[k % 6], color=colour,
                linewidth=2, label=name)
        if not np.allclose(low, high):
            ax.fill_between(x, low, high, color=colour, alpha=0.2, linewidth=0)
    for name, value in lines.items():
        ax.axhline(value, linestyle=":", color=OKABE_ITO["black"], linewidth=1.4)
        ax.annotate(f"{name} ({value:.3f})", (0.01, value), xycoords=("axes fraction", "data"),
                    xytext=(0, 3), textcoords="offset points", fontsize=FONT_SIZE - 2)
    if log_x:
        ax.set_xscale("log")
    ax.legend(fontsize=FONT_SIZE - 2, frameon=False)
    _tidy(ax, xlabel, ylabel, title)
    shown = {name: band for name, band in series.items() if name not in skip}
    _alt(ax, _lines_alt(x, shown, xlabel, ylabel, title, log_x, lines))
    return fig


def _lines_alt(x, series, xlabel, ylabel, title, log_x, lines) -> str:
    """What :func:`lines_with_spread` draws, in words: each line's ends and its band."""
    def band(low, high) -> str:
        return "" if np.allclose(low, high) else \
            f" (band over seeds {_fmt(low.min())} to {_fmt(high.max())})"

    return (f"Line chart{_titled(title)} of {_plain(ylabel) or 'values'} against "
            f"{_plain(xlabel) or 'x'} from {_fmt(x[0])} to {_fmt(x[-1])}"
            + " on a logarithmic axis" * log_x + f", {len(series)} lines"
            + "".join(f"; {_plain(name)}: {_fmt(mean[0])} to {_fmt(mean[-1])}"
                      f"{band(low, high)}" for name, (mean, low, high) in series.items())
            + "".join(f"; a dotted line for {_plain(name)} at {value:.3f}"
                      for name, value in lines.items()) + ".")


def reliability_diagram(model_mean: Sequence[float], exact_mean: Sequence[float],
                        counts: Sequence[int], title: str | None = None, ax=None) -> Figure:
    """Calibration against the truth: per bin of the model's probability, the exact one.

    Each point is one bin of (slot, word) pairs: across, the mean probability the model gave;
    up, the mean probability the exact posterior gives the same pairs. On the diagonal the
    model means what it says; below it, the model is over-confident. Point areas grow with
    the bin's count; both axes are logarithmic, because most pairs have tiny probabilities.
    """
    counts = numbers(counts, "counts", 0, ndim=1)
    means = [np.asarray([np.nan if v is None else v for v in  # None: an empty bin
                         items(m, name, "numbers, one per bin (None for an empty bin)")],
                        dtype=object) for m, name in ((model_mean, "model_mean"),
                                                      (exact_mean, "exact_mean"))]
    if not len(means[0]) == len(means[1]) == len(counts):
        raise ValueError("model_mean, exact_mean and counts must have one value per bin")
    model_mean, exact_mean = (numbers(list(m[counts > 0]), name, 0, 1)
                              for m, name in zip(means, ("model_mean", "exact_mean"), strict=True))
    counts = counts[counts > 0]
    keep = (model_mean > 0) & (exact_mean > 0)
    if not keep.any():
        raise ValueError("no bin to draw: every bin is empty or has a mean of 0 (the axes are "
                         "logarithmic)")
    fig, ax = _single_axes(ax, (5.0, 4.6))
    low = min(model_mean[keep].min(), exact_mean[keep].min()) / 2
    ax.plot([low, 1], [low, 1], linestyle="--", color=OKABE_ITO["black"], linewidth=1,
            label="perfectly calibrated")
    sizes = 20 + 200 * np.sqrt(counts[keep] / counts[keep].max())
    ax.scatter(model_mean[keep], exact_mean[keep], s=sizes, color=OKABE_ITO["blue"],
               edgecolor="black", linewidth=0.6, zorder=3, label="bins (area: count)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=FONT_SIZE - 2, frameon=False, loc="upper left")
    _tidy(ax, "model's probability (bin mean)", "exact probability (same pairs)", title)
    _alt(ax, f"Reliability diagram{_titled(title)}, both axes logarithmic: {int(keep.sum())} "
         "bins against the dashed diagonal of perfect calibration; the model's mean probability "
         "against the exact one, with the count of pairs: " + "; ".join(
             f"{_fmt(m)} against {_fmt(e)} ({int(n)})" for m, e, n in
             zip(model_mean[keep], exact_mean[keep], counts[keep], strict=True)) + ".")
    return fig


def joint_and_product(rows: Sequence[str], cols: Sequence[str], joint, product,
                      row_label: str = "", col_label: str = "", ax=None) -> Figure:
    """Two heat maps, one above the other: a joint table of two blanks and the product of its
    marginals (what scoring the blanks independently assumes), with the same colour scale.
    Either table may be a corner of the full one (its likeliest rows and columns): each sums to
    1 at most."""
    rows = items(rows, "rows", "row labels", empty=False)
    cols = items(cols, "cols", "column labels", empty=False)
    joint, product = (numbers(t, name, 0, 1) for t, name in ((joint, "joint"),
                                                               (product, "product")))
    if joint.shape != (len(rows), len(cols)) or product.shape != joint.shape:
        raise ValueError(f"both tables must be {len(rows)} x {len(cols)}")
    for table, name in ((joint, "joint"), (product, "product")):  # a distribution, or part of one
        if table.sum() > 1 + 1e-4:
            raise ValueError(f"the {name} table sums to {table.sum():.4g}: the probabilities of "
                             "pairs of words sum to 1 at most (all of them, or some)")
    fig, axes = _axes(ax, 2, (6.4, 7.2))
    top = max(joint.max(), product.max())
    for a, table, name in zip(axes, (joint, product), ("joint  P(a, b)",
                                                          "product  P(a) P(b)"), strict=True):
        image = a.imshow(table, cmap="cividis", vmin=0, vmax=top, aspect="auto")
        for (r, c), value in np.ndenumerate(table):
            a.text(c, r, f"{value:.3f}", ha="center", va="center", fontsize=FONT_SIZE - 3,
                   color="white" if value < top / 2 else "black")
        a.set_yticks(range(len(rows)), list(rows), fontsize=FONT_SIZE - 1)
        a.set_xticks(range(len(cols)), list(cols), fontsize=FONT_SIZE - 1, rotation=30)
        a.tick_params(labelbottom=True)
        a.set_ylabel(row_label, fontsize=FONT_SIZE)
        a.set_title(name, fontsize=FONT_SIZE, loc="left")
    axes[-1].set_xlabel(col_label, fontsize=FONT_SIZE)
    fig.colorbar(image, ax=axes, shrink=0.8, label="probability")
    r, c = np.unravel_index(np.argmax(joint), joint.shape)
    gap = np.abs(joint - product)
    g, h = np.unravel_index(np.argmax(gap), gap.shape)
    _alt(axes, f"Two heat maps of {len(rows)} by {len(cols)} probabilities, rows "
         f"{_plain(row_label) or 'a'}, columns {_plain(col_label) or 'b'}: the joint P(a, b) "
         f"above the product of its marginals P(a) P(b), which sum to {joint.sum():.3f} and "
         f"{product.sum():.3f}. The likeliest pair, {_plain(rows[r])} and {_plain(cols[c])}, "
         f"has {joint[r, c]:.3f} against {product[r, c]:.3f}; the largest gap is at "
         f"{_plain(rows[g])} and {_plain(cols[h])}, {joint[g, h]:.3f} against "
         f"{product[g, h]:.3f}.")
    return fig
