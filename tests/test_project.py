"""Tests of the project: packaging files agree, imports point one way, modules state their scope."""

import ast
import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "mlmlib"
# conda-forge names that differ from PyPI's
CONDA_TO_PYPI = {"pytorch": "torch"}


def _split(spec: str) -> tuple[str, str]:
    """'jupyter-book>=1.0.4,<2' -> ('jupyter-book', '>=1.0.4,<2'), names normalised."""
    name, rest = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", spec).groups()
    name = re.sub(r"[-_.]+", "-", name).lower()
    return CONDA_TO_PYPI.get(name, name), rest.replace(" ", "")


def test_environment_yml_lists_what_pyproject_lists():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        pip_specs += extra
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_specs = [d for d in env["dependencies"] if isinstance(d, str)]
    from_pip = [s for d in env["dependencies"] if isinstance(d, dict) for s in d.get("pip", [])
                if not s.startswith("-")]  # packages conda-forge lacks, installed by pip
    conda = dict(_split(s) for s in conda_specs + from_pip
                 if not s.startswith(("python", "pip")))
    pip = dict(_split(s) for s in pip_specs)
    assert conda == pip
    python = [s for s in conda_specs if s.startswith("python")]
    assert python == ["python=3.11"]


def test_constraints_pin_every_requirement_exactly():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[_split(name)[0]] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted += extra
    for spec in wanted:
        assert _split(spec)[0] in pins, f"{spec} is not pinned in constraints.txt"
    assert pins["torch"] == "2.13.0"


def _mlmlib_imports(path: Path) -> set[str]:
    """The top-level mlmlib modules or subpackages that ``path`` imports ("plots", "loss", ...)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "mlmlib" and node.level == 0:
            names |= {f"mlmlib.{a.name}" for a in node.names}  # from mlmlib import plots
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path.name}: use absolute imports (from mlmlib.x import y)")
    return {n.split(".")[1] for n in names if n.startswith("mlmlib.")}


# Who may import whom (CONTRIBUTING.md): loss and masking use no other stage; model may use loss;
# train uses model and the data; nothing in the core imports plots, widgets or exercises. Every
# module may use _checks (seeds, whole numbers, lists), which imports no other part.
ALLOWED = {
    "constants": set(),
    "_checks": set(),  # the argument checks every stage shares, like constants: a leaf
    "_model_inputs": {"constants"},  # MiniBert's input checks, apart from the model's maths
    "loss": {"constants"},
    "masking": {"constants"},
    "model": {"constants", "loss", "_model_inputs"},
    "byhand": {"constants", "loss", "model", "toyworld", "train"},  # step.py: a tiny run
    "tokenizer": {"constants"},
    "toyworld": set(),
    "probe": set(),  # a linear probe: torch and the argument checks only
    "scaling": set(),  # a scaling law's fit: numpy, torch and the argument checks only
    "seeds": set(),  # a paired difference over seeds: the argument checks only
    "corpora": {"constants", "tokenizer", "masking"},
    "train": {"constants", "loss", "masking", "model", "tokenizer", "corpora", "toyworld",
              "hf"},  # hf: Hugging Face's model behind MiniBert's call, for the benchmarks
    "hf": {"constants", "model", "tokenizer"},
    "plots": {"constants", "loss", "masking"},
    "widgets": {"plots", "constants", "loss", "masking", "toyworld",
                "model"},  # model: the stored toy model comes back as a MiniBert
    "exercises": {"constants", "loss", "masking", "probe", "seeds"},
    "course": {"exercises", "plots"},  # the teaching side: editions (figures' alt), grading
}


# Every file of the library: the top-level modules and those of the subpackages (a module that
# passes ~400 lines becomes a subpackage, one module per part of the book: mlmlib/plots/...).
SOURCES = sorted(LIB.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(LIB).as_posix())
def test_imports_point_one_way_and_modules_say_their_scope(path):
    parts = path.relative_to(LIB).with_suffix("").parts
    if parts == ("__init__",):
        assert not _mlmlib_imports(path), "importing mlmlib alone must stay light"
        return
    stage = parts[0]  # mlmlib/plots/walkthrough.py belongs to "plots"
    dotted = ".".join(["mlmlib", *(parts[:-1] if parts[-1] == "__init__" else parts)])
    assert stage in ALLOWED, f"new module {stage}: add its allowed imports to ALLOWED"
    inside = {stage} if len(parts) > 1 else set()  # a subpackage's modules import each other
    assert _mlmlib_imports(path) <= ALLOWED[stage] | inside | {"_checks"}
    doc = ast.get_docstring(ast.parse(path.read_text()))
    assert doc and doc.startswith(f"{dotted} - "), f"open with '{dotted} - <scope>'"
    assert "Does not" in doc, "say what the module does not do"


def test_subpackages_are_packages():
    """A folder of modules in mlmlib has an __init__.py, so that pip install . ships it."""
    for folder in [p for p in LIB.rglob("*") if p.is_dir() and p.name != "__pycache__"]:
        if any(folder.glob("*.py")):
            assert (folder / "__init__.py").exists(), f"{folder.relative_to(ROOT)}: no __init__.py"


def test_one_ignore_value():
    """-100 is written once, as IGNORE_INDEX in constants.py; code elsewhere uses the name."""

    def literal_minus_100(node):
        return (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
                and isinstance(node.operand, ast.Constant) and node.operand.value == 100)

    hits = sorted(p.relative_to(LIB).as_posix() for p in SOURCES
                  if any(literal_minus_100(n) for n in ast.walk(ast.parse(p.read_text()))))
    assert hits == ["constants.py"], hits
