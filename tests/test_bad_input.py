"""Bad input to the core data and loss functions and to the teaching side: never silent.

Each case is ``refuses(call, error, *words)`` (see ``conftest.py``): the call raises ``error``
from mlmlib's own code, with a message naming the argument and what is wrong with it. After the
cases, the fixes that made valid input work: small integer dtypes give the int64 result, a
ToyWorld as short as its grammar allows, NSP on zero pairs, one-number answers in a list.
"""

import functools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from mlmlib import plots
from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import (
    Batch,
    Document,
    load_text,
    mask_batch,
    nsp_rows,
    pack_rows,
    paragraphs_of,
    sentences_of,
    split_documents,
    tokens_of,
    unigram_baseline,
)
from mlmlib.course._templates import stub_template, templates
from mlmlib.course.book import Book
from mlmlib.course.edition import answer_key, student_cells
from mlmlib.course.grade import grade, write_gradebook
from mlmlib.exercises import (
    bert_parameter_count,
    check_branch_counts,
    check_direction,
    check_direction_over_seeds,
    check_empty_probability,
    check_excess_loss,
    check_loss_value,
    check_missing_probability,
    check_perplexity,
    check_pointwise_information,
    check_random_branch_probability,
    check_softmax,
    check_speed_ratio,
    check_total_loss,
)
from mlmlib.hf import export_hf
from mlmlib.loss import log_softmax, mlm_loss, neg_log, nsp_loss, slot_loss, softmax
from mlmlib.masking import (
    bert_count,
    choose_positions,
    is_continuation,
    mask_positions,
    mask_tokens,
)
from mlmlib.model import BertConfig, MiniBert
from mlmlib.tokenizer import WordPiece, WordVocab
from mlmlib.toyworld import ToyWorld, compare_with_exact

NAN = float("nan")
V = 20  # ids 0..4 special, 5..19 ordinary
SPECIAL_IDS = [0, 1, 2, 3, 4]
IDS = torch.tensor([[2, 5, 6, 7, 8, 9, 3]])
SPECIAL = {"[PAD]": 0, "[CLS]": 2, "[SEP]": 3}
WORLD = ToyWorld()
SENT = ["the", "cat", "sat", "."]
ROWS = Batch(IDS, torch.ones_like(IDS), torch.zeros_like(IDS))


LIB_DIR = Path(__file__).resolve().parent.parent / "mlmlib"  # folders, but not one notebook


@functools.cache
def _book() -> Book:
    return Book(Path(__file__).resolve().parent.parent)


def case(call, error, *words, id):
    return pytest.param(call, error, words, id=id)


def corrupt(ids=IDS, **kw):
    kw = {"vocab_size": V, "mask_token_id": 4, "special_ids": SPECIAL_IDS, "rng": 0, **kw}
    return mask_tokens(ids, **kw)


def axes(n):
    return Figure().subplots(1, n) if n > 1 else Figure().subplots()


# ----------------------------------------------------------------------------- masking

MASKING = [
    case(lambda: corrupt(rate=-0.1), ValueError, "rate", "[0, 1]", id="mask_tokens-rate-negative"),
    case(lambda: corrupt(rate=NAN), ValueError, "rate", "nan", id="mask_tokens-rate-nan"),
    case(lambda: corrupt(rate="0.15"), TypeError, "rate", "number", id="mask_tokens-rate-str"),
    case(lambda: corrupt(rate=True), TypeError, "rate", "bool", id="mask_tokens-rate-bool"),
    case(lambda: corrupt(mask_prob=0.9, random_prob=0.2), ValueError, "mask_prob + random_prob",
         "more than 1", id="mask_tokens-shares-above-1"),
    case(lambda: corrupt(vocab_size=20.0), TypeError, "vocab_size", "whole number",
         id="mask_tokens-vocab_size-float"),
    case(lambda: corrupt(vocab_size=True), TypeError, "vocab_size", "whole number",
         id="mask_tokens-vocab_size-bool"),
    case(lambda: corrupt(mask_token_id=4.0), TypeError, "mask_token_id", "whole number",
         id="mask_tokens-mask_token_id-float"),
    case(lambda: corrupt(special_ids="01234"), TypeError, "special_ids", "pass a list",
         id="mask_tokens-special_ids-str"),
    case(lambda: corrupt(special_ids=[0.5, 4]), TypeError, "special_ids[0]", "whole number",
         id="mask_tokens-special_ids-float"),
    case(lambda: corrupt(special_ids=None), TypeError, "special_ids", "list",
         id="mask_tokens-special_ids-none"),
    case(lambda: corrupt(rng=1.5), TypeError, "rng", "seed", id="mask_tokens-rng-float"),
    case(lambda: corrupt(rng=2**70), ValueError, "rng", "64 bits", id="mask_tokens-rng-huge"),
    case(lambda: corrupt(max_predictions=2), ValueError, "max_predictions", "bert",
         id="mask_tokens-max_predictions-with-bernoulli"),
    case(lambda: corrupt(rule="bert", max_predictions=2.0), TypeError, "max_predictions",
         "whole number", id="mask_tokens-max_predictions-float"),
    case(lambda: corrupt(IDS.to(torch.int8), vocab_size=300), ValueError, "input_ids", "int8",
         "300", id="mask_tokens-int8-cannot-hold-vocab"),
    case(lambda: corrupt(IDS.float()), TypeError, "input_ids", "integer",
         id="mask_tokens-float-ids"),
    case(lambda: corrupt(torch.tensor([[2, 5, 25]], dtype=torch.int16)), ValueError, "25",
         "outside the vocabulary", id="mask_tokens-int16-id-outside"),
    case(lambda: corrupt(IDS, continuation=[[False] * 7]), TypeError, "continuation",
         "bool tensor", id="mask_tokens-continuation-list"),
    case(lambda: choose_positions([-1, 2, 3], rng=0), ValueError, "candidates", "negative",
         "-1", id="choose_positions-negative"),
    case(lambda: choose_positions([1.0, 2.0], rng=0), TypeError, "candidate", "whole number",
         id="choose_positions-floats"),
    case(lambda: choose_positions(3.0, rng=0), TypeError, "candidates", "float",
         id="choose_positions-float-count"),
    case(lambda: choose_positions("abc", rng=0), TypeError, "candidates", "str",
         id="choose_positions-str"),
    case(lambda: choose_positions(None, rng=0), TypeError, "candidates",
         id="choose_positions-none"),
    case(lambda: choose_positions(-3, rng=0), ValueError, "candidates", "negative",
         id="choose_positions-negative-count"),
    case(lambda: choose_positions(torch.tensor([[1, 2]]), rng=0), TypeError, "candidates",
         "1-d", id="choose_positions-2d-tensor"),
    case(lambda: choose_positions(torch.tensor([3, -2]), rng=0), ValueError, "negative", "-2",
         id="choose_positions-negative-in-tensor"),
    case(lambda: choose_positions(5, rule="roberta", rng=0), ValueError, "rule",
         id="choose_positions-rule"),
    case(lambda: bert_count(4.5), TypeError, "n", "whole number", id="bert_count-float"),
    case(lambda: bert_count(True), TypeError, "n", "whole number", id="bert_count-bool"),
    case(lambda: bert_count(-3), ValueError, "n", "negative", id="bert_count-negative"),
    case(lambda: mask_positions("the cat", [1]), TypeError, "tokens", "pass a list",
         id="mask_positions-str-tokens"),
    case(lambda: mask_positions(["a", "b"], 1), TypeError, "positions", "list",
         id="mask_positions-int-positions"),
    case(lambda: mask_positions(["a", "b"], [1.0]), TypeError, "position", "whole number",
         id="mask_positions-float-position"),
    case(lambda: mask_positions(["a", "b"], [-1]), ValueError, "position -1",
         id="mask_positions-negative"),
    case(lambda: mask_positions(torch.tensor([1, 2]), [0]), TypeError, "mask_token",
         "whole number", id="mask_positions-tensor-str-mask"),
    case(lambda: mask_positions(["a", "b"], [0], mask_token=None), TypeError, "mask_token",
         "'[MASK]'", id="mask_positions-words-none-mask"),
    case(lambda: mask_positions(torch.tensor([1.0, 2.0]), [0], mask_token=4), TypeError,
         "tokens", "integer", id="mask_positions-float-tensor"),
    case(lambda: mask_positions(torch.tensor([1, 2], dtype=torch.uint8), [0], mask_token=300),
         ValueError, "mask_token", "uint8", id="mask_positions-mask-does-not-fit"),
    case(lambda: choose_positions(5, rng=2**64), ValueError, "rng", str(2**64), "64 bits",
         id="choose_positions-rng-huge"),
    case(lambda: corrupt(rng=-(2**70)), ValueError, "rng", "64 bits",
         id="mask_tokens-rng-huge-negative"),
    case(lambda: corrupt(vocab_size=2**64), ValueError, "vocab_size", "int64",
         id="mask_tokens-vocab_size-beyond-int64"),
    case(lambda: mask_positions(["a", "b"], torch.tensor(1)), TypeError, "positions", "list",
         id="mask_positions-0d-tensor"),
    case(lambda: mask_positions(["a", "b"], np.array(1)), TypeError, "positions", "list",
         id="mask_positions-0d-array"),
    case(lambda: choose_positions(np.array(3.0), rng=0), TypeError, "candidates",
         "whole number", id="choose_positions-0d-float-array"),
    case(lambda: is_continuation("##a"), TypeError, "pieces", "pass a list",
         id="is_continuation-str"),
    case(lambda: is_continuation([1, 2]), TypeError, "pieces", "strings",
         id="is_continuation-ints"),
    case(lambda: mask_positions(["a", "b"], {0: "x"}), TypeError, "positions", "dict",
         "pass a list", id="mask_positions-dict-positions"),
    case(lambda: choose_positions([[1, 2]], rng=0), TypeError, "candidates[0]", "whole numbers",
         id="choose_positions-nested-list"),
    case(lambda: choose_positions([2, 2], rng=0), ValueError, "candidates", "position 2",
         "twice", id="choose_positions-duplicate"),
    case(lambda: corrupt(special_ids=[0, 4, 99]), ValueError, "special_ids", "99",
         "20-word vocabulary", id="mask_tokens-special-id-outside"),
]


