"""mlmlib.exercises.step - the checkers of one training step by hand (training_0_one_step).

Does: check a reader's gradient of ``-log P(truth)`` with respect to one slot's scores (one
number per word: ``p - onehot``), naming the usual mistakes: the probabilities without 1 taken
away at the truth, the sign flipped (``onehot - p``), the softmax without the largest score taken
away first (``exp`` overflows: NaN), the gradient with respect to ``P`` instead of the scores
(``-1/P`` at the truth), the truth's entry alone; check the weight after one AdamW step, naming
a forgotten bias correction, a forgotten weight decay, the decay added to the gradient (L2, as
in plain Adam) instead of taken off the weight, the decay without the learning rate, a step
along the gradient instead of against it, plain gradient descent, and the change instead of
the new weight; and check a prediction, "larger" or "smaller", of how the gap between the
held-out and the training loss moves, against the two measured gaps.

Does not: run a model or train anything; the chapter passes in its settings and what it
measured.

>>> check_adamw_step(0.9, weight=1.0, grad=0.5, lr=0.1, weight_decay=0.0)
Correct: 0.900000 matches the weight after one AdamW step = 0.900000.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mlmlib._checks import number, numbers, whole
from mlmlib.exercises._common import Verdict, _as_number, _as_numbers, _no, _yes
from mlmlib.loss import softmax


def check_score_gradient(answer, scores: Sequence[float], target: int) -> Verdict:
    """Check a list of numbers: the gradient of ``-log P(target)`` with respect to each of the
    ``scores`` of one slot, ``p - onehot`` (to 4 decimals)."""
    s = numbers(scores, "scores", ndim=1, empty=False)
    t = whole(target, "target (the true word's index)", 0, len(s) - 1)
    p = softmax(s)
    onehot = np.eye(len(s))[t]
    expected = p - onehot
    got = _as_numbers(answer)
    if got is None or got.ndim > 1:
        return _no(f"Not answered yet: expected {len(s)} numbers, one per word (a list or an "
                   f"array), got {type(answer).__name__}.")
    got = got.reshape(-1)
    if got.size != len(s):
        return _no(f"Not yet: expected {len(s)} numbers, one per word's score, got "
                   f"{got.size}: the gradient has an entry for every score, not only the "
                   "truth's.")
    if np.isnan(got).any() or np.isinf(got).any():
        with np.errstate(over="ignore", invalid="ignore"):
            naive = np.exp(s) / np.exp(s).sum()
        why = (f"the softmax without taking away the largest score first: exp({s.max():g}) "
               "overflows to inf, and inf / inf is nan. Take the largest score away from every "
               "score before exp" if not np.isfinite(naive).all() else
               "some of your numbers are nan or inf; every entry of p - onehot lies between -1 "
               "and 1")
        return _no(f"Not yet: {why}.")
    if np.allclose(got, expected, rtol=0, atol=5e-5):
        return _yes(f"Correct: p - onehot = {np.round(expected, 4).tolist()}; at the truth, "
                    f"p_t - 1 = {expected[t]:.4f}.")
    with np.errstate(divide="ignore"):
        wrt_p = -onehot / p[t]
    mistakes = {
        "those are the probabilities p themselves: at the truth, take 1 away (p_t - 1), "
        "because the loss also holds -s_t": p,
        "the sign is flipped: the gradient is p - onehot (positive for the words that are not "
        "the truth), not onehot - p": -expected,
        f"that is the gradient with respect to P, -1/P = {-1 / p[t]:.4f} at the truth; the "
        "question asks about the scores s_v, whose gradient is p - onehot": wrt_p,
        "only the truth's entry is right: the other words get p_v, their probabilities, "
        "since every score is in the sum under the log": np.where(onehot == 1, expected, 0.0),
    }
    for hint, value in mistakes.items():
        if np.allclose(got, value, rtol=0, atol=5e-5):
            return _no(f"Not yet: {hint}.")
    worst = int(np.argmax(np.abs(got - expected)))
    return _no(f"Not yet: your entry for word {worst} is {got[worst]:.4f}; each entry is "
               "softmax(s)_v minus 1 at the truth (0 elsewhere).")


def _adamw(w: float, g: float, lr: float, wd: float, b1: float, b2: float, eps: float,
           corrected: bool = True) -> float:
    """The weight after AdamW's first step (``m`` and ``v`` start at 0)."""
    m, v = (1 - b1) * g, (1 - b2) * g * g
    if corrected:
        m, v = m / (1 - b1), v / (1 - b2)
    return w * (1 - lr * wd) - lr * m / (math.sqrt(v) + eps)


