r"""mlmlib.masking - the first stage of the pipeline, hide: choose the set M, corrupt the input.

Does:

* :func:`mask_positions` hides the positions *you* name (the course's worked examples).
* :func:`choose_positions` picks M at random by one of two documented rules:

  - ``"bert"``: exactly ``min(max_predictions, max(1, round(n * rate)))`` of the ``n``
    candidates (Google's BERT ``create_pretraining_data.py`` and d2l). Python's ``round``
    rounds halves to even, and so does this function.
  - ``"bernoulli"``: each candidate independently with probability ``rate`` (Hugging Face's
    ``DataCollatorForLanguageModeling``). ``|M|`` then varies, and can be 0.

* :func:`span_positions` picks a given number of positions in contiguous spans of geometric
  length (SpanBERT's masks), to compare with the same number of single tokens;
  :func:`mean_run_length` measures how long the runs of hidden positions came out.
* :func:`mask_tokens` does BERT's corruption on a batch of token ids: of the chosen positions,
  80% become ``[MASK]``, 10% a random word, 10% stay as they are (all three shares configurable),
  and the labels keep the original token at every chosen position and ``IGNORE_INDEX``
  elsewhere. It is vectorized (no Python loop per token), works on ``(T,)`` or ``(B, T)``
  batches with padding, supports whole-word masking of WordPiece ``##`` pieces, and never
  changes the caller's tensor.

Two departures from the reference implementations, both on purpose:

* special tokens (``[CLS]``, ``[SEP]``, ``[PAD]``, ``[MASK]``, ...) are never chosen, *and* the
  random replacement is drawn from ordinary tokens only. Google's BERT, Hugging Face's collator
  and d2l all draw the replacement from the whole vocabulary, so they can write ``[PAD]``,
  ``[CLS]`` or even ``[MASK]`` into a sentence.
* Google's BERT computes ``n`` as the sequence length *including* ``[CLS]`` and ``[SEP]``; here
  ``n`` is the number of candidates (positions that may be chosen). Under whole-word masking,
  the ``"bert"`` count is a count of words, where Google counts pieces and skips a word that
  would overshoot.

Does not: tokenize text (:mod:`mlmlib.tokenizer`) or compute any loss (:mod:`mlmlib.loss`).
Every random draw comes from the ``rng`` argument: a seed (int) or a ``torch.Generator``.
Token ids may have any integer dtype (compared as ``int64``: every dtype gives the same result).
Bad input raises a ``ValueError`` or ``TypeError`` that names the argument.

>>> import torch
>>> from mlmlib.masking import mask_positions
>>> mask_positions(["the", "cat", "sat", "on", "the", "mat"], [1])
(['the', '[MASK]', 'sat', 'on', 'the', 'mat'], [None, 'cat', None, None, None, None])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import torch

from mlmlib._checks import generator, ids, indices, items, one_of, probability, whole
from mlmlib.constants import IGNORE_INDEX

__all__ = [
    "IGNORE_INDEX",
    "MaskedBatch",
    "bert_count",
    "choose_positions",
    "is_continuation",
    "mask_positions",
    "mask_tokens",
    "mean_run_length",
    "span_positions",
]

RULES = ("bert", "bernoulli")


class MaskedBatch(NamedTuple):
    """What :func:`mask_tokens` returns: new tensors, the caller's are untouched."""

    input_ids: torch.Tensor  # the corrupted ids the model reads
    labels: torch.Tensor  # the original id where a position is in M, IGNORE_INDEX elsewhere


def _check_rule(rule: str, max_predictions) -> int | None:
    """A known rule, and ``max_predictions`` None or a cap (at least 1) on the "bert" count."""
    one_of(rule, "rule", RULES)
    if max_predictions is None:
        return None
    max_predictions = whole(max_predictions, "max_predictions (or None)", least=1)
    if rule != "bert":
        raise ValueError("max_predictions caps the 'bert' rule only; 'bernoulli' has no count")
    return max_predictions


