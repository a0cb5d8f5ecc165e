"""mlmlib.train.data - what a run trains and evaluates on, checked before the first step.

Does: :class:`TrainData` bundles the training rows (masked afresh for every batch), the fixed
evaluation batch and the vocabulary facts the masking needs, and checks that they fit together
(ids inside the vocabulary, at least one evaluation target, [MASK] among the special ids).
:func:`eval_batch` is the evaluation protocol; :func:`toy_data` samples the toy world;
:func:`text_data` tokenizes text (the CPython docs, a ``.txt`` file or a folder of them),
holding out whole documents - or, for a single file, whole paragraphs - for evaluation.
:func:`fingerprint` is a checksum of the data, so a resumed run can tell it is fed the same.

Does not: train (:mod:`mlmlib.train.trainer`) or define how masks are drawn
(:mod:`mlmlib.masking`).
"""

from __future__ import annotations

import hashlib
import numbers
from dataclasses import dataclass, field

import torch

from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import Batch, Document, mask_batch, paragraphs_of

__all__ = ["EVAL_RATE", "TrainData", "eval_batch", "fingerprint", "text_data", "toy_data"]


def _check_rows(name: str, rows, vocab_size: int, labelled: bool) -> None:
    if not isinstance(rows, Batch):
        raise TypeError(f"{name} must be a mlmlib.corpora.Batch, got {type(rows).__name__}")
    ids = rows.input_ids
    if not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.dtype == torch.bool \
            or ids.ndim != 2:
        raise TypeError(f"{name}.input_ids must be a (B, T) tensor of integer token ids")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(f"{name} holds no rows: shape {tuple(ids.shape)}")
    if int(ids.min()) < 0 or int(ids.max()) >= vocab_size:
        bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
        raise ValueError(f"{name} holds token id {bad}, outside the vocabulary of {vocab_size}")
    if labelled:
        if rows.labels is None:
            raise ValueError(f"{name} has no labels: make it with eval_batch()")
        if not (rows.labels != IGNORE_INDEX).any():
            raise ValueError(f"{name} has no target to score: every label is IGNORE_INDEX")


@dataclass
class TrainData:
    rows: Batch  # training rows (no labels): masked afresh for every batch
    eval: Batch  # evaluation rows with fixed labels (100% [MASK] at every target)
    vocab_size: int
    mask_token_id: int
    special_ids: list[int] = field(default_factory=list)

    def __post_init__(self):
        if isinstance(self.vocab_size, bool) or not isinstance(self.vocab_size, numbers.Integral) \
                or self.vocab_size < 2:
            raise ValueError(f"vocab_size must be a whole number of at least 2, got "
                             f"{self.vocab_size!r}")
        _check_rows("rows", self.rows, self.vocab_size, labelled=False)
        _check_rows("eval", self.eval, self.vocab_size, labelled=True)
        if isinstance(self.special_ids, str | bytes) or not isinstance(self.special_ids,
                                                                       list | tuple):
            raise TypeError(f"special_ids must be a list of token ids, got "
                            f"{self.special_ids!r}")
        for i in self.special_ids:
            if isinstance(i, bool) or not isinstance(i, numbers.Integral) \
                    or not 0 <= i < self.vocab_size:
                raise ValueError(f"special_ids must be ids inside the vocabulary of "
                                 f"{self.vocab_size}, got {i!r}")
        if self.mask_token_id not in self.special_ids:
            raise ValueError(f"mask_token_id {self.mask_token_id!r} must be one of special_ids "
                             f"{list(self.special_ids)}")
        if len(set(self.special_ids)) >= self.vocab_size:
            raise ValueError("every id is in special_ids: there is no ordinary word to learn")
        padding = self.rows.input_ids[self.rows.attention_mask == 0].unique().tolist()
        stray = sorted(set(padding) - set(self.special_ids))
        if stray:
            raise ValueError(f"the padding of rows uses id {stray[0]}, which is not in "
                             "special_ids: it would be chosen as a target and trained on")


def fingerprint(data: TrainData) -> str:
    """SHA-256 of everything in ``data`` that shapes training, as hex."""
    digest = hashlib.sha256()
    for batch in (data.rows, data.eval):
        for t in batch:
            if t is not None:
                digest.update(str((tuple(t.shape), t.dtype)).encode())
                digest.update(t.contiguous().numpy().tobytes())
    digest.update(repr((data.vocab_size, data.mask_token_id, list(data.special_ids))).encode())
    return digest.hexdigest()


