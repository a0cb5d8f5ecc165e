"""Tests for mlmlib.model: it is BERT, it learns, and it refuses bad input clearly."""

import pytest
import torch
from transformers import BertConfig as HFConfig
from transformers import BertForMaskedLM, BertForPreTraining

from mlmlib.constants import IGNORE_INDEX
from mlmlib.model import BertConfig, MiniBert

TINY = {"vocab_size": 60, "hidden_size": 32, "num_layers": 2, "num_heads": 4,
        "intermediate_size": 64, "max_position": 24}


def batch(seed=0, b=3, t=12, pad_from=None):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 60, (b, t), generator=g)
    ids[:, 0] = 2
    mask = torch.ones_like(ids)
    if pad_from is not None:
        ids[:, pad_from:] = 0
        mask[:, pad_from:] = 0
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[:, 3] = ids[:, 3]
    labels[:, 5] = ids[:, 5]
    return ids, mask, labels


@pytest.mark.parametrize("nsp", [False, True])
def test_parameter_count_is_bert_s(nsp):
    ours = MiniBert(BertConfig(**TINY, nsp=nsp)).num_parameters()
    hc = HFConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, max_position_embeddings=24)
    theirs = (BertForPreTraining if nsp else BertForMaskedLM)(hc)
    assert ours == sum(p.numel() for p in theirs.parameters())


def test_the_same_seed_gives_the_same_model():
    a, b = MiniBert(BertConfig(**TINY), rng=7), MiniBert(BertConfig(**TINY), rng=7)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))
    c = MiniBert(BertConfig(**TINY), rng=8)
    assert not torch.equal(a.word_embeddings.weight, c.word_embeddings.weight)
    w = a.blocks[0].attention.qkv.weight
    assert abs(w.std().item() - 0.02) < 0.002  # BERT's N(0, 0.02)


def test_shapes_and_tied_decoder():
    model = MiniBert(BertConfig(**TINY))
    ids, mask, labels = batch()
    logits, loss = model(ids, attention_mask=mask, labels=labels)
    assert logits.shape == (6, 60) and loss.ndim == 0
    assert model(ids).logits.shape == (3, 12, 60)  # no labels: every position
    h, _ = model.encode(ids)
    assert h.shape == (3, 12, 32)
    assert model.word_embeddings.weight.data_ptr() in {p.data_ptr() for p in model.parameters()}
    assert torch.count_nonzero(model.word_embeddings.weight[0]) == 0  # [PAD] starts at zero


def test_sparse_and_dense_heads_give_the_same_loss():
    torch.manual_seed(0)
    model = MiniBert(BertConfig(**TINY)).eval()
    ids, mask, labels = batch(pad_from=9)
    sparse = model(ids, attention_mask=mask, labels=labels).loss
    dense = model(ids, attention_mask=mask, labels=labels, score_all=True).loss
    assert torch.allclose(sparse, dense, atol=1e-6)


def test_padding_does_not_change_real_positions():
    model = MiniBert(BertConfig(**TINY)).eval()
    ids, mask, _ = batch(pad_from=8)
    a = model(ids, attention_mask=mask).logits[:, :8]
    ids2 = ids.clone()
    ids2[:, 8:] = 17  # garbage where the padding is
    b = model(ids2, attention_mask=mask).logits[:, :8]
    assert torch.allclose(a, b, atol=1e-5)


def test_attention_weights_for_pictures():
    model = MiniBert(BertConfig(**TINY)).eval()
    ids, mask, labels = batch(pad_from=10)
    out = model(ids, attention_mask=mask, labels=labels, return_attention=True)
    assert len(out.attentions) == 2 and out.attentions[0].shape == (3, 4, 12, 12)
    w = out.attentions[1]
    assert torch.allclose(w.sum(-1), torch.ones(3, 4, 12), atol=1e-5)
    assert torch.count_nonzero(w[..., 10:]) == 0  # nobody reads the padding
    fast = model(ids, attention_mask=mask, labels=labels).logits
    assert torch.allclose(out.logits, fast, atol=1e-5)  # the explicit route agrees with SDPA


def test_overfitting_one_batch_drives_the_loss_near_zero():
    torch.manual_seed(0)
    model = MiniBert(BertConfig(**TINY, dropout=0.0, attention_dropout=0.0))
    ids, mask, labels = batch()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = None
    for _ in range(150):
        loss = model(ids, attention_mask=mask, labels=labels).loss
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert first > 3.5 and loss.item() < 0.05


