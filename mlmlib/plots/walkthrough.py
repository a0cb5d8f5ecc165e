"""mlmlib.plots.walkthrough - the figures of the walkthrough, Steps 1-7 and its summary.

Does: draw, step by step, the sentence with its masked slots (Step 1), what the model reads
and must produce (Step 2), a probability dial (Step 3), softmax's three stages (Step 4), the
curve ``-log p`` (Step 5), the slots' losses stacked into one tower (Step 6), the edge cases
(Step 7) and the whole loss as one pipeline (the summary). The worked examples draw with most
of these again.

Does not: draw the figures that first appear in the worked examples (:mod:`mlmlib.plots.worked`)
or in the training chapters (:mod:`mlmlib.plots.training`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from mlmlib._checks import flag, indices, items, mapping, numbers
from mlmlib.loss import softmax
from mlmlib.plots._common import (
    FONT_SIZE,
    OKABE_ITO,
    OTHER_COLOUR,
    TRUTH_COLOUR,
    _alt,
    _axes,
    _fmt,
    _given_axes,
    _listing,
    _plain,
    _single_axes,
    _titled,
)

# What the live figures (mlmlib.widgets.live) draw with too: defined once, here, used by the
# pictures below and sent to the page in each live figure's settings.

# A word's box: marked (hatched) or plain.
MARKED_FILL, PLAIN_FILL = "#FBE3D6", "#E8F1F8"
# Step 2's two rows, each titled in TeX (matplotlib) and in plain text (the page).
ROW_TITLES = (("the model reads  $\\mathbf{x}_{\\setminus M}$", "the model reads  x without M"),
              ("it must produce the hidden words  $x_i$, $i \\in M$",
               "it must produce the hidden words  x_i, i in M"))
# Step 3's dial: its coloured bands (from, to, colour), its ticks, where the ticks' numbers sit
# and how long the needle is (both as a share of the dial's radius).
DIAL_BANDS = ((0.0, 0.5, OKABE_ITO["vermillion"]), (0.5, 0.8, OKABE_ITO["yellow"]),
              (0.8, 1.0, OKABE_ITO["green"]))
DIAL_TICKS = (0, 0.25, 0.5, 0.75, 1)
DIAL_TICK_RADIUS, DIAL_NEEDLE = 1.22, 0.85
# Softmax's three stages: each panel's title (TeX) and its axis label.
SOFTMAX_STAGES = (("1. raw scores $s_v$", "score"),
                  ("2. exponentiate: every weight positive", "exp(score)"),
                  ("3. divide by Z: probabilities that sum to 1", "probability"))
# Room above (and below) a bar chart's bars, as a share of their range.
BAR_HEADROOM = 0.25
# The curve -log p: where it starts, its x label, its y label in TeX and in plain text.
NEG_LOG_P_MIN = 1e-3
NEG_LOG_XLABEL = "p, the probability given to the true word"
NEG_LOG_YLABEL = ("loss  $-\\log p$", "loss  \u2212log p")
# The blocks of a loss tower, in turn.
STACK_COLOURS = tuple(OKABE_ITO[c] for c in ("blue", "orange", "green", "purple", "sky", "yellow"))
# Step 7: the smallest probability drawn, and the four cases' titles.
EDGE_P_MIN = 1e-12
EDGE_TITLES = ("A. M empty: loss = 0", "B. perfect, P = 1: loss = 0",
               "C. P -> 0: loss -> infinity", "D. corrupted slots still count")


def token_row(tokens: Sequence[str], highlight: Sequence[int] = (),
              notes: dict[int, str] | None = None, title: str | None = None,
              covered: Sequence[int] = (), ax=None) -> Figure:
    """A sentence as a row of boxes; highlighted boxes hatched in vermillion, notes beneath.

    Args:
        tokens: the words to draw, left to right.
        highlight: positions (from 0) to mark, e.g. the masked or corrupted ones.
        notes: text to write under a box, e.g. ``{1: "label: cat"}``.
        title: a line above the row.
        covered: positions whose word is hidden: drawn as a dark box with a "?".
    """
    tokens = items(tokens, "tokens", "words", empty=False)
    notes = mapping(notes, "notes", "position -> text", empty=True)
    highlight, covered = (indices(v, name, len(tokens)) for v, name in
                          ((highlight, "highlight"), (covered, "covered")))
    indices(list(notes), "notes", len(tokens))
    fig, ax = _single_axes(ax, (max(4.0, 1.05 * len(tokens)), 1.9 if notes else 1.4))
    for i, tok in enumerate(tokens):
        marked = i in highlight
        ax.add_patch(_box(i, marked))
        if i in covered:
            ax.add_patch(FancyBboxPatch((i + 0.12, 0.12), 0.76, 0.76, boxstyle="round,pad=0.02",
                                        facecolor="#4D4D4D", edgecolor="black"))
            ax.text(i + 0.5, 0.5, "?", ha="center", va="center", fontsize=FONT_SIZE + 2,
                    color="white", fontweight="bold")
            continue
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
    shown = " ".join("[hidden]" if i in covered else _plain(t) for i, t in enumerate(tokens))
    marks = {i: ["is marked (hatched)"] for i in highlight}
    for i, note in notes.items():
        marks.setdefault(i, []).append(f"has the note '{_plain(note)}'")
    _alt(ax, f"A row of {len(tokens)} word boxes{_titled(title)}, reading: {shown}" + "".join(
        f"; box {i + 1} ({_plain(tokens[i])}) {' and '.join(said)}"
        for i, said in sorted(marks.items()) if i not in covered) + ".")
    return fig


def _box(i: int, marked: bool) -> FancyBboxPatch:
    return FancyBboxPatch((i + 0.06, 0.06), 0.88, 0.88, boxstyle="round,pad=0.02",
                          facecolor=MARKED_FILL if marked else PLAIN_FILL,
                          edgecolor=TRUTH_COLOUR if marked else OTHER_COLOUR,
                          hatch="//" if marked else None, linewidth=1.6 if marked else 1.0)


def reads_and_answers(tokens: Sequence[str], positions: Sequence[int],
                      mask_token: str = "[MASK]", ax=None) -> Figure:
    """Two rows: what the model reads (masked slots greyed out) and what it must produce.

    Positions count from 0; the picture labels them from 1, as the formulas do.
    """
    tokens = items(tokens, "tokens", "words", empty=False)
    phrase = "{name}: cannot mask position {p} in a {n}-token sentence (positions are 0..{last})"
    positions = sorted(set(indices(positions, "positions", len(tokens), phrase=phrase)))
    if ax is None:
        fig = Figure(figsize=(max(4.0, 1.05 * len(tokens)), 3.4), layout="constrained")
        top, bottom = fig.subplots(2, 1)
    else:
        top, bottom = _given_axes(ax, 2)
        fig = top.figure
    reads = [mask_token if i in positions else t for i, t in enumerate(tokens)]
    token_row(reads, covered=positions, ax=top, title=ROW_TITLES[0][0])
    answers = [t if i in positions else "" for i, t in enumerate(tokens)]
    token_row(answers, highlight=positions,
              notes={i: f"$x_{{{i + 1}}}$" for i in positions}, ax=bottom, title=ROW_TITLES[1][0])
    top.set_ylim(bottom.get_ylim())  # the same scale, so the two rows line up
    _alt([top, bottom], f"Two rows of {len(tokens)} word boxes. The model reads: "
         f"{' '.join(_plain(t) for t in reads)}. It must produce the hidden words: "
         + (", ".join(f"{_plain(tokens[i])} at position {i + 1}" for i in positions) or "none")
         + ".")
    return fig


def probability_dial(p: float, label: str = "P(truth)", ax=None) -> Figure:
    """A half-circle dial from 0 to 1 with the needle at ``p``."""
    p = float(numbers(p, "p (a probability)", 0, 1, ndim=0))
    fig, ax = _single_axes(ax, (3.6, 2.3))
    angles = np.linspace(np.pi, 0, 200)
    for lo, hi, colour in DIAL_BANDS:
        seg = angles[int(lo * 199):int(hi * 199) + 1]
        ax.plot(np.cos(seg), np.sin(seg), color=colour, linewidth=10, solid_capstyle="butt")
    for tick in DIAL_TICKS:
        a = np.pi * (1 - tick)
        ax.text(DIAL_TICK_RADIUS * np.cos(a), DIAL_TICK_RADIUS * np.sin(a), f"{tick:g}",
                ha="center", va="center", fontsize=FONT_SIZE - 2)
    a = np.pi * (1 - p)
    ax.annotate("", xy=(DIAL_NEEDLE * np.cos(a), DIAL_NEEDLE * np.sin(a)), xytext=(0, 0),
                arrowprops={"arrowstyle": "-|>", "color": "black", "linewidth": 2})
    ax.plot(0, 0, "o", color="black", markersize=6)
    ax.text(0, -0.28, f"{label} = {p:.4f}", ha="center", va="center", fontsize=FONT_SIZE)
    ax.set_xlim(-1.4, 1.4)
    ax.set_ylim(-0.45, 1.4)
    ax.set_aspect("equal")
    ax.axis("off")
    _alt(ax, f"A probability dial, red on the left to green on the right, its needle at "
         f"{_plain(label)} = {p:.4f}.")
    return fig


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
    pad = BAR_HEADROOM * (high - low or 1.0)
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
    scores = numbers(scores, "scores", ndim=1, high=700)  # exp(710) overflows a float
    if len(scores) and scores.max() < -700:  # exp(-746) underflows to 0: Z would be 0
        raise ValueError(f"scores are all below -700 (the largest is {scores.max():g}): every "
                         "exp(score) underflows to 0; subtract the largest score from each "
                         "(softmax does not change)")
    words = items(words, "words", "words", empty=False, unique=True, text=True)
    if len(words) != len(scores):
        raise ValueError(f"{len(words)} words but {len(scores)} scores")
    if truth is not None and truth not in words:
        raise ValueError(f"the true word {truth!r} is not among {list(words)}")
    truth_index = None if truth is None else list(words).index(truth)
    fig, (a1, a2, a3) = _axes(ax, 3, (5.6, 7.0))
    weights = np.exp(scores)  # the figure is for teaching-sized scores; softmax() is the stable one
    probs = softmax(scores)
    titles = [title for title, _ in SOFTMAX_STAGES]
    titles[1] += f" (total Z = {weights.sum():.4f})"
    for axis, values, fmt, title, (_, ylabel) in zip(
            (a1, a2, a3), (scores, weights, probs), ("{:g}", "{:.4f}", "{:.4f}"), titles,
            SOFTMAX_STAGES, strict=True):
        _bars(axis, words, values, truth_index, fmt, ylabel)
        axis.set_title(title, fontsize=FONT_SIZE, loc="left")
    a3.set_xlabel("word $v$ of the vocabulary" + ("" if truth is None else
                  f"  (hatched: the true word, {truth!r})"), fontsize=FONT_SIZE)
    four = "{:.4f}".format
    _alt([a1, a2, a3], f"Three bar charts of the scores, their exponentials (total Z = "
         f"{four(weights.sum())}) and the probabilities of {len(words)} words. Probabilities: "
         f"{_listing(words, probs, four)}." + ("" if truth is None else
         f" The true word, {_plain(truth)} (hatched), has score {scores[truth_index]:g} and "
         f"probability {four(probs[truth_index])}."))
    return fig


def neg_log_curve(points: dict[str, float] | None = None, log_x: bool = False,
                  p_min: float = NEG_LOG_P_MIN, ax=None) -> Figure:
    """The curve ``y = -log p`` for ``p`` in ``(0, 1]``, with named points marked on it.

    Args:
        points: ``{label: p}``; each is drawn at ``(p, -log p)`` and labelled.
        log_x: put ``p`` on a logarithmic axis, so tiny probabilities (1/30000) are visible.
        p_min: the left end of the curve.
    """
    points = mapping(points, "points", "label -> p", empty=True)
    for name, p in points.items():
        points[name] = float(numbers(p, f"point {name!r}: p", 0, 1, above=True, ndim=0))
    p_min = float(numbers(p_min, "p_min", 0, 1, above=True, ndim=0))
    log_x = flag(log_x, "log_x")
    fig, ax = _single_axes(ax, (6.0, 4.0))
    low = min([p_min, *points.values()])
    p = np.geomspace(low, 1, 400) if log_x else np.linspace(low, 1, 400)
    ax.plot(p, -np.log(p), color=OTHER_COLOUR, linewidth=2.2, label=r"$-\log p$")
    for name, value in points.items():
        y = 0.0 - np.log(value)  # 0.0 - x: -log 1 shows as 0, not -0
        ax.plot(value, y, "o", color=TRUTH_COLOUR, markersize=7, zorder=3)
        right_edge = value > 0.8  # near p = 1: name to the left, inside the axes
        ax.annotate(name, (value, y), textcoords="offset points",
                    xytext=(-8, 8) if right_edge else (8, 8), ha="right" if right_edge else "left",
                    fontsize=FONT_SIZE - 1, fontweight="bold")
    if points:  # the values in one block, where the curve leaves the upper right empty
        lines = [f"{name}: $-\\log p$ = {0.0 - np.log(v):.4f}" for name, v in points.items()]
        ax.text(0.98, 0.97, "\n".join(lines), transform=ax.transAxes, ha="right", va="top",
                fontsize=FONT_SIZE - 2)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(NEG_LOG_XLABEL, fontsize=FONT_SIZE)
    ax.set_ylabel(NEG_LOG_YLABEL[0], fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE)
    ax.set_ylim(bottom=0)
    ax.spines[["top", "right"]].set_visible(False)
    _alt(ax, f"The curve of the loss -log p, falling as p, the probability of the true word, "
         f"rises, drawn from p = {_fmt(low)}" + (" on a logarithmic axis" if log_x else "")
         + "".join(f"; {_plain(name)} (p = {_fmt(v)}) has loss {0.0 - np.log(v):.4f}"
                   for name, v in points.items()) + ".")
    return fig


def loss_tower(parts: dict[str, float], title: str | None = None, ax=None) -> Figure:
    """One stacked bar: each part (a masked slot, or NSP) a block, the total on top."""
    parts = mapping(parts, "parts", "name -> loss")
    for name, value in parts.items():  # a loss is -log p: never negative, finite unless p = 0
        parts[name] = float(numbers(value, f"the loss {name!r}", 0, ndim=0))
    colours = STACK_COLOURS
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
    ax.set_ylim(0, bottom * 1.15 or 1.0)  # every part 0 (a perfect guess): still a scale
    ax.set_xticks([])
    ax.set_ylabel("loss (sum of $-\\log p$)", fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE)
    ax.spines[["top", "right", "bottom"]].set_visible(False)
    if title:
        ax.set_title(title, fontsize=FONT_SIZE, loc="left")
    _alt(ax, f"One bar of {len(parts)} stacked losses{_titled(title)}: "
         f"{_listing(parts, parts.values(), '{:.4f}'.format)}; total {bottom:.4f}.")
    return fig


def slots_and_tower(probs: dict[str, float], ax=None) -> Figure:
    """One dial per masked slot on top, and their losses stacked into one tower below."""
    probs = mapping(probs, "probs", "slot -> probability of the truth")
    for name, p in probs.items():  # p = 0 would stack -log 0 = infinity
        probs[name] = float(numbers(p, f"slot {name!r}: p", 0, 1, above=True, ndim=0))
    if ax is None:
        fig = Figure(figsize=(max(4.5, 2.4 * len(probs)), 6.4), layout="constrained")
        grid = fig.add_gridspec(2, len(probs), height_ratios=[1, 2.2])
        dials = [fig.add_subplot(grid[0, k]) for k in range(len(probs))]
        tower = fig.add_subplot(grid[1, :])
    else:
        *dials, tower = _given_axes(ax, len(probs) + 1)
        fig = tower.figure
    for dial, (name, p) in zip(dials, probs.items(), strict=True):
        probability_dial(p, label=name, ax=dial)
    # each block is the slot's -log P (the dials above show P itself)
    losses = {name: 0.0 - float(np.log(p)) for name, p in probs.items()}
    loss_tower({f"-log {name}": loss for name, loss in losses.items()}, ax=tower)
    _alt([*dials, tower], f"{len(probs)} probability dials, "
         + ", ".join(f"{_plain(name)} = {p:.4f}" for name, p in probs.items())
         + ", above one bar that stacks their losses -log P: "
         + " + ".join(f"{loss:.4f}" for loss in losses.values())
         + f" = {sum(losses.values()):.4f}.")
    return fig


def edge_cases(ax=None) -> Figure:
    """Step 7's four panels: empty M, perfect, catastrophic, and corrupted slots in the sum."""
    if ax is None:
        fig = Figure(figsize=(7.0, 6.2), layout="constrained")
        axes = list(fig.subplots(2, 2).ravel())
    else:
        axes = _given_axes(ax, 4)
        fig = axes[0].figure
    a, b, c, d = axes
    for axis, text in [(a, "no masked slot:\nthe empty sum is 0"),
                       (b, "every slot: $-\\log 1 = 0$\n0 + 0 = 0")]:
        axis.axhline(0, color=TRUTH_COLOUR, linewidth=4)
        axis.text(0.5, 0.55, text, ha="center", va="center", fontsize=FONT_SIZE,
                  transform=axis.transAxes)
        axis.set_ylim(-0.05, 1)
        axis.set_xticks([])
    a.set_title(EDGE_TITLES[0], fontsize=FONT_SIZE, loc="left")
    b.set_title(EDGE_TITLES[1], fontsize=FONT_SIZE, loc="left")
    p, wrong = np.geomspace(EDGE_P_MIN, 1, 300), 1e-9
    c.plot(p, -np.log(p), color=OTHER_COLOUR, linewidth=2)
    c.plot(wrong, -np.log(wrong), "o", color=TRUTH_COLOUR)
    c.annotate("one confident\nwrong guess", (wrong, -np.log(wrong)), textcoords="offset points",
               xytext=(12, 0), fontsize=FONT_SIZE - 2, va="center")
    c.set_xscale("log")
    c.set_xlabel("P(truth)", fontsize=FONT_SIZE - 1)
    c.set_title(EDGE_TITLES[2], fontsize=FONT_SIZE, loc="left")
    parts = {"[MASK]": slot_loss_of([1.0, 2.0, 0.0, 1.0], 1),
             "random": slot_loss_of([0.5, 1.5, 2.0, 0.5], 1),
             "unchanged": slot_loss_of([0.0, 3.0, 0.0, 0.0], 1)}
    loss_tower(parts, ax=d)
    d.set_title(EDGE_TITLES[3], fontsize=FONT_SIZE, loc="left")
    for axis in (a, b, c):
        axis.set_ylabel("loss", fontsize=FONT_SIZE - 1)
        axis.spines[["top", "right"]].set_visible(False)
        axis.tick_params(labelsize=FONT_SIZE - 2)
    _alt(axes, "Four panels of the loss at its edges. A: no masked slot, the empty sum: a loss "
         "of zero. B: every slot certain of the true word: a loss of zero. C: the curve -log P "
         f"climbing as P falls; one confident wrong guess, at P = {wrong:g}, costs "
         f"{-np.log(wrong):.4f}. D: corrupted slots still count, a bar stacking "
         f"{_listing(parts, parts.values(), '{:.4f}'.format)}; total {sum(parts.values()):.4f}.")
    return fig


