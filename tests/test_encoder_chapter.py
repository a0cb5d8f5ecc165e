"""The encoder chapter's figures (mlmlib.plots.encoder) and checkers (mlmlib.exercises.encoder)."""

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from mlmlib import plots
from mlmlib.exercises import (
    block_parameter_count,
    check_attention_weights,
    check_block_parameters,
    check_seed_gap,
)
from mlmlib.model import BertConfig, MiniBert
from mlmlib.plots.encoder import excess_curves

TOKENS = ["[CLS]", "the", "[MASK]", "[PAD]"]

# ----------------------------------------------------------------------------- figures


def test_heat_panels_draw_each_matrix_tokens_across():
    a, b = np.arange(8.0).reshape(4, 2) - 3, np.ones((4, 3))
    fig = plots.heat_panels({"word": a, "sum": b}, TOKENS, title="embeddings", annotate=2)
    assert len(fig.axes) == 3  # two panels and one shared colour bar
    image = fig.axes[0].images[0].get_array()
    assert np.array_equal(image, a.T)  # dimensions down, tokens across
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == TOKENS
    assert fig.axes[0].get_ylabel() == "word" and fig.axes[1].get_xlabel()
    texts = fig.axes[0].texts  # only the annotated token's column is written out
    assert len(texts) == a.shape[1] and {t.get_position()[0] for t in texts} == {2}
    assert [t.get_text() for t in texts] == [f"{v:.2f}" for v in a[2]]
    assert "purple" in fig.axes[2].get_ylabel()
    assert not plots.heat_panels({"word": a}, TOKENS).axes[0].texts  # colour only
    assert len(plots.heat_panels({"a": a, "b": b}, TOKENS, shared=False).axes) == 4
    with pytest.raises(ValueError, match="outside"):
        plots.heat_panels({"word": a}, TOKENS, annotate=4)
    given = Figure().subplots(2, 1)
    assert plots.heat_panels({"a": a, "b": b}, TOKENS, ax=given) is given[0].figure
    with pytest.raises(ValueError, match="3 rows but there are 4 tokens"):
        plots.heat_panels({"a": np.ones((3, 2))}, TOKENS)
    with pytest.raises(ValueError, match="needs 2 axes"):
        plots.heat_panels({"a": a, "b": b}, TOKENS, ax=given[0])
    with pytest.raises(TypeError, match="numbers"):
        plots.heat_panels({"a": "text"}, TOKENS)


def test_attention_map_outlines_the_query_and_hatches_padding():
    A = np.array([[0.5, 0.5, 0, 0], [0.2, 0.3, 0.5, 0], [0.1, 0.1, 0.8, 0], [1, 0, 0, 0]])
    fig = plots.attention_map(A, TOKENS, query=2, keep=[1, 1, 1, 0])
    ax = fig.axes[0]
    assert np.array_equal(ax.images[0].get_array(), A)
    assert ax.get_xlabel() and ax.get_ylabel()
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 1 and hatched[0].get_x() == 2.5  # the [PAD] column
    outlined = [p for p in ax.patches if not p.get_hatch()]
    assert len(outlined) == 1 and outlined[0].get_y() == 1.5  # row 2
    assert len(ax.texts) == 4 and {t.get_position()[1] for t in ax.texts} == {2}
    assert [t.get_text() for t in ax.texts] == ["0.10", "0.10", "0.80", "0.00"]
    assert not plots.attention_map(A, TOKENS).axes[0].texts
    assert len(fig.axes) == 2  # the colour bar
    with pytest.raises(ValueError, match=r"\(4, 4\)"):
        plots.attention_map(A[:3], TOKENS)
    with pytest.raises(ValueError, match="outside"):
        plots.attention_map(A, TOKENS, query=4)
    with pytest.raises(ValueError, match=r"weights must be numbers in \[0, 1\]"):
        plots.attention_map(A * 2, TOKENS)


