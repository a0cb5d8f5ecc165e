"""mlmlib.exercises.lab - checkers for the exact lab (training_4_exact_lab).

Does: check a prediction against a measurement repeated over seeds (right only when every
seed agrees, and saying so when the seeds disagree), and a pointwise mutual information
computed by hand, naming the usual mistakes.

Does not: run any experiment; the chapter passes in what it measured.

>>> check_direction_over_seeds("lower", before=[2.20, 2.21, 2.19], after=[2.16, 2.18, 2.17])
Your prediction matches: the eval loss came out lower on every one of 3 seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mlmlib._checks import numbers, probability
from mlmlib.exercises._common import Verdict, _check_number, _no, _unsettled, _yes


def check_direction_over_seeds(answer, before: Sequence[float], after: Sequence[float],
                               what: str = "the eval loss") -> Verdict:
    """Check "higher" or "lower" against paired runs (one pair per seed).

    A direction counts as measured only when every seed shows it; when the seeds disagree the
    verdict says that the experiment cannot settle the question at this budget.
    """
    before = numbers(before, "before", ndim=1, empty=False).tolist()  # one number per seed
    after = numbers(after, "after", ndim=1, empty=False).tolist()
    if len(before) != len(after):
        raise ValueError("before and after need one value per seed, and at least one seed")
    if not isinstance(answer, str) or answer.strip().lower() not in ("higher", "lower"):
        return _no('Not answered yet: predict "higher" or "lower".')
    diffs, n = [b - a for a, b in zip(before, after, strict=True)], len(before)
    unsettled = _unsettled(diffs, what, "higher", "the same")
    if unsettled is not None:
        return unsettled  # otherwise every seed is on one side: the first seed's
    measured = "higher" if diffs[0] > 0 else "lower"
    if answer.strip().lower() == measured:
        return _yes(f"Your prediction matches: {what} came out {measured} on every one of "
                    f"{n} seeds.")
    return _no(f"The measurement disagrees: {what} came out {measured} on every one of {n} "
               "seeds. Why might that be?")


def check_pointwise_information(answer, p_joint: float, p_a: float, p_b: float) -> Verdict:
    r"""Check a number: ``log P(a, b) - log P(a) - log P(b)`` in nats.

    .. math::

        \operatorname{pmi}(a, b) = \log \frac{P(a, b)}{P(a)\, P(b)}

    It is what the sum of the two blanks' losses overcharges for this pair, against the loss
    of the pair scored jointly.
    """
    for name, p in (("p_joint", p_joint), ("p_a", p_a), ("p_b", p_b)):
        probability(p, f"{name} (a probability)", above=True)
    if p_joint > min(p_a, p_b):
        raise ValueError(f"p_joint = {p_joint} cannot exceed p_a = {p_a} or p_b = {p_b}: "
                         "P(a, b) <= P(a) and P(a, b) <= P(b)")
    expected = math.log(p_joint) - math.log(p_a) - math.log(p_b)
    mistakes = {
        "the sign is flipped: it is log P(a, b) minus the two marginal logs": -expected,
        "that is log base 2; the course's log is the natural log": expected / math.log(2),
        "that is the ratio P(a, b) / (P(a) P(b)) itself; take its log": math.exp(expected),
        "that subtracts only log P(a); subtract log P(b) too": math.log(p_joint / p_a),
        "that subtracts only log P(b); subtract log P(a) too": math.log(p_joint / p_b),
    }
    return _check_number(answer, expected, mistakes, "log P(a,b) - log P(a) - log P(b)")
