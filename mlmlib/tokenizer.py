"""mlmlib.tokenizer - text to tokens to ids: BERT's basic and WordPiece tokenizers.

Does:

* :func:`basic_tokenize` - BERT's "basic" step, before WordPiece: drop control characters,
  lower-case, strip accents, put spaces around CJK characters and split off every punctuation
  character (ASCII symbols such as ``$`` and ``^`` count as punctuation, as in BERT).
* :class:`WordVocab` - a word-level vocabulary: the special tokens ``[PAD] [UNK] [CLS] [SEP]
  [MASK]`` (ids 0-4), then the words of a corpus by falling count, ties in alphabetical order,
  so the same text always gives the same ids. Unknown words map to ``[UNK]``.
* :class:`WordPiece` - BERT's tokenizer: the basic step, then each word split greedily into
  the longest pieces found in the vocabulary, continuation pieces written ``##piece``, and
  ``[UNK]`` for a word that cannot be split (or is longer than 100 characters). Reads and
  writes BERT's ``vocab.txt`` (one token per line; the line number is the id).
* :func:`train_wordpiece` - learn a WordPiece vocabulary of a given size from text by merging
  adjacent pieces: by default the most frequent pair (what Hugging Face's ``tokenizers``
  WordPiece trainer does), or by the WordPiece score ``count(ab) / (count(a) * count(b))``.

Does not: read corpora (:mod:`mlmlib.corpora`) or mask (:mod:`mlmlib.masking`).

>>> basic_tokenize("Héllo, World! x^2")
['hello', ',', 'world', '!', 'x', '^', '2']
>>> vocab = WordVocab.from_tokens(["the", "cat", "sat", "the"])
>>> vocab.encode(["the", "dog"])
[5, 1]
>>> wp = WordPiece([*SPECIAL_TOKENS, "em", "##bed", "##ding", "the"])
>>> wp.tokenize("The embedding embeds!")
['the', 'em', '##bed', '##ding', '[UNK]', '[UNK]']
"""

from __future__ import annotations

import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from itertools import pairwise
from pathlib import Path

__all__ = ["SPECIAL_TOKENS", "WordPiece", "WordVocab", "basic_tokenize", "train_wordpiece"]

#: The five special tokens in id order, so [PAD] is 0 and [MASK] is 4.
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


def _decode(table: Sequence[str], ids: Iterable[int]) -> list[str]:
    """The tokens of ``ids``; an id outside the table is an error that says so."""
    out = []
    for i in ids:
        i = int(i)
        if not 0 <= i < len(table):
            raise ValueError(f"id {i} is outside the vocabulary of {len(table)} tokens")
        out.append(table[i])
    return out


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
        return _decode(self.words, ids)


