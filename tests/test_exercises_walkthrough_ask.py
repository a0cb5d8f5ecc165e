"""The checkers of the walkthrough's and the worked examples' exercises that ask before they tell.

Each accepts its reference, says "Not answered yet" to no answer, names every usual mistake,
never raises on a reader's junk, and refuses bad settings of its own. The loss of one slot and
of a sentence tell the two ways scores of 1000 go wrong apart: a softmax taken without
subtracting the largest score overflows (nan), and -log of a softmax that did subtract it
underflows when the truth's score is far below the largest (inf, or a clipped loss far too
small); only logsumexp(s) - s_t gives the loss.
"""

import math

import numpy as np
import pytest
import torch

from mlmlib.constants import IGNORE_INDEX
from mlmlib.exercises import (
    check_fresh_loss,
    check_mlm_loss,
    check_score,
    check_slot_loss,
    check_slotwise_loss,
    check_tested_share,
    check_truth_gradient,
    check_unchanged_share,
)
from mlmlib.loss import slot_loss, softmax

JUNK = [None, "0.5", object(), [1, 2, 3, 4, 5], True, {"a": 1}, float("nan")]


# ----------------------------------------------------------------------------- scores of 1000
def logsumexp_loss(scores, target):  # the reference: -log P(t) = logsumexp(s) - s_t
    s = np.asarray(scores, dtype=float)
    m = s.max()
    return m + np.log(np.exp(s - m).sum()) - s[target]


def overflowing_loss(scores, target):  # no largest score subtracted: exp(1000) = inf
    e = np.exp(np.asarray(scores, dtype=float))
    return -np.log(e[target] / e.sum())


def underflowing_loss(scores, target):  # the largest subtracted, then -log of the softmax
    z = np.asarray(scores, dtype=float)
    e = np.exp(z - z.max())
    return -np.log(e[target] / e.sum())


def clipped_loss(scores, target):  # the underflow hidden: a loss, but far too small
    z = np.asarray(scores, dtype=float)
    e = np.exp(z - z.max())
    return -np.log(max(e[target] / e.sum(), 1e-12))


def float32_loss(scores, target):  # torch's softmax in float32, then -log
    return -torch.log(torch.softmax(torch.tensor(scores, dtype=torch.float32), 0)[target])


def sentence(slot):
    """A sentence's loss, from a function for one slot's loss."""
    return lambda logits, labels: sum(slot(row, t) for row, t in zip(logits, labels, strict=True)
                                      if t != IGNORE_INDEX)


def test_the_reference_passes_and_says_which_cases():
    verdict = check_slot_loss(logsumexp_loss)
    assert verdict and str(verdict).startswith("Correct") and "far below" in str(verdict)
    assert check_slot_loss(lambda s, t: torch.nn.functional.cross_entropy(
        torch.tensor([s]), torch.tensor([t])))
    assert check_mlm_loss(sentence(logsumexp_loss))


@pytest.mark.parametrize("check", [check_slot_loss, lambda fn: check_mlm_loss(sentence(fn))],
                         ids=["slot", "sentence"])
def test_no_largest_score_subtracted_is_named_as_the_overflow(check):
    verdict = check(overflowing_loss)
    assert not verdict
    assert "exp(1000) overflows" in str(verdict) and "Subtract the largest score" in str(verdict)
    assert "underflow" not in str(verdict)


@pytest.mark.parametrize("check", [check_slot_loss, lambda fn: check_mlm_loss(sentence(fn))],
                         ids=["slot", "sentence"])
@pytest.mark.parametrize("wrong", [underflowing_loss, clipped_loss, float32_loss],
                         ids=["inf", "clipped", "float32"])
def test_the_largest_subtracted_then_log_of_the_softmax_is_named_as_the_underflow(check, wrong):
    verdict = check(wrong)
    text = str(verdict)
    assert not verdict
    assert "the softmax of the truth underflows to 0" in text, text
    assert "logsumexp(s) - s_t" in text and "1000 below the largest" in text
    assert "overflows" not in text


def test_a_named_mistake_on_the_far_case_keeps_its_own_name():
    # the sign flipped only where the truth is far below: still "the sign is flipped"
    def flipped_far(scores, target):
        loss = logsumexp_loss(scores, target)
        return -loss if loss > 100 else loss

    verdict = check_slot_loss(flipped_far)
    assert not verdict and "sign is flipped" in str(verdict) and "underflow" not in str(verdict)