@pytest.mark.parametrize(("call", "error", "words"), MASKING)
def test_bad_input_masking(refuses, call, error, words):
    refuses(call, error, *words)


# ----------------------------------------------------------------------------- loss

LOGITS = torch.zeros(3, 5)

LOSS = [
    case(lambda: mlm_loss(LOGITS, torch.tensor([1, 2, 3], dtype=torch.uint8)), TypeError,
         "labels", "uint8", "-100", id="mlm_loss-uint8-labels"),
    case(lambda: mlm_loss(LOGITS, torch.tensor([1, 2, 3], dtype=torch.uint8), check=False),
         TypeError, "labels", "uint8", id="mlm_loss-uint8-labels-unchecked"),
    case(lambda: mlm_loss(LOGITS, torch.tensor([1.0, 2.0, 3.0]), check=False), TypeError,
         "labels", "integer", id="mlm_loss-float-labels-unchecked"),
    case(lambda: mlm_loss(LOGITS, torch.tensor([1, 2]), check=False), ValueError,
         "labels have shape (2,)", id="mlm_loss-shape-unchecked"),
    case(lambda: mlm_loss(LOGITS, torch.tensor([1, 2, 9], dtype=torch.int8)), ValueError,
         "labels[2] = 9", "outside the vocabulary", id="mlm_loss-int8-label-outside"),
    case(lambda: mlm_loss(LOGITS, [1, 2, 3], ignore_index="x"), TypeError, "ignore_index",
         "whole number", id="mlm_loss-ignore_index-str"),
    case(lambda: mlm_loss(LOGITS, [1, 2, 3], ignore_index=1.5), TypeError, "ignore_index",
         id="mlm_loss-ignore_index-float"),
    case(lambda: mlm_loss([[1, 2, 0, 1], [0, 0, 0, 0]], [1, -100], ignore_index=10**30),
         ValueError, "ignore_index", str(10**30), "int64", id="mlm_loss-ignore_index-huge"),
    case(lambda: mlm_loss(LOGITS, torch.tensor([1, 2, 3]), ignore_index=-(10**30), check=False),
         ValueError, "ignore_index", "int64", id="mlm_loss-ignore_index-huge-unchecked"),
    case(lambda: mlm_loss(LOGITS, [1, 2, 3], check="no"), TypeError, "check", "True or False",
         id="mlm_loss-check-str"),
    case(lambda: mlm_loss(LOGITS, None), TypeError, "labels", id="mlm_loss-labels-none"),
    case(lambda: mlm_loss("abc", [1, 2, 3]), TypeError, "logits", id="mlm_loss-logits-str"),
    case(lambda: mlm_loss(torch.full((3, 5), NAN), torch.tensor([1, 2, 3])), ValueError,
         "logits", "finite", id="mlm_loss-nan-logits"),
    case(lambda: mlm_loss(LOGITS, [1, 2, 3], reduction=None), ValueError, "reduction",
         id="mlm_loss-reduction-none"),
    case(lambda: nsp_loss(torch.zeros(2, 2), "ab"), TypeError, "is_next", "0/1",
         id="nsp_loss-is_next-str"),
    case(lambda: nsp_loss(torch.zeros(2, 2), None), TypeError, "is_next",
         id="nsp_loss-is_next-none"),
    case(lambda: nsp_loss(torch.zeros(2, 2), ["yes", "no"]), TypeError, "is_next",
         id="nsp_loss-is_next-words"),
    case(lambda: nsp_loss(np.zeros((2, 2)), [[True], [False, True]]), TypeError, "is_next",
         id="nsp_loss-is_next-ragged"),
    case(lambda: nsp_loss(torch.zeros(2, 2), torch.tensor([1, -1], dtype=torch.int8)),
         ValueError, "is_next", "0/1", id="nsp_loss-is_next-minus-one"),
    case(lambda: nsp_loss(torch.zeros(2, 2), [True]), ValueError, "is_next has shape (1,)",
         id="nsp_loss-shape"),
    case(lambda: softmax([1.0, 2.0], dim=5), ValueError, "dim", "-1 to 0",
         id="softmax-dim-out-of-range"),
    case(lambda: softmax([1.0, 2.0], dim="x"), TypeError, "dim", id="softmax-dim-str"),
    case(lambda: softmax([[1.0, 2.0]], dim=True), TypeError, "dim", id="softmax-dim-bool"),
    case(lambda: softmax(np.zeros((0, 3)), dim=0), ValueError, "no entries along dim 0",
         id="softmax-empty-dim"),
    case(lambda: log_softmax([1.0, 2.0], dim=3), ValueError, "dim", id="log_softmax-dim"),
    case(lambda: softmax(None), TypeError, "scores", id="softmax-none"),
    case(lambda: slot_loss([1.0, 2.0], "a", vocab="ab"), TypeError, "vocab", "list",
         id="slot_loss-vocab-str"),
    case(lambda: slot_loss([1.0, 2.0], "a", vocab=["a", "a"]), ValueError, "vocab", "twice",
         id="slot_loss-vocab-duplicate"),
    case(lambda: slot_loss([1.0, 2.0], 1, vocab=["a"]), ValueError, "vocab has 1 words",
         id="slot_loss-vocab-length"),
    case(lambda: slot_loss([1.0, 2.0], None), TypeError, "target", id="slot_loss-target-none"),
    case(lambda: neg_log("0.5"), TypeError, "p", id="neg_log-str"),
    case(lambda: neg_log(torch.tensor([0.5, NAN])), ValueError, "p[1]", "nan", "[0, 1]",
         id="neg_log-nan-entry"),
    case(lambda: slot_loss([1.0, 2.0], "a", vocab={"a", "b"}), TypeError, "vocab", "set",
         id="slot_loss-vocab-set"),
    case(lambda: softmax([[1.0, 2.0]], dim=np.int64(2)), ValueError, "dim", "-2 to 1",
         id="softmax-numpy-dim-out-of-range"),
]


