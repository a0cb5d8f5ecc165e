"""mlmlib.toyworld.compare - how far a model's distributions are from the toy world's exact ones.

Does: :func:`~mlmlib.toyworld.compare_with_exact` measures, slot by slot, the distance from
the exact posterior of :meth:`ToyWorld.posterior <mlmlib.toyworld.ToyWorld.posterior>` to a
model's predicted distribution over the same words: the KL divergence (the loss the model pays
above the floor), the total variation and the probability the model gives to what is
impossible.

Does not: run a model or compute the exact posterior (:mod:`mlmlib.toyworld.world` does), or
average over slots (it returns one number per slot; the caller averages).
"""

from __future__ import annotations

import torch


def compare_with_exact(exact: torch.Tensor, model: torch.Tensor) -> dict[str, torch.Tensor]:
    r"""How far a model's distributions are from the exact ones, slot by slot.

    ``exact`` and ``model`` are ``(slots, V)`` rows of probabilities over the same words (a
    model's row may sum to less than 1 when it also gives some probability to tokens that are
    not words, such as ``[SEP]``). Returns, per slot:

    * ``"kl"``: :math:`\mathrm{KL}(p \,\|\, q) = \sum_v p_v \log (p_v / q_v)`, in nats: how
      much loss the model pays above the floor on average over the true fillings of the slot;
    * ``"tv"``: the total variation :math:`\tfrac12 \sum_v |p_v - q_v|` (with the missing
      mass counted), the largest difference in probability the two give any set of words;
    * ``"impossible"``: the model's probability on what the exact posterior rules out.

    >>> import torch
    >>> p = torch.tensor([[0.5, 0.5, 0.0]])
    >>> {k: round(float(v), 4) for k, v in compare_with_exact(p, p).items()}
    {'kl': 0.0, 'tv': 0.0, 'impossible': 0.0}
    """
    try:
        p, q = (torch.as_tensor(x, dtype=torch.float64) for x in (exact, model))
    except (TypeError, ValueError, RuntimeError):  # a str, a ragged list, ...
        raise TypeError("exact and model must be (slots, V) tables of probabilities, got "
                        f"{type(exact).__name__} and {type(model).__name__}") from None
    if p.shape != q.shape or p.ndim != 2:
        raise ValueError(f"expected two (slots, V) tables of one shape, got {tuple(p.shape)} "
                         f"and {tuple(q.shape)}")
    if not (((p >= 0) & (p <= 1)).all() and ((q >= 0) & (q <= 1)).all()):  # NaN fails too
        raise ValueError("exact and model must hold probabilities in [0, 1]: none negative, "
                         "none above 1, none NaN")
    # a float32 softmax sums to 1 within about 1e-6; 1e-4 leaves room and still catches a table
    # that is not a distribution
    if ((p.sum(1) - 1).abs() > 1e-4).any() or (q.sum(1) > 1 + 1e-4).any():
        raise ValueError("each row of exact must sum to 1 and each row of model to 1 at most")
    seen = p > 0
    kl = torch.where(seen, p * (p / q.clamp_min(1e-300)).log(), torch.zeros_like(p)).sum(1)
    missing = (1 - q.sum(1)).clamp_min(0)  # the model's mass outside these words
    tv = 0.5 * ((p - q).abs().sum(1) + missing)
    impossible = torch.where(seen, torch.zeros_like(q), q).sum(1) + missing
    return {"kl": kl, "tv": tv, "impossible": impossible}
