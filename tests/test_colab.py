"""Every chapter opens with the same hidden Colab set-up cell, pointing at _config.yml's repository.

On Colab the cell clones the course's repository (the URL and branch in ``_config.yml``), installs
``mlmlib`` from it and moves into its ``notebooks/`` folder, so files the chapters read are there.
Anywhere else it does nothing. After changing the repository in ``_config.yml`` (a fork), rewrite
the cell in every notebook with ``python tools/colab_cells.py`` (the cell's source is
``mlmlib.course.colab``'s).
"""

import json
import os
import sys
import types
from pathlib import Path

import pytest
import yaml

from mlmlib.course import colab

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TRAINING = {f"{name}.ipynb" for name in colab.TRAINING}  # the ones that train


def repository() -> tuple[str, str]:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    return config["url"], config.get("branch", "main")


def expected_source() -> str:
    return colab.setup_source(*repository())


def _source(cell) -> str:
    return "".join(cell["source"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_is_the_colab_set_up(path):
    nb = json.loads(path.read_text())
    cell = nb["cells"][0]
    assert cell["cell_type"] == "code", f"{path.name}: the first cell must be the Colab set-up"
    assert _source(cell) == expected_source(), (
        f"{path.name}: the Colab cell differs from mlmlib.course.colab's or from _config.yml's "
        "repository; run: python tools/colab_cells.py")
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
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # mlmlib not installed
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