def slot_loss_of(scores: Sequence[float], target: int) -> float:
    """``-log softmax(scores)[target]``, for the pictures (the loss module does the real work)."""
    probs = softmax(scores)
    indices([target], "target", len(probs), phrase="{name}: word {p} is outside the {n}-word "
            "vocabulary (words 0..{last})")
    return float(0.0 - np.log(probs[target]))


PIPELINE = (
    ("hide", "choose M,\ncorrupt x", "masking.mask_tokens"),
    ("read both sides", "transformer\ngives h_i", "model.MiniBert.encode"),
    ("score every word", "$s_v = w_v^\\top t_i + b_v$", "model.MiniBert.score"),
    ("softmax", "scores to\nprobabilities", "loss.softmax"),
    ("-log the truth", "surprise at\nthe true word", "loss.slot_loss"),
    ("sum over M", "one number\nfor the sentence", "loss.mlm_loss"),
)


def pipeline(stages: Sequence[tuple[str, str, str]] = PIPELINE, ax=None) -> Figure:
    """The whole loss as one pipeline: a column of labelled boxes joined by arrows.

    Each stage is ``(name, what it does, the mlmlib function that does it)``. The column runs
    top to bottom so it stays readable at phone width.
    """
    stages = items(stages, "stages", "stages", empty=False)
    if not all(isinstance(s, tuple | list) and len(s) == 3 and all(isinstance(t, str) for t in s)
               for s in stages):
        raise TypeError("each stage must be three strings: (name, what it does, where)")
    fig, ax = _single_axes(ax, (5.2, 1.25 * len(stages) + 0.3))
    n = len(stages)
    for k, (name, what, where) in enumerate(stages):
        y = n - 1 - k
        colour = list(OKABE_ITO.values())[1 + k % 7]
        ax.add_patch(FancyBboxPatch((0.05, y + 0.12), 0.9, 0.76, boxstyle="round,pad=0.02",
                                    facecolor=colour, alpha=0.35, edgecolor="black"))
        ax.text(0.08, y + 0.62, f"{k + 1}. {name}", fontsize=FONT_SIZE, fontweight="bold",
                va="center")
        ax.text(0.08, y + 0.32, what.replace("\n", " "), fontsize=FONT_SIZE - 2, va="center")
        ax.text(0.92, y + 0.32, where, fontsize=FONT_SIZE - 2, va="center", ha="right",
                family="monospace")
        if k < n - 1:
            ax.annotate("", xy=(0.5, y + 0.02), xytext=(0.5, y + 0.14),
                        arrowprops={"arrowstyle": "-|>", "color": "black"})
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.05, n)
    ax.axis("off")
    _alt(ax, f"The loss as a pipeline of {n} boxes joined by arrows, top to bottom: "
         + "; ".join(f"{k + 1}. {_plain(name)} ({_plain(where)})"
                     for k, (name, _, where) in enumerate(stages)) + ".")
    return fig
