"""mlmlib._model_inputs - what MiniBert's forward accepts, checked before any work (private).

Does: :func:`checked` refuses a bad tensor given to :class:`mlmlib.model.MiniBert` (wrong type,
dtype, shape or device, ids outside the vocabulary, an empty batch, a mask that is not 0/1 or
hides a whole row, ``is_next`` without an NSP head) with a ``TypeError``/``ValueError`` that
names the argument, and hands the index tensors back as int64: any integer dtype is accepted
for ids, converted before the range checks so that a small dtype cannot wrap around; an int64
tensor comes back as it is, not copied.

Does not: compute anything of the model (:mod:`mlmlib.model` does), or check a config
(:class:`mlmlib.model.BertConfig` checks itself).
"""

from __future__ import annotations

import torch

from mlmlib._checks import described, ids
from mlmlib.constants import IGNORE_INDEX

# what forward accepts: ids of any exact integer dtype (used as int64); a mask may also be
# bool or float, holding 0 and 1
INDEX_DTYPES = frozenset({torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8})
MASK_DTYPES = INDEX_DTYPES | {torch.bool, torch.float16, torch.bfloat16, torch.float32,
                              torch.float64}
IDS = "integer ids (int64, int32, int16, int8 or uint8)"
MASK = "0/1 values (bool, integer or float)"


def _tensor(model, t, name: str, dtypes, what: str, shape, on_device: bool = True):
    """``t`` checked: a tensor of one of ``dtypes``, of ``shape``, on ``model``'s device."""
    if not isinstance(t, torch.Tensor) or t.dtype not in dtypes:
        raise TypeError(f"{name} must be a torch tensor of {what}, got {described(t)}")
    if shape is not None and tuple(t.shape) != shape:
        raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {shape} to match "
                         "input_ids")
    device = model.word_embeddings.weight.device
    if on_device and t.device != device:
        raise ValueError(f"{name} is on {t.device} but the model is on {device}")
    return t


def checked(model, input_ids, attention_mask, token_type_ids, labels, is_next):
    """Every input of ``model``'s forward checked, with a message naming it; ``(input_ids,
    attention_mask, token_type_ids, labels)``, the index tensors as int64."""
    cfg = model.config
    input_ids = _tensor(model, input_ids, "input_ids", INDEX_DTYPES, IDS, None).long()
    if input_ids.ndim != 2:
        raise ValueError(f"input_ids must have shape (B, T), got {tuple(input_ids.shape)}")
    B, T = input_ids.shape
    if B == 0 or T == 0:
        raise ValueError(f"input_ids is empty, shape {(B, T)}: a batch needs at least one "
                         "sequence of at least one token")
    if T > cfg.max_position:
        raise ValueError(f"sequences of {T} tokens are longer than max_position "
                         f"{cfg.max_position}")
    ids(input_ids, "input_ids", cfg.vocab_size)
    if attention_mask is not None:
        _tensor(model, attention_mask, "attention_mask", MASK_DTYPES, MASK, (B, T))
        if ((attention_mask != 0) & (attention_mask != 1)).any():
            raise ValueError("attention_mask must hold 1 (a real token) or 0 (padding)")
        empty = (attention_mask == 0).all(dim=1)
        if empty.any():
            raise ValueError(f"row {int(empty.nonzero()[0])} of attention_mask is all 0: "
                             "every sequence needs at least one real token")
    if token_type_ids is not None:
        token_type_ids = _tensor(model, token_type_ids, "token_type_ids", INDEX_DTYPES, IDS,
                                 (B, T)).long()
        if token_type_ids.min() < 0 or token_type_ids.max() >= cfg.type_vocab_size:
            raise ValueError(f"token_type_ids must lie in 0..{cfg.type_vocab_size - 1}")
    if labels is not None:
        ids(labels, "labels", ignore=IGNORE_INDEX)  # a signed dtype: uint8 cannot hold -100
        labels = _tensor(model, labels, "labels", INDEX_DTYPES, IDS, (B, T)).long()
        ids(labels, "labels", cfg.vocab_size, ignore=IGNORE_INDEX)
    if is_next is not None:
        if not cfg.nsp:
            raise ValueError("is_next was given but the model has no NSP head "
                             "(BertConfig(nsp=True))")
        _tensor(model, is_next, "is_next", INDEX_DTYPES | {torch.bool},  # nsp_loss moves it
                "booleans or 0/1", (B,), on_device=False)
        if ((is_next != 0) & (is_next != 1)).any():
            raise ValueError("is_next must hold booleans or 0/1")
    return input_ids, attention_mask, token_type_ids, labels
