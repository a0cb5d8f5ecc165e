"""mlmlib.exercises.training - the checkers of the training chapters (training 1-3).

Does: count the weights of a BERT masked-LM model and check a reader's count (training 1),
check a prediction, "higher" or "lower", against a measurement (training 2), and check the
perplexity that goes with a loss (training 3), and split a speed-up into its two effects (the
performance appendix).

Does not: train or measure anything - the chapters pass their measured numbers in - or check
the walkthrough's and the worked examples' exercises.
"""

from __future__ import annotations

import math

from mlmlib._checks import number, whole
from mlmlib.exercises._common import Verdict, _check_count, _check_number, _no, _yes


def bert_parameter_count(vocab_size: int, hidden_size: int, layers: int, intermediate: int,
                         max_position: int, type_vocab: int = 2) -> int:
    """The number of weights in a BERT masked-LM model (tied decoder, no pooler)."""
    for name, value in (("vocab_size", vocab_size), ("hidden_size", hidden_size),
                        ("layers", layers), ("intermediate", intermediate),
                        ("max_position", max_position), ("type_vocab", type_vocab)):
        whole(value, name, least=1)
    d, i = hidden_size, intermediate
    embeddings = (vocab_size + max_position + type_vocab) * d + 2 * d  # + LayerNorm
    block = (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (d * i + i) + (i * d + d) + 2 * d
    head = (d * d + d) + 2 * d + vocab_size  # dense, LayerNorm, the bias b_v
    return embeddings + layers * block + head


def check_parameter_count(answer, vocab_size: int, hidden_size: int, layers: int,
                          intermediate: int, max_position: int) -> Verdict:
    """Check a number: how many weights a BERT masked-LM model of this shape has."""
    expected = bert_parameter_count(vocab_size, hidden_size, layers, intermediate, max_position)
    d, i = hidden_size, intermediate
    biases = (layers * (3 * d + d + i + d) + d)
    mistakes = {
        vocab_size * d: "the decoder shares its weights with the word embeddings (tied): "
                        "count them once",
        -biases: "every dense layer has a bias as well as weights",
        -(max_position * d): "the position embeddings have max_position x hidden_size weights too",
        -layers * 4 * d: "each block has two LayerNorms, each with a weight and a bias per "
                         "dimension",
        -vocab_size: "the head adds one bias b_v per word",
    }
    return _check_count(answer, expected, mistakes, "weights")


def check_direction(answer, before: float, after: float, what: str = "the eval loss") -> Verdict:
    """Check a prediction, "higher" or "lower", against two measured values."""
    before, after = number(before, "before"), number(after, "after")
    if not isinstance(answer, str) or answer.strip().lower() not in ("higher", "lower"):
        return _no('Not answered yet: predict "higher" or "lower".')
    if after == before:
        return _no(f"The measurement is a tie: {what} came out the same, so no prediction can "
                   "be checked.")
    measured = "higher" if after > before else "lower"
    if answer.strip().lower() == measured:  # (no numbers here: they depend on the hardware)
        return _yes(f"Your prediction matches: {what} came out {measured}.")
    return _no(f"The measurement disagrees: {what} came out {measured}. Why might that be?")


def check_perplexity(answer, loss: float) -> Verdict:
    """Check a number: the perplexity that goes with a mean MLM loss (natural log)."""
    loss = number(loss, "loss", 0, 700)  # e**710 overflows a float
    expected = math.exp(loss)
    mistakes = {
        "that is 2 to the power of the loss; the loss uses the natural log, so take e to it":
            2.0**loss,
        "that is 10 to the power of the loss; the loss uses the natural log, so take e to it":
            10.0**loss if loss < 308 else math.inf,
        "that is the loss itself; the perplexity is e to the power of the loss": loss,
        "that is e to the power of minus the loss, a probability; the perplexity is e^loss":
            math.exp(-loss),
    }
    return _check_number(answer, expected, mistakes, "exp(loss)", tol=max(5e-3, 1e-4 * expected))


def check_excess_loss(answer, loss: float, floor: float) -> Verdict:
    """Check a number: how many nats a model's mean loss lies above the exact floor."""
    loss, floor = number(loss, "loss", 0), number(floor, "floor", 0, above=True)
    expected = loss - floor
    mistakes = {
        "that is the ratio loss / floor; the question asks for the difference in nats":
            loss / floor,
        "that is the gap as a fraction of the floor; the question asks for nats": expected / floor,
        "that is the gap in percent of the floor; the question asks for nats":
            100 * expected / floor,
        "the sign is flipped: the model's loss is above the floor, so the difference is "
        "positive": -expected,
    }
    return _check_number(answer, expected, mistakes, "eval loss - floor")


def check_speed_ratio(answer, flops_ratio: float, mfu_ratio: float) -> Verdict:
    """Check a number: the speed ratio that a FLOPs ratio and an MFU ratio give together.

    Tokens per second are FLOP/s divided by FLOPs per token, and FLOP/s is MFU times the roof,
    so speed_a / speed_b = (flops_b / flops_a) x (mfu_a / mfu_b): the two effects multiply.
    """
    flops_ratio = number(flops_ratio, "flops_ratio", 0, above=True)
    mfu_ratio = number(mfu_ratio, "mfu_ratio", 0, above=True)
    expected = flops_ratio * mfu_ratio
    mistakes = {
        "that adds the two ratios; each one multiplies the speed, so multiply them":
            flops_ratio + mfu_ratio,
        "that divides the FLOPs ratio by the MFU ratio; a higher MFU makes a step faster, so "
        "multiply": flops_ratio / mfu_ratio,
        "that divides the MFU ratio by the FLOPs ratio; fewer FLOPs make a step faster, so "
        "multiply": mfu_ratio / flops_ratio,
        "that is the FLOPs ratio alone; the speed per FLOP (the MFU ratio) counts too":
            flops_ratio,
        "that is the MFU ratio alone; doing fewer FLOPs (the FLOPs ratio) counts too": mfu_ratio,
    }
    # the ratios are printed to two decimals: their product may be off by 1% from rounding
    return _check_number(answer, expected, mistakes, "FLOPs ratio x MFU ratio",
                         tol=max(0.02, 0.01 * expected))
