"""The training chapters' checkers that ask before they tell: BERT-base's parameter count, one
sentence's exact floor, the perplexity of an unrounded loss, a pointwise mutual information
that is negative. Each accepts the right answer, says "Not answered yet" to the template's
None, names every usual mistake, and never raises on a reader's answer."""

import math

import numpy as np
import pytest
import torch

from mlmlib.exercises import (
    bert_parameter_count,
    check_parameter_count,
    check_perplexity,
    check_pointwise_information,
    check_sentence_floor,
)
from mlmlib.toyworld import ToyWorld

JUNK = [None, "109514298", "2.3", [1.0, 2.0], {"a": 1}, float("nan"), float("inf"), True,
        object(), b"1", 1 + 2j]


# ------------------------------------------------------------------ BERT-base's parameters
BASE = {"vocab_size": 30522, "hidden_size": 768, "layers": 12, "intermediate": 3072,
        "max_position": 512}
N = 109_514_298  # Hugging Face's BertForMaskedLM("bert-base-uncased") counts the same
D, FF, L, V = 768, 3072, 12, 30522
BLOCK = 4 * (D * D + D) + (D * FF + FF) + (FF * D + D) + 4 * D


def test_bert_base_has_the_published_count():
    assert bert_parameter_count(**BASE) == N
    assert f"{N / 1e6:.0f} million" == "110 million"  # the paper's "110M", rounded


@pytest.mark.parametrize("answer", [N, float(N), np.int64(N), torch.tensor(N), [N]])
def test_the_bert_base_count_is_right(answer):
    verdict = check_parameter_count(answer, **BASE)
    assert verdict and str(verdict) == "Correct: 109,514,298 weights."


@pytest.mark.parametrize(("answer", "hint"), [
    (N + V * D, "tied"),
    (N - (L * (3 * D + D + FF + D) + D), "bias as well as weights"),
    (N - 512 * D, "position embeddings"),
    (N - L * 4 * D, "two LayerNorms"),
    (N - V, "one bias b_v per word"),
    (N - 2 * D, "segment embeddings"),
    (N - L * (D * D + D), "output projection"),
    (N - ((D * D + D) + 2 * D + V), "head has weights of its own"),
    (N + D * D + D, "pooler"),
    (N - (L - 1) * BLOCK, "one encoder block; there are 12"),
    (110_000_000, "within 1%"),
    (N + 1, "within 1%"),
])
def test_each_parameter_count_mistake_is_named(answer, hint):
    verdict = check_parameter_count(answer, **BASE)
    assert not verdict and hint in str(verdict), verdict


def test_a_far_parameter_count_is_only_wrong():
    verdict = check_parameter_count(100_000_000, **BASE)
    assert not verdict and str(verdict) == "Not yet: 100,000,000 is not 109,514,298."


def test_the_new_mistakes_hold_for_the_mini_bert_too():
    small = {"vocab_size": 1024, "hidden_size": 128, "layers": 2, "intermediate": 512,
             "max_position": 128}
    n = bert_parameter_count(**small)
    assert check_parameter_count(n, **small)
    assert "pooler" in str(check_parameter_count(n + 128 * 128 + 128, **small))
    assert "there are 2" in str(check_parameter_count(
        n - (4 * (128 * 128 + 128) + (128 * 512 + 512) + (512 * 128 + 128) + 4 * 128), **small))


def test_a_one_layer_model_names_no_missing_block():
    one = {"vocab_size": 10, "hidden_size": 4, "layers": 1, "intermediate": 8,
           "max_position": 6}
    n = bert_parameter_count(**one)
    assert check_parameter_count(n, **one)
    assert "there are 1" not in str(check_parameter_count(n, **one))


@pytest.mark.parametrize("answer", JUNK, ids=repr)
def test_a_junk_parameter_count_is_a_verdict(answer):
    verdict = check_parameter_count(answer, **BASE)
    assert not verdict and str(verdict).startswith(("Not answered yet", "Not yet")), verdict


# ------------------------------------------------------------------ one sentence's floor
WORLD = ToyWorld()
WORDS = "the tired dog chased a ball .".split()
HIDDEN = [2, 3]


def _minus_log(words, masked):
    post = WORLD.posterior(words, masked)
    return [-math.log(float(post[k, WORLD.word_id[words[i]]])) for k, i in enumerate(masked)]


COSTS = _minus_log(WORDS, HIDDEN)
FLOOR = sum(COSTS) / 2
PROBS = [math.exp(-c) for c in COSTS]


def test_the_sentence_floor_is_bayes_loss():
    assert FLOOR == pytest.approx(WORLD.bayes_loss([WORDS], [HIDDEN]), abs=1e-12)
    verdict = check_sentence_floor(FLOOR, WORLD, WORDS, HIDDEN)
    assert verdict and str(verdict) == f"Correct: {FLOOR:.4f} matches the mean -log P over " \
        f"the blanks = {FLOOR:.4f}."
    assert check_sentence_floor(round(FLOOR, 4), WORLD, WORDS, HIDDEN)  # four decimals do
    assert check_sentence_floor(FLOOR, WORLD, tuple(WORDS), (2, 3))


