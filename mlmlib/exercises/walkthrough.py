"""mlmlib.exercises.walkthrough - the checkers of the walkthrough, Steps 1-7 and its summary.

Does: check hiding positions (Step 1), building the labels (Step 2), the missing probability
(Step 3), a word's score as a dot product (Step 4), a probability read back from its loss
(Step 5), the loss of a product of probabilities (Step 6), the gradient of one slot's loss with
respect to the truth's score (Step 7) and a loss computed by hand (the summary). The function
checkers (a reader's softmax and loss functions at scores of 1000) are in
:mod:`mlmlib.exercises.functions`.

Does not: check the exercises that first appear in the worked examples
(:mod:`mlmlib.exercises.worked`) or in the training chapters
(:mod:`mlmlib.exercises.training`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from mlmlib._checks import number, numbers, probability
from mlmlib.constants import IGNORE_INDEX
from mlmlib.exercises._common import (
    FOUR_DECIMALS,
    Verdict,
    _as_number,
    _as_numbers,
    _call,
    _check_number,
    _function_answer,
    _kind,
    _no,
    _yes,
)
from mlmlib.exercises.functions import _slot_mistakes
from mlmlib.loss import slot_loss, softmax


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


def check_score(answer, w: Sequence[float], h: Sequence[float]) -> Verdict:
    """Check a number: a word's score, the dot product ``w . h`` of its vector and the thought.

    >>> check_score(1.3, w=[0.8, -0.7, 0.1], h=[0.5, -1.0, 2.0])
    Correct: 1.3000 matches w . h = 1.3000.
    """
    w = numbers(w, "w", ndim=1, empty=False)
    h = numbers(h, "h", ndim=1, empty=False)
    if w.shape != h.shape:
        raise ValueError(f"w and h must have the same length, got {len(w)} and {len(h)}")
    products = w * h
    given = _as_numbers(answer)
    if given is not None and given.shape == products.shape and len(products) > 1 \
            and np.allclose(given, products, rtol=1e-6, atol=FOUR_DECIMALS):
        return _no(f"Not yet: those are the {len(products)} products of matching entries; the "
                   "score is one number, their sum.")
    with_sign_slip = float(sum(-abs(p) if (a < 0 or b < 0) else p
                               for a, b, p in zip(w, h, products, strict=True)))
    mistakes = {
        "that adds every entry of both lists; a dot product multiplies matching entries, then "
        "adds the products": float(w.sum() + h.sum()),
        "that multiplies the two lists' totals; multiply matching entries first, then add the "
        "products": float(w.sum() * h.sum()),
        "a sign slipped: a negative times a negative is positive": with_sign_slip,
    }
    return _check_number(answer, float(products.sum()), mistakes, "w . h")


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


def check_empty_loss(answer) -> Verdict:
    """Check a number: the course's loss (a sum over M) when M is empty."""
    value = _as_number(answer)
    if value is not None and math.isnan(value):
        return _no("Not yet: NaN is what PyTorch's *mean* gives (0 / 0); the course's loss is "
                   "a sum, and the empty sum is 0.")
    return _check_number(answer, 0.0, {"that is log |V|, the loss of a uniform guess at one "
                                       "slot; with no slot there is nothing to add":
                                       math.log(30000)}, "the empty sum")


def check_truth_gradient(answer, scores: Sequence[float], target: int) -> Verdict:
    """Check a number: how fast one slot's loss changes with the truth's score, ``P(t) - 1``.

    The gradient of ``-log P(t)`` with respect to the scores is ``p - onehot(t)``: ``P(v)`` for
    every other word, ``P(t) - 1`` for the truth. Each entry lies between -1 and 1.
    """
    loss = slot_loss(scores, target)  # refuses scores or a target that do not fit
    probs = softmax(scores)
    p = float(probs[target])
    expected = p - 1
    mistakes = {
        "the sign is flipped: raising the truth's score lowers the loss, so the gradient is "
        "negative, P - 1": 1 - p,
        "that is the truth's probability P itself; for the true word the gradient is P - 1": p,
        "that is the loss -log P itself, not how fast it changes": loss,
    }
    if p > 0:
        mistakes["that is -1/P, how fast the loss changes with P itself; with the score it "
                 "changes by P - 1"] = -1 / p
        mistakes["that is 1/P; the loss changes with P itself at -1/P, and with the truth's "
                 "score at P - 1"] = 1 / p
    top = int(np.argmax(probs))
    if top != target:
        mistakes["that is the gradient for the top-scoring word, P(top); the truth's entry is "
                 "P(truth) - 1"] = float(probs[top])
    return _check_number(answer, expected, mistakes, "P - 1")


def check_loss_value(answer, scores: Sequence[float], target: int) -> Verdict:
    """Check a number: the loss ``-log P(target)`` for these raw scores (to 4 decimals)."""
    return _check_number(answer, slot_loss(scores, target), _slot_mistakes(scores, target),
                         "-log P")