@pytest.mark.parametrize(("call", "error", "words"), LOSS)
def test_bad_input_loss(refuses, call, error, words):
    refuses(call, error, *words)


# ----------------------------------------------------------------------------- toyworld

TOYWORLD = [
    case(lambda: ToyWorld(max_len=3), ValueError, "max_len = 3", "shortest sentence", "4 words",
         id="ToyWorld-max_len-too-short"),
    case(lambda: ToyWorld(max_len=-1), ValueError, "max_len", id="ToyWorld-max_len-negative"),
    case(lambda: ToyWorld(max_len=3.5), TypeError, "max_len", "whole number",
         id="ToyWorld-max_len-float"),
    case(lambda: ToyWorld(max_len="20"), TypeError, "max_len", id="ToyWorld-max_len-str"),
    case(lambda: ToyWorld(max_len=True), TypeError, "max_len", id="ToyWorld-max_len-bool"),
    case(lambda: ToyWorld(max_len=10**5), ValueError, "max_len = 100000", "200", "squared",
         id="ToyWorld-max_len-too-long"),
    case(lambda: setattr(ToyWorld(), "max_len", 201), ValueError, "max_len = 201", "200",
         id="ToyWorld-max_len-set-too-long"),
    case(lambda: WORLD.sample(2, rng=2**70), ValueError, "rng", str(2**70), "64 bits",
         id="sample-rng-huge"),
    case(lambda: WORLD.posterior(SENT, torch.tensor(2)), TypeError, "masked", "list",
         id="posterior-0d-tensor-mask"),
    case(lambda: WORLD.posterior(np.array("the"), [0]), TypeError, "words", "list",
         id="posterior-0d-array-words"),
    case(lambda: WORLD.posterior([["the"], "cat", "."], [1]), TypeError, "words", "strings",
         id="posterior-list-as-word"),
    case(lambda: WORLD.posterior(["the", 7, "sat", "."], [1]), TypeError, "words", "strings",
         id="posterior-int-as-word"),
    case(lambda: WORLD.bayes_loss(None, None), TypeError, "sentences", "list",
         id="bayes_loss-none"),
    case(lambda: WORLD.bayes_loss(5, 5), TypeError, "sentences", "list", id="bayes_loss-int"),
    case(lambda: WORLD.bayes_loss([SENT], None), TypeError, "masks", "list",
         id="bayes_loss-masks-none"),
    case(lambda: setattr(ToyWorld(), "max_len", 2), ValueError, "max_len = 2",
         id="ToyWorld-max_len-set-later"),
    case(lambda: WORLD.sample(-1, rng=0), ValueError, "n", "negative", id="sample-n-negative"),
    case(lambda: WORLD.sample(2.5, rng=0), TypeError, "n", "whole number", id="sample-n-float"),
    case(lambda: WORLD.sample(True, rng=0), TypeError, "n", id="sample-n-bool"),
    case(lambda: WORLD.sample(2, rng=None), TypeError, "rng", "seed", id="sample-rng-none"),
    case(lambda: WORLD.sample(2, rng=np.random.default_rng(0)), TypeError, "rng",
         id="sample-rng-numpy"),
    case(lambda: WORLD.posterior(SENT, [-1]), ValueError, "position -1", id="posterior-negative"),
    case(lambda: WORLD.posterior(SENT, [4]), ValueError, "position 4", id="posterior-outside"),
    case(lambda: WORLD.posterior(SENT, [1, 1]), ValueError, "twice", id="posterior-duplicate"),
    case(lambda: WORLD.posterior(SENT, [1.0]), TypeError, "masked[0]", "whole number",
         id="posterior-float-position"),
    case(lambda: WORLD.posterior(SENT, [True]), TypeError, "masked[0]", "bool",
         id="posterior-bool-position"),
    case(lambda: WORLD.posterior(SENT, 1), TypeError, "masked", "list", id="posterior-int-mask"),
    case(lambda: WORLD.posterior("the cat sat .", [1]), TypeError, "words", "split()",
         id="posterior-str-words"),
    case(lambda: WORLD.posterior(["the", "zebra", "sat", "."], [1]), ValueError, "zebra",
         "not a word", id="posterior-unknown-word"),
    case(lambda: WORLD.posterior([], []), ValueError, "impossible", "max_len",
         id="posterior-empty-sentence"),
    case(lambda: WORLD.posterior(["the", "cat", "sat", "on", "the", "mat"] * 4, [1],
                                 context="left"), ValueError, "impossible", "max_len = 20",
         id="posterior-longer-than-max_len"),
    case(lambda: WORLD.posterior(["the", "cat", "sat"], [1], context="left"), ValueError,
         "impossible", "end", id="posterior-left-no-end"),
    case(lambda: WORLD.posterior(["cat", "the", "sat", "."], [2], context="none"), ValueError,
         "impossible", id="posterior-none-impossible"),
    case(lambda: WORLD.posterior(SENT, [1], context="LEFT"), ValueError, "context",
         id="posterior-context"),
    case(lambda: WORLD.bayes_loss([SENT, SENT], [[1]]), ValueError, "2 sentences", "1 masks",
         id="bayes_loss-mismatched"),
    case(lambda: WORLD.bayes_loss(["the cat sat ."], [[1]]), TypeError, "words", "list",
         id="bayes_loss-str-sentence"),
    case(lambda: WORLD.bayes_loss([SENT], [1]), TypeError, "masked", id="bayes_loss-int-mask"),
    case(lambda: WORLD.bayes_loss([SENT], [[]]), ValueError, "no position",
         id="bayes_loss-no-slot"),
    case(lambda: WORLD.bayes_loss([["the", "cat", "mat", "."]], [[2]]), ValueError,
         "sentences[0]", "impossible", id="bayes_loss-impossible-truth"),
    case(lambda: WORLD.bayes_loss([["the", "cat", "read", "."]], [[1, 2]]), ValueError,
         "impossible", id="bayes_loss-jointly-impossible"),
    case(lambda: WORLD.landmarks([], []), ValueError, "no position", id="landmarks-empty"),
    case(lambda: WORLD.pair_posterior(SENT, 1, 1), ValueError, "differ", id="pair-same"),
    case(lambda: WORLD.pair_posterior(SENT, 1.0, 2), TypeError, "i", "whole number",
         id="pair-i-float"),
    case(lambda: WORLD.pair_posterior(SENT, 1, True), TypeError, "j", id="pair-j-bool"),
    case(lambda: WORLD.pair_information(SENT, 1, 9), ValueError, "position 9",
         id="pair_information-outside"),
    case(lambda: compare_with_exact("ab", [[1.0]]), TypeError, "exact", "table",
         id="compare-str"),
    case(lambda: compare_with_exact([[0.5, NAN]], [[0.5, 0.5]]), ValueError, "[0, 1]", "nan",
         id="compare-nan"),
    case(lambda: compare_with_exact([[0.2, 0.2]], [[0.5, 0.5]]), ValueError, "exact",
         "sum to 1", id="compare-exact-not-a-distribution"),
    case(lambda: compare_with_exact([[0.5, 0.5]], [[0.9, 0.9]]), ValueError, "model",
         "1 at most", id="compare-model-above-1"),
]


