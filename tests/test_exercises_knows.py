"""The checkers of "What the model knows, exactly" (mlmlib.exercises.knows): right answers pass
and say what was measured, the usual mistakes are named, seeds that disagree and differences
the measurement cannot tell check nothing, bad settings raise, and no reader's answer does."""

import itertools
import math

import numpy as np
import pytest
import torch

from mlmlib.exercises import (
    Verdict,
    check_block_beats_reader,
    check_exponent_side,
    check_first_layer,
    check_floor_side,
    check_formula_difference,
    check_formula_holds,
    check_left_out_limit,
    check_limit_effect,
    check_limit_exponent,
    check_power_law_exponent,
    check_probe_holds,
    check_probe_kl,
    check_repeat_share,
    check_repeat_side,
    check_rise_side,
    check_span_effect,
    check_span_rise,
    check_trained_elsewhere,
)
from mlmlib.seeds import paired_difference, t_quantile

KL = {"embeddings": [0.41, 0.43, 0.40], "block_1": [0.03, 0.05, 0.04],
      "head_transform": [0.02, 0.03, 0.02]}
MEMORISED = ([2.01, 2.02, 2.00], 2.05)  # (losses, floor): below the floor on every seed
WHAT = "the static run's loss on its own training masks"
N1, N2, L1, L2, E = 1000, 4000, 2.6, 2.3, 2.1
ALPHA = math.log((L1 - E) / (L2 - E)) / math.log(N2 / N1)
READER_ANSWERS = [None, "", "  ", 3, "x", float("nan"), [1], math.inf, {"a": 1}, object(),
                  np.array([1.0, 2.0]), True, b"below", "0.5"]


def _fails_with(verdict, *words):
    assert isinstance(verdict, Verdict) and not verdict, verdict
    for word in words:
        assert word in str(verdict), (word, str(verdict))


# ----------------------------------------------------------------------------- first layer

@pytest.mark.parametrize("answer", ["block_1", " Block 1 ", "BLOCK-1", '"block_1".'])
def test_first_layer_right(answer):
    verdict = check_first_layer(answer, KL)
    assert verdict and str(verdict).startswith("Your answer matches: block_1 is the first layer")
    assert "every one of 3 seeds" in str(verdict) and "0.050" in str(verdict)


def test_first_layer_mistakes_are_named():
    _fails_with(check_first_layer("embeddings", KL), "[MASK] vector", "same for every blank",
                "about 0.413 nats", "?")
    _fails_with(check_first_layer("head_transform", KL), "already readable at block_1",
                "What does head_transform add?")
    _fails_with(check_first_layer("block_9", KL), "not one of the layers",
                "embeddings, block_1, head_transform")
    _fails_with(check_first_layer("none", KL), "Which comes first?")
    deeper = {"embeddings": [0.4, 0.4], "block_1": [0.3, 0.05], "block_2": [0.02, 0.01]}
    _fails_with(check_first_layer("block_1", deeper), "seeds disagree")
    deeper["block_1"] = [0.3, 0.2]
    _fails_with(check_first_layer("block_1", deeper), "stays above 0.1 nats on some seed",
                "Where does it first get below?")
    assert check_first_layer("block_2", deeper)


def test_first_layer_seeds_disagree_or_none_gets_below():
    split = {"embeddings": [0.4, 0.4, 0.4], "block_1": [0.05, 0.2, 0.04],
             "head_transform": [0.01, 0.01, 0.01]}
    for answer in ("block_1", "head_transform", "embeddings"):
        _fails_with(check_first_layer(answer, split), "seeds disagree", "2 of 3",
                    "cannot settle it")
    never = {"embeddings": [0.4, 0.5], "block_1": [0.3, 0.2]}
    assert check_first_layer("None", never) and "no layer" in str(check_first_layer("none", never))
    _fails_with(check_first_layer("block_1", never), "never gets below 0.1 nats", "0.250",
                "barely changes its input")
    assert check_first_layer("embeddings", {"embeddings": [0.0, -1e-12]})  # rounding: allowed
    assert not check_first_layer("block_1", KL, threshold=0.04)  # 0.05 on seed 2: disagree


@pytest.mark.parametrize("answer", [None, "", "   ", 3, ["block_1"]])
def test_first_layer_template(answer):
    _fails_with(check_first_layer(answer, KL), "Not answered yet", "block_1")


