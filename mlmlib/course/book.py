"""mlmlib.course.book - the book as its configuration describes it: pages, numbers, addresses.

Does: read ``_config.yml``, ``_toc.yml``, the pages and ``book/references.bib`` of a clone of
the course, and answer what an edition of the chapters needs to know about the published book:
the pages in reading order, each page's title, the number the site gives each exercise and each
figure (Sphinx numbers each kind in its own sequence across the whole book, in reading order),
the site's address (``html.baseurl``, or GitHub Pages' address for ``repository.url``: a fork
changes the repository in one place and both follow) and a citation's author-year text.
Nothing is stored: the numbers are derived from the pages each time, so they follow when
chapters move.

Does not: build anything, or read the built site (``tests/test_editions.py`` checks that the
numbers derived here are the ones the built site shows).

>>> book = Book(ROOT_OF_THE_COURSE)                                     # doctest: +SKIP
>>> book.exercise_numbers()["ex-a-slot-loss"]                           # doctest: +SKIP
9
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from urllib.parse import urlparse

import yaml

__all__ = ["Book", "cell_text", "directives"]

#: A MyST directive's opening fence: three or more backticks or colons, then ``{name}``.
OPENING = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<argument>[^\n]*)$",
                     re.M)


def cell_text(cell: dict) -> str:
    """A notebook cell's source as one string (nbformat allows a list of lines)."""
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def directives(text: str):
    """Each MyST directive of ``text``, in order: ``(start, end, name, argument, options, body)``.

    ``start``/``end`` delimit the whole block (fences included, the newline after the closing
    fence too); options are the ``:key: value`` lines right after the opening fence. A fence
    closes at the first line of the same character, at least as long, at the same depth: an
    exercise in four backticks may hold a code block in three.
    """
    at = 0
    while (match := OPENING.search(text, at)) is not None:
        fence = match["fence"]
        closing = re.compile(rf"^{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        end = closing.search(text, match.end())
        if end is None:
            raise ValueError(f"the {{{match['name']}}} directive opened here is never closed: "
                             f"{text[match.start():match.start() + 60]!r}")
        inner = text[match.end():end.start()].removeprefix("\n")
        options, lines = {}, inner.split("\n")
        while lines and (option := re.match(r"^:([\w-]+):\s*(.*)$", lines[0])):
            options[option[1]] = option[2].strip()
            lines.pop(0)
        stop = end.end() + (1 if text[end.end():end.end() + 1] == "\n" else 0)
        yield match.start(), stop, match["name"], match["argument"].strip(), options, \
            "\n".join(lines).strip("\n")
        at = stop


class Book:
    """The course at ``root`` (a clone): its configuration, pages and references."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        for name in ("_config.yml", "_toc.yml"):
            if not (self.root / name).is_file():
                raise ValueError(f"{self.root} is not a clone of the course: it has no {name}")
        self.config = yaml.safe_load((self.root / "_config.yml").read_text(encoding="utf-8"))
        self.toc = yaml.safe_load((self.root / "_toc.yml").read_text(encoding="utf-8"))

    # ------------------------------------------------------------------ addresses
    @functools.cached_property
    def repository(self) -> tuple[str, str, str]:
        """``(owner, name, branch)`` of ``repository.url`` (a GitHub repository)."""
        repo = self.config["repository"]
        owner, name = urlparse(repo["url"]).path.strip("/").split("/")[:2]
        return owner, name, repo.get("branch", "main")

    @functools.cached_property
    def site_url(self) -> str:
        """The published site's address, ending in ``/``."""
        url = (self.config.get("html") or {}).get("baseurl")
        if not url:
            owner, name, _ = self.repository
            url = f"https://{owner.lower()}.github.io/{name}/"
        return url.rstrip("/") + "/"

    def page_url(self, page: str, anchor: str = "") -> str:
        """The site's address of ``page`` (a path from the root without suffix)."""
        return f"{self.site_url}{page}.html" + (f"#{anchor}" if anchor else "")

    def colab_url(self, path: str) -> str:
        """Colab's address of the notebook at ``path`` (from the root) on the branch."""
        owner, name, branch = self.repository
        return f"https://colab.research.google.com/github/{owner}/{name}/blob/{branch}/{path}"

    # ------------------------------------------------------------------ pages
    @functools.cached_property
    def pages(self) -> list[str]:
        """Every page of ``_toc.yml`` in reading order, as paths from the root without suffix."""
        pages = [self.toc["root"]]

        def walk(entries):
            for entry in entries or []:
                if "file" in entry:
                    pages.append(entry["file"])
                walk(entry.get("sections"))
                walk(entry.get("chapters"))

        walk(self.toc.get("parts"))
        walk(self.toc.get("chapters"))
        return pages

    def path(self, page: str) -> Path:
        """The source file of ``page``: its notebook or its Markdown file."""
        for suffix in (".ipynb", ".md"):
            if (self.root / f"{page}{suffix}").is_file():
                return self.root / f"{page}{suffix}"
        raise ValueError(f"the page {page!r} of _toc.yml has no .ipynb or .md file")

    @functools.cache  # noqa: B019 - a Book lives as long as one edition run
    def cells(self, page: str) -> tuple[dict, ...]:
        """The page's cells; a Markdown page is one Markdown cell."""
        path = self.path(page)
        if path.suffix == ".md":
            return ({"cell_type": "markdown", "source": path.read_text(encoding="utf-8"),
                     "metadata": {}},)
        return tuple(json.loads(path.read_text(encoding="utf-8"))["cells"])

    def title(self, page: str) -> str:
        """The page's title: its first level-1 heading, as plain text."""
        for cell in self.cells(page):
            if cell["cell_type"] == "markdown":
                heading = re.search(r"^# (.+)$", cell_text(cell), re.M)
                if heading:
                    return re.sub(r"`([^`]*)`", r"\1", heading[1]).strip()
        return page.rsplit("/", 1)[-1]

    def resolve(self, target: str, page: str) -> str:
        """The page a ``{doc}`` role of ``page`` names (relative, or absolute from the root)."""
        if target.startswith("/"):
            return target.lstrip("/")
        parts = [*page.split("/")[:-1]]
        for part in target.split("/"):
            if part == "..":
                parts.pop()
            elif part != ".":
                parts.append(part)
        return "/".join(parts)

    # ------------------------------------------------------------------ numbers
    def _numbered(self, name: str, figures: bool) -> dict[str, int]:
        found = {}
        for page in self.pages:
            for cell in self.cells(page):
                if cell["cell_type"] == "markdown":
                    for *_, kind, _, options, _ in directives(cell_text(cell)):
                        if kind == name and "label" in options and "nonumber" not in options:
                            found[options["label"]] = len(found) + 1
                elif figures:
                    figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
                    if figure.get("name"):
                        found[figure["name"]] = len(found) + 1
        return found

    @functools.cached_property
    def _exercises(self) -> dict[str, int]:
        return self._numbered("exercise", figures=False)

    @functools.cached_property
    def _figures(self) -> dict[str, int]:
        return self._numbered("figure", figures=True)

    def exercise_numbers(self) -> dict[str, int]:
        """``{label: number}`` of every exercise, as the site numbers them (1, 2, ... in order)."""
        return dict(self._exercises)

    def figure_numbers(self) -> dict[str, int]:
        """``{name: number}`` of every named figure, as the site numbers them."""
        return dict(self._figures)

    def exercises(self, page: str) -> dict[str, str]:
        """``{label: statement}`` of the page's exercises, in order (the statement in MyST)."""
        return {options["label"]: body for cell in self.cells(page)
                if cell["cell_type"] == "markdown"
                for *_, kind, _, options, body in directives(cell_text(cell))
                if kind == "exercise" and "label" in options}

    # ------------------------------------------------------------------ references
    @functools.cached_property
    def _references(self) -> dict[str, str]:
        text = (self.root / "book" / "references.bib").read_text(encoding="utf-8")
        found = {}
        for entry in re.finditer(r"@\w+\{([^,\s]+),(.*?)\n\}", text, re.S):
            fields = dict(re.findall(r"(\w+)\s*=\s*\{(.*?)\},?\s*$", entry[2], re.M))
            authors = [a.split(",")[0].strip(" {}") for a in fields["author"].split(" and ")]
            names = (authors[0] if len(authors) == 1 else
                     f"{authors[0]} and {authors[1]}" if len(authors) == 2 else
                     f"{authors[0]} et al.")
            found[entry[1]] = f"{names}, {fields['year']}"
        return found

    def citation(self, key: str) -> str:
        """``key``'s author-year text, as the site prints it: ``Devlin et al., 2019``."""
        try:
            return self._references[key]
        except KeyError:
            raise ValueError(f"{{cite}}`{key}`: no such key in book/references.bib") from None
