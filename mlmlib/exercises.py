"""mlmlib.exercises - checkers for the exercises: a verdict and a hint, never an exception.

Does: run a reader's answer (a function or a number) against the reference computed by
:mod:`mlmlib.loss`, give one clear verdict, and when the answer is wrong, recognise the usual
mistakes and say which one it looks like: a forgotten minus sign, ``log10`` (or ``log2``)
instead of the natural log, the probability instead of its ``-log``, the score of the top word
instead of the true one, summing over every word, softmax without subtracting the maximum (it
overflows at scores of 1000). Each checker returns a :class:`Verdict` - true when the answer
is right, shown as its message in a notebook or by ``print`` - and never raises, whatever it
is given.

Does not: teach the answer - the chapters' solution dropdowns do that - or grade anything
outside the course.

>>> from mlmlib.exercises import check_loss_value
>>> check_loss_value(0.6265, scores=[1, 2, 0, 1], target=1)
Correct: 0.6265 matches -log P = 0.6265.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from mlmlib.loss import log_softmax, slot_loss, softmax

__all__ = ["Verdict", "check_loss_value", "check_slot_loss", "check_softmax"]


class Verdict:
    """A checker's answer: true when right; its text is the message a reader sees."""

    def __init__(self, passed: bool, message: str):
        self.passed = bool(passed)
        self.message = message

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message

    __str__ = __repr__


def _yes(message: str) -> Verdict:
    return Verdict(True, message)


def _no(message: str) -> Verdict:
    return Verdict(False, message)

# the cases every function checker tries; the last one overflows a softmax without max-subtraction
_SLOT_CASES = [([1.0, 2.0, 0.0, 1.0], 1), ([0.5, 1.5, 2.0, 0.5], 1), ([3.0, 0.0, 0.0, 0.0], 0),
               ([-2.0, 0.5, 4.0], 0), ([1000.0, 0.0], 1)]


def _as_number(value) -> float | None:
    """``value`` as a float, or None when it is not a single number."""
    if isinstance(value, bool | str | bytes) or value is None:
        return None
    try:
        arr = np.asarray(value.detach() if hasattr(value, "detach") else value, dtype=float)
    except (TypeError, ValueError):
        return None
    return float(arr) if arr.size == 1 else None


def _close(a: float, b: float, tol: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


FOUR_DECIMALS = 5e-5 + 1e-9  # a number typed to 4 decimals is within this of the truth


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


def _verdict_for_number(answer: float, expected: float, mistakes: dict[str, float],
                        tol: float = 1e-6) -> str:
    for hint, value in mistakes.items():
        if abs(answer - value) <= tol or _close(answer, value):
            return f"Not yet: {answer:.4f} - {hint}."
    return f"Not yet: {answer:.4f} is not {expected:.4f}."


def check_loss_value(answer, scores: Sequence[float], target: int) -> Verdict:
    """Check a number: the loss ``-log P(target)`` for these raw scores (to 4 decimals)."""
    expected = slot_loss(scores, target)
    value = _as_number(answer)
    if value is None:
        return _no(f"Not answered yet: expected one number, got {type(answer).__name__}.")
    if abs(value - expected) <= FOUR_DECIMALS:
        return _yes(f"Correct: {value:.4f} matches -log P = {expected:.4f}.")
    return _no(_verdict_for_number(value, expected, _slot_mistakes(scores, target), FOUR_DECIMALS))


def _call(fn: Callable, *args):
    """Call the reader's function; return (result, error message or None)."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args), None
    except Exception as err:  # the reader's code may raise anything
        return None, f"{type(err).__name__}: {err}"


def check_slot_loss(fn) -> Verdict:
    """Check ``fn(scores, target) -> -log P(target)`` on several cases, huge scores included."""
    if not callable(fn):
        return _no(f"Not answered yet: expected a function, got {type(fn).__name__}.")
    for scores, target in _SLOT_CASES:
        expected = slot_loss(scores, target)
        result, error = _call(fn, list(scores), target)
        shown = f"scores {scores}, target {target}"
        if error:
            return _no(f"Not yet: on {shown} your function raised {error}.")
        value = _as_number(result)
        if value is None:
            what = "nothing (None)" if result is None else type(result).__name__
            return _no(f"Not yet: on {shown} your function returned {what}; expected one number.")
        if not math.isfinite(value) and max(scores) >= 1000:
            return _no(f"Not yet: on {shown} you got {value}: exp(1000) overflows. Subtract the "
                       "largest score from every score before exponentiating.")
        if not _close(value, expected):
            return _no(f"On {shown}: " + _verdict_for_number(value, expected,
                                                             _slot_mistakes(scores, target)))
    return _yes(f"Correct: your function matches slot_loss on all {len(_SLOT_CASES)} cases, "
                "including scores of 1000.")


def check_softmax(fn) -> Verdict:
    """Check ``fn(scores) -> probabilities`` on several cases, huge scores included."""
    if not callable(fn):
        return _no(f"Not answered yet: expected a function, got {type(fn).__name__}.")
    for scores, _ in _SLOT_CASES:
        expected = softmax(scores)
        result, error = _call(fn, list(scores))
        if error:
            return _no(f"Not yet: on scores {scores} your function raised {error}.")
        try:
            got = np.asarray(result.detach() if hasattr(result, "detach") else result,
                             dtype=float)
        except (TypeError, ValueError):
            got = None
        if got is None or got.shape != expected.shape:
            shape = "nothing (None)" if result is None else f"shape {getattr(got, 'shape', '?')}"
            return _no(f"Not yet: on scores {scores} expected {len(scores)} probabilities, "
                       f"got {shape}.")
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