@pytest.mark.parametrize(("kl", "threshold", "error", "words"), [
    ([0.1, 0.2], 0.1, TypeError, "kl must be a dict"),
    ({}, 0.1, ValueError, "kl is empty"),
    ({"embeddings": []}, 0.1, ValueError, "kl['embeddings'] is empty"),
    ({"embeddings": 0.3}, 0.1, TypeError, "kl['embeddings']"),
    ({"embeddings": [0.3, math.nan]}, 0.1, ValueError, "kl['embeddings']"),
    ({"embeddings": [0.3, -0.1]}, 0.1, ValueError, "kl['embeddings']"),
    ({"embeddings": ["0.3"]}, 0.1, TypeError, "kl['embeddings']"),
    ({"embeddings": [0.3, 0.2], "block_1": [0.1]}, 0.1, ValueError, "same number of seeds"),
    ({1: [0.3]}, 0.1, TypeError, "layer name"),
    (KL, 0, ValueError, "threshold"),
    (KL, math.nan, ValueError, "threshold"),
    (KL, "0.1", TypeError, "threshold"),
])
def test_first_layer_bad_settings_raise(kl, threshold, error, words):
    with pytest.raises(error, match=words.replace("[", r"\[").replace("]", r"\]")):
        check_first_layer("block_1", kl, threshold)


# ----------------------------------------------------------------------------- floor side

def test_floor_side_right():
    below = check_floor_side(" Below ", *MEMORISED, what=WHAT)
    assert below and str(below).startswith(f"Your prediction matches: {WHAT} came out below")
    assert "every one of 3 seeds" in str(below) and "memorisation" in str(below)
    above = check_floor_side("above", [2.10, 2.12], [2.05, 2.06])
    assert above and "above its floor on every one of 2 seeds, by 0.0500 to 0.0600" in str(above)
    assert "on its one seed" in str(check_floor_side("above", 2.3, 2.1))


def test_floor_side_mistakes_are_named():
    _fails_with(check_floor_side("above", *MEMORISED, what=WHAT), WHAT, "came out below",
                "never trained on", "many times", "not a fresh sentence", "memorisation", "?")
    _fails_with(check_floor_side("below", [2.10, 2.12], [2.05, 2.06]), "came out above",
                "not trained on", "best any reader can do", "?")


def test_floor_side_seeds_disagree_or_tie():
    _fails_with(check_floor_side("below", [2.0, 2.1, 2.0], 2.05), "seeds disagree", "2 of 3",
                "cannot settle it")
    _fails_with(check_floor_side("above", [2.05, 2.1], 2.05), "exactly at its floor", "1 of 2")


@pytest.mark.parametrize("answer", [None, "", "higher", 1])
def test_floor_side_template(answer):
    _fails_with(check_floor_side(answer, *MEMORISED), "Not answered yet", '"below" or "above"')


@pytest.mark.parametrize(("losses", "floors", "what", "error", "words"), [
    ([2.0, 2.1], [2.0, 2.1, 2.2], "the loss", ValueError, "one floor per seed"),
    ([], 2.0, "the loss", ValueError, "at least one loss"),
    ([2.0, math.nan], 2.0, "the loss", ValueError, "losses"),
    ([2.0, 0.0], 2.0, "the loss", ValueError, "losses must be positive"),
    ([2.0], -1.0, "the loss", ValueError, "floors must be positive"),
    ("2.0", 2.0, "the loss", TypeError, "losses"),
    ([2.0], 2.0, 3, TypeError, "what"),
])
def test_floor_side_bad_settings_raise(losses, floors, what, error, words):
    with pytest.raises(error, match=words):
        check_floor_side("below", losses, floors, what)


# ------------------------------------------------------------- trained on the other kind

def test_trained_elsewhere_reads_every_seed():
    matched, other = [0.02, 0.03, 0.02], [0.07, 0.06, 0.08]  # the other kind is farther
    verdict = check_trained_elsewhere("farther", matched, other)
    assert verdict and "over 3 seeds" in str(verdict) and "0.047 nats" in str(verdict)
    assert "farther on 3 of 3 seeds, closer on 0" in str(verdict)
    assert check_trained_elsewhere(" Farther. ", matched, other)
    assert check_trained_elsewhere("closer", other, matched, test="span")
    _fails_with(check_trained_elsewhere("closer", matched, other), "Harder training need not",
                "blanks it is shown", "?")
    _fails_with(check_trained_elsewhere("farther", other, matched), "Which blanks", "?")
    assert check_trained_elsewhere("farther", [-0.002, 0.01], [0.03, 0.04])  # below 0 by luck


