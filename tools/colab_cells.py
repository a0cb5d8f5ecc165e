"""Put the Colab set-up cell (mlmlib.course.colab) at the top of every chapter.

Run it after changing ``repository.url`` or ``repository.branch`` in ``_config.yml`` (a fork),
or after adding a chapter; then ``make editions``. It updates the cell in place, or inserts it
(shifting the chapter's execution counts so that they stay in order), and gives the training
chapters Colab's GPU request. ``tests/test_colab.py`` fails until every chapter agrees.

    python tools/colab_cells.py
"""

from __future__ import annotations

import json
from pathlib import Path

from mlmlib.course.book import Book
from mlmlib.course.colab import METADATA, TITLE, TRAINING, setup_source

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    book = Book(ROOT)
    owner, name, branch = book.repository
    source = setup_source(book.config["repository"]["url"], branch)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
        if cells and "".join(cells[0]["source"]).startswith(TITLE):
            cells[0]["source"] = source.splitlines(keepends=True)
        else:
            first = min((c["execution_count"] for c in cells
                         if c["cell_type"] == "code" and c.get("execution_count")), default=1)
            for c in cells:  # keep the counts in order: the new cell runs first
                if c["cell_type"] == "code" and c.get("execution_count"):
                    c["execution_count"] += 1
            cells.insert(0, {"cell_type": "code", "execution_count": first, "id": "colab-setup",
                             "metadata": dict(METADATA), "outputs": [],
                             "source": source.splitlines(keepends=True)})
        if path.stem in TRAINING:
            nb["metadata"]["accelerator"] = "GPU"
            nb["metadata"]["colab"] = {"gpuType": "T4", "provenance": []}
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print("updated", path.relative_to(ROOT))
    print(f"repository {owner}/{name}, branch {branch}: now run make editions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
