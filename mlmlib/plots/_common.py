"""mlmlib.plots._common - what every figure of the course shares: colours, sizes, axes.

Does: hold the Okabe-Ito palette, the truth and other colours, the font size and the helpers
that make or check the axes a figure draws on; on import, let IPython show a returned figure.
Also the checks every figure runs on its input, so that bad input is a clear ``ValueError`` or
``TypeError`` naming the argument, never a silently wrong picture or an error deep in matplotlib.

Does not: draw a figure of its own - the part modules (walkthrough, worked, training) do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

# Okabe & Ito (2008), "Color Universal Design": safe for the common colour-vision deficiencies.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
}


def _show_in_notebooks() -> None:
    """Let IPython draw a returned figure as a PNG.

    pyplot would register this on its first figure; the course's figures avoid pyplot's global
    state (so each appears exactly once), so register it here, and only inside IPython.
    """
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # plain Python: nothing to display on
        return
    if get_ipython() is not None:
        set_matplotlib_formats("png")


_show_in_notebooks()

TRUTH_COLOUR = OKABE_ITO["vermillion"]
OTHER_COLOUR = OKABE_ITO["blue"]
FONT_SIZE = 12  # large enough to stay readable when a phone shrinks the figure


def _axes(ax, count: int, size: tuple[float, float]):
    """The axes to draw on: new ones stacked vertically (phone-friendly), or the caller's."""
    if ax is None:
        fig = Figure(figsize=size, layout="constrained")
        axes = fig.subplots(count, 1, sharex=True, squeeze=False)[:, 0]
        return fig, list(axes)
    axes = _given_axes(ax, count)
    return axes[0].figure, axes


def _given_axes(ax, count: int) -> list:
    """The caller's axes, checked: ``count`` matplotlib Axes (one, or a list or grid of them)."""
    axes = list(np.atleast_1d(np.asarray(ax, dtype=object)).ravel())
    if not all(isinstance(a, Axes) for a in axes):
        raise TypeError(f"ax must be None or matplotlib Axes, got {type(ax).__name__}")
    if len(axes) != count:
        raise ValueError(f"this figure needs {count} axes, got {len(axes)}")
    return axes


def _single_axes(ax, size: tuple[float, float]):
    if ax is None:
        fig = Figure(figsize=size, layout="constrained")
        return fig, fig.subplots()
    ax = _given_axes(ax, 1)[0]
    return ax.figure, ax


def _labels(values, name: str, unique: bool = False, text: bool = False) -> list:
    """A non-empty list of labels (words, names): a ``str`` is one label, not a list of letters;
    with ``text``, every label must be a ``str`` (a bar's category, say)."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a list of words or names, got {type(values).__name__} "
                        f"{values!r}"[:150] + "; pass a list")
    values = list(values)
    if not values:
        raise ValueError(f"{name} is empty: there is nothing to draw")
    if text and not all(isinstance(v, str) for v in values):
        raise TypeError(f"{name} must be strings, got {values!r}"[:150])
    twice = [v for k, v in enumerate(values) if v in values[:k]] if unique else []
    if twice:
        raise ValueError(f"{name} lists {twice[0]!r} twice: its bars would fall on one another")
    return values


def _numbers(values, name: str, low: float = -math.inf, high: float = math.inf,
             above: bool = False, ndim: int | None = None) -> np.ndarray:
    """``values`` as a float array of finite numbers in ``[low, high]`` (``(low, high]`` when
    ``above``); ``ndim`` fixes the number of dimensions (0: one number)."""
    try:
        arr = np.asarray(values.detach() if hasattr(values, "detach") else values)
        if arr.dtype.kind not in "iuf":
            raise TypeError
    except (TypeError, ValueError):  # text, None, a ragged list, ...
        raise TypeError(f"{name} must be numbers, got {type(values).__name__} "
                        f"{values!r}"[:150]) from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be " + ("one number" if ndim == 0 else f"{ndim}-D") +
                         f", got shape {arr.shape}")
    arr = arr.astype(float)
    bad = ~(np.isfinite(arr) & ((arr > low) if above else (arr >= low)) & (arr <= high))
    if bad.any():
        interval = f" lie in {'(' if above else '['}{low:g}, {high:g}] and" * (
            low > -math.inf or high < math.inf)
        raise ValueError(f"{name} must{interval} be finite, got {arr[bad].flat[0]}")
    return arr


def _flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def _mapping(value, name: str, what: str, empty: bool = False) -> dict:
    """A dict such as ``{name: value}`` (empty, or None, only if ``empty``), else an error."""
    if value is None and empty:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict of {what}, got {type(value).__name__}")
    if not value and not empty:
        raise ValueError(f"{name} is empty: there is nothing to draw")
    return dict(value)


def _positions(positions, n: int, name: str,
               phrase: str = "position {p} is outside the {n}-token row") -> list:
    """Whole-number positions, each from 0 to ``n - 1`` (``phrase`` says where one falls)."""
    if isinstance(positions, str | bytes) or not isinstance(positions, Iterable):
        raise TypeError(f"{name} must be a list of positions, got {positions!r}")
    out = []
    for p in positions:
        try:  # an int, a NumPy or a 0-d tensor integer (None has no __index__ to call)
            p = (None if isinstance(p, bool) else getattr(p, "__index__", None))()
        except TypeError:
            raise TypeError(f"{name}: a position must be a whole number, got {p!r}") from None
        if not 0 <= p < n:
            raise ValueError(f"{name}: " + phrase.format(p=p, n=n) +
                             f" (positions are 0..{n - 1})")
        out.append(p)
    return out
