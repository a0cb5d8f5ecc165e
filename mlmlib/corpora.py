"""mlmlib.corpora - text that needs no download, split into sentences, and batched for BERT.

Does:

* :func:`python_docs` - the CPython documentation that ships inside every CPython
  installation (``pydoc_data.topics``: the language reference's topics, as ``help()`` shows
  them), as named documents. The text depends on the Python version, so counts made from it
  differ slightly between versions (the course's checked outputs use Python 3.11).
* :func:`load_text` - your own text: a ``.txt`` file, or a folder of them, one document each.
  A missing path, an empty file or bytes that are not UTF-8 give a clear error; a file with
  no text (only whitespace or control characters) is an error alone, and skipped with a
  warning in a folder of others.
* :func:`sentences_of` and :func:`split_documents` - clean a document into sentences, and
  split documents (never sentences) into training and validation sets.
* :func:`pack_rows` and :func:`nsp_rows` - token ids into fixed-length rows ``[CLS] ... [SEP]``
  with padding and attention masks, or sentence pairs ``[CLS] A [SEP] B [SEP]`` with segment
  ids and 50% true next / 50% random next sentences for NSP.
* :func:`unigram_baseline` - the loss of a reader that ignores context: each target's
  frequency among the training rows' ordinary tokens (never ``[CLS]``, ``[SEP]`` or padding).
* :func:`mask_batch` - dynamic masking: each batch is masked afresh by
  :func:`mlmlib.masking.mask_tokens` when it is drawn.

Does not: download anything, or decide how a model trains (:mod:`mlmlib.train`). Nor does it
read a ``str`` where a list is expected (of documents, sentences or ids) letter by letter: that
is a ``TypeError`` saying to pass a list.

>>> docs = python_docs()
>>> docs[0].name, docs[0].text.split()[:2]
('assert', ['The', '"assert"'])
>>> sentences_of("Hello world. This is Python!  Really?")
['Hello world.', 'This is Python!', 'Really?']
"""

from __future__ import annotations

import operator
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from mlmlib._checks import (
    flag,
    generator,
    ids,
    items,
    kind,
    mapping,
    number,
    one_of,
    pathlike,
    whole,
)
from mlmlib.masking import mask_tokens
from mlmlib.tokenizer import basic_tokenize
from mlmlib.tokenizer.basic import _has_words

__all__ = ["Batch", "Document", "load_text", "mask_batch", "nsp_rows", "pack_rows",
           "paragraphs_of", "python_docs", "sentences_of", "split_documents", "tokens_of",
           "unigram_baseline"]


class Document(NamedTuple):
    name: str
    text: str


def _list_of(value, name: str, what: str) -> list:
    """``value`` as a list; a ``str`` (or one Document) is not a list of its letters."""
    if isinstance(value, Document):  # a tuple of two str, but one document
        raise TypeError(f"{name} must be a list of {what}, got one Document; pass a list")
    return items(value, name, what)


def _token_ids(seq, name: str) -> list[int]:
    """One sequence of token ids as a list of ints: whole numbers, none negative."""
    ids = _list_of(seq.tolist() if isinstance(seq, torch.Tensor) else seq, name, "token ids")
    if not all(type(i) is int for i in ids):  # the slow path: NumPy integers, or a mistake
        if any(isinstance(i, bool | torch.Tensor) or not hasattr(i, "__index__") for i in ids):
            raise TypeError(f"{name} must hold token ids (whole numbers), got {ids[:8]!r}"[:160])
        ids = [operator.index(i) for i in ids]
    if ids and min(ids) < 0:
        raise ValueError(f"{name} holds the negative token id {min(ids)}")
    if ids and max(ids) >= 2**63:
        raise ValueError(f"{name} holds the token id {max(ids)}, too large for int64 (2**63)")
    return ids


def _rows(batch, name: str):
    if not (isinstance(getattr(batch, "input_ids", None), torch.Tensor)
            and hasattr(batch, "_replace")):
        raise TypeError(f"{name} must be a Batch (from pack_rows or nsp_rows), got "
                        f"{type(batch).__name__}")
    return batch


def python_docs() -> list[Document]:
    """The CPython documentation topics that ship with Python, sorted by name."""
    from pydoc_data.topics import topics

    return [Document(name, topics[name]) for name in sorted(topics)]


