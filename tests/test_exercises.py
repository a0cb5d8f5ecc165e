"""The checkers accept the reference solutions and name each usual mistake; they never raise."""

import math

import numpy as np
import pytest
import torch

from mlmlib.exercises import check_loss_value, check_slot_loss, check_softmax


def reference_slot_loss(scores, target):
    s = np.asarray(scores, dtype=float)
    z = s - s.max()
    return -(z[target] - np.log(np.exp(z).sum()))


def reference_softmax(scores):
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - s.max())
    return e / e.sum()


def naive_slot_loss(scores, target):  # no max-subtraction: overflows at 1000
    e = np.exp(np.asarray(scores, dtype=float))
    return -np.log(e[target] / e.sum())


def test_references_pass():
    verdicts = [
        check_slot_loss(reference_slot_loss),
        check_slot_loss(lambda s, t: torch.nn.functional.cross_entropy(
            torch.tensor([s]), torch.tensor([t]))),
        check_softmax(reference_softmax),
        check_loss_value(0.6265, scores=[1, 2, 0, 1], target=1),
        check_loss_value(np.float32(0.62652), scores=[1, 2, 0, 1], target=1),
    ]
    for v in verdicts:
        assert v and v.passed and repr(v).startswith("Correct"), v


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda s, t: -reference_slot_loss(s, t), "sign is flipped"),
        (lambda s, t: reference_slot_loss(s, t) / math.log(10), "log base 10"),
        (lambda s, t: reference_slot_loss(s, t) / math.log(2), "log base 2"),
        (lambda s, t: math.exp(-reference_slot_loss(s, t)), "probability P itself"),
        (lambda s, t: sum(reference_slot_loss(s, v) for v in range(len(s))), "every word"),
        (lambda s, t: reference_slot_loss(s, int(np.argmax(s))), "highest-scoring word"),
        (naive_slot_loss, "Subtract the largest score"),
        (lambda s, t: None, "Not answered yet: <lambda> returns None"),
        (lambda s, t: "0.6", "expected one number"),
        (lambda s, t: [1.0, 2.0], "expected one number"),
        (lambda s, t: 1 / 0, "raised ZeroDivisionError"),
        (lambda s: 0.5, "raised TypeError"),
        (lambda s, t: 0.1234, "is not"),
    ],
)
def test_slot_loss_mistakes_are_named(wrong, hint):
    verdict = check_slot_loss(wrong)
    assert not verdict
    assert hint in str(verdict) and "Correct" not in str(verdict)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda s: np.exp(np.asarray(s, dtype=float)) / np.exp(np.asarray(s, dtype=float)).sum(),
         "Subtract the largest score"),
        (lambda s: np.exp(np.asarray(s, dtype=float)), "divide by their total Z"),
        (lambda s: reference_softmax(s)[:-1], "expected"),
        (lambda s: reference_softmax(s) * 2, "sum to 2.0000"),
        (lambda s: None, "Not answered yet: <lambda> returns None"),
        (lambda s: {"a": 1}, "expected"),
    ],
)
def test_softmax_mistakes_are_named(wrong, hint):
    verdict = check_softmax(wrong)
    assert not verdict
    assert hint in str(verdict)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (-0.6265, "sign is flipped"),
        (0.2721, "log base 10"),
        (0.5344, "probability P itself"),
        (0.7, "is not 0.6265"),
        (None, "Not answered yet"),
        ("0.6265", "Not answered yet"),
        ([0.6, 0.7], "Not answered yet"),
        (True, "Not answered yet"),
    ],
)
def test_loss_value_mistakes(answer, hint):
    verdict = check_loss_value(answer, scores=[1, 2, 0, 1], target=1)
    assert not verdict
    assert hint in str(verdict)


def test_checkers_never_raise_on_junk():
    for junk in [None, 3, "f", object(), [1, 2]]:
        assert not check_slot_loss(junk)
        assert not check_softmax(junk)
        assert not check_loss_value(junk, scores=[1, 2], target=0)


# ----------------------------------------------------------------------------- worked examples D-H

from mlmlib.constants import IGNORE_INDEX  # noqa: E402
from mlmlib.exercises import (  # noqa: E402
    check_branch_counts,
    check_empty_probability,
    check_mlm_loss,
    check_random_branch_probability,
    check_total_loss,
)