def test_gelu_curve_agreement_and_seed_dots():
    fig = plots.gelu_curve([-1.0, 0.5, 2.0])
    lines = fig.axes[0].get_lines()
    dots = next(ln for ln in lines if ln.get_marker() == "o")
    assert np.allclose(dots.get_ydata(), [v * (1 + math.erf(v / math.sqrt(2))) / 2
                                          for v in (-1.0, 0.5, 2.0)])
    assert fig.axes[0].get_xlabel() and fig.axes[0].get_ylabel()
    assert isinstance(plots.gelu_curve(), Figure)
    fig = plots.agreement([1.0, 2.0, 3.0], [1.0, 2.0, 3.0 + 1e-6],
                          also={"64-bit": [1.0, 2.0 + 1e-15, 3.0]})
    assert np.array_equal(fig.axes[0].get_lines()[1].get_ydata(), [1.0, 2.0, 3.0])
    right = fig.axes[1]
    assert right.get_yscale() == "log"
    gaps32, gaps64 = (ln.get_ydata() for ln in right.get_lines())
    assert np.isclose(gaps32[2], 1e-6) and gaps32[0] == gaps32[1] < 1e-15  # 0 at the bottom
    assert np.isclose(gaps64[1], 1e-15, rtol=0.2)
    with pytest.raises(ValueError, match="3 numbers but library has 2"):
        plots.agreement([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="not 3"):
        plots.agreement([1, 2, 3], [1, 2, 3], also={"x": [1, 2]})
    runs = {"full": [[3.0, 2.5, 2.2], [3.0, 2.6, 2.1]], "other": [[3.0, 2.8, 2.6], [3.0, 2.9, 2.5]]}
    fig = excess_curves([0, 50, 100], runs, floor=2.0, lines={"unigram": 1.0})
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert np.allclose(ax.get_lines()[0].get_ydata(), [1.0, 0.55, 0.15])  # mean excess
    with pytest.raises(ValueError, match="at or below the floor"):
        excess_curves([0, 50, 100], runs, floor=2.2)
    fig = plots.seed_dots({"full": [0.1, 0.2, 0.15], "no positions": [1.0, 1.1, 1.2]},
                          xlabel="above the floor", lines={"floor": 0.0})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["full", "no positions"]
    bars = [ln for ln in ax.get_lines() if ln.get_marker() != "o" and ln.get_label() ==
            "mean over the seeds"]
    assert len(bars) == 1  # the black mean bar is in the legend once
    dots = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert sorted(dots[1].get_xdata()) == [1.0, 1.1, 1.2]
    assert ax.get_xlabel() == "above the floor"
    fig = plots.seed_dots({"a": [0.01, 0.02], "b": [0.3, 0.4]}, xlabel="x", log_x=True,
                          lines={"unigram": 2.1})
    assert fig.axes[0].get_xscale() == "log"
    with pytest.raises(ValueError, match="must be positive, finite numbers"):
        plots.seed_dots({"a": [0.0, 0.1]}, xlabel="x", log_x=True)
    with pytest.raises(ValueError, match="empty"):
        plots.seed_dots({"full": []}, xlabel="x")
    with pytest.raises(TypeError, match="dict"):
        plots.seed_dots([0.1, 0.2], xlabel="x")


# ----------------------------------------------------------------------------- checkers


def list_keep(Q, K, keep):
    """The mistake of writing np.where(keep == 1, ...) with keep a plain list."""
    S = Q @ K.T / np.sqrt(Q.shape[1])
    return softmax_rows(np.where(list(keep) == 1, S, -1e30))


def reference(Q, K, keep):
    S = Q @ K.T / np.sqrt(Q.shape[1])
    S = np.where(np.array(keep)[None, :] == 1, S, -np.inf)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def softmax_rows(S, axis=1):
    E = np.exp(S - S.max(axis=axis, keepdims=True))
    return E / E.sum(axis=axis, keepdims=True)


def masked(S, keep, value=-1e30):
    return np.where(np.array(keep)[None, :] == 1, S, value)


def test_attention_checker_accepts_the_references():
    assert check_attention_weights(reference)
    assert check_attention_weights(lambda Q, K, keep: softmax_rows(np.where(
        keep[None, :] == 1, Q @ K.T / np.sqrt(Q.shape[1]), -1e30)))  # keep is an array
    assert check_attention_weights(lambda Q, K, keep: reference(Q, K, keep).tolist())
    huge_negative = lambda Q, K, keep: softmax_rows(masked(Q @ K.T / np.sqrt(Q.shape[1]), keep))  # noqa: E731
    assert repr(check_attention_weights(huge_negative)).startswith("Correct")


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda Q, K, keep: softmax_rows(masked(Q @ K.T, keep)), "not divided by sqrt(d_h)"),
        (lambda Q, K, keep: softmax_rows(masked(Q @ K.T / Q.shape[1], keep)), "divides by d_h"),
        (lambda Q, K, keep: softmax_rows(Q @ K.T / np.sqrt(Q.shape[1])),
         "padding is not masked"),
        (lambda Q, K, keep: softmax_rows(Q @ K.T), "neither sqrt(d_h) nor the padding"),
        (lambda Q, K, keep: softmax_rows(masked(Q @ K.T / np.sqrt(Q.shape[1]), keep), axis=0),
         "wrong axis"),
        (lambda Q, K, keep: masked(Q @ K.T / np.sqrt(Q.shape[1]), keep, -np.inf),
         "before the softmax"),
        (lambda Q, K, keep: reference(Q, K, keep).T, "transposed"),
        (lambda Q, K, keep: None, "Not answered yet: <lambda> returns None"),
        (lambda Q, K, keep: reference(Q, K, keep)[:, :2], "expected a"),
        (lambda Q, K, keep: 1 / 0, "raised ZeroDivisionError"),
        (lambda Q: Q, "raised TypeError"),
        (lambda Q, K, keep: reference(Q, K, keep) * 0.5, "rows sum to"),
        (list_keep, "is keep a NumPy array"),
        (lambda Q, K, keep: np.full((len(keep), len(keep)), np.nan), "is keep a NumPy array"),
        ("not a function", "expected a function"),
    ],
)
def test_attention_mistakes_are_named(wrong, hint):
    verdict = check_attention_weights(wrong)
    assert not verdict
    assert hint in str(verdict), str(verdict)


