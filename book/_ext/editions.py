"""A Sphinx extension for this book: a chapter's notebook links open its notebook edition.

The theme builds the Colab button, and the page's ``.ipynb`` download, from the page's own
source: ``notebooks/<chapter>.ipynb``, the chapter in MyST. Colab and a plain Jupyter show MyST
raw, with every solution in plain sight under its exercise. The notebook edition
(``editions/notebooks/``, written by ``python -m mlmlib.course.edition``) is the same chapter in
plain Markdown, solutions folded. This points the Colab button at it, and makes the download
serve it. A chapter missing from the edition is a warning, which fails the book's build
(``-W``): run ``make editions``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.util import logging

EDITION = "editions/notebooks"
logger = logging.getLogger(__name__)


def _edition_file(app, pagename: str) -> Path | None:
    """The notebook edition of a chapter page ``notebooks/<name>``, or None."""
    folder, _, name = pagename.rpartition("/")
    if folder != "notebooks":
        return None
    path = Path(app.srcdir) / EDITION / f"{name}.ipynb"
    if not path.is_file():
        logger.warning(f"{pagename}: no notebook edition at {EDITION}/{name}.ipynb "
                       "(run: make editions)")
        return None
    return path


def colab_opens_the_edition(app, pagename, templatename, context, doctree) -> None:
    if _edition_file(app, pagename) is None:
        return
    source = f"/{pagename}.ipynb"
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []) if isinstance(group, dict) else []:
            url = button.get("url", "")
            if button.get("text") == "Colab" and url.endswith(source):
                button["url"] = url[: -len(source)] + f"/{EDITION}/{pagename.split('/')[-1]}.ipynb"


def downloads_serve_the_edition(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for pagename in app.env.found_docs:
        edition = _edition_file(app, pagename)
        target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
        if edition is not None and target.is_file():
            shutil.copyfile(edition, target)


def setup(app):
    app.connect("html-page-context", colab_opens_the_edition, priority=600)  # after the theme
    app.connect("build-finished", downloads_serve_the_edition)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
