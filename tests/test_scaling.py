"""The scaling law's fit finds the law that made exact data, and a bootstrap over seeds."""

import math

import numpy as np
import pytest
import torch

from mlmlib.scaling import (
    PowerLaw,
    bootstrap_power_law,
    fit_power_law,
    leave_one_out,
    line_exponent,
    local_exponents,
)

SIZES = np.geomspace(1e3, 1e5, 5)
E, A, ALPHA = 2.1, 5.0, 1.2  # L - E from 1.3e-3 down to 5e-6: E is hard to tell from L


def exact(sizes=SIZES, e=E, a=A, alpha=ALPHA):
    return e + a * np.asarray(sizes, dtype=float) ** -alpha


def noisy(seed: int, sizes=SIZES, scale: float = 0.2):
    """Losses of the law E + 5e3 n^-1.2 whose excess over E is off by a factor exp(noise), as
    a run's is: (sizes, 3 seeds), every loss above E."""
    noise = np.random.default_rng(seed).normal(0, scale, (len(sizes), 3))
    return E + (exact(sizes, a=5e3) - E)[:, None] * np.exp(noise)


@pytest.mark.parametrize("a", [A, 5e3])
def test_exact_data_gives_back_its_law_with_e_fixed_and_fitted(a):
    losses = exact(a=a)
    fixed = fit_power_law(SIZES, losses, floor=E)
    fitted = fit_power_law(SIZES, losses)
    assert not fixed.fitted_E and fitted.fitted_E and fixed.E == E
    for law in (fixed, fitted):
        assert law.E == pytest.approx(E, rel=1e-9)
        assert law.A == pytest.approx(a, rel=1e-6)
        assert law.alpha == pytest.approx(ALPHA, rel=1e-6)
        assert law.rms < 1e-12
        assert all(isinstance(v, float) for v in (law.E, law.A, law.alpha, law.rms))


def test_the_law_called_on_sizes_is_the_formula():
    law = PowerLaw(E=2.0, A=3.0, alpha=0.5, fitted_E=False, rms=0.0)
    out = law([1, 4, 100])
    assert out.dtype == np.float64
    assert np.array_equal(out, 2.0 + 3.0 * np.array([1.0, 4.0, 100.0]) ** -0.5)
    assert law(4) == pytest.approx(3.5)
    with pytest.raises(ValueError, match="n must be positive"):
        law([1, 0])


def test_a_pure_power_law_fits_with_no_floor_and_e_lands_on_zero():
    losses = 5 * SIZES ** -0.3
    kaplan = fit_power_law(SIZES, losses, floor=0)  # Kaplan et al.: no irreducible term
    assert kaplan.alpha == pytest.approx(0.3, rel=1e-9) and kaplan.A == pytest.approx(5)
    fitted = fit_power_law(SIZES, losses)  # E fitted: the best E is the boundary, 0
    assert 0 <= fitted.E < 1e-9 and fitted.alpha == pytest.approx(0.3, rel=1e-6)


def test_with_noise_fitting_e_fits_better_than_the_wrong_e_and_stays_in_range():
    for seed in range(6):
        losses = noisy(seed).mean(1)
        wrong = fit_power_law(SIZES, losses, floor=1.9)
        right = fit_power_law(SIZES, losses, floor=E)
        fitted = fit_power_law(SIZES, losses)
        assert fitted.rms <= wrong.rms and fitted.rms <= right.rms + 1e-15  # nested models
        assert 0 <= fitted.E < losses.min()
        assert fitted.rms == pytest.approx(
            math.sqrt(np.mean((np.log(fitted(SIZES)) - np.log(losses)) ** 2)), rel=1e-9)
    flat = fit_power_law([1, 2, 3, 4], [3.0, 2.9, 2.95, 2.85])  # no power law at all
    assert 0 <= flat.E < 2.85


def test_fits_are_deterministic_and_leave_their_input_alone():
    sizes, losses = list(SIZES), noisy(0)
    before = losses.copy()
    a = fit_power_law(sizes, losses.mean(1))
    assert a == fit_power_law(np.array(sizes), losses.mean(1).tolist())
    assert sizes == list(SIZES) and np.array_equal(losses, before)
    out = bootstrap_power_law(SIZES, losses, resamples=5, rng=0)
    assert np.array_equal(losses, before)
    assert set(out) == {"E", "A", "alpha", "at_bound"}
    assert all(v.shape == (5,) for v in out.values())
    assert all(out[k].dtype == np.float64 for k in ("E", "A", "alpha"))
    assert out["at_bound"].dtype == bool


