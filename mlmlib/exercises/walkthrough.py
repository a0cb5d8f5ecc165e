"""mlmlib.exercises.walkthrough - the checkers of the walkthrough, Steps 1-7 and its summary.

Does: check hiding positions (Step 1), building the labels (Step 2), the missing probability
(Step 3), a softmax (Step 4), the loss of one slot (Step 5), the loss summed over M (Step 6),
the loss of an empty M (Step 7) and a loss computed by hand (the summary). The worked examples
and the performance page ask some of these again.

Does not: check the exercises that first appear in the worked examples
(:mod:`mlmlib.exercises.worked`) or in the training chapters
(:mod:`mlmlib.exercises.training`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from mlmlib._checks import number, numbers, probability
from mlmlib.constants import IGNORE_INDEX
from mlmlib.exercises._common import (
    Verdict,
    _as_number,
    _as_numbers,
    _call,
    _check_number,
    _close,
    _function_answer,
    _no,
    _verdict_for_number,
    _yes,
)
from mlmlib.loss import log_softmax, mlm_loss, slot_loss, softmax


def _kind(result) -> str:
    """What the reader's function returned, in words, when it is not the numbers expected."""
    if result is None:
        return "nothing (None)"
    try:
        arr = np.asarray(result.detach() if hasattr(result, "detach") else result)
        kind = {"c": "complex numbers", "U": "text", "S": "text", "b": "True/False values"}
        return kind.get(arr.dtype.kind) or f"{type(result).__name__} {result!r}"[:80]
    except Exception:
        return type(result).__name__


def _whole_numbers(result) -> list[int] | None:
    """The reader's ids as ints, or None unless every one is a whole number (no float, no
    text, no bool: a label is an id)."""
    try:
        values = list(result)
        if all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values):
            return [int(v) for v in values]
        arr = np.asarray(result.detach() if hasattr(result, "detach") else result)
        return [int(v) for v in arr] if arr.ndim == 1 and arr.dtype.kind in "iu" else None
    except Exception:
        return None


def _number_from(fn: Callable, args: tuple, shown: str) -> tuple[float | None, Verdict | None]:
    """Call the reader's function for one number: (the number, None) or (None, a verdict)."""
    result, error = _call(fn, *args)
    if error:
        return None, _no(f"Not yet: on {shown} your function raised {error}.")
    value = _as_number(result)
    if value is None:
        return None, _no(f"Not yet: on {shown} your function returned {_kind(result)}; expected "
                         "one number.")
    return value, None


_HIDE_CASES = [(["the", "cat", "sat", "on", "the", "mat"], [1]),
               (["the", "cat", "sat", "on", "the", "mat"], [0, 5]),
               (["a", "b", "c"], [])]


@_function_answer
def check_hide(fn) -> Verdict:
    """Check ``fn(tokens, positions) -> a new list with "[MASK]" at those positions (from 0)``."""
    if not callable(fn):
        return _no(f"Not answered yet: expected a function, got {type(fn).__name__}.")
    for tokens, positions in _HIDE_CASES:
        original = list(tokens)
        given = list(tokens)
        result, error = _call(fn, given, list(positions))
        expected = [("[MASK]" if i in positions else t) for i, t in enumerate(tokens)]
        shown = f"positions {positions} of {tokens}"
        if error:
            return _no(f"Not yet: on {shown} your function raised {error}.")
        if len(given) != len(original) or not all(isinstance(g, str) and g == o
                                                    for g, o in zip(given, original, strict=True)):
            return _no("Not yet: your function changed the caller's list; build a new one "
                       "(the original sentence is still needed for the labels).")
        if not isinstance(result, list | tuple) or not all(isinstance(t, str) for t in result):
            what = type(result).__name__ + (" holding something other than text (strings)" if
                                            isinstance(result, list | tuple) else "")
            return _no(f"Not yet: on {shown} expected a list of tokens, got {what}.")
        result = list(result)
        if result == expected:
            continue
        shifted = [("[MASK]" if i - 1 in positions else t) for i, t in enumerate(tokens)]
        by_word = [("[MASK]" if any(t == tokens[p] for p in positions) else t) for t in tokens]
        if result == shifted:
            return _no(f"Not yet: on {shown} you hid the word one to the right; Python counts "
                       "positions from 0.")
        if result == by_word:
            return _no(f"Not yet: on {shown} you hid every copy of the word; hide only the "
                       "named positions.")
        return _no(f"Not yet: on {shown} expected {expected}, got {result}.")
    return _yes(f"Correct: your function hides the right positions in all {len(_HIDE_CASES)} "
                "cases and leaves the original sentence alone.")


@_function_answer
def check_labels(fn) -> Verdict:
    """Check ``fn(ids, positions) -> labels``: the original id in M, IGNORE_INDEX elsewhere."""
    if not callable(fn):
        return _no(f"Not answered yet: expected a function, got {type(fn).__name__}.")
    cases = [([7, 8, 9, 10], [1]), ([5, 6, 7], [0, 2]), ([5, 6], [])]
    for ids, positions in cases:
        result, error = _call(fn, list(ids), list(positions))
        expected = [i if k in positions else IGNORE_INDEX for k, i in enumerate(ids)]
        shown = f"ids {ids}, positions {positions}"
        if error:
            return _no(f"Not yet: on {shown} your function raised {error}.")
        got = _whole_numbers(result)
        if got is None:
            what = type(result).__name__
            if isinstance(result, list | tuple | np.ndarray | torch.Tensor):
                what = f"{_kind(result)}; ids are whole numbers"
            return _no(f"Not yet: on {shown} expected a list of ids, got {what}.")
        if got == expected:
            continue
        if got == [IGNORE_INDEX if k in positions else i for k, i in enumerate(ids)]:
            return _no(f"Not yet: on {shown} the two cases are swapped: positions in M keep "
                       f"their original id, the others get {IGNORE_INDEX}.")
        if got == [i if k in positions else 0 for k, i in enumerate(ids)]:
            return _no(f"Not yet: on {shown} 0 is a real token id; positions outside M get "
                       f"IGNORE_INDEX = {IGNORE_INDEX}.")
        return _no(f"Not yet: on {shown} expected {expected}, got {got}.")
    return _yes(f"Correct: the labels keep the original id in M and {IGNORE_INDEX} elsewhere.")


