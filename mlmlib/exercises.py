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
import torch

from mlmlib.constants import IGNORE_INDEX
from mlmlib.loss import log_softmax, mlm_loss, slot_loss, softmax

__all__ = [
    "Verdict",
    "bert_parameter_count",
    "check_branch_counts",
    "check_direction",
    "check_empty_loss",
    "check_empty_probability",
    "check_hide",
    "check_labels",
    "check_loss_value",
    "check_missing_probability",
    "check_mlm_loss",
    "check_parameter_count",
    "check_perplexity",
    "check_random_branch_probability",
    "check_slot_loss",
    "check_softmax",
    "check_total_loss",
]


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


def _check_number(answer, expected: float, mistakes: dict[str, float], what: str,
                  tol: float = FOUR_DECIMALS) -> Verdict:
    """The verdict for a numeric answer: right (within ``tol``), a known mistake, or wrong."""
    value = _as_number(answer)
    if value is None:
        return _no(f"Not answered yet: expected one number, got {type(answer).__name__}.")
    if abs(value - expected) <= tol:
        return _yes(f"Correct: {value:.4f} matches {what} = {expected:.4f}.")
    return _no(_verdict_for_number(value, expected, mistakes, tol))


def check_loss_value(answer, scores: Sequence[float], target: int) -> Verdict:
    """Check a number: the loss ``-log P(target)`` for these raw scores (to 4 decimals)."""
    return _check_number(answer, slot_loss(scores, target), _slot_mistakes(scores, target),
                         "-log P")


def check_empty_probability(answer, n: int, rate: float = 0.15) -> Verdict:
    """Check a number: how often the Bernoulli rule leaves all ``n`` tokens unmasked."""
    expected = (1 - rate) ** n
    mistakes = {
        "that is the chance that every token is masked, rate**n": rate**n,
        "that is the chance that at least one token is masked; M is empty with the rest":
            1 - expected,
        "probabilities of separate tokens multiply, they do not add: (1 - rate)**n":
            max(0.0, 1 - n * rate),
        "that is the chance for one token; all n must stay unmasked": 1 - rate,
    }
    return _check_number(answer, expected, mistakes, f"(1 - {rate:g})**{n}")


def check_random_branch_probability(answer, mask_prob: float = 0.8,
                                    random_prob: float = 0.1) -> Verdict:
    """Check a number: the conditional probability of the random branch after the [MASK] draw.

    Hugging Face's collator first writes [MASK] with probability ``mask_prob``, then, among the
    positions left, draws the random word with a *conditional* probability.
    """
    expected = random_prob / (1 - mask_prob)
    mistakes = {
        f"{random_prob:g} is the share of all targets; among the {1 - mask_prob:.0%} left "
        "after the [MASK] draw it must be larger": random_prob,
        "divide by the share that is left after the [MASK] draw, not by the [MASK] share":
            random_prob / mask_prob,
        "that is the share left after the [MASK] draw, not the random branch's part of it":
            1 - mask_prob,
    }
    return _check_number(answer, expected, mistakes, f"{random_prob:g} / (1 - {mask_prob:g})")


def check_branch_counts(answer, total_tokens: int, rate: float = 0.15, mask_prob: float = 0.8,
                        random_prob: float = 0.1) -> Verdict:
    """Check four numbers: (targets, [MASK], random, unchanged) for a corpus of this size."""
    targets = total_tokens * rate
    expected = [targets, targets * mask_prob, targets * random_prob,
                targets * (1 - mask_prob - random_prob)]
    names = ["targets", "[MASK]", "random", "unchanged"]
    try:
        values = [float(v) for v in answer]
    except (TypeError, ValueError):
        return _no("Not answered yet: expected four numbers (targets, [MASK], random, "
                   "unchanged).")
    if len(values) != 4:
        return _no(f"Not yet: expected four numbers, got {len(values)}.")
    for name, value, want in zip(names, values, expected, strict=True):
        if math.isclose(value, want, rel_tol=1e-6, abs_tol=0.5):
            continue
        if name == "targets" and math.isclose(value, total_tokens * mask_prob, rel_tol=1e-6):
            return _no("Not yet: targets - the 80% applies to the chosen 15%, not to every "
                       "token.")
        if name != "targets" and math.isclose(value, total_tokens * want / targets,
                                              rel_tol=1e-6):
            return _no(f"Not yet: {name} - take the share of the targets ({targets:,.0f}), "
                       "not of every token.")
        if sum(values[1:]) != values[0]:
            return _no(f"Not yet: {name} is {value:,.0f}; note the three branches must add up "
                       f"to the targets ({values[0]:,.0f}).")
        return _no(f"Not yet: {name} is {value:,.0f}, not {want:,.0f}.")
    shown = ", ".join(f"{n} {v:,.0f}" for n, v in zip(names, values, strict=True))
    return _yes(f"Correct: {shown}.")


def check_total_loss(answer, slot_probs: Sequence[float], nsp_prob: float) -> Verdict:
    """Check a number: the total BERT loss, MLM summed over the slots plus NSP."""
    mlm = sum(-math.log(p) for p in slot_probs)
    nsp = -math.log(nsp_prob)
    mistakes = {
        "that is the MLM part alone; add the NSP loss": mlm,
        "that is the NSP part alone; add the MLM loss": nsp,
        "that averages the masked slots; the course's MLM loss sums them":
            mlm / len(slot_probs) + nsp,
        "that is log base 10; the course's log is the natural log": (mlm + nsp) / math.log(10),
        "the sign is flipped: each part is -log p, a number >= 0": -(mlm + nsp),
    }
    # a reader may add parts already rounded to 4 decimals: allow one rounding step per part
    terms = len(slot_probs) + 1
    return _check_number(answer, mlm + nsp, mistakes, "MLM + NSP", tol=FOUR_DECIMALS * terms)