def test_the_bootstrap_is_seeded():
    runs = noisy(1)
    a = bootstrap_power_law(SIZES, runs, resamples=8, rng=3)
    b = bootstrap_power_law(SIZES, runs, resamples=8, rng=torch.Generator().manual_seed(3))
    c = bootstrap_power_law(SIZES, runs, resamples=8, rng=4)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["alpha"], c["alpha"])
    assert len(np.unique(a["alpha"])) > 1  # the resamples differ
    assert np.all(a["E"] < runs.mean(1).min() + 0.02) and np.all(a["E"] >= 0)
    fixed = bootstrap_power_law(SIZES, runs, floor=E, resamples=8, rng=3)
    assert np.all(fixed["E"] == E) and np.all(fixed["alpha"] > 0)
    assert not fixed["at_bound"].any()  # E fixed has no bound to sit on


def test_the_bootstrap_says_when_a_fitted_E_sits_at_its_bound():
    # losses that fall steeply and then flatten (the shape of the chapter's data sweep): the
    # best E is the lowest mean, the fit's edge
    level = 2.0 + np.array([0.2332, 0.0637, 0.0299, 0.0169, 0.0095])[:, None] \
        + np.array([[0.0, 0.001, -0.001]])
    out = bootstrap_power_law(SIZES, level, resamples=6, rng=0)
    assert out["at_bound"].all()
    law = fit_power_law(SIZES, level.mean(1))
    assert law.E > level.mean(1).min() - 1e-6 and law.at_bound
    assert not fit_power_law(SIZES, level.mean(1), floor=2.0).at_bound  # E fixed: no bound
    # exact power-law data with a limit well below every loss: the fit finds it, off the bound
    assert not fit_power_law(SIZES, exact(a=5e3)).at_bound
    exact_runs = exact(a=5e3)[:, None] + np.zeros((1, 3))
    assert not bootstrap_power_law(SIZES, exact_runs, resamples=3, rng=0)["at_bound"].any()


def test_lifting_the_bound_lets_a_fitted_E_pass_the_lowest_loss():
    # losses that fall steeply and then flatten: the bounded fit stops at the lowest loss; the
    # unbounded one puts E above it, with a closer fit, and is not "at its bound"
    level = 2.0 + np.array([0.2332, 0.0637, 0.0299, 0.0169, 0.0095])
    bounded, free = fit_power_law(SIZES, level), fit_power_law(SIZES, level, bounded=False)
    assert bounded.at_bound and bounded.E < level.min()
    assert not free.at_bound and level.min() < free.E < level.max() and free.fitted_E
    assert free.rms < bounded.rms and free.alpha > bounded.alpha
    # where the best E lies inside the bound anyway, lifting it changes nothing that matters
    law = exact(e=2.0, a=5e3)
    law[-1] -= 1e-4  # the largest size a little below the law, by a run's luck
    a, b = fit_power_law(SIZES, law), fit_power_law(SIZES, law, bounded=False)
    assert not a.at_bound and (b.E, b.alpha, b.rms) == pytest.approx((a.E, a.alpha, a.rms),
                                                                     rel=1e-6)
    # E fixed: the bound plays no part, and the same law comes back either way
    assert fit_power_law(SIZES, level, floor=1.9) == fit_power_law(SIZES, level, floor=1.9,
                                                                   bounded=False)
    with pytest.raises(TypeError, match="bounded must be True or False, got str"):
        fit_power_law(SIZES, level, bounded="no")


