"""mlmlib._checks - the argument checks every stage shares, each one line where it is used.

Does: check one argument and give it back in the form the function computes with, or raise a
``TypeError`` (the wrong kind of thing) or ``ValueError`` (the right kind, a wrong value) whose
message names the argument, says what it must be, and shows what it got, always in one style:
``"{name} must be {what it must be}, got {what it got}"``. The checks:

* numbers: :func:`whole` (an int: a Python, NumPy or 0-d tensor integer, never a bool or a
  float), :func:`number` (a finite real number in a range), :func:`probability` (one in
  ``[0, 1]``), :func:`numbers` (a NumPy array of them), :func:`within` (a tensor's entries);
* collections: :func:`items` (a list; a ``str``, a dict or one number is not read as one),
  :func:`indices` (whole numbers ``0..n-1``), :func:`mapping` (a dict), :func:`ids` (a tensor
  of integer token ids);
* the rest: :func:`flag` (True or False), :func:`one_of` (one of a few choices), :func:`kind`
  (an instance of a class: a ``str``, say), :func:`pathlike`, and :func:`generator` (a seed or a
  ``torch.Generator``: every random choice in mlmlib is seeded); :func:`described` says what
  a caller passed, for the messages that stay written out in their function.

Does not: know anything about masking, losses or models; it imports no other part of mlmlib,
so every stage (even :mod:`mlmlib.loss` and :mod:`mlmlib.masking`) may use it, as they use
:mod:`mlmlib.constants`. A check that belongs to one function (a shape shared by two of its
arguments, say) stays written out in that function.

>>> whole(3, "n", least=1), probability(0.15, "rate")
(3, 0.15)
>>> items("the cat", "texts", "texts")
Traceback (most recent call last):
...
TypeError: texts must be a list of texts, got str 'the cat'; pass a list
>>> number(0, "floor", 0, above=True)
Traceback (most recent call last):
...
ValueError: floor must be a positive, finite number, got 0
"""

from __future__ import annotations

import math
import numbers as _numbers
import operator
import os
import sys
from collections.abc import Iterable, Mapping, Set
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

INF = math.inf


def _is_tensor(value) -> bool:
    """Whether ``value`` is a torch tensor, without importing torch: the forward pass by hand
    (:mod:`mlmlib.byhand.forward`) uses these checks and never imports it."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _is_bool(value) -> bool:
    """A bool, a NumPy bool or a bool tensor or array: never a number here."""
    return isinstance(value, bool | np.bool_) or str(getattr(value, "dtype", "")) in (
        "bool", "torch.bool")


def described(value) -> str:
    """What the caller passed, for a message: its type, and its value when that is short."""
    if _is_tensor(value):
        return f"a torch tensor of dtype {value.dtype}"
    if isinstance(value, np.ndarray):
        return f"a NumPy array of dtype {value.dtype}"
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 60 else shown[:57] + '...'}"


def _bound(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _requirement(low, high, above: bool, below: bool, whole: bool, many: bool) -> str:
    """What a number must be, in words: ``"a positive, finite number"``, ``"a number in
    [0, 1)"``, ``"a whole number, not negative"``; plural (``"numbers ..."``) when ``many``."""
    noun = ("whole number" if whole else "number") + ("s" if many else "")
    a, finite = "" if many else "a ", "" if whole else "finite "
    if whole and low == 1 and high == INF:
        return f"{a}positive {noun}"
    if low > -INF and high < INF:
        return f"{a}{noun} " + (f"from {low} to {high}" if whole else f"in {'(' if above else '['}"
                                f"{_bound(low)}, {_bound(high)}{')' if below else ']'}")
    if low == 0 and high == INF:
        return f"{a}positive, {finite}{noun}" if above else f"{a}{finite}{noun}, not negative"
    if low > -INF:
        return f"{a}{finite}{noun}, {'above' if above else 'at least'} {_bound(low)}"
    if high < INF:
        return f"{a}{finite}{noun}, {'below' if below else 'at most'} {_bound(high)}"
    return f"{a}{finite}{noun}"


def _inside(x, low, high, above: bool, below: bool):
    """Whether ``x`` (a number or an array) lies in the interval; elementwise for an array."""
    return ((x > low) if above else (x >= low)) & ((x < high) if below else (x <= high))


# ----------------------------------------------------------------------------- numbers

def whole(value, name: str, least: int | None = None, most: int | None = None) -> int:
    """``value`` as an int (a Python, NumPy or 0-d tensor integer; never a bool or a float),
    at least ``least`` and at most ``most`` when they are given."""
    low, high = -INF if least is None else least, INF if most is None else most
    what = _requirement(low, high, False, False, whole=True, many=False)
    try:
        if _is_bool(value):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be {what}, got {described(value)}") from None
    if not _inside(value, low, high, False, False):
        raise ValueError(f"{name} must be {what}, got {value}")
    return value