def tokens_of(documents: Sequence[Document], lower: bool = True) -> list[str]:
    """Every word and punctuation token of the documents, in order (BERT's basic tokenizer)."""
    flag(lower, "lower")
    tokens: list[str] = []
    for k, doc in enumerate(_list_of(documents, "documents", "Documents")):
        if not isinstance(getattr(doc, "text", None), str):
            raise TypeError(f"documents[{k}] must be a Document(name, text), got "
                            f"{type(doc).__name__}; wrap a text as Document('name', text)")
        tokens.extend(basic_tokenize(doc.text, lower=lower))
    return tokens


def _read(file: Path) -> str:
    data = file.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{file} is not UTF-8 text: byte 0x{data[err.start]:02x} at offset "
                         f"{err.start}") from None


# a file the tokenizer reads as no token at all: no text to learn from
_NO_TEXT = "only whitespace or characters that BERT's tokenizer drops (control, format, ...)"
_EMPTY = f"is empty: it holds no text to learn from, {_NO_TEXT}"


def load_text(path) -> list[Document]:
    """Your own corpus: one ``.txt`` file, or every ``.txt`` file in a folder (sorted).

    A file with no text (nothing but whitespace and characters the tokenizer drops, such as
    control characters) is refused when it is the one file named, and skipped with a warning
    that names it in a folder; a folder whose files all hold no text is refused.
    """
    path = pathlike(path, "path")
    if path.is_file():
        text = _read(path)
        if not _has_words(text):
            raise ValueError(f"{path} {_EMPTY}")
        return [Document(path.name, text)]
    if not path.is_dir():
        raise FileNotFoundError(f"no such file or folder: {path}")
    files = sorted(p for p in path.rglob("*.txt") if p.is_file())
    if not files:
        raise ValueError(f"the folder {path} holds no .txt files")
    texts = {file: _read(file) for file in files}
    empty = [file for file, text in texts.items() if not _has_words(text)]
    if len(empty) == len(files):
        raise ValueError(f"the folder {path} holds no .txt files with text; each is empty ("
                         + ", ".join(f.name for f in empty[:3]) + ", ..." * (len(empty) > 3)
                         + f"): {_NO_TEXT}")
    for file in empty:
        warnings.warn(f"{file} {_EMPTY}; it is skipped", stacklevel=2)
    return [Document(file.name, text) for file, text in texts.items() if file not in empty]


_RULE = re.compile(r"^\s*([*=\-~^#+_])\1{2,}\s*$")  # reST underlines such as ***** or =====
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")  # a blank line (spaces allowed) ends a paragraph


def paragraphs_of(text: str) -> list[str]:
    r"""The paragraphs of a text (the pieces between blank lines), stripped, empty ones dropped.

    >>> paragraphs_of("One line.\n\n  \nTwo\nlines.\n")
    ['One line.', 'Two\nlines.']
    """
    kind(text, "text", str, "one document's text (a str)")
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]


def sentences_of(text: str) -> list[str]:
    """Split a document into sentences: drop reST underlines, join wrapped lines, split.

    A paragraph (text between blank lines) never shares a sentence with the next one; inside
    a paragraph, a sentence ends at ``.``, ``!`` or ``?`` followed by a space and a capital
    letter or a digit. Simple rules, good enough for documentation prose.
    """
    kind(text, "text", str, "one document's text (a str: for a Document pass doc.text, for "
                             "several call sentences_of on each)")
    out = []
    for paragraph in paragraphs_of(text):
        lines = [line.strip() for line in paragraph.splitlines() if not _RULE.match(line)]
        joined = " ".join(line for line in lines if line)
        out.extend(s.strip() for s in _SENTENCE_END.split(joined) if s.strip())
    return out


def split_documents(documents: Sequence, valid_fraction: float = 0.1,
                    rng=0) -> tuple[list, list]:
    """Training and validation documents: a seeded shuffle, split by document.

    At least one document goes to each side when there are two or more.
    """
    documents = _list_of(documents, "documents", "documents")
    valid_fraction = number(valid_fraction, "valid_fraction", 0, 1, above=True, below=True)
    if len(documents) < 2:
        raise ValueError("need at least two documents to split by document")
    gen = generator(rng)
    order = torch.randperm(len(documents), generator=gen).tolist()
    n_valid = min(max(1, round(len(documents) * valid_fraction)), len(documents) - 1)
    valid = sorted(order[:n_valid])
    train = sorted(order[n_valid:])
    return [documents[i] for i in train], [documents[i] for i in valid]


