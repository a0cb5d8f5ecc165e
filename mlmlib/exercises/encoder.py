"""mlmlib.exercises.encoder - checkers for the encoder chapter (encoder_inside).

Does: check a reader's attention weights (a function of the queries, the keys and the padding
mask) on several small cases, naming the usual mistakes: no division by the square root of
the head size (or by the size itself), the softmax over the wrong axis (the queries instead of
the keys), padding left unmasked, every key masked (``keep == 1`` on a plain list is just
``False``), scores returned without a softmax, the matrix transposed;
check a count of one encoder block's weights, naming a forgotten bias, LayerNorm, output
projection or half of the feed-forward block, and full-size matrices for every head; and check
a difference read off a measurement repeated over seeds (the mean of the per-seed
differences), naming the flipped sign, one seed only and a ratio.

Does not: run the model or train anything; the chapter passes in what it measured.

>>> check_block_parameters(7087872, hidden_size=768, intermediate=3072, num_heads=12)
Correct: 7,087,872 weights in one block.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mlmlib._checks import numbers, whole
from mlmlib.exercises._common import (
    Verdict,
    _call,
    _check_count,
    _check_number,
    _function_answer,
    _no,
    _yes,
)


def _softmax(s: np.ndarray, axis: int) -> np.ndarray:
    z = s - s.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _weights(Q, K, keep, scale: float, axis: int = -1, mask: bool = True) -> np.ndarray:
    s = Q @ K.T / scale
    if mask:
        s = np.where(np.asarray(keep, bool)[None, :], s, -np.inf)
    return _softmax(s, axis)


def _cases() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Small queries and keys (head size 4, so sqrt(d) = 2 differs from 1 and from d): first
    without padding, then with two padded tokens."""
    g = np.random.default_rng(15)
    cases = []
    for T, pads in ((3, 0), (5, 2), (4, 1)):
        Q, K = g.normal(0, 1.5, (T, 4)).round(2), g.normal(0, 1.5, (T, 4)).round(2)
        cases.append((Q, K, np.array([1] * (T - pads) + [0] * pads)))
    return cases


def _attention_mistakes(Q, K, keep) -> dict[str, np.ndarray]:
    d = Q.shape[1]
    with np.errstate(invalid="ignore", over="ignore"):
        mistakes = {
            "the scores are not divided by sqrt(d_h): S = Q K^T / sqrt(d_h)":
                _weights(Q, K, keep, 1.0),
            "that divides by d_h; divide by its square root, sqrt(d_h)": _weights(Q, K, keep, d),
            "the padding is not masked: set the scores of padded keys to -infinity (or a very "
            "large negative number) before the softmax, so they get weight 0":
                _weights(Q, K, keep, math.sqrt(d), mask=False),
            "neither sqrt(d_h) nor the padding mask is there":
                _weights(Q, K, keep, 1.0, mask=False),
            "the softmax runs over the wrong axis: each row (one query) must sum to 1 over "
            "the keys, so use axis=-1 (or axis=1)": _weights(Q, K, keep, math.sqrt(d), axis=0),
            "those are the scores before the softmax; apply it to each row":
                np.where(np.asarray(keep, bool)[None, :], Q @ K.T / math.sqrt(d), -np.inf),
            "the matrix is transposed: row i should hold query i's weights over the keys":
                _weights(Q, K, keep, math.sqrt(d)).T,
            _ALL_MASKED: np.full((len(keep), len(keep)), 1 / len(keep)),
        }
    return mistakes


_ALL_MASKED = ("every key is masked, so every row is the same (1/T everywhere, or NaN): is "
              "keep a NumPy array? On a plain list, keep == 1 is a single False, so np.where "
              "hides every key; use np.array(keep) == 1")


@_function_answer
def check_attention_weights(fn) -> Verdict:
    """Check ``fn(Q, K, keep) -> A``, one head's attention weights, on three small cases.

    ``Q`` and ``K`` are ``(T, d_h)`` NumPy arrays, ``keep`` a NumPy array of ``T`` 0/1
    (0: padding);
    ``A[i, j]`` is the weight query ``i`` gives key ``j``: the softmax over ``j`` of
    ``q_i . k_j / sqrt(d_h)``, with padded keys at weight 0.
    """
    if not callable(fn):
        return _no(f"Not answered yet: expected a function, got {type(fn).__name__}.")
    cases, answers = _cases(), []
    for Q, K, keep in cases:  # the reader's weights on every case, or the first problem
        T = len(keep)
        result, error = _call(fn, Q.copy(), K.copy(), keep.copy())
        if error:
            return _no(f"Not yet: on {_shown(keep)}, your function raised {error}.")
        try:
            got = np.asarray(result.detach() if hasattr(result, "detach") else result,
                             dtype=float)
        except (TypeError, ValueError):
            got = None
        if got is None or got.shape != (T, T):
            kind = "nothing (None)" if result is None else (
                f"shape {got.shape}" if got is not None else type(result).__name__)
            return _no(f"Not yet: on {_shown(keep)}, expected a ({T}, {T}) matrix of weights, "
                       f"got {kind}.")
        answers.append(got)
    if all(np.isnan(got).all() for got in answers):
        return _no(f"Not yet: {_ALL_MASKED}.")
    wrong = [k for k, ((Q, K, keep), got) in enumerate(zip(cases, answers, strict=True))
             if not np.allclose(got, _weights(Q, K, keep, math.sqrt(Q.shape[1])), atol=1e-6)]
    if not wrong:
        return _yes(f"Correct: your attention weights match on all {len(cases)} cases, "
                    "padding included.")
    # a mistake is named only when it explains the answer on every case
    mistakes = [_attention_mistakes(*case) for case in cases]
    for hint in mistakes[0]:
        if all(_matches(got, m[hint]) for got, m in zip(answers, mistakes, strict=True)):
            return _no(f"Not yet: {hint}.")
    got, keep = answers[wrong[0]], cases[wrong[0]][2]
    rows = np.round(got.sum(axis=1), 4) if np.isfinite(got).all() else None
    extra = ("" if rows is None or np.allclose(rows, 1)
             else f" (your rows sum to {rows.tolist()}, not 1)")
    return _no(f"Not yet: on {_shown(keep)}, your weights differ from softmax(Q K^T / "
               f"sqrt(d_h)) with the padding masked{extra}.")


