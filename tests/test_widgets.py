"""Drive the widgets as a reader would: change a control, check the figure followed."""

import numpy as np

from mlmlib.loss import softmax
from mlmlib.widgets import mask_picker, neg_log_slider, slot_sliders, softmax_sliders


def test_softmax_sliders_redraw_the_bars():
    w = softmax_sliders([1, 2, 0, 1], ["the", "cat", "mat", "sat"], truth="cat")
    first = w.figure
    assert np.allclose([b.get_height() for b in first.axes[2].patches], softmax([1, 2, 0, 1]))
    w.controls[2].value = 4.0  # "mat"
    assert w.figure is not first
    assert np.allclose([b.get_height() for b in w.figure.axes[2].patches],
                       softmax([1, 2, 4, 1]))
    assert "softmax explorer" in repr(w) and "model_id" not in repr(w)


def test_neg_log_slider_moves_the_point():
    w = neg_log_slider(0.5)
    w.controls[0].value = 0.25
    x, y = w.figure.axes[0].lines[-1].get_data()
    assert np.isclose(x[0], 0.25) and np.isclose(y[0], -np.log(0.25))


def test_slot_sliders_restack_the_tower():
    w = slot_sliders({"P(sat)": 0.4, "P(the)": 0.2})
    tower = w.figure.axes[-1]
    assert np.isclose(sum(p.get_height() for p in tower.patches), -np.log(0.08))
    w.controls[1].value = 1.0
    tower = w.figure.axes[-1]
    assert np.isclose(sum(p.get_height() for p in tower.patches), -np.log(0.4))


def test_mask_picker_updates_m():
    w = mask_picker(["the", "cat", "sat"])
    assert w.figure.texts[0].get_text() == "M = {} (empty)"
    w.controls[1].value = True
    assert w.figure.texts[0].get_text() == "M = {2}"
    reads = [t.get_text() for t in w.figure.axes[0].texts]
    assert reads == ["the", "?", "sat"]
    w.controls[2].value = True
    assert w.figure.texts[0].get_text() == "M = {2, 3}"
