"""mlmlib.widgets - the interactive figures of the course: live in the page, or on a kernel.

Does: :mod:`mlmlib.widgets.live` makes the chapters' "Try it" figures, which compute and
redraw in the reader's browser (the published site, Jupyter, Colab) with no kernel;
:mod:`mlmlib.widgets.kernel` wraps the matplotlib figures in ipywidgets controls, for a reader
who wants the exact matplotlib pictures redrawn by a live Python kernel.

Does not: compute the loss or draw a matplotlib figure itself (:mod:`mlmlib.loss` and
:mod:`mlmlib.plots` do).
"""

from mlmlib.widgets.kernel import (
    Explorer,
    mask_picker,
    neg_log_slider,
    slot_sliders,
    softmax_sliders,
)
from mlmlib.widgets.live import (
    LiveFigure,
    live_dial,
    live_edge_cases,
    live_mask,
    live_neg_log,
    live_posterior,
    live_softmax,
    live_tower,
)

__all__ = ["Explorer", "LiveFigure", "live_dial", "live_edge_cases", "live_mask",
           "live_neg_log", "live_posterior", "live_softmax", "live_tower", "mask_picker",
           "neg_log_slider", "slot_sliders", "softmax_sliders"]