# |M| = min(max_predictions, max(1, round(n * rate)))     (and 0 when there is no candidate)
def bert_count(n: int, rate: float = 0.15, max_predictions: int | None = None) -> int:
    """How many of ``n`` candidates the ``"bert"`` rule masks.

    >>> bert_count(4), bert_count(100), bert_count(512, max_predictions=20)
    (1, 15, 20)
    """
    rate = probability(rate, "rate")
    max_predictions = _check_rule("bert", max_predictions)
    n = whole(n, "n (the number of candidates)", least=0)
    if n == 0:
        return 0
    k = max(1, round(n * rate))
    return min(k, n) if max_predictions is None else min(k, n, max_predictions)


def _bert_counts(n: torch.Tensor, rate: float, max_predictions: int | None) -> torch.Tensor:
    """Vectorized :func:`bert_count` for a tensor of candidate counts ``n``."""
    # float64 and round-half-to-even, exactly as Python's round(n * rate) does
    k = torch.round(n.double() * rate).long().clamp(min=1)
    if max_predictions is not None:
        k = k.clamp(max=max_predictions)
    return torch.minimum(k, n)


def _select(candidates: torch.Tensor, rate: float, rule: str, max_predictions: int | None,
            gen: torch.Generator) -> torch.Tensor:
    """Choose among ``candidates`` (a bool tensor ``(B, U)``); returns a bool tensor ``(B, U)``."""
    keys = torch.rand(candidates.shape, generator=gen)
    if rule == "bernoulli":
        return candidates & (keys < rate)
    # "bert": the k candidates with the smallest random keys in each row
    keys = keys.masked_fill(~candidates, 2.0)  # non-candidates sort last
    rank = keys.argsort(dim=1).argsort(dim=1)  # (B, U): 0 for the smallest key
    k = _bert_counts(candidates.sum(dim=1), rate, max_predictions)  # (B,)
    return rank < k[:, None]


def choose_positions(candidates, rate: float = 0.15, *, rule: str = "bert",
                     max_predictions: int | None = None, rng) -> torch.Tensor:
    """Choose the masked set M among the candidate positions.

    Args:
        candidates: ``n`` (positions ``0..n-1``) or a sequence of candidate positions.
        rate: the masking rate, 0.15 in BERT.
        rule: ``"bert"`` (an exact count) or ``"bernoulli"`` (each candidate independently).
        max_predictions: a cap on ``|M|`` for the ``"bert"`` rule (Google's BERT uses 20).
        rng: a seed or a ``torch.Generator``.

    Returns:
        the chosen positions, sorted, as a 1-D ``torch.long`` tensor (possibly empty).

    >>> choose_positions(10, rng=0)
    tensor([2, 3])
    """
    max_predictions = _check_rule(rule, max_predictions)
    rate = probability(rate, "rate")
    pool = _pool(candidates)
    chosen = _select(torch.ones(1, pool.numel(), dtype=torch.bool), rate, rule, max_predictions,
                     generator(rng))[0]
    return pool[chosen].sort().values


def _pool(candidates) -> torch.Tensor:
    """The candidate positions, a 1-D ``torch.long`` tensor: ``0..n-1`` for a count ``n``."""
    if isinstance(candidates, str | bytes) or not isinstance(candidates, Iterable) or (
            getattr(candidates, "ndim", None) == 0):  # a count: a Python, NumPy or 0-d integer
        return torch.arange(whole(candidates, "candidates (a count n, or positions)", least=0))
    if getattr(candidates, "ndim", 1) != 1:
        raise TypeError(f"candidates must be a count n or a 1-D list of positions, got "
                        f"shape {tuple(candidates.shape)}")
    return torch.tensor(indices(candidates, "candidates", unique=True), dtype=torch.long,
                        device=candidates.device if torch.is_tensor(candidates) else None)


