"""mlmlib.exercises._common - what every checker shares: the verdict and the number checks.

Does: define :class:`~mlmlib.exercises.Verdict`, the right and wrong verdicts, reading a
reader's answer as one number, and the check of a numeric answer against its reference and the
usual mistakes. (An exercise's own settings, which the chapter passes in, are checked with
:mod:`mlmlib._checks` and raise; the reader's answer never does.)

Does not: check any exercise itself - the part modules (walkthrough, worked, training) do.
"""

from __future__ import annotations

import functools
import math
import numbers
import re

import numpy as np


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


def _call(fn, *args):
    """Call the reader's function; return (result, error message or None). A reader's bug is a
    verdict, not a crash: any exception becomes its message (the first 200 characters)."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args), None
    except Exception as err:  # the reader's code may raise anything
        return None, f"{type(err).__name__}: {err}"[:200]


def _function_answer(check):
    """For a checker of a reader's function: one that returns None every time it is called is
    the exercise's empty template, not a wrong answer; say so ("Not answered yet")."""

    @functools.wraps(check)
    def checked(fn, *args, **kwargs):
        if not callable(fn):
            return check(fn, *args, **kwargs)
        results = []

        @functools.wraps(fn)
        def recorded(*a, **k):
            results.append(result := fn(*a, **k))
            return result

        verdict = check(recorded, *args, **kwargs)
        if not verdict and results and all(r is None for r in results):
            name = getattr(fn, "__name__", "your function")
            return _no(f"Not answered yet: {name} returns None; write its body where it says "
                       "'# your code here'.")
        return verdict

    return checked


def _as_numbers(value) -> np.ndarray | None:
    """``value`` as a float array, or None unless it holds real numbers only: text ("0.5",
    which NumPy would read as a number), bools, None and complex numbers are not answers."""
    if isinstance(value, bool | str | bytes) or value is None:
        return None
    try:
        arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
        if arr.dtype == object and all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                                       for v in arr.flat):  # a Fraction, an int beyond int64
            arr = arr.astype(float)
    except Exception:  # a ragged list, or an object of the reader's that refuses
        return None
    return arr.astype(float) if arr.dtype.kind in "iuf" else None


def _as_number(value) -> float | None:
    """``value`` as a float, or None when it is not a single number."""
    arr = _as_numbers(value)
    return float(arr.reshape(())) if arr is not None and arr.size == 1 else None  # 0.5, [0.5]


