"""mlmlib.plots - the course's figures, drawn from numbers the chapters compute.

Does: draw each picture of the course with matplotlib's object API (no global pyplot state),
so a figure appears once in a notebook and renders the same on the static site. Every
function takes ``ax=None`` (make a new figure) or the axes to draw on, and returns the figure.
Colours come from the Okabe-Ito palette, which stays distinguishable for colour-blind
readers, and the true word is marked by a hatch as well as by colour. Every figure carries an
alt text that says what it shows with the numbers it draws (:func:`alt_text`); a figure shown
in a notebook carries it inside its PNG, where :func:`png_alt` reads it.

Does not: compute anything the loss depends on - it calls :mod:`mlmlib.loss` for that - and
it is never imported by the core modules.

One module per part of the book; every name is importable from ``mlmlib.plots`` itself:

* :mod:`mlmlib.plots.walkthrough` - the walkthrough, Steps 1-7 and the summary (the worked
  examples reuse most of these figures).
* :mod:`mlmlib.plots.worked` - the figures that first appear in the worked examples.
* :mod:`mlmlib.plots.step` - one training step by hand: the learning rate's schedule, and
  the training against the held-out loss.
* :mod:`mlmlib.plots.training` - the training chapters.
* :mod:`mlmlib.plots.lab` - the exact lab: results over seeds, calibration, joint tables.
* :mod:`mlmlib.plots.encoder` - inside the encoder: matrices as heat maps, attention weights,
  GELU, two computations that agree, one dot per seed.
* :mod:`mlmlib.plots.knows` - what the model knows: the scaling law's fits.
* ``mlmlib.plots._common`` - the colours, the font size and the axes helpers they share, and
  the alt text: :func:`alt_text` and :func:`png_alt`.

>>> from mlmlib.plots import softmax_stages
>>> fig = softmax_stages([1, 2, 0, 1], ["the", "cat", "sat", "mat"], truth="cat")
>>> fig.axes[0].get_title(loc="left")
'1. raw scores $s_v$'
>>> alt_text(fig)[:59]
'Three bar charts of the scores, their exponentials (total Z'
"""

from mlmlib.plots._common import (
    FONT_SIZE,
    OKABE_ITO,
    OTHER_COLOUR,
    TRUTH_COLOUR,
    alt_text,
    png_alt,
)
from mlmlib.plots.encoder import (
    agreement,
    attention_map,
    excess_curves,
    gelu_curve,
    heat_panels,
    seed_dots,
)
from mlmlib.plots.knows import power_law_fits
from mlmlib.plots.lab import joint_and_product, lines_with_spread, reliability_diagram
from mlmlib.plots.step import learning_rate_curve, train_and_held_out
from mlmlib.plots.training import attention_bars, hidden_chain, top_words, training_curve
from mlmlib.plots.walkthrough import (
    PIPELINE,
    edge_cases,
    loss_tower,
    neg_log_curve,
    pipeline,
    probability_dial,
    reads_and_answers,
    slot_loss_of,
    slots_and_tower,
    softmax_stages,
    token_row,
)
from mlmlib.plots.worked import grouped_bars

__all__ = [
    "FONT_SIZE",
    "OKABE_ITO",
    "OTHER_COLOUR",
    "PIPELINE",
    "TRUTH_COLOUR",
    "agreement",
    "alt_text",
    "attention_bars",
    "attention_map",
    "edge_cases",
    "excess_curves",
    "gelu_curve",
    "grouped_bars",
    "heat_panels",
    "hidden_chain",
    "joint_and_product",
    "learning_rate_curve",
    "lines_with_spread",
    "loss_tower",
    "neg_log_curve",
    "pipeline",
    "png_alt",
    "power_law_fits",
    "probability_dial",
    "reads_and_answers",
    "reliability_diagram",
    "seed_dots",
    "slot_loss_of",
    "slots_and_tower",
    "softmax_stages",
    "token_row",
    "top_words",
    "train_and_held_out",
    "training_curve",
]
