"""mlmlib.plots.training - the figures of the training chapters (training 1-3).

Does: draw a hidden Markov model writing a sentence, state by state (training 1), the most
likely words for a masked slot (training 1 and 2), the eval loss against the training steps
with its baselines (training 2 and 3), and how much one position attends to every other
(training 2).

Does not: train or evaluate anything - :mod:`mlmlib.train` does, and the chapters pass its
numbers in - or draw the walkthrough's and the worked examples' figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from mlmlib._checks import indices, items, mapping, numbers
from mlmlib.plots._common import (
    FONT_SIZE,
    OKABE_ITO,
    OTHER_COLOUR,
    TRUTH_COLOUR,
    _alt,
    _fmt,
    _listing,
    _plain,
    _single_axes,
    _titled,
)

# the two columns of hidden_chain: their left edges and widths (the axes run from 0 to 1)
CHAIN_STATES = (0.03, 0.42)
CHAIN_WORDS = (0.68, 0.29)
HIDDEN_FILL = "#D9D9D9"


def hidden_chain(states: Sequence[str], words: Sequence[str], step_probs: Sequence[float],
                 word_probs: Sequence[float], ax=None) -> Figure:
    """A hidden Markov model writing a sentence, top to bottom: one row per word.

    On the left, the hidden states the sentence went through (grey: a reader never sees them),
    each joined to the next by ``step_probs``, the probability of that step,
    P(next state | this state); on the right, the word each state wrote, joined to its state
    by ``word_probs``, the probability of that state writing that word. The column runs top to
    bottom so that it stays readable at phone width.
    """
    states = items(states, "states", "state names", text=True, empty=False, ordered=True)
    words = items(words, "words", "words", text=True, empty=False, ordered=True)
    if len(states) != len(words):
        raise ValueError(f"{len(states)} states but {len(words)} words: each state writes one "
                         "word")
    step_probs = numbers(step_probs, "step_probs", 0, 1, ndim=1)
    word_probs = numbers(word_probs, "word_probs", 0, 1, ndim=1)
    n = len(states)
    if len(step_probs) != n - 1:
        raise ValueError(f"{len(step_probs)} step_probs for {n} states: one per step from a "
                         f"state to the next, so {n - 1}")
    if len(word_probs) != n:
        raise ValueError(f"{len(word_probs)} word_probs for {n} states: one per state")
    fig, ax = _single_axes(ax, (5.6, 0.95 * n + 0.8))
    for k, (state, word) in enumerate(zip(states, words, strict=True)):
        y = n - 1 - k
        for (left, width), text, fill in ((CHAIN_STATES, state, HIDDEN_FILL),
                                          (CHAIN_WORDS, word, "white")):
            ax.add_patch(FancyBboxPatch((left, y + 0.2), width, 0.6, boxstyle="round,pad=0.02",
                                        facecolor=fill, edgecolor=OTHER_COLOUR))
            ax.text(left + width / 2, y + 0.5, text, ha="center", va="center",
                    fontsize=FONT_SIZE, family="monospace" if fill == HIDDEN_FILL else None)
        start, end = sum(CHAIN_STATES) + 0.02, CHAIN_WORDS[0] - 0.02
        ax.annotate("", xy=(end, y + 0.5), xytext=(start, y + 0.5),
                    arrowprops={"arrowstyle": "-|>", "color": OKABE_ITO["orange"]})
        ax.text((start + end) / 2, y + 0.56, f"{word_probs[k]:.3f}", ha="center", va="bottom",
                fontsize=FONT_SIZE - 2)
        if k < n - 1:
            middle = CHAIN_STATES[0] + CHAIN_STATES[1] / 2
            ax.annotate("", xy=(middle, y - 0.18), xytext=(middle, y + 0.18),
                        arrowprops={"arrowstyle": "-|>", "color": "black"})
            ax.text(middle + 0.03, y, f"{step_probs[k]:.3f}", ha="left", va="center",
                    fontsize=FONT_SIZE - 2)
    ax.text(CHAIN_STATES[0] + CHAIN_STATES[1] / 2, n + 0.05, "hidden state", ha="center",
            va="bottom", fontsize=FONT_SIZE, fontweight="bold")
    ax.text(CHAIN_WORDS[0] + CHAIN_WORDS[1] / 2, n + 0.05, "the word it writes", ha="center",
            va="bottom", fontsize=FONT_SIZE, fontweight="bold")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.1, n + 0.5)
    ax.axis("off")
    said = [f"{_plain(states[0])} writes {_plain(words[0])} (probability {_fmt(word_probs[0])})"]
    said += [f"with probability {_fmt(step_probs[k - 1])} the next state is "
             f"{_plain(states[k])}, which writes {_plain(words[k])} ({_fmt(word_probs[k])})"
             for k in range(1, n)]
    _alt(ax, f"A hidden Markov model writing {n} words, one row per word, top to bottom: the "
         f"hidden state on the left, the word it writes on the right. The first state "
         + "; ".join(said) + ".")
    return fig


def top_words(words: Sequence[str], probs: Sequence[float], truth: str | None = None,
              title: str | None = None, ax=None) -> Figure:
    """Horizontal bars of the most likely words, the most likely on top; the truth hatched.

    ``probs`` are the words' probabilities in one distribution: all of it or its top few, so
    they sum to 1 at most (and are not all 0).
    """
    words = items(words, "words", "words", empty=False)
    probs = numbers(probs, "probs", 0, 1, ndim=1)
    if len(words) != len(probs):
        raise ValueError(f"{len(words)} words but {len(probs)} probabilities")
    if probs.sum() > 1 + 1e-4:  # the top words of one distribution: all of it, or some
        raise ValueError(f"probs sum to {probs.sum():.4g}: the probabilities of some words of "
                         "one distribution sum to 1 at most")
    if not probs.any():
        raise ValueError("probs are all 0: the likeliest words cannot all have probability 0")
    fig, ax = _single_axes(ax, (5.2, 0.45 * len(words) + 1.2))
    y = np.arange(len(words))[::-1]
    colours = [TRUTH_COLOUR if w == truth else OTHER_COLOUR for w in words]
    bars = ax.barh(y, probs, color=colours, edgecolor="black", linewidth=0.6)
    for bar, w in zip(bars, words, strict=True):
        if w == truth:
            bar.set_hatch("//")
    ax.bar_label(bars, labels=[f"{p:.3f}" for p in probs], padding=3, fontsize=FONT_SIZE - 1)
    ax.set_yticks(y, list(words), fontsize=FONT_SIZE)
    ax.set_xlabel("probability", fontsize=FONT_SIZE)
    ax.set_xlim(0, max(probs) * 1.25 if len(probs) else 1)
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(title, fontsize=FONT_SIZE, loc="left")
    _alt(ax, f"Horizontal bars of the probabilities of {len(words)} words{_titled(title)}, "
         f"from the top: {_listing(words, probs, '{:.3f}'.format)}"
         + (f"; the true word, {_plain(truth)}, is hatched" if truth in words else "") + ".")
    return fig


def training_curve(history: Sequence[dict], baselines: dict[str, float] | None = None,
                   ax=None) -> Figure:
    """Eval loss against training steps, with horizontal lines for the baselines."""
    history = items(history, "history", "dicts, one per evaluation (train for one at least)",
                    empty=False)
    for k, h in enumerate(history):
        if not isinstance(h, Mapping) or not {"step", "eval_loss"} <= h.keys():
            raise ValueError(f"history[{k}] must be a dict with 'step' and 'eval_loss', got {h!r}")
        numbers([h["step"], h["eval_loss"]], f"history[{k}]'s step and eval_loss")
    baselines = mapping(baselines, "baselines", "name -> loss", empty=True)
    for name, value in baselines.items():
        baselines[name] = float(numbers(value, f"baseline {name!r}", ndim=0))
    fig, ax = _single_axes(ax, (6.0, 4.0))
    steps = [h["step"] for h in history]
    ax.plot(steps, [h["eval_loss"] for h in history], "o-", color=OTHER_COLOUR, linewidth=2,
            label="mini BERT, eval loss")
    styles = ["--", ":", "-."]
    colours = [OKABE_ITO["orange"], OKABE_ITO["green"], TRUTH_COLOUR]
    for k, (name, value) in enumerate((baselines or {}).items()):
        ax.axhline(value, linestyle=styles[k % 3], color=colours[k % 3], linewidth=1.8,
                   label=f"{name} ({value:.3f})")
    ax.set_xlabel("training step", fontsize=FONT_SIZE)
    ax.set_ylabel("eval MLM loss (mean $-\\log P$)", fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE)
    ax.legend(fontsize=FONT_SIZE - 2, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    losses = [h["eval_loss"] for h in history]
    best = int(np.argmin(losses))
    _alt(ax, f"Line chart of the eval loss at {len(history)} evaluations: {_fmt(losses[0])} at "
         f"step {_fmt(steps[0])}, {_fmt(losses[-1])} at step {_fmt(steps[-1])}, lowest "
         f"{_fmt(losses[best])} at step {_fmt(steps[best])}" + "".join(
             f"; a horizontal line for {_plain(name)} at {value:.3f}"
             for name, value in baselines.items()) + ".")
    return fig


def attention_bars(tokens: Sequence[str], weights: Sequence[float], query: int,
                   ax=None) -> Figure:
    """How much one position (the query, hatched) attends to every position of the sentence
    (its weights, which sum to 1)."""
    tokens = items(tokens, "tokens", "words", empty=False)
    weights = numbers(weights, "weights", 0, 1, ndim=1)
    if len(tokens) != len(weights):
        raise ValueError(f"{len(tokens)} tokens but {len(weights)} weights")
    indices([query], "query", len(tokens))
    if abs(weights.sum() - 1) > 0.01:  # (a hundredth: room for weights rounded to 2 decimals)
        raise ValueError(f"weights sum to {weights.sum():.4g}: a query's attention weights over "
                         "every position of the sentence sum to 1")
    fig, ax = _single_axes(ax, (max(4.5, 0.75 * len(tokens)), 3.4))
    colours = [TRUTH_COLOUR if i == query else OTHER_COLOUR for i in range(len(tokens))]
    bars = ax.bar(range(len(tokens)), weights, color=colours, edgecolor="black", linewidth=0.6)
    bars[query].set_hatch("//")
    ax.set_xticks(range(len(tokens)), list(tokens), rotation=45, ha="right",
                  fontsize=FONT_SIZE - 1)
    ax.set_ylabel("attention weight", fontsize=FONT_SIZE)
    ax.tick_params(labelsize=FONT_SIZE - 1)
    ax.spines[["top", "right"]].set_visible(False)
    order = np.argsort(-weights, kind="stable")
    _alt(ax, f"Bar chart of how much {_plain(tokens[query])} (hatched) attends to each of the "
         f"{len(tokens)} tokens of its sentence; the largest weights: "
         f"{_listing([tokens[i] for i in order], weights[order], '{:.3f}'.format, most=3)}.")
    return fig