def check_adamw_step(answer, weight: float, grad: float, lr: float, weight_decay: float,
                     betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-6) -> Verdict:
    """Check a number: one weight after AdamW's first step (``m = v = 0`` before it), given its
    value, its gradient, the learning rate and the weight decay (to 6 decimals)."""
    w, g = number(weight, "weight"), number(grad, "grad")
    lr = number(lr, "lr", 0, above=True)
    wd = number(weight_decay, "weight_decay", 0)
    b1, b2 = (number(b, f"betas[{k}]", 0, 1, below=True) for k, b in enumerate(betas))
    eps = number(eps, "eps", 0, above=True)
    expected = _adamw(w, g, lr, wd, b1, b2, eps)
    value = _as_number(answer)
    if value is None:
        return _no(f"Not answered yet: expected one number, got {type(answer).__name__}.")
    tol = 5e-7
    if abs(value - expected) <= tol:
        return _yes(f"Correct: {value:.6f} matches the weight after one AdamW step = "
                    f"{expected:.6f}.")
    mistakes = {
        "the bias correction is missing: after one step m = (1 - beta1) g and v = (1 - beta2) "
        "g^2 are pulled towards their starting 0; divide them by 1 - beta1 and 1 - beta2":
            _adamw(w, g, lr, wd, b1, b2, eps, corrected=False),
        "the weight decay is missing: AdamW also takes lr x weight_decay x w off the weight":
            _adamw(w, g, lr, 0.0, b1, b2, eps),
        "the decay went into the gradient (g + weight_decay x w, the L2 penalty of plain "
        "Adam); AdamW takes lr x weight_decay x w off the weight itself, apart from the "
        "gradient": _adamw(w, g + wd * w, lr, 0.0, b1, b2, eps),
        "the decay is missing its learning rate: the weight shrinks by lr x weight_decay x w, "
        "not weight_decay x w": _adamw(w, g, lr, 0.0, b1, b2, eps) - wd * w,
        "that steps along the gradient; a step goes against it (minus lr x m_hat / "
        "(sqrt(v_hat) + eps)), downhill": w * (1 - lr * wd) + lr * g / (abs(g) + eps),
        "that is plain gradient descent (w - lr x g); AdamW divides by sqrt(v_hat), so the "
        "first step moves by about lr whatever the size of g": w * (1 - lr * wd) - lr * g,
        "that is the change of the weight; the question asks for the new weight, w plus the "
        "change": expected - w,
    }
    for hint, wrong in mistakes.items():
        if abs(value - wrong) <= tol:
            return _no(f"Not yet: {value:.6f} - {hint}.")
    return _no(f"Not yet: {value:.6f} is not {expected:.6f}.")


def check_gap_prediction(answer, gap, new_gap, what: str = "fewer sentences") -> Verdict:
    """Check a prediction, "larger" or "smaller", of how the gap (held-out loss minus training
    loss at the end) moves from ``gap`` to ``new_gap`` with ``what``.

    ``gap`` and ``new_gap`` are one number each, or one per seed, paired (the same seed's two
    runs). A direction counts as measured only when every seed shows it; when the seeds
    disagree, or tie, no prediction can be checked, and the verdict says so.
    """
    before = numbers(gap, "gap").reshape(-1)  # one number per seed (a single run: one)
    after = numbers(new_gap, "new_gap").reshape(-1)
    if len(before) != len(after) or not len(before):
        raise ValueError(f"gap and new_gap need one value per seed each, and at least one: got "
                         f"{len(before)} and {len(after)}")
    choices = ("larger", "smaller")
    if not isinstance(answer, str) or answer.strip().lower() not in choices:
        return _no('Not answered yet: predict "larger" or "smaller".')
    n, ups = len(before), int((after > before).sum())
    seeds = f" on every one of {n} seeds" if n > 1 else ""
    if (after == before).any():
        return _no(f"The measurement is a tie: the gap came out the same with {what}"
                   f"{' on some seed' if n > 1 else ''}, so no prediction can be checked.")
    if 0 < ups < n:
        return _no(f"The seeds disagree: with {what}, the gap came out larger on {ups} of {n} "
                   "seeds, so this measurement cannot settle it; no prediction can be checked.")
    measured = "larger" if ups == n else "smaller"
    shown = ", ".join(f"{x:.4f}" for x in after)  # (the gaps before are printed above)
    if answer.strip().lower() == measured:
        return _yes(f"Correct: with {what}, the gap came out {measured}{seeds}: {shown}.")
    return _no(f"Not yet: with {what}, the gap came out {measured}{seeds}: "
               f"{', '.join(f'{x:.4f}' for x in before)} before, {shown} now. Why might that be?")