def test_trained_elsewhere_counts_a_seed_within_its_error_as_level():
    # the chapter's case: seed 1 costs +0.002 against a standard error of about 0.003
    matched, other = [0.033, 0.018, 0.019, 0.022, 0.020], [0.049, 0.020, 0.103, 0.101, 0.072]
    ses = [0.005, 0.003, 0.006, 0.007, 0.005]
    verdict = check_trained_elsewhere("farther", matched, other, ses)
    assert verdict and "farther on 4 of 5 seeds, closer on 0" in str(verdict)
    assert "level within one standard error on 1" in str(verdict) and "95% interval" in str(verdict)
    # one seed, level within its error: nothing to check
    _fails_with(check_trained_elsewhere("farther", [0.018], [0.020], [0.003]), "cannot settle",
                "level with the other")
    assert check_trained_elsewhere("farther", [0.018], [0.030], [0.003])
    with pytest.raises(ValueError, match="one number per seed"):
        check_trained_elsewhere("farther", matched, other, ses[:2])


def test_trained_elsewhere_adds_the_shared_test_sets_noise():
    matched, other = [0.02, 0.03, 0.02, 0.025], [0.05, 0.06, 0.055, 0.05]
    assert check_trained_elsewhere("farther", matched, other, shared_se=0.0)
    verdict = check_trained_elsewhere("farther", matched, other, shared_se=0.002)
    assert verdict and "the test set's noise included" in str(verdict)
    # the seeds agree closely, but the one test set they share is too noisy to tell
    _fails_with(check_trained_elsewhere("farther", matched, other, shared_se=0.02),
                "cannot settle", "holds 0", "the test set's noise included")
    d = paired_difference(matched, other)
    half = t_quantile(3) * math.sqrt(d.se**2 + 0.01**2)
    assert f"{d.mean - half:+.3f} to {d.mean + half:+.3f}" in str(
        check_trained_elsewhere("farther", matched, other, shared_se=0.01))
    for bad, error in ((-0.01, ValueError), ("0.01", TypeError), (math.nan, ValueError)):
        with pytest.raises(error, match="shared_se"):
            check_trained_elsewhere("farther", matched, other, shared_se=bad)


def test_trained_elsewhere_will_not_settle_a_split():
    for answer in ("closer", "farther"):
        _fails_with(check_trained_elsewhere(answer, [0.02, 0.05], [0.03, 0.04]),
                    "The seeds disagree", "1 of 2 seeds", "holds 0", "cannot settle")
        _fails_with(check_trained_elsewhere(answer, [0.02], [0.02]), "cannot settle")
        # every seed on one side, but too few and too spread for the interval to exclude 0
        _fails_with(check_trained_elsewhere(answer, [0.02, 0.03, 0.02], [0.07, 0.05, 0.10]),
                    "The seeds cannot settle it", "holds 0", "farther on 3 of 3 seeds")
    _fails_with(check_trained_elsewhere(None, [0.02], [0.03]), "Not answered yet")
    with pytest.raises(ValueError, match="pair seed with seed"):
        check_trained_elsewhere("closer", [0.02, 0.03], [0.03])
    with pytest.raises(ValueError, match="other_gaps"):
        check_trained_elsewhere("closer", [0.02], [])
    with pytest.raises(TypeError, match="test"):
        check_trained_elsewhere("closer", [0.02], [0.03], test=3)


# ----------------------------------------------------------------------------- span effect

@pytest.mark.parametrize("answer", ["raise", "Raises", " higher ", "UP", "raised"])
def test_span_effect_raise_words(answer):
    verdict = check_span_effect(answer, 1.20, 1.35, 0.01)
    assert verdict and str(verdict) == ("Your prediction matches: spans raise the floor, from "
                                        "1.2000 to 1.3500 nats.")


@pytest.mark.parametrize("answer", ["lower", "Lowers", "down", "lowered"])
def test_span_effect_lower_words(answer):
    assert check_span_effect(answer, 1.20, 1.10, 0.01)
    _fails_with(check_span_effect(answer, 1.20, 1.35, 0.01), "neighbours", "?")


def test_span_effect_mistakes_are_named():
    _fails_with(check_span_effect("lower", 1.20, 1.35, 0.01), "spans raise the floor",
                "hides a word's neighbours", "determiner and adjective", "visible words left")
    _fails_with(check_span_effect("raise", 1.20, 1.10, 0.01), "spans lower the floor",
                "What did the spans hide instead", "edges", "predict nothing?")


