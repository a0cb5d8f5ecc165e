"""mlmlib.seeds: the paired difference over seeds and its t interval, against numpy by hand."""

import math

import numpy as np
import pytest

from mlmlib.seeds import paired_difference, t_quantile


def test_the_interval_is_the_mean_plus_or_minus_t_standard_errors():
    a, b = [0.0046, 0.0034, 0.0041, 0.0022, 0.0038], [0.0037, 0.0124, 0.0040, 0.0105, 0.0064]
    d = np.array(b) - np.array(a)
    got = paired_difference(a, b)
    se = d.std(ddof=1) / math.sqrt(len(d))
    assert got.mean == pytest.approx(d.mean()) and got.se == pytest.approx(se)
    assert got.low == pytest.approx(d.mean() - 2.776 * se)
    assert got.high == pytest.approx(d.mean() + 2.776 * se)
    assert (got.n, got.lower_on) == (5, 2)


@pytest.mark.parametrize(("df", "t"), [(1, 12.706), (4, 2.776), (10, 2.228), (30, 2.042),
                                       (35, 2.042), (60, 2.000), (100, 2.000), (1000, 1.960)])
def test_t_quantile_from_the_table_errs_wide(df, t):
    assert t_quantile(df) == t


def test_a_shared_noise_widens_the_interval_in_quadrature():
    a, b = [0.02, 0.03, 0.02, 0.025], [0.05, 0.06, 0.055, 0.05]
    plain, shared = paired_difference(a, b), paired_difference(a, b, shared_se=0.01)
    assert shared.mean == plain.mean and shared.lower_on == plain.lower_on
    assert shared.se == pytest.approx(math.hypot(plain.se, 0.01))
    assert shared.high - shared.mean == pytest.approx(3.182 * shared.se)
    assert paired_difference(a, b, shared_se=0.0) == plain
    with pytest.raises(ValueError, match="shared_se"):
        paired_difference(a, b, shared_se=-0.01)
    with pytest.raises(TypeError, match="shared_se"):
        paired_difference(a, b, shared_se=None)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="two pairs at least"):
        paired_difference([0.1], [0.2])
    with pytest.raises(ValueError, match="pair seed with seed"):
        paired_difference([0.1, 0.2], [0.2])
    with pytest.raises(ValueError, match="df"):
        t_quantile(0)
    with pytest.raises(ValueError, match="df"):
        t_quantile(2.5)