def number(value, name: str, low: float = -INF, high: float = INF, *, above: bool = False,
           below: bool = False) -> float:
    """``value`` as a float: a real number (never a bool or a str), finite, in ``[low, high]``
    (``above``: more than ``low``; ``below``: less than ``high``)."""
    what = _requirement(low, high, above, below, whole=False, many=False)
    if isinstance(value, bool) or not isinstance(value, _numbers.Real):
        raise TypeError(f"{name} must be {what}, got {described(value)}")
    try:
        x = float(value)
    except OverflowError:  # an int beyond every float
        x = INF if value > 0 else -INF
    if not (math.isfinite(x) and _inside(x, low, high, above, below)):  # NaN is never inside
        raise ValueError(f"{name} must be {what}, got {value if isinstance(value, int) else x}")
    return x


def probability(value, name: str, *, above: bool = False) -> float:
    """``value`` as a float in ``[0, 1]`` (``(0, 1]`` when ``above``: a probability whose
    ``-log`` must be finite)."""
    return number(value, name, 0, 1, above=above)


def numbers(values, name: str, low: float = -INF, high: float = INF, *, above: bool = False,
            ndim: int | None = None, empty: bool = True) -> np.ndarray:
    """``values`` (a number, list, array or tensor) as a float64 NumPy array of finite numbers
    in ``[low, high]`` (``(low, high]`` when ``above``); ``ndim`` fixes the number of dimensions
    (0: one number; a single number where a list is wanted is a ``TypeError``); ``empty=False``
    refuses an empty one. The caller's array is never changed (this is a copy)."""
    many = ndim != 0
    what = _requirement(low, high, above, False, whole=False, many=many)
    try:
        arr = np.asarray(values.detach().cpu() if _is_tensor(values) else values)
        if arr.dtype.kind not in "iuf":
            raise TypeError
    except (TypeError, ValueError, RuntimeError):  # text, None, a ragged list, ...
        raise TypeError(f"{name} must be {what}" + " (a list or an array)" * many +
                        f", got {described(values)}") from None
    if ndim is not None and arr.ndim != ndim:
        if arr.ndim == 0:
            raise TypeError(f"{name} must be a list of numbers, got {described(values)}")
        raise ValueError(f"{name} must be {'one number' if ndim == 0 else f'{ndim}-D'}, got "
                         f"shape {arr.shape}")
    if not empty and arr.size == 0:
        raise ValueError(f"{name} is empty: it needs at least one number")
    arr = arr.astype(np.float64)
    bad = ~(np.isfinite(arr) & _inside(arr, low, high, above, False))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        if not where:
            raise ValueError(f"{name} must be {what}, got {arr.item()}")
        raise ValueError(f"{name} must be {what}, but {_entry(name, where)} is {arr[where]}")
    return arr


def _entry(name: str, where: tuple) -> str:
    """``scores[1, 2]`` for a plain name; ``entry (1, 2) of series 'x'`` otherwise."""
    index = ", ".join(map(str, where))
    return f"{name}[{index}]" if name.isidentifier() else f"entry {index} of {name}"


def within(t: torch.Tensor, name: str, low: float = -INF, high: float = INF) -> torch.Tensor:
    """``t`` itself, once every entry is checked: finite and in ``[low, high]``. Read without
    a copy and without its gradient."""
    import torch

    d = t.detach()
    bad = ~torch.isfinite(d)  # one pass over a large tensor of scores when there are no bounds
    if low > -INF:
        bad |= d < low
    if high < INF:
        bad |= d > high
    if bad.any():
        where = tuple(int(i) for i in bad.nonzero()[0])
        what = _requirement(low, high, False, False, whole=False, many=bool(where))
        raise ValueError(f"{name} must be {what}, " + (f"but {_entry(name, where)} is " if where
                                                        else "got ") + f"{d[where].item()}")
    return t


# ----------------------------------------------------------------------------- collections

