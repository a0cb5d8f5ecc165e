"""mlmlib.plots._common - what every figure of the course shares: colours, sizes, axes.

Does: hold the Okabe-Ito palette, the truth and other colours, the font size and the helpers
that make or check the axes a figure draws on; on import, let IPython show a returned figure.
(The checks every figure runs on its input, so that bad input is a clear ``ValueError`` or
``TypeError`` naming the argument and never a silently wrong picture, are
:mod:`mlmlib._checks`'.)

And the figures' alt text: each plotting function describes what it drew, with the numbers it
drew, and stores that on the figure (``_alt``); :func:`alt_text` reads it back. A figure shown
in IPython is a PNG that carries its alt text as the standard ``tEXt`` chunk ``Description``
(the pixels are those ``set_matplotlib_formats("png")`` gives), so the description travels with
the picture into the site (``book/_ext/alt_text.py``), the PDF and the notebook edition;
:func:`png_alt` reads it from the PNG.

>>> fig = Figure()
>>> _alt(fig.subplots(), "A bar chart of 2 words.")
>>> alt_text(fig)
'A bar chart of 2 words.'
>>> png_alt(_png(fig, base64=False))
'A bar chart of 2 words.'

Does not: draw a figure of its own - the part modules (walkthrough, worked, training) do.
"""

from __future__ import annotations

import base64
import functools
import math
import struct
import zlib

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from mlmlib._checks import kind

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


def _png(fig: Figure, **kwargs):
    """``fig`` as the PNG IPython shows, base64 unless ``base64=False``: ``print_figure`` as
    ``set_matplotlib_formats("png")`` registers it, with the figure's alt text in the PNG's
    ``Description`` chunk when it has one (a chunk of text: no pixel changes)."""
    from IPython.core.pylabtools import print_figure  # only in a notebook: IPython is there

    alt = alt_text(fig)
    if alt:
        kwargs["metadata"] = {**kwargs.get("metadata", {}), "Description": alt}
    return print_figure(fig, "png", **{"base64": True, **kwargs})


def _show_in_notebooks() -> None:
    """Let IPython draw a returned figure as a PNG that carries its alt text.

    pyplot would register a PNG formatter on its first figure; the course's figures avoid
    pyplot's global state (so each appears exactly once), so register one here, and only inside
    IPython: the one ``set_matplotlib_formats("png")`` registers, plus the alt text.
    """
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import InlineBackend  # its own set-up runs first
    except ImportError:  # plain Python: nothing to display on
        return
    shell = get_ipython()
    if shell is None:
        return
    formatters = shell.display_formatter.formatters
    for formatter in formatters.values():  # as set_matplotlib_formats: PNG only
        formatter.pop(Figure, None)
    options = dict(InlineBackend.instance().print_figure_kwargs)  # bbox_inches="tight"
    formatters["image/png"].for_type(Figure, functools.partial(_png, **options))


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


# ---------------------------------------------------------------------- alt text
_ALT = "_mlm_alt"  # the attribute of a Figure that holds [(axes drawn on, text), ...]


def _alt(where, text: str) -> None:
    """Store ``text``, what a plotting function drew on ``where`` (an Axes or a list of them),
    as the alt text of their figure. A function that draws on axes another one drew on first
    (``slots_and_tower`` through ``loss_tower``) replaces that one's text; functions that draw
    on different axes of one figure (``ax=``) each add theirs, joined in the order drawn."""
    axes = list(np.atleast_1d(np.asarray(where, dtype=object)).ravel())
    fig = axes[0].figure
    fig = getattr(fig, "figure", fig)  # a SubFigure's alt text goes on its figure
    drawn = {id(a) for a in axes}
    kept = [(old, said) for old, said in getattr(fig, _ALT, []) if not {id(a) for a in old}
            <= drawn]
    setattr(fig, _ALT, [*kept, (tuple(axes), " ".join(text.split()))])


def alt_text(fig: Figure) -> str | None:
    """The alt text of a figure drawn by :mod:`mlmlib.plots`: what it shows, with its numbers;
    None for a figure no course function drew on.

    >>> from mlmlib.plots import probability_dial
    >>> alt_text(probability_dial(0.25, "P(cat)"))
    'A probability dial, red on the left to green on the right, its needle at P(cat) = 0.2500.'
    """
    kind(fig, "fig", Figure, "a matplotlib Figure (what a plotting function returns)")
    return " ".join(text for _, text in getattr(fig, _ALT, [])) or None


def png_alt(data: str | bytes) -> str | None:
    """The description a PNG carries (its ``tEXt``/``iTXt`` chunk ``Description``), or None.

    The course's figures write their alt text there (:func:`alt_text`), so that it travels with
    the picture into the site, the PDF and the editions. ``data`` is the PNG, raw or base64 as a
    notebook stores it.
    """
    kind(data, "data", (str, bytes), "a PNG, as bytes or base64 text")
    try:
        raw = base64.b64decode(data) if isinstance(data, str) else data
    except ValueError:
        raise ValueError("data is text but not base64: pass the PNG's bytes or its base64 "
                         "text (as a notebook's image/png output stores it)") from None
    if not raw.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError(f"data is not a PNG: it starts with {raw[:8]!r}")
    at = 8
    while at + 8 <= len(raw):
        size, chunk = struct.unpack(">I4s", raw[at:at + 8])
        body = raw[at + 8:at + 8 + size]
        if chunk == b"tEXt":
            key, _, value = body.partition(b"\0")
            if key == b"Description":
                return value.decode("latin-1")
        elif chunk == b"iTXt":
            key, _, rest = body.partition(b"\0")
            compressed, _method, rest = rest[0], rest[1], rest[2:]
            _language, _, rest = rest.partition(b"\0")
            _translated, _, value = rest.partition(b"\0")
            if key == b"Description":
                return (zlib.decompress(value) if compressed else value).decode("utf-8")
        elif chunk == b"IEND":
            break
        at += 12 + size
    return None


def _fmt(x: float) -> str:
    """A number as the alt text says it: 4 significant digits, whole above 1000, tiny ones as
    ``2.4e-07``; never ``-0``."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    if abs(x) >= 1000:
        return f"{x:.0f}"
    if abs(x) < 1e-4:
        return f"{x:.2g}"
    return np.format_float_positional(x, precision=4, unique=False, fractional=False, trim="-")


def _plain(text) -> str:
    """A label as words: no TeX dollars, no line breaks."""
    return " ".join(str(text).replace("$", "").split())


def _listing(names, values, fmt=_fmt, most: int = 8, sep: str = " ") -> str:
    """``"cat 0.5465, the 0.2011, and 2 more"``: the first ``most`` pairs."""
    pairs = [f"{_plain(n)}{sep}{fmt(v)}" for n, v in zip(names, values, strict=True)]
    more = f", and {len(pairs) - most} more" if len(pairs) > most else ""
    return ", ".join(pairs[:most]) + more


def _titled(title) -> str:
    return f", titled '{_plain(title)}'" if title else ""
