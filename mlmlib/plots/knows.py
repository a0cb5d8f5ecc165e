"""mlmlib.plots.knows - what the model knows: the scaling law's fits.

Does: draw losses measured at a few sizes (a model's parameters, its training examples) as
their distance above the toy world's exact floor, on log-log axes, where a power law is a
straight line: a small dot per seed, a larger marker at each size's mean, and each fitted law
``L(n) = E + A n^-alpha`` (a :class:`~mlmlib.scaling.PowerLaw`) as a line over the sizes
measured, ``L(n) - floor``. A fitted E above the floor bends the line towards a dotted level
at ``E - floor``; one below the floor makes ``L(n) - floor`` negative for large ``n``, which a
logarithmic axis cannot show: only its positive part is drawn, and the alt text says where it
stops. As everywhere in :mod:`mlmlib.plots`, the function takes ``ax=None`` and returns the
figure.

Does not: fit anything (:mod:`mlmlib.scaling` does; the chapter passes in its fits) or train.

>>> from mlmlib.scaling import fit_power_law
>>> sizes, runs = [1e3, 1e4, 1e5], [[2.4, 2.5], [2.2, 2.21], [2.15, 2.16]]
>>> law = fit_power_law(sizes, [2.45, 2.205, 2.155], floor=2.1)
>>> fig = power_law_fits(sizes, runs, 2.1, {"E fixed": law}, xlabel="parameters")
>>> fig.axes[0].get_xscale(), fig.axes[0].get_yscale()
('log', 'log')
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from mlmlib._checks import described, mapping, numbers
from mlmlib.plots._common import (
    FONT_SIZE,
    OKABE_ITO,
    OTHER_COLOUR,
    _alt,
    _fmt,
    _plain,
    _single_axes,
    _titled,
)
from mlmlib.plots.lab import _COLOURS, _STYLES, _tidy


def power_law_fits(sizes: Sequence[float], runs, floor: float, fits: dict, xlabel: str,
                   ylabel: str = "loss minus the exact floor (nats)", title: str | None = None,
                   exponent: str = "alpha", ax=None) -> Figure:
    """Losses over seeds at each size, and the scaling laws fitted to them, above the floor.

    Args:
        sizes: the sizes measured (positive), one per row of ``runs``.
        runs: the losses ``(len(sizes), seeds)``; every one above ``floor``.
        floor: the exact floor (the Bayes loss) that every distance is measured from.
        fits: ``name -> PowerLaw`` (from :func:`mlmlib.scaling.fit_power_law`), each drawn as
            ``fit(n) - floor`` over the range of ``sizes``, named with its alpha in the legend
            (and its E, when that is not the floor); ``{}`` draws the measurements alone.
        xlabel: what the sizes count (``"parameters"``, ``"training examples"``).
        exponent: the exponent's name, ``"alpha"`` (a model size's) or ``"beta"`` (a data
            size's, as in Hoffmann et al.'s law); the legend writes it as a Greek letter.
    """
    symbol = {"alpha": "α", "beta": "β"}.get(exponent)
    if symbol is None:
        raise ValueError(f"exponent must be 'alpha' or 'beta', got {exponent!r}")
    sizes = numbers(sizes, "sizes", 0, above=True, ndim=1, empty=False)
    runs = numbers(runs, "runs", ndim=2, empty=False)
    if len(runs) != len(sizes):
        raise ValueError(f"runs must have one row per size: {len(sizes)} sizes but "
                         f"{len(runs)} rows")
    floor = float(numbers(floor, "floor", ndim=0))
    excess = runs - floor
    if (excess <= 0).any():
        i, j = (int(v) for v in np.argwhere(excess <= 0)[0])
        raise ValueError(f"runs[{i}, {j}] = {runs[i, j]} at size {sizes[i]:g} is at or below "
                         f"the floor {floor}: its distance above the floor cannot be drawn on a "
                         "logarithmic axis")
    fits = mapping(fits, "fits", "name -> fitted law (a PowerLaw)", empty=True)
    for name, law in fits.items():
        if not callable(law) or not all(isinstance(getattr(law, key, None), float | int)
                                        for key in ("E", "A", "alpha")):
            raise TypeError(f"fits {name!r} must be a fitted law (a PowerLaw from "
                            f"mlmlib.scaling.fit_power_law), got {described(law)}")
    fig, ax = _single_axes(ax, (6.0, 4.2))
    seeds = runs.shape[1]
    ax.plot(np.repeat(sizes, seeds), excess.ravel(), "o", color=OKABE_ITO["black"],
            markersize=4, alpha=0.45, linestyle="none", label="one seed")
    mean = excess.mean(1)
    ax.plot(sizes, mean, "D", color=OTHER_COLOUR, markersize=9, markeredgecolor="black",
            linestyle="none", zorder=3, label="mean over the seeds")
    dense = np.geomspace(sizes.min(), sizes.max(), 200)
    lowest = excess.min()
    for k, (name, law) in enumerate(fits.items()):
        colour = _COLOURS[(k + 1) % len(_COLOURS)]
        y = np.asarray(law(dense), dtype=float) - floor
        fitted = f", E = {law.E:.4f}" if law.E != floor else ""
        ax.plot(dense, np.where(y > 0, y, np.nan), linestyle=_STYLES[k % len(_STYLES)],
                color=colour, linewidth=2, label=f"{name}: {symbol} = {law.alpha:.2f}{fitted}")
        if law.E > floor:
            ax.axhline(law.E - floor, linestyle=":", color=colour, linewidth=1.5,
                       label=f"{name}: fitted E − floor")
            lowest = min(lowest, law.E - floor)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom=lowest / 3)  # a line falling to the floor would stretch the axis
    ax.legend(fontsize=FONT_SIZE - 2, frameon=False, loc="best")
    _tidy(ax, xlabel, ylabel, title)
    _alt(ax, _fits_alt(sizes, mean, seeds, floor, fits, xlabel, ylabel, title, exponent))
    return fig


def _fits_alt(sizes, mean, seeds, floor, fits, xlabel, ylabel, title, exponent) -> str:
    """What :func:`power_law_fits` draws, in words: the means at both ends, and each fit."""
    order = np.argsort(sizes, kind="stable")

    def said(name, law) -> str:
        where = f"; {_plain(name)}: {exponent} {_fmt(law.alpha)}, E {_fmt(law.E)}"
        if law.E == floor:
            return where + " (the floor)"
        if law.E > floor:
            return where + f", {_fmt(law.E - floor)} above the floor (a dotted line there)"
        cut = (law.A / (floor - law.E)) ** (1 / law.alpha)  # where E + A n^-alpha = floor
        stop = (f"it falls below the floor beyond n = {_fmt(cut)}, so only the part above "
                "it is drawn" if cut > sizes.min() else
                "it lies below the floor across the range, so it is not drawn")
        return where + f", {_fmt(floor - law.E)} below the floor: {stop}"

    return (f"Log-log chart{_titled(title)} of {_plain(ylabel)} against {_plain(xlabel)} from "
            f"{_fmt(sizes.min())} to {_fmt(sizes.max())}: a dot per seed ({seeds} seeds) at "
            f"each of {len(sizes)} sizes and a marker at their mean, from "
            f"{_fmt(mean[order[0]])} to {_fmt(mean[order[-1]])}; "
            + (f"{len(fits)} fitted law{'s' * (len(fits) > 1)} E + A n^-{exponent} drawn as lines"
               if fits else "no fitted law") + "".join(said(n, law) for n, law in fits.items())
            + f". The floor is {floor:.4f}.")
