"""mlmlib.widgets.live - the "Try it" figures, live in the page: on the published site, in
Jupyter and in Colab, with no kernel behind them.

Does: each function returns a :class:`LiveFigure`. Shown in a notebook, it is one HTML output:
the figure's settings (JSON), a static picture drawn by the course's plotting function at
those settings, and a small script (``live.js``, beside this file, inlined so that Colab and an
offline page need nothing else). Where JavaScript runs, the script replaces the picture by
controls and a drawing that it recomputes at every move: softmax, ``-log p``, sums and the toy
world's forward-backward are cheap enough for a browser. Where it does not (JavaScript off, a
notebook viewer, nbval), the static picture stays; its alt text is the one its plotting function
computed (:func:`mlmlib.plots.alt_text`), which its PNG carries too. The numbers the page
computes agree with ``mlmlib``'s to about 1e-15 (a sum may be added in another order):
tests/test_site.py moves the controls in Chromium and compares. A starting value must lie on
its slider's steps (0.1 for a score, 0.001 for a probability), so that the page starts where the
picture does.

* :func:`live_mask` - click words to hide them (Steps 1 and 2);
* :func:`live_dial` - the probability of the truth on a dial (Step 3);
* :func:`live_softmax` - a slider per score, the three stages of softmax (Step 4);
* :func:`live_neg_log` - the reader's ``p`` on the curve ``-log p`` (Step 5);
* :func:`live_tower` - hide words, set each one's probability, see the loss tower (Step 6);
* :func:`live_edge_cases` - ``|M|`` slots at probability ``P``, down to ``1e-12`` (Step 7);
* :func:`live_posterior` - type a toy-world sentence with blanks, read the exact posterior.

Does not: compute anything the library's functions do not (the page recomputes the same
formulas), or need ipywidgets (:mod:`mlmlib.widgets.kernel` has those, for a live kernel).

>>> fig = live_softmax([1, 2, 0, 1], ["the", "cat", "mat", "sat"], truth="cat")
>>> fig.config["kind"], fig.config["scores"]
('softmax', [1.0, 2.0, 0.0, 1.0])
>>> "<script" in fig._repr_html_() and "data:image/png;base64," in fig._repr_html_()
True
"""

from __future__ import annotations

import base64
import functools
import html
import io
import json
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from mlmlib import plots
from mlmlib.masking import mask_positions
from mlmlib.plots._common import (
    OKABE_ITO,
    OTHER_COLOUR,
    TRUTH_COLOUR,
    _labels,
    _mapping,
    _numbers,
    _positions,
)
from mlmlib.toyworld import ToyWorld

__all__ = ["LiveFigure", "live_dial", "live_edge_cases", "live_mask", "live_neg_log",
           "live_posterior", "live_softmax", "live_tower"]

#: The colours the page draws with: the plotting functions' own (Okabe-Ito).
COLOURS = {
    "truth": TRUTH_COLOUR,
    "other": OTHER_COLOUR,
    "palette": [OKABE_ITO[c] for c in ("blue", "orange", "green", "purple", "sky", "yellow")],
    "bands": [OKABE_ITO["vermillion"], OKABE_ITO["yellow"], OKABE_ITO["green"]],
}
#: What a reader may type for a blank in the toy world's sentence.
BLANKS = ("___", "_", "[mask]")


@functools.cache
def _script() -> str:
    return (Path(__file__).with_name("live.js")).read_text(encoding="utf-8")


