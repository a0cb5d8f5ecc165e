"""The course's trained mini BERT live in the page (widgets/js/ask.js and attention.js, made by
mlmlib.widgets.ask): "ask the model" beside the exact posterior, and its attention weights.

The browser tests put both figures in a page as a chapter's outputs carry them (the stored
model inside each output) and drive them as a reader does: type a sentence in the box, pick a
position. Every number the page draws carries its full value (``data-v``), and must equal
mlmlib's for the same sentence, on 60 typed sentences (one blank, several, twenty words,
capitals, a full stop against its word):

* the exact posterior's probabilities (:meth:`ToyWorld.posterior`), the stored model's (its
  softmax over the world's words, by ``MiniBert`` with the stored weights in float64, as the
  page computes), the entropy, the cross-entropy and the KL divergence
  (:func:`mlmlib.toyworld.compare_with_exact`): to 1e-6;
* every head's attention weights, from the blank and from a picked position: to ``MiniBert``'s
  (float32, as :func:`stored_toy_model` gives it) to 1e-5.

An error (an unknown word, no blank, too long, impossible) is a message in the page, never an
exception in the console; at a phone's width (390 px) nothing sticks out of the page or out of
a drawing; no request leaves the page; without JavaScript each figure shows its static picture.
The time of a redraw per keystroke is printed (not a pass mark). The Python tests at the end
(not marked ``browser``) check the functions' bad input and their static pictures.

Without Chromium or Playwright the browser tests skip with a message; with
``MLM_REQUIRE_BROWSER=1`` (``.ci/run`` sets it) they fail instead.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from test_live_bert import typed_sentences

from mlmlib.plots import alt_text
from mlmlib.toyworld import ToyWorld, compare_with_exact
from mlmlib.widgets import (
    live_ask_model,
    live_attention,
    read_sentence,
    toy_model_ids,
)

EXACT, FLOAT32 = 1e-6, 1e-5  # the largest |page - mlmlib|: the numbers, and attention (float32)
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def world():
    return ToyWorld()


SENTENCES = typed_sentences(10)


def _page(chromium, html: str, **options):
    """A new tab that shows ``html`` (the figures' outputs) and has mounted them; what went
    wrong (errors, requests that would leave the page) is recorded on the tab."""
    context = chromium.new_context(**options)
    tab = context.new_page()
    tab.problems, tab.requests = [], []
    tab.on("pageerror", lambda e: tab.problems.append(f"uncaught: {e}"))
    tab.on("console", lambda m: tab.problems.append(m.text) if m.type == "error" else None)
    tab.on("request", lambda r: None if r.url.startswith("data:") else tab.requests.append(r.url))
    context.route("**/*", lambda route: route.abort())  # nothing may leave the page
    tab.set_content(f"<html><head></head><body>{html}</body></html>")
    return context, tab


@pytest.fixture(scope="module")
def page(chromium, world):
    html = live_ask_model(world)._repr_html_() + live_attention()._repr_html_()
    context, tab = _page(chromium, html)
    for kind in ("ask", "attention"):
        tab.wait_for_selector(f'.mlm-live[data-kind="{kind}"][data-mounted] svg', timeout=10000)
    yield tab
    assert not tab.problems, tab.problems
    assert not tab.requests, f"requests that would leave the page: {tab.requests}"
    context.close()


def _root(tab, kind: str):
    return tab.locator(f'.mlm-live[data-kind="{kind}"]')


def _set(tab, kind: str, control: str, value: str) -> None:
    """What a reader's keystroke or pick does: the control's new value, and its input event."""
    _root(tab, kind).locator(f'[data-control="{control}"]').evaluate(
        "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); }", value)


def _numbers(tab, kind: str) -> dict[str, float]:
    pairs = _root(tab, kind).evaluate("r => Array.from(r.querySelectorAll('[data-q][data-v]'))"
                                      ".map(e => [e.dataset.q, e.dataset.v])")
    return {q: float(v) for q, v in pairs}


def _error(tab, kind: str) -> str | None:
    found = _root(tab, kind).locator('[data-q="error"]')
    return found.text_content() if found.count() else None


def _python(text: str, world, model64, vocab) -> dict:
    """What mlmlib says of a typed sentence: per blank, the exact posterior and the stored
    model's probabilities over the world's words (float64), and the three numbers."""
    words, masked = read_sentence(text)
    exact = world.posterior([world.words[0] if i in masked else w for i, w in enumerate(words)],
                            masked)
    ids, _ = toy_model_ids(text)
    with torch.no_grad():
        logits = model64(torch.tensor([ids]), score_all=True).logits[0]
    first = len(vocab) - world.vocab_size
    q = logits[[i + 1 for i in masked], first:].softmax(-1)
    seen = exact > 0
    entropy = torch.where(seen, -exact * exact.log(), torch.zeros_like(exact)).sum(1)
    cross = torch.where(seen, -exact * q.log(), torch.zeros_like(exact)).sum(1)
    return {"masked": masked, "exact": exact.numpy(), "model": q.numpy(),
            "entropy": entropy.numpy(), "cross": cross.numpy(),
            "kl": compare_with_exact(exact, q)["kl"].numpy()}


def _shown(numbers: dict[str, float], prefix: str) -> dict[str, float]:
    return {q.split(":", 1)[1]: v for q, v in numbers.items() if q.startswith(prefix)}


@pytest.mark.browser
def test_ask_the_model_shows_what_mlmlib_computes(page, world, models):
    _, model64, vocab = models
    top = 5  # the figure's (live_ask_model's default)
    worst, blanks = 0.0, 0
    for text in SENTENCES:
        _set(page, "ask", "sentence", text)
        assert _error(page, "ask") is None, (text, _error(page, "ask"))
        got, want = _numbers(page, "ask"), _python(text, world, model64, vocab)
        assert sum(q.startswith("kl-") for q in got) == len(want["masked"]), text
        for k in range(len(want["masked"])):
            blanks += 1
            for column in ("exact", "model"):
                shown, probs = _shown(got, f"{column}-{k}:"), want[column][k]
                assert len(shown) == min(top, int((probs > 0).sum())), (text, column, shown)
                values = np.array([probs[world.word_id[w]] for w in shown])
                worst = max(worst, float(np.abs(np.array(list(shown.values())) - values).max()))
                others = np.delete(probs, [world.word_id[w] for w in shown])
                assert values.min() >= others.max() - 1e-12, (text, column, "not the likeliest")
            for name in ("entropy", "cross", "kl"):
                worst = max(worst, abs(got[f"{name}-{k}"] - float(want[name][k])))
        assert worst <= EXACT, f"{text}: the page differs from mlmlib by {worst:.3g}"
    assert blanks >= 100 and len(SENTENCES) >= 50
    assert max(len(read_sentence(t)[0]) for t in SENTENCES) == world.max_len
    print(f"ask the model: {len(SENTENCES)} sentences, {blanks} blanks; largest |page - mlmlib| "
          f"{worst:.1e} (probabilities, entropy, cross-entropy, KL)")


@pytest.mark.browser
def test_the_attention_weights_are_minibert_s(page, models):
    model, model64, _ = models
    worst = {"float32": 0.0, "float64": 0.0}
    for n, text in enumerate(SENTENCES[::3]):
        _set(page, "attention", "sentence", text)
        ids, masked = toy_model_ids(text)
        with torch.no_grad():
            want = {name: torch.stack(m(torch.tensor([ids]), score_all=True,
                                        return_attention=True).attentions)[:, 0].double().numpy()
                    for name, m in (("float32", model), ("float64", model64))}
        layers, heads = want["float32"].shape[:2]
        for pick in ("blank", "0", str(len(ids) - 1), str(n % len(ids))):
            _set(page, "attention", "query", pick)
            query = masked[0] + 1 if pick == "blank" else int(pick)
            got = _numbers(page, "attention")
            rows = np.array([[[got[f"att-{layer}-{h}:{j}"] for j in range(len(ids))]
                              for h in range(heads)] for layer in range(layers)])
            for name, weights in want.items():
                worst[name] = max(worst[name], float(np.abs(rows - weights[:, :, query]).max()))
            assert np.allclose(rows.sum(-1), 1, atol=1e-12)
        _set(page, "attention", "query", "blank")
    assert worst["float32"] <= FLOAT32 and worst["float64"] <= 1e-9, worst
    print("attention: largest |page - MiniBert|:", {k: f"{v:.1e}" for k, v in worst.items()})


@pytest.mark.browser
def test_the_picker_follows_the_blank_and_keeps_a_picked_position(page):
    _set(page, "attention", "sentence", "the small ___ barked .")
    assert _root(page, "attention").locator('[data-say]').first.text_content().endswith(
        "[MASK] (position 3)")
    _set(page, "attention", "sentence", "___ small dog barked .")  # the blank moved: it follows
    assert _root(page, "attention").locator('[data-say]').first.text_content().endswith(
        "[MASK] (position 1)")
    _set(page, "attention", "query", "4")
    _set(page, "attention", "sentence", "___ small dog barked . ")  # the same tokens
    assert _root(page, "attention").locator('[data-control="query"]').input_value() == "4"
    _set(page, "attention", "sentence", "the ___ sat .")  # still has a position 4: kept
    assert "barked" not in _root(page, "attention").locator('[data-say]').first.text_content()
    assert _root(page, "attention").locator('[data-control="query"]').input_value() == "4"
    _set(page, "attention", "sentence", "___ .")  # 4 tokens, no position 4: the blank again
    assert _root(page, "attention").locator('[data-control="query"]').input_value() == "blank"


BAD = [("the small ___ meowed .", "'meowed' is not a word of the toy world"),
       ("the small ___ constructor .", "'constructor' is not a word"),
       ("the cat sat .", "no blank"),
       (" ".join(["the", "___"] * 10) + " .", "max_len = 20 words, this one 21"),
       ("   ", "type a sentence, e.g. the small ___ barked ."),
       ("The small ___ barked!", "'barked!' is not a word")]


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["ask", "attention"])
def test_an_error_is_said_in_the_page_not_thrown(page, kind):
    for text, said in [*BAD, *([("the ___ cat .", "impossible")] if kind == "ask" else [])]:
        _set(page, kind, "sentence", text)
        error = _error(page, kind)
        assert error and said in error, (kind, text, error)
        assert not _root(page, kind).locator("svg").count(), "a drawing beside the message"
        if "impossible" not in said and "type a sentence" not in said:
            with pytest.raises(ValueError) as info:
                toy_model_ids(text)
            assert error in str(info.value), (error, str(info.value))
    _set(page, kind, "sentence", "the ___ sat .")
    assert _error(page, kind) is None and _root(page, kind).locator("svg").count() == 1
    assert not page.problems, page.problems


LONG = "that silly ___ read your friendly hungry ___ ."  # long words in the columns


@pytest.mark.browser
def test_at_a_phones_width_nothing_sticks_out(chromium, world):
    html = live_ask_model(world, LONG, top=20)._repr_html_() + live_attention(LONG)._repr_html_()
    context, tab = _page(chromium, html, viewport=PHONE)
    try:
        twenty = next(t for t in SENTENCES if len(read_sentence(t)[0]) == world.max_len)
        for text in (LONG, twenty, "the small ___ meowed and then it ran far away from home ."):
            for kind in ("ask", "attention"):
                _set(tab, kind, "sentence", text)
                root = _root(tab, kind).bounding_box()
                assert root["x"] + root["width"] <= PHONE["width"] + 1, (kind, root)
                out = _root(tab, kind).evaluate("""r => {
                    const svg = r.querySelector('svg'), box = svg && svg.getBoundingClientRect();
                    const cut = box ? Array.from(svg.querySelectorAll('text')).filter((t) => {
                        const b = t.getBoundingClientRect();
                        return b.left < box.left - 1 || b.right > box.right + 1 ||
                            b.top < box.top - 1 || b.bottom > box.bottom + 1;
                    }).map((t) => t.textContent) : [];
                    const wide = Array.from(r.querySelectorAll('*'))
                        .filter((e) => e.getBoundingClientRect().right > innerWidth + 1)
                        .map((e) => e.tagName);
                    return {cut, wide};
                }""")
                assert not out["cut"], f"{kind}, {text!r}: text cut at the drawing's edge {out}"
                assert not out["wide"], f"{kind}, {text!r}: elements past the screen {out}"
                width = tab.evaluate("document.documentElement.scrollWidth")
                assert width <= PHONE["width"] + 1, f"{kind}: the page scrolls sideways ({width})"
        assert not tab.problems and not tab.requests, (tab.problems, tab.requests)
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_the_time_of_a_redraw_per_keystroke(chromium, world, device):
    """Not a pass mark: prints the time from a keystroke to the figure redrawn and laid out
    (the forward pass, the posterior, the drawing): 30 times on a 20-word sentence with 4
    blanks and on the 5-word example, and at every keystroke while the long one is typed."""
    twenty = next(t for t in SENTENCES if len(read_sentence(t)[0]) == world.max_len)
    html = live_ask_model(world)._repr_html_() + live_attention()._repr_html_()
    context, tab = _page(chromium, html, **({"viewport": PHONE} if device == "phone" else {}))
    try:
        said = []
        for kind in ("ask", "attention"):
            got = tab.evaluate("""([kind, texts]) => {
                const root = document.querySelector(`.mlm-live[data-kind="${kind}"]`);
                const box = root.querySelector('[data-control="sentence"]');
                const time = () => {  // one keystroke: its input event, then the layout
                    const start = performance.now();
                    box.dispatchEvent(new Event('input', {bubbles: true}));
                    void root.offsetHeight;
                    return performance.now() - start;
                };
                const typing = [];
                for (let n = 1; n <= texts[0].length; n++) {
                    box.value = texts[0].slice(0, n);
                    typing.push([time(), Boolean(root.querySelector('svg'))]);
                }
                const again = texts.map((text) => {
                    box.value = text;
                    return Array.from({length: 30}, time);
                });
                return {typing, again};
            }""", [kind, [twenty, "the small ___ barked ."]])
            long, short = got["again"]
            drawn = [ms for ms, drew in got["typing"] if drew]
            said.append(f"{kind}: 20 words, 4 blanks: median {np.median(long):.1f} ms (largest "
                        f"{max(long):.1f}); 5 words: median {np.median(short):.1f} ms; typing "
                        f"the 20 words, {len(drawn)} of {len(got['typing'])} keystrokes redrew "
                        f"(median {np.median(drawn):.1f} ms), the others showed a message")
            assert _error(tab, kind) is None
        print(f"redraw per keystroke ({device}, {twenty!r}): " + "; ".join(said))
        assert not tab.problems, tab.problems
    finally:
        context.close()


@pytest.mark.browser
def test_without_javascript_each_figure_shows_its_static_picture(chromium, world):
    html = live_ask_model(world)._repr_html_() + live_attention()._repr_html_()
    context = chromium.new_context(java_script_enabled=False)
    try:
        tab = context.new_page()
        tab.set_content(f"<html><body>{html}</body></html>")
        for kind in ("ask", "attention"):
            still = _root(tab, kind).locator(".mlm-static img")
            assert still.is_visible() and still.evaluate("i => i.complete && i.naturalWidth > 0")
            assert re.search(r"\d", still.get_attribute("alt"))
        assert tab.locator(".mlm-live svg").count() == 0
    finally:
        context.close()


# ------------------------------------------------------------------------ Python, no browser

def test_the_static_pictures_carry_mlmlib_s_numbers_rounded(world, models):
    _, model64, vocab = models
    fig = live_ask_model(world, "the ___ ___ barked .", top=3)
    want = _python("the ___ ___ barked .", world, model64, vocab)
    alt = alt_text(fig.static())
    for k in range(2):
        assert f"entropy {want['entropy'][k]:.4f} nats" in alt
        assert f"cross-entropy {want['cross'][k]:.4f} nats, KL {want['kl'][k]:.4f} nats" in alt
    assert fig.config["top"] == 3 and fig.config["world"]["words"] == world.words
    attention = live_attention("the small ___ barked .")
    alt = alt_text(attention.static())
    assert "from [MASK] (position 3, hatched)" in alt and alt.count("layer 1, head ") == 4


ASK_BAD = [
    (lambda: live_ask_model("world"), TypeError, "world", "ToyWorld"),
    (lambda: live_ask_model(ToyWorld(), ["the", "___"]), TypeError, "sentence", "string"),
    (lambda: live_ask_model(ToyWorld(), "the cat sat ."), ValueError, "no blank"),
    (lambda: live_ask_model(ToyWorld(), "the small ___ meowed ."), ValueError, "'meowed'"),
    (lambda: live_ask_model(ToyWorld(), "the ___ cat ."), ValueError, "impossible"),
    (lambda: live_ask_model(ToyWorld(), "the ___ " * 11), ValueError, "max_len = 20", "22"),
    (lambda: live_ask_model(ToyWorld(max_len=6), "the small ___ barked on the mat ."),
     ValueError, "max_len = 6"),
    (lambda: live_ask_model(ToyWorld(), "", top=5), ValueError, "no words"),
    (lambda: live_ask_model(ToyWorld(), top=0), ValueError, "top", "1 to 20"),
    (lambda: live_ask_model(ToyWorld(), top=21), ValueError, "top", "1 to 20"),
    (lambda: live_ask_model(ToyWorld(), top=True), ValueError, "top", "whole number"),
    (lambda: live_ask_model(ToyWorld(), top="5"), ValueError, "top", "'5'"),
    (lambda: live_attention(3), TypeError, "sentence", "string"),
    (lambda: live_attention("the cat sat ."), ValueError, "no blank"),
    (lambda: live_attention("the ___ meowed ."), ValueError, "'meowed'"),
    (lambda: live_attention("the ___ " * 11), ValueError, "max_len = 20", "22"),
]


@pytest.mark.parametrize(("call", "error", "words"), [(c, e, w) for c, e, *w in ASK_BAD])
def test_bad_input_ask_and_attention(refuses, call, error, words):
    refuses(call, error, *words)
