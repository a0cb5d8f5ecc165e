"""mlmlib.widgets.ask - the toy world live in the page: the exact posterior of a typed
sentence's blanks, the course's trained mini BERT asked to fill them beside it, and where its
attention goes.

Does: three :class:`~mlmlib.widgets.live.LiveFigure` functions, each with a box where the
reader types a toy-world sentence with blanks (``___``), read by
:func:`~mlmlib.widgets.live.read_sentence`'s rule and refused with the same messages; the page
recomputes everything at every keystroke.

* :func:`live_posterior` (the toy-world chapter): the exact posterior of each blank, by the
  same forward-backward as :meth:`ToyWorld.posterior <mlmlib.toyworld.ToyWorld.posterior>`,
  run in the page on the world's tables.

* :func:`live_ask_model` (the toy-world chapter): for each blank, the exact posterior's
  likeliest words beside the stored model's (its softmax over the toy world's words only, the
  special tokens left out), and three numbers in nats: the entropy of the exact posterior (the
  loss it pays on average when the world writes the blank), the model's cross-entropy against
  it (the model's loss on the same average) and their difference, the KL divergence.
* :func:`live_attention` (the encoder chapter): each layer's and each head's attention
  weights from the first blank, or from any position the reader picks.

The stored model (:func:`~mlmlib.widgets.toy_model.stored_toy_model`) travels inside the output
(:func:`~mlmlib.widgets.toy_model.toy_model_blob`), the world's tables as for the live
posterior; the page runs the model with ``js/bert.js``, and ``js/ask.js`` and
``js/attention.js`` draw. The static picture, shown where JavaScript is off, is computed here
in float64 and rounded to ``ROUND`` decimals, so that a stored output is the same on every
kind of CPU.

Does not: train the model (``tools/export_toy_model.py`` does), or compute what the page shows
any other way than :class:`~mlmlib.model.MiniBert`,
:meth:`ToyWorld.posterior <mlmlib.toyworld.ToyWorld.posterior>` and
:func:`~mlmlib.toyworld.compare_with_exact` do (tests/test_live_ask.py checks the page against
them in Chromium).

>>> fig = live_ask_model(ToyWorld(), "The small ___ barked.")
>>> fig.config["kind"], fig.config["top"]
('ask', 5)
>>> live_attention("the ___ sat .").config["kind"]
'attention'
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from mlmlib.plots import FONT_SIZE, attention_bars, top_words
from mlmlib.plots._common import _alt
from mlmlib.toyworld import ToyWorld, compare_with_exact
from mlmlib.widgets.live import (
    BLANKS,
    DECIMALS,
    POSTERIOR_DECIMALS,
    WORD_PATTERN,
    LiveFigure,
    read_sentence,
)
from mlmlib.widgets.toy_model import stored_toy_model, toy_model_blob, toy_model_ids

__all__ = ["live_ask_model", "live_attention", "live_posterior"]

#: The sentence both figures start with.
EXAMPLE = "the small ___ barked ."
#: The decimals of every number the static picture draws (float64, then rounded: the same on
#: every kind of CPU).
ROUND = 4
#: The two columns of a blank, the three numbers under them, and their unit.
COLUMNS = ("exact posterior", "stored mini BERT")
MEASURES = ("entropy (the exact posterior's loss)", "cross-entropy (the model's loss)",
            "KL divergence (their difference)")
UNIT = "nats"
#: What the page says under the ask figure.
ASK_NOTE = ("The model's probabilities are its softmax over the toy world's {n} words only (the "
            "special tokens, such as [MASK], left out). Entropy: what a perfect reader, who "
            "bets the exact posterior, pays on average when the world writes the blank. "
            "Cross-entropy: what the model pays, on the same average. KL divergence: their "
            "difference, how much more the model pays. All three in nats.")
#: The attention figure's words: the picker's label, its first choice, the note under it.
ATTENTION_LABELS = {"query": "attention from", "blank": "the first blank"}
ATTENTION_NOTE = ("One panel per head of each layer of the stored mini BERT: a bar per token, "
                  "as tall as the weight (from 0 to 1) that the chosen position gives it; the "
                  "chosen position's own bar is hatched. Each row of weights adds up to 1.")



#: The most words a blank of a toy-world figure may show.
MAX_TOP = 20


def _rule() -> dict:
    """The rule that splits a typed sentence (:func:`read_sentence`'s), as a page reads it."""
    return {"pattern": WORD_PATTERN, "blanks": list(BLANKS)}


def _check_top(top) -> int:
    """``top``, the words each blank shows: a whole number from 1 to :data:`MAX_TOP`."""
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= MAX_TOP:
        raise ValueError(f"top (the words each blank shows) must be a whole number from 1 to "
                         f"{MAX_TOP}, got {top!r}")
    return top


def _exact_posterior(world: ToyWorld, words: list[str], masked: list[int]):
    """The exact posterior of each blank of a typed sentence, ``(|M|, V)``: a blank's word is
    summed over, so any word stands in for it; the world checks the rest."""
    filled = [world.words[0] if i in masked else w for i, w in enumerate(words)]
    return world.posterior(filled, masked)


def _world_tables(world: ToyWorld) -> dict:
    """The toy world's tables as a page's forward-backward reads them (``maths.js``'s
    ``posterior``): its states and words, ``start``, ``trans``, ``stop``, and of ``emit`` only
    the words each state can write."""
    emit = [{v: float(p) for v, p in enumerate(row.tolist()) if p > 0} for row in world.emit]
    return {"states": world.states, "words": world.words, "word_id": world.word_id,
            "start": world.start.tolist(), "trans": world.trans.tolist(),
            "stop": world.stop.tolist(), "emit": emit, "max_len": world.max_len}


def live_posterior(world: ToyWorld, sentence: str = "the small ___ barked .",
                   top: int = 8) -> LiveFigure:
    """A box to type a toy-world sentence with blanks (``___``); the exact posterior of each.

    The page reads the sentence as :func:`~mlmlib.widgets.live.read_sentence` does and runs
    the same forward-backward as :meth:`ToyWorld.posterior <mlmlib.toyworld.ToyWorld.posterior>`
    on the world's tables, which travel with the figure (14 states, about 200 words).
    """
    if not isinstance(world, ToyWorld):
        raise TypeError(f"world must be a ToyWorld, got {type(world).__name__}")
    words, masked = read_sentence(sentence)
    top = _check_top(top)
    if not masked:
        raise ValueError(f"the sentence {sentence!r} has no blank: write {BLANKS[0]} for a "
                         "hidden word")
    posterior = _exact_posterior(world, words, masked)
    tables = _world_tables(world)

    def static() -> Figure:
        fig = Figure(figsize=(5.2, (0.45 * top + 1.2) * len(masked)), layout="constrained")
        for ax, row, i in zip(fig.subplots(len(masked), 1, squeeze=False)[:, 0], posterior,
                              masked, strict=True):
            best = row.topk(min(top, int((row > 0).sum())))  # never a word ruled out
            top_words([world.words[int(v)] for v in best.indices], best.values.tolist(),
                            title=f"blank at position {i + 1}", ax=ax)
        return fig

    return LiveFigure({"kind": "posterior", "world": tables, "sentence": sentence,
                       "rule": _rule(), "top": top,
                       "decimals": POSTERIOR_DECIMALS}, static, "toy-world posterior")

def _forward(ids: list[int]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The stored model in float64 on one sentence: its scores (T, vocabulary), every layer's
    and head's attention weights (layers, heads, T, T), and its vocabulary."""
    model, vocab = stored_toy_model()  # a new model: making it float64 touches no other
    with torch.no_grad():
        out = model.double()(torch.tensor([ids]), score_all=True, return_attention=True)
    return (out.logits[0].numpy(), torch.stack(out.attentions)[:, 0].numpy(), vocab)


def _top(probs: np.ndarray, top: int) -> list[int]:
    """The ``top`` likeliest words that have a probability, by their rounded probability and
    then by their place (so that a near tie falls the same way on every CPU)."""
    rounded = np.round(probs, ROUND)
    return sorted(np.flatnonzero(probs > 0).tolist(), key=lambda v: (-rounded[v], v))[:top]


def _measures(p: np.ndarray, q: np.ndarray) -> dict[str, float]:
    """Entropy of ``p``, cross-entropy of ``q`` against it and KL(p || q), in nats (float64):
    sums over the words that ``p`` gives a probability."""
    seen = p > 0
    return {"entropy": float(-(p[seen] * np.log(p[seen])).sum()),
            "cross": float(-(p[seen] * np.log(q[seen])).sum()),
            "kl": float(compare_with_exact(p[None], q[None])["kl"][0])}


def live_ask_model(world: ToyWorld, sentence: str = EXAMPLE, top: int = 5) -> LiveFigure:
    """A box to type a toy-world sentence with blanks; for each blank, the exact posterior's
    ``top`` likeliest words beside the stored mini BERT's, the posterior's entropy, the model's
    cross-entropy against it and their difference, the KL divergence, in nats.

    ``world`` must write the stored model's words (:class:`~mlmlib.toyworld.ToyWorld`'s), in
    sentences no longer than the model reads. A sentence it could never write is refused with
    a ``ValueError``, as the page refuses it.
    """
    if not isinstance(world, ToyWorld):
        raise TypeError(f"world must be a ToyWorld, got {type(world).__name__}")
    top = _check_top(top)
    ids, masked = toy_model_ids(sentence)  # a str, known words, a blank, not too long
    words, _ = read_sentence(sentence)
    exact = _exact_posterior(world, words, masked).numpy()  # refuses an impossible sentence
    logits, _, vocab = _forward(ids)
    first = len(vocab) - world.vocab_size  # the special tokens come first, then the words
    if vocab[first:] != world.words:
        raise ValueError("world's words are not the stored model's: the model was trained on "
                         "ToyWorld()'s words, in its order")
    scores = logits[[i + 1 for i in masked], first:]  # +1: [CLS] comes first
    model = np.exp(scores - scores.max(axis=1, keepdims=True))
    model /= model.sum(axis=1, keepdims=True)  # softmax over the world's words only
    measures = [_measures(p, q) for p, q in zip(exact, model, strict=True)]

    def static() -> Figure:
        fig = Figure(figsize=(5.6, (0.9 * top + 3.4) * len(masked)), layout="constrained")
        axes = fig.subplots(2 * len(masked), 1, squeeze=False)[:, 0]
        for k, i in enumerate(masked):
            m = {name: round(value, ROUND) for name, value in measures[k].items()}
            shown = []
            for ax, probs, title in (
                    (axes[2 * k], exact[k], f"blank {k + 1} (word {i + 1}), {COLUMNS[0]}\n"
                                            f"entropy {m['entropy']:.{ROUND}f} {UNIT}"),
                    (axes[2 * k + 1], model[k], f"blank {k + 1}, {COLUMNS[1]}\ncross-entropy "
                                                f"{m['cross']:.{ROUND}f} {UNIT}, KL "
                                                f"{m['kl']:.{ROUND}f} {UNIT}")):
                best = _top(probs, top)
                values = np.round(probs[best], ROUND)
                top_words([world.words[v] for v in best], values, title=title, ax=ax)
                shown.append(values.max())
            for ax in axes[2 * k:2 * k + 2]:  # one scale for both: the bars compare
                ax.set_xlim(0, 1.25 * max(shown))
        return fig

    return LiveFigure({"kind": "ask", "model": toy_model_blob(), "world": _world_tables(world),
                       "sentence": sentence, "rule": _rule(), "top": top,
                       "columns": list(COLUMNS), "measures": list(MEASURES),
                       "unit": UNIT, "note": ASK_NOTE.format(n=world.vocab_size),
                       "decimals": POSTERIOR_DECIMALS, "nats_decimals": DECIMALS},
                      static, "ask the model: the stored mini BERT beside the exact posterior")


def live_attention(sentence: str = EXAMPLE) -> LiveFigure:
    """A box to type a toy-world sentence with blanks, and a choice of position (the first
    blank unless the reader picks another); each layer's and each head's attention weights
    from that position, in the stored mini BERT."""
    ids, masked = toy_model_ids(sentence)  # a str, known words, a blank, not too long
    _, attention, vocab = _forward(ids)
    tokens = [vocab[i] for i in ids]
    query = masked[0] + 1  # +1: [CLS] comes first
    rows = np.round(attention[:, :, query], ROUND)  # (layers, heads, T)
    layers, heads = rows.shape[:2]

    def static() -> Figure:
        fig = Figure(figsize=(max(5.2, 0.42 * len(tokens) + 1.8), 1.7 * layers * heads + 1.2),
                     layout="constrained")
        axes = fig.subplots(layers * heads, 1, sharex=True, squeeze=False)[:, 0]
        said = []
        for n, ax in enumerate(axes):
            layer, head = divmod(n, heads)
            attention_bars(tokens, rows[layer, head], query, ax=ax)
            ax.set_title(f"layer {layer + 1}, head {head + 1}", loc="left", fontsize=FONT_SIZE)
            ax.set_ylim(0, 1)
            if n < len(axes) - 1:
                ax.tick_params(labelbottom=False)
            most = int(np.argmax(rows[layer, head]))
            said.append(f"layer {layer + 1}, head {head + 1}: most on {tokens[most]} (position "
                        f"{most}), {rows[layer, head, most]:.{ROUND}f}")
        _alt(list(axes), f"Bar charts of the stored mini BERT's attention weights from "
                         f"{tokens[query]} (position {query}, hatched) to each of the "
                         f"{len(tokens)} tokens of '{' '.join(tokens)}', one panel per head: "
                         + "; ".join(said) + ".")
        return fig

    return LiveFigure({"kind": "attention", "model": toy_model_blob(), "sentence": sentence,
                       "rule": _rule(), "labels": dict(ATTENTION_LABELS),
                       "note": ATTENTION_NOTE, "decimals": POSTERIOR_DECIMALS},
                      static, "attention in the stored mini BERT, live")
