"""mlmlib.tokenizer.wordpiece - vocabularies, BERT's WordPiece and learning its vocabulary.

Does: :class:`WordVocab` (whole words), :class:`WordPiece` (greedy longest match over a fixed
vocabulary, BERT's ``vocab.txt`` read and written) and :func:`train_wordpiece` (merges of
adjacent pieces). Every argument is checked: one ``str`` where a list of texts or tokens is
expected is refused rather than read letter by letter.

Does not: clean or split text into words (:mod:`mlmlib.tokenizer.basic`).

>>> wp = train_wordpiece(["the cat sat", "the cats ran"], vocab_size=20)
>>> wp.tokenize("the cats")
['the', 'cat', '##s']
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from itertools import pairwise

from mlmlib._checks import flag, indices, items, one_of, pathlike, whole
from mlmlib.constants import SPECIAL_TOKENS
from mlmlib.tokenizer.basic import _check_text, basic_tokenize

__all__ = ["WordPiece", "WordVocab", "train_wordpiece"]


def _decode(table: Sequence[str], ids: Iterable[int]) -> list[str]:
    """The tokens of ``ids`` (ints, NumPy integers or integer tensors), each one checked."""
    return [table[i] for i in indices(ids, "ids", len(table), phrase="id {p} is outside the "
                                      "vocabulary of {n} tokens (ids 0..{last})")]


class WordVocab:
    """Words <-> ids, with BERT's five special tokens first."""

    def __init__(self, words: Sequence[str]):
        words = items(words, "words", "words, in id order", text=True, unique=True, ordered=True)
        if words[: len(SPECIAL_TOKENS)] != list(SPECIAL_TOKENS):
            raise ValueError(f"a vocabulary starts with the special tokens {SPECIAL_TOKENS}")
        self.words = words
        self.ids = {w: i for i, w in enumerate(words)}

    @classmethod
    def from_tokens(cls, tokens: Iterable[str], max_size: int | None = None,
                    min_count: int = 1) -> WordVocab:
        """The vocabulary of a corpus: words by falling count, ties alphabetical."""
        tokens = items(tokens, "tokens", "tokens", text=True)
        min_count = whole(min_count, "min_count", least=1)
        if max_size is not None:
            max_size = whole(max_size, f"max_size (to leave room for the {len(SPECIAL_TOKENS)} "
                             "special tokens)", least=len(SPECIAL_TOKENS))
        counts = Counter(t for t in tokens if t not in SPECIAL_TOKENS)
        ranked = sorted((w for w, c in counts.items() if c >= min_count),
                        key=lambda w: (-counts[w], w))
        if max_size is not None:
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
        return [self.ids.get(t, self.unk_id) for t in items(tokens, "tokens", "tokens", text=True)]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return _decode(self.words, ids)