def _on_steps(value: float, step: float, name: str) -> float:
    """``value`` as it lies on a slider moving in ``step``s; one between two steps is refused."""
    k = round(value / step)
    digits = len(f"{step:g}".partition(".")[2])
    if abs(value - k * step) > 1e-9:
        raise ValueError(f"{name} = {value!r} lies between its slider's steps of {step:g}: "
                         f"round it (to {k * step:.{digits}f}, say)")
    return round(k * step, digits)


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    alt = plots.alt_text(figure)
    figure.savefig(buffer, format="png", dpi=72, metadata={"Description": alt} if alt else None)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class LiveFigure:
    """A figure that the page recomputes as the reader moves its controls.

    ``config`` holds what the page needs (JSON); ``static()`` draws the picture shown where
    JavaScript does not run, with the course's plotting function at the same settings.
    """

    def __init__(self, config: dict, static, title: str):
        self.config = {**config, "title": title, "colours": COLOURS}
        self.title = title
        self._static = static

    def static(self) -> Figure:
        """The picture at the figure's starting settings (matplotlib)."""
        return self._static()

    def _repr_html_(self) -> str:
        settings = json.dumps(self.config, sort_keys=True, ensure_ascii=False).replace("</", "<\\/")
        figure = self.static()
        alt = html.escape(plots.alt_text(figure) or self.title)  # what the picture shows
        return (f'<div class="mlm-live" data-kind="{self.config["kind"]}">'
                f'<script type="application/json" class="mlm-config">{settings}</script>'
                f'<div class="mlm-static"><img alt="{alt}" style="max-width:100%" '
                f'src="data:image/png;base64,{_png(figure)}"></div></div>'
                f"<script>{_script()}</script>")

    def __repr__(self) -> str:  # what a plain-text viewer sees
        return f"<live figure: {self.title}; its controls work in a browser>"


def live_mask(tokens: Sequence[str], hidden: Sequence[int] = (),
              mask_token: str = "[MASK]") -> LiveFigure:
    """Buttons that hide and reveal ``tokens`` (positions from 0); the reads and the answers."""
    tokens = _labels(tokens, "tokens", text=True)
    hidden = sorted(set(_positions(hidden, len(tokens), "hidden",
                                   "cannot hide position {p} of a {n}-token sentence")))
    mask_positions(tokens, hidden, mask_token=mask_token)  # the library's checks, once
    return LiveFigure({"kind": "mask", "tokens": tokens, "hidden": hidden,
                       "mask_token": mask_token},
                      lambda: plots.reads_and_answers(tokens, hidden, mask_token=mask_token),
                      "mask picker: click words to hide them")


def live_dial(p: float, label: str = "P(truth)") -> LiveFigure:
    """A slider for the probability of the truth, on Step 3's dial."""
    p = _on_steps(float(_numbers(p, "p (a probability)", 0, 1, ndim=0)), 0.001, "p")
    if not isinstance(label, str):
        raise TypeError(f"label must be a string such as 'P(cat)', got {label!r}")
    return LiveFigure({"kind": "dial", "p": p, "label": label},
                      lambda: plots.probability_dial(p, label=label), "probability dial")


def live_softmax(scores: Sequence[float], words: Sequence[str],
                 truth: str | None = None) -> LiveFigure:
    """A slider per word's score (-5 to 5, further when a score is); softmax's three stages."""
    scores = [_on_steps(float(s), 0.1, "a score") for s in _numbers(scores, "scores", -50, 50,
                                                                     ndim=1)]
    words = _labels(words, "words", unique=True, text=True)
    if len(scores) != len(words):
        raise ValueError(f"{len(words)} words but {len(scores)} scores")
    if truth is not None and truth not in words:
        raise ValueError(f"the true word {truth!r} is not among {words}")
    return LiveFigure({"kind": "softmax", "scores": scores, "words": words, "truth": truth},
                      lambda: plots.softmax_stages(scores, words, truth=truth),
                      "softmax explorer")


def live_neg_log(p: float = 0.5, points: dict[str, float] | None = None) -> LiveFigure:
    """A slider for ``P(truth)`` from 0.001 to 1, shown on the curve ``-log p``."""
    p = _on_steps(float(_numbers(p, "p (a probability)", 0.001, 1, ndim=0)), 0.001, "p")
    points = _mapping(points, "points", "label -> p", empty=True)
    if "your p" in points:
        raise ValueError("points cannot use the label 'your p': it names the slider's point")
    points = {str(k): float(_numbers(v, f"point {k!r}: p", 0.001, 1, ndim=0))
              for k, v in points.items()}
    return LiveFigure({"kind": "neglog", "p": p, "points": points},
                      lambda: plots.neg_log_curve({**points, "your p": p}),
                      "-log p explorer")