def items(values, name: str, what: str = "items", *, text: bool = False, empty: bool = True,
          unique: bool = False, ordered: bool = False) -> list:
    """``values`` as a new list. A ``str``, bytes, a dict (whose keys alone would be read), a
    single number or a 0-d tensor is not a list of ``what``: a ``TypeError`` that says to pass
    a list. ``text``: every item is a ``str``; ``empty=False``: at least one item; ``unique``:
    no item twice; ``ordered``: not a set (whose order is arbitrary), where the order counts."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable) or (
            getattr(values, "ndim", None) == 0) or (ordered and isinstance(values, Set)):
        raise TypeError(f"{name} must be a list of {what}, got {described(values)}; pass a list")
    values = list(values)
    for k, v in enumerate(values if text else ()):
        if not isinstance(v, str):
            raise TypeError(f"{name} must hold strings, but {name}[{k}] is {described(v)}")
    if not empty and not values:
        raise ValueError(f"{name} is empty: it needs at least one of its {what}")
    seen: set = set()
    for v in values if unique else ():
        if v in seen:
            raise ValueError(f"{name} lists {v!r} twice")
        seen.add(v)
    return values


def indices(values, name: str, n: int | None = None, *, unique: bool = False,
            phrase: str = "{name}: position {p} is outside the {n}-token row (positions are "
                          "0..{last})") -> list[int]:
    """Whole numbers from 0 to ``n - 1`` (positions in a row, ids in a vocabulary; with no
    ``n``, any that is not negative), as a new list of ints; ``phrase`` is the message for one
    outside (it may use ``{name}``, ``{p}``, ``{n}`` and ``{last}``); ``unique``: none twice."""
    out, seen = [], set()
    for k, p in enumerate(items(values, name, "whole numbers")):
        try:
            if _is_bool(p):
                raise TypeError
            p = operator.index(p)
        except TypeError:
            raise TypeError(f"{name} must be whole numbers, but {name}[{k}] is "
                            f"{described(p)}") from None
        if p < 0 and n is None:
            raise ValueError(f"{name}: position {p} is negative (positions count from 0)")
        if n is not None and not 0 <= p < n:
            raise ValueError(phrase.format(name=name, p=p, n=n, last=n - 1))
        if unique and p in seen:
            raise ValueError(f"{name}: position {p} is listed twice")
        out.append(p)
        seen.add(p)
    return out


def mapping(value, name: str, what: str, *, empty: bool = False) -> dict:
    """A dict such as ``{name: value}`` (empty, or None, only when ``empty``), as a new dict."""
    if value is None and empty:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict of {what}, got {described(value)}")
    if not value and not empty:
        raise ValueError(f"{name} is empty: it needs at least one {what} pair")
    return dict(value)


def ids(t, name: str, size: int | None = None, *, ignore: int | None = None) -> torch.Tensor:
    """``t`` itself, checked: a torch tensor of integer ids (any integer dtype, never bool or
    float); with ``size``, every id in ``0..size - 1`` (compared in int64), except entries equal
    to ``ignore``, which a negative ``ignore`` needs a signed dtype to hold."""
    if not _is_tensor(t) or t.is_floating_point() or t.is_complex() or _is_bool(t):
        raise TypeError(f"{name} must be integer token ids (a torch tensor of an integer dtype), "
                        f"got {described(t)}")
    if ignore is not None and ignore < 0 and not t.is_signed():
        raise TypeError(f"{name} of dtype {t.dtype} cannot hold {ignore}, the label of a position "
                        "outside M (unsigned, it would wrap around to a large id); use a signed "
                        "dtype such as torch.long")
    if size is not None and t.numel():
        wide = t.long()  # int64: size would wrap around in a small dtype
        bad = (wide < 0) | (wide >= size) if size < 2**63 else wide < 0  # no wrap past int64
        if ignore is not None:
            bad &= wide != ignore
        if bad.any():
            where = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"{_entry(name, where) if where else name} = {wide[where].item()} "
                             f"is outside the vocabulary of {size} words (ids 0..{size - 1})"
                             + (f"; positions outside M hold {ignore}" if ignore is not None
                                else ""))
    return t


# ----------------------------------------------------------------------------- the rest

def flag(value, name: str) -> bool:
    """``value``, which must be True or False (not 0, 1 or "yes")."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {described(value)}")
    return value


def one_of(value, name: str, choices: tuple):
    """``value``, which must be one of ``choices`` (a few strings, say)."""
    try:
        known = value in choices
    except (TypeError, ValueError, RuntimeError):  # an array or a tensor: not one of them
        known = False
    if not known:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def kind(value, name: str, cls, what: str | None = None):
    """``value``, which must be an instance of ``cls`` (a class or a tuple of them)."""
    if not isinstance(value, cls):
        names = " or ".join(c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,)))
        what = what or ("an " if names[0] in "AEIOUaeiou" else "a ") + names
        raise TypeError(f"{name} must be {what}, got {described(value)}")
    return value


def pathlike(value, name: str) -> Path:
    """``value`` (a ``str`` or an ``os.PathLike``, not empty: ``Path("")`` would be the current
    folder) as a ``pathlib.Path``."""
    kind(value, name, (str, os.PathLike), "a path (a str or pathlib.Path)")
    if not os.fspath(value):
        raise ValueError(f"{name} is empty: name a file or a folder (\".\" for this one)")
    return Path(value)


def generator(rng) -> torch.Generator:
    """A ``torch.Generator`` from a seed (an int that fits in 64 bits) or a generator; there is
    no hidden global randomness."""
    import torch

    if isinstance(rng, torch.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, int):
        raise TypeError(f"rng must be a seed (int) or a torch.Generator, got {described(rng)}; "
                        "every random choice in mlmlib is seeded")
    if not -(2**63) <= rng < 2**64:
        raise ValueError(f"rng must be a seed that fits in 64 bits, got {rng}")
    return torch.Generator().manual_seed(rng)
