"""The NumPy forward pass by hand equals MiniBert: its scores and every intermediate."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from mlmlib import byhand
from mlmlib.loss import softmax
from mlmlib.model import BertConfig, MiniBert


def make(seed=0, **changes):
    settings = dict(vocab_size=17, hidden_size=8, num_layers=2, num_heads=2,
                    intermediate_size=16, max_position=12, dropout=0.0, attention_dropout=0.0,
                    initializer_range=0.5)
    settings.update(changes)
    return MiniBert(BertConfig(**settings), rng=seed).eval()


IDS = np.array([2, 5, 4, 7, 9, 11, 3, 0, 0])
KEEP = np.array([1, 1, 1, 1, 1, 1, 1, 0, 0])
SEGMENTS = np.array([0, 0, 0, 0, 1, 1, 1, 0, 0])


def theirs(model, ids, keep=None, segments=None, hooks=False):
    """MiniBert's scores (T, V), attention weights and, with hooks, each layer's output."""
    seen = {}
    modules = {"embeddings": model.ln_embeddings,
               **{f"block {k}": b for k, b in enumerate(model.blocks)}}
    handles = [m.register_forward_hook(lambda mod, i, out, n=n: seen.update(
        {n: (out[0] if isinstance(out, tuple) else out)[0].double().numpy()}))
        for n, m in modules.items()] if hooks else []
    kwargs = {}
    if keep is not None:
        kwargs["attention_mask"] = torch.tensor(keep)[None]
    if segments is not None:
        kwargs["token_type_ids"] = torch.tensor(segments)[None]
    with torch.no_grad():
        out = model(torch.tensor(ids)[None], return_attention=True, **kwargs)
    for h in handles:
        h.remove()
    return out.logits[0].double().numpy(), [a[0].double().numpy() for a in out.attentions], seen


CONFIGS = [
    dict(),  # 2 layers, 2 heads
    dict(num_layers=1, num_heads=1),
    dict(num_layers=3, num_heads=4),
    dict(hidden_size=12, num_heads=3, intermediate_size=20),
    dict(layer_norm_eps=1e-5, initializer_range=0.02),
    dict(position_embeddings=False),
    dict(head_transform=False),
    dict(head_bias=False),
    dict(tie_embeddings=False),
    dict(head_transform=False, head_bias=False),
]


@pytest.mark.parametrize("changes", CONFIGS, ids=lambda c: ",".join(c) or "default")
@pytest.mark.parametrize("inputs", ["plain", "padding", "segments"])
def test_forward_equals_minibert_in_float64(changes, inputs):
    """In 64-bit numbers the two computations agree to the last digits."""
    model = make(**changes).double()
    keep = KEEP if inputs != "plain" else None
    segments = SEGMENTS if inputs == "segments" else None
    logits, record = byhand.forward(byhand.weights_of(model), IDS, keep, segments)
    ref, attentions, seen = theirs(model, IDS, keep, segments, hooks=True)
    assert logits.shape == (len(IDS), 17)
    assert np.abs(logits - ref).max() < 1e-10
    assert np.abs(record["embeddings"] - seen["embeddings"]).max() < 1e-10
    assert len(record["layers"]) == model.config.num_layers
    for k, layer in enumerate(record["layers"]):
        assert np.abs(layer["out"] - seen[f"block {k}"]).max() < 1e-10
        for h, head in enumerate(layer["attention"]["heads"]):
            assert np.abs(head["weights"] - attentions[k][h]).max() < 1e-10
    assert np.array_equal(record["h"], record["layers"][-1]["out"])


def test_fill_biases_makes_every_bias_and_gain_random_and_the_pass_still_agrees():
    model = make()
    filled = byhand.fill_biases(model, seed=4)
    names = dict(model.named_parameters())
    assert "head_bias" in filled and "blocks.1.ln_ffn.weight" in filled
    assert "blocks.0.attention.qkv.bias" in filled and "word_embeddings.weight" not in filled
    for name in filled:  # gains no longer 1, biases and shifts no longer 0, all different
        values = names[name].detach().numpy()
        fresh = 1.0 if name.endswith(".weight") else 0.0
        assert np.all(values != fresh) and len(np.unique(values)) == values.size
    again = make()
    byhand.fill_biases(again, seed=4)
    assert all(torch.equal(names[n], dict(again.named_parameters())[n]) for n in filled)
    model64 = make().double()
    byhand.fill_biases(model64, seed=4)
    w = byhand.weights_of(model64)
    logits, record = byhand.forward(w, IDS, KEEP, SEGMENTS)
    ref, _, seen = theirs(model64, IDS, KEEP, SEGMENTS, hooks=True)
    assert np.abs(logits - ref).max() < 1e-10
    assert np.abs(record["embeddings"] - seen["embeddings"]).max() < 1e-10


def test_model_intermediates_and_largest_differences():
    model = make(seed=5).double()
    byhand.fill_biases(model, seed=1)
    _, record = byhand.forward(byhand.weights_of(model), IDS, KEEP)
    seen = byhand.model_intermediates(model, IDS, KEEP)
    ref, attentions, hooked = theirs(model, IDS, KEEP, hooks=True)
    assert np.array_equal(seen["logits"], ref)
    assert np.array_equal(seen["block 1"], hooked["block 1"])
    assert np.array_equal(seen["attention 0"], attentions[0])
    gaps = byhand.largest_differences(record, seen)
    assert list(gaps) == ["embeddings", "attention 0", "block 0", "attention 1", "block 1",
                          "logits"]
    assert max(gaps.values()) < 1e-10
    assert not model._forward_hooks and not model.blocks[0]._forward_hooks  # hooks removed
    with pytest.raises(ValueError, match="lacks"):
        byhand.largest_differences(record, {"embeddings": seen["embeddings"]})


def test_hf_logits_equal_the_model():
    pytest.importorskip("transformers")
    from mlmlib.hf import export_hf

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{k}" for k in range(12)]
    model = make(seed=2)
    byhand.fill_biases(model, seed=3)
    hf = byhand.hf_logits(export_hf, model, vocab, IDS, KEEP)
    logits, _ = byhand.forward(byhand.weights_of(model), IDS, KEEP)
    assert hf.shape == logits.shape and np.abs(hf - logits).max() < 1e-4


def test_gelu_tanh_is_close_to_the_exact_gelu():
    z = np.linspace(-6, 6, 12001)
    gap = np.abs(byhand.gelu(z) - byhand.gelu_tanh(z))
    assert 4e-4 < gap.max() < 5e-4
    assert np.allclose(byhand.gelu_tanh(z), torch.nn.functional.gelu(
        torch.tensor(z), approximate="tanh").numpy(), atol=1e-12)


def test_without_positions_copies_only_the_config():
    w = byhand.weights_of(make())
    w2 = byhand.without_positions(w)
    assert w2["config"]["position_embeddings"] is False and w["config"]["position_embeddings"]
    assert w2["word_embeddings.weight"] is w["word_embeddings.weight"]


def test_range_verdict_and_ablation_verdict():
    assert byhand.range_verdict([1, 2, 3], [3.5, 4, 5]) == "worse"
    assert byhand.range_verdict([1, 2, 3], [0.1, 0.2, 0.9]) == "better"
    assert byhand.range_verdict([1, 2, 3], [0.5, 2.5, 4]) is None
    assert byhand.range_verdict([1, 2, 3], [3, 4, 5]) is None  # touching is overlapping
    full = np.array([[5, 4, 3, 2, 1.0], [5, 4, 3, 2, 1.1]])
    held = byhand.ablation_verdict(full, full + 0.5, last=3)
    assert held == {"at_end": "worse", "held": 3, "last": 3, "verdict": "worse"}
    late = full.copy()
    late[:, -1] -= 0.5  # better only at the very end
    r = byhand.ablation_verdict(full, late, last=3)
    assert r["at_end"] == "better" and r["held"] == 1 and r["verdict"] == "no clear difference"
    r = byhand.ablation_verdict(full, full[::-1], last=2)
    assert r["at_end"] is None and r["verdict"] == "no clear difference"
    with pytest.raises(ValueError, match="last"):
        byhand.ablation_verdict(full, full, last=6)
    with pytest.raises(ValueError, match="5 entries"):
        byhand.ablation_verdict(full, full[:, :3])


def test_still_falling_measures_the_last_drop_of_each_seed():
    curves = np.array([[5, 4, 3, 2.5, 2.0], [5, 4, 3, 2.0, 2.0], [5, 4, 2, 2.2, 2.4]])
    r = byhand.still_falling(curves, last=3)
    assert r["drops"] == pytest.approx([1.0, 1.0, -0.4]) and r["last"] == 3
    assert r["every_seed"] is False  # the third seed rose at the end
    assert byhand.still_falling(curves[:1], last=2)["every_seed"] is True
    with pytest.raises(ValueError, match="last"):
        byhand.still_falling(curves, last=1)
    with pytest.raises(ValueError, match="last"):
        byhand.still_falling(curves, last=6)


def test_forward_equals_the_float32_model_to_its_rounding():
    model = make(seed=3)
    logits, _ = byhand.forward(byhand.weights_of(model), IDS, KEEP, SEGMENTS)
    ref, _, _ = theirs(model, IDS, KEEP, SEGMENTS)
    assert np.abs(logits - ref).max() < 1e-5


def test_padding_changes_nothing_for_the_real_tokens():
    w = byhand.weights_of(make())
    short, _ = byhand.forward(w, IDS[:7])
    padded, record = byhand.forward(w, IDS, KEEP)
    assert np.allclose(short, padded[:7], atol=1e-12)
    for layer in record["layers"]:
        for head in layer["attention"]["heads"]:
            assert np.all(head["weights"][:, KEEP == 0] == 0.0)
            assert np.allclose(head["weights"].sum(axis=1), 1.0)


def test_without_positions_reordering_the_words_only_reorders_the_outputs():
    w = byhand.weights_of(make(position_embeddings=False))
    order = [0, 5, 4, 3, 2, 1, 6]
    out, _ = byhand.forward(w, IDS[:7])
    out_reordered, _ = byhand.forward(w, IDS[:7][order])
    assert np.allclose(out_reordered, out[order], atol=1e-12)
    with_pos = byhand.weights_of(make())
    out, _ = byhand.forward(with_pos, IDS[:7])
    assert not np.allclose(byhand.forward(with_pos, IDS[:7][order])[0], out[order])


def test_the_steps_by_their_equations():
    g = np.random.default_rng(0)
    x = g.normal(size=(5, 4))
    ln = byhand.layer_norm(x, np.ones(4), np.zeros(4), eps=1e-12)
    assert np.allclose(ln.mean(axis=1), 0) and np.allclose(ln.var(axis=1), 1)
    assert np.allclose(ln, torch.nn.functional.layer_norm(torch.tensor(x), (4,),
                                                               eps=1e-12).numpy())
    assert np.allclose(byhand.gelu(x), torch.nn.functional.gelu(torch.tensor(x)).numpy(),
                       atol=1e-15)
    q, k = g.normal(size=(5, 2)), g.normal(size=(5, 2))
    s = byhand.attention_scores(q, k)
    assert np.isclose(s[1, 3], q[1] @ k[3] / np.sqrt(2))
    a = byhand.attention_weights(s, [1, 1, 1, 0, 0])
    assert np.allclose(a[:, :3], softmax(s[:, :3])) and np.all(a[:, 3:] == 0)
    W, b = g.normal(size=(3, 4)), g.normal(size=3)
    assert np.allclose(byhand.linear(x, W, b), torch.nn.functional.linear(
        torch.tensor(x), torch.tensor(W), torch.tensor(b)).numpy())


def test_split_heads_cuts_the_fused_matrix_as_the_model_does():
    model = make(hidden_size=6, num_heads=3, intermediate_size=8)
    w = byhand.weights_of(model)
    heads = byhand.split_heads(w["blocks.0.attention.qkv.weight"],
                               w["blocks.0.attention.qkv.bias"], 3)
    assert len(heads) == 3 and all(part.shape[0] == 2 for part in heads[0])
    W = w["blocks.0.attention.qkv.weight"]
    assert np.array_equal(heads[1][0], W[2:4]) and np.array_equal(heads[1][2], W[8:10])
    assert np.array_equal(heads[2][4], W[16:18])  # value rows of head 2


def test_weights_of_names_and_config():
    model = make()
    w = byhand.weights_of(model)
    assert {"word_embeddings.weight", "head_bias", "blocks.1.ffn_out.bias"} <= w.keys()
    assert all(a.dtype == np.float64 for n, a in w.items() if n != "config")
    assert w["config"]["num_heads"] == 2 and w["config"]["tie_embeddings"] is True
    count = sum(a.size for n, a in w.items() if n != "config")
    assert count == model.num_parameters()


def test_the_module_never_changes_its_input():
    w = byhand.weights_of(make())
    before = {n: a.copy() for n, a in w.items() if n != "config"}
    ids = IDS.copy()
    byhand.forward(w, ids, KEEP)
    assert np.array_equal(ids, IDS)
    assert all(np.array_equal(before[n], w[n]) for n in before)


# ----------------------------------------------------------------------------- bad input

W = byhand.weights_of(make())
MISSING = {n: a for n, a in W.items() if n != "blocks.1.ffn_in.weight"}
NO_CONFIG = {n: a for n, a in W.items() if n != "config"}


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: byhand.weights_of("model"), TypeError, ["minibert"]),
        (lambda: byhand.weights_of(make().train()), ValueError, ["training mode", "eval"]),
        (lambda: byhand.forward([1, 2], IDS), TypeError, ["weights", "dict"]),
        (lambda: byhand.forward(NO_CONFIG, IDS), ValueError, ["config"]),
        (lambda: byhand.forward(MISSING, IDS), ValueError, ["blocks.1.ffn_in.weight"]),
        (lambda: byhand.forward(W, IDS[None]), ValueError, ["one sentence", "1-d"]),
        (lambda: byhand.forward(W, []), TypeError, ["ids", "whole numbers"]),
        (lambda: byhand.forward(W, np.array([], dtype=int)), ValueError, ["empty"]),
        (lambda: byhand.forward(W, [2.0, 5.0]), TypeError, ["ids", "whole numbers"]),
        (lambda: byhand.forward(W, [2, 17]), ValueError, ["ids", "17", "outside"]),
        (lambda: byhand.forward(W, [2, -1]), ValueError, ["ids", "-1", "outside"]),
        (lambda: byhand.forward(W, torch.tensor([2, 5])), TypeError, ["numpy", "no torch"]),
        (lambda: byhand.forward(W, list(range(2, 15))), ValueError, ["max_position"]),
        (lambda: byhand.forward(W, IDS, KEEP[:5]), ValueError, ["keep", "shape"]),
        (lambda: byhand.forward(W, IDS, np.zeros(9)), ValueError, ["keep", "all 0"]),
        (lambda: byhand.forward(W, IDS, np.full(9, 2)), ValueError, ["keep", "1", "0"]),
        (lambda: byhand.forward(W, IDS, ["a"] * 9), TypeError, ["keep"]),
        (lambda: byhand.forward(W, IDS, KEEP, np.full(9, 2)), ValueError,
         ["segments", "outside"]),
        (lambda: byhand.forward(W, IDS, KEEP, SEGMENTS[:4]), ValueError, ["segments", "9"]),
        (lambda: byhand.layer_norm(np.ones((2, 4)), np.ones(3), np.zeros(4), 1e-12),
         ValueError, ["gamma", "4"]),
        (lambda: byhand.layer_norm(np.ones((2, 4)), np.ones(4), np.zeros(4), 0), ValueError,
         ["eps", "positive"]),
        (lambda: byhand.layer_norm(np.array([[1.0, np.nan]]), np.ones(2), np.zeros(2), 1e-12),
         ValueError, ["x", "finite"]),
        (lambda: byhand.linear(np.ones((2, 3)), np.ones((4, 5)), np.ones(4)), ValueError,
         ["x", "5"]),
        (lambda: byhand.linear(np.ones((2, 3)), np.ones(3), np.ones(3)), ValueError,
         ["w", "2-d"]),
        (lambda: byhand.attention_scores(np.ones((3, 2)), np.ones((3, 4))), ValueError,
         ["k", "2"]),
        (lambda: byhand.attention_weights(np.ones((3, 4))), ValueError, ["square"]),
        (lambda: byhand.attention_weights(np.ones((3, 3)), [1, 0]), ValueError, ["keep"]),
        (lambda: byhand.split_heads(np.ones((12, 4)), np.ones(12), 3), ValueError,
         ["multiple", "num_heads"]),
        (lambda: byhand.split_heads(np.ones((8, 4)), np.ones(8), 2), ValueError, ["3d"]),
        (lambda: byhand.split_heads(np.ones((12, 4)), np.ones(12), 0), ValueError,
         ["num_heads", "positive"]),
        (lambda: byhand.gelu("x"), TypeError, ["x", "numbers", "str"]),
        (lambda: byhand.embed([1, 2], np.ones((4, 3)), np.ones((1, 3))), ValueError,
         ["2 tokens", "1 positions"]),
        (lambda: byhand.mlm_head(np.ones((2, 5)), W), ValueError, ["h", "8"]),
        (lambda: byhand.fill_biases("model", seed=0), TypeError, ["minibert"]),
        (lambda: byhand.fill_biases(make(), seed=0.5), TypeError, ["seed"]),
        (lambda: byhand.fill_biases(make(), seed=0, spread=0), ValueError, ["spread"]),
        (lambda: byhand.model_intermediates(make(), [2, 99]), ValueError, ["ids", "outside"]),
        (lambda: byhand.largest_differences({}, {}), TypeError, ["record"]),
        (lambda: byhand.hf_logits("export", make(), [], IDS), TypeError, ["export_hf"]),
        (lambda: byhand.without_positions([1]), TypeError, ["weights"]),
        (lambda: byhand.range_verdict([], [1.0]), ValueError, ["one value per seed"]),
        (lambda: byhand.range_verdict([1.0, np.nan], [1.0]), ValueError, ["finite"]),
    ],
)
def test_bad_input_byhand(refuses, call, error, words):
    refuses(call, error, *words)


@pytest.mark.slow
def test_the_by_hand_softmax_is_step_4s_and_byhand_never_imports_torch():
    g = np.random.default_rng(0)
    for scores in (g.normal(size=7), g.normal(size=(3, 5)) * 30, np.array([[2.0, -1e30, 0.5]])):
        np.testing.assert_allclose(byhand.softmax(scores), softmax(scores), rtol=1e-12, atol=0)
    np.testing.assert_allclose(byhand.softmax(np.array([[1.0, 2.0], [3.0, 5.0]]), axis=0),
                               softmax(np.array([[1.0, 2.0], [3.0, 5.0]]), dim=0), rtol=1e-12)
    code = "import sys, mlmlib.byhand.forward; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # the chapter's "nothing but NumPy"