# P(L = k) = p (1 - p)^(k - 1) / Z  for k = 1..max_span: SpanBERT's geometric, cut at max_span
def span_positions(candidates, count: int, *, rng, p: float = 0.2,
                   max_span: int = 10) -> torch.Tensor:
    r"""Choose ``count`` of the candidate positions in contiguous spans, as SpanBERT does.

    Span after span until ``count`` positions are chosen: a length ``L`` drawn from the
    geometric distribution cut at ``K = max_span``,

    .. math::

        P(L = k) = \frac{p (1 - p)^{k - 1}}{\sum_{j=1}^{K} p (1 - p)^{j - 1}},
        \qquad k = 1, \dots, K

    (mean 3.8 for SpanBERT's ``p = 0.2``, ``max_span = 10``), cut to the budget that is left so
    the total is exactly ``count``; then a start drawn uniformly among those where the span
    overlaps no earlier one (a start that collides is drawn again). Where no start fits (a row
    almost full), the span shrinks until one does. Spans may touch, and then read as one longer
    run. ``p = 1`` gives spans of one token: ``count`` positions uniformly at random.

    Args:
        candidates: ``n`` (positions ``0..n-1``) or a list of candidate positions; a span runs
            over consecutive candidates, in sorted order.
        count: how many positions to choose, at most the number of candidates.
        rng: a seed or a ``torch.Generator``.
        p: the geometric distribution's parameter, in ``(0, 1]``.
        max_span: the longest span.

    Returns:
        the ``count`` chosen positions, sorted, as a 1-D ``torch.long`` tensor.

    >>> span_positions(30, 8, rng=4)  # 8 positions, in three runs
    tensor([ 5,  6,  7, 14, 15, 16, 20, 21])
    """
    pool = _pool(candidates).sort().values
    count = whole(count, "count", least=0)
    if count > len(pool):
        raise ValueError(f"count = {count} is more than the {len(pool)} candidates")
    p = probability(p, "p", above=True)
    max_span = whole(max_span, "max_span", least=1)
    gen = generator(rng)
    weights = p * (1 - p) ** torch.arange(max_span, dtype=torch.float64)  # P(L = 1..max_span)
    taken = torch.zeros(len(pool), dtype=torch.bool)
    left = count
    while left:
        length = min(int(torch.multinomial(weights, 1, generator=gen)) + 1, left)
        free = torch.cat([torch.zeros(1, dtype=torch.long), (~taken).long().cumsum(0)])
        fits = free[length:] - free[:-length] == length  # (n - L + 1,): span [s, s + L) free
        while not fits.any():  # no room for this length: shrink (one token always fits)
            length -= 1
            fits = free[length:] - free[:-length] == length
        starts = fits.nonzero()[:, 0]
        s = int(starts[torch.randint(len(starts), (), generator=gen)])
        taken[s:s + length] = True
        left -= length
    return pool[taken.to(pool.device)]


def mean_run_length(masks) -> float:
    """The mean length of a run of consecutive hidden positions, over the masks of several
    sentences: the number of hidden positions divided by the number of runs. Spans that touch
    read as one run, as the model sees them.

    >>> mean_run_length([[1, 2, 3, 7], [0], [4, 5]])  # runs of 3, 1, 1 and 2
    1.75
    """
    masks = [sorted(indices(mask.tolist() if isinstance(mask, torch.Tensor) else mask,
                            f"masks[{k}]", unique=True))
             for k, mask in enumerate(items(masks, "masks", "lists of positions"))]
    runs = sum(1 for mask in masks for k, i in enumerate(mask) if k == 0 or mask[k - 1] != i - 1)
    if not runs:
        raise ValueError("no hidden position in any mask: a mean run length needs one")
    return sum(map(len, masks)) / runs


def is_continuation(pieces: Sequence[str]) -> list[bool]:
    """Which WordPiece pieces continue the word before them (they start with ``##``).

    >>> is_continuation(["the", "em", "##bed", "##ding", "works"])
    [False, False, True, True, False]
    """
    pieces = items(pieces, "pieces", "WordPiece pieces", text=True)
    return [p.startswith("##") for p in pieces]