def test_nsp_loss_is_added():
    torch.manual_seed(0)
    model = MiniBert(BertConfig(**TINY, nsp=True)).eval()
    ids, mask, labels = batch()
    is_next = torch.tensor([True, False, True])
    out = model(ids, attention_mask=mask, labels=labels, is_next=is_next)
    mlm = model(ids, attention_mask=mask, labels=labels).loss
    ce = torch.nn.functional.cross_entropy(out.nsp_logits, (~is_next).long())
    assert torch.allclose(out.loss, mlm + ce, atol=1e-6)


def test_empty_m_in_a_batch_gives_zero_loss():
    model = MiniBert(BertConfig(**TINY))
    ids, mask, _ = batch()
    labels = torch.full_like(ids, IGNORE_INDEX)
    out = model(ids, attention_mask=mask, labels=labels)
    assert out.loss.item() == 0.0 and out.logits.shape == (0, 60)


MODEL = MiniBert(BertConfig(**TINY))  # the bad-input cases' model (read only)
NSP = MiniBert(BertConfig(**TINY, nsp=True))
IDS = torch.ones(1, 5, dtype=torch.long)
LONG = {"dtype": torch.long}


def fed(**kwargs):
    """A call of MODEL with ``input_ids=IDS`` and ``kwargs`` (which may replace it)."""
    return lambda: MODEL(**{"input_ids": IDS, **kwargs})


def config(**changes):
    return lambda: BertConfig(**{**TINY, **changes})


def changed_later(**changes):
    """A config made valid, then changed: MiniBert checks it again."""
    def call():
        cfg = BertConfig(**TINY)
        for name, value in changes.items():
            setattr(cfg, name, value)
        return MiniBert(cfg)
    return call


def case(call, error, *words, id):
    return pytest.param(call, error, words, id=id)