def reference_mlm_loss(logits, labels):
    total = 0.0
    for row, label in zip(logits, labels, strict=True):
        if label != IGNORE_INDEX:
            total += reference_slot_loss(row, label)
    return total


def test_numeric_checkers_accept_the_answers():
    assert check_empty_probability(0.5220, n=4, rate=0.15)
    assert check_random_branch_probability(0.5)
    assert check_branch_counts((300e6, 240e6, 30e6, 30e6), total_tokens=2_000_000_000)
    assert check_total_loss(2.5257 + 0.5108, slot_probs=[0.4, 0.2], nsp_prob=0.6)
    assert check_mlm_loss(reference_mlm_loss)
    assert check_mlm_loss(lambda lg, lb: torch.nn.functional.cross_entropy(
        torch.tensor(lg), torch.tensor(lb), reduction="sum"))


@pytest.mark.parametrize(
    ("verdict", "hint"),
    [
        (lambda: check_empty_probability(0.15**4, n=4), "every token is masked"),
        (lambda: check_empty_probability(1 - 0.85**4, n=4), "at least one"),
        (lambda: check_empty_probability(0.4, n=4), "multiply"),
        (lambda: check_empty_probability(0.85, n=4), "for one token"),
        (lambda: check_random_branch_probability(0.1), "among the 20% left"),
        (lambda: check_random_branch_probability(0.125), "not by the [MASK] share"),
        (lambda: check_random_branch_probability(0.2), "not the random branch"),
        (lambda: check_branch_counts((1.6e9, 240e6, 30e6, 30e6), 2_000_000_000), "chosen 15%"),
        (lambda: check_branch_counts((300e6, 1.6e9, 30e6, 30e6), 2_000_000_000),
         "share of the targets"),
        (lambda: check_branch_counts((300e6, 240e6, 6e6, 54e6), 2_000_000_000), "random is"),
        (lambda: check_branch_counts((300e6, 240e6, 30e6), 2_000_000_000), "four numbers"),
        (lambda: check_branch_counts(None, 2_000_000_000), "Not answered yet"),
        (lambda: check_total_loss(2.5257, [0.4, 0.2], 0.6), "MLM part alone"),
        (lambda: check_total_loss(1.2629 + 0.5108, [0.4, 0.2], 0.6), "averages"),
        (lambda: check_total_loss(3.0365 / math.log(10), [0.4, 0.2], 0.6), "base 10"),
        (lambda: check_mlm_loss(lambda lg, lb: -reference_mlm_loss(lg, lb)), "sign is flipped"),
        (lambda: check_mlm_loss(lambda lg, lb: sum(
            reference_slot_loss(r, max(t, 0)) for r, t in zip(lg, lb, strict=True))),
         "every position"),
        (lambda: check_mlm_loss(lambda lg, lb: torch.nn.functional.cross_entropy(
            torch.tensor(lg), torch.tensor(lb)).item()), "mean over M"),
        (lambda: check_mlm_loss(lambda lg, lb: reference_mlm_loss(lg, lb) / max(
            1, sum(t != IGNORE_INDEX for t in lb))), "mean over M"),
        (lambda: check_mlm_loss(lambda lg, lb: sum(
            naive_slot_loss(r, t) for r, t in zip(lg, lb, strict=True) if t != IGNORE_INDEX)),
         "largest score"),
        (lambda: check_mlm_loss(None), "Not answered yet"),
    ],
)
def test_numeric_and_loss_mistakes_are_named(verdict, hint):
    v = verdict()
    assert not v, v
    assert hint in str(v), v


# ----------------------------------------------------------------------------- walkthrough

from mlmlib.exercises import (  # noqa: E402
    check_empty_loss,
    check_hide,
    check_labels,
    check_missing_probability,
)


def reference_hide(tokens, positions):
    return ["[MASK]" if i in positions else t for i, t in enumerate(tokens)]


def reference_labels(ids, positions):
    return [t if k in positions else IGNORE_INDEX for k, t in enumerate(ids)]


def mutating_hide(tokens, positions):
    for p in positions:
        tokens[p] = "[MASK]"
    return tokens