@pytest.mark.parametrize(("call", "error", "words"), TOYWORLD)
def test_bad_input_toyworld(refuses, call, error, words):
    refuses(call, error, *words)


# ----------------------------------------------------------------------------- corpora

DOCS = [Document("a", "Hello world. Bye now."), Document("b", "Second doc here.")]
SENTENCE_DOCS = [[[5, 6], [7, 8]], [[9], [10, 11]]]

CORPORA = [
    case(lambda: tokens_of("hello world"), TypeError, "documents", "pass a list",
         id="tokens_of-str"),
    case(lambda: tokens_of(DOCS[0]), TypeError, "documents", "pass a list",
         id="tokens_of-one-document"),
    case(lambda: tokens_of(["hello world"]), TypeError, "documents[0]", "Document",
         id="tokens_of-list-of-str"),
    case(lambda: tokens_of(DOCS, lower="no"), TypeError, "lower", id="tokens_of-lower-str"),
    case(lambda: split_documents("abcdef"), TypeError, "documents", "pass a list",
         id="split_documents-str"),
    case(lambda: split_documents(DOCS, "0.1"), TypeError, "valid_fraction",
         id="split_documents-fraction-str"),
    case(lambda: split_documents(DOCS, True), TypeError, "valid_fraction",
         id="split_documents-fraction-bool"),
    case(lambda: split_documents(DOCS, NAN), ValueError, "valid_fraction",
         id="split_documents-fraction-nan"),
    case(lambda: split_documents(DOCS, rng=None), TypeError, "rng", id="split_documents-rng"),
    case(lambda: sentences_of(["a. B."]), TypeError, "text", "str", id="sentences_of-list"),
    case(lambda: sentences_of(DOCS[0]), TypeError, "text", "doc.text",
         id="sentences_of-document"),
    case(lambda: sentences_of(b"Hello. World."), TypeError, "text", id="sentences_of-bytes"),
    case(lambda: pack_rows("hello", 8, SPECIAL), TypeError, "sequences", "pass a list",
         id="pack_rows-str"),
    case(lambda: pack_rows([5, 6, 7], 8, SPECIAL), TypeError, "sequences[0]", "int",
         id="pack_rows-flat-ids"),
    case(lambda: pack_rows([[5.5, 6]], 8, SPECIAL), TypeError, "sequences[0]", "whole numbers",
         id="pack_rows-float-ids"),
    case(lambda: pack_rows([[True, False]], 8, SPECIAL), TypeError, "sequences[0]",
         id="pack_rows-bool-ids"),
    case(lambda: pack_rows([[-5, 6]], 8, SPECIAL), ValueError, "sequences[0]", "negative",
         id="pack_rows-negative-id"),
    case(lambda: pack_rows([[5, 6]], 8.0, SPECIAL), TypeError, "max_len",
         id="pack_rows-max_len-float"),
    case(lambda: pack_rows([[5, 6]], 2, SPECIAL), ValueError, "max_len", "[CLS]",
         id="pack_rows-max_len-small"),
    case(lambda: pack_rows([[5, 6]], 8, [2, 3, 0]), TypeError, "special", "dict",
         id="pack_rows-special-list"),
    case(lambda: pack_rows([[5, 6]], 8, {"[CLS]": 2.5, "[SEP]": 3, "[PAD]": 0}), TypeError,
         "special", id="pack_rows-special-float"),
    case(lambda: nsp_rows("abc", 8, SPECIAL, 0), TypeError, "documents", "pass a list",
         id="nsp_rows-str"),
    case(lambda: nsp_rows(["ab cd", "ef gh"], 8, SPECIAL, 0), TypeError, "documents[0]",
         id="nsp_rows-list-of-str"),
    case(lambda: nsp_rows([[5, 6], [7, 8]], 8, SPECIAL, 0), TypeError, "documents[0][0]",
         id="nsp_rows-flat-documents"),
    case(lambda: nsp_rows(SENTENCE_DOCS, 3, SPECIAL, 0), ValueError, "max_len",
         id="nsp_rows-max_len-small"),
    case(lambda: nsp_rows(SENTENCE_DOCS, 8, SPECIAL, None), TypeError, "rng",
         id="nsp_rows-rng"),
    case(lambda: nsp_rows([[[5, 6], [7, 8]], []], 8, SPECIAL, 0), ValueError, "documents[1]",
         "no sentence", id="nsp_rows-empty-document"),
    case(lambda: nsp_rows([[[5, 6], []], [[9], [10]]], 8, SPECIAL, 0), ValueError,
         "documents[0]", "empty sentence", id="nsp_rows-empty-sentence"),
    case(lambda: unigram_baseline(ROWS, [7.5], V, SPECIAL_IDS), TypeError, "targets",
         "integer", id="unigram_baseline-float-targets"),
    case(lambda: unigram_baseline(ROWS, "7", V, SPECIAL_IDS), TypeError, "targets",
         id="unigram_baseline-str-targets"),
    case(lambda: unigram_baseline(ROWS, [7], V, "01234"), TypeError, "special_ids",
         "pass a list", id="unigram_baseline-special-str"),
    case(lambda: unigram_baseline(ROWS, [7], 8, SPECIAL_IDS), ValueError, "outside the vocab",
         id="unigram_baseline-id-outside"),
    case(lambda: unigram_baseline(IDS, [7], V, SPECIAL_IDS), TypeError, "rows", "Batch",
         id="unigram_baseline-rows-tensor"),
    case(lambda: unigram_baseline(ROWS._replace(attention_mask=torch.ones(1, 3)), [7], V,
                                  SPECIAL_IDS), ValueError, "attention_mask", "shape",
         id="unigram_baseline-mask-shape"),
    case(lambda: unigram_baseline(ROWS, [7], 10.0, SPECIAL_IDS), TypeError, "vocab_size",
         id="unigram_baseline-vocab-float"),
    case(lambda: unigram_baseline(ROWS._replace(input_ids=IDS.float()), [7], V, SPECIAL_IDS),
         TypeError, "rows.input_ids", "integer", id="unigram_baseline-float-rows"),
    case(lambda: unigram_baseline(ROWS, [7], V, [0, 99]), ValueError, "99", "outside",
         id="unigram_baseline-special-outside"),
    case(lambda: mask_batch(IDS, V, 4, SPECIAL_IDS, 0), TypeError, "batch", "Batch",
         id="mask_batch-tensor"),
    case(lambda: load_text(None), TypeError, "path", id="load_text-none"),
    case(lambda: load_text(""), ValueError, "path", "empty", id="load_text-empty"),
    case(lambda: pack_rows([[5, 10**20]], 8, SPECIAL), ValueError, "sequences[0]", str(10**20),
         "int64", id="pack_rows-id-beyond-int64"),
    case(lambda: pack_rows([[5, 6]], 8, {**SPECIAL, "[CLS]": 10**20}), ValueError, "special",
         str(10**20), id="pack_rows-special-beyond-int64"),
    case(lambda: nsp_rows([[[5, 2**63]], [[6], [7]]], 8, SPECIAL, 0), ValueError,
         "documents[0][0]", str(2**63), id="nsp_rows-id-beyond-int64"),
    case(lambda: load_text(["a.txt"]), TypeError, "path", id="load_text-list"),
    case(lambda: paragraphs_of(None), TypeError, "text", "str", id="paragraphs_of-None"),
    case(lambda: paragraphs_of(["one", "two"]), TypeError, "text", "list",
         id="paragraphs_of-list"),
]


@pytest.mark.parametrize(("call", "error", "words"), CORPORA)
def test_bad_input_corpora(refuses, call, error, words):
    refuses(call, error, *words)


