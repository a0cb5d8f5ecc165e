"""A Sphinx extension for this book: a notebook's figure gets its alt text from its own PNG.

Why it exists: MyST-NB turns a cell's ``image/png`` output into an image node with no ``alt``,
and Sphinx's HTML writer then uses the image's path as its alt text (``../_images/2ad6...png``),
which is what a screen reader would read out. The course's figures carry their description in
the PNG itself, as its standard ``tEXt``/``iTXt`` chunk ``Description`` (see
``mlmlib.plots.alt_text``, which computes it from the figure's data, and ``mlmlib.plots.png_alt``,
which reads it). This transform reads it back while each page is read, so the site (and any
other builder) writes the figure's own description.

Only notebook outputs are touched: MyST-NB writes each one to the build's ``jupyter_execute``
folder under the SHA-256 of its bytes, so an image whose file is named ``<sha256>.png`` and whose
bytes have that hash is one. An ``alt`` set in the cell's metadata (``mystnb.image.alt``) wins.
A PNG without a description keeps Sphinx's default; ``tests/test_site.py`` finds it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PurePosixPath

from docutils import nodes
from sphinx.transforms import SphinxTransform

from mlmlib.plots import png_alt

OUTPUT_NAME = re.compile(r"([0-9a-f]{64})\.png")  # MyST-NB's name for an output: its SHA-256


class AltFromPng(SphinxTransform):
    """Set each notebook figure's ``alt`` to the description its PNG carries."""

    default_priority = 700  # after MyST-NB has rendered the outputs (while parsing)

    def apply(self, **kwargs) -> None:
        for node in self.document.findall(nodes.image):
            if node.get("alt"):
                continue
            data = self._output_png(node.get("uri", ""))
            alt = png_alt(data) if data else None
            if alt:
                node["alt"] = alt

    def _output_png(self, uri: str) -> bytes | None:
        """The bytes of a notebook output's PNG that ``uri`` names, or None for any other."""
        name = OUTPUT_NAME.fullmatch(PurePosixPath(uri).name)
        if name is None or "://" in uri or uri.startswith("data:"):
            return None
        # "/_build/jupyter_execute/<hash>.png": relative to the source folder (a leading "/"),
        # to the page's folder (no "/"), or a path on disk (MyST-NB without Sphinx)
        path = Path(uri) if Path(uri).is_file() else Path(self.env.relfn2path(uri)[1])
        if not path.is_file():
            return None
        data = path.read_bytes()
        return data if hashlib.sha256(data).hexdigest() == name.group(1) else None


def setup(app):
    app.add_transform(AltFromPng)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
