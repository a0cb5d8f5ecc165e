"""mlmlib.widgets.live - the "Try it" figures, live in the page: on the published site, in
Jupyter and in Colab, with no kernel behind them.

Does: each function returns a :class:`LiveFigure`. Shown in a notebook, it is one HTML output:
the figure's settings (JSON), a static picture drawn by the course's plotting function at
those settings, and the page's script (:func:`script`: the modules of ``widgets/js/``, put
together in a fixed order inside one function, and inlined, so that Colab, which gives each
output a frame of its own, and an offline page need nothing else). Where JavaScript runs, the
script replaces the picture by controls and a drawing that it recomputes at every move:
softmax, ``-log p``, sums and the toy world's forward-backward are cheap enough for a browser.
Where it does not (JavaScript off, a notebook viewer, nbval), the static picture stays; its alt
text is the one its plotting function computed (:func:`mlmlib.plots.alt_text`), which its PNG
carries too.

One source per figure: everything a figure draws with that Python knows (slider ranges and
steps, the dial's bands, colours, the bars' headroom, titles and labels, the blank words, the
rule that splits a typed sentence) is defined once, here or in :mod:`mlmlib.plots`, and travels
in the figure's settings; the script holds only the page's own layout. Its maths agrees with
``mlmlib``'s to about 1e-15 (a sum may be added in another order): tests/test_live_js.py calls
it in Chromium on thousands of random inputs, and tests/test_site.py moves the controls of
every figure of the site. A starting value must lie on its slider's steps (``SCORE_STEP`` for a
score, ``P_STEP`` for a probability), so that the page starts where the picture does.

* :func:`live_mask` - click words to hide them (Steps 1 and 2);
* :func:`live_dial` - the probability of the truth on a dial (Step 3);
* :func:`live_softmax` - a slider per score, the three stages of softmax (Step 4);
* :func:`live_neg_log` - the reader's ``p`` on the curve ``-log p`` (Step 5);
* :func:`live_tower` - hide words, set each one's probability, see the loss tower (Step 6);
* :func:`live_edge_cases` - ``|M|`` slots at probability ``P``, down to ``1e-12`` (Step 7).

The toy world's figures (its exact posterior, ``posterior.js``; the course's trained mini BERT
beside it, ``ask.js``, ``attention.js``) are made by :mod:`mlmlib.widgets.ask`, with the same
:class:`LiveFigure` and script; a typed sentence is read by :func:`read_sentence`, as the page
reads it.

The script element carries the first 16 hex digits of the script's SHA-256
(:func:`script_hash`): tests/test_widgets.py checks that every committed live output carries
the current script (``make live-chapters`` re-executes the chapters that have one).

Does not: compute anything the library's functions do not (the page recomputes the same
formulas), or need a kernel, or ipywidgets.

>>> fig = live_softmax([1, 2, 0, 1], ["the", "cat", "mat", "sat"], truth="cat")
>>> fig.config["kind"], [s["value"] for s in fig.config["sliders"]]
('softmax', [1.0, 2.0, 0.0, 1.0])
>>> html = fig._repr_html_()
>>> f'<script data-mlm-script="{script_hash()}">' in html and "data:image/png;base64," in html
True
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import io
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from mlmlib import plots
from mlmlib._checks import indices, items, mapping, numbers
from mlmlib.masking import mask_positions
from mlmlib.plots._common import OTHER_COLOUR, TRUTH_COLOUR, _plain
from mlmlib.plots.walkthrough import (
    BAR_HEADROOM,
    DIAL_BANDS,
    DIAL_NEEDLE,
    DIAL_TICK_RADIUS,
    DIAL_TICKS,
    EDGE_P_MIN,
    EDGE_TITLES,
    MARKED_FILL,
    NEG_LOG_P_MIN,
    NEG_LOG_XLABEL,
    NEG_LOG_YLABEL,
    PLAIN_FILL,
    ROW_TITLES,
    SOFTMAX_STAGES,
    STACK_COLOURS,
)

__all__ = ["MODULES", "LiveFigure", "live_dial", "live_edge_cases", "live_mask", "live_neg_log",
           "live_softmax", "live_tower", "read_sentence", "script", "script_hash"]

#: The message for a position outside the sentence, where the reader hides words.
HIDE_OUTSIDE = "{name}: cannot hide position {p} of a {n}-token sentence (positions are 0..{last})"

#: The colours the page draws with: the plotting functions' own (Okabe-Ito), and two for the
#: page's buttons: a pressed one's background (vermillion darkened, so that white text on it
#: stays readable) and the text on a light box or button, in a dark theme too.
COLOURS = {
    "truth": TRUTH_COLOUR,
    "other": OTHER_COLOUR,
    "stack": list(STACK_COLOURS),
    "box": {"marked": MARKED_FILL, "plain": PLAIN_FILL},
    "pressed": "#A63F00",
    "ink": "#111111",
}
#: A probability's slider moves in steps of 0.001, a score's in steps of 0.1 from -5 to 5
#: (further when a starting score lies further out).
P_STEP = 0.001
SCORE_STEP, SCORE_SPAN = 0.1, 5
#: The decimals the page shows a probability or a loss with, as the static pictures print them
#: (a posterior's bars: 3, as :func:`mlmlib.plots.top_words`).
DECIMALS, POSTERIOR_DECIMALS = 4, 3
#: The probability of the truth, as a slider names it, and the reader's point on the curve -log p.
TRUTH_P, YOUR_P = "P(truth)", "your p"
#: The probability a word hidden later in the tower figure starts at.
NEW_SLOT_P = 0.5
#: The edge-case figure: at most this many masked slots; P = 10**log10p, log10p in steps of 0.5
#: down to log10(EDGE_P_MIN); below NEAR_ZERO (one in a hundred) the page names case C.
MAX_SLOTS, LOG10P_STEP, NEAR_ZERO = 5, 0.5, 0.01
#: What a reader may type for a blank in the toy world's sentence (after lower-casing).
BLANKS = ("___", "_", "[mask]")
#: How a typed sentence splits into words, after lower-casing: a full stop is a word of its own
#: ("barked." is "barked ."), every other word runs up to a space or a full stop. The page splits
#: with the same pattern: Python's re and JavaScript's RegExp read it alike.
WORD_PATTERN = r"\.|[^.\t\n\v\f\r \u00a0]+"
#: The script's modules in widgets/js/, in the order they are put together (the maths, the mini
#: BERT's forward pass, the drawing kit, one module per figure, and last the mounting).
MODULES = ("maths.js", "bert.js", "bertio.js", "draw.js", "charts.js", "curve.js", "mask.js",
           "dial.js", "softmax.js", "neglog.js", "tower.js", "edge.js", "posterior.js", "ask.js",
           "attention.js", "mount.js")
_HEAD = ("/* mlmlib live figures: the \"Try it\" figures of the course, computed and drawn in the "
         "page.\n * Put together by mlmlib/widgets/live.py from mlmlib/widgets/js/ ({modules}); "
         "each module\n * says what it does. */\n")


@functools.cache
def script() -> str:
    """The live figures' script: the modules of ``widgets/js/`` in :data:`MODULES`' order,
    inside one function (an output must carry one script, whole)."""
    folder = Path(__file__).with_name("js")
    body = "\n".join(folder.joinpath(name).read_text(encoding="utf-8") for name in MODULES)
    built = (_HEAD.format(modules=", ".join(MODULES)) + '(function () {\n"use strict";\n\n'
             + body + "})();\n")
    if "</script" in built.lower():  # it sits inside a <script> element
        raise ValueError("a module of widgets/js/ contains '</script': write '<\\/script'")
    return built


def script_hash() -> str:
    """The first 16 hex digits of the SHA-256 of :func:`script`: what the script element of
    every live output carries (``data-mlm-script``)."""
    return hashlib.sha256(script().encode("utf-8")).hexdigest()[:16]


def read_sentence(sentence: str) -> tuple[list[str], list[int]]:
    """A typed sentence's words, lower-cased, and the positions of its blanks, as the page reads
    them (by ``WORD_PATTERN``; a blank is one of ``BLANKS``).

    >>> read_sentence("The small ___ barked.")
    (['the', 'small', '___', 'barked', '.'], [2])
    """
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a string such as 'the small ___ barked .', got "
                        f"{sentence!r}")
    words = re.findall(WORD_PATTERN, sentence.lower())
    return words, [i for i, w in enumerate(words) if w in BLANKS]


def _decimals(step: float) -> int:
    return len(f"{step:g}".partition(".")[2])


def _on_steps(value: float, step: float, name: str) -> float:
    """``value`` as it lies on a slider moving in ``step``s; one between two steps is refused."""
    k = round(value / step)
    digits = _decimals(step)
    if abs(value - k * step) > 1e-9:
        raise ValueError(f"{name} = {value!r} lies between its slider's steps of {step:g}: "
                         f"round it (to {k * step:.{digits}f}, say)")
    return round(k * step, digits)


def _range(low: float, high: float, step: float) -> dict:
    """Where a slider runs, in what steps, and the decimals it shows its value with."""
    return {"min": low, "max": high, "step": step, "decimals": _decimals(step)}


def _slider(name: str, label: str, low: float, high: float, step: float,
            value: float) -> dict:
    """A slider's settings, as the page builds it (``value`` already on its steps)."""
    return {"name": name, "label": label, **_range(low, high, step), "value": value}


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
                f'<script data-mlm-script="{script_hash()}">{script()}</script>')

    def __repr__(self) -> str:  # what a plain-text viewer sees
        return f"<live figure: {self.title}; its controls work in a browser>"


