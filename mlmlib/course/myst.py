"""mlmlib.course.myst - the chapters' MyST markup, written as Markdown that any notebook shows.

Does: rewrite the MyST a chapter's Markdown uses into CommonMark and the HTML every notebook
viewer renders (JupyterLab, Colab, GitHub), so that a chapter reads right outside the site:

* ``{doc}`` becomes a link to the published site's page, titled as the page is;
* ``{cite}`` becomes the author-year text the site shows, linked to the site's references;
* an ``{exercise}`` becomes a heading numbered as the site numbers it (its label kept in an
  HTML comment, where the grader and the tests find it);
* an ``{admonition}`` with ``:class: dropdown`` (the recall questions) becomes ``<details>``,
  folded until its ``<summary>`` is clicked; any other admonition becomes a titled blockquote.

Solutions span several cells, so :mod:`mlmlib.course.edition` folds them; :func:`fold` writes
the ``<details>`` block it puts them in.

Does not: touch mathematics (``$...$`` and ``$$...$$``: Jupyter and Colab typeset them), or
accept markup it does not know: an unknown directive or role raises ``ValueError``, so that new
markup in a chapter cannot slip into the editions raw.

>>> print(admonition("Why?", "Because.", dropdown=True))
<details>
<summary><b>Why?</b></summary>
<BLANKLINE>
Because.
<BLANKLINE>
</details>
"""

from __future__ import annotations

import html
import re

from mlmlib.course.book import Book, directives

__all__ = ["admonition", "convert", "exercise_marker", "fold"]

#: A role (``{doc}`target` ``), or a code span, which keeps its text as it is.
ROLE_OR_CODE = re.compile(r"\{(?P<name>[\w:-]+)\}`(?P<content>[^`]*)`"
                          r"|(?P<ticks>`+)[^`].*?(?P=ticks)", re.S)


def exercise_marker(label: str) -> str:
    """The HTML comment that carries an exercise's label in an edition."""
    return f"<!-- exercise: {label} -->"


def admonition(title: str, body: str, dropdown: bool) -> str:
    """A recall question folded in ``<details>``, or a note as a titled blockquote."""
    if dropdown:
        return f"<details>\n<summary><b>{title}</b></summary>\n\n{body.strip()}\n\n</details>"
    quoted = "\n".join(f"> {line}".rstrip() for line in body.strip().split("\n"))
    return f"> **{title}**\n>\n{quoted}"


def fold(summary: str, parts: list[str]) -> str:
    """``parts`` (Markdown) folded under ``summary``, hidden until it is clicked."""
    inside = "\n\n".join(p.strip() for p in parts if p.strip())
    return f"<details>\n<summary><b>{html.escape(summary)}</b></summary>\n\n{inside}\n\n</details>"


def _role(match: re.Match, book: Book, page: str) -> str:
    name, content = match["name"], match["content"]
    if name == "doc":
        titled = re.fullmatch(r"(?P<title>.*?)\s*<(?P<target>[^>]+)>", content, re.S)
        target = book.resolve(titled["target"] if titled else content.strip(), page)
        if target not in book.pages:
            raise ValueError(f"{page}: {{doc}}`{content}` names {target!r}, not a page of "
                             "_toc.yml")
        title = titled["title"] if titled else book.title(target)
        return f"[{title}]({book.page_url(target)})"
    if name in ("cite", "cite:p", "cite:t"):
        keys = [k.strip() for k in content.split(",") if k.strip()]
        refs = book.page_url("book/references")
        return "[" + "; ".join(f"[{book.citation(k)}]({refs})" for k in keys) + "]"
    raise ValueError(f"{page}: the role {{{name}}} has no plain-Markdown form; add one to "
                     "mlmlib.course.myst")


def _roles(text: str, book: Book, page: str) -> str:
    """Rewrite every role; a code span keeps its text (a role written in one is an example)."""
    return ROLE_OR_CODE.sub(lambda m: m[0] if m["ticks"] else _role(m, book, page), text)


def convert(text: str, book: Book, page: str) -> str:
    """``text`` (a chapter's Markdown, without solution fences) as plain Markdown."""
    out, at = [], 0
    for start, end, name, argument, options, body in directives(text):
        out.append(text[at:start])
        body = convert(body, book, page)
        if name == "exercise":
            number = book.exercise_numbers().get(options.get("label", ""))
            if number is None:
                raise ValueError(f"{page}: an exercise without a :label: has no number")
            heading = f"### Exercise {number}" + (f": {argument}" if argument else "")
            out.append(f"{exercise_marker(options['label'])}\n{heading}\n\n{body}\n\n")
        elif name == "admonition":
            classes = options.get("class", "").split()
            out.append(admonition(argument, body, dropdown="dropdown" in classes) + "\n\n")
        else:
            raise ValueError(f"{page}: the directive {{{name}}} has no plain-Markdown form; "
                             "add one to mlmlib.course.myst")
        at = end
    out.append(text[at:])
    return re.sub(r"\n{3,}", "\n\n", _roles("".join(out), book, page)).strip()