@pytest.mark.parametrize(("call", "error", "words"), [
    # the forward pass
    case(fed(input_ids=torch.tensor([[2, 60]])), ValueError, "input_ids[0, 1] = 60 is outside",
         id="id-too-big"),
    case(fed(input_ids=torch.tensor([[2, -1]])), ValueError, "input_ids[0, 1] = -1", "outside",
         id="id-negative"),
    case(fed(input_ids=torch.tensor([[2, 200]], dtype=torch.uint8)), ValueError,
         "input_ids[0, 1] = 200", "outside the vocabulary of 60", id="id-uint8-too-big"),
    case(fed(labels=torch.tensor([[156, 5, 156, 156, 156]], dtype=torch.uint8)), TypeError,
         "labels", "uint8", "-100", "outside M", id="labels-uint8"),
    case(fed(input_ids=torch.ones(1, 25, **LONG)), ValueError,
         "25 tokens are longer than max_position 24", id="too-long"),
    case(fed(input_ids=torch.ones(1, 5)), TypeError, "input_ids", "integer ids", "float32",
         id="ids-float"),
    case(fed(input_ids=torch.ones(1, 5, dtype=torch.bool)), TypeError, "input_ids", "bool",
         id="ids-bool"),
    case(fed(input_ids=torch.ones(1, 5, dtype=torch.complex64)), TypeError, "input_ids",
         "complex64", id="ids-complex"),
    case(fed(input_ids=[[2, 5, 3]]), TypeError, "input_ids", "torch tensor", "list",
         id="ids-list"),
    case(fed(input_ids=torch.ones(5, **LONG)), ValueError, "shape (b, t)", id="ids-1d"),
    case(fed(input_ids=torch.ones(0, 5, **LONG)), ValueError, "input_ids is empty", "(0, 5)",
         id="empty-batch"),
    case(fed(input_ids=torch.ones(2, 0, **LONG)), ValueError, "input_ids is empty", "(2, 0)",
         id="empty-sequences"),
    case(fed(input_ids=torch.ones(1, 5, **LONG, device="meta")), ValueError, "input_ids",
         "meta", "cpu", id="ids-other-device"),
    case(fed(attention_mask=torch.ones(1, 4, **LONG)), ValueError,
         "attention_mask has shape (1, 4)", id="mask-shape"),
    case(fed(attention_mask=torch.full((1, 5), 2)), ValueError, "attention_mask",
         "1 (a real token) or 0", id="mask-two"),
    case(fed(attention_mask=torch.full((1, 5), 0.5)), ValueError, "attention_mask",
         "1 (a real token) or 0", id="mask-half"),
    case(fed(attention_mask=torch.full((1, 5), float("nan"))), ValueError, "attention_mask",
         "1 (a real token) or 0", id="mask-nan"),
    case(fed(attention_mask=torch.zeros(1, 5, **LONG)), ValueError, "row 0", "attention_mask",
         "all 0", id="mask-hides-a-row"),
    case(fed(attention_mask=[[1] * 5]), TypeError, "attention_mask", "list", id="mask-list"),
    case(fed(attention_mask=torch.ones(1, 5, dtype=torch.complex64)), TypeError,
         "attention_mask", "complex64", id="mask-complex"),
    case(fed(token_type_ids=torch.full((1, 5), 2)), ValueError, "token_type_ids must lie",
         id="segment-too-big"),
    case(fed(token_type_ids=torch.zeros(1, 5)), TypeError, "token_type_ids", "float32",
         id="segment-float"),
    case(fed(token_type_ids=torch.zeros(1, 5, dtype=torch.bool)), TypeError, "token_type_ids",
         "bool", id="segment-bool"),
    case(fed(token_type_ids=torch.zeros(1, 6, **LONG)), ValueError, "token_type_ids has shape",
         id="segment-shape"),
    case(fed(labels=torch.ones(1, 6, **LONG)), ValueError, "labels has shape", id="labels-shape"),
    case(fed(input_ids=torch.ones(1, 3, **LONG), labels=torch.tensor([[-100, 60, -100]])),
         ValueError, "labels[0, 1] = 60 is outside the vocabulary of 60", id="label-too-big"),
    case(fed(labels=torch.full((1, 5), -100.0)), TypeError, "labels", "float32",
         id="labels-float"),
    case(fed(labels=torch.ones(1, 5, dtype=torch.bool)), TypeError, "labels", "bool",
         id="labels-bool"),
    case(fed(labels=[[-100] * 5]), TypeError, "labels", "list", id="labels-list"),
    case(fed(is_next=torch.tensor([True])), ValueError, "no NSP head", id="is-next-without-nsp"),
    case(lambda: NSP(IDS, is_next=torch.tensor([True, False])), ValueError, "is_next",
         "shape (2,)", id="is-next-shape"),
    case(lambda: NSP(IDS, is_next=torch.tensor([0.5])), TypeError, "is_next", "float32",
         id="is-next-float"),
    case(lambda: NSP(IDS, is_next=torch.tensor([2])), ValueError, "is_next", "0/1",
         id="is-next-two"),
    case(lambda: NSP(IDS, is_next=[True]), TypeError, "is_next", "list", id="is-next-list"),
    case(fed(score_all=False), ValueError, "needs labels", id="sparse-without-labels"),
    case(fed(score_all="yes"), TypeError, "score_all", id="score-all-str"),
    case(fed(return_attention=1), TypeError, "return_attention", id="return-attention-int"),
    case(lambda: MODEL.encode(torch.ones(1, 5)), TypeError, "input_ids", "float32",
         id="encode-float-ids"),
    case(lambda: MODEL.score(torch.ones(2, 31)), ValueError, "(..., 32)", "(2, 31)",
         id="score-width"),
    case(lambda: MODEL.score(torch.ones(2, 32, **LONG)), TypeError, "float tensor", "int64",
         id="score-int"),
    # the configuration
    case(config(hidden_size=30, num_heads=4), ValueError, "multiple of num_heads",
         id="heads-do-not-divide"),
    case(config(vocab_size=0), ValueError, "vocab_size must be a positive", id="vocab-zero"),
    case(config(num_layers=-1), ValueError, "num_layers", "positive", id="layers-negative"),
    case(config(type_vocab_size=0), ValueError, "type_vocab_size", "positive",
         id="type-vocab-zero"),
    case(config(hidden_size=32.0), TypeError, "hidden_size", "float", id="size-float"),
    case(config(num_layers=True), TypeError, "num_layers", "bool", id="size-bool"),
    case(config(max_position="24"), TypeError, "max_position", "str", id="size-str"),
    case(config(dropout=1.0), ValueError, "dropout must be a number in [0, 1)", id="dropout-one"),
    case(config(attention_dropout=-0.1), ValueError, "attention_dropout", "[0, 1)",
         id="attention-dropout-negative"),
    case(config(dropout=float("nan")), ValueError, "dropout", "[0, 1)", "nan", id="dropout-nan"),
    case(config(dropout="0.1"), TypeError, "dropout", "number", "str", id="dropout-str"),
    case(config(layer_norm_eps=-1e-12), ValueError, "layer_norm_eps", "positive",
         id="eps-negative"),
    case(config(layer_norm_eps=0.0), ValueError, "layer_norm_eps", "positive", id="eps-zero"),
    case(config(layer_norm_eps=float("inf")), ValueError, "layer_norm_eps", "finite",
         id="eps-inf"),
    case(config(initializer_range=0.0), ValueError, "initializer_range", "positive",
         id="init-zero"),
    case(config(initializer_range=-0.02), ValueError, "initializer_range", "positive",
         id="init-negative"),
    case(config(initializer_range=True), TypeError, "initializer_range", "bool",
         id="init-bool"),
    case(config(pad_token_id=-1), ValueError, "pad_token_id -1", "outside", id="pad-negative"),
    case(config(pad_token_id=60), ValueError, "pad_token_id 60", "outside", id="pad-too-big"),
    case(config(pad_token_id=0.0), TypeError, "pad_token_id", "float", id="pad-float"),
    case(config(nsp="no"), TypeError, "nsp", "true or false", id="nsp-str"),
    case(changed_later(layer_norm_eps=-1.0), ValueError, "layer_norm_eps", id="changed-later"),
    case(lambda: MiniBert(TINY), TypeError, "BertConfig", "dict", id="config-dict"),
    case(lambda: MiniBert(BertConfig(**TINY), rng="seven"), TypeError, "rng", "str",
         id="rng-str"),
])
def test_bad_input_model(refuses, call, error, words):
    refuses(call, error, *words)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.int8, torch.uint8])