def live_mask(tokens: Sequence[str], hidden: Sequence[int] = (),
              mask_token: str = "[MASK]") -> LiveFigure:
    """Buttons that hide and reveal ``tokens`` (positions from 0); the reads and the answers."""
    tokens = items(tokens, "tokens", "words or names", text=True, empty=False)
    hidden = sorted(set(indices(hidden, "hidden", len(tokens), phrase=HIDE_OUTSIDE)))
    mask_positions(tokens, hidden, mask_token=mask_token)  # the library's checks, once
    return LiveFigure({"kind": "mask", "tokens": tokens, "hidden": hidden,
                       "mask_token": mask_token, "rows": [plain for _, plain in ROW_TITLES]},
                      lambda: plots.reads_and_answers(tokens, hidden, mask_token=mask_token),
                      "mask picker: click words to hide them")


def live_dial(p: float, label: str = "P(truth)") -> LiveFigure:
    """A slider for the probability of the truth, on Step 3's dial."""
    p = _on_steps(float(numbers(p, "p (a probability)", 0, 1, ndim=0)), P_STEP, "p")
    if not isinstance(label, str):
        raise TypeError(f"label must be a string such as 'P(cat)', got {label!r}")
    return LiveFigure({"kind": "dial", "sliders": [_slider("p", label, 0, 1, P_STEP, p)],
                       "label": label, "bands": [list(band) for band in DIAL_BANDS],
                       "ticks": list(DIAL_TICKS), "tick_radius": DIAL_TICK_RADIUS,
                       "needle": DIAL_NEEDLE, "decimals": DECIMALS},
                      lambda: plots.probability_dial(p, label=label), "probability dial")