# ----------------------------------------------------------------------------- plots

W = ["the", "cat", "sat", "mat"]

PLOTS = [
    case(lambda: plots.token_row("the cat"), TypeError, "tokens", "pass a list",
         id="token_row-str"),
    case(lambda: plots.token_row(W, highlight=[1.5]), TypeError, "highlight", "whole number",
         id="token_row-float-position"),
    case(lambda: plots.token_row(W, notes=["x"]), TypeError, "notes", "dict",
         id="token_row-notes-list"),
    case(lambda: plots.token_row([]), ValueError, "tokens", "empty", id="token_row-empty"),
    case(lambda: plots.token_row(W, ax="x"), TypeError, "ax", "Axes", id="token_row-ax-str"),
    case(lambda: plots.reads_and_answers(W, [True]), TypeError, "positions", "whole number",
         id="reads_and_answers-bool-position"),
    case(lambda: plots.reads_and_answers(W, [1], ax=axes(3)), ValueError, "needs 2 axes",
         id="reads_and_answers-three-axes"),
    case(lambda: plots.probability_dial("0.5"), TypeError, "p", "number",
         id="probability_dial-str"),
    case(lambda: plots.probability_dial(True), TypeError, "p", id="probability_dial-bool"),
    case(lambda: plots.probability_dial(NAN), ValueError, "p", "[0, 1]",
         id="probability_dial-nan"),
    case(lambda: plots.softmax_stages([1000, 0], ["a", "b"]), ValueError, "scores", "700",
         id="softmax_stages-overflow"),
    case(lambda: plots.softmax_stages([-800] * 4, W), ValueError, "scores", "-700", "underflow",
         "subtract the largest", id="softmax_stages-underflow"),
    case(lambda: plots.softmax_stages([1, 2, 0, 1], [None, "a", "b", "c"]), TypeError, "words",
         "strings", id="softmax_stages-none-word"),
    case(lambda: plots.softmax_stages([1, 2, 0, 1], [1, "a", "b", "c"]), TypeError, "words",
         "strings", id="softmax_stages-int-word"),
    case(lambda: plots.softmax_stages([1, 2, 0, 1], [["a"], ["b"], ["c"], ["d"]]), TypeError,
         "words", "strings", id="softmax_stages-list-words"),
    case(lambda: plots.softmax_stages([[1, 2]], ["a", "b"]), ValueError, "scores", "1-d",
         id="softmax_stages-2d"),
    case(lambda: plots.softmax_stages([1, 2], ["a", "a"], truth="a"), ValueError, "words",
         "twice", id="softmax_stages-duplicate-words"),
    case(lambda: plots.softmax_stages([1, 2], "ab"), TypeError, "words", "pass a list",
         id="softmax_stages-str-words"),
    case(lambda: plots.neg_log_curve([0.5]), TypeError, "points", "dict",
         id="neg_log_curve-points-list"),
    case(lambda: plots.neg_log_curve(p_min=0), ValueError, "p_min", "(0, 1]",
         id="neg_log_curve-p_min-zero"),
    case(lambda: plots.neg_log_curve(p_min="a"), TypeError, "p_min", id="neg_log_curve-p_min-str"),
    case(lambda: plots.neg_log_curve(log_x="yes"), TypeError, "log_x", "True or False",
         id="neg_log_curve-log_x-str"),
    case(lambda: plots.lines_with_spread([1, 2], {"a": ([1, 2], [1, 2], [1, 2])}, log_x=1),
         TypeError, "log_x", "True or False", id="lines_with_spread-log_x-int"),
    case(lambda: plots.loss_tower({"a": NAN}), ValueError, "'a'", "finite",
         id="loss_tower-nan"),
    case(lambda: plots.loss_tower([1, 2]), TypeError, "parts", "dict", id="loss_tower-list"),
    case(lambda: plots.slots_and_tower({"a": 0.0}), ValueError, "slot 'a'", "(0, 1]",
         id="slots_and_tower-p-zero"),
    case(lambda: plots.slots_and_tower({"a": 0.5}, ax=axes(1)), ValueError, "needs 2 axes",
         id="slots_and_tower-one-axes"),
    case(lambda: plots.slot_loss_of([1, 2], 9), ValueError, "target", "9",
         id="slot_loss_of-outside"),
    case(lambda: plots.slot_loss_of([1, 2], 1.0), TypeError, "target", "whole number",
         id="slot_loss_of-float"),
    case(lambda: plots.pipeline([("a", "b")]), TypeError, "stage", "three strings",
         id="pipeline-short-stage"),
    case(lambda: plots.grouped_bars("ab", {"x": [1, 2]}), TypeError, "categories",
         "pass a list", id="grouped_bars-str-categories"),
    case(lambda: plots.grouped_bars(["a", "b"], {"x": [1, 2]}, errors={"y": [1, 1]}),
         ValueError, "errors", "'y'", id="grouped_bars-errors-unknown"),
    case(lambda: plots.grouped_bars(["a", "b"], {"x": [1, 2]}, errors={"x": [1]}), ValueError,
         "errors 'x'", "shape", id="grouped_bars-errors-shape"),
    case(lambda: plots.grouped_bars(["a", "b"], {"x": [1, NAN]}), ValueError, "series 'x'",
         "finite", id="grouped_bars-nan"),
    case(lambda: plots.top_words(["a"], [1.5]), ValueError, "probs", "[0, 1]",
         id="top_words-above-1"),
    case(lambda: plots.top_words(["a"], [NAN]), ValueError, "probs", id="top_words-nan"),
    case(lambda: plots.top_words(["a", "b"], [0.9, 0.9]), ValueError, "probs", "sum to 1.8",
         "1 at most", id="top_words-sum-above-1"),
    case(lambda: plots.top_words(["a", "b"], [0, 0]), ValueError, "probs", "all 0",
         id="top_words-all-zero"),
    case(lambda: plots.training_curve([{"loss": 1}]), ValueError, "history[0]", "step",
         id="training_curve-no-step"),
    case(lambda: plots.training_curve({"step": 1, "eval_loss": 2}), TypeError, "history",
         "list", id="training_curve-dict"),
    case(lambda: plots.training_curve([{"step": 1, "eval_loss": 1}], {"a": NAN}), ValueError,
         "baseline 'a'", id="training_curve-baseline-nan"),
    case(lambda: plots.attention_bars(["a", "b"], [0.4, 0.6], 5), ValueError, "query",
         "position 5", id="attention_bars-query-outside"),
    case(lambda: plots.attention_bars(["a", "b"], [0.1, -0.2], 1), ValueError, "weights",
         id="attention_bars-negative-weight"),
    case(lambda: plots.attention_bars(W, [0.9] * 4, query=0), ValueError, "weights",
         "sum to 3.6", "sum to 1", id="attention_bars-sum-not-1"),
    case(lambda: plots.lines_with_spread([1, 2], {"a": ([1, 2], [2, 3], [0, 1])}), ValueError,
         "series 'a'", "between its low and high", id="lines_with_spread-low-above-high"),
    case(lambda: plots.lines_with_spread([0, 2], {"a": ([1, 2], [1, 2], [1, 2])}, log_x=True),
         ValueError, "x", "positive", id="lines_with_spread-log-zero"),
    case(lambda: plots.lines_with_spread([1, 2], {"a": ([1, 2], [1, 2])}), TypeError,
         "series 'a'", "three", id="lines_with_spread-two-sequences"),
    case(lambda: plots.reliability_diagram([0.1], [0.1], [0]), ValueError, "no bin",
         id="reliability_diagram-all-empty"),
    case(lambda: plots.reliability_diagram([0.1, 0.2], [0.1, 0.2], [1, -1]), ValueError,
         "counts", id="reliability_diagram-negative-count"),
    case(lambda: plots.reliability_diagram(None, [0.2], [1]), TypeError, "model_mean", "list",
         id="reliability_diagram-model-none"),
    case(lambda: plots.reliability_diagram(0.1, 0.2, [1]), TypeError, "model_mean", "list",
         id="reliability_diagram-numbers"),
    case(lambda: plots.reliability_diagram([0.1], "0.2", [1]), TypeError, "exact_mean", "list",
         id="reliability_diagram-exact-str"),
    case(lambda: plots.joint_and_product(["a"], ["b"], [[-0.5]], [[0.5]]), ValueError,
         "joint", "[0, 1]", id="joint_and_product-negative"),
    case(lambda: plots.joint_and_product("a", "b", [[0.5]], [[0.5]]), TypeError, "rows",
         id="joint_and_product-str-rows"),
    case(lambda: plots.joint_and_product(["a", "b"], ["c", "d"], [[.9, .9], [.9, .9]],
                                         [[.25, .25], [.25, .25]]), ValueError, "joint",
         "sums to 3.6", "1 at most", id="joint_and_product-joint-above-1"),
    case(lambda: plots.joint_and_product(["a", "b"], ["c", "d"], [[.25, .25], [.25, .25]],
                                         [[.5, .5], [.5, .5]]), ValueError, "product",
         "sums to 2", id="joint_and_product-product-above-1"),
    case(lambda: plots.alt_text("fig"), TypeError, "fig", "Figure", id="alt_text-str"),
    case(lambda: plots.alt_text(axes(1)), TypeError, "fig", "Figure", "Axes",
         id="alt_text-axes"),
    case(lambda: plots.alt_text(None), TypeError, "fig", "NoneType", id="alt_text-none"),
    case(lambda: plots.png_alt(None), TypeError, "data", "PNG", id="png_alt-none"),
    case(lambda: plots.png_alt([137, 80]), TypeError, "data", "bytes", id="png_alt-list"),
    case(lambda: plots.png_alt(b"GIF89a"), ValueError, "not a PNG", "GIF89a",
         id="png_alt-gif"),
    case(lambda: plots.png_alt("not base64!"), ValueError, "not base64", id="png_alt-bad-base64"),
    case(lambda: plots.png_alt(""), ValueError, "not a PNG", id="png_alt-empty"),
]


