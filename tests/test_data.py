"""Tests for mlmlib.tokenizer and mlmlib.corpora."""

import pytest

from mlmlib.corpora import python_docs, tokens_of
from mlmlib.tokenizer import SPECIAL_TOKENS, WordVocab, basic_tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The cat sat.", ["the", "cat", "sat", "."]),
        ("Héllo  wörld\t!", ["hello", "world", "!"]),
        ("x^2 + $y", ["x", "^", "2", "+", "$", "y"]),
        ("don't", ["don", "'", "t"]),
        ("中文", ["中", "文"]),
        ("a\u200bb\x00c", ["abc"]),  # format and control characters are dropped
        ("", []),
    ],
)
def test_basic_tokenize(text, tokens):
    assert basic_tokenize(text) == tokens


def test_basic_tokenize_keeps_case_when_asked_and_refuses_bytes():
    assert basic_tokenize("The Cat", lower=False) == ["The", "Cat"]
    with pytest.raises(TypeError, match="must be a str"):
        basic_tokenize(b"bytes")


def test_word_vocab():
    vocab = WordVocab.from_tokens(["b", "a", "b", "c", "[MASK]"], max_size=7)
    assert vocab.words == [*SPECIAL_TOKENS, "b", "a"]  # by count, ties alphabetical
    assert vocab.special_ids == [0, 1, 2, 3, 4] and vocab.mask_id == 4
    assert vocab.encode(["a", "zzz"]) == [6, vocab.unk_id]
    assert vocab.decode([5, 6]) == ["b", "a"]
    with pytest.raises(ValueError, match="outside the vocabulary of 7"):
        vocab.decode([7])
    with pytest.raises(ValueError, match="starts with the special tokens"):
        WordVocab(["a", "b"])
    with pytest.raises(ValueError, match="appears twice"):
        WordVocab([*SPECIAL_TOKENS, "a", "a"])
    with pytest.raises(ValueError, match="leave room"):
        WordVocab.from_tokens(["a"], max_size=3)


def test_python_docs_are_there_and_deterministic():
    docs = python_docs()
    assert len(docs) > 50
    assert [d.name for d in docs] == sorted(d.name for d in docs)
    tokens = tokens_of(docs)
    assert len(tokens) > 50_000
    assert tokens == tokens_of(python_docs())
    assert "assert" in tokens and all(t == t.lower() for t in tokens[:1000])
