r"""mlmlib.scaling - fit a scaling law L(n) = E + A n^-alpha to losses measured at a few sizes.

Does: :func:`fit_power_law` fits the law of one variable that Hoffmann et al. (2022) fit in
two, :math:`L(N, D) = E + A/N^\alpha + B/D^\beta`, to losses measured at a few model or data
sizes ``n``, with the irreducible loss ``E`` either fixed (the toy world knows it exactly: the
Bayes floor) or fitted as well, as a paper must; ``floor=0`` gives the pure power law of Kaplan
et al. (2020). :func:`bootstrap_power_law` refits on resampled seeds, so that each parameter
comes with its spread; :func:`leave_one_out` refits without each size in turn, and
:func:`line_exponent` and :func:`local_exponents` read the exponent off straight lines
through ``log(L - E)``, as by hand. Every number is float64, and the fits are deterministic:
the same input gives the same law, bit for bit.

Does not: train or measure anything (:mod:`mlmlib.train` and the benchmarks do), fit the
two-variable law, or use scipy (a small Levenberg-Marquardt in NumPy does the fitting). The
caller's arrays are never changed.

>>> sizes = [1e3, 1e4, 1e5]
>>> law = fit_power_law(sizes, [2.1 + 5e3 * n ** -1.2 for n in sizes], floor=2.1)
>>> round(law.alpha, 6), round(law.A, 3), law.fitted_E
(1.2, 5000.0, False)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mlmlib._checks import generator, number, numbers, whole

__all__ = ["BOUND_TOL", "PowerLaw", "bootstrap_power_law", "fit_power_law", "leave_one_out",
           "line_exponent", "local_exponents"]

BOUND_TOL = 1e-6  # nats: a fitted E this close to the lowest loss sits at its upper bound


@dataclass(frozen=True)
class PowerLaw:
    """L(n) = E + A * n ** -alpha, as :func:`fit_power_law` found it; call it on sizes."""

    E: float  # the irreducible loss: the floor it was fixed to, or the fitted value (>= 0)
    A: float  # the scale of the reducible part L - E (> 0)
    alpha: float  # the exponent: each doubling of n divides L - E by 2 ** alpha
    fitted_E: bool  # True when E was fitted, False when it was fixed
    rms: float  # sqrt(mean_i (log L(n_i) - log loss_i) ** 2) over the k points fitted
    at_bound: bool = False  # a fitted E within BOUND_TOL of its upper limit, the lowest loss

    def __call__(self, n) -> np.ndarray:
        """``E + A n^-alpha`` at the sizes ``n`` (positive numbers): a float64 array."""
        n = numbers(n, "n", 0, above=True)
        return self.E + self.A * n ** -self.alpha


# The objective, for the points (n_i, L_i), i = 1..k:
#
#     minimise over (E, A, alpha):   sum_i ( log(E + A n_i^-alpha) - log L_i )^2
#
# with E fixed (floor=...) or within 0 <= E < min_i L_i. Hoffmann et al. minimise a Huber loss
# (delta = 1e-3) of these same log residuals, robust to an outlying run; with a handful of
# points, each a mean over seeds, plain squares are used here. Inside, A n^-alpha is written
# exp(c - alpha u) with u = log n - mean(log n), which keeps c and alpha nearly uncorrelated.


def fit_power_law(sizes, losses, *, floor: float | None = None, bounded: bool = True) -> PowerLaw:
    r"""Fit :math:`L(n) = E + A n^{-\alpha}` to the losses measured at ``sizes``.

    .. math::

        \min_{E, A, \alpha} \sum_i \left(\log(E + A n_i^{-\alpha}) - \log L_i\right)^2

    ``floor`` given: E is fixed to it, and (A, alpha) start from the straight line through
    ``(log n, log(L - E))`` and are refined by Levenberg-Marquardt. ``floor`` None: E is fitted
    as well, within ``0 <= E < min(losses)``, by profiling: the two-parameter fit for each E of
    a fine grid, then finer grids between the best point's neighbours, then all three refined
    together. E may land on 0 (the data show no floor at all) or just under ``min(losses)``
    (the data show no curvature); it is reported where it lands. That upper bound is this
    library's convention (a limit above a measured mean says that run beat the limit, which a
    lucky run can do): ``bounded=False`` lifts it, so that E may land anywhere in
    ``0 <= E < max(losses)``, and shows how much the bound moved the fit. Hoffmann et al. minimise a
    Huber loss (delta 1e-3) of these same log residuals; with a handful of points, plain
    squares are used here.

    Args:
        sizes: the sizes ``n`` (parameters, training examples), positive; two at least that
            differ (three with E fitted: three parameters).
        losses: one positive loss per size (a mean over seeds, say).
        floor: the irreducible loss, when known (not negative; 0 for a pure power law). Every
            loss must lie above it.
        bounded: with E fitted, keep it below the lowest loss (the default) or only below the
            highest; ignored when ``floor`` is given.

    Returns:
        a :class:`PowerLaw`, whose ``rms`` is that of the log residuals at the optimum.
    """
    sizes, losses, floor = _checked(sizes, losses, floor, "losses")
    if not isinstance(bounded, bool):
        raise TypeError(f"bounded must be True or False, got {type(bounded).__name__}")
    return _fit(sizes, losses, floor, bounded)


def bootstrap_power_law(sizes, runs, *, floor: float | None = None, resamples: int = 1000,
                        rng, paired: bool = False, noise=None) -> dict[str, np.ndarray]:
    """The spread of :func:`fit_power_law` over seeds, by the bootstrap.

    ``runs`` holds the losses ``(len(sizes), seeds)``, one row per size. Each resample draws,
    independently for each size, ``seeds`` of that row's seeds with replacement, averages them,
    and fits the means (with ``floor`` as :func:`fit_power_law` takes it). With ``paired``,
    each resample draws the seeds once and uses the same ones at every size: column ``j`` of
    ``runs`` must then be one seed's runs, which a shared data order links across sizes.
    ``noise`` (optional, one standard deviation per size, not negative) adds to each
    resample's mean at each size a normal draw of that size's deviation, independently: a noise
    the seeds' spread does not show, such as that of the one evaluation set every run is
    scored on. ``rng`` (a seed or a ``torch.Generator``) makes every draw, so the same seed
    gives the same arrays; without ``noise``, the same arrays as before it existed.

    Returns:
        ``{"E": (resamples,), "A": (resamples,), "alpha": (resamples,)}``, float64 (``E`` is
        the floor throughout when it is given), and ``"at_bound"`` ``(resamples,)`` bool, each
        refit's :attr:`PowerLaw.at_bound` (its fitted ``E`` at that resample's lowest mean;
        always False with ``floor``); ``np.percentile(out["alpha"], [2.5, 97.5])`` is a 95%
        interval, set by the bound rather than the data where ``at_bound`` holds.
    """
    sizes, runs, floor = _checked(sizes, runs, floor, "runs")
    resamples = whole(resamples, "resamples", least=1)
    if not isinstance(paired, bool):
        raise TypeError(f"paired must be True or False, got {type(paired).__name__}")
    k, seeds = runs.shape
    if noise is not None:
        noise = numbers(noise, "noise", 0, ndim=1)
        if len(noise) != k:
            raise ValueError(f"noise needs one standard deviation per size: got {len(noise)} "
                             f"for {k} sizes")
    g = generator(rng)
    picks = torch.randint(seeds, (resamples, 1 if paired else k, seeds),
                          generator=g).expand(resamples, k, seeds).numpy()
    means = runs[np.arange(k)[:, None], picks].mean(2)  # (resamples, k)
    if noise is not None:
        means = means + torch.randn(resamples, k, generator=g, dtype=torch.float64).numpy() * noise
        if (means <= 0).any() or (floor is not None and (means <= floor).any()):
            raise ValueError("noise this large moves a mean loss to the floor or below: is it "
                             "a standard deviation in nats?")
    laws = [_fit(sizes, row, floor) for row in means]
    out = {key: np.array([getattr(law, key) for law in laws]) for key in ("E", "A", "alpha")}
    out["at_bound"] = np.array([law.at_bound for law in laws])
    return out


# With E known, the law is a straight line on log axes: log(L - E) = log A - alpha log n.
def line_exponent(sizes, losses, floor: float) -> float:
    """alpha of the least-squares straight line through ``(log n, log(L - floor))``: every
    size weighs alike, where :func:`fit_power_law` compares the logs of the whole losses."""
    sizes, losses, floor = _checked(sizes, losses, floor, "losses")
    return float(-np.polyfit(np.log(sizes), np.log(losses - floor), 1)[0])


def local_exponents(sizes, losses, floor: float) -> list[float]:
    """alpha between each pair of neighbouring sizes, as two sizes give it by hand:
    ``log((L_k - E) / (L_{k+1} - E)) / log(n_{k+1} / n_k)`` (in the order given)."""
    sizes, losses, floor = _checked(sizes, losses, floor, "losses")
    excess = np.log(losses - floor)
    return (-(np.diff(excess) / np.diff(np.log(sizes)))).tolist()


def leave_one_out(sizes, losses, floor: float) -> list[dict]:
    """The law fitted again without each size in turn: for the ``k``-th size left out,
    ``{"fixed": PowerLaw with E = floor, "fitted": PowerLaw with E fitted, "line":
    line_exponent}`` over the sizes that remain."""
    sizes, losses, floor = _checked(sizes, losses, floor, "losses")
    if len(np.unique(sizes)) < 4:
        raise ValueError("leaving one out needs at least 4 distinct sizes (3 remain for the law "
                         f"with E fitted), got {len(np.unique(sizes))}")
    rows = []
    for k in range(len(sizes)):
        keep_n, keep_l = np.delete(sizes, k), np.delete(losses, k)
        rows.append({"fixed": _fit(keep_n, keep_l, floor), "fitted": _fit(keep_n, keep_l, None),
                     "line": line_exponent(keep_n, keep_l, floor)})
    return rows


def _checked(sizes, losses, floor, name: str):
    """sizes (k,), the losses (k,) or the runs (k, seeds) and the floor, checked."""
    sizes = numbers(sizes, "sizes", 0, above=True, ndim=1, empty=False)
    losses = numbers(losses, name, 0, above=True, ndim=1 if name == "losses" else 2,
                     empty=False)
    if len(losses) != len(sizes):
        raise ValueError(f"{name} must have one {'number' if losses.ndim == 1 else 'row'} per "
                         f"size: {len(sizes)} sizes but {len(losses)} {name}"
                         + " rows" * (losses.ndim == 2))
    floor = None if floor is None else number(floor, "floor", 0)
    need, distinct = 2 if floor is not None else 3, len(np.unique(sizes))
    if distinct < need:
        raise ValueError(f"{'E fixed' if floor is not None else 'E fitted'}, the law has {need} "
                         f"parameters, so it needs at least {need} distinct sizes, got {distinct}")
    if floor is not None and (losses <= floor).any():
        where = tuple(int(i) for i in np.argwhere(losses <= floor)[0])
        raise ValueError(f"{name}[{', '.join(map(str, where))}] = {losses[where]} at size "
                         f"{sizes[where[0]]:g} is at or below the floor {floor}: E + A n^-alpha "
                         "stays above E, so the law cannot describe it")
    return sizes, losses, floor


def _fit(sizes, loss, floor, bounded: bool = True) -> PowerLaw:
    """The fit itself, on checked float64 arrays (see :func:`fit_power_law`)."""
    log_n = np.log(sizes)
    u = log_n - log_n.mean()
    if floor is not None:
        x, sse = _profile(np.array([floor]), u, loss)
        E, (c, alpha), sse = floor, x[0], sse[0]
    else:
        E, c, alpha, sse = _profile_E(u, loss, loss.min() if bounded else loss.max())
    return PowerLaw(float(E), float(np.exp(c + alpha * log_n.mean())), float(alpha),
                    floor is None, float(np.sqrt(sse / len(loss))),
                    floor is None and bounded and bool(E > loss.min() - BOUND_TOL))


def _profile_E(u, loss, top):
    """E fitted: the profile ``min over (c, alpha)`` on a grid of E in [0, top) (finer
    towards top: min L, or max L when unbounded), then round after round a grid of 10 between
    the best point's neighbours, then all three refined together. Returns E, c, alpha and the
    sum of squares."""
    t = np.concatenate([np.linspace(0, 1, 101)[1:], np.logspace(-12, 0, 61)])
    points = np.unique(top * (1 - t))  # from 0 up to within 1e-12 of the top
    x, sse = _profile(points, u, loss)
    k = int(np.argmin(sse))
    best = (sse[k], points[k], *x[k])
    edges = np.concatenate([[0.0], points, [top]])  # the neighbours of 0 are 0 and the next
    a, b = edges[k], edges[k + 2]
    while b - a > 1e-9 * top:  # each round shrinks the bracket about five times
        points = np.unique(np.append(np.linspace(a, b, 11)[1:-1], best[1]))
        x, sse = _profile(points, u, loss)
        k = int(np.argmin(sse))
        best = min(best, (sse[k], points[k], *x[k]))
        a, b = np.concatenate([[a], points, [b]])[[k, k + 2]]
    sse, *start = best
    x, polished = _least_squares(np.array([start]), _model(u, np.log(loss)),
                                 ok=lambda x: (x[:, 0] >= 0) & (x[:, 0] < top))
    return (*x[0], polished[0]) if polished[0] < sse else (*start, sse)


def _profile(E, u, loss):
    """For each candidate ``E`` (K,): the best (c, alpha) with E fixed, from the straight line
    through (u, log(L - E)) over the points above E, and the sum of squares there (K,;
    infinite where fewer than two points lie above E)."""
    gap = loss - E[:, None]  # (K, k)
    above = gap > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.log(np.where(above, gap, 1.0))
    start = np.stack([y.mean(1), -(y @ u) / (u @ u)], axis=1)  # every point above E
    if not above.all():  # E above some loss (unbounded): the line through the rest
        n = np.maximum(above.sum(1), 1)
        u_mean, y_mean = (above * u).sum(1) / n, (above * y).sum(1) / n
        du = np.where(above, u - u_mean[:, None], 0.0)
        slope = (du * (y - y_mean[:, None])).sum(1) / np.maximum((du * du).sum(1), 1e-300)
        start = np.where(above.all(1)[:, None], start,
                         np.stack([y_mean - slope * u_mean, -slope], axis=1))
    x, sse = _least_squares(start, _model(u, np.log(loss), E[:, None]))
    return x, np.where(above.sum(1) >= 2, sse, np.inf)


def _model(u, log_loss, E=None):
    """The residuals ``log(E + exp(c - alpha u)) - log L`` (K, k) and their Jacobian (K, k, p)
    at each row of the parameters: (c, alpha) with ``E`` (K, 1) fixed, or (E, c, alpha)."""
    def model(x):
        e, c, alpha = x[:, :1] if E is None else E, x[:, -2:-1], x[:, -1:]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            g = np.exp(c - alpha * u)  # A n^-alpha
            fit = e + g
            columns = [1 / fit] * (E is None) + [g / fit, -u * g / fit]
            return np.log(fit) - log_loss, np.stack(columns, axis=-1)
    return model


def _least_squares(x, model, ok=None, steps: int = 300):
    """Levenberg-Marquardt, one problem per row of ``x`` (K, p), all at once: minimise the sum
    of squares of ``model(x)``'s residuals; a step is taken only where it lowers that sum (and
    ``ok``, when given, accepts it). Returns the rows and their sums of squares."""
    r, J = model(x)
    sse = (r * r).sum(1)
    damping, done = np.full(len(x), 1e-3), np.zeros(len(x), dtype=bool)
    for _ in range(steps):
        Jt = J.transpose(0, 2, 1)
        JtJ = Jt @ J
        diag = np.diagonal(JtJ, axis1=1, axis2=2)
        scale = diag + 1e-12 * diag.max(1, keepdims=True) + 1e-30  # never a singular system
        H = JtJ + damping[:, None, None] * (np.eye(x.shape[1]) * scale[:, None, :])
        step = -np.linalg.solve(H, Jt @ r[..., None])[..., 0]
        trial = x + step
        r_t, J_t = model(trial)
        sse_t = (r_t * r_t).sum(1)
        better = ~done & np.isfinite(sse_t) & (sse_t < sse)
        better &= True if ok is None else ok(trial)
        x = np.where(better[:, None], trial, x)
        r, J = np.where(better[:, None], r_t, r), np.where(better[:, None, None], J_t, J)
        sse = np.where(better, sse_t, sse)
        damping = np.where(better, np.maximum(damping / 3, 1e-10), damping * 4)
        # converged: a step accepted that was tiny (the next would be far smaller still), or
        # one refused that was tinier, or no step that lowers the sum any more
        tiny = np.where(better, 1e-10, 1e-13)[:, None] * (1 + np.abs(x))
        done |= (np.abs(step) <= tiny).all(1) | (damping > 1e15)
        if done.all():
            break
    return x, sse