def live_tower(tokens: Sequence[str], probs: dict[int, float],
               mask_token: str = "[MASK]") -> LiveFigure:
    """Hide words of ``tokens`` and set each hidden word's probability; the loss tower.

    ``probs`` maps the positions hidden at first (from 0) to the probability the model gives
    the true word there; a word the reader hides later starts at 0.5.
    """
    tokens = _labels(tokens, "tokens", text=True)
    probs = _mapping(probs, "probs", "position -> P(truth)", empty=True)
    _positions(list(probs), len(tokens), "probs", "cannot hide position {p} of a {n}-token "
               "sentence")
    probs = {int(i): _on_steps(float(_numbers(p, f"P at position {i}", 0.001, 1, ndim=0)),
                               0.001, f"P at position {i}") for i, p in sorted(probs.items())}
    mask_positions(tokens, list(probs), mask_token=mask_token)  # the same checks

    def static() -> Figure:
        return plots.slots_and_tower({f"P({tokens[i]})": p for i, p in probs.items()})

    return LiveFigure({"kind": "tower", "tokens": tokens, "probs": probs,
                       "mask_token": mask_token}, static, "loss tower explorer")


def live_edge_cases(k: int = 3, log10p: float = -10.0) -> LiveFigure:
    """``k`` masked slots (0 to 5), each giving the truth ``P = 10**log10p`` (down to 1e-12).

    Without JavaScript it shows Step 7's four panels
    (:func:`mlmlib.plots.walkthrough.edge_cases`), which do not depend on ``k`` and ``log10p``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 5:
        raise ValueError(f"k (the number of masked slots) must be a whole number from 0 to 5, "
                         f"got {k!r}")
    log10p = float(_numbers(log10p, "log10p", -12, 0, ndim=0))
    if (2 * log10p) % 1:
        raise ValueError(f"log10p moves in steps of 0.5, got {log10p}")
    return LiveFigure({"kind": "edge", "k": k, "log10p": log10p}, plots.edge_cases,
                      "edge-case explorer")


def live_posterior(world: ToyWorld, sentence: str = "the small ___ barked .",
                   top: int = 8) -> LiveFigure:
    """A box to type a toy-world sentence with blanks (``___``); the exact posterior of each.

    The page runs the same forward-backward as
    :meth:`ToyWorld.posterior <mlmlib.toyworld.ToyWorld.posterior>` on the world's
    tables, which travel with the figure (14 states, about 200 words).
    """
    if not isinstance(world, ToyWorld):
        raise TypeError(f"world must be a ToyWorld, got {type(world).__name__}")
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a string such as 'the small ___ barked .', got "
                        f"{sentence!r}")
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 20:
        raise ValueError(f"top must be a whole number from 1 to 20, got {top!r}")
    words = sentence.lower().replace(".", " . ").split()  # "barked." is "barked ."
    masked = [i for i, w in enumerate(words) if w in BLANKS]
    if not masked:
        raise ValueError(f"the sentence {sentence!r} has no blank: write ___ for a hidden word")
    filled = [world.words[0] if i in masked else w for i, w in enumerate(words)]  # any word:
    posterior = world.posterior(filled, masked)  # a hidden one is summed over; it checks the rest
    emit = [{v: float(p) for v, p in enumerate(row.tolist()) if p > 0} for row in world.emit]
    tables = {"states": world.states, "words": world.words, "word_id": world.word_id,
              "start": world.start.tolist(), "trans": world.trans.tolist(),
              "stop": world.stop.tolist(), "emit": emit, "max_len": world.max_len}

    def static() -> Figure:
        fig = Figure(figsize=(5.2, (0.45 * top + 1.2) * len(masked)), layout="constrained")
        for ax, row, i in zip(fig.subplots(len(masked), 1, squeeze=False)[:, 0], posterior,
                              masked, strict=True):
            best = row.topk(min(top, int((row > 0).sum())))  # never a word ruled out
            plots.top_words([world.words[int(v)] for v in best.indices], best.values.tolist(),
                            title=f"blank at position {i + 1}", ax=ax)
        return fig

    return LiveFigure({"kind": "posterior", "world": tables, "sentence": sentence,
                       "blanks": list(BLANKS), "top": top}, static, "toy-world posterior")
