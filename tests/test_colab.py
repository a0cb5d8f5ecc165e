"""Every chapter opens with the same hidden Colab set-up cell, pointing at _config.yml's repository.

On Colab the cell clones the course's repository (the URL and branch in ``_config.yml``), installs
``mlmlib`` from it and moves into its ``notebooks/`` folder, so files the chapters read are there.
Anywhere else it does nothing. After changing the repository in ``_config.yml`` (a fork), rewrite
the cell in every notebook with::

    python tests/test_colab.py --write
"""

import json
import os
import sys
import types
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TRAINING = {"training_2_toy_world.ipynb", "training_3_real_text.ipynb"}  # the ones that train
TEMPLATE = '''\
#@title Set-up for Google Colab (does nothing anywhere else) {{ display-mode: "form" }}
import sys

if "google.colab" in sys.modules:  # fetch the course, install mlmlib, work in notebooks/
    import os
    import subprocess

    if not os.path.isdir("/content/mlm-course"):
        subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", "{branch}",
                        "{url}", "/content/mlm-course"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                        "/content/mlm-course"], check=True)
    os.chdir("/content/mlm-course/notebooks")'''
METADATA = {"tags": ["remove-cell"],  # not on the site
            "cellView": "form",  # Colab shows only the title
            "jupyter": {"source_hidden": True}}  # JupyterLab folds it


def repository() -> tuple[str, str]:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    return config["url"], config.get("branch", "main")


def expected_source() -> str:
    url, branch = repository()
    return TEMPLATE.format(url=url, branch=branch)


def _source(cell) -> str:
    return "".join(cell["source"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_is_the_colab_set_up(path):
    nb = json.loads(path.read_text())
    cell = nb["cells"][0]
    assert cell["cell_type"] == "code", f"{path.name}: the first cell must be the Colab set-up"
    assert _source(cell) == expected_source(), (
        f"{path.name}: the Colab cell differs from tests/test_colab.py's template or from "
        "_config.yml's repository; run: python tests/test_colab.py --write")
    assert "remove-cell" in cell["metadata"].get("tags", [])
    assert cell["metadata"].get("cellView") == "form"
    assert not cell.get("outputs"), "the set-up cell prints nothing outside Colab"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_training_chapters_ask_colab_for_a_gpu(path):
    meta = json.loads(path.read_text())["metadata"]
    if path.name in TRAINING:
        assert meta.get("accelerator") == "GPU"
        assert meta.get("colab", {}).get("gpuType")
        source = "".join(_source(c) for c in json.loads(path.read_text())["cells"])
        assert "pick_device()" in source, "a training chapter picks its budget by device"
    else:
        assert "accelerator" not in meta, "only the training chapters need a GPU"


def test_the_cell_does_nothing_outside_colab(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr("subprocess.run", lambda *a, **k: calls.append(a))
    exec(expected_source(), {})
    assert calls == [] and Path.cwd() == tmp_path


def test_on_colab_it_clones_the_configured_repository_and_installs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    calls, moves = [], []
    monkeypatch.setattr("subprocess.run", lambda cmd, check: calls.append(cmd))
    monkeypatch.setattr(os.path, "isdir", lambda p: False)
    monkeypatch.setattr(os, "chdir", moves.append)
    exec(expected_source(), {})
    url, branch = repository()
    clone, install = calls
    assert clone[:2] == ["git", "clone"] and url in clone and branch in clone
    assert install[1:4] == ["-m", "pip", "install"] and install[-1] == "/content/mlm-course"
    assert moves == ["/content/mlm-course/notebooks"]


def test_the_repository_is_a_github_url():
    url, _ = repository()
    assert url.startswith("https://github.com/") and len(url.split("/")) == 5, url


def write() -> None:
    """Insert or update the set-up cell at the top of every notebook."""
    source = expected_source()
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        cells = nb["cells"]
        if cells and _source(cells[0]).startswith("#@title Set-up for Google Colab"):
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
        if path.name in TRAINING:
            nb["metadata"]["accelerator"] = "GPU"
            nb["metadata"]["colab"] = {"gpuType": "T4", "provenance": []}
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False))
        print("updated", path.relative_to(ROOT))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/test_colab.py --write")
    write()
