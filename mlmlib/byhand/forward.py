r"""mlmlib.byhand.forward - the mini BERT's forward pass written out by hand in NumPy, step by step.

Does: compute what :class:`mlmlib.model.MiniBert` computes, for one sentence, with nothing but
NumPy, in small functions, one per step of the encoder
chapter: the embeddings (token + position + segment, then LayerNorm), one attention head
(queries, keys, values, the scaled scores, the softmax over the keys with padding masked out
(:func:`softmax`, Step 4's, written again in NumPy),
the weighted sum of the values), several heads and the output projection, the residual sums
and LayerNorms, the feed-forward block with the exact GELU (and :func:`gelu_tanh`, the
approximation in Google's code, for comparison), a stack of blocks, and the masked-LM head.
:func:`weights_of` copies a model's weights into float64 arrays under the model's own names;
:func:`forward` runs every step and returns the scores with a record of every intermediate.
Each function has its equation right above it and the shape of every array in a comment
(``T`` tokens, ``d`` hidden size, ``d_h = d / heads``, ``V`` words, ``F`` the feed-forward
width). Bad input raises a ``ValueError`` or ``TypeError`` that names it.

Does not: train, compute gradients, apply dropout, or take a batch (one sentence at a time);
it never imports torch or :mod:`mlmlib.model`.

>>> import numpy as np
>>> layer_norm(np.array([[1.0, 2.0, 3.0]]), np.ones(3), np.zeros(3), eps=1e-12).round(4)
array([[-1.2247,  0.    ,  1.2247]])
"""

from __future__ import annotations

import math

import numpy as np

from mlmlib._checks import kind, number, numbers, whole

__all__ = ["PADDING_SCORE", "attention_head", "attention_scores", "attention_weights", "block",
           "embed", "feed_forward", "forward", "gelu", "gelu_tanh", "layer_norm", "linear",
           "mlm_head", "multi_head", "softmax", "split_heads", "weights_of", "without_positions"]


PADDING_SCORE = -1e30  # a padded key's score: exp(PADDING_SCORE - max) is exactly 0.0


# ----------------------------------------------------------------------------- checks

def _array(x, name: str, ndim: int | None = None, width: int | None = None) -> np.ndarray:
    """``x`` as a float64 array of finite numbers, with ``ndim`` dimensions and ``width``
    entries in its last one (when given)."""
    if hasattr(x, "detach"):
        raise TypeError(f"{name} must be a NumPy array (by hand, no torch): use "
                        f"{name}.detach().numpy()")
    arr = numbers(x, name, ndim=ndim)
    if width is not None and (arr.ndim == 0 or arr.shape[-1] != width):
        raise ValueError(f"{name} must have {width} entries in its last dimension, got shape "
                         f"{arr.shape}")
    return arr


def _ids(x, name: str, size: int, length: int | None = None) -> np.ndarray:
    """Whole numbers from 0 to ``size - 1``, one sentence (1-D), ``length`` long if given."""
    if hasattr(x, "detach"):
        raise TypeError(f"{name} must be a list or NumPy array of ints (by hand, no torch)")
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu" or arr.dtype == bool:
        raise TypeError(f"{name} must be whole numbers (ints), got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one sentence (1-D), got shape {arr.shape}: by hand "
                         "works on one sentence at a time")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: a sentence needs at least one token")
    if length is not None and arr.size != length:
        raise ValueError(f"{name} has {arr.size} entries but the sentence has {length} tokens")
    bad = (arr < 0) | (arr >= size)
    if bad.any():
        raise ValueError(f"{name}: {int(arr[bad][0])} is outside 0..{size - 1}")
    return arr.astype(np.int64)


def _keep(keep, T: int) -> np.ndarray:
    """The padding mask: ``T`` values, 1 (or True) for a real token, 0 for padding."""
    if keep is None:
        return np.ones(T, dtype=bool)
    arr = np.asarray(keep)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"keep must be 0/1 values, got dtype {arr.dtype}")
    if arr.shape != (T,):
        raise ValueError(f"keep must have shape ({T},), one 0/1 per token, got {arr.shape}")
    if ((arr != 0) & (arr != 1)).any():
        raise ValueError("keep must hold 1 (a real token) or 0 (padding)")
    if not arr.any():
        raise ValueError("keep is all 0: a query needs at least one real token to read")
    return arr.astype(bool)


# ----------------------------------------------------------------------------- the weights

