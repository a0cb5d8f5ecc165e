r"""mlmlib.loss - the last three stages of the pipeline: softmax, -log of the truth, sum over M.

.. math::

    \mathcal{L}_{\text{MLM}} = -\sum_{i \in M} \log P(x_i \mid \mathbf{x}_{\setminus M}),
    \qquad P(v \mid \cdot) = \frac{\exp s_v}{\sum_{u \in V} \exp s_u}

Does: turn raw scores ``s_v = w_v^T h_i + b_v`` into probabilities (:func:`softmax`), take
``-log`` of the true word's probability for one slot (:func:`slot_loss`, :func:`neg_log`), and
add (or average) those over the masked slots of a batch (:func:`mlm_loss`). Also the
next-sentence loss (:func:`nsp_loss`) and the clueless baseline ``log |V|``
(:func:`uniform_loss`). Every ``log`` here is the natural logarithm (base e), as in PyTorch.

Does not: choose the masked set M (:mod:`mlmlib.masking`) or compute the scores
(:mod:`mlmlib.model`). It imports no other part of mlmlib except the shared constant
``IGNORE_INDEX`` and the shared argument checks (``mlmlib._checks``).

Inputs may be Python lists, NumPy arrays or torch tensors. Lists and arrays are computed in
float64 and give NumPy arrays or Python floats back; tensors give tensors back (so gradients flow).
Labels may have any signed integer dtype (``int8`` ... ``int64``: compared as ``int64``, the same
loss); unsigned ones (``uint8``) are refused, since they cannot hold ``IGNORE_INDEX = -100``.

>>> from mlmlib.loss import softmax, slot_loss
>>> softmax([1, 2, 0, 1]).round(4)
array([0.1966, 0.5344, 0.0723, 0.1966])
>>> round(slot_loss([1, 2, 0, 1], target=1), 5)
0.62652
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from mlmlib._checks import described, flag, ids, items, one_of, whole, within
from mlmlib.constants import IGNORE_INDEX

__all__ = [
    "IGNORE_INDEX",
    "log_softmax",
    "mlm_loss",
    "neg_log",
    "nsp_loss",
    "slot_loss",
    "softmax",
    "uniform_loss",
]

_REDUCTIONS = ("sum", "mean")


def _as_tensor(x, name: str, *, integer: bool) -> tuple[torch.Tensor, bool]:
    """Convert a list, array or tensor to a tensor; say whether the caller gave a tensor.

    ``integer=True`` demands whole numbers (token ids); otherwise real numbers (scores) are
    wanted and lists or arrays become float64. Booleans and complex numbers are refused.
    """
    if isinstance(x, torch.Tensor):
        t, given_tensor = x, True
    else:
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError) as err:  # ragged lists and other odd shapes
            raise TypeError(f"{name} must be a rectangular list, array or tensor of numbers "
                            f"({err})") from None
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must hold numbers, got {described(x)}")
        t, given_tensor = torch.from_numpy(arr if integer else arr.astype(np.float64)), False
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold real numbers, got {described(x)}")
    if integer and t.is_floating_point():
        raise TypeError(f"{name} must be integer token ids, got {described(x)}")
    if not integer and not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    return t, given_tensor


def _as_scores(scores, name: str = "scores", dim: int = -1) -> tuple[torch.Tensor, bool]:
    """Checked scores: at least one word along ``dim`` (the last), every entry finite."""
    t, given_tensor = _as_tensor(scores, name, integer=False)
    if t.ndim == 0:
        raise ValueError(f"{name} must have one entry per word of the vocabulary, got one number")
    dim = whole(dim, f"dim (a dimension of {name}, shape {tuple(t.shape)})", -t.ndim, t.ndim - 1)
    if t.shape[dim] == 0:
        raise ValueError(f"empty vocabulary: {name} has no entries in its last dimension"
                         if dim in (-1, t.ndim - 1) else f"{name} has no entries along dim {dim}")
    return within(t, name), given_tensor


def _out(t: torch.Tensor, given_tensor: bool):
    """Give back what the caller gave: a tensor for a tensor, else a float or a NumPy array."""
    if given_tensor:
        return t
    return t.item() if t.ndim == 0 else t.numpy()


def _log_softmax(s: torch.Tensor, dim: int = -1) -> torch.Tensor:
    # Subtract the largest score first: softmax does not change when every score moves by the
    # same amount, and afterwards the largest exp() is exp(0) = 1, so nothing overflows.
    z = s - s.detach().amax(dim=dim, keepdim=True)
    return z - torch.log(torch.exp(z).sum(dim=dim, keepdim=True))


# softmax(s)_v = exp(s_v - m) / sum_u exp(s_u - m),   m = max_u s_u   (the same for every m)
def softmax(scores, dim: int = -1):
    """Probabilities from raw scores: exponentiate, then divide by the total.

    Numerically stable: scores such as ``[1000, 0]`` give ``[1.0, exp(-1000)]`` (which is 0.0 in
    floating point) instead of ``inf / inf = nan``.

    >>> softmax([1000, 0])
    array([1., 0.])
    """
    s, given_tensor = _as_scores(scores, dim=dim)
    z = s - s.detach().amax(dim=dim, keepdim=True)  # the largest score becomes 0
    e = torch.exp(z)  # every weight now lies in (0, 1]
    return _out(e / e.sum(dim=dim, keepdim=True), given_tensor)


# log softmax(s)_v = (s_v - m) - log sum_u exp(s_u - m)      ("log-sum-exp")
def log_softmax(scores, dim: int = -1):
    """The logarithm of :func:`softmax`, computed without ever forming a tiny probability.

    >>> log_softmax([1000, 0])
    array([    0., -1000.])
    """
    s, given_tensor = _as_scores(scores, dim=dim)
    return _out(_log_softmax(s, dim), given_tensor)


def _word_index(target, vocab: Sequence[str] | None, size: int, name: str) -> int:
    """The index of ``target`` (an index, or a word looked up in ``vocab``), checked."""
    if vocab is not None:
        vocab = items(vocab, "vocab", "words", unique=True, ordered=True)
        if len(vocab) != size:
            raise ValueError(f"vocab has {len(vocab)} words but there are {size} scores")
    if isinstance(target, str):
        if vocab is None:
            raise TypeError(f"{name} {target!r} is a word; pass vocab=[...] to look it up")
        if target not in vocab:
            raise ValueError(f"{name} {target!r} is not in the vocabulary {vocab}")
        return vocab.index(target)
    target = whole(target, f"{name} (a word index, or a word)")
    if not 0 <= target < size:
        raise ValueError(f"{name} {target} is outside the vocabulary of {size} words "
                         f"(indices 0..{size - 1})")
    return target


# loss for one masked slot  =  -log P(truth)  =  -log softmax(s)_truth
def slot_loss(scores, target, vocab: Sequence[str] | None = None):
    """``-log P(target)`` for one masked slot, from its raw scores (one per word).

    ``target`` is the index of the true word, or the word itself when ``vocab`` lists the
    words in the order of ``scores``.

    >>> round(slot_loss([1, 2, 0, 1], "cat", vocab=["the", "cat", "sat", "mat"]), 4)
    0.6265
    """
    s, given_tensor = _as_scores(scores)
    if s.ndim != 1:
        raise ValueError(f"slot_loss scores one slot: scores must be 1-D, got shape "
                         f"{tuple(s.shape)} (use mlm_loss for batches)")
    index = _word_index(target, vocab, s.shape[0], "target")
    return _out(0.0 - _log_softmax(s)[index], given_tensor)  # 0.0 - x: never print -0.0


# -log p : 0 when p = 1 (no surprise), growing without bound as p -> 0
def neg_log(p):
    """``-log p`` (natural log) for a probability or an array of them; ``-log 0`` is ``inf``.

    >>> round(neg_log(0.40) + neg_log(0.20), 4)
    2.5257
    """
    t, given_tensor = _as_tensor(p, "p", integer=False)
    within(t, "p", 0, 1)  # a probability
    return _out(0.0 - torch.log(t), given_tensor)  # 0.0 - x: -log 1 is 0.0, not -0.0


# L_MLM = -sum_{i in M} log P(x_i | x_\M)        ("sum", the course's formula)
# mean  = L_MLM / |M|, and 0 when M is empty     ("mean", what PyTorch and Hugging Face report)
def mlm_loss(logits, labels, reduction: str = "sum", ignore_index: int = IGNORE_INDEX,
             check: bool = True):
    """The masked-language-modeling loss of a batch.

    Args:
        logits: scores of shape ``(..., V)``, one row of ``V`` scores per position.
        labels: integer ids of shape ``(...)``: the original token at positions in M,
            ``ignore_index`` (``IGNORE_INDEX = -100``) everywhere else.
        reduction: ``"sum"`` adds ``-log P`` over M (the course's formula); ``"mean"`` divides
            by ``|M|``.
        check: validate the inputs (finite scores, labels in the vocabulary, shapes). A
            caller that has already checked them, such as the model in its training loop,
            may pass False to skip a pass over every score (shapes and dtypes are still
            checked; a label outside the vocabulary then fails inside PyTorch).

    An empty M gives exactly ``0.0`` for both reductions, and a gradient of exactly zero.
    (``torch.nn.functional.cross_entropy(..., reduction="mean")`` gives NaN there: 0 / 0.)
    The per-slot ``-log P`` comes from PyTorch's fused log-softmax kernel: the same numbers as
    :func:`log_softmax` above (the tests check both), in one pass over the scores.

    >>> mlm_loss([[1, 2, 0, 1], [0, 0, 0, 0]], [1, -100])
    0.626523...
    """
    one_of(reduction, "reduction", _REDUCTIONS)
    ignore_index = whole(ignore_index, "ignore_index (an int64 label)", -(2**63), 2**63 - 1)
    flag(check, "check")
    if not check and isinstance(logits, torch.Tensor) and isinstance(labels, torch.Tensor):
        _check_labels(logits, labels, ignore_index)  # shapes and dtypes: no pass over the data
        return _mlm_loss(logits, labels, reduction, ignore_index)
    scores, given_tensor = _as_scores(logits, "logits")
    truth, _ = _as_tensor(labels, "labels", integer=True)
    _check_labels(scores, truth, ignore_index)
    ids(truth, "labels", scores.shape[-1], ignore=ignore_index)  # each label in M is a word
    return _out(_mlm_loss(scores, truth.to(scores.device), reduction, ignore_index),
                given_tensor)


def _check_labels(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int) -> None:
    """Labels of a signed integer dtype (unless ``ignore_index >= 0``), shaped like the logits."""
    ids(labels, "labels", ignore=ignore_index)
    if tuple(labels.shape) != tuple(logits.shape[:-1]):
        raise ValueError(
            f"labels have shape {tuple(labels.shape)} but logits have shape "
            f"{tuple(logits.shape)}: labels must match logits without its last (vocabulary) "
            "dimension")


def _mlm_loss(scores: torch.Tensor, ids: torch.Tensor, reduction: str,
              ignore_index: int) -> torch.Tensor:
    """The loss itself, on checked tensors: select M, ``-log P`` per slot, sum or mean."""
    V = scores.shape[-1]
    scores, ids = scores.reshape(-1, V), ids.reshape(-1).long()  # (N, V), (N,): int64 ids
    in_m = ids != ignore_index
    if not bool(in_m.all()):  # select the masked slots (skipped when every row is one)
        scores, ids = scores[in_m], ids[in_m]  # (|M|, V), (|M|,)
    if scores.dtype in (torch.float16, torch.bfloat16):
        scores = scores.float()  # take the log in float32 even under autocast
    total = F.cross_entropy(scores, ids, reduction="sum")  # sum over M; the empty sum is 0
    if reduction == "mean":
        total = total / max(int(ids.numel()), 1)
    return total


# Column 0 of NSP logits means "B really follows A" (IsNext), column 1 "B is random" (NotNext),
# the order used by Google's BERT and Hugging Face, so exported weights line up.
def nsp_loss(logits, is_next, reduction: str = "mean"):
    """Next-sentence-prediction loss: ``-log P(correct label)`` for each sentence pair.

    Args:
        logits: shape ``(..., 2)``; column 0 scores "B follows A", column 1 "B is random".
        is_next: booleans (or 0/1) of shape ``(...)``: True where B really follows A.
        reduction: ``"mean"`` over the pairs (BERT's choice) or ``"sum"``.

    No pairs at all give exactly ``0.0`` for both reductions (and a zero gradient), as an empty
    M does in :func:`mlm_loss`, where a plain mean would be NaN (0 / 0).

    >>> import math
    >>> round(nsp_loss([math.log(0.9), math.log(0.1)], True), 4)  # P(correct) = 0.90
    0.1054
    """
    one_of(reduction, "reduction", _REDUCTIONS)
    scores, given_tensor = _as_scores(logits, "logits")
    if scores.shape[-1] != 2:
        raise ValueError(f"NSP logits need 2 columns (IsNext, NotNext), got shape "
                         f"{tuple(scores.shape)}")
    if isinstance(is_next, torch.Tensor):
        truth = is_next.detach()
    else:
        try:
            arr = np.asarray(is_next)
        except ValueError:  # a ragged list
            arr = np.asarray(None)
        if arr.dtype.kind not in "biu" and arr.size:
            raise TypeError(f"is_next must be booleans or 0/1, got {described(is_next)}")
        truth = torch.from_numpy(arr.astype(bool) if arr.size == 0 else arr)
    if truth.dtype != torch.bool:
        if truth.is_floating_point() or truth.is_complex():
            raise TypeError(f"is_next must be booleans or 0/1, got {described(is_next)}")
        if ((truth != 0) & (truth != 1)).any():
            raise ValueError("is_next must be booleans or 0/1")
    if tuple(truth.shape) != tuple(scores.shape[:-1]):
        raise ValueError(f"is_next has shape {tuple(truth.shape)} but logits have shape "
                         f"{tuple(scores.shape)}")
    column = (~truth.bool()).long().to(scores.device)  # 0 = IsNext, 1 = NotNext
    per_pair = -_log_softmax(scores).gather(-1, column[..., None]).squeeze(-1)
    total = per_pair.sum()  # the empty sum is 0
    if reduction == "mean":
        total = total / max(per_pair.numel(), 1)
    return _out(total, given_tensor)


# uniform guess: P = 1/|V| for every word, so the loss per slot is -log(1/|V|) = log |V|
def uniform_loss(vocab_size: int) -> float:
    """``log |V|``: the per-slot loss of a model that spreads its bet evenly over ``|V|`` words.

    It is the clueless *baseline*, not a ceiling: a confidently wrong model scores more.

    >>> round(uniform_loss(30000), 4)
    10.309
    """
    return math.log(whole(vocab_size, "vocab_size", least=1))
