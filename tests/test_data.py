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
    with pytest.raises(ValueError, match="outside the vocabulary of 7 tokens"):
        vocab.decode([7])
    with pytest.raises(ValueError, match="starts with the special tokens"):
        WordVocab(["a", "b"])
    with pytest.raises(ValueError, match="words lists 'a' twice"):
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


# ----------------------------------------------------------------------------- loaders, batches

import math  # noqa: E402

import torch  # noqa: E402

from mlmlib.constants import IGNORE_INDEX  # noqa: E402
from mlmlib.corpora import (  # noqa: E402
    load_text,
    mask_batch,
    nsp_rows,
    pack_rows,
    sentences_of,
    split_documents,
)

SPECIAL = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}


def test_load_your_own_text(tmp_path):
    (tmp_path / "b.txt").write_text("Second file. It has two sentences.", encoding="utf-8")
    (tmp_path / "a.txt").write_text("First file.", encoding="utf-8")
    (tmp_path / "notes.md").write_text("ignored")
    docs = load_text(tmp_path)
    assert [d.name for d in docs] == ["a.txt", "b.txt"]
    assert load_text(tmp_path / "a.txt")[0].text == "First file."


def test_load_text_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_text(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("  \n")
    with pytest.raises(ValueError, match=r"empty\.txt is empty"):
        load_text(tmp_path / "empty.txt")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8 text: byte 0xe9 at offset 3"):
        load_text(tmp_path / "latin1.txt")
    (tmp_path / "sub").mkdir()
    with pytest.raises(ValueError, match=r"holds no \.txt files"):
        load_text(tmp_path / "sub")


def test_sentences_and_document_split():
    text = "Title\n*****\n\nOne sentence here. Another\nwrapped line! A third?\n\nNew para."
    assert sentences_of(text) == ["Title", "One sentence here.", "Another wrapped line!",
                                  "A third?", "New para."]
    docs = python_docs()
    train, valid = split_documents(docs, 0.1, rng=0)
    assert len(valid) == 8 and len(train) + len(valid) == len(docs)
    assert not {d.name for d in train} & {d.name for d in valid}
    assert split_documents(docs, 0.1, rng=0) == (train, valid)
    with pytest.raises(ValueError, match="at least two documents"):
        split_documents(docs[:1])


def test_pack_rows_pads_masks_and_never_drops_tokens():
    batch = pack_rows([[10, 11, 12], list(range(20, 30))], max_len=6, special=SPECIAL)
    assert batch.input_ids[0].tolist() == [2, 10, 11, 12, 3, 0]
    assert batch.attention_mask[0].tolist() == [1, 1, 1, 1, 1, 0]
    body = batch.input_ids[batch.attention_mask.bool()]
    assert sorted(t for t in body.tolist() if t >= 10) == [10, 11, 12, *range(20, 30)]
    assert batch.input_ids.shape == (4, 6)  # the 10-token sequence became three rows


def test_nsp_rows():
    g = torch.Generator().manual_seed(0)
    docs = [[[10 + d, 20 + k] for k in range(30)] for d in range(6)]
    batch = nsp_rows(docs, max_len=8, special=SPECIAL, rng=g)
    n = len(batch.is_next)
    assert n == 6 * 29
    share = batch.is_next.float().mean().item()
    assert abs(share - 0.5) < 4 * math.sqrt(0.25 / n)
    row, seg = batch.input_ids[0].tolist(), batch.token_type_ids[0].tolist()
    assert row[0] == 2 and row[3] == 3 and row[6] == 3 and seg == [0, 0, 0, 0, 1, 1, 1, 0]
    for r in range(n):  # row: [CLS] (doc, k) [SEP] (doc', k') [SEP]
        a_doc, a_k, _, b_doc, b_k = batch.input_ids[r, 1:6].tolist()
        if batch.is_next[r]:  # the sentence that really follows, in the same document
            assert (b_doc, b_k) == (a_doc, a_k + 1)
        else:  # a sentence from another document
            assert b_doc != a_doc


def test_mask_batch_masks_afresh_and_spares_special_tokens():
    batch = pack_rows([list(range(5, 40))] * 20, max_len=16, special=SPECIAL)
    one = mask_batch(batch, 60, 4, list(SPECIAL.values()), rng=1)
    two = mask_batch(batch, 60, 4, list(SPECIAL.values()), rng=2)
    assert not torch.equal(one.labels, two.labels)
    special = batch.input_ids < 5
    assert (one.labels[special] == IGNORE_INDEX).all()
    chosen = one.labels != IGNORE_INDEX
    assert torch.equal(one.labels[chosen], batch.input_ids[chosen])


def test_unigram_baseline_counts_only_ordinary_tokens():
    from mlmlib.corpora import Batch, unigram_baseline

    ids = torch.tensor([[2, 7, 7, 8, 3, 0], [2, 9, 3, 0, 0, 0]])
    mask = (ids != 0).long()
    rows = Batch(ids, mask, torch.zeros_like(ids))
    special = [0, 1, 2, 3, 4]
    # ordinary tokens 7, 7, 8, 9: N = 4; K = 10 - 5 = 5
    expected = -(math.log(2.5 / 6.5) + math.log(0.5 / 6.5)) / 2  # a 7 and an unseen 6
    assert unigram_baseline(rows, torch.tensor([7, 6]), 10, special) == pytest.approx(expected)
    each = unigram_baseline(rows, torch.tensor([7, 6]), 10, special, reduction="none")
    assert each.tolist() == pytest.approx([-math.log(2.5 / 6.5), -math.log(0.5 / 6.5)])
    with pytest.raises(ValueError, match="reduction"):
        unigram_baseline(rows, torch.tensor([7]), 10, special, reduction="sum")
    with pytest.raises(ValueError, match="ordinary token id"):
        unigram_baseline(rows, torch.tensor([3]), 10, special)  # [SEP] is never a target
    with pytest.raises(ValueError, match="no targets"):
        unigram_baseline(rows, torch.tensor([], dtype=torch.long), 10, special)
