"""mlmlib.tokenizer - text to tokens to ids: BERT's basic tokenizer and a word-level vocabulary.

Does:

* :func:`basic_tokenize` - BERT's "basic" step, before WordPiece: drop control characters,
  lower-case, strip accents, put spaces around CJK characters and split off every punctuation
  character (ASCII symbols such as ``$`` and ``^`` count as punctuation, as in BERT).
* :class:`WordVocab` - a word-level vocabulary: the special tokens ``[PAD] [UNK] [CLS] [SEP]
  [MASK]`` (ids 0-4), then the words of a corpus by falling count, ties in alphabetical order,
  so the same text always gives the same ids. Unknown words map to ``[UNK]``.

Does not: split words into WordPiece ``##`` pieces (the mini BERT's tokenizer adds that), or
read files (:mod:`mlmlib.corpora`).

>>> basic_tokenize("Héllo, World! x^2")
['hello', ',', 'world', '!', 'x', '^', '2']
>>> vocab = WordVocab.from_tokens(["the", "cat", "sat", "the"])
>>> vocab.encode(["the", "dog"])
[5, 1]
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["SPECIAL_TOKENS", "WordVocab", "basic_tokenize"]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    # BERT treats every non-letter, non-digit ASCII symbol as punctuation ("$", "^", "`", ...)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def _clean(text: str) -> str:
    out = []
    for ch in text:
        cp = ord(ch)
        if cp in (0, 0xFFFD):
            continue
        cat = unicodedata.category(ch)
        if ch in " \t\n\r" or cat == "Zs":
            out.append(" ")
        elif cat.startswith("C"):
            continue  # control and format characters
        elif _is_cjk(cp):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    return "".join(out)


def basic_tokenize(text: str, lower: bool = True) -> list[str]:
    """Split text into words and punctuation the way BERT's basic tokenizer does."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tokens = []
    for word in _clean(text).split():
        if lower:
            word = "".join(c for c in unicodedata.normalize("NFD", word.lower())
                           if unicodedata.category(c) != "Mn")
        piece = []
        for ch in word:
            if _is_punctuation(ch):
                if piece:
                    tokens.append("".join(piece))
                    piece = []
                tokens.append(ch)
            else:
                piece.append(ch)
        if piece:
            tokens.append("".join(piece))
    return tokens


class WordVocab:
    """Words <-> ids, with BERT's five special tokens first."""

    def __init__(self, words: Sequence[str]):
        words = list(words)
        if list(words[: len(SPECIAL_TOKENS)]) != list(SPECIAL_TOKENS):
            raise ValueError(f"a vocabulary starts with the special tokens {SPECIAL_TOKENS}")
        if len(set(words)) != len(words):
            raise ValueError("a word appears twice in the vocabulary")
        self.words = words
        self.ids = {w: i for i, w in enumerate(words)}

    @classmethod
    def from_tokens(cls, tokens: Iterable[str], max_size: int | None = None,
                    min_count: int = 1) -> WordVocab:
        """The vocabulary of a corpus: words by falling count, ties alphabetical."""
        counts = Counter(t for t in tokens if t not in SPECIAL_TOKENS)
        ranked = sorted((w for w, c in counts.items() if c >= min_count),
                        key=lambda w: (-counts[w], w))
        if max_size is not None:
            if max_size < len(SPECIAL_TOKENS):
                raise ValueError(f"max_size must leave room for the {len(SPECIAL_TOKENS)} "
                                 "special tokens")
            ranked = ranked[: max_size - len(SPECIAL_TOKENS)]
        return cls([*SPECIAL_TOKENS, *ranked])

    def __len__(self) -> int:
        return len(self.words)

    @property
    def special_ids(self) -> list[int]:
        return [self.ids[t] for t in SPECIAL_TOKENS]

    @property
    def mask_id(self) -> int:
        return self.ids["[MASK]"]

    @property
    def unk_id(self) -> int:
        return self.ids["[UNK]"]

    def encode(self, tokens: Iterable[str]) -> list[int]:
        return [self.ids.get(t, self.unk_id) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.words):
                raise ValueError(f"id {i} is outside the vocabulary of {len(self.words)} words")
            out.append(self.words[i])
        return out