def _close(a: float, b: float, tol: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


FOUR_DECIMALS = 5e-5 + 1e-9  # a number typed to 4 decimals is within this of the truth


def _named(answer: float, mistakes: dict[str, float], tol: float = 1e-6) -> str | None:
    """The hint of the usual mistake that gives ``answer``, or None when none does."""
    return next((hint for hint, value in mistakes.items()
                 if abs(answer - value) <= tol or _close(answer, value)), None)


def _verdict_for_number(answer: float, expected: float, mistakes: dict[str, float],
                        tol: float = 1e-6) -> str:
    hint = _named(answer, mistakes, tol)
    if hint is not None:
        return f"Not yet: {answer:.4f} - {hint}."
    return f"Not yet: {answer:.4f} is not {expected:.4f}."


def _check_number(answer, expected: float, mistakes: dict[str, float], what: str,
                  tol: float = FOUR_DECIMALS) -> Verdict:
    """The verdict for a numeric answer: right (within ``tol``), a known mistake, or wrong."""
    value = _as_number(answer)
    if value is None:
        return _no(f"Not answered yet: expected one number, got {type(answer).__name__}.")
    if abs(value - expected) <= tol:
        return _yes(f"Correct: {value:.4f} matches {what} = {expected:.4f}.")
    return _no(_verdict_for_number(value, expected, mistakes, tol))


def _check_count(answer, expected: int, mistakes: dict[int, str], what: str) -> Verdict:
    """The verdict for a count (of weights, say): exact, off by a known ``delta`` (the keys of
    ``mistakes``: answer - expected, each with its hint), or wrong."""
    value = _as_number(answer)
    if value is None:
        return _no(f"Not answered yet: expected one number, got {type(answer).__name__}.")
    if value == expected:
        return _yes(f"Correct: {expected:,} {what}.")
    for delta, hint in mistakes.items():
        if delta and value == expected + delta:
            return _no(f"Not yet: {value:,.0f} - {hint}.")
    return _no(f"Not yet: {value:,.0f} is not {expected:,}.")


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


def _number_from(fn, args: tuple, shown: str) -> tuple[float | None, Verdict | None]:
    """Call the reader's function for one number: (the number, None) or (None, a verdict)."""
    result, error = _call(fn, *args)
    if error:
        return None, _no(f"Not yet: on {shown} your function raised {error}.")
    value = _as_number(result)
    if value is None:
        return None, _no(f"Not yet: on {shown} your function returned {_kind(result)}; expected "
                         "one number.")
    return value, None


# other ways of saying a prediction's word, each read as the word every checker knows
_SYNONYMS = {"about_the_same": "same", "the_same": "same", "about_same": "same",
             "equal": "same", "unchanged": "same", "as_close": "same"}


def _word(answer) -> str | None:
    """The reader's word, lower case, spaces, hyphens and underscores made one "_", outer
    quotes and full stops dropped, a synonym in ``_SYNONYMS`` read as its word; None when the
    answer is not a non-empty string."""
    if not isinstance(answer, str):
        return None
    word = re.sub(r"[\s_-]+", "_", answer.strip().strip("'\".").strip().lower())
    return _SYNONYMS.get(word, word) or None


def _on_seeds(n: int) -> str:
    return f"on every one of {n} seeds" if n > 1 else "on its one seed"


def _higher_or_lower(answer, value: float, reference: float, said: str, hint: str) -> Verdict:
    """The verdict on a prediction, "higher" or "lower", that ``value`` is above or below
    ``reference``; ``said`` states the measured comparison, with ``{side}`` for its side, and
    ``hint`` asks the reader a question back when the prediction is wrong."""
    word = _word(answer)
    if word not in ("higher", "lower"):
        return _no('Not answered yet: predict "higher" or "lower".')
    if value == reference:
        return _no(f"The two are equal ({value:.4f}): no prediction can be checked.")
    side = "higher" if value > reference else "lower"
    if word == side:
        return _yes(f"Your prediction matches: {said.format(side=side)}.")
    return _no(f"The numbers disagree: {said.format(side=side)}. {hint}")


def _unsettled(diffs, what: str, side: str, tie: str) -> Verdict | None:
    """The verdict that the seeds cannot settle a prediction, or None when they can.

    ``diffs`` holds one difference per seed, positive where ``what`` came out on ``side``
    (for example "below its floor"). The seeds settle it only when every difference has the
    same sign and none is 0; ``tie`` says what a 0 means ("exactly at its floor").
    """
    n, on_side, ties = len(diffs), sum(d > 0 for d in diffs), sum(d == 0 for d in diffs)
    if ties:
        return _no(f"The seeds cannot settle it: {what} came out {tie} on {ties} of {n} seeds; "
                   "no prediction can be checked.")
    if 0 < on_side < n:
        return _no(f"The seeds disagree: {what} came out {side} on {on_side} of {n} seeds, so "
                   "this experiment cannot settle it; no prediction can be checked.")
    return None


def _judged(word: str, measured: str, said: str, hints: dict[str, str],
            disagree: str = "Not yet") -> Verdict:
    """The verdict on a prediction ``word`` against the ``measured`` answer: right, or wrong
    with ``said`` (what was measured) and the question back for that wrong answer."""
    if word == measured:
        return _yes(f"Your prediction matches: {said}.")
    return _no(f"{disagree}: {said}. {hints[word]}")
