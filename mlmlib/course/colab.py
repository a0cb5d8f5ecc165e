"""mlmlib.course.colab - the hidden set-up cell every chapter opens with, for Google Colab.

Does: write the cell's source for the repository and branch of ``_config.yml`` (a fork
changes ``repository.url`` and the cell follows): on Colab it clones the course, installs
``mlmlib`` from it and moves into its ``notebooks/`` folder, so that the files a chapter reads
are where it looks; anywhere else it does nothing. :data:`METADATA` hides it on the site,
folds it in JupyterLab and shows only its title in Colab; :data:`TRAINING` names the chapters
that train, whose metadata asks Colab for a GPU. ``python tools/colab_cells.py`` puts the
cell into every chapter; ``tests/test_colab.py`` checks that each has it.

Does not: run on Colab, or write any file itself.

>>> print(setup_source("https://github.com/you/your-fork", "main").splitlines()[0])
#@title Set-up for Google Colab (does nothing anywhere else) { display-mode: "form" }
"""

from __future__ import annotations

__all__ = ["METADATA", "TITLE", "TRAINING", "setup_source"]

TITLE = "#@title Set-up for Google Colab"
#: The chapters that train, whose notebooks ask Colab for a GPU runtime.
TRAINING = ("training_2_toy_world", "training_3_real_text")
#: The set-up cell's metadata, which hides it on the site, in Colab and in JupyterLab.
METADATA = {"tags": ["remove-cell"],  # not on the site
            "cellView": "form",  # Colab shows only the title
            "jupyter": {"source_hidden": True}}  # JupyterLab folds it
_TEMPLATE = '''\
#@title Set-up for Google Colab (does nothing anywhere else) {{ display-mode: "form" }}
import sys

if "google.colab" in sys.modules:  # fetch the course, install mlmlib, work in notebooks/
    import importlib.util
    import os
    import subprocess

    if not os.path.isdir("/content/mlm-course"):
        subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", "{branch}",
                        "{url}", "/content/mlm-course"], check=True)
    if importlib.util.find_spec("mlmlib") is None:  # again if an earlier install failed
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                        "/content/mlm-course"], check=True)
    os.chdir("/content/mlm-course/notebooks")'''


def setup_source(url: str, branch: str) -> str:
    """The set-up cell's source for the repository at ``url`` (GitHub) and ``branch``."""
    for name, value in (("url", url), ("branch", branch)):
        if not isinstance(value, str) or not value or '"' in value:
            raise ValueError(f"{name} must be a repository's {name} (text without quotes), got "
                             f"{value!r}")
    return _TEMPLATE.format(url=url, branch=branch)