def test_underflow_holds_in_the_arithmetic_the_messages_describe():
    p = softmax([1000.0, 0.0])  # the stable softmax: the largest score subtracted
    assert p[1] == 0.0 and math.isinf(-math.log(p[1]) if p[1] else math.inf)
    assert logsumexp_loss([1000.0, 0.0], 1) == 1000.0 == slot_loss([1000.0, 0.0], 1)


# ----------------------------------------------------------------------------- Step 4: a score
W_ON, H = [0.8, -0.7, 0.1], [0.5, -1.0, 2.0]


def test_score_right_and_not_answered():
    right = check_score(float(np.dot(W_ON, H)), W_ON, H)
    assert right and str(right) == "Correct: 1.3000 matches w . h = 1.3000."
    assert check_score(np.float32(1.3), W_ON, H) and check_score(torch.tensor(1.3), W_ON, H)
    assert "Not answered yet" in str(check_score(None, W_ON, H))


@pytest.mark.parametrize(("answer", "hint"), [
    (sum(W_ON) + sum(H), "adds every entry of both lists"),
    (sum(W_ON) * sum(H), "multiplies the two lists' totals"),
    (0.4 - 0.7 + 0.2, "a negative times a negative is positive"),
    ([0.4, 0.7, 0.2], "products of matching entries"),
    (-1.3, "is not 1.3000"),
])
def test_score_names_the_mistakes(answer, hint):
    verdict = check_score(answer, W_ON, H)
    assert not verdict and hint in str(verdict), verdict


def test_score_refuses_bad_settings():
    with pytest.raises(ValueError, match="same length"):
        check_score(1.0, [1.0, 2.0], [1.0])
    with pytest.raises(TypeError, match="w"):
        check_score(1.0, "0.8", H)
    with pytest.raises(ValueError, match="h"):
        check_score(1.0, W_ON, [0.5, float("nan"), 2.0])


# ----------------------------------------------------------------------------- Step 7: gradient
SCORES, MAT = [1.0, 2.0, 0.0, 1.0], 2
P_MAT = float(softmax(SCORES)[MAT])


def test_truth_gradient_right_and_not_answered():
    scores = torch.tensor(SCORES, dtype=torch.float64, requires_grad=True)
    slot_loss(scores, MAT).backward()
    autograd = scores.grad[MAT].item()
    verdict = check_truth_gradient(autograd, SCORES, MAT)
    assert verdict and str(verdict).endswith(f"= {P_MAT - 1:.4f}.")
    assert "Not answered yet" in str(check_truth_gradient(None, SCORES, MAT))


@pytest.mark.parametrize(("answer", "hint"), [
    (1 - P_MAT, "sign is flipped"),
    (P_MAT, "probability P itself"),
    (-1 / P_MAT, "-1/P"),
    (1 / P_MAT, "1/P"),
    (-math.log(P_MAT), "the loss -log P itself"),
    (float(softmax(SCORES)[1]), "top-scoring word"),
    (-1.0, "is not"),
])
def test_truth_gradient_names_the_mistakes(answer, hint):
    verdict = check_truth_gradient(answer, SCORES, MAT)
    assert not verdict and hint in str(verdict), verdict


def test_truth_gradient_refuses_bad_settings():
    with pytest.raises(ValueError, match="target"):
        check_truth_gradient(-0.5, SCORES, 9)
    with pytest.raises((TypeError, ValueError), match="scores"):
        check_truth_gradient(-0.5, "1 2", 0)


# ----------------------------------------------------------------------------- worked B
def test_unchanged_share():
    right = check_unchanged_share(0.1 + 0.1 / 20, pool=20)
    assert right and str(right).endswith("= 0.1050.")
    assert "Not answered yet" in str(check_unchanged_share(None, pool=20))
    for answer, hint in [(0.1, "keep branch alone"), (0.005, "pick the original word back"),
                         (0.095, "different word"), (10.5, "percentage"),
                         (0.12, "chapter's 5 ordinary words"), (0.3, "is not")]:
        verdict = check_unchanged_share(answer, pool=20)
        assert not verdict and hint in str(verdict), (answer, verdict)
    assert "chapter's 5" not in str(check_unchanged_share(0.3, pool=5))
    with pytest.raises(ValueError, match="pool"):
        check_unchanged_share(0.1, pool=0)
    with pytest.raises(ValueError, match="more than 1"):
        check_unchanged_share(0.1, pool=20, mask_prob=0.95, random_prob=0.1)


