"""mlmlib._checks - the argument checks every stage shares: seeds, whole numbers, lists.

Does: turn a seed (or a generator) into a ``torch.Generator``, refusing seeds that do not fit
in 64 bits; read a whole number from a Python, NumPy or 0-d tensor integer (never a bool or a
float); refuse a ``str`` or a single number where a list is expected, so it is not read one
character at a time. Each raises a ``TypeError``/``ValueError`` that names the argument.

Does not: know anything about masking, losses or models; it imports no other part of mlmlib,
so every stage (even :mod:`mlmlib.loss` and :mod:`mlmlib.masking`) may use it, as they use
:mod:`mlmlib.constants`.

>>> _whole(3, "n")
3
>>> _not_text("the cat", "texts", "texts")
Traceback (most recent call last):
...
TypeError: texts must be a list of texts, got str 'the cat'; pass a list
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

import torch


def _generator(rng) -> torch.Generator:
    """A ``torch.Generator`` from a seed or a generator; there is no hidden global randomness."""
    if isinstance(rng, torch.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, int):
        raise TypeError("rng must be a seed (int) or a torch.Generator, got "
                        f"{type(rng).__name__}; every random choice in mlmlib is seeded")
    if not -(2**63) <= rng < 2**64:
        raise ValueError(f"rng seed {rng} does not fit in 64 bits")
    return torch.Generator().manual_seed(rng)


def _whole(value, name: str) -> int:
    """``value`` as an int: a Python, NumPy or 0-d tensor integer; never a bool or a float."""
    try:
        if isinstance(value, bool) or getattr(value, "dtype", None) == torch.bool:
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be a whole number, got {value!r}"[:120]) from None


def _not_text(value, name: str, what: str) -> None:
    """Refuse a ``str`` (or a non-iterable) where a list is expected: it is not a list of them."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable) or (
            getattr(value, "ndim", None) == 0):  # a 0-d tensor or array holds one number
        raise TypeError(f"{name} must be a list of {what}, got {type(value).__name__} "
                        f"{value!r}"[:140] + "; pass a list")