def test_span_effect_cannot_tell():
    _fails_with(check_span_effect("raise", 1.20, 1.22, 0.01), "cannot tell", "0.0200",
                "3 standard errors (0.0300)", "no prediction")
    _fails_with(check_span_effect("lower", 1.20, 1.20, 0.0), "cannot tell")
    assert check_span_effect("raise", 1.20, 1.231, 0.01)  # 3.1 standard errors: it can


@pytest.mark.parametrize("answer", ["same", "No change", "the same", "neither"])
def test_span_effect_names_same_as_the_usual_mistake(answer):
    _fails_with(check_span_effect(answer, 1.20, 1.35, 0.01), "Not the same",
                "spans raise the floor", "same number of hidden words", "?")
    _fails_with(check_span_effect(answer, 1.20, 1.10, 0.01), "Not the same", "spans lower")
    _fails_with(check_span_effect(answer, 1.20, 1.21, 0.01), "cannot tell")


@pytest.mark.parametrize("answer", [None, "", "maybe", 1.5])
def test_span_effect_template(answer):
    _fails_with(check_span_effect(answer, 1.20, 1.35, 0.01), "Not answered yet",
                '"raise" or "lower"')


@pytest.mark.parametrize(("args", "error", "words"), [
    ((0.0, 1.3, 0.01), ValueError, "token_floor"),
    ((1.2, math.nan, 0.01), ValueError, "span_floor"),
    ((1.2, math.inf, 0.01), ValueError, "span_floor"),
    ((1.2, 1.3, -0.01), ValueError, "standard_error"),
    ((1.2, 1.3, "0.01"), TypeError, "standard_error"),
    ((None, 1.3, 0.01), TypeError, "token_floor"),
])
def test_span_effect_bad_settings_raise(args, error, words):
    with pytest.raises(error, match=words):
        check_span_effect("raise", *args)


# ----------------------------------------------------------------------------- power law

def _alpha(top=math.log, bottom=math.log, e1=E, e2=E):
    return top((L1 - e1) / (L2 - e2)) / bottom(N2 / N1)


@pytest.mark.parametrize("answer", [
    ALPHA, round(ALPHA, 4), _alpha(math.log10, math.log10), _alpha(math.log2, math.log2),
    np.float32(ALPHA), [ALPHA],
])
def test_power_law_right_in_any_one_base(answer):
    verdict = check_power_law_exponent(answer, N1, N2, L1, L2, E)
    assert verdict and str(verdict) == (
        f"Correct: {ALPHA:.4f} matches alpha = log((loss1 - floor) / (loss2 - floor)) / "
        f"log(n2 / n1) = {ALPHA:.4f}.")


@pytest.mark.parametrize(("answer", "hint"), [
    (_alpha(e1=0, e2=0), "leaves out the floor"),
    (-ALPHA, "sign is flipped"),
    (1 / ALPHA, "1/alpha, the fraction upside down"),
    (_alpha(e2=0), "from loss1 only"),
    (_alpha(e1=0), "from loss2 only"),
    (_alpha(top=math.log10), "log10 on top and the natural log below"),
    (_alpha(bottom=math.log10), "the natural log on top and log10 below"),
    (_alpha(top=math.log2), "log2 on top and the natural log below"),
    (_alpha(bottom=math.log2), "the natural log on top and log2 below"),
    (0.1234, "is not"),
])
def test_power_law_mistakes_are_named(answer, hint):
    verdict = check_power_law_exponent(answer, N1, N2, L1, L2, E)
    _fails_with(verdict, hint)
    assert not str(verdict).endswith("?.")


@pytest.mark.parametrize("answer", [None, "", "0.66"])
def test_power_law_template(answer):
    _fails_with(check_power_law_exponent(answer, N1, N2, L1, L2, E), "Not answered yet")


@pytest.mark.parametrize(("args", "error", "words"), [
    ((1000, 1000, L1, L2, E), ValueError, "n1 and n2 must differ"),
    ((0, N2, L1, L2, E), ValueError, "n1"),
    ((N1, -5, L1, L2, E), ValueError, "n2"),
    ((True, N2, L1, L2, E), TypeError, "n1"),
    ((N1, N2, 2.1, L2, E), ValueError, "loss1 must be above the floor"),
    ((N1, N2, L1, 2.0, E), ValueError, "loss2 must be above the floor"),
    ((N1, N2, math.nan, L2, E), ValueError, "loss1"),
    ((N1, N2, L1, "2.3", E), TypeError, "loss2"),
    ((N1, N2, L1, L2, -0.5), ValueError, "floor"),
])
def test_power_law_bad_settings_raise(args, error, words):
    with pytest.raises(error, match=words):
        check_power_law_exponent(ALPHA, *args)


