"""Shared test helpers: ``refuses``, the check behind every bad-input case; the browser
(``chromium``) and ``unavailable`` for the tests that need it or the built book; the toy world
and ``make_trainer`` for the trainer's tests.

A bad-input case is ``refuses(call, error, *words)``: calling ``call()`` must raise ``error``
(a ``ValueError``/``TypeError`` subclass, say), from a line inside mlmlib itself (not from deep
inside torch or transformers), with a message that names the problem: every one of ``words``
appears in it (case-insensitive). The bad-input suites are the tests named ``test_bad_input*``:
``pytest -k bad_input`` runs them all.
"""

import os
import shutil
from dataclasses import fields
from pathlib import Path

import pytest

from mlmlib.model import BertConfig, MiniBert
from mlmlib.toyworld import ToyWorld
from mlmlib.train import Recipe, RunOptions, Trainer, toy_data

LIB = Path(__file__).resolve().parent.parent / "mlmlib"
# CI (.ci/run) installs Chromium and sets this: a missing browser or build is then a failure
REQUIRED = os.environ.get("MLM_REQUIRE_BROWSER") == "1"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def _unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (MLM_REQUIRE_BROWSER=1 makes this a failure)")
    pytest.skip(f"{reason}; skipped here (CI installs Chromium, builds the book and runs it)")


@pytest.fixture(scope="session")
def unavailable():
    """``unavailable(reason)``: skip a test that needs the browser or the built book, saying
    why; under CI (``MLM_REQUIRE_BROWSER=1``) fail instead."""
    return _unavailable


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium (Debian's), driven by Playwright; the browser tests share one."""
    executable = os.environ.get("CHROMIUM") or shutil.which("chromium") or \
        shutil.which("chromium-browser")
    if not executable:
        _unavailable("no Chromium found (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


def _refuses(call, error, *words, inside_mlmlib=True):
    with pytest.raises(error) as info:
        call()
    message = str(info.value).lower()
    missing = [w for w in words if w.lower() not in message]
    assert not missing, f"{type(info.value).__name__}({message!r}) does not name {missing}"
    if inside_mlmlib:
        raised_at = Path(str(info.traceback[-1].path)).resolve()
        assert LIB in raised_at.parents, f"raised inside {raised_at}, not by mlmlib's own check"
    return info.value


@pytest.fixture
def refuses():
    """``refuses(call, error, *words)``: see the module docstring."""
    return _refuses


@pytest.fixture(scope="module")
def toy():
    """A small toy-world training set and a one-block model config for it (the trainer tests)."""
    data, vocab, _, _ = toy_data(ToyWorld(), n_train=2000, n_eval=200, seed=0)
    model_config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_layers=1, num_heads=2,
                              intermediate_size=128, max_position=22)
    return data, model_config


@pytest.fixture(scope="session")
def make_trainer():
    """``make_trainer(model_config, data, **settings)``: a Trainer of a MiniBert (its weights
    from the recipe's seed), the settings split into the Recipe and the RunOptions they are
    fields of."""
    names = {f.name for f in fields(Recipe)}

    def make(model_config, data, **settings):
        recipe = Recipe(**{k: v for k, v in settings.items() if k in names})
        run = RunOptions(**{k: v for k, v in settings.items() if k not in names})
        return Trainer(MiniBert(model_config, rng=recipe.seed), data, recipe, run)

    return make


@pytest.fixture(scope="module")
def models():
    """The stored toy model as ``stored_toy_model`` gives it (float32), a float64 copy, and its
    vocabulary (tests/test_live_bert.py and tests/test_live_ask.py)."""
    import copy

    from mlmlib.widgets import stored_toy_model

    model, vocab = stored_toy_model()
    return model, copy.deepcopy(model).double(), vocab