@pytest.mark.parametrize(("call", "error", "words"), PLOTS)
def test_bad_input_plots(refuses, call, error, words):
    refuses(call, error, *words)


# ----------------------------------------------------------------------------- exercises
# The reader's answer never raises (it gets a verdict); the chapter's own settings do.

EXERCISES = [
    case(lambda: check_loss_value(0.6, [1, 2], 9), ValueError, "target 9",
         id="check_loss_value-target-outside"),
    case(lambda: check_missing_probability(0.1, [0.7, 0.6]), ValueError, "known", "more than 1",
         id="check_missing_probability-sum-above-1"),
    case(lambda: check_missing_probability(1.0, []), ValueError, "known", "empty",
         id="check_missing_probability-empty"),
    case(lambda: check_missing_probability(0.1, "0.5"), TypeError, "known", "list",
         id="check_missing_probability-str"),
    case(lambda: check_empty_probability(0.5, -4), ValueError, "n", id="check_empty-n-negative"),
    case(lambda: check_empty_probability(0.5, 4.5), TypeError, "n", "whole number",
         id="check_empty-n-float"),
    case(lambda: check_empty_probability(0.5, 4, rate=NAN), ValueError, "rate",
         id="check_empty-rate-nan"),
    case(lambda: check_random_branch_probability(0.5, 1.0, 0.0), ValueError, "mask_prob",
         id="check_random_branch-mask_prob-1"),
    case(lambda: check_random_branch_probability(0.5, "0.8", 0.1), TypeError, "mask_prob",
         id="check_random_branch-str"),
    case(lambda: check_branch_counts([1, 2, 3, 4], -1000), ValueError, "total_tokens",
         id="check_branch_counts-negative-total"),
    case(lambda: check_branch_counts([1, 2, 3, 4], 1000, mask_prob=0.9, random_prob=0.2),
         ValueError, "more than 1", id="check_branch_counts-shares"),
    case(lambda: check_total_loss(1.0, [0.0], 0.5), ValueError, "slot_probs[0]", "(0, 1]",
         id="check_total_loss-slot-zero"),
    case(lambda: check_total_loss(1.0, [0.5], 2.0), ValueError, "nsp_prob",
         id="check_total_loss-nsp-above-1"),
    case(lambda: check_total_loss(1.0, 0.5, 0.5), TypeError, "slot_probs", "list",
         id="check_total_loss-slot_probs-number"),
    case(lambda: bert_parameter_count(10, 4.5, 1, 8, 16), TypeError, "hidden", "whole number",
         id="bert_parameter_count-float"),
    case(lambda: bert_parameter_count(-10, 4, 1, 8, 16), ValueError, "vocab_size",
         id="bert_parameter_count-negative"),
    case(lambda: check_direction("higher", "1", 2.0), TypeError, "before",
         id="check_direction-before-str"),
    case(lambda: check_direction("higher", NAN, 2.0), ValueError, "before", "finite",
         id="check_direction-before-nan"),
    case(lambda: check_perplexity(2.0, -1.0), ValueError, "loss", id="check_perplexity-negative"),
    case(lambda: check_speed_ratio(1.5, 0.0, 1.0), ValueError, "flops_ratio",
         id="check_speed_ratio-zero-flops"),
    case(lambda: check_speed_ratio(1.5, 1.5, "fast"), TypeError, "mfu_ratio",
         id="check_speed_ratio-text"),
    case(lambda: check_perplexity(2.0, 1000.0), ValueError, "loss", "700",
         id="check_perplexity-overflow"),
    case(lambda: check_excess_loss(1.0, 2.0, 0.0), ValueError, "floor", "positive",
         id="check_excess_loss-floor-zero"),
    case(lambda: check_direction_over_seeds("higher", "12", "34"), TypeError, "before", "list",
         id="check_over_seeds-str"),
    case(lambda: check_direction_over_seeds("higher", [NAN], [2.0]), ValueError, "before[0]",
         id="check_over_seeds-nan"),
    case(lambda: check_pointwise_information(1.0, "0.1", 0.2, 0.3), TypeError, "p_joint",
         id="check_pmi-str"),
    case(lambda: check_pointwise_information(1.0, 0.5, 0.2, 0.3), ValueError, "p_joint",
         "cannot exceed", id="check_pmi-joint-above-marginal"),
    case(lambda: check_direction_over_seeds("higher", 2.0, 2.1), TypeError, "before", "list",
         "float", id="check_over_seeds-one-number"),
    case(lambda: check_total_loss(1.0, [], 0.5), ValueError, "slot_probs", "empty",
         id="check_total_loss-no-slot"),
    case(lambda: grade(""), ValueError, "submissions", "empty", id="grade-submissions-empty"),
    case(lambda: student_cells("# a notebook", _book(), "p"), TypeError, "cells",
         "list of cells", id="student_cells-str"),
    case(lambda: student_cells([{"source": "x"}], _book(), "p"), ValueError, "cells[0]",
         "cell_type", id="student_cells-not-a-cell"),
    case(lambda: student_cells([{"cell_type": "markdown", "source": "```{solution-start} x\n```"}],
                               _book(), "p"), ValueError, "no {solution-end}",
         id="student_cells-unclosed-solution"),
    case(lambda: student_cells([{"cell_type": "markdown", "source": "```{warning}\nX\n```"}],
                               _book(), "p"), ValueError, "{warning}", "no plain-Markdown form",
         id="student_cells-unknown-directive"),
    case(lambda: student_cells([{"cell_type": "markdown", "source": "see {doc}`nowhere`"}],
                               _book(), "p"), ValueError, "nowhere", "not a page",
         id="student_cells-doc-to-no-page"),
    case(lambda: student_cells([{"cell_type": "markdown", "source": "{cite}`nobody2020`"}],
                               _book(), "p"), ValueError, "nobody2020", "references.bib",
         id="student_cells-unknown-citation"),
    case(lambda: answer_key({"a": "text"}), TypeError, "Book", id="answer_key-not-a-book"),
    case(lambda: Book("/"), ValueError, "not a clone of the course", "_config.yml",
         id="book-not-a-clone"),
    case(lambda: grade(42), TypeError, "submissions", "int", id="grade-submissions-int"),
    case(lambda: grade("/no/such/folder"), ValueError, "/no/such/folder", "not a folder",
         id="grade-no-such-folder"),
    case(lambda: grade(LIB_DIR), ValueError, "no notebook in", "<student>/<chapter>.ipynb",
         id="grade-no-notebook"),
    case(lambda: grade(LIB_DIR, timeout=0), ValueError, "timeout", "positive",
         id="grade-timeout-0"),
    case(lambda: grade(LIB_DIR, timeout=NAN), ValueError, "timeout", "positive",
         id="grade-timeout-nan"),
    case(lambda: grade(LIB_DIR, timeout="60"), TypeError, "timeout", "'60'",
         id="grade-timeout-str"),
    case(lambda: grade(LIB_DIR, jobs=0), ValueError, "jobs", "positive", id="grade-jobs-0"),
    case(lambda: grade(LIB_DIR, jobs=1.5), TypeError, "jobs", "whole", id="grade-jobs-float"),
    case(lambda: grade(LIB_DIR, root=3), TypeError, "root", "path", id="grade-root-int"),
    case(lambda: grade(LIB_DIR, root="/"), ValueError, "not a clone of the course",
         id="grade-root-not-a-clone"),
    case(lambda: write_gradebook({"ada": "right"}, "out"), TypeError, "Gradebook", "dict",
         id="write_gradebook-dict"),
    case(lambda: templates("book", "notebooks/worked_a_standard_mask"), TypeError, "Book",
         id="templates-not-a-book"),
    case(lambda: templates(_book(), "notebooks/nowhere"), ValueError, "nowhere", "not a page",
         id="templates-no-such-page"),
    case(lambda: stub_template("ex-x", "my_answer = (\n"), ValueError, "ex-x", "not Python",
         id="stub_template-syntax-error"),
    case(lambda: stub_template("ex-x", "my_answer = None"), ValueError, "ex-x",
         "does not end with a call to a checker", id="stub_template-no-checker-call"),
    case(lambda: stub_template("ex-x", "check_empty_loss(0.0)"), ValueError,
         "grades no name", id="stub_template-no-answer"),
    case(lambda: stub_template(1, "x"), TypeError, "label", "str", "int",
         id="stub_template-label-int"),
]


