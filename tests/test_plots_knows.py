"""The scaling law's figure draws the seeds, their means and each fit above the floor."""

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from mlmlib import plots
from mlmlib.scaling import PowerLaw, fit_power_law

SIZES, FLOOR = [1e3, 4e3, 1.6e4], 2.125
RUNS = np.array([[2.625, 2.65, 2.6], [2.3, 2.325, 2.31], [2.2, 2.21, 2.19]])
FIXED = PowerLaw(FLOOR, 300.0, 0.9, False, 0.01)
ABOVE = PowerLaw(2.15, 900.0, 1.1, True, 0.005)
BELOW = PowerLaw(2.1, 13.5, 0.7, True, 0.02)  # E + A n^-alpha = the floor at n = 8006


def test_the_figure_draws_seeds_means_and_fits_above_the_floor():
    fits = {"E fixed to the floor": FIXED, "E fitted": ABOVE, "E fitted, lower": BELOW}
    fig = plots.power_law_fits(SIZES, RUNS, FLOOR, fits, xlabel="parameters")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "parameters"
    assert ax.get_ylabel() == "loss minus the exact floor (nats)"
    seeds, means, fixed, above, level, below = ax.lines
    assert np.allclose(seeds.get_ydata(), (RUNS - FLOOR).ravel())
    assert np.allclose(seeds.get_xdata(), np.repeat(SIZES, 3))
    assert np.allclose(means.get_ydata(), RUNS.mean(1) - FLOOR)
    n = np.asarray(fixed.get_xdata())
    assert n[0] == pytest.approx(1e3) and n[-1] == pytest.approx(1.6e4) and len(n) > 50
    assert np.allclose(fixed.get_ydata(), 300 * n ** -0.9)  # E is the floor: A n^-alpha
    assert np.allclose(above.get_ydata(), ABOVE(n) - FLOOR)
    assert np.allclose(level.get_ydata(), 0.025)  # the dotted level of E - floor
    y = np.asarray(below.get_ydata())
    kept = np.isfinite(y)
    assert kept[0] and not kept[-1] and np.all(y[kept] > 0)  # only the part above the floor
    assert np.allclose(y[kept], BELOW(n[kept]) - FLOOR)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "E fixed to the floor: α = 0.90" in labels
    assert "E fitted: α = 1.10, E = 2.1500" in labels and "E fitted: fitted E − floor" in labels
    alt = plots.alt_text(fig)
    for said in ("E fixed to the floor: alpha 0.9, E 2.125 (the floor)",
                 "E fitted: alpha 1.1, E 2.15, 0.025 above the floor",
                 "beyond n = 8006, so only the part above it is drawn", "3 fitted laws",
                 "3 seeds", "The floor is 2.1250"):
        assert said in alt, alt


def test_real_fits_on_given_axes():
    means = RUNS.mean(1)
    fits = {"fixed": fit_power_law(SIZES, means, floor=FLOOR), "fitted": fit_power_law(SIZES,
                                                                                       means)}
    fig = Figure()
    ax = fig.subplots()
    assert plots.power_law_fits(SIZES, RUNS, FLOOR, fits, xlabel="D", title="data", ax=ax) is fig
    assert ax.get_title(loc="left") == "data"
    assert f"alpha {fits['fixed'].alpha:.4g}"[:9] in plots.alt_text(fig)
    whole = plots.power_law_fits(SIZES, RUNS, FLOOR, {}, xlabel="D")  # the measurements alone
    assert len(whole.axes[0].lines) == 2 and "no fitted law" in plots.alt_text(whole)
    gone = plots.power_law_fits(SIZES, RUNS, FLOOR, {"low": PowerLaw(1.0, 1.0, 1.0, True, 0)},
                                xlabel="D")  # below the floor everywhere: nothing to draw
    assert "below the floor across the range, so it is not drawn" in plots.alt_text(gone)
    assert not np.isfinite(gone.axes[0].lines[2].get_ydata()).any()


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((SIZES, RUNS[:, 0], FLOOR, {}), ValueError, "runs must be 2-D"),
        ((SIZES, RUNS[:2], FLOOR, {}), ValueError,
         "runs must have one row per size: 3 sizes but 2 rows"),
        ((SIZES, RUNS, 2.2, {}), ValueError,
         "runs[2, 0] = 2.2 at size 16000 is at or below the floor 2.2: its distance above the "
         "floor cannot be drawn on a logarithmic axis"),
        (([1e3, 0, 1e4], RUNS, FLOOR, {}), ValueError, "sizes must be positive"),
        ((SIZES, RUNS, math.nan, {}), ValueError, "floor must be a finite number, got nan"),
        ((SIZES, RUNS, FLOOR, {"x": 1.5}), TypeError,
         "fits 'x' must be a fitted law (a PowerLaw from mlmlib.scaling.fit_power_law)"),
        ((SIZES, RUNS, FLOOR, [FIXED]), TypeError, "fits must be a dict"),
    ],
)
def test_bad_input(args, error, message):
    with pytest.raises(error) as info:
        plots.power_law_fits(*args, xlabel="N")
    assert message in str(info.value)


def test_power_law_fits_names_a_data_exponent_beta():
    from mlmlib.plots import alt_text, power_law_fits
    from mlmlib.scaling import fit_power_law
    sizes = [1e3, 1e4, 1e5]
    runs = [[2.1 + 50 * n ** -0.5 + d for d in (0.0, 0.01)] for n in sizes]
    law = fit_power_law(sizes, [sum(r) / 2 for r in runs], floor=2.1)
    fig = power_law_fits(sizes, runs, 2.1, {"E fixed": law}, "sentences", exponent="beta")
    assert "β =" in fig.axes[0].get_legend().get_texts()[-1].get_text()
    assert "n^-beta" in alt_text(fig) and "beta " in alt_text(fig)
    with pytest.raises(ValueError, match="exponent"):
        power_law_fits(sizes, runs, 2.1, {"E fixed": law}, "sentences", exponent="gamma")
