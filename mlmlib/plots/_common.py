"""mlmlib.plots._common - what every figure of the course shares: colours, sizes, axes.

Does: hold the Okabe-Ito palette, the truth and other colours, the font size and the helpers
that make or check the axes a figure draws on; on import, let IPython show a returned figure.

Does not: draw a figure of its own - the part modules (walkthrough, worked, training) do.
"""

from __future__ import annotations

import numpy as np
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
    axes = list(np.atleast_1d(ax))
    if len(axes) != count:
        raise ValueError(f"this figure needs {count} axes, got {len(axes)}")
    return axes[0].figure, axes


def _single_axes(ax, size: tuple[float, float]):
    if ax is None:
        fig = Figure(figsize=size, layout="constrained")
        return fig, fig.subplots()
    return ax.figure, ax
