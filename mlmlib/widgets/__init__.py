"""mlmlib.widgets - the interactive figures of the course, live in the page.

Does: :mod:`mlmlib.widgets.live` makes the chapters' "Try it" figures, which compute and
redraw in the reader's browser (the published site, Jupyter, Colab) with no kernel; their
script is put together from the modules of ``mlmlib/widgets/js/``, shipped with the package.
:mod:`mlmlib.widgets.toy_model` stores the course's trained toy-world mini BERT with the
package (``widgets/data/toy_model.json``) and gives it back as a ``MiniBert``, or as a compact
text that a page carries and runs with ``js/bert.js``. :mod:`mlmlib.widgets.ask` puts the toy
world live in the page: its exact posterior, "ask the model" beside it, and the model's
attention weights.

Does not: compute the loss or draw a matplotlib figure itself (:mod:`mlmlib.loss` and
:mod:`mlmlib.plots` do), or need a running kernel or ipywidgets.

>>> live_dial(0.25).config["sliders"][0]["value"]
0.25
"""

from mlmlib.widgets.ask import live_ask_model, live_attention, live_posterior
from mlmlib.widgets.live import (
    MODULES,
    LiveFigure,
    live_dial,
    live_edge_cases,
    live_mask,
    live_neg_log,
    live_softmax,
    live_tower,
    read_sentence,
    script,
    script_hash,
)
from mlmlib.widgets.toy_model import (
    stored_toy_model,
    toy_model_blob,
    toy_model_ids,
    write_toy_model,
)

__all__ = ["MODULES", "LiveFigure", "live_ask_model", "live_attention", "live_dial",
           "live_edge_cases", "live_mask", "live_neg_log", "live_posterior", "live_softmax",
           "live_tower", "read_sentence", "script", "script_hash", "stored_toy_model",
           "toy_model_blob", "toy_model_ids", "write_toy_model"]