def test_block_count_agrees_with_the_model_and_names_mistakes():
    for d, f, h in ((8, 16, 2), (12, 20, 3), (4, 8, 1)):
        model = MiniBert(BertConfig(vocab_size=10, hidden_size=d, num_layers=1, num_heads=h,
                                    intermediate_size=f, max_position=8))
        count = sum(p.numel() for p in model.blocks[0].parameters())
        assert block_parameter_count(d, f) == count
        assert check_block_parameters(count, hidden_size=d, intermediate=f, num_heads=h)
    d, f, h = 768, 3072, 12
    right = block_parameter_count(d, f)
    assert right == 7087872
    cases = {
        right - (3 * d + d + f + d): "has a bias vector",
        right - 4 * d: "two LayerNorms, each with a weight",
        right - 2 * d: "there are two LayerNorms",
        right - (d * d + d): "one more d x d projection",
        right - (2 * d * d + 2 * d): "each have their own d x d matrix",
        right + (h - 1) * (3 * d * d + 3 * d): "the heads share",
        right - (d * f + d): "two matrices, d -> F and F -> d",
        right - (d * f + f): "two matrices, d -> F and F -> d",
        right + 1: "is not 7,087,872",
    }
    for answer, hint in cases.items():
        verdict = check_block_parameters(answer, hidden_size=d, intermediate=f, num_heads=h)
        assert not verdict and hint in str(verdict), (answer, str(verdict))
    for junk in (None, "7087872", [1, 2], object()):
        assert not check_block_parameters(junk, hidden_size=d, intermediate=f, num_heads=h)


def test_seed_gap_checker():
    before, after = [2.20, 2.25, 2.21], [3.20, 3.40, 3.30]
    gap = np.mean(np.array(after) - np.array(before))
    assert check_seed_gap(gap, before, after)
    assert check_seed_gap(round(gap, 4), before, after)
    cases = {
        -gap: "sign is flipped",
        after[0] - before[0]: "seed 0 alone",
        np.mean(after) / np.mean(before): "ratio of the two means",
        max(before + after) - min(before + after): "largest minus the smallest",
        0.5: "is not",
    }
    for answer, hint in cases.items():
        verdict = check_seed_gap(answer, before, after)
        assert not verdict and hint in str(verdict), (answer, str(verdict))
    assert not check_seed_gap(None, before, after)
    with pytest.raises(ValueError, match="one value per seed"):
        check_seed_gap(1.0, [1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        check_seed_gap(1.0, [math.nan], [1.0])


def test_checker_settings_are_checked(refuses):
    refuses(lambda: check_block_parameters(1, hidden_size=0, intermediate=8, num_heads=1),
            ValueError, "hidden")
    refuses(lambda: check_block_parameters(1, hidden_size=8, intermediate=8, num_heads=3),
            ValueError, "multiple", "num_heads")
    refuses(lambda: check_block_parameters(1, hidden_size=8, intermediate=2.5, num_heads=1),
            TypeError, "intermediate", "whole")
    refuses(lambda: check_seed_gap(1.0, "abc", [1.0]), TypeError, "before")