@pytest.mark.parametrize(("call", "error", "words"), EXERCISES)
def test_bad_input_exercises(refuses, call, error, words):
    refuses(call, error, *words)


# ----------------------------------------------------------------------------- tokenizer and model

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
BY_ID = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "cat": 6, "the": 5}
CFG = BertConfig(vocab_size=V, hidden_size=8, num_layers=1, num_heads=2, intermediate_size=16,
                 max_position=16)
MODEL = MiniBert(CFG)

TOKENIZER_AND_MODEL = [
    case(lambda: WordPiece(BY_ID), TypeError, "vocab", "dict", "pass a list", "id order",
         id="WordPiece-dict"),
    case(lambda: WordVocab(BY_ID), TypeError, "words", "dict", "id order", id="WordVocab-dict"),
    case(lambda: WordVocab([*SPECIALS, "a"]).decode(torch.tensor(5)), TypeError, "ids",
         "pass a list", id="WordVocab-decode-0d-tensor"),
    case(lambda: WordPiece([*SPECIALS, "a"]).decode(np.array(5)), TypeError, "ids",
         "pass a list", id="WordPiece-decode-0d-array"),
    case(lambda: MiniBert(CFG, rng=2**70), ValueError, "rng", str(2**70), "64 bits",
         id="MiniBert-rng-huge"),
    case(lambda: MiniBert(CFG, rng=-(2**70)), ValueError, "rng", "64 bits",
         id="MiniBert-rng-huge-negative"),
    case(lambda: MODEL.score(torch.full((3, 8), NAN)), ValueError, "h", "nan", "finite",
         id="score-nan"),
    case(lambda: MODEL.score(torch.full((3, 8), math.inf)), ValueError, "h", "finite",
         id="score-inf"),
    case(lambda: MODEL.score(torch.zeros(3, 8, dtype=torch.float64)), TypeError, "h",
         "float64", "float32", id="score-float64"),
    case(lambda: MODEL.score(torch.zeros(3, 8, dtype=torch.float16)), TypeError, "h",
         "float16", "float32", id="score-float16"),
    case(lambda: MODEL.encode(IDS[:, :5], want_weights="no"), TypeError, "want_weights",
         "True or False", id="encode-want_weights-str"),
    case(lambda: WordPiece({*SPECIALS, "a"}), TypeError, "vocab", "set", "pass a list",
         id="WordPiece-set"),
    case(lambda: WordPiece.from_file(""), ValueError, "path", "empty", id="from_file-empty"),
    case(lambda: export_hf(MODEL, [*SPECIALS, *"abcdefghijklmno"], ""), ValueError,
         "directory", "empty", id="export_hf-empty-directory"),
    case(lambda: MiniBert(BertConfig(**{**CFG.__dict__, "num_heads": np.float64(2)})),
         TypeError, "num_heads", "whole number", "float64", id="BertConfig-numpy-float-heads"),
]


@pytest.mark.parametrize(("call", "error", "words"), TOKENIZER_AND_MODEL)
def test_bad_input_tokenizer_and_model(refuses, call, error, words):
    refuses(call, error, *words)


def test_bad_input_vocab_save_keeps_an_existing_file(refuses, tmp_path):
    wp, path = WordPiece([*SPECIALS, "a"]), tmp_path / "vocab.txt"
    path.write_text("mine\n", encoding="utf-8")
    refuses(lambda: wp.save(path), FileExistsError, str(path), "overwrite=True")
    assert path.read_text(encoding="utf-8") == "mine\n"
    refuses(lambda: wp.save(tmp_path), ValueError, str(tmp_path), "folder")
    refuses(lambda: wp.save(tmp_path / "no" / "vocab.txt"), FileNotFoundError,
            str(tmp_path / "no"), "does not exist")
    refuses(lambda: wp.save(path, overwrite="yes"), TypeError, "overwrite", "True or False")
    wp.save(path, overwrite=True)
    assert WordPiece.from_file(path).vocab == wp.vocab
    wp.save(tmp_path / "new.txt")  # a new file needs no overwrite
    assert WordPiece.from_file(tmp_path / "new.txt").vocab == wp.vocab


# ----------------------------------------------------------------------------- text without words


@pytest.mark.parametrize("content", [b"\x00\x01\x02\n\x03\x1b", b" \n\t \r\n", b"\xe2\x80\x8b\n"],
                         ids=["control", "whitespace", "zero-width-space"])
def test_bad_input_a_txt_file_without_text(refuses, tmp_path, content):
    """A file of nothing the tokenizer reads: refused alone, skipped (and named) in a folder."""
    (tmp_path / "blank.txt").write_bytes(content)
    refuses(lambda: load_text(tmp_path / "blank.txt"), ValueError, "blank.txt", "is empty",
            "no text")
    refuses(lambda: load_text(tmp_path), ValueError, str(tmp_path), "no .txt files with text",
            "blank.txt")
    (tmp_path / "words.txt").write_text("Real words. Two sentences.", encoding="utf-8")
    with pytest.warns(UserWarning, match=r"blank\.txt is empty.*skipped"):
        docs = load_text(tmp_path)
    assert [d.name for d in docs] == ["words.txt"]


