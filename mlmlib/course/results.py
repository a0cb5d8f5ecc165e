"""mlmlib.course.results - the stored results the chapters read, wherever the chapter is opened.

Does: find ``bench/results/`` of the course's clone (where the benchmark scripts store what they
measured) from the folder a notebook runs in, whatever its depth: a chapter in ``notebooks/``,
its edition in ``editions/notebooks/``, a student's copy unpacked anywhere in the clone, or
Colab's ``/content/mlm-course/notebooks``. It looks in the current folder and each folder above
it, then beside the ``mlmlib`` that was imported (an editable install of the clone).

Does not: measure or write anything (the scripts under ``bench/`` do), or download results.

>>> results_folder().name
'results'
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["results_folder", "stored_result"]


def results_folder(start: Path | str | None = None) -> Path:
    """The clone's ``bench/results`` folder, looked for from ``start`` (the current folder)."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents, Path(__file__).resolve().parents[2]):
        if (folder / "bench" / "results").is_dir():
            return folder / "bench" / "results"
    raise FileNotFoundError(f"no bench/results folder in {here} or above it: open the chapter "
                            "from inside a clone of the course")


def stored_result(name: str, start: Path | str | None = None) -> dict:
    """The JSON a benchmark stored as ``bench/results/<name>`` (``"lab.json"``, say)."""
    if not isinstance(name, str) or not name.endswith(".json") or "/" in name:
        raise ValueError(f"name must be a file name in bench/results such as 'lab.json', got "
                         f"{name!r}")
    path = results_folder(start) / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: run the benchmark that writes it")
    return json.loads(path.read_text(encoding="utf-8"))
