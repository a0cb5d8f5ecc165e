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


# ----------------------------------------------------------------------------- WordPiece

from transformers import BertTokenizerFast  # noqa: E402

from mlmlib.tokenizer import WordPiece, train_wordpiece  # noqa: E402

DOC_TEXTS = [d.text for d in python_docs()]


@pytest.fixture(scope="module")
def docs_wordpiece():
    return train_wordpiece(DOC_TEXTS, 1500)


def test_wordpiece_greedy_longest_match_and_unknown_words():
    wp = WordPiece([*SPECIAL_TOKENS, "un", "unaff", "##aff", "##able", "##ord", "a"])
    assert wp.tokenize("unaffordable") == ["unaff", "##ord", "##able"]
    assert wp.tokenize("unable") == ["un", "##able"]
    assert wp.tokenize("unx") == ["[UNK]"]  # one piece missing: the whole word is unknown
    assert wp.tokenize("a" * 101) == ["[UNK]"]  # longer than 100 characters
    assert wp.decode(wp.encode("un a")) == ["un", "a"]
    with pytest.raises(ValueError, match="special tokens"):
        WordPiece(["a", "b"])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        wp.decode([99])


def test_same_ids_as_hugging_face_on_the_whole_cpython_docs(docs_wordpiece):
    hf = BertTokenizerFast(vocab={t: i for i, t in enumerate(docs_wordpiece.vocab)},
                           do_lower_case=True)
    total = 0
    for text in DOC_TEXTS:
        ours = docs_wordpiece.encode(text)
        assert ours == hf(text, add_special_tokens=False)["input_ids"]
        total += len(ours)
    assert total > 100_000


def test_same_ids_as_hugging_face_on_tricky_text(docs_wordpiece):
    hf = BertTokenizerFast(vocab={t: i for i, t in enumerate(docs_wordpiece.vocab)},
                           do_lower_case=True)
    tricky = ["Café naïve résumé", "中文 and 日本語", "tab\tnew\nline\r\x00\u200b",
              "x" * 150, "a--b...c!?", "ÅNGSTRÖM", "emoji 🙂 here", "  ", ""]
    for text in tricky:
        assert docs_wordpiece.encode(text) == hf(text, add_special_tokens=False)["input_ids"]


def test_vocab_file_round_trip(tmp_path, docs_wordpiece):
    docs_wordpiece.save(tmp_path / "vocab.txt")
    again = WordPiece.from_file(tmp_path / "vocab.txt")
    assert again.vocab == docs_wordpiece.vocab
    with pytest.raises(FileNotFoundError, match="no vocabulary file"):
        WordPiece.from_file(tmp_path / "missing.txt")


def test_trainer_size_determinism_and_scores():
    a = train_wordpiece(DOC_TEXTS[:10], 400)
    b = train_wordpiece(DOC_TEXTS[:10], 400)
    assert len(a) == 400 and a.vocab == b.vocab
    assert a.vocab[:5] == list(SPECIAL_TOKENS)
    assert a.tokenize("the") == ["the"]  # a frequent word gets its own piece
    rare_first = train_wordpiece(DOC_TEXTS[:10], 400, score="wordpiece")
    assert len(rare_first) == 400 and rare_first.vocab != a.vocab
    with pytest.raises(ValueError, match="smaller than"):
        train_wordpiece(["hello world"], 10)
    with pytest.raises(ValueError, match="empty"):
        train_wordpiece(["", "   "], 100)
    with pytest.raises(ValueError, match="score must be one of"):
        train_wordpiece(["a"], 100, score="bpe")