def test_the_bootstrap_can_add_a_noise_the_seeds_do_not_show():
    runs = noisy(1)
    plain = bootstrap_power_law(SIZES, runs, resamples=40, rng=3)
    assert all(np.array_equal(plain[k], v) for k, v in bootstrap_power_law(
        SIZES, runs, resamples=40, rng=3, noise=None).items())
    zero = bootstrap_power_law(SIZES, runs, resamples=40, rng=3, noise=[0.0] * len(SIZES))
    assert all(np.allclose(plain[k], v) for k, v in zero.items() if k != "at_bound")
    small = 0.1 * (runs.mean(1) - E)  # a tenth of each size's distance above the limit
    noisy_fit = bootstrap_power_law(SIZES, runs, floor=E, resamples=40, rng=3, noise=small)
    quiet = bootstrap_power_law(SIZES, runs, floor=E, resamples=40, rng=3)
    assert np.std(noisy_fit["alpha"]) > np.std(quiet["alpha"])  # the added noise widens it
    same = np.repeat(noisy(2)[:, :1], 3, axis=1)  # one seed: only the added noise moves it
    out = bootstrap_power_law(SIZES, same, floor=E, resamples=20, rng=0,
                              noise=0.1 * (same[:, 0] - E))
    assert len(np.unique(out["alpha"])) == 20
    with pytest.raises(ValueError, match="one standard deviation per size"):
        bootstrap_power_law(SIZES, runs, resamples=2, rng=0, noise=[0.01])
    with pytest.raises(ValueError, match="noise"):
        bootstrap_power_law(SIZES, runs, resamples=2, rng=0, noise=[-0.01] * len(SIZES))
    with pytest.raises(ValueError, match="floor or below"):
        bootstrap_power_law(SIZES, runs, floor=E, resamples=20, rng=0, noise=[50.0] * len(SIZES))


def test_with_one_seed_or_identical_seeds_every_resample_is_the_same_fit():
    one = noisy(2)[:, :1]
    law = fit_power_law(SIZES, one[:, 0])
    out = bootstrap_power_law(SIZES, one, resamples=4, rng=0)
    assert np.all(out["E"] == law.E) and np.all(out["A"] == law.A)
    assert np.all(out["alpha"] == law.alpha)
    same = np.repeat(one, 3, axis=1)
    out = bootstrap_power_law(SIZES, same, floor=E, resamples=4, rng=1)
    assert len(np.unique(out["alpha"])) == 1 and len(np.unique(out["A"])) == 1
    assert out["alpha"][0] == pytest.approx(fit_power_law(SIZES, one[:, 0], floor=E).alpha,
                                            rel=1e-12)


def test_the_paired_bootstrap_draws_one_set_of_seeds_for_every_size():
    # each seed worse by its own amount at every size: a shift the same across sizes, which a
    # fitted E absorbs when the seeds are drawn together, and which bends the law when not
    offsets = np.array([[0.0, 0.01, 0.03]])
    runs = exact(a=5e3)[:, None] + offsets
    paired = bootstrap_power_law(SIZES, runs, resamples=20, rng=0, paired=True)
    assert np.allclose(paired["alpha"], ALPHA, atol=1e-3)
    assert np.allclose(paired["E"] - E, offsets.mean(), atol=0.03)
    apart = bootstrap_power_law(SIZES, runs, resamples=20, rng=0)
    assert np.ptp(apart["alpha"]) > 0.05  # drawn size by size, the shift differs per size
    with pytest.raises(TypeError, match="paired"):
        bootstrap_power_law(SIZES, runs, resamples=2, rng=0, paired=1)


