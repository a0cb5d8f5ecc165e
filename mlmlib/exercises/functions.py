"""mlmlib.exercises.functions - the checkers of a reader's own softmax and loss functions.

Does: try a reader's softmax, loss of one slot, or MLM loss summed over M on a few cases each,
including scores of 1000, and compare with :mod:`mlmlib.loss`. They name the two ways such
scores go wrong: ``exp(1000)`` overflows when the largest score is not subtracted first, and,
when it is, the truth's probability ``exp(-1000)`` underflows to 0 so that ``-log`` of it is
``inf`` (``-log P(t) = logsumexp(s) - s_t`` avoids both). Worked example A asks for the loss of
one slot; the softmax and the summed loss are kept for teachers' own exercises.

Does not: check a number the reader computed (:mod:`mlmlib.exercises.walkthrough` and the
other part modules do).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from mlmlib.constants import IGNORE_INDEX
from mlmlib.exercises._common import (
    Verdict,
    _as_numbers,
    _call,
    _close,
    _function_answer,
    _kind,
    _named,
    _no,
    _number_from,
    _verdict_for_number,
    _yes,
)
from mlmlib.loss import log_softmax, mlm_loss, slot_loss, softmax

# the cases every function checker tries; the last one overflows a softmax without max-subtraction
_SLOT_CASES = [([1.0, 2.0, 0.0, 1.0], 1), ([0.5, 1.5, 2.0, 0.5], 1), ([3.0, 0.0, 0.0, 0.0], 0),
               ([-2.0, 0.5, 4.0], 0), ([1000.0, 0.0], 1)]
# the loss of one slot tries scores of 1000 twice, in this order: the truth on top, where
# exp(1000) = inf and inf / inf = nan unless the largest score is subtracted first; then the truth
# 1000 below the top, where even then its probability exp(-1000) underflows to 0.0 and -log 0 =
# inf: only logsumexp(s) - s_t gives the loss, 1000
_SLOT_LOSS_CASES = [*_SLOT_CASES[:-1], ([1000.0, 0.0], 0), ([1000.0, 0.0], 1)]
# a truth this far below the largest score has a probability under 1e-30, near the smallest
# positive floats (float32's is about e^-103, float64's e^-745): a wrong loss there is most likely
# that probability underflowing to 0, or kept above 0 by hand
_FAR_BELOW = 70.0


def _overflow(shown: str, value: float, rows: str = "every score") -> Verdict:
    """The verdict for ``exp`` of a large score taken without subtracting the largest first."""
    return _no(f"Not yet: on {shown} you got {value}: exp(1000) overflows, it is too large "
               "for a float (inf, and inf / inf is nan). Subtract the largest score from "
               f"{rows} before exponentiating.")


def _underflow(shown: str, value: float, expected: float, gap: float) -> Verdict:
    """The verdict for ``-log`` of a softmax probability that underflowed (or was clipped)."""
    return _no(f"Not yet: on {shown} you got {value:.4f}, not {expected:.4f}. The truth's "
               f"score is {gap:g} below the largest, so the softmax of the truth underflows to "
               f"0 (e^-{gap:g} is below the smallest positive float) and -log of it is inf, or "
               "too small if you kept it above 0. Subtracting the largest score does not help "
               "here: use -log P(t) = logsumexp(s) - s_t, with logsumexp(s) = m + log sum_v "
               "exp(s_v - m) and m the largest score.")


@_function_answer
def check_softmax(fn) -> Verdict:
    """Check ``fn(scores) -> probabilities`` on several cases, huge scores included."""
    if not callable(fn):
        return _no(f"Not answered yet: expected a function, got {type(fn).__name__}.")
    for scores, _ in _SLOT_CASES:
        expected = softmax(scores)
        result, error = _call(fn, list(scores))
        if error:
            return _no(f"Not yet: on scores {scores} your function raised {error}.")
        got = _as_numbers(result)
        if got is None or got.shape != expected.shape:
            kind = _kind(result) if got is None else f"shape {got.shape}"
            return _no(f"Not yet: on scores {scores} expected {len(scores)} probabilities, "
                       f"got {kind}.")
        if not np.all(np.isfinite(got)):
            return _no(f"Not yet: on scores {scores} you got {got}: exp(1000) overflows. Subtract "
                       "the largest score from every score before exponentiating.")
        with np.errstate(over="ignore"):
            raw_weights = np.exp(np.asarray(scores))
        if np.allclose(got, raw_weights, rtol=1e-6):
            return _no(f"Not yet: on scores {scores} those are exp(score); divide by their "
                       "total Z.")
        if not np.allclose(got, expected, rtol=1e-6, atol=1e-9):
            total = got.sum()
            hint = ("" if math.isclose(total, 1, abs_tol=1e-6)
                    else f" (they sum to {total:.4f}, not 1)")
            return _no(f"Not yet: on scores {scores} your probabilities {np.round(got, 4)} "
                       f"differ from {np.round(expected, 4)}{hint}.")
    return _yes(f"Correct: your softmax matches on all {len(_SLOT_CASES)} cases, including "
                "scores of 1000.")


def _slot_mistakes(scores: Sequence[float], target: int) -> dict[str, float]:
    """What the usual wrong answers for ``-log P(target)`` would give on this case."""
    loss = slot_loss(scores, target)
    top = int(np.argmax(scores))
    mistakes = {
        "the sign is flipped: the loss is -log P, a number >= 0": -loss,
        "that is log base 10; the course's log is the natural log (np.log, math.log)":
            loss / math.log(10),
        "that is log base 2; the course's log is the natural log (np.log, math.log)":
            loss / math.log(2),
        "that is the probability P itself; the loss is -log P": math.exp(-loss),
        "that sums -log P over every word; only the true word counts":
            float(-log_softmax(scores).sum()),
    }
    if top != target:
        mistakes["that scores the highest-scoring word; use the true word's probability"] = \
            slot_loss(scores, top)
    return mistakes


@_function_answer
def check_slot_loss(fn) -> Verdict:
    """Check ``fn(scores, target) -> -log P(target)`` on several cases, huge scores included."""
    if not callable(fn):
        return _no(f"Not answered yet: expected a function, got {type(fn).__name__}.")
    for scores, target in _SLOT_LOSS_CASES:
        expected = slot_loss(scores, target)
        shown = f"scores {scores}, target {target}"
        value, verdict = _number_from(fn, (list(scores), target), shown)
        if verdict is not None:
            return verdict
        if _close(value, expected):
            continue
        gap = max(scores) - scores[target]
        if not math.isfinite(value) and max(scores) >= 1000 and gap < _FAR_BELOW:
            return _overflow(shown, value)
        mistakes = _slot_mistakes(scores, target)
        if gap >= _FAR_BELOW and _named(value, mistakes) is None:
            return _underflow(shown, value, expected, gap)
        return _no(f"On {shown}: " + _verdict_for_number(value, expected, mistakes))
    return _yes(f"Correct: your function matches slot_loss on all {len(_SLOT_LOSS_CASES)} "
                "cases, including scores of 1000 with the truth on top and far below it.")


# cases for check_mlm_loss: (logits, labels); scores of 1000 with the truths on top (a softmax
# without max-subtraction gives nan), then a truth 1000 below the top (its probability underflows
# to 0 even with it); the last has an empty M
_MLM_CASES = [
    ([[1.0, 2.0, 0.0, 1.0], [0.5, 1.5, 2.0, 0.5], [3.0, 0.0, 0.0, 0.0]], [1, IGNORE_INDEX, 0]),
    ([[0.2, -1.0, 2.0], [1.0, 1.0, 1.0], [4.0, 0.0, -4.0], [0.0, 3.0, 1.0]],
     [2, 0, IGNORE_INDEX, 1]),
    ([[1000.0, 0.0], [0.0, 1000.0]], [0, 1]),
    ([[1000.0, 0.0], [0.0, 0.0]], [1, IGNORE_INDEX]),
    ([[1.0, 2.0], [3.0, 4.0]], [IGNORE_INDEX, IGNORE_INDEX]),
]


def _mlm_mistakes(logits, labels) -> dict[str, float]:
    lg, lb = torch.tensor(logits, dtype=torch.float64), torch.tensor(labels)
    total = float(mlm_loss(lg, lb))
    m = int((lb != IGNORE_INDEX).sum())
    per_position = -torch.log_softmax(lg, -1)
    every = float(per_position.gather(1, lb.clamp(min=0)[:, None]).sum())
    mistakes = {
        "the sign is flipped: the loss is a sum of -log P": -total,
        "that uses log base 10; the course's log is the natural log": total / math.log(10),
        f"that sums over every position, masked or not; only positions in M count "
        f"(labels other than {IGNORE_INDEX})": every,
    }
    if m > 1:
        mistakes["that is the mean over M (what PyTorch reports); the formula is the sum"] = \
            total / m
    return mistakes


@_function_answer
def check_mlm_loss(fn) -> Verdict:
    """Check ``fn(logits, labels) -> sum over M of -log P(label)``; labels use IGNORE_INDEX.

    The cases include huge scores and an empty M, whose loss must be exactly 0.
    """
    if not callable(fn):
        return _no(f"Not answered yet: expected a function, got {type(fn).__name__}.")
    for logits, labels in _MLM_CASES:
        expected = float(mlm_loss(logits, labels))
        shown = f"labels {labels}"
        value, verdict = _number_from(fn, ([list(row) for row in logits], list(labels)), shown)
        if verdict is not None:
            return verdict
        if all(lab == IGNORE_INDEX for lab in labels) and not value == 0:
            return _no(f"Not yet: with M empty ({shown}) you got {value}; the empty sum is 0 "
                       "(a mean would be 0/0).")
        if _close(value, expected):
            continue
        graded = [(row, lab) for row, lab in zip(logits, labels, strict=True)
                  if lab != IGNORE_INDEX]
        gap = max(max(row) - row[lab] for row, lab in graded)
        if not math.isfinite(value) and gap < _FAR_BELOW:
            return _overflow(shown, value, rows="each row's scores")
        mistakes = _mlm_mistakes(logits, labels)
        if gap >= _FAR_BELOW and _named(value, mistakes) is None:
            return _underflow(shown, value, expected, gap)
        if not math.isfinite(value):
            return _no(f"Not yet: on {shown} you got {value}: subtract each row's largest score "
                       "before exponentiating.")
        return _no(f"On {shown}: " + _verdict_for_number(value, expected, mistakes))
    return _yes(f"Correct: your loss matches mlm_loss on all {len(_MLM_CASES)} cases, "
                "including huge scores and an empty M.")
