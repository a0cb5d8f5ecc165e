"""The live figures' maths, called directly in Chromium and compared with mlmlib's.

The page computes what it draws with widgets/js/maths.js: softmax, -log p, the loss of several
slots, the reading of a typed sentence, and the toy world's posterior by forward-backward. Here
the script (as a live output carries it, :func:`mlmlib.widgets.script`) is loaded into a blank
page, and each function is called through ``page.evaluate`` in batches, on thousands of random
inputs, against :mod:`mlmlib.loss`, :func:`mlmlib.widgets.read_sentence` and
:meth:`mlmlib.toyworld.ToyWorld.posterior`. A number must agree to 1e-12, relative (the same
formulas, in 64-bit floats; a sum may be added in another order). tests/test_site.py checks the
figures end to end.

Without Chromium or Playwright these tests skip with a message; with ``MLM_REQUIRE_BROWSER=1``
(``.ci/run`` sets it) they fail instead.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlmlib.loss import neg_log, softmax
from mlmlib.toyworld import ToyWorld
from mlmlib.widgets import live_posterior, read_sentence, script

pytestmark = pytest.mark.browser

TOLERANCE = 1e-12  # relative
N = 2000  # random inputs per function (the posterior: 1000 sentences, and 500 impossible ones)


@pytest.fixture(scope="module")
def page(chromium):
    """A blank page that has run the live figures' script: window.mlmLive.maths."""
    context = chromium.new_context()
    tab = context.new_page()
    errors = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.set_content("<html><head></head><body></body></html>")
    tab.add_script_tag(content=script())
    assert tab.evaluate("Object.keys(window.mlmLive.maths).sort()") == [
        "negLog", "posterior", "readSentence", "slotsLoss", "softmax", "sum"]
    yield tab
    assert not errors, errors
    context.close()


def _close(page_values, exact, what: str) -> None:
    """Every number of the page within TOLERANCE of mlmlib's, relative."""
    got, want = np.asarray(page_values, dtype=float), np.asarray(exact, dtype=float)
    assert got.shape == want.shape, f"{what}: shapes {got.shape} and {want.shape}"
    bad = np.abs(got - want) > TOLERANCE * np.abs(want)
    if bad.any():
        k = np.flatnonzero(bad)[0]
        raise AssertionError(f"{what}: page {got.flat[k]!r}, mlmlib {want.flat[k]!r} "
                             f"({bad.sum()} of {bad.size} differ)")


def _call(page, function: str, batch: list):
    """``window.mlmLive.maths[function](...args)`` for each list of args in ``batch``."""
    return page.evaluate("([name, batch]) => batch.map((args) => "
                         "window.mlmLive.maths[name](...args))", [function, batch])


def test_softmax_as_mlmlib(page):
    rng = np.random.default_rng(0)
    rows = []
    for k in range(N):
        n = int(rng.integers(1, 13))
        row = {0: rng.uniform(-50, 50, n), 1: rng.normal(0, 3, n),
               2: np.round(rng.uniform(-5, 5, n), 1), 3: rng.integers(-3, 4, n) * 1.0}[k % 4]
        rows.append([float(x) for x in row])  # the last two kinds: steps of 0.1, and ties
    got = _call(page, "softmax", [[row] for row in rows])
    for row, probs in zip(rows, got, strict=True):
        _close(probs, softmax(np.array(row)), f"softmax({row})")


