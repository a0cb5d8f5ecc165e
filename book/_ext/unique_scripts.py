"""A Sphinx extension for this book: write each inline <script> once per page.

Sphinx 7.4 (the newest Jupyter Book 1 allows) writes an inline script twice when an extension
adds it after the builder has started: once as registered (file name ``''``) and once as added
(file name ``None``), which its duplicate check treats as different. sphinx-thebe's
``const THEBE_JS_URL = ...`` then runs twice, and the second run is a JavaScript error on every
page (found by tests/test_site.py). This keeps the first of each identical script.
"""

from __future__ import annotations


def _key(script) -> tuple:
    attributes = getattr(script, "attributes", {})
    return (getattr(script, "filename", script) or None, tuple(sorted(attributes.items())))


def drop_repeated_scripts(app, pagename, templatename, context, doctree) -> None:
    seen, kept = set(), []
    for script in context.get("script_files", []):
        key = _key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", drop_repeated_scripts, priority=900)  # after the others
    return {"parallel_read_safe": True, "parallel_write_safe": True}
