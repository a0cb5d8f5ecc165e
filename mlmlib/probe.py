r"""mlmlib.probe - a linear probe: how much of a target distribution a layer's features hold.

Does: :func:`fit_probe` fits a softmax regression (a *linear probe*) from features
``(N, d)``, such as a model's hidden states at the masked positions, to target distributions
``(N, S)``, such as the toy world's exact posterior over each blank's slot
(:meth:`ToyWorld.slot_posterior <mlmlib.toyworld.ToyWorld.slot_posterior>`):

.. math::

    \hat q_i = \operatorname{softmax}(x_i W + b), \qquad
    \mathcal{L}(W, b) = \frac1N \sum_i \sum_s -q_{is} \log \hat q_{is}
    + \frac{\lambda}{2} \lVert W \rVert^2

The targets are soft labels (each row a distribution), so the loss is a cross-entropy against
a distribution, not against one class. It is convex in ``(W, b)``, and the fit is full-batch
L-BFGS in float64 from small random weights drawn with ``rng``. :meth:`Probe.score` then
measures the probe on rows it did not see: its mean cross-entropy, the mean entropy of the
targets (the floor: no probe can do better on average) and their difference, the mean
:math:`\mathrm{KL}(q_i \,\|\, \hat q_i) \ge 0`: how much of the targets the features do not
tell linearly.

Does not: compute features or targets (a model's hidden states and
:mod:`mlmlib.toyworld` do), use a GPU (the fit runs on the CPU; probes are small), or
standardize the features (scale them first if their sizes differ wildly). The caller's
tensors are never changed.

>>> import torch
>>> targets = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]], dtype=torch.float64)
>>> probe = fit_probe(targets.log(), targets, rng=0)  # the targets' own log-probabilities
>>> score = probe.score(targets.log(), targets)
>>> round(score.entropy, 4), score.kl < 1e-6  # at the floor: nothing left to learn
(0.5062, True)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from mlmlib._checks import generator, number, numbers, whole

__all__ = ["Probe", "ProbeScore", "fit_probe"]


class ProbeScore(NamedTuple):
    """What :meth:`Probe.score` returns, in nats per row."""

    cross_entropy: float  # the probe's mean -sum_s q_s log q̂_s
    entropy: float  # the targets' mean -sum_s q_s log q_s: the floor
    kl: float  # cross_entropy - entropy: the mean KL(q || q̂), 0 at the floor


class Probe(NamedTuple):
    """A fitted linear probe: ``softmax(features @ weight + bias)``."""

    weight: torch.Tensor  # (d, S), float64
    bias: torch.Tensor  # (S,), float64

    def log_probs(self, features) -> torch.Tensor:
        r"""The probe's :math:`\log \hat q_i = \log \operatorname{softmax}(x_i W + b)` for
        each row of ``features`` ``(N, d)``: a new float64 tensor ``(N, S)``."""
        x = _table(features, "features")
        if x.shape[1] != self.weight.shape[0]:
            raise ValueError(f"features have {x.shape[1]} columns, but the probe was fitted on "
                             f"{self.weight.shape[0]}")
        return torch.log_softmax(x @ self.weight + self.bias, dim=1)

    def score(self, features, targets) -> ProbeScore:
        r"""The probe against ``targets`` ``(N, S)`` on these rows (held-out rows, normally).

        .. math::

            \mathrm{CE} = \frac1N \sum_i \sum_s -q_{is} \log \hat q_{is}, \qquad
            H = \frac1N \sum_i \sum_s -q_{is} \log q_{is}, \qquad
            \mathrm{KL} = \mathrm{CE} - H \ge 0

        with :math:`0 \log 0 = 0`. ``H`` is the floor: the cross-entropy of a probe that
        outputs the targets themselves.
        """
        log_q = self.log_probs(features)
        q = _distributions(targets, len(log_q), log_q.shape[1])
        cross_entropy = -(q * log_q).sum(1).mean().item()
        entropy = -torch.special.xlogy(q, q).sum(1).mean().item()
        return ProbeScore(cross_entropy, entropy, cross_entropy - entropy)


def fit_probe(features, targets, *, rng, weight_decay: float = 0.0, steps: int = 100) -> Probe:
    r"""Fit a linear probe from ``features`` ``(N, d)`` to the distributions ``targets``
    ``(N, S)`` (rows of probabilities summing to 1).

    Minimizes, over ``W`` ``(d, S)`` and ``b`` ``(S,)``,

    .. math::

        \mathcal{L}(W, b) = \frac1N \sum_{i=1}^N \sum_{s=1}^S
        -q_{is} \log \operatorname{softmax}(x_i W + b)_s + \frac{\lambda}{2} \lVert W \rVert^2

    with full-batch L-BFGS (strong Wolfe line search) in float64, for at most ``steps``
    iterations, from ``W`` drawn as ``0.01 * randn`` with ``rng`` and ``b = 0``. The loss is
    convex, so the seed changes only where the fit starts; the same seed gives the same
    probe, bit for bit.

    Args:
        features: ``(N, d)`` numbers (a tensor, an array or a list of rows), all finite.
        targets: ``(N, S)`` probabilities, each row summing to 1 (within 1e-5).
        rng: a seed or a ``torch.Generator``, for the starting weights.
        weight_decay: :math:`\lambda \ge 0`, on ``W`` only (not the bias).
        steps: the most L-BFGS iterations.

    Returns:
        a :class:`Probe`: its ``weight`` and ``bias``, and :meth:`Probe.score` to measure it.
    """
    x = _table(features, "features")
    q = _distributions(targets, len(x))
    weight_decay = number(weight_decay, "weight_decay", 0)
    steps = whole(steps, "steps", least=1)
    gen = generator(rng)
    w = (0.01 * torch.randn(x.shape[1], q.shape[1], generator=gen, dtype=torch.float64))
    w.requires_grad_()
    b = torch.zeros(q.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1, max_iter=steps, history_size=50,
                            tolerance_grad=1e-10, tolerance_change=1e-12,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        log_q = torch.log_softmax(x @ w + b, dim=1)
        loss = -(q * log_q).sum(1).mean() + 0.5 * weight_decay * (w * w).sum()
        loss.backward()
        return loss

    with torch.enable_grad():  # also when the caller is inside torch.no_grad()
        opt.step(closure)
    return Probe(w.detach(), b.detach())


def _table(values, name: str, low: float = -math.inf, high: float = math.inf) -> torch.Tensor:
    """``values`` (a tensor, an array or a list of rows) as a new float64 CPU tensor ``(N, d)``
    with a row and a column at least, every entry finite and in ``[low, high]``."""
    return torch.from_numpy(numbers(values, name, low, high, ndim=2, empty=False))


def _distributions(values, n: int, size: int | None = None) -> torch.Tensor:
    """``values`` as ``n`` rows of probabilities (of ``size`` each, when given) summing to 1."""
    q = _table(values, "targets", 0, 1)
    if len(q) != n:
        raise ValueError(f"features and targets must have one row each: {n} rows of features "
                         f"but {len(q)} of targets")
    if size is not None and q.shape[1] != size:
        raise ValueError(f"targets have {q.shape[1]} columns, but the probe gives {size}")
    bad = ((q.sum(1) - 1).abs() > 1e-5).nonzero()
    if len(bad):
        i = int(bad[0, 0])
        raise ValueError(f"each row of targets must sum to 1 (a distribution), but row {i} "
                         f"sums to {q[i].sum().item():.6g}")
    return q