def check_missing_probability(answer, known: Sequence[float]) -> Verdict:
    """Check a number: the one probability missing from a distribution whose others are known."""
    known = numbers(known, "known", 0, 1, ndim=1, empty=False).tolist()
    if sum(known) > 1 + 1e-9:
        raise ValueError(f"known probabilities sum to {sum(known):g}, more than 1")
    expected = 1 - sum(known)
    mistakes = {
        "probabilities of all the words add up to 1: subtract *all* the known ones from 1":
            1 - known[0],
        "that is the total of the known ones; the missing one is what is left up to 1":
            sum(known),
    }
    return _check_number(answer, expected, mistakes, "1 - (the others)")


def check_probability_from_loss(answer, loss: float) -> Verdict:
    """Check a number: the probability of the truth that costs ``loss`` (``-log p = loss``).

    Undoing ``-log``: ``p = e**(-loss)``.
    """
    loss = number(loss, "loss", 0)
    mistakes = {
        "that is 10 to the power -loss; the course's log is the natural one, base e":
            10 ** -loss,
        "the minus sign: -log p = loss means log p = -loss, so p = e to the power -loss":
            math.exp(loss),
        "that is 1 / loss; undo the log with the exponential instead": 1 / loss if loss else 0,
        "that is 1 - loss; undo the log with the exponential instead": 1 - loss,
    }
    return _check_number(answer, math.exp(-loss), mistakes, "e^(-loss)")


def check_loss_from_product(answer, product: float) -> Verdict:
    """Check a number: the loss of a sentence whose slots' probabilities multiply to ``product``.

    The sum of the ``-log``s is ``-log`` of the product: ``L = -log(product)``.
    """
    product = probability(product, "product", above=True)
    mistakes = {
        "that is log10; the course's log is the natural one, base e": -math.log10(product),
        "the minus sign: the loss is -log of the product, a positive number": math.log(product),
        "that is the product itself; the loss is -log of it": product,
        "that is 1 minus the product; the loss is -log of it": 1 - product,
    }
    return _check_number(answer, -math.log(product), mistakes, "-log(product)")


# the cases every function checker tries; the last one overflows a softmax without max-subtraction
_SLOT_CASES = [([1.0, 2.0, 0.0, 1.0], 1), ([0.5, 1.5, 2.0, 0.5], 1), ([3.0, 0.0, 0.0, 0.0], 0),
               ([-2.0, 0.5, 4.0], 0), ([1000.0, 0.0], 1)]


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
    for scores, target in _SLOT_CASES:
        expected = slot_loss(scores, target)
        shown = f"scores {scores}, target {target}"
        value, verdict = _number_from(fn, (list(scores), target), shown)
        if verdict is not None:
            return verdict
        if not math.isfinite(value) and max(scores) >= 1000:
            return _no(f"Not yet: on {shown} you got {value}: exp(1000) overflows. Subtract the "
                       "largest score from every score before exponentiating.")
        if not _close(value, expected):
            return _no(f"On {shown}: " + _verdict_for_number(value, expected,
                                                             _slot_mistakes(scores, target)))
    return _yes(f"Correct: your function matches slot_loss on all {len(_SLOT_CASES)} cases, "
                "including scores of 1000.")


# cases for check_mlm_loss: (logits, labels); the last has an empty M
_MLM_CASES = [
    ([[1.0, 2.0, 0.0, 1.0], [0.5, 1.5, 2.0, 0.5], [3.0, 0.0, 0.0, 0.0]], [1, IGNORE_INDEX, 0]),
    ([[0.2, -1.0, 2.0], [1.0, 1.0, 1.0], [4.0, 0.0, -4.0], [0.0, 3.0, 1.0]],
     [2, 0, IGNORE_INDEX, 1]),
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
        if not math.isfinite(value):
            return _no(f"Not yet: on {shown} you got {value}: subtract each row's largest score "
                       "before exponentiating.")
        if not _close(value, expected):
            return _no(f"On {shown}: " + _verdict_for_number(value, expected,
                                                             _mlm_mistakes(logits, labels)))
    return _yes(f"Correct: your loss matches mlm_loss on all {len(_MLM_CASES)} cases, "
                "including huge scores and an empty M.")


def check_empty_loss(answer) -> Verdict:
    """Check a number: the course's loss (a sum over M) when M is empty."""
    value = _as_number(answer)
    if value is not None and math.isnan(value):
        return _no("Not yet: NaN is what PyTorch's *mean* gives (0 / 0); the course's loss is "
                   "a sum, and the empty sum is 0.")
    return _check_number(answer, 0.0, {"that is log |V|, the loss of a uniform guess at one "
                                       "slot; with no slot there is nothing to add":
                                       math.log(30000)}, "the empty sum")


def check_loss_value(answer, scores: Sequence[float], target: int) -> Verdict:
    """Check a number: the loss ``-log P(target)`` for these raw scores (to 4 decimals)."""
    return _check_number(answer, slot_loss(scores, target), _slot_mistakes(scores, target),
                         "-log P")
