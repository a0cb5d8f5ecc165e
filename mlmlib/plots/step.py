"""mlmlib.plots.step - the figures of one training step by hand (training_0_one_step).

Does: draw the learning rate at every step of a schedule (a warm-up, then a decay), with the
end of the warm-up marked; and a model's loss on the sentences it trains on beside its loss
on held-out sentences, as training goes on, with the held-out loss's lowest point marked (where
overfitting starts to show). As everywhere in :mod:`mlmlib.plots`, each function takes
``ax=None`` and returns the figure.

Does not: compute a schedule or train anything; the chapter passes in the numbers
(:func:`~mlmlib.train.setup.configure_optimizer`'s schedule,
:func:`mlmlib.byhand.step.overfitting_run`).

>>> fig = learning_rate_curve([0.5, 1.0, 0.75, 0.5, 0.25], warmup=2)
>>> fig.axes[0].get_ylabel()
'learning rate'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from mlmlib._checks import mapping, numbers, whole
from mlmlib.plots._common import FONT_SIZE, OKABE_ITO, _alt, _fmt, _plain, _single_axes


def _tidy(ax, xlabel: str, ylabel: str) -> None:
    ax.set_xlabel(xlabel, fontsize=FONT_SIZE)
    ax.set_ylabel(ylabel, fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE - 1)
    ax.spines[["top", "right"]].set_visible(False)


def learning_rate_curve(rates: Sequence[float], warmup: int = 0, ax=None) -> Figure:
    """The learning rate of every step, step 1 first, with the end of the warm-up (its
    ``warmup`` steps) marked by a dotted line."""
    rates = numbers(rates, "rates", 0, ndim=1, empty=False)
    warmup = whole(warmup, "warmup (steps)", 0, len(rates))
    fig, ax = _single_axes(ax, (6.0, 3.6))
    steps = np.arange(1, len(rates) + 1)
    ax.plot(steps, rates, color=OKABE_ITO["blue"], linewidth=2)
    if warmup:
        ax.axvline(warmup, linestyle=":", color=OKABE_ITO["black"], linewidth=1.4)
        ax.annotate(f"end of warm-up (step {warmup})", (warmup, rates.max()),
                    xytext=(6, -4), textcoords="offset points", va="top",
                    fontsize=FONT_SIZE - 2)
    ax.set_ylim(0, rates.max() * 1.1 if rates.max() > 0 else 1)
    _tidy(ax, "training step", "learning rate")
    peak = int(np.argmax(rates))
    _alt(ax, f"Line chart of the learning rate at each of {len(rates)} steps: "
         f"{_fmt(rates[0])} at step 1, its peak {_fmt(rates[peak])} at step {peak + 1}, "
         f"{_fmt(rates[-1])} at step {len(rates)}"
         + (f"; a dotted line marks the end of the warm-up at step {warmup}" if warmup else "")
         + ".")
    return fig


def train_and_held_out(steps: Sequence[float], train: Sequence[float],
                       held_out: Sequence[float], lines: dict[str, float] | None = None,
                       ax=None) -> Figure:
    """A model's loss on its training sentences and on held-out sentences against the
    training steps; the held-out loss's lowest point is circled, and ``lines`` (name ->
    value) are drawn as dotted horizontal lines (a landmark such as ``log |V|``)."""
    steps = numbers(steps, "steps", 0, ndim=1, empty=False)
    train = numbers(train, "train", ndim=1)
    held_out = numbers(held_out, "held_out", ndim=1)
    if not len(train) == len(held_out) == len(steps):
        raise ValueError(f"{len(steps)} steps need as many losses: got {len(train)} training "
                         f"and {len(held_out)} held-out")
    if (np.diff(steps) <= 0).any():
        raise ValueError("steps must increase")
    lines = mapping(lines, "lines", "name -> value", empty=True)
    for name, value in lines.items():
        lines[name] = float(numbers(value, f"line {name!r}", ndim=0))
    fig, ax = _single_axes(ax, (6.4, 4.2))
    ax.plot(steps, train, "o-", color=OKABE_ITO["blue"], linewidth=2, markersize=4,
            label="training sentences")
    ax.plot(steps, held_out, "s--", color=OKABE_ITO["vermillion"], linewidth=2, markersize=4,
            label="held-out sentences")
    best = int(np.argmin(held_out))
    ax.plot([steps[best]], [held_out[best]], "o", markersize=14, markerfacecolor="none",
            markeredgecolor=OKABE_ITO["black"], markeredgewidth=1.5,
            label=f"lowest held-out loss (step {_fmt(steps[best])})")
    for name, value in lines.items():
        ax.axhline(value, linestyle=":", color=OKABE_ITO["black"], linewidth=1.4)
        ax.annotate(f"{name} ({value:.3f})", (0.01, value), xycoords=("axes fraction", "data"),
                    xytext=(0, 3), textcoords="offset points", fontsize=FONT_SIZE - 2)
    ax.legend(fontsize=FONT_SIZE - 2, frameon=False)
    _tidy(ax, "training step", "mean loss per masked word (nats)")
    _alt(ax, f"Line chart of the loss at {len(steps)} points from step {_fmt(steps[0])} to "
         f"{_fmt(steps[-1])}: on the training sentences from {_fmt(train[0])} to "
         f"{_fmt(train[-1])}; on the held-out sentences from {_fmt(held_out[0])} to "
         f"{_fmt(held_out[-1])}, lowest {_fmt(held_out[best])} at step {_fmt(steps[best])}"
         + "".join(f"; a dotted line for {_plain(name)} at {value:.3f}"
                   for name, value in lines.items()) + ".")
    return fig
