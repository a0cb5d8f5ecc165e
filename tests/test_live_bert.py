"""The mini BERT's forward pass in the page (widgets/js/bert.js, bertio.js), called in Chromium on
the stored toy model and compared with MiniBert's.

The weights travel as an output carries them: :func:`mlmlib.widgets.toy_model_blob` inside a
``<script type="application/json">`` of the page, decoded there by ``bertio.js``. Typed
sentences (one blank, several, twenty words, capitals, a full stop against its word) are read
by the page and by :func:`mlmlib.widgets.toy_model_ids`, and must give the same ids; the page's
scores at every position, its probabilities (softmax over the toy world's words) and every
head's attention weights must equal MiniBert's (float32, as :func:`stored_toy_model` gives it)
to 1e-5, and those of a float64 copy of it to 1e-9: the page computes in 64-bit floats.

Without Chromium or Playwright these tests skip with a message; with ``MLM_REQUIRE_BROWSER=1``
(``.ci/run`` sets it) they fail instead.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mlmlib.toyworld import ToyWorld
from mlmlib.widgets import (
    live_posterior,
    script,
    toy_model_blob,
    toy_model_ids,
)

pytestmark = pytest.mark.browser

FLOAT32, FLOAT64 = 1e-5, 1e-9  # the largest |page - MiniBert| allowed, float32's and float64's
EXAMPLE = "the small ___ barked ."


@pytest.fixture(scope="module")
def page(chromium):
    """A page that carries the stored model as an output would, and has run the live script:
    ``window.model`` is the decoded model, ``window.mlmLive.bert`` the forward pass."""
    context = chromium.new_context()
    tab = context.new_page()
    errors = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.set_content('<html><head></head><body><script type="application/json" id="toy-model">'
                    f"{toy_model_blob()}</script></body></html>")
    tab.add_script_tag(content=script())
    tab.evaluate("window.model = window.mlmLive.bert.decode("
                 "document.getElementById('toy-model').textContent)")
    yield tab
    assert not errors, errors
    context.close()


def _typed(rng: np.random.Generator, words: list[str]) -> str:
    """``words`` as a reader might type them: capitals here and there, a full stop against its
    word, one or two spaces between the others."""
    out = ""
    for w in words:
        w = w.upper() if rng.random() < 0.15 else w.capitalize() if rng.random() < 0.15 else w
        out += ("" if w == "." and rng.random() < 0.6 else " " * int(rng.integers(1, 3))) + w
    return out


def typed_sentences(seed: int = 0) -> list[str]:
    """60 typed sentences: a few written out, the rest drawn from the toy world with 1 to 4
    blanks, and one of its longest (20 words); ``seed`` picks the draw (tests/test_live_ask.py
    uses another)."""
    world, rng = ToyWorld(), np.random.default_rng(seed)
    texts = ["The small ___ barked.", "the cat sat on the ___ .", "___ small dog barked .",
             "The ___ CHASED a ball.", "my teacher read the old ___.", "the ___ ___ ___ ."]
    drawn = world.sample(3000, rng=seed + 1)
    longest = next(s for s in drawn if len(s) == world.max_len)
    for words in [longest, *drawn[:53]]:
        hide = sorted({int(i) for i in rng.integers(0, len(words), int(rng.integers(1, 5)))})
        blanks = rng.choice(["___", "_", "[MASK]", "[mask]"], len(hide))
        texts.append(_typed(rng, [str(blanks[hide.index(i)]) if i in hide else w
                                  for i, w in enumerate(words)]))
    return texts


SENTENCES = typed_sentences()


def _rule() -> dict:
    return {"rule": live_posterior(ToyWorld(), EXAMPLE).config["rule"], "example": EXAMPLE}


def _close(got, want, tolerance: float, what: str) -> float:
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, f"{what}: shapes {got.shape} and {want.shape}"
    worst = float(np.abs(got - want).max())
    assert worst <= tolerance, f"{what}: the page differs by {worst:.3g} (> {tolerance:g})"
    return worst


def test_the_page_decodes_the_stored_weights_exactly(page, models):
    model, _, vocab = models
    got = page.evaluate("""() => ({vocab: window.model.vocab,
        tensors: Object.fromEntries(Object.entries(window.model.tensors)
                                    .map(([name, t]) => [name, t.flat(2)]))})""")
    assert got["vocab"] == vocab
    state = model.state_dict()
    assert sorted(got["tensors"]) == sorted(state)
    for name, values in got["tensors"].items():
        assert np.array_equal(np.array(values), state[name].double().numpy().ravel()), name


def test_the_page_reads_a_sentence_into_the_ids_python_gives(page):
    assert len(SENTENCES) >= 50
    got = page.evaluate("([texts, settings]) => texts.map((t) => "
                        "window.mlmLive.bert.read(window.model, t, settings))",
                        [SENTENCES, _rule()])
    for text, read in zip(SENTENCES, got, strict=True):
        ids, masked = toy_model_ids(text)
        assert (read["ids"], read["masked"], read["error"]) == (ids, masked, None), text
    assert max(len(r["ids"]) for r in got) == 22  # a 20-word sentence, [CLS] and [SEP]
    assert {len(r["masked"]) for r in got} >= {1, 2, 3, 4}


BAD = ["the small ___ meowed .", "the cat sat .", "the ___ " * 11, "   ", "[cls] ___ .",
       "The small ___ barked!"]


def test_the_page_refuses_what_python_refuses_in_the_same_words(page):
    got = page.evaluate("([texts, settings]) => texts.map((t) => "
                        "window.mlmLive.bert.read(window.model, t, settings).error)",
                        [BAD, _rule()])
    for text, error in zip(BAD, got, strict=True):
        with pytest.raises(ValueError) as info:
            toy_model_ids(text)
        assert error, text
        assert error in str(info.value) or error.startswith("type a sentence, e.g. "), \
            (text, error, str(info.value))


def test_the_pages_forward_pass_is_minibert_s(page, models):
    model, model64, _ = models
    ids = [toy_model_ids(text)[0] for text in SENTENCES]
    got = page.evaluate("""(all) => all.map((ids) => {
        const bert = window.mlmLive.bert, out = bert.forward(window.model, ids);
        return {logits: out.logits, attention: out.attention,
                probs: out.logits.map((row) => bert.wordProbs(window.model, row))};
    })""", ids)
    start = model.config.vocab_size - len(ToyWorld().words)  # the world's words, after specials
    worst = {}
    for sentence, out in zip(ids, got, strict=True):
        x = torch.tensor([sentence])
        for name, m, tolerance in (("float32", model, FLOAT32), ("float64", model64, FLOAT64)):
            with torch.no_grad():
                logits = m(x, score_all=True).logits[0]
                explicit = m(x, score_all=True, return_attention=True)
            want = {"logits": logits, "probs": logits[:, start:].double().softmax(-1),
                    "attention": torch.stack(explicit.attentions)[:, 0]}
            for what, value in want.items():
                w = _close(out[what], value.double().numpy(), tolerance,
                           f"{what} ({name}) of {sentence}")
                worst[name, what] = max(worst.get((name, what), 0.0), w)
    print("largest |page - MiniBert|:", {f"{a} {b}": f"{w:.1e}" for (a, b), w in worst.items()})


def test_the_pages_erf_is_pythons(page):
    xs = [0.0, 1e-300, 1e-10, 0.5, 1.0, 2.5, 5.999, 6.0, 7.5, 40.0, -0.3, -3.2, -6.5, math.inf]
    xs += [float(x) for x in np.random.default_rng(2).normal(0, 3, 2000)]
    got = page.evaluate("(xs) => xs.map((x) => window.mlmLive.bert.erf(x))", xs)
    want = [math.erf(x) for x in xs]
    _close(got, want, 3e-15, "erf")  # exp(-x^2) carries x^2's rounding: about x^2 * 2^-53


def test_the_time_of_one_forward_pass(page):
    """Not a pass mark: prints the time of one forward pass in the page (20 words and 5)."""
    long_ids, _ = toy_model_ids(SENTENCES[6])
    short_ids, _ = toy_model_ids(SENTENCES[0])
    times = page.evaluate("""(all) => all.map((ids) => {
        const bert = window.mlmLive.bert;
        for (let i = 0; i < 5; i++) bert.forward(window.model, ids);  // warm up
        const start = performance.now();
        for (let i = 0; i < 100; i++) bert.forward(window.model, ids);
        return (performance.now() - start) / 100;
    })""", [long_ids, short_ids])
    decode = page.evaluate("""() => {
        const text = document.getElementById('toy-model').textContent, start = performance.now();
        window.mlmLive.bert.decode(text);
        return performance.now() - start;
    }""")
    print(f"one forward pass: {times[0]:.2f} ms ({len(long_ids)} tokens), {times[1]:.2f} ms "
          f"({len(short_ids)} tokens); decoding the weights: {decode:.1f} ms")
    assert len(long_ids) == 22 and all(t > 0 for t in times)