# ----------------------------------------------------------------------------- exponent's side


def test_exponent_side_compares_the_two_size_exponent_with_the_fitted_one():
    assert check_exponent_side("lower", ALPHA + 0.1, N1, N2, L1, L2, E)
    assert check_exponent_side(" Higher ", ALPHA - 0.1, N1, N2, L1, L2, E)
    wrong = check_exponent_side("higher", ALPHA + 0.1, N1, N2, L1, L2, E)
    assert "usual mistake" in str(wrong) and "steep fall of the smallest sizes" in str(wrong)
    assert "usual mistake" not in str(check_exponent_side("lower", ALPHA - 0.1, N1, N2, L1, L2, E))
    _fails_with(wrong, "lower than the fitted", "leans on the sizes where the loss falls most")
    _fails_with(check_exponent_side(None, ALPHA, N1, N2, L1, L2, E), "Not answered yet")
    _fails_with(check_exponent_side("lower", ALPHA, N1, N2, L1, L2, E), "equal")


@pytest.mark.parametrize("args", [(1.0, 1000, 1000, 2.6, 2.3, 2.1),
                                  (1.0, 1000, 4000, 2.0, 2.3, 2.1),
                                  ("1", 1000, 4000, 2.6, 2.3, 2.1)])
def test_exponent_side_bad_settings_raise(args):
    with pytest.raises((ValueError, TypeError)):
        check_exponent_side("lower", *args)


# ------------------------------------------------------------------- the rise, other spans


def test_rise_side_and_number():
    assert check_rise_side("lower", 0.16, 0.30, 0.02)
    _fails_with(check_rise_side("higher", 0.16, 0.30, 0.02), "lower than with SpanBERT", "?")
    _fails_with(check_rise_side("lower", 0.29, 0.30, 0.02), "cannot tell")
    _fails_with(check_rise_side(None, 0.16, 0.30, 0.02), "Not answered yet")
    _fails_with(check_rise_side("same", 0.16, 0.30, 0.02), "Not the same", "lower than with",
                "how they are arranged")  # the usual mistake, named
    _fails_with(check_rise_side("same", 0.29, 0.30, 0.02), "cannot tell")  # within noise
    assert check_span_rise(0.1604, 0.1604, 0.3041)
    _fails_with(check_span_rise(-0.1604, 0.1604, 0.3041), "single words minus spans")
    _fails_with(check_span_rise(0.3041, 0.1604, 0.3041), "SpanBERT's spans")
    _fails_with(check_span_rise(None, 0.1604, 0.3041), "Not answered yet")
    with pytest.raises(TypeError):
        check_span_rise(0.1, "0.16", 0.3)
    with pytest.raises(ValueError):
        check_rise_side("lower", 0.16, 0.30, -1.0)


# ------------------------------------------------------------------------ a size left out


def test_left_out_limit_reads_the_side_and_names_the_mistake():
    right = check_left_out_limit("lower", 2.1914, 2.1577, "width 96")
    assert right and "without width 96, the fitted E lands lower, at 2.1577" in str(right)
    assert check_left_out_limit(" HIGHER ", 2.19, 2.20)
    _fails_with(check_left_out_limit("higher", 2.1914, 2.1577), "lands lower", "steeper",
                "power law", "?")
    _fails_with(check_left_out_limit("lower", 2.19, 2.20), "lands higher", "pull", "?")
    _fails_with(check_left_out_limit(None, 2.19, 2.20), "Not answered yet")
    _fails_with(check_left_out_limit("lower", 2.19, 2.19), "equal")


@pytest.mark.parametrize(("args", "error"), [(("2.19", 2.2), TypeError),
                                             ((2.19, math.nan), ValueError),
                                             ((2.19, 2.2, 5), TypeError)])
def test_left_out_limit_bad_settings_raise(args, error):
    with pytest.raises(error):
        check_left_out_limit("lower", *args)


# ---------------------------------------------------------------------- a limit off the floor

LIMIT = E + 0.05  # a fitted E above the floor
ALPHA_AT_LIMIT = math.log((L1 - LIMIT) / (L2 - LIMIT)) / math.log(N2 / N1)


