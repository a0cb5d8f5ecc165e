"""The figures draw the numbers they are given, take ax=None or axes, and refuse bad input."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from mlmlib import plots
from mlmlib.loss import softmax


def test_softmax_stages_draws_the_probabilities():
    fig = plots.softmax_stages([1, 2, 0, 1], ["the", "cat", "mat", "sat"], truth="cat")
    heights = [b.get_height() for b in fig.axes[2].patches]
    assert np.allclose(heights, softmax([1, 2, 0, 1]))
    assert fig.axes[2].patches[1].get_hatch() == "//"  # the truth is marked by more than colour
    assert all(ax.get_ylabel() for ax in fig.axes)


def test_softmax_stages_on_given_axes_and_errors():
    fig = Figure()
    axes = fig.subplots(1, 3)
    assert plots.softmax_stages([1, 2], ["a", "b"], ax=axes) is fig
    with pytest.raises(ValueError, match="needs 3 axes"):
        plots.softmax_stages([1, 2], ["a", "b"], ax=axes[:2])
    with pytest.raises(ValueError, match="2 words but 3 scores"):
        plots.softmax_stages([1, 2, 3], ["a", "b"])
    with pytest.raises(ValueError, match="not among"):
        plots.softmax_stages([1, 2], ["a", "b"], truth="c")


def test_token_row():
    fig = plots.token_row(["the", "[MASK]", "sat"], highlight=[1], notes={1: "label: cat"})
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["the", "[MASK]", "label: cat", "sat"]
    with pytest.raises(ValueError, match="outside the 3-token row"):
        plots.token_row(["a", "b", "c"], highlight=[3])


def test_grouped_bars_neg_log_curve_and_tower():
    fig = plots.grouped_bars(["0", "1"], {"a": [0.5, 0.5], "b": [1.0, 0.0]},
                             errors={"a": [0.1, 0.1]}, ylabel="share")
    assert isinstance(fig, Figure) and len(fig.axes[0].patches) == 4
    with pytest.raises(ValueError, match="2 values for 3 categories"):
        plots.grouped_bars(["0", "1", "2"], {"a": [1, 2]})
    fig = plots.neg_log_curve({"p = 0.5": 0.5}, log_x=True)
    line = fig.axes[0].lines[0]
    assert np.allclose(line.get_ydata(), -np.log(line.get_xdata()))
    with pytest.raises(ValueError, match="must lie in"):
        plots.neg_log_curve({"bad": 0.0})
    fig = plots.loss_tower({"slot 3": 0.9163, "slot 5": 1.6094})
    assert sum(p.get_height() for p in fig.axes[0].patches) == pytest.approx(2.5257)
    with pytest.raises(ValueError, match=r"the loss 'x' must lie in \[0, inf\]"):
        plots.loss_tower({"x": -1.0})


def test_walkthrough_figures():
    fig = plots.reads_and_answers(["the", "fat", "cat", "sat"], [2])
    top, bottom = fig.axes
    assert [t.get_text() for t in top.texts] == ["the", "fat", "?", "sat"]
    assert "cat" in [t.get_text() for t in bottom.texts]
    with pytest.raises(ValueError, match="cannot mask position 9 in a 4-token sentence"):
        plots.reads_and_answers(["a", "b", "c", "d"], [9])
    fig = plots.probability_dial(0.25, "P(cat)")
    assert "P(cat) = 0.2500" in [t.get_text() for t in fig.axes[0].texts]
    with pytest.raises(ValueError, match="must lie in"):
        plots.probability_dial(1.5)
    fig = plots.slots_and_tower({"a": 0.5, "b": 0.25})
    assert len(fig.axes) == 3
    tower = fig.axes[-1]
    assert sum(p.get_height() for p in tower.patches) == pytest.approx(-np.log(0.125))
    fig = plots.edge_cases()
    assert len(fig.axes) == 4
    fig = plots.pipeline()
    labels = " ".join(t.get_text() for t in fig.axes[0].texts)
    for name in ("mask_tokens", "softmax", "slot_loss", "mlm_loss"):
        assert name in labels


def test_training_figures():
    history = [{"step": 10, "eval_loss": 3.0}, {"step": 20, "eval_loss": 2.5}]
    fig = plots.training_curve(history, {"floor": 2.0, "uniform": 5.0})
    assert list(fig.axes[0].lines[0].get_ydata()) == [3.0, 2.5]
    assert len(fig.axes[0].lines) == 3
    with pytest.raises(ValueError, match="history is empty"):
        plots.training_curve([])
    fig = plots.attention_bars(["[CLS]", "the", "[MASK]"], [0.2, 0.5, 0.3], query=2)
    assert [p.get_height() for p in fig.axes[0].patches] == [0.2, 0.5, 0.3]


def test_lines_with_spread_draws_means_and_bands():
    fig = plots.lines_with_spread([1, 2, 3], {"a": ([1, 2, 3], [0.5, 1.5, 2.5], [1.5, 2.5, 3.5]),
                                              "exact": ([3, 2, 1], [3, 2, 1], [3, 2, 1])},
                                  xlabel="x", ylabel="y", lines={"log |V|": 2.5})
    ax = fig.axes[0]
    assert [list(line.get_ydata()) for line in ax.lines[:2]] == [[1, 2, 3], [3, 2, 1]]
    assert len(ax.collections) == 1  # a band only where there is a spread
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y"
    with pytest.raises(ValueError, match="needs 3 means"):
        plots.lines_with_spread([1, 2, 3], {"a": ([1, 2], [1, 2], [1, 2])})


def test_reliability_diagram_and_joint_tables():
    fig = plots.reliability_diagram([0.01, 0.1, 0.5], [0.02, 0.1, 0.4], [100, 10, 1])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert np.allclose(ax.collections[0].get_offsets(), [[0.01, 0.02], [0.1, 0.1], [0.5, 0.4]])
    with pytest.raises(ValueError, match="one value per bin"):
        plots.reliability_diagram([0.1], [0.1, 0.2], [1])
    joint = np.array([[0.3, 0.0], [0.1, 0.6]])
    product = joint.sum(1)[:, None] * joint.sum(0)[None, :]
    fig = plots.joint_and_product(["a", "b"], ["x", "y"], joint, product)
    assert len(fig.axes) == 3  # two tables and their shared colour bar
    assert [t.get_text() for t in fig.axes[0].texts] == ["0.300", "0.000", "0.100", "0.600"]
    with pytest.raises(ValueError, match="2 x 2"):
        plots.joint_and_product(["a", "b"], ["x", "y"], joint[:1], product)