RUNS = np.full((3, 2), 3.0)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: fit_power_law([1, 0, 3], [3, 2, 1]), ValueError,
         "sizes must be positive, finite numbers, but sizes[1] is 0"),
        (lambda: fit_power_law([1, -2, 3], [3, 2, 1]), ValueError, "sizes[1] is -2"),
        (lambda: fit_power_law([1, 2, 3], [3, 0, 1]), ValueError,
         "losses must be positive, finite numbers, but losses[1] is 0"),
        (lambda: fit_power_law([1, 2, 3], [3, math.nan, 1]), ValueError, "losses[1] is nan"),
        (lambda: fit_power_law([1, 2, 3], [3, math.inf, 1]), ValueError, "losses[1] is inf"),
        (lambda: fit_power_law([1, 2, 3], [3, 2]), ValueError,
         "losses must have one number per size: 3 sizes but 2 losses"),
        (lambda: fit_power_law([], []), ValueError, "sizes is empty"),
        (lambda: fit_power_law("abc", [1]), TypeError, "sizes must be positive"),
        (lambda: fit_power_law([1, 2], 3.0), TypeError, "losses must be a list of numbers"),
        (lambda: fit_power_law([[1, 2]], [[3, 2]]), ValueError, "sizes must be 1-D"),
        (lambda: fit_power_law([10], [3.0], floor=2), ValueError,
         "E fixed, the law has 2 parameters, so it needs at least 2 distinct sizes, got 1"),
        (lambda: fit_power_law([10, 10], [3.0, 2.9], floor=2), ValueError,
         "at least 2 distinct sizes, got 1"),
        (lambda: fit_power_law([10, 20], [3.0, 2.9]), ValueError,
         "E fitted, the law has 3 parameters, so it needs at least 3 distinct sizes, got 2"),
        (lambda: fit_power_law([10, 20, 20, 10], [3, 2.9, 2.9, 3]), ValueError,
         "3 distinct sizes, got 2"),
        (lambda: fit_power_law([10, 20, 40], [3.0, 2.5, 2.0], floor=2.0), ValueError,
         "losses[2] = 2.0 at size 40 is at or below the floor 2.0: E + A n^-alpha stays above "
         "E, so the law cannot describe it"),
        (lambda: fit_power_law([10, 20], [3.0, 2.5], floor=-1), ValueError,
         "floor must be a finite number, not negative, got -1"),
        (lambda: fit_power_law([10, 20], [3.0, 2.5], floor="2"), TypeError, "floor must be"),
        (lambda: bootstrap_power_law([1, 2, 3], RUNS[:, 0], rng=0), ValueError,
         "runs must be 2-D, got shape (3,)"),
        (lambda: bootstrap_power_law([1, 2, 3], RUNS[:2], rng=0), ValueError,
         "runs must have one row per size: 3 sizes but 2 runs rows"),
        (lambda: bootstrap_power_law([1, 2, 3], RUNS, floor=3.0, rng=0), ValueError,
         "runs[0, 0] = 3.0 at size 1 is at or below the floor 3.0"),
        (lambda: bootstrap_power_law([1, 2, 3], -RUNS, rng=0), ValueError,
         "runs[0, 0] is -3"),
        (lambda: bootstrap_power_law([1, 2, 3], RUNS, resamples=0, rng=0), ValueError,
         "resamples must be a positive whole number, got 0"),
        (lambda: bootstrap_power_law([1, 2, 3], RUNS, resamples=2.5, rng=0), TypeError,
         "resamples must be a positive whole number"),
        (lambda: bootstrap_power_law([1, 2, 3], RUNS, rng=None), TypeError,
         "rng must be a seed"),
        (lambda: bootstrap_power_law([1, 2, 3], RUNS), TypeError, "rng"),
    ],
)
def test_bad_input(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


# ----------------------------------------------------------------------------- by-hand exponents

def test_straight_lines_through_exact_data_give_back_alpha():
    losses = exact(a=5e3)
    assert line_exponent(SIZES, losses, E) == pytest.approx(ALPHA, rel=1e-9)
    assert local_exponents(SIZES, losses, E) == pytest.approx([ALPHA] * 4, rel=1e-9)
    # by hand, as the chapter's exercise computes it, on a law that bends: each pair its own
    bent = np.array([3.0, 2.5, 2.2, 2.15])
    n = [1.0, 2.0, 4.0, 8.0]
    expected = [math.log((bent[k] - 2) / (bent[k + 1] - 2)) / math.log(2) for k in range(3)]
    assert local_exponents(n, bent, 2.0) == pytest.approx(expected, rel=1e-12)
    # a line weighs every size alike: its slope is that of numpy's own straight-line fit
    slope = np.polyfit(np.log(n), np.log(bent - 2), 1)[0]
    assert line_exponent(n, bent, 2.0) == pytest.approx(-slope, rel=1e-12)


def test_leave_one_out_refits_each_subset_as_fit_power_law_does():
    losses = noisy(4).mean(1)
    rows = leave_one_out(SIZES, losses, E)
    assert len(rows) == len(SIZES)
    for k, row in enumerate(rows):
        keep = [i for i in range(len(SIZES)) if i != k]
        assert row["fixed"] == fit_power_law(SIZES[keep], losses[keep], floor=E)
        assert row["fitted"] == fit_power_law(SIZES[keep], losses[keep])
        assert row["line"] == line_exponent(SIZES[keep], losses[keep], E)
    assert losses.tolist() == noisy(4).mean(1).tolist()  # the caller's array is unchanged


@pytest.mark.parametrize(("call", "words"), [
    (lambda: leave_one_out(SIZES[:3], exact(SIZES[:3]), E), "at least 4 distinct sizes"),
    (lambda: line_exponent(SIZES, exact(), 3.0), "at or below the floor"),
    (lambda: local_exponents(SIZES, exact()[:2], E), "one number per size"),
])
def test_by_hand_exponents_refuse_bad_input(call, words):
    with pytest.raises(ValueError, match=words):
        call()