def weights_of(model) -> dict:
    """A :class:`~mlmlib.model.MiniBert`'s weights as float64 NumPy arrays, by parameter name.

    The names are the model's own (``model.state_dict()``): ``"word_embeddings.weight"``,
    ``"blocks.0.attention.qkv.weight"``, ... A ``Linear`` layer's weight has one row per
    output, so it is applied as ``x @ W.T + b``. The entry ``"config"`` holds what the forward
    pass needs besides weights (heads, layers, the LayerNorm epsilon, the parts switched on).
    """
    cfg = getattr(model, "config", None)
    if not hasattr(model, "state_dict") or cfg is None:
        raise TypeError(f"model must be a MiniBert (with .config and .state_dict()), got "
                        f"{type(model).__name__}")
    if getattr(model, "training", False):
        raise ValueError("model is in training mode (dropout on): call model.eval() first")
    weights = {name: t.detach().cpu().double().numpy()
               for name, t in model.state_dict().items()}
    weights["config"] = {name: getattr(cfg, name, default) for name, default in (
        ("num_heads", None), ("num_layers", None), ("layer_norm_eps", None),
        ("hidden_size", None), ("vocab_size", None), ("max_position", None),
        ("type_vocab_size", None), ("position_embeddings", True),
        ("head_transform", True), ("head_bias", True), ("tie_embeddings", True))}
    return weights


def _get(weights: dict, name: str) -> np.ndarray:
    if name not in weights:
        raise ValueError(f"weights has no {name!r}: pass weights_of(model) for a model that "
                         "has this part")
    return weights[name]


# ----------------------------------------------------------------------------- the steps

# y = x W^T + b: one dot product of x's row with each row of W, plus a bias; "many dot
# products at once"
def linear(x, W, b) -> np.ndarray:
    W = _array(W, "W", ndim=2)
    x = _array(x, "x", width=W.shape[1])  # (..., in)
    b = _array(b, "b", ndim=1, width=W.shape[0])  # (out,)
    return x @ W.T + b  # (..., out)


# e_i = E_word[x_i] + E_pos[i] + E_seg[s_i]     (no E_pos when position is None)
def embed(ids, word, position=None, segment=None, segments=None) -> np.ndarray:
    word = _array(word, "word", ndim=2)  # (V, d)
    ids = _ids(ids, "ids", word.shape[0])  # (T,)
    e = word[ids]  # (T, d): one row of the table per token
    if segment is not None:
        segment = _array(segment, "segment", ndim=2, width=word.shape[1])  # (2, d)
        seg = (np.zeros(len(ids), dtype=np.int64) if segments is None
               else _ids(segments, "segments", segment.shape[0], len(ids)))
        e = e + segment[seg]  # (T, d)
    if position is not None:
        position = _array(position, "position", ndim=2, width=word.shape[1])  # (P, d)
        if len(ids) > position.shape[0]:
            raise ValueError(f"{len(ids)} tokens but only {position.shape[0]} positions")
        e = e + position[: len(ids)]  # (T, d): row i for position i
    return e  # (T, d)


# LN(x) = gamma * (x - mean(x)) / sqrt(var(x) + eps) + beta, over each row's d entries
def layer_norm(x, gamma, beta, eps: float) -> np.ndarray:
    x = _array(x, "x")
    gamma = _array(gamma, "gamma", ndim=1, width=x.shape[-1])  # (d,)
    beta = _array(beta, "beta", ndim=1, width=x.shape[-1])  # (d,)
    eps = number(eps, "eps", 0, above=True)
    mean = x.mean(axis=-1, keepdims=True)  # (T, 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # (T, 1): divides by d, not d - 1
    return gamma * (x - mean) / np.sqrt(var + eps) + beta  # (T, d)


# S[i, j] = q_i . k_j / sqrt(d_h): how well query i matches key j
def attention_scores(q, k) -> np.ndarray:
    q = _array(q, "q", ndim=2)  # (T, d_h)
    k = _array(k, "k", ndim=2, width=q.shape[1])  # (T, d_h)
    return q @ k.T / math.sqrt(q.shape[1])  # (T, T)


