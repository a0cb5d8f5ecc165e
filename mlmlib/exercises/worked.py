"""mlmlib.exercises.worked - the checkers that first appear in the worked examples (A-H).

Does: check how often M comes out empty (worked example D), the counts of the three branches
and the random branch's conditional probability (worked example G), and the total loss, MLM
plus NSP (worked example H). The worked examples' other exercises use the walkthrough's
checkers (:mod:`mlmlib.exercises.walkthrough`).

Does not: check the walkthrough's exercises or the training chapters'
(:mod:`mlmlib.exercises.training`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mlmlib._checks import numbers, probability, whole
from mlmlib.exercises._common import (
    FOUR_DECIMALS,
    Verdict,
    _as_numbers,
    _check_number,
    _no,
    _yes,
)


def _shares(rate: float, mask_prob: float, random_prob: float) -> None:
    """The masking settings: three probabilities; the [MASK] and random shares add to 1 at most."""
    for name, p in (("rate", rate), ("mask_prob", mask_prob), ("random_prob", random_prob)):
        probability(p, name)
    if mask_prob + random_prob > 1 + 1e-12:
        raise ValueError(f"mask_prob + random_prob = {mask_prob + random_prob:g} is more than 1")


def check_empty_probability(answer, n: int, rate: float = 0.15) -> Verdict:
    """Check a number: how often the Bernoulli rule leaves all ``n`` tokens unmasked."""
    n, rate = whole(n, "n", least=0), probability(rate, "rate")
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
    _shares(0.0, mask_prob, random_prob)
    if mask_prob == 1:
        raise ValueError("mask_prob is 1: no position is left after the [MASK] draw")
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
    whole(total_tokens, "total_tokens", least=0)
    _shares(rate, mask_prob, random_prob)
    targets = total_tokens * rate
    expected = [targets, targets * mask_prob, targets * random_prob,
                targets * (1 - mask_prob - random_prob)]
    names = ["targets", "[MASK]", "random", "unchanged"]
    values = _as_numbers(answer)  # None for text: "1234" is not four numbers, "150" not one
    if values is None or values.ndim != 1:
        return _no("Not answered yet: expected four numbers (targets, [MASK], random, "
                   "unchanged).")
    if len(values) != 4:
        return _no(f"Not yet: expected four numbers, got {len(values)}.")
    values = values.tolist()
    if not all(math.isfinite(v) for v in values):
        return _no(f"Not yet: expected four finite numbers, got {values}.")
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
    # -log 0 is infinite: every probability above 0
    slot_probs = numbers(slot_probs, "slot_probs", 0, 1, above=True, ndim=1, empty=False).tolist()
    nsp_prob = probability(nsp_prob, "nsp_prob", above=True)
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
