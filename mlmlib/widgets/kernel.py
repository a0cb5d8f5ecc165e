"""mlmlib.widgets.kernel - ipywidgets controls that redraw the course's matplotlib figures.

Does: wrap the plotting functions of :mod:`mlmlib.plots` in ipywidgets controls: four score
sliders for the softmax (:func:`softmax_sliders`), a probability slider on the ``-log p`` curve
(:func:`neg_log_slider`), one probability slider per masked slot for the loss tower
(:func:`slot_sliders`), and click-to-mask buttons for a sentence (:func:`mask_picker`). Each
returns an :class:`Explorer`: the controls above, the figure below. Its ``figure`` attribute
holds the latest figure, which is how the tests drive it.

Does not: draw anything itself (the plotting functions do), or compute anything the loss
depends on. They need a running Python kernel: the chapters use :mod:`mlmlib.widgets.live`
instead, which also works on the static site.

>>> w = softmax_sliders([1, 2, 0, 1], ["the", "cat", "mat", "sat"], truth="cat")
>>> w.controls[1].value = 3.0  # as if the reader moved the slider for "cat"
>>> round(float(w.figure.axes[2].patches[1].get_height()), 4)
0.7573
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import ipywidgets as widgets
from matplotlib.figure import Figure

from mlmlib import plots
from mlmlib.plots._common import _labels, _mapping, _numbers

__all__ = ["Explorer", "mask_picker", "neg_log_slider", "slot_sliders", "softmax_sliders"]


class Explorer(widgets.VBox):
    """Controls above a figure that ``draw()`` redraws whenever a control changes."""

    def __init__(self, controls: Sequence[widgets.Widget], draw: Callable[[], Figure],
                 title: str = "interactive figure"):
        wrong = isinstance(controls, str | bytes) or not isinstance(controls, Iterable)
        self.controls = [] if wrong else list(controls)
        if wrong or not all(isinstance(c, widgets.ValueWidget) for c in self.controls):
            raise TypeError(f"controls must be a list of ipywidgets controls (sliders, buttons), "
                            f"got {controls!r}"[:150])
        if not callable(draw):
            raise TypeError(f"draw must be a function that returns a matplotlib Figure, got "
                            f"{type(draw).__name__}")
        self.output = widgets.Output()
        self.title = title
        self._draw = draw
        self.figure: Figure | None = None
        super().__init__([*self.controls, self.output])
        for control in self.controls:
            control.observe(self._redraw, names="value")
        self._redraw()

    def _redraw(self, _change=None) -> None:
        figure = self._draw()
        if not isinstance(figure, Figure):
            raise TypeError(f"draw() must return a matplotlib Figure, got {type(figure).__name__}")
        self.figure = figure
        from IPython import get_ipython

        if get_ipython() is None:  # plain Python (the tests): keep the figure, show nothing
            return
        # Set the Output widget's contents directly rather than capturing display() calls:
        # capturing depends on the frontend, and a test runner such as nbval would see the
        # figure leak into the cell's own outputs.
        self.output.outputs = ()
        self.output.append_display_data(self.figure)

    def __repr__(self) -> str:  # what nbval and a page without a kernel see: no widget ids
        return f"<{self.title}: move the controls in a live notebook>"


def _probability_slider(description: str, value: float) -> widgets.FloatSlider:
    """A slider for a probability in (0, 1]; it reaches below 0.001 when ``value`` does."""
    value = float(_numbers(value, f"slider {description!r}: p", 0, 1, above=True, ndim=0))
    return widgets.FloatSlider(value=value, min=min(0.001, value), max=1.0, step=0.001,
                               description=description, readout_format=".3f",
                               continuous_update=False,
                               style={"description_width": "initial"})


def softmax_sliders(scores: Sequence[float], words: Sequence[str],
                    truth: str | None = None) -> Explorer:
    """A slider per word's score, from -5 to 5 (further when a score is); the figure follows."""
    scores, words = _numbers(scores, "scores", ndim=1), _labels(words, "words", text=True)
    if len(scores) != len(words):
        raise ValueError(f"{len(words)} words but {len(scores)} scores")
    sliders = [widgets.FloatSlider(value=float(s), min=min(-5.0, float(s)),
                                   max=max(5.0, float(s)), step=0.1,
                                   description=f"score({w})", continuous_update=False,
                                   style={"description_width": "initial"})
               for s, w in zip(scores, words, strict=True)]
    return Explorer(sliders, lambda: plots.softmax_stages([s.value for s in sliders], words,
                                                          truth=truth),
                    title="softmax explorer")


def neg_log_slider(p: float = 0.5, points: dict[str, float] | None = None) -> Explorer:
    """A slider for the probability of the truth, shown as a point on the ``-log p`` curve."""
    if "your p" in _mapping(points, "points", "label -> p", empty=True):
        raise ValueError("points cannot use the label 'your p': it names the slider's point")
    slider = _probability_slider("P(truth)", p)
    return Explorer([slider],
                    lambda: plots.neg_log_curve({**(points or {}), "your p": slider.value}),
                    title="-log p explorer")


def slot_sliders(probs: dict[str, float]) -> Explorer:
    """One slider per masked slot's probability; the dials and the loss tower follow them."""
    probs = _mapping(probs, "probs", "slot name -> probability of the truth")
    if not all(isinstance(name, str) for name in probs):
        raise TypeError(f"probs' slot names must be strings, got {list(probs)}")
    sliders = [_probability_slider(name, p) for name, p in probs.items()]
    return Explorer(sliders,
                    lambda: plots.slots_and_tower({s.description: s.value for s in sliders}),
                    title="loss tower explorer")


def mask_picker(tokens: Sequence[str]) -> Explorer:
    """A toggle button per token: click to hide it; the picture shows M and what is read."""
    tokens = _labels(tokens, "tokens")
    buttons = [widgets.ToggleButton(value=False, description=f"{i + 1}: {t}",
                                    layout=widgets.Layout(width="auto"))
               for i, t in enumerate(tokens)]
    row = widgets.HBox(buttons)

    def draw() -> Figure:
        hidden = [i for i, b in enumerate(buttons) if b.value]
        fig = plots.reads_and_answers(tokens, hidden)
        shown = ", ".join(str(i + 1) for i in hidden)
        fig.suptitle(f"M = {{{shown}}}" if hidden else "M = {} (empty)", fontsize=12, x=0.02,
                     ha="left")
        return fig

    explorer = Explorer(buttons, draw, title="mask picker")
    explorer.children = (row, explorer.output)  # the buttons side by side
    return explorer