def mask_positions(tokens, positions: Iterable[int], mask_token="[MASK]"):
    """Hide the named positions: a new sequence with ``mask_token`` there, and the labels.

    ``tokens`` is a list of words (labels: the hidden word, ``None`` elsewhere) or a 1-D tensor
    of integer ids (then ``mask_token`` is the ``[MASK]`` id, and the labels are ``torch.long``:
    the hidden id, ``IGNORE_INDEX`` elsewhere). Positions count from 0.

    >>> mask_positions(["the", "cat", "sat"], [5])
    Traceback (most recent call last):
    ...
    ValueError: cannot mask position 5 in a 3-token sentence (positions are 0..2)
    """
    is_tensor = isinstance(tokens, torch.Tensor)
    if is_tensor:
        if ids(tokens, "tokens").ndim != 1:
            raise ValueError(f"mask_positions takes one sentence (1-D), got shape "
                             f"{tuple(tokens.shape)}")
        fits = torch.iinfo(tokens.dtype)
        mask_token = whole(mask_token, f"mask_token (the [MASK] id, in the ids' {tokens.dtype})",
                           fits.min, fits.max)
    else:
        tokens = items(tokens, "tokens", "words (or a 1-D tensor of ids)")
        if not isinstance(mask_token, str) or not mask_token:
            raise TypeError(f"mask_token must be the text written for a hidden word, such as "
                            f"'[MASK]', got {mask_token!r}")
    seen = set(indices(positions, "positions", len(tokens), unique=True,
                       phrase="cannot mask position {p} in a {n}-token sentence "
                              "(positions are 0..{last})"))
    if is_tensor:
        index = torch.tensor(sorted(seen), dtype=torch.long)
        corrupted = tokens.clone()
        corrupted[index] = mask_token
        labels = torch.full(tokens.shape, IGNORE_INDEX, dtype=torch.long)  # -100 fits any dtype
        labels[index] = tokens[index].long()
        return corrupted, labels
    corrupted = [mask_token if i in seen else t for i, t in enumerate(tokens)]
    labels = [t if i in seen else None for i, t in enumerate(tokens)]
    return corrupted, labels


def _nth_ordinary(k: torch.Tensor, specials: tuple[int, ...]) -> torch.Tensor:
    """The ``k``-th ordinary id (from 0) for each entry of ``k``: the random-swap pool, drawn
    without a table as long as the vocabulary (which may be huge)."""
    for s in specials:  # ascending: a special at or below the id so far pushes it up by one
        k = k + (k >= s)
    return k


def _whole_words(cont: torch.Tensor, ordinary: torch.Tensor):
    """Group pieces into words: per position, the index of its word and whether it is a candidate.

    A word is a piece that does not continue the one before it, plus its ``##`` pieces. Words
    are candidates when their first piece is an ordinary token.
    """
    starts = ~cont  # (B, T)
    word = starts.long().cumsum(dim=1) - 1  # (B, T): -1 for pieces before any word start
    start_ok = starts & ordinary  # (B, T)
    word_ok = torch.zeros(cont.shape, dtype=torch.bool)  # (B, U=T): candidate flag per word
    rows, _ = starts.nonzero(as_tuple=True)  # one entry per word, in row-major order
    word_ok[rows, word[starts]] = start_ok[starts]
    return word, word_ok