# ----------------------------------------------------------------------------- the fixes


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.uint8, torch.int32])
def test_small_integer_ids_give_the_int64_result(dtype):
    ids = torch.tensor([[2, 5, 6, 7, 8, 9, 10, 3], [2, 11, 12, 13, 3, 0, 0, 0]])
    for kw in ({}, {"rule": "bert", "rate": 0.5}):
        wide, small = corrupt(ids, **kw), corrupt(ids.to(dtype), **kw)
        assert small.input_ids.dtype == dtype and small.labels.dtype == torch.long
        assert torch.equal(small.input_ids.long(), wide.input_ids)
        assert torch.equal(small.labels, wide.labels)
    big = torch.tensor([[2, 100, 110, 3]])  # ids above 100 in a vocabulary of 120
    wide = corrupt(big, vocab_size=120, rate=1.0)
    assert torch.equal(corrupt(big.to(dtype), vocab_size=120, rate=1.0).labels, wide.labels)
    words, labels = mask_positions(ids[0].to(dtype), [1, 2], mask_token=4)
    assert words.dtype == dtype and labels.tolist()[:3] == [IGNORE_INDEX, 5, 6]
    assert torch.equal(choose_positions(torch.tensor([3, 1, 4]).to(dtype), rate=0.5, rng=1),
                       choose_positions([3, 1, 4], rate=0.5, rng=1))
    rows = Batch(ids.to(dtype), (ids != 0).long(), torch.zeros_like(ids))
    assert unigram_baseline(rows, torch.tensor([5, 9]).to(dtype), V, SPECIAL_IDS) == \
        unigram_baseline(rows._replace(input_ids=ids), [5, 9], V, SPECIAL_IDS)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32])
def test_signed_small_labels_give_the_int64_loss(dtype):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 6, 30, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 30, (4, 6), generator=g)
    labels[torch.rand(4, 6, generator=g) < 0.5] = IGNORE_INDEX
    for reduction in ("sum", "mean"):
        wide = mlm_loss(logits, labels, reduction)
        assert torch.equal(mlm_loss(logits, labels.to(dtype), reduction), wide)
        assert torch.equal(mlm_loss(logits, labels.to(dtype), reduction, check=False), wide)
    assert mlm_loss(logits.numpy(), labels.numpy().astype(np.int8)) == pytest.approx(
        mlm_loss(logits, labels).item(), rel=1e-12)


def test_uint8_labels_work_when_ignore_index_is_not_negative():
    logits = torch.zeros(3, 5)
    labels = torch.tensor([1, 255, 3], dtype=torch.uint8)  # 255 marks "not in M" here
    assert mlm_loss(logits, labels, ignore_index=255) == pytest.approx(2 * math.log(5))


def test_toy_world_as_short_as_its_grammar_allows():
    world = ToyWorld(max_len=4)  # "the cat sat ." - the shortest sentence it writes
    sentences = world.sample(20, rng=0)
    assert all(len(s) == 4 for s in sentences)
    assert world.bayes_loss(sentences, [[1]] * 20) > 0
    assert torch.isclose(world.unigram().sum(), torch.tensor(1.0, dtype=torch.float64))
    world.max_len = 6  # a later change is checked too, and still works when valid
    assert max(len(s) for s in world.sample(50, rng=1)) <= 6
    assert WORLD.sample(0, rng=0) == []


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nsp_loss_on_zero_pairs_is_zero_like_an_empty_m(reduction):
    logits = torch.zeros(0, 2, requires_grad=True)
    loss = nsp_loss(logits, torch.zeros(0, dtype=torch.bool), reduction)
    loss.backward()
    assert loss.item() == 0.0 and logits.grad is not None and logits.grad.numel() == 0
    assert nsp_loss(np.zeros((0, 2)), [], reduction) == 0.0
    assert mlm_loss(torch.zeros(2, 5), [IGNORE_INDEX] * 2, reduction).item() == 0.0


def test_answers_of_the_wrong_kind_get_a_verdict_not_an_exception():
    assert check_loss_value([0.6265], scores=[1, 2, 0, 1], target=1)  # one number in a list
    assert check_loss_value(np.array([0.6265]), scores=[1, 2, 0, 1], target=1)
    for answer in ("0.6", [0.6, 0.7], None, 1j, print):
        verdict = check_loss_value(answer, scores=[1, 2, 0, 1], target=1)
        assert not verdict and "Not answered yet" in str(verdict)
    verdict = check_softmax(lambda s: np.array(s, dtype=complex))
    assert not verdict and "complex" in str(verdict)
    assert "tie" in str(check_direction("higher", 2.0, 2.0))
    assert "same on 1 of 2" in str(check_direction_over_seeds("lower", [2.0, 2.0], [2.0, 1.0]))
    assert "finite" in str(check_branch_counts([NAN, 1, 2, 3], 1000))


def test_whole_numbers_of_numpy_and_torch_are_whole_numbers():
    cfg = BertConfig(vocab_size=np.int64(V), hidden_size=torch.tensor(8), num_layers=1,
                     num_heads=np.int32(2), intermediate_size=16, max_position=16)
    assert cfg == CFG and type(cfg.vocab_size) is int and type(cfg.hidden_size) is int
    assert WordVocab.from_tokens(["a", "b"], max_size=np.int64(6)).words == [*SPECIALS, "a"]
    assert slot_loss([1.0, 2.0], np.int64(1)) == slot_loss([1.0, 2.0], 1)
    assert corrupt(rule="bert", max_predictions=np.int64(1)).labels.ne(IGNORE_INDEX).sum() == 1
    top = corrupt(vocab_size=2**63, rate=1.0, mask_prob=0.0)  # ids up to int64's largest
    assert top.labels.tolist() == [[-100, 5, 6, 7, 8, 9, -100]]


def test_valid_variants_are_accepted():
    assert torch.equal(choose_positions(np.int64(10), rng=0), choose_positions(10, rng=0))
    for count in (torch.tensor(10), np.array(10), torch.tensor(10, dtype=torch.int8)):
        assert torch.equal(choose_positions(count, rng=0), choose_positions(10, rng=0))
    assert torch.equal(choose_positions(5, rng=2**64 - 1), choose_positions(5, rng=-1))
    huge = corrupt(vocab_size=10**13, rate=1.0, mask_prob=0.0, random_prob=1.0)  # no V-table
    assert huge.labels.tolist() == [[-100, 5, 6, 7, 8, 9, -100]]
    assert ((huge.input_ids[0, 1:-1] >= 5) & (huge.input_ids[0, 1:-1] < 10**13)).all()
    assert ToyWorld(max_len=200).unigram().shape == (WORLD.vocab_size,)
    assert bert_count(np.int64(100)) == 15
    masked, labels = mask_positions(("a", "b"), [np.int64(1)])
    assert masked == ["a", "[MASK]"] and labels == [None, "b"]
    post = WORLD.posterior(SENT, torch.tensor([1]))
    assert post.shape == (1, WORLD.vocab_size)
    assert torch.equal(post, WORLD.posterior(SENT, [1]))
    out = compare_with_exact([[0.5, 0.5]], np.array([[0.5, 0.5]]))
    assert float(out["kl"][0]) == 0.0
    grid = Figure().subplots(2, 2)  # edge_cases draws on a 2 x 2 grid of axes
    assert plots.edge_cases(ax=grid) is grid[0, 0].figure
    assert plots.loss_tower({"perfect": 0.0}).axes[0].get_ylim()[1] > 0