class Batch(NamedTuple):
    input_ids: torch.Tensor  # (B, T)
    attention_mask: torch.Tensor  # (B, T): 1 for tokens, 0 for padding
    token_type_ids: torch.Tensor  # (B, T): 0 for [CLS] A [SEP], 1 for B [SEP]
    labels: torch.Tensor | None = None  # (B, T): the truth in M, IGNORE_INDEX elsewhere
    is_next: torch.Tensor | None = None  # (B,): True where B really follows A


def _check_ids(special: dict[str, int]) -> None:
    special = mapping(special, "special", "token -> id (with [CLS], [SEP] and [PAD])")
    missing = [k for k in ("[CLS]", "[SEP]", "[PAD]") if k not in special]
    if missing:
        raise ValueError(f"special ids for {missing} are needed")
    _token_ids([special[k] for k in ("[CLS]", "[SEP]", "[PAD]")], "special's values")


def pack_rows(sequences: Sequence[Sequence[int]], max_len: int,
              special: dict[str, int]) -> Batch:
    """Rows ``[CLS] tokens [SEP] [PAD]...`` of length ``max_len``, one per sequence.

    A sequence longer than ``max_len - 2`` is cut into several rows, so no token is lost.
    """
    _check_ids(special)
    max_len = whole(max_len, "max_len (room for [CLS], a token and [SEP])", least=3)
    body = max_len - 2
    rows = []
    for n, seq in enumerate(_list_of(sequences, "sequences", "sequences of token ids")):
        seq = _token_ids(seq, f"sequences[{n}]")
        rows.extend(seq[k:k + body] for k in range(0, len(seq), body))
    if not rows:
        raise ValueError("no tokens to pack")
    ids = torch.full((len(rows), max_len), special["[PAD]"], dtype=torch.long)  # (N, T)
    for r, chunk in enumerate(rows):
        ids[r, : len(chunk) + 2] = torch.tensor([special["[CLS]"], *chunk, special["[SEP]"]])
    mask = (torch.arange(max_len) < torch.tensor([len(c) + 2 for c in rows])[:, None]).long()
    return Batch(ids, mask, torch.zeros_like(ids))


def nsp_rows(documents: Sequence[Sequence[Sequence[int]]], max_len: int,
             special: dict[str, int], rng) -> Batch:
    """Sentence pairs for next-sentence prediction, one per sentence that has a successor.

    ``documents`` is a list of documents, each a list of sentences of token ids. For each
    pair, with probability one half B is the sentence that really follows A; otherwise B is
    a sentence drawn from another document. Long pairs are cut from the end of the longer
    sentence, as BERT does, to fit ``[CLS] A [SEP] B [SEP]`` in ``max_len``.
    """
    _check_ids(special)
    max_len = whole(max_len, "max_len (room for [CLS] A [SEP] B [SEP], a token in A and B)", 5)
    documents = [[_token_ids(s, f"documents[{d}][{k}]") for k, s in
                  enumerate(_list_of(doc, f"documents[{d}]", "sentences (lists of token ids)"))]
                 for d, doc in enumerate(_list_of(documents, "documents", "documents"))]
    if len(documents) < 2:
        raise ValueError("random next sentences come from other documents: need two or more")
    for d, doc in enumerate(documents):
        empty = "has no sentence" if not doc else "has an empty sentence" if not all(doc) else ""
        if empty:
            raise ValueError(f"documents[{d}] {empty}: drop empty ones first")
    gen = generator(rng)
    rows, types, flags = [], [], []
    for d, doc in enumerate(documents):
        for k in range(len(doc) - 1):
            a = list(doc[k])
            if torch.rand((), generator=gen) < 0.5:
                b, is_next = list(doc[k + 1]), True
            else:
                other = int(torch.randint(len(documents) - 1, (), generator=gen))
                other += other >= d  # any document but this one
                pool = documents[other]
                b = list(pool[int(torch.randint(len(pool), (), generator=gen))])
                is_next = False
            while len(a) + len(b) > max_len - 3:
                (a if len(a) > len(b) else b).pop()
            rows.append([special["[CLS]"], *a, special["[SEP]"], *b, special["[SEP]"]])
            types.append([0] * (len(a) + 2) + [1] * (len(b) + 1))
            flags.append(is_next)
    if not rows:
        raise ValueError("no document has two sentences in a row")
    ids = torch.full((len(rows), max_len), special["[PAD]"], dtype=torch.long)  # (N, T)
    segments = torch.zeros_like(ids)
    for r, (row, seg) in enumerate(zip(rows, types, strict=True)):
        ids[r, : len(row)] = torch.tensor(row)
        segments[r, : len(seg)] = torch.tensor(seg)
    mask = (torch.arange(max_len) < torch.tensor([len(r) for r in rows])[:, None]).long()
    return Batch(ids, mask, segments, None, torch.tensor(flags))