def test_every_integer_dtype_gives_the_int64_result(dtype):
    model = MiniBert(BertConfig(**{**TINY, "vocab_size": 300})).eval()  # 300: past int8's 127
    ids, mask, labels = batch()
    ids[0, 4] = 120 if dtype in (torch.int8, torch.uint8) else 299
    types = torch.zeros_like(ids)
    types[:, 6:] = 1
    want = model(ids, attention_mask=mask, token_type_ids=types)
    got = model(ids.to(dtype), attention_mask=mask.to(dtype), token_type_ids=types.to(dtype))
    assert torch.equal(want.logits, got.logits)
    if dtype != torch.uint8:  # uint8 cannot hold IGNORE_INDEX = -100
        labels[0, 4] = ids[0, 4]
        want = model(ids, attention_mask=mask, labels=labels)
        got = model(ids.to(dtype), attention_mask=mask, labels=labels.to(dtype))
        assert torch.equal(want.logits, got.logits) and torch.equal(want.loss, got.loss)


def test_bool_and_float_masks_give_the_int_result():
    model = MiniBert(BertConfig(**TINY)).eval()
    ids, mask, _ = batch(pad_from=8)
    want = model(ids, attention_mask=mask).logits
    for other in (mask.bool(), mask.float()):
        assert torch.equal(model(ids, attention_mask=other).logits, want)


@pytest.mark.parametrize("part,missing", [
    ("position_embeddings", "position_embeddings.weight"),
    ("head_transform", "head_dense.weight"),
    ("head_bias", "head_bias"),
])
def test_a_part_switched_off_is_gone_and_the_rest_still_scores(part, missing):
    """The encoder chapter's ablations: the part has no weights, the model still runs."""
    model = MiniBert(BertConfig(**{**TINY, part: False})).eval()
    assert missing not in model.state_dict()
    ids, mask, _ = batch()
    logits = model(ids, attention_mask=mask).logits
    assert logits.shape == (*ids.shape, TINY["vocab_size"]) and torch.isfinite(logits).all()


def test_without_positions_the_order_of_the_words_is_invisible():
    model = MiniBert(BertConfig(**{**TINY, "position_embeddings": False})).eval()
    ids = torch.tensor([[2, 7, 4, 9, 3]])
    order = torch.tensor([0, 3, 2, 1, 4])  # swap two words
    h = model.encode(ids)[0]
    assert torch.allclose(model.encode(ids[:, order])[0], h[:, order], atol=1e-6)
    with_positions = MiniBert(BertConfig(**TINY)).eval()
    h = with_positions.encode(ids)[0]
    assert not torch.allclose(with_positions.encode(ids[:, order])[0], h[:, order], atol=1e-3)