def test_walkthrough_checkers_accept_the_references():
    assert check_hide(reference_hide)
    assert check_labels(reference_labels)
    assert check_missing_probability(0.4, [0.1, 0.2, 0.3])
    assert check_empty_loss(0)
    assert check_empty_loss(torch.tensor(0.0))


@pytest.mark.parametrize(
    ("verdict", "hint"),
    [
        (lambda: check_hide(mutating_hide), "changed the caller's list"),
        (lambda: check_hide(lambda t, ps: ["[MASK]" if i - 1 in ps else w
                                           for i, w in enumerate(t)]), "from 0"),
        (lambda: check_hide(lambda t, ps: ["[MASK]" if any(w == t[p] for p in ps) else w
                                           for w in t]), "every copy"),
        (lambda: check_hide(lambda t, ps: "the [MASK]"), "expected a list"),
        (lambda: check_hide(lambda t, ps: t[::-1]), "expected"),
        (lambda: check_labels(lambda ids, ps: [IGNORE_INDEX if k in ps else t
                                               for k, t in enumerate(ids)]), "swapped"),
        (lambda: check_labels(lambda ids, ps: [t if k in ps else 0 for k, t in enumerate(ids)]),
         "0 is a real token id"),
        (lambda: check_labels(lambda ids, ps: None), "Not answered yet"),
        (lambda: check_missing_probability(0.9, [0.1, 0.2, 0.3]), "subtract *all*"),
        (lambda: check_missing_probability(0.6, [0.1, 0.2, 0.3]), "what is left"),
        (lambda: check_empty_loss(float("nan")), "PyTorch's *mean*"),
        (lambda: check_empty_loss(10.309), "log |V|"),
        (lambda: check_empty_loss(None), "Not answered yet"),
    ],
)
def test_walkthrough_mistakes_are_named(verdict, hint):
    v = verdict()
    assert not v, v
    assert hint in str(v), v


def test_parameter_count_checker_agrees_with_the_model_and_names_mistakes():
    from mlmlib.exercises import bert_parameter_count, check_parameter_count
    from mlmlib.model import BertConfig, MiniBert

    shape = {"vocab_size": 200, "hidden_size": 64, "layers": 2, "intermediate": 256,
             "max_position": 32}
    model = MiniBert(BertConfig(vocab_size=200, hidden_size=64, num_layers=2, num_heads=4,
                                intermediate_size=256, max_position=32))
    assert bert_parameter_count(**shape) == model.num_parameters()
    n = model.num_parameters()
    assert check_parameter_count(n, **shape)
    assert "tied" in str(check_parameter_count(n + 200 * 64, **shape))
    assert "position embeddings" in str(check_parameter_count(n - 32 * 64, **shape))
    assert "one bias b_v" in str(check_parameter_count(n - 200, **shape))
    assert "Not answered" in str(check_parameter_count(None, **shape))


def test_check_direction():
    from mlmlib.exercises import check_direction

    assert check_direction("higher", 1.0, 2.0)
    assert check_direction(" Lower ", 2.0, 1.0)
    assert "disagrees" in str(check_direction("lower", 1.0, 2.0))
    assert "Not answered" in str(check_direction(None, 1.0, 2.0))
    assert "Not answered" in str(check_direction("up", 1.0, 2.0))


def test_check_perplexity():
    from mlmlib.exercises import check_perplexity

    assert check_perplexity(math.exp(2.0), 2.0)
    assert check_perplexity(7.39, 2.0)
    assert "2 to the power" in str(check_perplexity(4.0, 2.0))
    assert "10 to the power" in str(check_perplexity(100.0, 2.0))
    assert "the loss itself" in str(check_perplexity(2.0, 2.0))
    assert "minus the loss" in str(check_perplexity(math.exp(-2.0), 2.0))


