"""The checkers accept the reference solutions and name each usual mistake; they never raise."""

import math

import numpy as np
import pytest
import torch

from mlmlib.exercises import check_loss_value, check_slot_loss, check_softmax


def reference_slot_loss(scores, target):
    s = np.asarray(scores, dtype=float)
    z = s - s.max()
    return -(z[target] - np.log(np.exp(z).sum()))


def reference_softmax(scores):
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - s.max())
    return e / e.sum()


def naive_slot_loss(scores, target):  # no max-subtraction: overflows at 1000
    e = np.exp(np.asarray(scores, dtype=float))
    return -np.log(e[target] / e.sum())


def test_references_pass():
    verdicts = [
        check_slot_loss(reference_slot_loss),
        check_slot_loss(lambda s, t: torch.nn.functional.cross_entropy(
            torch.tensor([s]), torch.tensor([t]))),
        check_softmax(reference_softmax),
        check_loss_value(0.6265, scores=[1, 2, 0, 1], target=1),
        check_loss_value(np.float32(0.62652), scores=[1, 2, 0, 1], target=1),
    ]
    for v in verdicts:
        assert v and v.passed and repr(v).startswith("Correct"), v


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda s, t: -reference_slot_loss(s, t), "sign is flipped"),
        (lambda s, t: reference_slot_loss(s, t) / math.log(10), "log base 10"),
        (lambda s, t: reference_slot_loss(s, t) / math.log(2), "log base 2"),
        (lambda s, t: math.exp(-reference_slot_loss(s, t)), "probability P itself"),
        (lambda s, t: sum(reference_slot_loss(s, v) for v in range(len(s))), "every word"),
        (lambda s, t: reference_slot_loss(s, int(np.argmax(s))), "highest-scoring word"),
        (naive_slot_loss, "Subtract the largest score"),
        (lambda s, t: None, "returned nothing (None)"),
        (lambda s, t: "0.6", "expected one number"),
        (lambda s, t: [1.0, 2.0], "expected one number"),
        (lambda s, t: 1 / 0, "raised ZeroDivisionError"),
        (lambda s: 0.5, "raised TypeError"),
        (lambda s, t: 0.1234, "is not"),
    ],
)
def test_slot_loss_mistakes_are_named(wrong, hint):
    verdict = check_slot_loss(wrong)
    assert not verdict
    assert hint in str(verdict) and "Correct" not in str(verdict)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda s: np.exp(np.asarray(s, dtype=float)) / np.exp(np.asarray(s, dtype=float)).sum(),
         "Subtract the largest score"),
        (lambda s: np.exp(np.asarray(s, dtype=float)), "divide by their total Z"),
        (lambda s: reference_softmax(s)[:-1], "expected"),
        (lambda s: reference_softmax(s) * 2, "sum to 2.0000"),
        (lambda s: None, "nothing (None)"),
        (lambda s: {"a": 1}, "expected"),
    ],
)
def test_softmax_mistakes_are_named(wrong, hint):
    verdict = check_softmax(wrong)
    assert not verdict
    assert hint in str(verdict)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (-0.6265, "sign is flipped"),
        (0.2721, "log base 10"),
        (0.5344, "probability P itself"),
        (0.7, "is not 0.6265"),
        (None, "Not answered yet"),
        ("0.6265", "Not answered yet"),
        ([0.6, 0.7], "Not answered yet"),
        (True, "Not answered yet"),
    ],
)
def test_loss_value_mistakes(answer, hint):
    verdict = check_loss_value(answer, scores=[1, 2, 0, 1], target=1)
    assert not verdict
    assert hint in str(verdict)


def test_checkers_never_raise_on_junk():
    for junk in [None, 3, "f", object(), [1, 2]]:
        assert not check_slot_loss(junk)
        assert not check_softmax(junk)
        assert not check_loss_value(junk, scores=[1, 2], target=0)