def test_a_higher_limit_gives_a_higher_exponent_and_a_lower_one_a_lower():
    assert ALPHA_AT_LIMIT > ALPHA  # the fact the exercise asks for, computed independently
    assert check_limit_effect("higher", N1, N2, L1, L2, E, LIMIT)
    assert check_limit_effect("Lower", N1, N2, L1, L2, E, E - 0.05)
    _fails_with(check_limit_effect("lower", N1, N2, L1, L2, E, LIMIT), "higher than with E at",
                "which distance")
    _fails_with(check_limit_effect(" same ", N1, N2, L1, L2, E, LIMIT), "Not the same",
                f"{ALPHA_AT_LIMIT:.3f}")
    _fails_with(check_limit_effect(None, N1, N2, L1, L2, E, LIMIT), "Not answered yet")


@pytest.mark.parametrize(("answer", "hint"), [
    (ALPHA, "subtracts the exact floor, not the limit"),
    (math.log((L1 - LIMIT) / L2) / math.log(N2 / N1), "subtracts the limit from loss1 only"),
    (math.log(L1 / L2) / math.log(N2 / N1), "leaves out the limit"),
    (-ALPHA_AT_LIMIT, "sign is flipped"),
])
def test_limit_exponent_names_its_mistakes(answer, hint):
    _fails_with(check_limit_exponent(answer, N1, N2, L1, L2, E, LIMIT), hint)


def test_limit_exponent_right_answer_and_bad_settings():
    verdict = check_limit_exponent(ALPHA_AT_LIMIT, N1, N2, L1, L2, E, LIMIT)
    assert verdict and "loss1 - limit" in str(verdict)
    with pytest.raises(ValueError, match="loss2 must be above the limit"):
        check_limit_exponent(1.0, N1, N2, L1, L2, E, L2)
    with pytest.raises(ValueError, match="limit"):
        check_limit_effect("higher", N1, N2, L1, L2, E, math.nan)


# ----------------------------------------------------------------------------- repeated masks

LENGTHS = [2, 3, 5]


def _brute_share(lengths, rate, masks, per_blank=True):
    """Every mask of every sentence enumerated: the share of blanks (or masks with a blank)
    whose mask is one of ``masks`` fixed masks drawn the same way."""
    seen = total = 0.0
    for n in lengths:
        for mask in itertools.product([0, 1], repeat=n):
            k = sum(mask)
            if not k:
                continue
            p = math.prod(rate if b else 1 - rate for b in mask)
            weight = p * (k if per_blank else 1)
            seen += weight * (1 - (1 - p) ** masks)
            total += weight
    return seen / total


def test_repeat_share_is_the_enumerated_share():
    share = _brute_share(LENGTHS, 0.15, 10)
    verdict = check_repeat_share(share, LENGTHS, 0.15)
    assert verdict and verdict.message.endswith(f"= {share:.4f}.")
    # at the toy world's lengths (about 8 words), a lower rate gives fewer, likelier masks and
    # more repeats (the exercise's prediction); in sentences of two or three words it need not
    assert _brute_share([7, 8, 9], 0.15, 10) > _brute_share([7, 8, 9], 0.3, 10)
    assert _brute_share([2, 3], 0.15, 10) < _brute_share([2, 3], 0.3, 10)


@pytest.mark.parametrize("answer, hint", [
    (_brute_share(LENGTHS, 0.15, 10, per_blank=False), "counts each mask once"),
    (_brute_share(LENGTHS, 0.15, 1), "one fixed mask"),
    (100 * _brute_share(LENGTHS, 0.15, 10), "percentage"),
    (_brute_share(LENGTHS, 0.3, 10), "the rate 0.3"),
])
def test_repeat_share_mistakes_are_named(answer, hint):
    _fails_with(check_repeat_share(answer, LENGTHS, 0.15, compare_rate=0.3), hint)


def test_repeat_side_compares_the_two_rates():
    lengths = [7, 8, 9]  # (a lower rate repeats more at these lengths: see above)
    assert check_repeat_side("higher", lengths, 0.15, 0.3)
    _fails_with(check_repeat_side("lower", lengths, 0.15, 0.3), "disagree", "higher")
    _fails_with(check_repeat_side(None, lengths, 0.15, 0.3), "Not answered yet")
    _fails_with(check_repeat_side("higher", lengths, 0.3, 0.3), "equal")
    with pytest.raises(ValueError, match="compare_rate"):
        check_repeat_side("higher", lengths, 0.15, 1.5)


@pytest.mark.parametrize("args, error, words", [
    (([], 0.15), ValueError, "lengths"),
    (([3, 2.5], 0.15), ValueError, "whole"),
    (([3, 0], 0.15), ValueError, "lengths"),
    (([3], 0.0), ValueError, "rate"),
    (([3], 1.0), ValueError, "rate"),
    (([3], "0.15"), TypeError, "rate"),
    (([3], 0.15, 0), ValueError, "masks"),
    (([3], 0.15, 2.0), TypeError, "masks"),
])
def test_repeat_share_bad_settings_raise(args, error, words):
    with pytest.raises(error, match=words):
        check_repeat_share(0.1, *args)