def live_softmax(scores: Sequence[float], words: Sequence[str],
                 truth: str | None = None) -> LiveFigure:
    """A slider per word's score (-5 to 5, further when a score is); softmax's three stages."""
    scores = [_on_steps(float(s), SCORE_STEP, "a score")
              for s in numbers(scores, "scores", -50, 50, ndim=1)]
    words = items(words, "words", "words or names", text=True, empty=False, unique=True)
    if len(scores) != len(words):
        raise ValueError(f"{len(words)} words but {len(scores)} scores")
    if truth is not None and truth not in words:
        raise ValueError(f"the true word {truth!r} is not among {words}")
    sliders = [_slider(f"score-{i}", f"score({w})", min(-SCORE_SPAN, math.floor(s)),
                       max(SCORE_SPAN, math.ceil(s)), SCORE_STEP, s)
               for i, (s, w) in enumerate(zip(scores, words, strict=True))]
    stages = [[_plain(title), ylabel] for title, ylabel in SOFTMAX_STAGES]
    return LiveFigure({"kind": "softmax", "sliders": sliders, "words": words, "truth": truth,
                       "stages": stages, "headroom": BAR_HEADROOM, "decimals": DECIMALS},
                      lambda: plots.softmax_stages(scores, words, truth=truth),
                      "softmax explorer")


