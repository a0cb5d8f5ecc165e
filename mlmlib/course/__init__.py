"""mlmlib.course - the course's own commands: its editions for notebook readers, and grading.

Does: what a reader outside the site and a teacher run, from a clone of the course:

* :mod:`mlmlib.course.book` - the book as ``_config.yml`` and ``_toc.yml`` describe it: pages in
  reading order, titles, the numbers the site gives exercises and figures, the site's address;
* :mod:`mlmlib.course.myst` - the chapters' MyST markup rewritten as plain Markdown;
* :mod:`mlmlib.course.edition` - ``python -m mlmlib.course.edition``: the notebook edition and
  the student edition (``editions/``), the answer key and the downloads the site offers;
* :mod:`mlmlib.course.colab` - the hidden set-up cell every chapter opens with, for Colab;
* :mod:`mlmlib.course.results` - the stored benchmark results a chapter reads, found from
  wherever the chapter is opened;
* :mod:`mlmlib.course.grade` - ``python -m mlmlib.course.grade SUBMISSIONS/ --out DIR``: a
  class's notebooks run and checked by the course's own checkers, into a CSV and HTML gradebook;

Does not: define a checker (:mod:`mlmlib.exercises` holds them; the grader calls them), or
belong to the core: nothing in the core imports it.

>>> from mlmlib.course.myst import admonition
>>> print(admonition("Note", "Read both sides.", dropdown=False))
> **Note**
>
> Read both sides.
"""
