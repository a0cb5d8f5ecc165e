"""mlmlib.plots.worked - the figures that first appear in the worked examples (A-H).

Does: draw several series as bars side by side per category, with error bars: the three ways
of choosing M (worked example D) and expected against measured counts (worked example G); the
performance page uses it too. The worked examples' other figures are the walkthrough's
(:mod:`mlmlib.plots.walkthrough`).

Does not: draw the walkthrough's figures or the training chapters'
(:mod:`mlmlib.plots.training`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from mlmlib._checks import items, mapping, numbers
from mlmlib.plots._common import (
    FONT_SIZE,
    OKABE_ITO,
    _alt,
    _listing,
    _plain,
    _single_axes,
    _titled,
)


def grouped_bars(categories: Sequence[str], series: dict[str, Sequence[float]],
                 errors: dict[str, Sequence[float]] | None = None, ylabel: str = "",
                 xlabel: str = "", title: str | None = None, ax=None) -> Figure:
    """Bars for several series side by side per category, with optional error bars.

    Used for the three ways of choosing M (worked example 4) and for expected against
    measured counts (worked example 7).
    """
    categories = items(categories, "categories", "categories", empty=False)
    series = mapping(series, "series", "name -> one value per category")
    errors = mapping(errors, "errors", "name -> error bars", empty=True)
    for name, values in series.items():
        series[name] = numbers(values, f"series {name!r}", ndim=1)
        if len(values) != len(categories):
            raise ValueError(f"series {name!r} has {len(values)} values for "
                             f"{len(categories)} categories")
    for name, bars in errors.items():  # (n,) symmetric, or (2, n): below and above
        if name not in series:
            raise ValueError(f"errors names {name!r}, which is not a series")
        errors[name] = numbers(bars, f"errors {name!r}", 0)
        if errors[name].shape not in ((len(categories),), (2, len(categories))):
            raise ValueError(f"errors {name!r} must have shape ({len(categories)},) or "
                             f"(2, {len(categories)}), got {errors[name].shape}")
    colours = [OKABE_ITO[c] for c in ("blue", "orange", "green", "purple", "sky")]
    hatches = [None, "//", "..", "xx", "\\\\"]
    fig, ax = _single_axes(ax, (6.0, 3.6))
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(categories))
    for j, (name, values) in enumerate(series.items()):
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
    _alt(ax, f"Bar chart{_titled(title)} of {_plain(ylabel) or 'values'} for {len(categories)} "
         f"categories{f' ({_plain(xlabel)})' if xlabel else ''}, {len(series)} series side by "
         "side" + "".join(f"; {_plain(name)}{', with error bars,' * (name in errors)} gives "
                          f"{_listing(categories, values, sep=': ')}"
                          for name, values in series.items()) + ".")
    return fig