# softmax(s)_j = exp(s_j - m) / sum_j' exp(s_j' - m),  m = max_j s_j: Step 4's softmax (taking
# the largest score m away first changes no weight, and keeps exp from overflowing)
def softmax(scores, axis: int = -1) -> np.ndarray:
    s = _array(scores, "scores")
    if s.ndim == 0:
        raise ValueError("scores must hold at least one number per row, got a single number")
    z = np.exp(s - s.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


# A[i, :] = softmax over the keys j of S[i, j], with padded keys set to -infinity (weight 0)
def attention_weights(scores, keep=None) -> np.ndarray:
    scores = _array(scores, "scores", ndim=2)  # (T, T)
    if scores.shape[0] != scores.shape[1]:
        raise ValueError(f"scores must be square (T, T), got {scores.shape}")
    keep = _keep(keep, scores.shape[1])  # (T,): one flag per key
    masked = np.where(keep[None, :], scores, PADDING_SCORE)  # (T, T): padded keys ruled out
    return softmax(masked, axis=-1)  # (T, T): every row sums to 1


# head(X) = A V  with  Q = X Wq^T + bq,  K = X Wk^T + bk,  V = X Wv^T + bv
def attention_head(x, Wq, bq, Wk, bk, Wv, bv, keep=None) -> tuple[np.ndarray, dict]:
    q, k, v = linear(x, Wq, bq), linear(x, Wk, bk), linear(x, Wv, bv)  # 3 x (T, d_h)
    scores = attention_scores(q, k)  # (T, T)
    weights = attention_weights(scores, keep)  # (T, T)
    out = weights @ v  # (T, d_h): row i = sum_j A[i, j] v_j
    return out, {"q": q, "k": k, "v": v, "scores": scores, "weights": weights, "out": out}


# the fused (3d, d) weight holds Wq, Wk, Wv one above the other; head h owns rows
# h*d_h .. (h+1)*d_h of each
def split_heads(W_qkv, b_qkv, num_heads: int) -> list[tuple[np.ndarray, ...]]:
    W_qkv = _array(W_qkv, "W_qkv", ndim=2)  # (3d, d)
    d = W_qkv.shape[1]
    if W_qkv.shape[0] != 3 * d:
        raise ValueError(f"W_qkv must have shape (3d, d) = ({3 * d}, {d}), got {W_qkv.shape}")
    b_qkv = _array(b_qkv, "b_qkv", ndim=1, width=3 * d)  # (3d,)
    num_heads = whole(num_heads, "num_heads", least=1)
    if d % num_heads:
        raise ValueError(f"hidden size {d} is not a multiple of num_heads {num_heads}")
    dh = d // num_heads
    heads = []
    for h in range(num_heads):
        rows = [slice(part * d + h * dh, part * d + (h + 1) * dh) for part in range(3)]
        heads.append(tuple(a for r in rows for a in (W_qkv[r], b_qkv[r])))  # Wq, bq, Wk, ...
    return heads  # num_heads x (Wq (d_h, d), bq (d_h,), Wk, bk, Wv, bv)


# MultiHead(X) = [head_1(X), ..., head_H(X)] Wo^T + bo: the heads side by side, then mixed
def multi_head(x, W_qkv, b_qkv, W_out, b_out, num_heads: int,
               keep=None) -> tuple[np.ndarray, dict]:
    heads = [attention_head(x, *w, keep=keep) for w in split_heads(W_qkv, b_qkv, num_heads)]
    joined = np.concatenate([out for out, _ in heads], axis=-1)  # (T, d)
    out = linear(joined, W_out, b_out)  # (T, d)
    return out, {"heads": [rec for _, rec in heads], "joined": joined, "out": out}


# GELU(x) = x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)): the exact form, not the tanh one
def gelu(x) -> np.ndarray:
    x = _array(x, "x")
    return 0.5 * x * (1.0 + np.vectorize(math.erf, otypes=[float])(x / math.sqrt(2.0)))


# GELU(x) ~ x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the approximation in Google's code
def gelu_tanh(x) -> np.ndarray:
    """The tanh approximation of :func:`gelu` (Hugging Face's ``"gelu_new"``).

    >>> float(abs(gelu_tanh(1.0) - gelu(1.0))) < 1e-3
    True
    """
    x = _array(x, "x")
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


# FFN(x) = GELU(x W1^T + b1) W2^T + b2, row by row: d -> F -> d
def feed_forward(x, W1, b1, W2, b2) -> tuple[np.ndarray, dict]:
    pre = linear(x, W1, b1)  # (T, F)
    act = gelu(pre)  # (T, F)
    out = linear(act, W2, b2)  # (T, d)
    return out, {"pre": pre, "act": act, "out": out}


# X' = LN(X + MultiHead(X));  X'' = LN(X' + FFN(X'))   (post-LN, as in BERT)
def block(x, weights: dict, layer: int, keep=None) -> tuple[np.ndarray, dict]:
    cfg = _config(weights)
    p = f"blocks.{layer}."
    g = lambda name: _get(weights, p + name)  # noqa: E731
    att, att_rec = multi_head(x, g("attention.qkv.weight"), g("attention.qkv.bias"),
                              g("attention.out.weight"), g("attention.out.bias"),
                              cfg["num_heads"], keep)  # (T, d)
    mid = layer_norm(x + att, g("ln_attention.weight"), g("ln_attention.bias"),
                     cfg["layer_norm_eps"])  # (T, d)
    ffn, ffn_rec = feed_forward(mid, g("ffn_in.weight"), g("ffn_in.bias"),
                                g("ffn_out.weight"), g("ffn_out.bias"))  # (T, d)
    out = layer_norm(mid + ffn, g("ln_ffn.weight"), g("ln_ffn.bias"),
                     cfg["layer_norm_eps"])  # (T, d)
    return out, {"attention": att_rec, "after_attention": mid, "ffn": ffn_rec, "out": out}


# s_v = w_v . LN(GELU(h D^T + c)) + b_v, for every word v at once: (T, d) -> (T, V)
def mlm_head(h, weights: dict) -> tuple[np.ndarray, dict]:
    cfg = _config(weights)
    h = _array(h, "h", width=cfg["hidden_size"])  # (T, d)
    t = h
    if cfg["head_transform"]:
        dense = linear(h, _get(weights, "head_dense.weight"), _get(weights, "head_dense.bias"))
        t = layer_norm(gelu(dense), _get(weights, "head_ln.weight"),
                       _get(weights, "head_ln.bias"), cfg["layer_norm_eps"])  # (T, d)
    W = _get(weights, "word_embeddings.weight" if cfg["tie_embeddings"] else "decoder")
    scores = t @ W.T  # (T, V): the tied decoder, one dot product per word
    if cfg["head_bias"]:
        scores = scores + _get(weights, "head_bias")  # (V,) added to every row
    return scores, {"transformed": t, "logits": scores}


def _config(weights) -> dict:
    cfg = kind(weights, "weights", dict, "the dict weights_of(model) returns").get("config")
    if not isinstance(cfg, dict) or None in cfg.values():
        raise ValueError("weights has no complete 'config' entry: pass weights_of(model)")
    return cfg


# logits = head(block_L(... block_1(LN(embed(x))) ...)): the whole forward pass
def forward(weights: dict, ids, keep=None, segments=None) -> tuple[np.ndarray, dict]:
    """Every word's score at every position of one sentence, ``(T, V)``, and the record.

    Args:
        weights: what :func:`weights_of` returns.
        ids: the sentence's token ids, ``(T,)``.
        keep: ``(T,)``, 1 for a real token and 0 for padding (default: all 1).
        segments: ``(T,)`` segment ids, 0 for sentence A and 1 for B (default: all 0).

    The record holds every intermediate, by step: ``"sum"`` and ``"embeddings"`` (before and
    after the LayerNorm), ``"layers"`` (one :func:`block` record each), ``"h"`` (the
    final ``h_i``), ``"head"`` (the transform) and ``"logits"``.
    """
    cfg = _config(weights)
    ids = _ids(ids, "ids", cfg["vocab_size"])
    if len(ids) > cfg["max_position"]:
        raise ValueError(f"{len(ids)} tokens is longer than max_position {cfg['max_position']}")
    keep = _keep(keep, len(ids))
    summed = embed(ids, _get(weights, "word_embeddings.weight"),
                   _get(weights, "position_embeddings.weight")
                   if cfg["position_embeddings"] else None,
                   _get(weights, "segment_embeddings.weight"), segments)  # (T, d)
    x = layer_norm(summed, _get(weights, "ln_embeddings.weight"),
                   _get(weights, "ln_embeddings.bias"), cfg["layer_norm_eps"])  # (T, d)
    record = {"sum": summed, "embeddings": x, "layers": []}
    for layer in range(cfg["num_layers"]):
        x, rec = block(x, weights, layer, keep)  # (T, d)
        record["layers"].append(rec)
    logits, head = mlm_head(x, weights)  # (T, V)
    record.update(h=x, head=head["transformed"], logits=logits)
    return logits, record


def without_positions(weights: dict) -> dict:
    """A copy of ``weights`` whose forward pass adds no position rows (the same arrays, shared).

    >>> without_positions({"config": {"position_embeddings": True}})["config"]
    {'position_embeddings': False}
    """
    if not isinstance(weights, dict) or not isinstance(weights.get("config"), dict):
        raise TypeError("weights must be the dict weights_of(model) returns")
    return {**weights, "config": {**weights["config"], "position_embeddings": False}}