class WordPiece:
    """BERT's WordPiece tokenizer over a fixed vocabulary (a list: the index is the id)."""

    max_chars_per_word = 100  # longer words become [UNK], as in BERT

    def __init__(self, vocab: Sequence[str], lower: bool = True):
        if isinstance(vocab, (str, os.PathLike)):
            raise TypeError("vocab must be a list of tokens; to read a vocab.txt file use "
                            "WordPiece.from_file(path)")
        vocab = items(vocab, "vocab", "tokens, in id order", text=True, unique=True, ordered=True)
        self.lower = flag(lower, "lower")
        missing = [t for t in SPECIAL_TOKENS if t not in vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks BERT's special tokens {missing}")
        for i, token in enumerate(vocab):  # vocab.txt holds one token a line
            if not token or "\n" in token or "\r" in token:
                raise ValueError(f"vocab[{i}] = {token!r} is empty or holds a line break")
        self.vocab = vocab
        self.ids = {t: i for i, t in enumerate(vocab)}

    @classmethod
    def from_file(cls, path, lower: bool = True) -> WordPiece:
        """Read BERT's ``vocab.txt``: one token per line."""
        path = pathlike(path, "path")
        if path.is_dir():
            raise ValueError(f"path {path} is a folder; pass the vocab.txt file in it")
        if not path.is_file():
            raise FileNotFoundError(f"no vocabulary file at {path}")
        data = path.read_bytes()
        try:
            lines = data.decode("utf-8").split("\n")  # only "\n" ends a line, as in HF's reader
        except UnicodeDecodeError as err:
            raise ValueError(f"path {path} is not UTF-8 text: byte 0x{data[err.start]:02x} at "
                             f"offset {err.start}") from None
        lines = lines[:-1] if lines[-1] == "" else lines
        return cls([line.removesuffix("\r") for line in lines], lower=lower)

    def save(self, path, overwrite: bool = False) -> None:
        """Write BERT's ``vocab.txt``; an existing file is replaced only when ``overwrite``."""
        path = pathlike(path, "path")
        flag(overwrite, "overwrite")
        if path.is_dir():
            raise ValueError(f"path {path} is a folder; name the file, e.g. {path / 'vocab.txt'}")
        if not path.parent.is_dir():
            raise FileNotFoundError(f"cannot save to {path}: the folder {path.parent} does not "
                                    "exist")
        if path.exists() and not overwrite:
            raise FileExistsError(f"{path} exists already; pass overwrite=True to replace it")
        path.write_text("".join(f"{t}\n" for t in self.vocab), encoding="utf-8")

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def special_ids(self) -> list[int]:
        return [self.ids[t] for t in SPECIAL_TOKENS]

    def token_id(self, token: str) -> int:
        _check_text(token, "token")
        if token not in self.ids:
            raise ValueError(f"token {token!r} is not in the vocabulary")
        return self.ids[token]

    def split_word(self, word: str) -> list[str]:
        """Greedy longest-match-first: the longest known piece, then the rest as ``##``."""
        _check_text(word, "word")
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
        """The pieces of ``text``; a special token written in it ("[MASK]") is one piece."""
        return [p for word in basic_tokenize(text, lower=self.lower)
                for p in ([word] if word in SPECIAL_TOKENS else self.split_word(word))]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without [CLS] and [SEP]."""
        return [self.ids[p] for p in self.tokenize(text)]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return _decode(self.vocab, ids)


SCORES = ("frequency", "wordpiece")


def train_wordpiece(texts: Iterable[str], vocab_size: int, lower: bool = True,
                    min_count: int = 1, score: str = "frequency") -> WordPiece:
    """Learn a WordPiece vocabulary of ``vocab_size`` tokens from ``texts``, a list of texts.

    Start from single characters (``##c`` inside a word), then repeatedly merge one adjacent
    pair of pieces into a new piece. Which pair:

    * ``"frequency"`` (default): the pair that occurs most often, counting each word as often
      as it appears. This is what Hugging Face's ``tokenizers`` WordPiece trainer does (it
      learns BPE-style merges), and it gives common words a piece of their own early.
    * ``"wordpiece"``: the highest ``count(ab) / (count(a) * count(b))``, the score usually
      given for WordPiece. It prefers pairs whose parts rarely occur apart, so on a small
      corpus it first merges rare pairs (try it on the CPython docs).

    Ties go to the alphabetically first pair, so training is deterministic. Words seen fewer
    than ``min_count`` times are left out; special tokens written in the text are not learnt.
    """
    texts = items(texts, "texts", "texts", text=True)
    vocab_size = whole(vocab_size, "vocab_size", least=1)
    flag(lower, "lower")
    min_count = whole(min_count, "min_count", least=1)
    one_of(score, "score", SCORES)
    words = Counter(w for text in texts for w in basic_tokenize(text, lower=lower)
                    if w not in SPECIAL_TOKENS)
    if not words:
        raise ValueError("no text to learn from: the corpus is empty")
    words = {w: c for w, c in words.items() if c >= min_count}
    if not words:
        raise ValueError(f"no word occurs min_count={min_count} times or more")
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
