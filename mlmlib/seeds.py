"""mlmlib.seeds - comparing two kinds of run over the same seeds: the paired difference.

Does: for two lists of results paired seed by seed (or draw by draw), the mean of their
differences, its standard error, and its 95% interval from Student's t with n - 1 degrees of
freedom (a small table of the t quantile, exact to three decimals), and the number of pairs
on which the second is lower. A chapter uses it to say whether a difference is one its few
seeds can tell.

Does not: test several comparisons at once, or assume anything about the runs beyond the
pairing (each pair independent of the others; the differences roughly normal).

>>> d = paired_difference([0.010, 0.012, 0.011], [0.004, 0.005, 0.009])
>>> round(d.mean, 4), round(d.se, 4), d.lower_on, round(t_quantile(2), 3)
(-0.005, 0.0015, 3, 4.303)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from mlmlib._checks import number, numbers

# Student's t, the 97.5% quantile (a two-sided 95% interval), by degrees of freedom
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
         17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069,
         24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
         40: 2.021, 60: 2.000, 120: 1.980}


def t_quantile(df: int) -> float:
    """Student's t at 97.5% with ``df`` degrees of freedom (the next smaller tabled df above
    30, which errs wide; 1.960 beyond 120)."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"df must be a whole number of at least 1, got {df!r}")
    if df in _T975:
        return _T975[df]
    return 1.960 if df > 120 else _T975[max(k for k in _T975 if k < df)]


class PairedDifference(NamedTuple):
    """A paired difference ``b - a``: its mean, standard error and 95% interval."""

    mean: float  # mean of b - a over the pairs
    se: float  # its standard error (the shared noise included, where given)
    low: float  # the 95% interval of the mean, from Student's t
    high: float
    n: int  # pairs
    lower_on: int  # pairs on which b is below a


def paired_difference(a: Sequence[float], b: Sequence[float],
                      shared_se: float = 0.0) -> PairedDifference:
    r"""The difference ``b - a`` over pairs, with its 95% interval:

    .. math::

        \bar d \pm t_{0.975,\,n-1}\, \sqrt{\frac{s_d^2}{n} + \mathrm{SE}_\text{shared}^2}

    ``a`` and ``b`` hold one result per seed, in the same order; at least two pairs.
    ``shared_se`` is the standard error of a noise that every pair shares, so that the spread
    of the differences cannot show it: for example the one test set that every seed is scored
    on. It is added in quadrature (the two noises independent); ``t`` keeps ``n - 1`` degrees
    of freedom, which errs wide."""
    a = numbers(a, "a", ndim=1, empty=False).tolist()
    b = numbers(b, "b", ndim=1, empty=False).tolist()
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"a and b must pair seed with seed, two pairs at least: got {len(a)} "
                         f"and {len(b)} numbers")
    shared_se = number(shared_se, "shared_se", 0)
    d = [y - x for x, y in zip(a, b, strict=True)]
    n = len(d)
    mean = sum(d) / n
    se = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1) / n + shared_se**2)
    half = t_quantile(n - 1) * se
    return PairedDifference(mean, se, mean - half, mean + half, n, sum(v < 0 for v in d))
