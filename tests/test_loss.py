"""Tests for mlmlib.loss: against PyTorch, against the course's worked numbers, and bad input."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mlmlib.loss import (
    IGNORE_INDEX,
    log_softmax,
    mlm_loss,
    neg_log,
    nsp_loss,
    slot_loss,
    softmax,
    uniform_loss,
)

# ----------------------------------------------------------------------------- worked numbers


def test_cell_a_exact_values_and_the_sources_rounding():
    p = softmax([1, 2, 0, 1])
    assert p[1] == pytest.approx(math.exp(2) / (2 * math.e + math.exp(2) + 1), abs=1e-15)
    assert round(float(p[1]), 5) == 0.53445
    assert round(slot_loss([1, 2, 0, 1], 1), 5) == 0.62652
    # The source prints 0.5345 and 0.6264: it rounds P *up* (0.534447 -> 0.5345), then takes
    # the log of the rounded P; the exact loss rounds to 0.6265.
    source_p = math.ceil(float(p[1]) * 1e4) / 1e4
    assert source_p == 0.5345 and round(float(p[1]), 4) == 0.5344
    assert round(-math.log(source_p), 4) == 0.6264
    assert round(slot_loss([1, 2, 0, 1], 1), 4) == 0.6265
    assert np.allclose(p.round(4), [0.1966, 0.5344, 0.0723, 0.1966], atol=0)
    z = np.exp([1, 2, 0, 1]).sum()
    assert round(z, 4) == 13.8256  # the source's 13.8257 adds the rounded weights:
    assert round(sum(round(w, 4) for w in np.exp([1, 2, 0, 1])), 4) == 13.8257


def test_cells_b_c_f_h():
    assert round(slot_loss([0.5, 1.5, 2.0, 0.5], 1), 4) == 1.2192
    assert round(slot_loss([3, 0, 0, 0], 0), 4) == 0.1392
    p_c = float(softmax([3, 0, 0, 0])[0])
    assert round(p_c, 5) == 0.87005 and round(p_c, 4) == 0.8700
    source_p = math.ceil(p_c * 1e4) / 1e4  # the source's 0.8701, rounded up
    assert source_p == 0.8701 and round(-math.log(source_p), 4) == 0.1391
    assert round(neg_log(0.40) + neg_log(0.20), 4) == 2.5257
    assert neg_log(0.40) + neg_log(0.20) == pytest.approx(neg_log(0.08), abs=1e-12)
    nsp = nsp_loss([math.log(0.9), math.log(0.1)], True)
    assert round(nsp, 4) == 0.1054
    assert round(neg_log(0.40) + neg_log(0.20) + nsp, 4) == 2.6311


def test_word_targets_with_a_vocabulary():
    vocab = ["the", "cat", "sat", "mat"]
    assert slot_loss([1, 2, 0, 1], "cat", vocab=vocab) == slot_loss([1, 2, 0, 1], 1)


def test_uniform_loss():
    assert round(uniform_loss(30000), 4) == 10.309
    assert uniform_loss(1) == 0.0
    assert slot_loss(np.zeros(7), 3) == pytest.approx(uniform_loss(7), abs=1e-12)


# ----------------------------------------------------------------------------- stability


def test_softmax_survives_huge_scores():
    assert np.array_equal(softmax([1000, 0]), [1.0, 0.0])
    assert np.array_equal(log_softmax([1000, 0]), [0.0, -1000.0])
    assert slot_loss([1000, 0], 1) == 1000.0
    assert slot_loss([-1000, 1000], 0) == 2000.0
    t = softmax(torch.tensor([1000.0, 0.0]))
    assert torch.isfinite(t).all()


def test_types_in_and_out():
    assert isinstance(softmax([1, 2]), np.ndarray)
    assert softmax(np.array([1, 2])).dtype == np.float64
    out = softmax(torch.tensor([1.0, 2.0], dtype=torch.float32))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert softmax(torch.tensor([1, 2])).dtype == torch.get_default_dtype()
    assert isinstance(slot_loss([1, 2], 0), float)
    assert isinstance(slot_loss(torch.tensor([1.0, 2.0]), 0), torch.Tensor)


def test_caller_tensor_is_not_changed():
    s = torch.tensor([[1.0, 2.0, 0.0, 1.0]])
    before = s.clone()
    softmax(s)
    log_softmax(s)
    mlm_loss(s, torch.tensor([1]))
    assert torch.equal(s, before)


# ----------------------------------------------------------------------------- against PyTorch


def test_mlm_loss_matches_cross_entropy_on_random_batches():
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        logits = torch.randn(3, 11, 37, generator=g) * 4
        labels = torch.randint(0, 37, (3, 11), generator=g)
        labels[torch.rand(3, 11, generator=g) < 0.6] = IGNORE_INDEX
        if (labels != IGNORE_INDEX).sum() == 0:
            continue
        for reduction in ("sum", "mean"):
            ours = mlm_loss(logits, labels, reduction=reduction)
            ref = F.cross_entropy(logits.reshape(-1, 37), labels.reshape(-1), reduction=reduction)
            assert torch.allclose(ours, ref, atol=1e-6, rtol=1e-6)


def test_gradients_match_cross_entropy():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(4, 9, generator=g, requires_grad=True)
    labels = torch.tensor([3, IGNORE_INDEX, 0, 8])
    mlm_loss(logits, labels, reduction="mean").backward()
    ours = logits.grad.clone()
    logits.grad = None
    F.cross_entropy(logits, labels, reduction="mean").backward()
    assert torch.allclose(ours, logits.grad, atol=1e-7)


def test_softmax_and_log_softmax_match_torch():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 13, generator=g, dtype=torch.float64) * 30
    assert torch.allclose(softmax(x), torch.softmax(x, -1), atol=1e-12)
    assert torch.allclose(log_softmax(x), torch.log_softmax(x, -1), atol=1e-12)
    assert torch.allclose(softmax(x, dim=0), torch.softmax(x, 0), atol=1e-12)


def test_nsp_loss_matches_cross_entropy():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(16, 2, generator=g)
    is_next = torch.rand(16, generator=g) < 0.5
    ref = F.cross_entropy(logits, (~is_next).long())  # class 0 = IsNext, as in BERT
    assert torch.allclose(nsp_loss(logits, is_next), ref, atol=1e-6)
    assert torch.allclose(nsp_loss(logits, is_next.long(), reduction="sum"), ref * 16, atol=1e-5)


def test_bf16_logits_are_scored_in_float32():
    logits = torch.randn(6, 50, generator=torch.Generator().manual_seed(4)).bfloat16()
    labels = torch.tensor([1, 2, 3, IGNORE_INDEX, 5, 6])
    out = mlm_loss(logits, labels, reduction="mean")
    assert out.dtype == torch.float32
    ref = F.cross_entropy(logits.float(), labels)
    assert torch.allclose(out, ref, atol=1e-5)


# ----------------------------------------------------------------------------- empty M


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_empty_m_gives_exact_zero_and_zero_gradient(reduction):
    logits = torch.randn(2, 5, 10, requires_grad=True)
    labels = torch.full((2, 5), IGNORE_INDEX)
    loss = mlm_loss(logits, labels, reduction=reduction)
    assert loss.item() == 0.0
    loss.backward()
    assert logits.grad is not None and torch.count_nonzero(logits.grad) == 0
    # ...where PyTorch's mean is 0 / 0:
    assert torch.isnan(F.cross_entropy(logits.reshape(-1, 10), labels.reshape(-1)))


def test_empty_m_from_lists():
    assert mlm_loss([[1.0, 2.0]], [IGNORE_INDEX], reduction="mean") == 0.0


# ----------------------------------------------------------------------------- properties

finite = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False)
score_rows = arrays(np.float64, st.integers(1, 40), elements=finite)


@given(score_rows)
def test_softmax_is_a_probability_distribution(s):
    p = softmax(s)
    assert np.all(p >= 0) and np.all(p <= 1)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert p[np.argmax(s)] == p.max()


@given(score_rows, st.floats(-1e4, 1e4))
def test_softmax_ignores_a_common_shift(s, c):
    assert np.allclose(softmax(s), softmax(s + c), atol=1e-9)


@given(score_rows)
def test_log_softmax_is_the_log_of_softmax_where_that_is_finite(s):
    p, lp = softmax(s), log_softmax(s)
    assert np.all(lp <= 0)
    ok = p > 1e-300
    assert np.allclose(np.log(p[ok]), lp[ok], atol=1e-9)


@given(score_rows, st.data())
def test_slot_loss_is_nonnegative_and_agrees_with_torch(s, data):
    target = data.draw(st.integers(0, len(s) - 1))
    loss = slot_loss(s, target)
    assert loss >= 0
    ref = F.cross_entropy(torch.tensor(s)[None], torch.tensor([target])).item()
    assert loss == pytest.approx(ref, rel=1e-9, abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 6), st.integers(1, 8), st.integers(2, 20), st.integers(0, 2**31 - 1))
def test_mean_is_sum_over_the_number_of_masked_slots(b, t, v, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, t, v, generator=g, dtype=torch.float64)
    labels = torch.randint(0, v, (b, t), generator=g)
    labels[torch.rand(b, t, generator=g) < 0.5] = IGNORE_INDEX
    m = int((labels != IGNORE_INDEX).sum())
    total = mlm_loss(logits, labels, reduction="sum")
    mean = mlm_loss(logits, labels, reduction="mean")
    assert total.item() >= 0
    assert mean.item() == pytest.approx(total.item() / max(m, 1), rel=1e-12, abs=1e-12)


@given(st.lists(st.floats(0.001, 1.0), min_size=1, max_size=30))
def test_sum_of_logs_is_log_of_product(ps):
    assert neg_log(np.array(ps)).sum() == pytest.approx(-math.log(math.prod(ps)), rel=1e-9)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: softmax([1.0, float("nan")]), ValueError, "must be finite"),
        (lambda: softmax([1.0, float("inf")]), ValueError, "must be finite"),
        (lambda: softmax([]), ValueError, "empty vocabulary"),
        (lambda: softmax(3.0), ValueError, "one entry per word"),
        (lambda: softmax(["a", "b"]), TypeError, "must hold numbers"),
        (lambda: softmax([[1, 2], [3]]), TypeError, "rectangular"),
        (lambda: softmax(torch.tensor([True, False])), TypeError, "real numbers"),
        (lambda: slot_loss([1, 2, 0, 1], 4), ValueError,
         "target 4 is outside the vocabulary of 4"),
        (lambda: slot_loss([1, 2, 0, 1], -1), ValueError, "outside the vocabulary"),
        (lambda: slot_loss([1, 2], 0.5), TypeError, "word index"),
        (lambda: slot_loss([1, 2], "dog", vocab=["cat", "mat"]), ValueError, "not in the vocab"),
        (lambda: slot_loss([1, 2], "cat"), TypeError, "pass vocab"),
        (lambda: slot_loss([[1, 2]], 0), ValueError, "must be 1-D"),
        (lambda: mlm_loss(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long)),
         ValueError, "labels have shape (2, 4) but logits have shape (2, 3, 5)"),
        (lambda: mlm_loss(torch.zeros(2, 5), torch.tensor([1, 7])), ValueError,
         "labels[1] = 7 is outside the vocabulary of 5 words"),
        (lambda: mlm_loss(torch.zeros(2, 5), torch.tensor([1.0, 2.0])), TypeError,
         "integer token ids"),
        (lambda: mlm_loss(torch.zeros(2, 0), torch.tensor([1, 2])), ValueError, "empty vocab"),
        (lambda: mlm_loss(torch.zeros(2, 5), torch.tensor([1, 2]), reduction="avg"), ValueError,
         "reduction must be one of"),
        (lambda: neg_log(1.5), ValueError, "p must be a number in [0, 1], got 1.5"),
        (lambda: neg_log([0.5, -0.1]), ValueError, "p[1] is -0.1"),
        (lambda: nsp_loss(torch.zeros(3, 3), torch.ones(3, dtype=torch.bool)), ValueError,
         "2 columns"),
        (lambda: nsp_loss(torch.zeros(3, 2), torch.tensor([0, 1, 2])), ValueError, "0/1"),
        (lambda: nsp_loss(torch.zeros(3, 2), torch.tensor([0.0, 1.0, 1.0])), TypeError, "0/1"),
        (lambda: uniform_loss(0), ValueError, "vocab_size must be a positive whole number"),
        (lambda: uniform_loss(2.5), TypeError, "whole number"),
    ],
)
def test_bad_input_gives_a_clear_error(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


def test_neg_log_of_zero_is_infinite_and_of_one_is_plus_zero():
    assert neg_log(0.0) == math.inf
    assert neg_log(1.0) == 0.0
    assert math.copysign(1.0, neg_log(1.0)) == 1.0  # prints as 0.0, not -0.0
    assert math.copysign(1.0, slot_loss([0.0, -1e6], 0)) == 1.0


def test_fast_path_equals_the_checked_path_and_the_hand_written_sum():
    g = torch.Generator().manual_seed(9)
    logits = torch.randn(5, 7, 13, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 13, (5, 7), generator=g)
    labels[torch.rand(5, 7, generator=g) < 0.4] = IGNORE_INDEX
    by_hand = sum(slot_loss(logits[b, t], int(labels[b, t])) for b in range(5) for t in range(7)
                  if labels[b, t] != IGNORE_INDEX)
    for reduction in ("sum", "mean"):
        checked = mlm_loss(logits, labels, reduction=reduction)
        fast = mlm_loss(logits, labels, reduction=reduction, check=False)
        assert torch.equal(checked, fast)
    assert mlm_loss(logits, labels).item() == pytest.approx(by_hand.item(), rel=1e-12)
    every = torch.randint(0, 13, (5, 7), generator=g)  # every position in M
    assert torch.allclose(mlm_loss(logits, every, check=False),
                          F.cross_entropy(logits.reshape(-1, 13), every.reshape(-1),
                                          reduction="sum"))
