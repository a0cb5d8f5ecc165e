"""mlmlib.exercises.worked - the checkers that first appear in the worked examples (A-H).

Does: check the share of chosen positions that end up unchanged (worked example B), the share
of the words a model reads that are tested (C), how often M comes out empty (D), the loss of an
untrained model from its scores' variance (E), the loss that scores two dependent slots
separately (F), the counts of the three branches and the random branch's conditional
probability (G), and the total loss, MLM plus NSP (H). The worked examples' other exercises
use the walkthrough's checkers (:mod:`mlmlib.exercises.walkthrough`).

Does not: check the walkthrough's exercises or the training chapters'
(:mod:`mlmlib.exercises.training`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mlmlib._checks import mapping, number, numbers, probability, whole
from mlmlib.exercises._common import (
    FOUR_DECIMALS,
    Verdict,
    _as_numbers,
    _check_number,
    _no,
    _yes,
)


def _shares(rate: float, mask_prob: float, random_prob: float) -> None:
    """The masking settings: three probabilities; the [MASK] and random shares add to 1 at most."""
    for name, p in (("rate", rate), ("mask_prob", mask_prob), ("random_prob", random_prob)):
        probability(p, name)
    if mask_prob + random_prob > 1 + 1e-12:
        raise ValueError(f"mask_prob + random_prob = {mask_prob + random_prob:g} is more than 1")


def check_unchanged_share(answer, pool: int, mask_prob: float = 0.8,
                          random_prob: float = 0.1) -> Verdict:
    """Check a number: the share of the chosen positions whose word is left as it was.

    The keep branch leaves ``1 - mask_prob - random_prob`` of them alone, and the random branch
    draws one of ``pool`` ordinary words, the original one time in ``pool``.

    >>> check_unchanged_share(0.105, pool=20)
    Correct: 0.1050 matches 0.1 + 0.1 / 20 = 0.1050.
    """
    pool = whole(pool, "pool", least=1)
    _shares(0.0, mask_prob, random_prob)
    keep, back = 1 - mask_prob - random_prob, random_prob / pool
    expected = keep + back
    mistakes = {
        "that is the keep branch alone; a random draw that picks the original word back leaves "
        "it unchanged too": keep,
        "that is only the random draws that pick the original word back; add the keep branch":
            back,
        "that is the share that shows a different word; the question asks for the unchanged "
        "ones": random_prob - back,
        "that is a percentage; give the share as a number between 0 and 1": 100 * expected,
        "that uses the chapter's 5 ordinary words; use the vocabulary of this question":
            keep + random_prob / 5,
    }
    if pool == 5:
        del mistakes["that uses the chapter's 5 ordinary words; use the vocabulary of this "
                     "question"]
    return _check_number(answer, expected, mistakes, f"{keep:g} + {random_prob:g} / {pool}")


def check_tested_share(answer, rate: float = 0.15, mask_prob: float = 0.8) -> Verdict:
    """Check a number: the share of the words a model *reads* (not ``[MASK]``) that are tested.

    Of all tokens, ``rate * mask_prob`` show ``[MASK]``; the rest show a word. Of those, the
    chosen ones that were not masked (the random and the unchanged branches, ``rate * (1 -
    mask_prob)`` of all tokens) are tested.

    >>> check_tested_share(0.0341)
    Correct: 0.0341 matches 0.15 * 0.2 / (1 - 0.15 * 0.8) = 0.0341.
    """
    _shares(rate, mask_prob, 0.0)
    if rate * mask_prob == 1:
        raise ValueError("rate * mask_prob is 1: every token shows [MASK], none shows a word")
    tested, shown = rate * (1 - mask_prob), 1 - rate * mask_prob
    expected = tested / shown
    mistakes = {
        "that is a share of all the tokens; divide by the share that shows a word (every token "
        "but the [MASK]s)": tested,
        "divide by the tokens that show a word: all but the [MASK]s, not all but the chosen ones":
            tested / (1 - rate) if rate < 1 else math.inf,
        "that counts the unchanged words only; a random word is read as a word and tested too":
            tested / 2 / shown,
        "that counts the unchanged words only, out of all the tokens": tested / 2,
        "that is the share of the chosen positions that show a word; the question asks what "
        "share of the words shown are chosen": 1 - mask_prob,
        "that is a percentage; give the share as a number between 0 and 1": 100 * expected,
    }
    return _check_number(answer, expected, mistakes,
                         f"{rate:g} * {1 - mask_prob:g} / (1 - {rate:g} * {mask_prob:g})")


def check_empty_probability(answer, n: int, rate: float = 0.15) -> Verdict:
    """Check a number: how often the Bernoulli rule leaves all ``n`` tokens unmasked."""
    n, rate = whole(n, "n", least=0), probability(rate, "rate")
    expected = (1 - rate) ** n
    mistakes = {
        "that is the chance that every token is masked, rate**n": rate**n,
        "that is the chance that at least one token is masked; M is empty with the rest":
            1 - expected,
        "probabilities of separate tokens multiply, they do not add: (1 - rate)**n":
            max(0.0, 1 - n * rate),
        "that is the chance for one token; all n must stay unmasked": 1 - rate,
    }
    return _check_number(answer, expected, mistakes, f"(1 - {rate:g})**{n}")


def check_fresh_loss(answer, vocab_size: int, variance: float) -> Verdict:
    """Check a number: an untrained model's mean loss, ``log |V| + variance / 2``.

    The rule of worked example E: small random scores of this variance lift the log of the
    softmax's denominator above ``log |V|`` by about half their variance, and the true word's
    score is 0 on average.

    >>> check_fresh_loss(10.8648, vocab_size=50_000, variance=0.09)
    Correct: 10.8648 matches log 50000 + 0.09 / 2 = 10.8648.
    """
    vocab_size = whole(vocab_size, "vocab_size", least=2)
    variance = number(variance, "variance", 0)
    base = math.log(vocab_size)
    expected = base + variance / 2
    mistakes = {
        "that is log |V| alone, the uniform guess; unequal scores lift it by about half their "
        "variance": base,
        "that adds the whole variance; the lift is about half of it": base + variance,
        "that adds half the spread (the standard deviation); the lift is half the variance, "
        "the spread squared": base + math.sqrt(variance) / 2,
        "the lift goes the other way: unequal scores raise the loss above log |V|":
            base - variance / 2,
        "that is log base 10; the course's log is the natural log": math.log10(vocab_size) +
        variance / 2,
    }
    if vocab_size != 30_000:
        mistakes["that uses the chapter's 30,000 words; use this question's vocabulary"] = \
            math.log(30_000) + variance / 2
    return _check_number(answer, expected, mistakes, f"log {vocab_size} + {variance:g} / 2")


def check_slotwise_loss(answer, pairs: dict, truth: tuple) -> Verdict:
    """Check a number: the MLM loss of two hidden words whose pair probabilities are ``pairs``.

    Each slot on its own gives a word the sum of the probabilities of the pairs it appears in;
    the MLM loss adds the two slots' ``-log``, which is more than ``-log P(pair)`` whenever the
    slots depend on each other.

    >>> pairs = {("new", "york"): 0.6, ("new", "delhi"): 0.2, ("los", "angeles"): 0.2}
    >>> check_slotwise_loss(0.734, pairs, truth=("new", "york"))
    Correct: 0.7340 matches -log P(new) - log P(york) = 0.7340.
    """
    pairs = mapping(pairs, "pairs", "(word, word): probability")
    for key in pairs:
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(w, str) for w in key)):
            raise TypeError(f"pairs' keys must be pairs of words like ('new', 'york'), got "
                            f"{key!r}")
    probs = numbers(list(pairs.values()), "pairs' probabilities", 0, 1, ndim=1)
    if not math.isclose(probs.sum(), 1, abs_tol=1e-9):
        raise ValueError(f"pairs' probabilities must add up to 1, got {probs.sum():g}")
    truth = tuple(truth) if isinstance(truth, list | tuple) else truth
    if truth not in pairs or pairs[truth] == 0:
        raise ValueError(f"truth must be one of the pairs, with a probability above 0, got "
                         f"{truth!r}")
    first = sum(p for (a, _), p in pairs.items() if a == truth[0])
    second = sum(p for (_, b), p in pairs.items() if b == truth[1])
    loss = -math.log(first) - math.log(second)
    joint = -math.log(pairs[truth])
    mistakes = {
        "that is -log P(pair), what a model of the pair pays; the MLM loss scores each slot on "
        "its own and adds the two -log P": joint,
        "that is the product of the slots' probabilities; the loss is -log of it":
            first * second,
        "that is the mean over the two slots; the course's loss sums them": loss / 2,
        "each slot gives a word the total of every pair it appears in, not the pair's own "
        "probability": 2 * joint,
        "that is log base 10; the course's log is the natural log": loss / math.log(10),
        "the sign is flipped: the loss is -log P, a number >= 0": -loss,
    }
    return _check_number(answer, loss, mistakes,
                         f"-log P({truth[0]}) - log P({truth[1]})")


def check_random_branch_probability(answer, mask_prob: float = 0.8,
                                    random_prob: float = 0.1) -> Verdict:
    """Check a number: the conditional probability of the random branch after the [MASK] draw.

    Hugging Face's collator first writes [MASK] with probability ``mask_prob``, then, among the
    positions left, draws the random word with a *conditional* probability.
    """
    _shares(0.0, mask_prob, random_prob)
    if mask_prob == 1:
        raise ValueError("mask_prob is 1: no position is left after the [MASK] draw")
    expected = random_prob / (1 - mask_prob)
    mistakes = {
        f"{random_prob:g} is the share of all targets; among the {1 - mask_prob:.0%} left "
        "after the [MASK] draw it must be larger": random_prob,
        "divide by the share that is left after the [MASK] draw, not by the [MASK] share":
            random_prob / mask_prob,
        "that is the share left after the [MASK] draw, not the random branch's part of it":
            1 - mask_prob,
    }
    return _check_number(answer, expected, mistakes, f"{random_prob:g} / (1 - {mask_prob:g})")


def check_branch_counts(answer, total_tokens: int, rate: float = 0.15, mask_prob: float = 0.8,
                        random_prob: float = 0.1) -> Verdict:
    """Check four numbers: (targets, [MASK], random, unchanged) for a corpus of this size."""
    whole(total_tokens, "total_tokens", least=0)
    _shares(rate, mask_prob, random_prob)
    targets = total_tokens * rate
    expected = [targets, targets * mask_prob, targets * random_prob,
                targets * (1 - mask_prob - random_prob)]
    names = ["targets", "[MASK]", "random", "unchanged"]
    values = _as_numbers(answer)  # None for text: "1234" is not four numbers, "150" not one
    if values is None or values.ndim != 1:
        return _no("Not answered yet: expected four numbers (targets, [MASK], random, "
                   "unchanged).")
    if len(values) != 4:
        return _no(f"Not yet: expected four numbers, got {len(values)}.")
    values = values.tolist()
    if not all(math.isfinite(v) for v in values):
        return _no(f"Not yet: expected four finite numbers, got {values}.")
    for name, value, want in zip(names, values, expected, strict=True):
        if math.isclose(value, want, rel_tol=1e-6, abs_tol=0.5):
            continue
        if name == "targets" and math.isclose(value, total_tokens * mask_prob, rel_tol=1e-6):
            return _no("Not yet: targets - the 80% applies to the chosen 15%, not to every "
                       "token.")
        if name != "targets" and math.isclose(value, total_tokens * want / targets,
                                              rel_tol=1e-6):
            return _no(f"Not yet: {name} - take the share of the targets ({targets:,.0f}), "
                       "not of every token.")
        if sum(values[1:]) != values[0]:
            return _no(f"Not yet: {name} is {value:,.0f}; note the three branches must add up "
                       f"to the targets ({values[0]:,.0f}).")
        return _no(f"Not yet: {name} is {value:,.0f}, not {want:,.0f}.")
    shown = ", ".join(f"{n} {v:,.0f}" for n, v in zip(names, values, strict=True))
    return _yes(f"Correct: {shown}.")


def check_total_loss(answer, slot_probs: Sequence[float], nsp_prob: float) -> Verdict:
    """Check a number: the total BERT loss, MLM summed over the slots plus NSP."""
    # -log 0 is infinite: every probability above 0
    slot_probs = numbers(slot_probs, "slot_probs", 0, 1, above=True, ndim=1, empty=False).tolist()
    nsp_prob = probability(nsp_prob, "nsp_prob", above=True)
    mlm = sum(-math.log(p) for p in slot_probs)
    nsp = -math.log(nsp_prob)
    mistakes = {
        "that is the MLM part alone; add the NSP loss": mlm,
        "that is the NSP part alone; add the MLM loss": nsp,
        "that averages the masked slots; the course's MLM loss sums them":
            mlm / len(slot_probs) + nsp,
        "that is log base 10; the course's log is the natural log": (mlm + nsp) / math.log(10),
        "the sign is flipped: each part is -log p, a number >= 0": -(mlm + nsp),
    }
    # a reader may add parts already rounded to 4 decimals: allow one rounding step per part
    terms = len(slot_probs) + 1
    return _check_number(answer, mlm + nsp, mistakes, "MLM + NSP", tol=FOUR_DECIMALS * terms)