def test_check_speed_ratio():
    from mlmlib.exercises import check_speed_ratio

    assert check_speed_ratio(1.49 * 1.02, 1.49, 1.02)
    assert check_speed_ratio(1.52, 1.49, 1.02)  # two decimals are enough
    assert check_speed_ratio(1.49 * 1.34, 1.4939, 1.2 * 1.1234)  # from rounded ratios
    assert not check_speed_ratio(1.95, 1.4939, 1.2 * 1.1234)
    assert "adds" in str(check_speed_ratio(2.51, 1.49, 1.02))
    assert "divides the FLOPs" in str(check_speed_ratio(1.49 / 1.02, 1.49, 1.02))
    assert "divides the MFU" in str(check_speed_ratio(1.02 / 1.49, 1.49, 1.02))
    assert "FLOPs ratio alone" in str(check_speed_ratio(1.49, 1.49, 1.02))
    assert "MFU ratio alone" in str(check_speed_ratio(1.02, 1.49, 1.02))
    assert "Not answered" in str(check_speed_ratio(None, 1.49, 1.02))


def test_check_excess_loss():
    from mlmlib.exercises import check_excess_loss

    assert check_excess_loss(0.0747, 2.2032, 2.1285)
    assert "ratio" in str(check_excess_loss(2.2032 / 2.1285, 2.2032, 2.1285))
    assert "fraction" in str(check_excess_loss(0.0747 / 2.1285, 2.2032, 2.1285))
    assert "percent" in str(check_excess_loss(100 * 0.0747 / 2.1285, 2.2032, 2.1285))
    assert "sign" in str(check_excess_loss(-0.0747, 2.2032, 2.1285))
    assert "Not answered" in str(check_excess_loss("0.07", 2.2032, 2.1285))


def test_check_direction_over_seeds():
    from mlmlib.exercises import check_direction_over_seeds

    assert check_direction_over_seeds("lower", [2.2, 2.3], [2.1, 2.2])
    assert "every one of 2 seeds" in str(check_direction_over_seeds("higher", [2.2, 2.3],
                                                                      [2.1, 2.2]))
    mixed = check_direction_over_seeds("lower", [2.2, 2.3, 2.0], [2.1, 2.2, 2.1])
    assert not mixed and "higher on 1 of 3 seeds" in str(mixed)
    assert "Not answered" in str(check_direction_over_seeds(None, [1.0], [2.0]))
    with pytest.raises(ValueError, match="one value per seed"):
        check_direction_over_seeds("lower", [1.0, 2.0], [1.0])


def test_check_pointwise_information():
    from mlmlib.exercises import check_pointwise_information

    right = math.log(0.2) - math.log(0.25) - math.log(0.4)
    assert check_pointwise_information(right, 0.2, 0.25, 0.4)
    assert "sign" in str(check_pointwise_information(-right, 0.2, 0.25, 0.4))
    assert "base 2" in str(check_pointwise_information(right / math.log(2), 0.2, 0.25, 0.4))
    assert "ratio" in str(check_pointwise_information(0.2 / 0.1, 0.2, 0.25, 0.4))
    assert "log P(b) too" in str(check_pointwise_information(math.log(0.2 / 0.25), 0.2, 0.25,
                                                              0.4))
    with pytest.raises(ValueError, match=r"p_a \(a probability\) must be a number in \(0, 1\]"):
        check_pointwise_information(1.0, 0.2, 0.0, 0.4)


# ------------------------------------------------------------------ answers of the wrong kind
# Text that NumPy would read as a number, floats where ids are expected, arrays where tokens
# are: each gets a "Not yet" or "Not answered yet" verdict, never "Correct" and never an error.

from mlmlib.loss import slot_loss, softmax  # noqa: E402