def mask_tokens(input_ids: torch.Tensor, *, vocab_size: int, mask_token_id: int,
                special_ids: Iterable[int], rng, rate: float = 0.15, rule: str = "bernoulli",
                mask_prob: float = 0.8, random_prob: float = 0.1,
                max_predictions: int | None = None,
                continuation: torch.Tensor | None = None) -> MaskedBatch:
    """BERT's corruption of a batch: choose M, then [MASK] / random word / unchanged.

    Args:
        input_ids: integer ids, shape ``(T,)`` or ``(B, T)``; padding is a special id.
        vocab_size: ``|V|``; ids run from 0 to ``vocab_size - 1``.
        mask_token_id: the id of ``[MASK]`` (must be one of ``special_ids``).
        special_ids: ids never chosen and never used as a random replacement.
        rng: a seed or a ``torch.Generator``.
        rate: the share of candidates chosen (0.15 in BERT).
        rule: ``"bernoulli"`` (Hugging Face, the default) or ``"bert"`` (exact count per row).
        mask_prob, random_prob: of the chosen positions, the share written as ``[MASK]`` and
            the share replaced by a random ordinary word; the rest, ``1 - mask_prob -
            random_prob``, keep their word. Each is an unconditional share (0.1, not the 0.5
            that Hugging Face's code uses for "half of the remaining 20%").
        max_predictions: a cap on ``|M|`` per row (``"bert"`` rule only).
        continuation: optional bool tensor like ``input_ids``, True on ``##`` pieces; then
            whole words are chosen (every piece of a chosen word is in M) and each piece is
            then corrupted on its own draw, as in Google's and Hugging Face's code.

    Returns:
        ``MaskedBatch(input_ids, labels)``, new tensors of the input's shape; ``input_ids``
        keeps the input's dtype, ``labels`` are ``torch.long``.
    """
    max_predictions = _check_rule(rule, max_predictions)
    rate = probability(rate, "rate")
    mask_prob = probability(mask_prob, "mask_prob")
    random_prob = probability(random_prob, "random_prob")
    if mask_prob + random_prob > 1.0 + 1e-12:
        raise ValueError(f"mask_prob + random_prob = {mask_prob + random_prob:g} is more than 1; "
                         "the rest (kept unchanged) cannot be negative")
    vocab_size = whole(vocab_size, "vocab_size", least=1)
    if vocab_size > 2**63:
        raise ValueError(f"vocab_size {vocab_size} is more ids than int64 can hold (2**63)")
    ids(input_ids, "input_ids", vocab_size)
    if input_ids.ndim not in (1, 2):
        raise ValueError(f"input_ids must have shape (T,) or (B, T), got {tuple(input_ids.shape)}")
    if vocab_size - 1 > torch.iinfo(input_ids.dtype).max:
        raise ValueError(f"input_ids of dtype {input_ids.dtype} cannot hold the ids of a "
                         f"{vocab_size}-word vocabulary; use torch.long")
    mask_token_id = whole(mask_token_id, "mask_token_id")
    specials = tuple(sorted(set(indices(special_ids, "special_ids", vocab_size,
                                        phrase="{name}: {p} is not an id of the {n}-word "
                                               "vocabulary"))))
    if mask_token_id not in specials:
        raise ValueError(f"mask_token_id {mask_token_id} must be one of special_ids "
                         f"{list(specials)}")
    n_ordinary = vocab_size - len(specials)  # ids that may be chosen or written at random
    if random_prob > 0 and n_ordinary == 0:
        raise ValueError("the vocabulary has no ordinary word to use as a random replacement")
    gen = generator(rng)

    # the draws come from a CPU generator, so a batch on a GPU is masked on the CPU (the same
    # numbers on every device) and the result returned to the batch's own device
    flat = input_ids.detach().cpu()
    flat = flat.reshape(1, -1) if input_ids.ndim == 1 else flat  # (B, T)
    ordinary = ~torch.isin(flat.long(), torch.tensor(specials, dtype=torch.long))  # (B, T)
    if continuation is None:
        chosen = _select(ordinary, rate, rule, max_predictions, gen)  # (B, T)
    else:
        if not isinstance(continuation, torch.Tensor) or continuation.dtype != torch.bool:
            raise TypeError("continuation must be a bool tensor (True on ## pieces)")
        if continuation.shape != input_ids.shape:
            raise ValueError(f"continuation has shape {tuple(continuation.shape)} but input_ids "
                             f"have shape {tuple(input_ids.shape)}")
        cont = continuation.cpu().reshape(flat.shape)
        word, word_ok = _whole_words(cont, ordinary)  # (B, T), (B, U)
        word_chosen = _select(word_ok, rate, rule, max_predictions, gen)  # (B, U)
        chosen = word_chosen.gather(1, word.clamp(min=0)) & (word >= 0) & ordinary  # (B, T)

    # one uniform draw per position decides its fate: [MASK] | random word | unchanged
    u = torch.rand(flat.shape, generator=gen)
    to_mask = chosen & (u < mask_prob)
    to_random = chosen & (u >= mask_prob) & (u < mask_prob + random_prob)
    corrupted = torch.where(to_mask, torch.as_tensor(mask_token_id, dtype=flat.dtype), flat)
    if n_ordinary:  # (an all-special vocabulary is allowed when random_prob is 0)
        replacement = _nth_ordinary(torch.randint(n_ordinary, flat.shape, generator=gen),
                                    specials)  # (B, T)
        corrupted = torch.where(to_random, replacement.to(flat.dtype), corrupted)
    labels = torch.where(chosen, flat.long(), IGNORE_INDEX)  # (B, T), long as PyTorch wants
    return MaskedBatch(corrupted.reshape(input_ids.shape).to(input_ids.device),
                       labels.reshape(input_ids.shape).to(input_ids.device))