# ---------------------------------------------------------------- the two-neighbour formula

SAT = "the small cat sat .".split()


def _world():
    from mlmlib.toyworld import ToyWorld

    return ToyWorld()


def test_formula_holds_and_its_difference_against_the_exact_belief():
    from mlmlib.toyworld import ToyWorld

    world = ToyWorld()
    assert check_formula_holds(" No ", world, SAT, 3, [2, 3])  # "cat" hidden: split state
    assert check_formula_holds("yes", world, SAT, 3, [3])  # "cat" visible: settled
    _fails_with(check_formula_holds("yes", world, SAT, 3, [2, 3]), "misses", "settled", "?")
    _fails_with(check_formula_holds("no", world, SAT, 3, [3]), "gives the exact", "?")
    _fails_with(check_formula_holds(None, world, SAT, 3, [2, 3]), "Not answered yet")
    exact = world.slot_posterior(SAT, [2, 3], positions=[3])[0]
    assert abs(float(exact.max()) - 0.5238) < 1e-3  # animal's verb against person's: split
    assert check_formula_difference(1 - float(exact.max()), world, SAT, 3, [2, 3])
    _fails_with(check_formula_difference(0.0, world, SAT, 3, [2, 3]), "only the blank masked")
    _fails_with(check_formula_difference(None, world, SAT, 3, [2, 3]), "Not answered yet")


@pytest.mark.parametrize(("args", "error", "words"), [
    (("world", SAT, 3, [2, 3]), TypeError, "ToyWorld"),
    ((None, "the cat", 3, [3]), TypeError, "words must be a list"),
    ((None, ["the", "zebra", "."], 1, [1]), ValueError, "vocabulary"),
    ((None, SAT, 4, [4]), ValueError, "a word on each side"),
    ((None, SAT, 3, [2]), ValueError, "must hold the blank"),
    ((None, SAT, 3, [3, 4]), ValueError, "right neighbour"),
])
def test_formula_bad_settings_raise(args, error, words):
    from mlmlib.toyworld import ToyWorld

    args = (ToyWorld() if args[0] is None else args[0], *args[1:])
    with pytest.raises(error, match=words):
        check_formula_difference(0.1, *args)


# ------------------------------------------------------------------- a probe of one's own


def _probe_rows(n: int, seed: int):
    """Rows whose 4 features are a noisy code of 3 states' distributions: (x, q)."""
    g = torch.Generator().manual_seed(seed)
    state = torch.randint(3, (n,), generator=g)
    q = torch.full((n, 3), 0.05, dtype=torch.float64).scatter(1, state[:, None], 0.9)
    x = torch.nn.functional.one_hot(state, 4).double() + 0.3 * torch.randn(n, 4, generator=g,
                                                                           dtype=torch.float64)
    return x, q


def test_probe_holds_and_its_kl():
    held = _probe_rows(200, 1)
    few, many = _probe_rows(3, 2), _probe_rows(400, 3)
    assert check_probe_holds("no", *few, *held, weight_decay=1e-4)  # three rows: no
    assert check_probe_holds(" Yes ", *many, *held, weight_decay=1e-4)
    _fails_with(check_probe_holds("yes", *few, *held, weight_decay=1e-4), "above 0.1", "rows",
                "?")
    _fails_with(check_probe_holds(None, *many, *held), "Not answered yet")
    from mlmlib.probe import fit_probe

    probe = fit_probe(*many, rng=0, weight_decay=1e-4, steps=200)
    right = probe.score(*held)
    assert check_probe_kl(right.kl, *many, *held)
    assert check_probe_kl(right.kl + 1e-3, *many, *held)  # another start: within the tolerance
    _fails_with(check_probe_kl(probe.score(*many).kl, *many, *held), "fitted on")
    _fails_with(check_probe_kl(right.cross_entropy, *many, *held), "cross-entropy")
    _fails_with(check_probe_kl(None, *many, *held), "Not answered yet")
    with pytest.raises(ValueError):
        check_probe_kl(0.1, many[0][:5], many[1], *held)  # rows and targets disagree
    with pytest.raises(ValueError):
        check_probe_holds("no", *many, *held, threshold=-1.0)


# ----------------------------------------------------------------------------- every checker