# ----------------------------------------------------------------------------- worked C
def test_tested_share():
    expected = 0.15 * 0.2 / (1 - 0.15 * 0.8)
    right = check_tested_share(round(expected, 4))
    assert right and str(right).endswith(f"= {expected:.4f}.")
    assert "Not answered yet" in str(check_tested_share(None))
    for answer, hint in [(0.03, "share of all the tokens"), (0.03 / 0.85, "not all but the chosen"),
                         (0.015 / 0.88, "unchanged words only;"), (0.015, "out of all the tokens"),
                         (0.2, "share of the chosen positions"), (3.4091, "percentage"),
                         (0.5, "is not")]:
        verdict = check_tested_share(answer)
        assert not verdict and hint in str(verdict), (answer, verdict)
    with pytest.raises(ValueError, match="rate"):
        check_tested_share(0.1, rate=1.5)
    with pytest.raises(ValueError, match="every token shows"):
        check_tested_share(0.1, rate=1.0, mask_prob=1.0)


# ----------------------------------------------------------------------------- worked E
def test_fresh_loss():
    expected = math.log(50_000) + 0.09 / 2
    right = check_fresh_loss(round(expected, 4), vocab_size=50_000, variance=0.09)
    assert right and str(right).endswith(f"= {expected:.4f}.")
    assert "Not answered yet" in str(check_fresh_loss(None, 50_000, 0.09))
    base = math.log(50_000)
    for answer, hint in [(base, "log |V| alone"), (base + 0.09, "whole variance"),
                         (base + 0.15, "half the spread"), (base - 0.045, "other way"),
                         (math.log10(50_000) + 0.045, "base 10"),
                         (math.log(30_000) + 0.045, "30,000 words"), (11.0, "is not")]:
        verdict = check_fresh_loss(answer, 50_000, 0.09)
        assert not verdict and hint in str(verdict), (answer, verdict)
    with pytest.raises(ValueError, match="vocab_size"):
        check_fresh_loss(1.0, 1, 0.09)
    with pytest.raises(ValueError, match="variance"):
        check_fresh_loss(1.0, 100, -0.1)


# ----------------------------------------------------------------------------- worked F
PAIRS = {("new", "york"): 0.6, ("new", "delhi"): 0.2, ("los", "angeles"): 0.2}
TRUTH = ("new", "york")


def test_slotwise_loss():
    expected = -math.log(0.8) - math.log(0.6)
    right = check_slotwise_loss(round(expected, 4), PAIRS, TRUTH)
    assert right and str(right).endswith(f"= {expected:.4f}.")
    assert check_slotwise_loss(expected, PAIRS, ["new", "york"])  # a list names the pair too
    assert "Not answered yet" in str(check_slotwise_loss(None, PAIRS, TRUTH))
    for answer, hint in [(-math.log(0.6), "-log P(pair)"), (0.48, "product"),
                         (expected / 2, "mean"), (-2 * math.log(0.6), "total of every pair"),
                         (expected / math.log(10), "base 10"), (-expected, "sign"),
                         (1.0, "is not")]:
        verdict = check_slotwise_loss(answer, PAIRS, TRUTH)
        assert not verdict and hint in str(verdict), (answer, verdict)


def test_slotwise_loss_refuses_bad_settings():
    with pytest.raises(ValueError, match="add up to 1"):
        check_slotwise_loss(0.7, {("a", "b"): 0.5}, ("a", "b"))
    with pytest.raises(TypeError, match="pairs of words"):
        check_slotwise_loss(0.7, {"a b": 1.0}, ("a", "b"))
    with pytest.raises(ValueError, match="truth"):
        check_slotwise_loss(0.7, PAIRS, ("los", "york"))
    with pytest.raises(TypeError, match="pairs"):
        check_slotwise_loss(0.7, [0.6, 0.4], TRUTH)


# ----------------------------------------------------------------------------- junk
@pytest.mark.parametrize("junk", JUNK, ids=repr)
def test_no_checker_raises_on_a_readers_junk(junk):
    verdicts = [
        check_score(junk, W_ON, H),
        check_truth_gradient(junk, SCORES, MAT),
        check_unchanged_share(junk, pool=20),
        check_tested_share(junk),
        check_fresh_loss(junk, 50_000, 0.09),
        check_slotwise_loss(junk, PAIRS, TRUTH),
        check_slot_loss(junk),
        check_mlm_loss(junk),
    ]
    for verdict in verdicts:
        assert not verdict and "Correct" not in str(verdict), verdict
