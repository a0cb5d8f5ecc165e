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


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"input_ids": torch.tensor([[2, 60]])}, ValueError, "token id 60 is outside"),
        ({"input_ids": torch.tensor([[2, -1]])}, ValueError, "outside the vocabulary"),
        ({"input_ids": torch.ones(1, 25, dtype=torch.long)}, ValueError,
         "25 tokens are longer than max_position 24"),
        ({"input_ids": torch.ones(1, 5)}, TypeError, "integer tensor"),
        ({"input_ids": torch.ones(5, dtype=torch.long)}, ValueError, "shape (B, T)"),
        ({"input_ids": torch.ones(1, 5, dtype=torch.long),
          "attention_mask": torch.ones(1, 4, dtype=torch.long)}, ValueError,
         "attention_mask has shape (1, 4)"),
        ({"input_ids": torch.ones(1, 5, dtype=torch.long),
          "attention_mask": torch.full((1, 5), 2)}, ValueError, "1 (a real token) or 0"),
        ({"input_ids": torch.ones(1, 5, dtype=torch.long),
          "token_type_ids": torch.full((1, 5), 2)}, ValueError, "token_type_ids must lie"),
        ({"input_ids": torch.ones(1, 5, dtype=torch.long),
          "labels": torch.ones(1, 6, dtype=torch.long)}, ValueError, "labels has shape"),
        ({"input_ids": torch.ones(1, 5, dtype=torch.long),
          "is_next": torch.tensor([True])}, ValueError, "no NSP head"),
        ({"input_ids": torch.ones(1, 5, dtype=torch.long), "score_all": False}, ValueError,
         "needs labels"),
        ({"input_ids": torch.ones(1, 3, dtype=torch.long),
          "labels": torch.tensor([[-100, 60, -100]])}, ValueError,
         "label 60 is outside the vocabulary of 60"),
    ],
)
def test_bad_input(kwargs, error, message):
    model = MiniBert(BertConfig(**TINY))
    with pytest.raises(error) as info:
        model(**kwargs)
    assert message in str(info.value)


def test_bad_config():
    with pytest.raises(ValueError, match="multiple of num_heads"):
        BertConfig(hidden_size=30, num_heads=4)
    with pytest.raises(ValueError, match="vocab_size must be a positive"):
        BertConfig(vocab_size=0)
    with pytest.raises(ValueError, match="dropout must lie"):
        BertConfig(dropout=1.0)