class WordPiece:
    """BERT's WordPiece tokenizer over a fixed vocabulary (a list: the index is the id)."""

    max_chars_per_word = 100  # longer words become [UNK], as in BERT

    def __init__(self, vocab: Sequence[str], lower: bool = True):
        vocab = list(vocab)
        missing = [t for t in SPECIAL_TOKENS if t not in vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks BERT's special tokens {missing}")
        if len(set(vocab)) != len(vocab):
            raise ValueError("a token appears twice in the vocabulary")
        self.vocab = vocab
        self.ids = {t: i for i, t in enumerate(vocab)}
        self.lower = lower

    @classmethod
    def from_file(cls, path, lower: bool = True) -> WordPiece:
        """Read BERT's ``vocab.txt``: one token per line."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no vocabulary file at {path}")
        return cls(path.read_text(encoding="utf-8").splitlines(), lower=lower)

    def save(self, path) -> None:
        Path(path).write_text("".join(f"{t}\n" for t in self.vocab), encoding="utf-8")

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def special_ids(self) -> list[int]:
        return [self.ids[t] for t in SPECIAL_TOKENS]

    def token_id(self, token: str) -> int:
        return self.ids[token]

    def split_word(self, word: str) -> list[str]:
        """Greedy longest-match-first: the longest known piece, then the rest as ``##``."""
        if len(word) > self.max_chars_per_word:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    break
                end -= 1
            else:  # no piece fits: the whole word is unknown
                return ["[UNK]"]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        return [p for word in basic_tokenize(text, lower=self.lower)
                for p in self.split_word(word)]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without [CLS] and [SEP]."""
        return [self.ids[p] for p in self.tokenize(text)]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return _decode(self.vocab, ids)


SCORES = ("frequency", "wordpiece")


def train_wordpiece(texts: Iterable[str], vocab_size: int, lower: bool = True,
                    min_count: int = 1, score: str = "frequency") -> WordPiece:
    """Learn a WordPiece vocabulary of ``vocab_size`` tokens from ``texts``.

    Start from single characters (``##c`` inside a word), then repeatedly merge one adjacent
    pair of pieces into a new piece. Which pair:

    * ``"frequency"`` (default): the pair that occurs most often, counting each word as often
      as it appears. This is what Hugging Face's ``tokenizers`` WordPiece trainer does (it
      learns BPE-style merges), and it gives common words a piece of their own early.
    * ``"wordpiece"``: the highest ``count(ab) / (count(a) * count(b))``, the score usually
      given for WordPiece. It prefers pairs whose parts rarely occur apart, so on a small
      corpus it first merges rare pairs (try it on the CPython docs).

    Ties go to the alphabetically first pair, so training is deterministic.
    """
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError("vocab_size must be a whole number")
    words = Counter(w for text in texts for w in basic_tokenize(text, lower=lower))
    words = {w: c for w, c in words.items() if c >= min_count}
    if not words:
        raise ValueError("no text to learn from: the corpus is empty")
    splits = {w: [w[0], *("##" + ch for ch in w[1:])] for w in words}
    alphabet = sorted({p for pieces in splits.values() for p in pieces})
    vocab = [*SPECIAL_TOKENS, *alphabet]
    if vocab_size < len(vocab):
        raise ValueError(f"vocab_size {vocab_size} is smaller than the {len(vocab)} special "
                         "tokens and characters the corpus needs")

    piece_count: Counter = Counter()
    pair_count: Counter = Counter()
    pair_words: defaultdict = defaultdict(set)  # pair -> the words it occurs in
    for w, c in words.items():
        pieces = splits[w]
        for p in pieces:
            piece_count[p] += c
        for a, b in pairwise(pieces):
            pair_count[a, b] += c
            pair_words[a, b].add(w)

    known = set(vocab)
    while len(vocab) < vocab_size and pair_count:
        if score == "frequency":  # the most frequent pair; ties: alphabetically first
            best = min(pair_count, key=lambda ab: (-pair_count[ab], ab))
        else:
            best = min(pair_count, key=lambda ab: (-pair_count[ab] / (piece_count[ab[0]]
                                                                      * piece_count[ab[1]]), ab))
        a, b = best
        merged = a + b[2:]
        for w in list(pair_words.pop(best, ())):
            c, old = words[w], splits[w]
            for p in old:
                piece_count[p] -= c
            for pair in pairwise(old):
                pair_count[pair] -= c
                if pair_count[pair] <= 0:
                    del pair_count[pair]
                pair_words[pair].discard(w)
            new, i = [], 0
            while i < len(old):
                if i + 1 < len(old) and old[i] == a and old[i + 1] == b:
                    new.append(merged)
                    i += 2
                else:
                    new.append(old[i])
                    i += 1
            splits[w] = new
            for p in new:
                piece_count[p] += c
            for pair in pairwise(new):
                pair_count[pair] += c
                pair_words[pair].add(w)
        pair_count.pop(best, None)
        if merged not in known:
            known.add(merged)
            vocab.append(merged)
    return WordPiece(vocab, lower=lower)