CHECKS = {
    "first_layer": lambda a: check_first_layer(a, KL),
    "floor_side": lambda a: check_floor_side(a, *MEMORISED),
    "span_effect": lambda a: check_span_effect(a, 1.20, 1.35, 0.01),
    "power_law": lambda a: check_power_law_exponent(a, N1, N2, L1, L2, E),
    "repeat_share": lambda a: check_repeat_share(a, [3, 5, 8], 0.15, compare_rate=0.3),
    "exponent_side": lambda a: check_exponent_side(a, 0.5, N1, N2, L1, L2, E),
    "repeat_side": lambda a: check_repeat_side(a, [3, 5, 8], 0.15, 0.3),
    "left_out_limit": lambda a: check_left_out_limit(a, 2.19, 2.16),
    "rise_side": lambda a: check_rise_side(a, 0.16, 0.30, 0.02),
    "span_rise": lambda a: check_span_rise(a, 0.16, 0.30),
    "formula_holds": lambda a: check_formula_holds(a, _world(), SAT, 3, [2, 3]),
    "formula_difference": lambda a: check_formula_difference(a, _world(), SAT, 3, [2, 3]),
    "probe_holds": lambda a: check_probe_holds(a, *_probe_rows(30, 2), *_probe_rows(30, 1)),
    "probe_kl": lambda a: check_probe_kl(a, *_probe_rows(30, 2), *_probe_rows(30, 1)),
}


@pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
@pytest.mark.parametrize("answer", READER_ANSWERS, ids=repr)
def test_no_reader_answer_raises(check, answer):
    verdict = check(answer)
    assert isinstance(verdict, Verdict) and not verdict and str(verdict), verdict


def test_the_power_law_checker_names_the_exponent_it_is_given():
    from mlmlib.exercises import check_power_law_exponent
    beta = math.log(0.5 / 0.2) / math.log(4)
    verdict = check_power_law_exponent(beta, 1000, 4000, 2.6, 2.3, 2.1, symbol="beta")
    assert verdict and "beta = log(" in verdict.message
    wrong = check_power_law_exponent(1 / beta, 1000, 4000, 2.6, 2.3, 2.1, symbol="beta")
    assert not wrong and "1/beta" in wrong.message
    with pytest.raises(TypeError, match="symbol"):
        check_power_law_exponent(beta, 1000, 4000, 2.6, 2.3, 2.1, symbol="")


# ---------------------------------------------------------------------- the readers of the words

READERS = [0.005, 0.006, 0.004]  # a reader's KL on three draws of sentences


@pytest.mark.parametrize(("blocks", "right", "words"), [
    ([0.003, 0.004, 0.002], "yes", "wholly below 0"),  # the block closer by 0.002 on every pair
    ([0.009, 0.010, 0.008], "no", "the reader is"),  # the reader closer on every pair
    ([0.0045, 0.0065, 0.0035], "no", "holds 0"),  # either way by half a thousandth
])
def test_block_beats_reader_reads_the_interval(blocks, right, words):
    verdict = check_block_beats_reader(right, READERS, blocks)
    assert verdict and words in str(verdict)
    assert check_block_beats_reader(f" {right.upper()} ", READERS, blocks)
    wrong = {"yes": "no", "no": "yes"}[right]
    _fails_with(check_block_beats_reader(wrong, READERS, blocks), "The runs disagree", words)
    verdict = check_block_beats_reader("no", [0.010, 0.004], [0.003, 0.009])
    assert "-0.0010 on average over the 2 pairs, 95% interval -0.0772 to +0.0752" in str(verdict)


def test_block_beats_reader_names_the_transformer_mistake():
    _fails_with(check_block_beats_reader("yes", READERS, [0.0045, 0.0065, 0.0035]),
                "A transformer need not beat")
    _fails_with(check_block_beats_reader("no", READERS, [0.003, 0.004, 0.002]), "what could")
    _fails_with(check_block_beats_reader(None, [0.005, 0.004], [0.003, 0.002]),
                "Not answered yet")
    with pytest.raises(ValueError, match="block_kls"):
        check_block_beats_reader("no", [0.005], [])
    with pytest.raises(ValueError, match="reader_kls"):
        check_block_beats_reader("no", [-1.0, 0.1], [0.003, 0.1])
    with pytest.raises(ValueError, match="pair seed with seed"):
        check_block_beats_reader("no", [0.005, 0.004], [0.003])
    with pytest.raises(ValueError, match="two pairs at least"):
        check_block_beats_reader("no", [0.005], [0.003])