def _call(fn: Callable, *args):
    """Call the reader's function; return (result, error message or None)."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args), None
    except Exception as err:  # the reader's code may raise anything
        return None, f"{type(err).__name__}: {err}"


def _number_from(fn: Callable, args: tuple, shown: str) -> tuple[float | None, Verdict | None]:
    """Call the reader's function for one number: (the number, None) or (None, a verdict)."""
    result, error = _call(fn, *args)
    if error:
        return None, _no(f"Not yet: on {shown} your function raised {error}.")
    value = _as_number(result)
    if value is None:
        what = "nothing (None)" if result is None else type(result).__name__
        return None, _no(f"Not yet: on {shown} your function returned {what}; expected one "
                         "number.")
    return value, None


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


# ----------------------------------------------------------------------------- walkthrough

_HIDE_CASES = [(["the", "cat", "sat", "on", "the", "mat"], [1]),
               (["the", "cat", "sat", "on", "the", "mat"], [0, 5]),
               (["a", "b", "c"], [])]


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
        if given != original:
            return _no("Not yet: your function changed the caller's list; build a new one "
                       "(the original sentence is still needed for the labels).")
        if not isinstance(result, list | tuple):
            return _no(f"Not yet: on {shown} expected a list of tokens, got "
                       f"{type(result).__name__}.")
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
        try:
            got = [int(v) for v in result]
        except (TypeError, ValueError):
            return _no(f"Not yet: on {shown} expected a list of ids, got "
                       f"{type(result).__name__}.")
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
    expected = 1 - sum(known)
    mistakes = {
        "probabilities of all the words add up to 1: subtract *all* the known ones from 1":
            1 - known[0],
        "that is the total of the known ones; the missing one is what is left up to 1":
            sum(known),
    }
    return _check_number(answer, expected, mistakes, "1 - (the others)")


def check_empty_loss(answer) -> Verdict:
    """Check a number: the course's loss (a sum over M) when M is empty."""
    value = _as_number(answer)
    if value is not None and math.isnan(value):
        return _no("Not yet: NaN is what PyTorch's *mean* gives (0 / 0); the course's loss is "
                   "a sum, and the empty sum is 0.")
    return _check_number(answer, 0.0, {"that is log |V|, the loss of a uniform guess at one "
                                       "slot; with no slot there is nothing to add":
                                       math.log(30000)}, "the empty sum")


def bert_parameter_count(vocab_size: int, hidden: int, layers: int, intermediate: int,
                         max_position: int, type_vocab: int = 2) -> int:
    """The number of weights in a BERT masked-LM model (tied decoder, no pooler)."""
    d, i = hidden, intermediate
    embeddings = (vocab_size + max_position + type_vocab) * d + 2 * d  # + LayerNorm
    block = (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (d * i + i) + (i * d + d) + 2 * d
    head = (d * d + d) + 2 * d + vocab_size  # dense, LayerNorm, the bias b_v
    return embeddings + layers * block + head


def check_parameter_count(answer, vocab_size: int, hidden: int, layers: int,
                          intermediate: int, max_position: int) -> Verdict:
    """Check a number: how many weights a BERT masked-LM model of this shape has."""
    expected = bert_parameter_count(vocab_size, hidden, layers, intermediate, max_position)
    value = _as_number(answer)
    if value is None:
        return _no(f"Not answered yet: expected one number, got {type(answer).__name__}.")
    if value == expected:
        return _yes(f"Correct: {expected:,} weights.")
    d, i = hidden, intermediate
    biases = (layers * (3 * d + d + i + d) + d)
    mistakes = {
        vocab_size * d: "the decoder shares its weights with the word embeddings (tied): "
                        "count them once",
        -biases: "every dense layer has a bias as well as weights",
        -(max_position * d): "the position embeddings have max_position x hidden weights too",
        -layers * 4 * d: "each block has two LayerNorms, each with a weight and a bias per "
                         "dimension",
        -vocab_size: "the head adds one bias b_v per word",
    }
    for delta, hint in mistakes.items():
        if value == expected + delta:
            return _no(f"Not yet: {value:,.0f} - {hint}.")
    return _no(f"Not yet: {value:,.0f} is not {expected:,}.")


def check_direction(answer, before: float, after: float, what: str = "the eval loss") -> Verdict:
    """Check a prediction, "higher" or "lower", against two measured values."""
    if not isinstance(answer, str) or answer.strip().lower() not in ("higher", "lower"):
        return _no('Not answered yet: predict "higher" or "lower".')
    measured = "higher" if after > before else "lower"
    if answer.strip().lower() == measured:  # (no numbers here: they depend on the hardware)
        return _yes(f"Your prediction matches: {what} came out {measured}.")
    return _no(f"The measurement disagrees: {what} came out {measured}. Why might that be?")


def check_perplexity(answer, loss: float) -> Verdict:
    """Check a number: the perplexity that goes with a mean MLM loss (natural log)."""
    expected = math.exp(loss)
    mistakes = {
        "that is 2 to the power of the loss; the loss uses the natural log, so take e to it":
            2.0**loss,
        "that is 10 to the power of the loss; the loss uses the natural log, so take e to it":
            10.0**loss,
        "that is the loss itself; the perplexity is e to the power of the loss": loss,
        "that is e to the power of minus the loss, a probability; the perplexity is e^loss":
            math.exp(-loss),
    }
    return _check_number(answer, expected, mistakes, "exp(loss)", tol=max(5e-3, 1e-4 * expected))