def test_one_blank_is_its_own_floor():
    [cost] = _minus_log(WORDS, [2])
    assert check_sentence_floor(cost, WORLD, WORDS, [2])
    assert "log base 10" in str(check_sentence_floor(cost / math.log(10), WORLD, WORDS, [2]))


@pytest.mark.parametrize(("answer", "hint"), [
    (FLOOR / math.log(10), "log base 10"),
    (FLOOR / math.log(2), "log base 2"),
    (-FLOOR, "sign is flipped"),
    (sum(PROBS) / 2, "mean probability"),
    (sum(COSTS), "sum over the blanks"),
    (PROBS[0] * PROBS[1], "product of the probabilities"),
    (sum(_minus_log(WORDS, [2]) + _minus_log(WORDS, [3])) / 2, "other blanks visible"),
    (COSTS[0], "position 2 ('dog') alone"),
    (COSTS[1], "position 3 ('chased') alone"),
    (3.0, "is not"),
])
def test_each_sentence_floor_mistake_is_named(answer, hint):
    verdict = check_sentence_floor(answer, WORLD, WORDS, HIDDEN)
    assert not verdict and hint in str(verdict), verdict


@pytest.mark.parametrize("answer", JUNK, ids=repr)
def test_a_junk_sentence_floor_is_a_verdict(answer):
    verdict = check_sentence_floor(answer, WORLD, WORDS, HIDDEN)
    assert not verdict and str(verdict).startswith(("Not answered yet", "Not yet")), verdict


@pytest.mark.parametrize(("world", "words", "hidden", "error", "words_in_message"), [
    ("a world", WORDS, HIDDEN, TypeError, "ToyWorld"),
    (WORLD, "the tired dog chased a ball .", HIDDEN, TypeError, "words"),
    (WORLD, WORDS, [], ValueError, "no position"),
    (WORLD, WORDS, [2, 9], ValueError, "9"),
    (WORLD, WORDS, [2, 2], ValueError, "masked"),
    (WORLD, "the tired boy barked .".split(), [2], ValueError, "probability 0"),
    (WORLD, "the tired dog chased a .".split(), [2], ValueError, "impossible"),
    (WORLD, "the tired unicorn chased a ball .".split(), [3], ValueError, "unicorn"),
])
def test_the_sentence_floors_settings_are_checked(world, words, hidden, error,
                                                  words_in_message):
    with pytest.raises(error, match=words_in_message):
        check_sentence_floor(FLOOR, world, words, hidden)


# ------------------------------------------------------------------ perplexity, unrounded
LOSS = 7.663513296399754  # the unigram baseline on training 3's content words


def test_the_perplexity_of_an_unrounded_loss():
    assert check_perplexity(math.exp(LOSS), LOSS)
    assert str(check_perplexity(math.exp(LOSS), LOSS)).endswith(f"= {math.exp(LOSS):.4f}.")


@pytest.mark.parametrize(("answer", "hint"), [
    (math.exp(round(LOSS, 2)), "rounded to two decimals"),
    (2**LOSS, "2 to the power"),
    (10**LOSS, "10 to the power"),
    (LOSS, "the loss itself"),
    (math.exp(-LOSS), "minus the loss"),
])
def test_each_perplexity_mistake_is_named(answer, hint):
    verdict = check_perplexity(answer, LOSS)
    assert not verdict and hint in str(verdict), verdict


def test_a_loss_printed_with_four_decimals_is_close_enough():
    assert check_perplexity(math.exp(round(LOSS, 4)), LOSS)


@pytest.mark.parametrize("answer", JUNK, ids=repr)
def test_a_junk_perplexity_is_a_verdict(answer):
    verdict = check_perplexity(answer, LOSS)
    assert not verdict and str(verdict).startswith(("Not answered yet", "Not yet")), verdict


# ------------------------------------------------------------------ a negative PMI
def test_a_pair_that_tells_little_has_a_small_negative_pmi():
    words = "the small cat barked .".split()
    joint = WORLD.pair_posterior(words, 2, 3)
    cat, sat = WORLD.word_id["cat"], WORLD.word_id["sat"]
    p_pair, p_cat, p_sat = (float(joint[cat, sat]), float(joint.sum(1)[cat]),
                            float(joint.sum(0)[sat]))
    pmi = math.log(p_pair) - math.log(p_cat) - math.log(p_sat)
    assert -0.05 < pmi < 0
    verdict = check_pointwise_information(pmi, p_pair, p_cat, p_sat)
    assert verdict and str(verdict).endswith(f"= {pmi:.4f}.")
    assert "sign is flipped" in str(check_pointwise_information(-pmi, p_pair, p_cat, p_sat))
    assert "log base 2" in str(check_pointwise_information(pmi / math.log(2), p_pair, p_cat,
                                                           p_sat))
    assert "ratio" in str(check_pointwise_information(math.exp(pmi), p_pair, p_cat, p_sat))