def _matches(got: np.ndarray, mistake: np.ndarray) -> bool:
    """``got`` equals the mistake wherever the mistake is a finite number (a padded column is
    NaN or -inf there with -inf, but finite with the reader's -1e9)."""
    finite = np.isfinite(mistake)
    return bool(np.allclose(got[finite], mistake[finite], atol=1e-6))


def _shown(keep) -> str:
    return f"T = {len(keep)} tokens, {list(keep).count(0)} of them padding"


def block_parameter_count(hidden_size: int, intermediate: int) -> int:
    """The number of weights in one encoder block of BERT (attention, FFN, two LayerNorms)."""
    d = whole(hidden_size, "hidden_size", least=1)
    f = whole(intermediate, "intermediate", least=1)
    attention = (3 * d * d + 3 * d) + (d * d + d)  # fused q, k, v; then the output projection
    ffn = (d * f + f) + (f * d + d)  # d -> F -> d
    return attention + ffn + 2 * (2 * d)  # two LayerNorms, gamma and beta each


def check_block_parameters(answer, hidden_size: int, intermediate: int,
                           num_heads: int) -> Verdict:
    """Check a number: how many weights one encoder block of this shape has."""
    expected = block_parameter_count(hidden_size, intermediate)
    h = whole(num_heads, "num_heads", least=1)
    if hidden_size % h:
        raise ValueError(f"hidden_size {hidden_size} must be a multiple of num_heads {num_heads}")
    d, f = hidden_size, intermediate
    mistakes = {  # difference from the right count -> what it looks like
        -(3 * d + d + f + d): "every dense layer has a bias vector as well as its matrix "
                              "(q, k, v, the output projection and both FFN layers)",
        -4 * d: "each block has two LayerNorms, each with a weight (gamma) and a bias (beta) "
                "per dimension",
        -2 * d: "there are two LayerNorms (after attention and after the FFN), each with "
                "gamma and beta",
        -(d * d + d): "the heads' outputs go through one more d x d projection (with a bias)",
        -(2 * d * d + 2 * d): "queries, keys and values each have their own d x d matrix "
                              "(and bias)",
        (h - 1) * (3 * d * d + 3 * d): "the heads share the d x 3d matrix: each head uses "
                                       "d / heads of its columns, not a full d x d of its own",
        -(d * f + d): "the feed-forward block has two matrices, d -> F and F -> d",
        -(d * f + f): "the feed-forward block has two matrices, d -> F and F -> d",
    }
    return _check_count(answer, expected, mistakes, "weights in one block")


def check_seed_gap(answer, before: Sequence[float], after: Sequence[float]) -> Verdict:
    """Check a number: the mean over seeds of ``after - before`` (paired by seed)."""
    before = numbers(before, "before", ndim=1, empty=False).tolist()  # one number per seed
    after = numbers(after, "after", ndim=1, empty=False).tolist()
    if len(before) != len(after):
        raise ValueError("before and after need one value per seed each")
    gaps = [b - a for a, b in zip(before, after, strict=True)]
    expected = sum(gaps) / len(gaps)
    mean_a, mean_b = sum(before) / len(before), sum(after) / len(after)
    mistakes = {
        "the sign is flipped: take the loss without the part minus the loss with it":
            -expected,
        "that is seed 0 alone; average the difference over every seed": gaps[0],
        "that is the ratio of the two means; the question asks for the difference in nats":
            mean_b / mean_a if mean_a else math.inf,
        "that is the largest minus the smallest value over all runs, not the mean gap":
            max(before + after) - min(before + after),
    }
    if len(gaps) == 1:
        del mistakes["that is seed 0 alone; average the difference over every seed"]
    return _check_number(answer, expected, mistakes, "the mean gap over seeds")
