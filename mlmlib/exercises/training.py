"""mlmlib.exercises.training - the checkers of the training chapters (training 1-3).

Does: count the weights of a BERT masked-LM model and check a reader's count (training 1),
check the exact floor of one sentence of the toy world, computed from its posterior
(training 2), and a model's loss above the floor, check a prediction, "higher" or "lower",
against a measurement, and the perplexity that goes with a loss (training 3), and split a
speed-up into its two effects (the performance appendix).

Does not: train or measure anything - the chapters pass their measured numbers (or the toy
world) in - or check the walkthrough's and the worked examples' exercises.

>>> check_parameter_count(109514298, vocab_size=30522, hidden_size=768, layers=12,
...                       intermediate=3072, max_position=512)
Correct: 109,514,298 weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mlmlib._checks import number, whole
from mlmlib.exercises._common import (
    Verdict,
    _as_number,
    _check_count,
    _check_number,
    _no,
    _yes,
)


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
    """Check a number: how many weights a BERT masked-LM model of this shape has (two segments,
    a tied decoder, no pooler).

    The usual mistakes are named: the decoder counted apart from the word embeddings, the
    biases, the position embeddings, the LayerNorms or the head's per-word bias left out, the
    segment embeddings (or the embeddings' LayerNorm) forgotten, each block's attention output
    projection or the whole head forgotten, the pooler counted, one block counted instead of
    ``layers``. An answer within 1% that is none of these is told that a count is exact (the
    published sizes, "110 million", are rounded).
    """
    expected = bert_parameter_count(vocab_size, hidden_size, layers, intermediate, max_position)
    d, i = hidden_size, intermediate
    biases = (layers * (3 * d + d + i + d) + d)
    block = 4 * (d * d + d) + (d * i + i) + (i * d + d) + 2 * (2 * d)  # one encoder block
    mistakes = {
        vocab_size * d: "the decoder shares its weights with the word embeddings (tied): "
                        "count them once",
        -biases: "every dense layer has a bias as well as weights",
        -(max_position * d): "the position embeddings have max_position x hidden_size weights too",
        -layers * 4 * d: "each block has two LayerNorms, each with a weight and a bias per "
                         "dimension",
        -vocab_size: "the head adds one bias b_v per word",
        -2 * d: "2 x hidden_size short: the two segment embeddings (sentence A and B), or the "
                "embeddings' LayerNorm (a weight and a bias per dimension)",
        -layers * (d * d + d): "each block's attention ends with an output projection, "
                               "hidden_size x hidden_size weights and a bias, after the query, "
                               "key and value",
        -((d * d + d) + 2 * d + vocab_size): "the masked-LM head has weights of its own: a dense "
                                             "layer, a LayerNorm and one bias per word",
        d * d + d: "that counts the pooler (the dense layer on [CLS] for next-sentence "
                   "prediction); a masked-LM model without NSP has none",
        -(layers - 1) * block: f"that counts one encoder block; there are {layers}",
    }
    verdict = _check_count(answer, expected, mistakes, "weights")
    value = _as_number(answer)
    if not verdict and value is not None and " is not " in verdict.message \
            and abs(value - expected) <= 0.01 * expected:
        return _no(f"Not yet: {value:,.0f} is within 1% but not exact: a count of weights is "
                   "exact (published sizes such as '110 million' are rounded); recount each "
                   "part.")
    return verdict


def check_sentence_floor(answer, world, words: Sequence[str],
                         masked: Sequence[int]) -> Verdict:
    """Check a number: the exact floor of one sentence of the toy world with its blanks hidden.

    That is the mean, over the blanks, of ``-log P(true word | the visible words)`` in nats,
    with every blank hidden at once (``world.posterior(words, masked)``): what a perfect reader
    pays on this sentence, on average per masked word. The usual mistakes are named: the sum
    over the blanks instead of the mean, log base 10 or 2, the probabilities themselves, the
    sign, one blank alone, and each blank scored with the other blanks visible.
    """
    if not (callable(getattr(world, "posterior", None)) and hasattr(world, "word_id")):
        raise TypeError(f"world must be a ToyWorld, got {type(world).__name__}")
    post = world.posterior(words, masked)  # checks the sentence and the positions (raises)
    words, masked = list(words), list(masked)
    if not masked:
        raise ValueError("masked hides no position: the floor is a mean over the blanks, "
                         "undefined over none")
    probs = [float(post[k, world.word_id[words[i]]]) for k, i in enumerate(masked)]
    for i, p in zip(masked, probs, strict=True):
        if p == 0:
            raise ValueError(f"words[{i}] = {words[i]!r} cannot stand there: the toy world "
                             "gives it probability 0, so its -log P is infinite")
    losses = [-math.log(p) for p in probs]
    n = len(losses)
    expected = sum(losses) / n
    mistakes = {
        "that is log base 10; the course's log is the natural log": expected / math.log(10),
        "that is log base 2; the course's log is the natural log": expected / math.log(2),
        "the sign is flipped: a loss is -log P, positive": -expected,
        "that is the mean probability of the true words; the loss takes -log of each":
            sum(probs) / n,
    }
    if n > 1:
        mistakes["that is the sum over the blanks; the floor is the mean per masked word"] = \
            sum(losses)
        mistakes["that is the product of the probabilities; take -log of each and average"] = \
            math.prod(probs)
        alone = [-math.log(float(world.posterior(words, [i])[0, world.word_id[words[i]]]))
                 for i in masked]
        mistakes["that scores each blank with the other blanks visible; the reader sees none "
                 "of the hidden words (hide them all at once)"] = sum(alone) / n
        for i, loss in zip(masked, losses, strict=True):
            mistakes.setdefault(f"that is the blank at position {i} ({words[i]!r}) alone; "
                                "average over every blank", loss)
    return _check_number(answer, expected, mistakes, "the mean -log P over the blanks")


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
        "that is e to the loss rounded to two decimals, as printed; use the unrounded loss":
            math.exp(round(loss, 2)),
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