@pytest.mark.parametrize(
    ("verdict", "hint"),
    [
        (lambda: check_labels(lambda ids, ps: [i + 0.5 if k in ps else -100.4
                                               for k, i in enumerate(ids)]), "whole numbers"),
        (lambda: check_labels(lambda ids, ps: [str(i) for i in reference_labels(ids, ps)]),
         "got text; ids are whole numbers"),
        (lambda: check_labels(lambda ids, ps: [float("inf")] * len(ids)), "whole numbers"),
        (lambda: check_labels(lambda ids, ps: [True] * len(ids)), "whole numbers"),
        (lambda: check_labels(lambda ids, ps: torch.tensor(5)), "expected a list of ids"),
        (lambda: check_labels(lambda ids, ps: None), "Not answered yet: <lambda> returns None"),
        (lambda: check_softmax(lambda s: [str(x) for x in softmax(s)]), "got text"),
        (lambda: check_slot_loss(lambda s, t: [str(slot_loss(s, t))]), "returned text"),
        (lambda: check_mlm_loss(lambda lg, lb: "0.0"), "returned text"),
        (lambda: check_empty_loss(["0"]), "Not answered yet"),
        (lambda: check_empty_loss(np.array(["0.0"])), "Not answered yet"),
        (lambda: check_empty_loss("0"), "Not answered yet"),
        (lambda: check_loss_value(["0.6265"], [1, 2, 0, 1], 1), "Not answered yet"),
        (lambda: check_loss_value([True], [1, 2, 0, 1], 1), "Not answered yet"),
        (lambda: check_branch_counts(["150", "120", "15", "15"], 1000), "Not answered yet"),
        (lambda: check_branch_counts("1234", 1000), "Not answered yet"),
        (lambda: check_branch_counts([[150, 120], [15, 15]], 1000), "Not answered yet"),
        (lambda: check_hide(lambda t, ps: [np.array([1, 2])] * len(t)), "other than text"),
        (lambda: check_hide(lambda t, ps: [None] * len(t)), "other than text"),
    ],
)
def test_answers_of_the_wrong_kind_are_not_correct(verdict, hint):
    v = verdict()
    assert not v, v
    assert hint in str(v), v


def test_numbers_of_every_honest_kind_are_still_read():
    from fractions import Fraction

    assert check_labels(lambda ids, ps: torch.tensor(reference_labels(ids, ps)))
    assert check_labels(lambda ids, ps: np.array(reference_labels(ids, ps), dtype=np.int32))
    assert check_labels(lambda ids, ps: tuple(reference_labels(ids, ps)))
    assert check_softmax(lambda s: torch.tensor(softmax(s)))
    assert check_empty_loss(Fraction(0)) and check_empty_loss(np.array([0.0]))
    assert check_loss_value(np.float32(0.6265), [1, 2, 0, 1], 1)
    assert check_branch_counts((150, 120, 15, 15), 1000)
    assert check_branch_counts(np.array([150.0, 120.0, 15.0, 15.0]), 1000)
    assert check_branch_counts(torch.tensor([150, 120, 15, 15]), 1000)
    assert check_hide(lambda t, ps: tuple(reference_hide(t, ps)))


def test_undoing_the_log_names_the_usual_mistakes():
    from mlmlib.exercises import check_probability_from_loss as check

    assert check(math.exp(-1.5), loss=1.5)
    for wrong, hint in [(10 ** -1.5, "natural one"), (math.exp(1.5), "minus sign"),
                        (1 / 1.5, "1 / loss"), (1 - 1.5, "1 - loss")]:
        verdict = check(wrong, loss=1.5)
        assert not verdict and hint in str(verdict), (wrong, verdict)
    assert "Not answered yet" in str(check(None, loss=1.5))
    assert not check(0.5, loss=1.5) and "is not 0.2231" in str(check(0.5, loss=1.5))
    with pytest.raises(ValueError, match="loss"):
        check(0.5, loss=-1)


def test_the_loss_of_a_product_names_the_usual_mistakes():
    from mlmlib.exercises import check_loss_from_product as check

    assert check(-math.log(0.001), product=0.001)
    for wrong, hint in [(3.0, "log10"), (math.log(0.001), "minus sign"),
                        (0.001, "product itself"), (0.999, "1 minus")]:
        verdict = check(wrong, product=0.001)
        assert not verdict and hint in str(verdict), (wrong, verdict)
    assert "Not answered yet" in str(check("6.9", product=0.001))
    with pytest.raises(ValueError, match="product"):
        check(1.0, product=0)


def test_a_function_left_as_its_template_is_not_answered_yet():
    from mlmlib.exercises import check_attention_weights, check_hide, check_softmax

    def my_function(*args):
        # your code here
        return None

    for check in (check_hide, check_softmax, check_attention_weights):
        assert str(check(my_function)).startswith("Not answered yet: my_function returns None")
    half = iter([["[MASK]", "cat", "sat", "on", "the", "mat"]])  # right once, then None
    verdict = check_hide(lambda tokens, positions: next(half, None))
    assert not verdict and not str(verdict).startswith("Not answered yet")