def mask_batch(batch: Batch, vocab_size: int, mask_token_id: int, special_ids: Sequence[int],
               rng, rate: float = 0.15, rule: str = "bernoulli", mask_prob: float = 0.8,
               random_prob: float = 0.1) -> Batch:
    """The same rows with fresh masking: corrupted ``input_ids`` and their ``labels``."""
    masked = mask_tokens(_rows(batch, "batch").input_ids, vocab_size=vocab_size,
                         mask_token_id=mask_token_id, special_ids=special_ids, rng=rng, rate=rate,
                         rule=rule, mask_prob=mask_prob, random_prob=random_prob)
    return batch._replace(input_ids=masked.input_ids, labels=masked.labels)


def unigram_baseline(rows: Batch, targets, vocab_size: int,
                     special_ids: Sequence[int], reduction: str = "mean") -> float | torch.Tensor:
    r"""The mean ``-log P(target)`` of a reader that ignores context: the unigram baseline.

    .. math::

        P(v) = \frac{c_v + \tfrac12}{N + \tfrac12 K}

    where :math:`c_v` counts token ``v`` among the training rows' ordinary tokens (padding and
    every special id left out, since no target is ever one of them), :math:`N` is their total
    and :math:`K` the number of ordinary ids in the vocabulary; the one-half added to every
    count keeps a token never seen in training finite. ``targets`` are the ids to score (the
    labels of an evaluation set that are not ``IGNORE_INDEX``). ``reduction="none"`` returns
    each target's ``-log P`` instead of their mean, as ``torch.nn.functional.cross_entropy``
    does, so that the baseline can be compared with a model target by target.

    >>> ids = torch.tensor([[2, 7, 7, 8, 3]])  # [CLS] 7 7 8 [SEP]: c_7 = 2, N = 3
    >>> rows = Batch(ids, torch.ones_like(ids), torch.zeros_like(ids))
    >>> round(unigram_baseline(rows, torch.tensor([7]), 10, [0, 1, 2, 3, 4]), 4)
    0.7885
    """
    tokens = ids(_rows(rows, "rows").input_ids, "rows.input_ids")
    mask = rows.attention_mask
    if tokens.shape != mask.shape:
        raise ValueError(f"rows.input_ids {tuple(tokens.shape)} and rows.attention_mask "
                         f"{tuple(mask.shape)} must have one shape")
    vocab_size = whole(vocab_size, "vocab_size", least=1)
    one_of(reduction, "reduction", ("mean", "none"))
    special = torch.tensor(sorted(set(_token_ids(special_ids, "special_ids"))), dtype=torch.long)
    seen = tokens[mask.bool()].long()
    outside = seen[(seen < 0) | (seen >= vocab_size)].tolist() + [
        i for i in special.tolist() if i >= vocab_size]
    if outside:
        raise ValueError(f"id {outside[0]} in rows or special_ids is outside the vocabulary of "
                         f"{vocab_size} tokens")
    seen = seen[~torch.isin(seen, special)]
    try:
        targets = torch.as_tensor(targets).reshape(-1)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"targets must be token ids, got {type(targets).__name__}") from None
    if not len(targets):
        raise ValueError("no targets to score")
    targets = ids(targets, "targets").long()
    if torch.isin(targets, special).any() or (targets < 0).any() or (targets >= vocab_size).any():
        raise ValueError("every target must be an ordinary token id of the vocabulary")
    counts = torch.bincount(seen, minlength=vocab_size).double()
    ordinary = vocab_size - len(special)
    p = (counts[targets] + 0.5) / (len(seen) + 0.5 * ordinary)
    return float(-p.log().mean()) if reduction == "mean" else -p.log()