def test_neg_log_as_mlmlib(page):
    rng = np.random.default_rng(1)
    ps = np.concatenate([rng.uniform(0, 1, N // 4), 10.0 ** rng.uniform(-300, 0, N // 4),
                         np.round(rng.uniform(0.001, 1, N // 4), 3),
                         1 - rng.uniform(0, 1e-6, N // 4), [1.0, 0.5, 1e-12, 5e-324]])
    ps = [float(p) for p in ps if p > 0]
    got = _call(page, "negLog", [[p] for p in ps])
    _close(got, neg_log(np.array(ps)), "-log p")


def test_the_loss_of_several_slots_as_mlmlib(page):
    rng = np.random.default_rng(2)
    lists = []
    for k in range(N):
        n = int(rng.integers(0, 9))
        ps = (rng.uniform(0.001, 1, n) if k % 3 else np.full(n, 10.0 ** rng.uniform(-12, 0)))
        lists.append([float(p) for p in ps])  # every third: n slots at one P (Step 7's figure)
    got = _call(page, "slotsLoss", [[ps] for ps in lists])
    want = [float(neg_log(np.array(ps)).sum()) if ps else 0.0 for ps in lists]
    _close(got, want, "the sum of -log p")
    assert got[[len(ps) for ps in lists].index(0)] == 0  # no slot: the empty sum, exactly 0


def _typed(rng: np.random.Generator, words: list[str]) -> str:
    """``words`` as a reader might type them: spaces or tabs between, capitals here and there,
    a full stop against its word."""
    out = ""
    for w in words:
        w = w.upper() if rng.random() < 0.1 else w.capitalize() if rng.random() < 0.1 else w
        glue = "" if w == "." and rng.random() < 0.5 else str(rng.choice([" ", "  ", "\t"]))
        out += glue + w
    return out


def test_a_typed_sentence_is_read_as_python_reads_it(page):
    rng = np.random.default_rng(3)
    alphabet = [*"abcXYZ._ \t\n\u00a0[]", "___", "[MASK]", "[mask]", "É", "ß", "Σ", "İ", "ǅ",
                "\u2003", "\u00e9", "ﬀ", "Ω"]
    texts = ["".join(rng.choice(alphabet, int(rng.integers(0, 25)))) for _ in range(N)]
    texts += ["The small ___ barked.", "", "   ", "a.b..c", "[MASK] . _ ___ ____"]
    rule = live_posterior(ToyWorld(), "the ___ sat .").config["rule"]
    got = _call(page, "readSentence", [[t, rule] for t in texts])
    for text, read in zip(texts, got, strict=True):
        words, masked = read_sentence(text)
        assert (read["words"], read["masked"]) == (words, masked), repr(text)


def test_the_toy_worlds_posterior_as_toy_world_posterior(page):
    world, rng = ToyWorld(), np.random.default_rng(4)
    tables = live_posterior(world, "the ___ sat .").config
    rule = tables["rule"]
    texts, exact = [], []
    for words in world.sample(1000, rng=5):
        hide = [i for i in range(len(words)) if rng.random() < 0.3] or \
            [int(rng.integers(len(words)))]
        blanks = [str(rng.choice(rule["blanks"])) for _ in hide]
        shown = [blanks[hide.index(i)] if i in hide else w for i, w in enumerate(words)]
        texts.append(_typed(rng, shown))
        read, masked = read_sentence(texts[-1])
        assert masked == hide  # typed and read back: the same sentence
        exact.append(world.posterior([world.words[0] if i in masked else w
                                      for i, w in enumerate(read)], masked).numpy())
    got = page.evaluate("""([world, rule, texts]) => texts.map((text) => {
        const {words, masked} = window.mlmLive.maths.readSentence(text, rule);
        return window.mlmLive.maths.posterior(world, words, masked);
    })""", [tables["world"], rule, texts])
    for text, page_rows, rows in zip(texts, got, exact, strict=True):
        _close(page_rows, rows, f"the posterior of {text!r}")
    assert sum(len(rows) for rows in exact) > 1500  # many blanks, one to several a sentence


def test_an_impossible_sentence_is_refused_as_toy_world_refuses_it(page):
    world, rng = ToyWorld(), np.random.default_rng(6)
    sentences = []
    for words in world.sample(N // 4, rng=7):  # one word swapped for any: often impossible
        words[int(rng.integers(len(words)))] = str(rng.choice(world.words))
        masked = sorted({int(i) for i in rng.integers(0, len(words), int(rng.integers(1, 3)))})
        sentences.append((words, masked))
    refused = []
    for words, masked in sentences:
        try:
            world.posterior(words, masked)
            refused.append(False)
        except ValueError as error:
            assert "impossible" in str(error)
            refused.append(True)
    got = page.evaluate("""([world, sentences]) => sentences.map(([words, masked]) => {
        try { window.mlmLive.maths.posterior(world, words, masked); return false; }
        catch (err) { return err.message.includes("impossible"); }
    })""", [live_posterior(world, "the ___ sat .").config["world"], sentences])
    assert got == refused
    assert 0 < sum(refused) < len(refused)  # both kinds were drawn