def test_an_untied_model_has_its_own_output_matrix_and_the_same_other_weights():
    tied = MiniBert(BertConfig(**TINY), rng=3)
    untied = MiniBert(BertConfig(**{**TINY, "tie_embeddings": False}), rng=3)
    assert untied.decoder.shape == tied.word_embeddings.weight.shape
    assert not torch.equal(untied.decoder, untied.word_embeddings.weight)
    for name, tensor in tied.state_dict().items():  # the decoder is drawn last
        assert torch.equal(tensor, untied.state_dict()[name]), name
    h = torch.randn(3, TINY["hidden_size"])
    with torch.no_grad():
        untied.decoder.copy_(untied.word_embeddings.weight)
        assert torch.allclose(untied.score(h), tied.score(h))


NO_DROPOUT = {"dropout": 0.0, "attention_dropout": 0.0}  # the same numbers on both routes


def ragged(seed=0, b=6, t=14):
    """A batch of rows of different lengths, padded on the right, with targets in each row."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(3, t + 1, (b,), generator=g)
    mask = (torch.arange(t)[None, :] < lengths[:, None]).long()
    ids = torch.randint(5, 60, (b, t), generator=g) * mask
    ids[:, 0] = 2
    pick = (torch.rand(b, t, generator=g) < 0.4) & (mask == 1)
    pick[:, 1] = True  # every row has a target
    labels = torch.where(pick, ids, torch.full_like(ids, IGNORE_INDEX))
    segments = (torch.arange(t)[None, :] >= lengths[:, None] // 2).long() * mask
    return ids, mask, segments, labels


@pytest.mark.parametrize("nsp", [False, True])
def test_the_unpadded_encoder_gives_the_padded_loss_and_gradients(nsp):
    ids, mask, segments, labels = ragged()
    is_next = torch.tensor([0, 1, 1, 0, 1, 0]) if nsp else None
    out, grads = {}, {}
    for unpad in (True, False):
        model = MiniBert(BertConfig(**TINY, nsp=nsp, unpad=unpad, **NO_DROPOUT), rng=3)
        out[unpad] = model(ids, attention_mask=mask, token_type_ids=segments, labels=labels,
                           is_next=is_next)
        out[unpad].loss.backward()
        grads[unpad] = [p.grad for p in model.parameters()]
    assert torch.allclose(out[True].logits, out[False].logits, atol=1e-5)
    assert abs(out[True].loss.item() - out[False].loss.item()) < 1e-5
    if nsp:
        assert torch.allclose(out[True].nsp_logits, out[False].nsp_logits, atol=1e-5)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(*grads.values(), strict=True))


def test_unpadding_leaves_out_the_columns_of_padding_and_keeps_the_callers_tensors():
    ids, mask, segments, labels = ragged()
    ids, mask, segments, labels = (torch.cat([t, torch.zeros_like(t[:, :5])], 1)
                                   for t in (ids, mask, segments, labels))
    labels[:, -5:] = IGNORE_INDEX
    kept = [t.clone() for t in (ids, mask, segments, labels)]
    model = MiniBert(BertConfig(**TINY, **NO_DROPOUT), rng=3)
    loss = model(ids, attention_mask=mask, token_type_ids=segments, labels=labels).loss
    short = model(ids[:, :-5], attention_mask=mask[:, :-5], token_type_ids=segments[:, :-5],
                  labels=labels[:, :-5]).loss
    assert abs(loss.item() - short.item()) < 1e-6
    assert all(torch.equal(a, b) for a, b in zip(kept, (ids, mask, segments, labels),
                                                  strict=True))


def test_a_target_at_the_padding_is_scored_as_without_unpadding():
    ids, mask, _, labels = ragged()
    row = int((mask.sum(1) < mask.shape[1]).nonzero()[0])  # a row with padding
    labels[row, -1] = 7  # a target where the row is padding: scored, as before
    losses = [MiniBert(BertConfig(**TINY, unpad=unpad, **NO_DROPOUT), rng=3)(
        ids, attention_mask=mask, labels=labels).loss.item() for unpad in (True, False)]
    assert abs(losses[0] - losses[1]) < 1e-6