#: The evaluation protocol's share of words hidden (BERT's 15%).
EVAL_RATE = 0.15


def eval_batch(rows: Batch, vocab_size: int, mask_token_id: int, special_ids, rng,
               rate: float = EVAL_RATE) -> Batch:
    """The evaluation protocol: BERT's exact count of targets per row, every one [MASK]."""
    return mask_batch(rows, vocab_size, mask_token_id, special_ids, rng, rate=rate,
                      rule="bert", mask_prob=1.0, random_prob=0.0)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) \
            or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be a whole number from 0 to 2**63 - 1, got {seed!r}")
    return int(seed)


def toy_data(world, n_train: int = 20000, n_eval: int = 1000, seed: int = 0):
    """Training and evaluation rows from the toy world, and the evaluation masks.

    Returns ``(data, vocab, eval_sentences, eval_masks)``; the masks are word positions, for
    ``world.bayes_loss(eval_sentences, eval_masks)``.
    """
    seed = _check_seed(seed)
    from mlmlib.corpora import pack_rows
    from mlmlib.tokenizer import SPECIAL_TOKENS
    from mlmlib.toyworld import ToyWorld

    if not isinstance(world, ToyWorld):
        raise TypeError(f"world must be a mlmlib.toyworld.ToyWorld, got {type(world).__name__}")
    for name, n in (("n_train", n_train), ("n_eval", n_eval)):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"{name} must be a whole number of sentences, at least 1, got {n!r}")
    vocab = [*SPECIAL_TOKENS, *world.words]
    ids = {t: i for i, t in enumerate(vocab)}
    special = {t: ids[t] for t in SPECIAL_TOKENS}
    g = torch.Generator().manual_seed(seed)
    train = world.sample(n_train, rng=g)
    evaluation = world.sample(n_eval, rng=g)
    max_len = world.max_len + 2
    rows = pack_rows([[ids[w] for w in s] for s in train], max_len, special)
    eval_rows = pack_rows([[ids[w] for w in s] for s in evaluation], max_len, special)
    specials = list(special.values())
    ev = eval_batch(eval_rows, len(vocab), ids["[MASK]"], specials, g)
    masks = [((ev.labels[r] != IGNORE_INDEX).nonzero().squeeze(1) - 1).tolist()
             for r in range(len(evaluation))]  # -1: the [CLS] in front
    data = TrainData(rows, ev, len(vocab), ids["[MASK]"], specials)
    return data, vocab, evaluation, masks


def _paragraphs(doc: Document) -> list[Document]:
    """One file's paragraphs (text between blank lines) as documents of their own."""
    return [Document(f"{doc.name} paragraph {i + 1}", p)
            for i, p in enumerate(paragraphs_of(doc.text))]


def text_data(source: str, vocab_size: int = 2000, max_len: int = 64, seed: int = 0):
    """Train a WordPiece vocabulary and pack rows from text; ``(data, wordpiece)``.

    ``source`` is ``"python-docs"`` or a ``.txt`` file or folder. A tenth of the documents
    (at least one) is held out for evaluation; a single file is split into its paragraphs,
    so it needs at least two.
    """
    from mlmlib.corpora import load_text, pack_rows, python_docs, split_documents
    from mlmlib.tokenizer import SPECIAL_TOKENS, train_wordpiece

    seed = _check_seed(seed)
    if not isinstance(source, str) or not source:
        raise ValueError(f"source must be 'python-docs' or the path of a .txt file or folder, "
                         f"got {source!r}")
    docs = python_docs() if source == "python-docs" else load_text(source)
    if len(docs) == 1:
        docs = _paragraphs(docs[0])
        if len(docs) < 2:
            raise ValueError(f"{source} is one file with one paragraph: at least two paragraphs "
                             "(separated by a blank line) are needed, one to hold out for "
                             "evaluation")
    train_docs, valid_docs = split_documents(docs, 0.1, rng=seed)
    wp = train_wordpiece([d.text for d in train_docs], vocab_size)
    special = {t: wp.ids[t] for t in SPECIAL_TOKENS}
    rows = pack_rows([wp.encode(d.text) for d in train_docs], max_len, special)
    valid = pack_rows([wp.encode(d.text) for d in valid_docs], max_len, special)
    g = torch.Generator().manual_seed(seed + 1)
    ev = eval_batch(valid, len(wp), special["[MASK]"], wp.special_ids, g)
    return TrainData(rows, ev, len(wp), special["[MASK]"], wp.special_ids), wp