def live_neg_log(p: float = 0.5, points: dict[str, float] | None = None) -> LiveFigure:
    """A slider for ``P(truth)`` from 0.001 to 1, shown on the curve ``-log p``."""
    p = _on_steps(float(numbers(p, "p (a probability)", NEG_LOG_P_MIN, 1, ndim=0)), P_STEP, "p")
    points = mapping(points, "points", "label -> p", empty=True)
    if YOUR_P in points:
        raise ValueError(f"points cannot use the label {YOUR_P!r}: it names the slider's point")
    points = {str(k): float(numbers(v, f"point {k!r}: p", NEG_LOG_P_MIN, 1, ndim=0))
              for k, v in points.items()}
    return LiveFigure({"kind": "neglog", "sliders": [_slider("p", TRUTH_P, NEG_LOG_P_MIN, 1, P_STEP,
                                                             p)],
                       "points": points, "you": YOUR_P, "p_min": NEG_LOG_P_MIN,
                       "axes": [NEG_LOG_XLABEL, NEG_LOG_YLABEL[1]], "decimals": DECIMALS},
                      lambda: plots.neg_log_curve({**points, YOUR_P: p}),
                      "-log p explorer")


def _slot_name(tokens: Sequence[str], i: int) -> str:
    """``P(x₂ = fat)``: the position tells apart a word that occurs twice ("the")."""
    return f"P(x{str(i + 1).translate(str.maketrans('0123456789', '₀₁₂₃₄₅₆₇₈₉'))} = {tokens[i]})"


def live_tower(tokens: Sequence[str], probs: dict[int, float],
               mask_token: str = "[MASK]") -> LiveFigure:
    """Hide words of ``tokens`` and set each hidden word's probability; the loss tower.

    ``probs`` maps the positions hidden at first (from 0) to the probability the model gives
    the true word there; a word the reader hides later starts at ``NEW_SLOT_P`` (0.5). Each slot
    is named by its position and word, ``P(x₂ = fat)``, in the picture and on the page.
    """
    tokens = items(tokens, "tokens", "words or names", text=True, empty=False)
    probs = mapping(probs, "probs", "position -> P(truth)", empty=True)
    indices(list(probs), "probs", len(tokens), phrase=HIDE_OUTSIDE)
    probs = {int(i): _on_steps(float(numbers(p, f"P at position {i}", NEG_LOG_P_MIN, 1,
                                              ndim=0)), P_STEP, f"P at position {i}")
             for i, p in sorted(probs.items())}
    mask_positions(tokens, list(probs), mask_token=mask_token)  # the same checks
    names = [_slot_name(tokens, i) for i in range(len(tokens))]

    def static() -> Figure:
        return plots.slots_and_tower({names[i]: p for i, p in probs.items()})

    return LiveFigure({"kind": "tower", "tokens": tokens, "probs": probs,
                       "mask_token": mask_token, "slot_names": names,
                       "blocks": [f"\u2212log {name}" for name in names],
                       "slot_slider": _range(NEG_LOG_P_MIN, 1, P_STEP),
                       "new_p": NEW_SLOT_P, "decimals": DECIMALS},
                      static, "loss tower explorer")


def live_edge_cases(k: int = 3, log10p: float = -10.0) -> LiveFigure:
    """``k`` masked slots (0 to 5), each giving the truth ``P = 10**log10p`` (down to 1e-12).

    Without JavaScript it shows Step 7's four panels
    (:func:`mlmlib.plots.walkthrough.edge_cases`), which do not depend on ``k`` and ``log10p``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_SLOTS:
        raise ValueError(f"k (the number of masked slots) must be a whole number from 0 to "
                         f"{MAX_SLOTS}, got {k!r}")
    lowest = round(math.log10(EDGE_P_MIN))
    log10p = _on_steps(float(numbers(log10p, "log10p", lowest, 0, ndim=0)), LOG10P_STEP,
                       "log10p")
    sliders = [_slider("k", "masked slots |M|", 0, MAX_SLOTS, 1, k),
               _slider("log10p", f"{TRUTH_P} = 10^", lowest, 0, LOG10P_STEP, log10p)]
    empty, perfect, near_zero, _ = EDGE_TITLES
    return LiveFigure({"kind": "edge", "sliders": sliders, "p_min": EDGE_P_MIN, "p_name": TRUTH_P,
                       "axes": [NEG_LOG_XLABEL, NEG_LOG_YLABEL[1]],
                       "cases": {"empty": empty, "perfect": perfect, "near_zero": near_zero,
                                 "ordinary": "an ordinary guess"},
                       "near_zero": NEAR_ZERO, "decimals": DECIMALS},
                      plots.edge_cases, "edge-case explorer")
