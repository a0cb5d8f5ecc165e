"""mlmlib.exercises.knows - checkers for what the model knows (training_5_what_it_knows) and
for spans and scaling (training_6_spans_scaling): probes, memorisation, spans and a power law.

Does: check which layer first carries the world's hidden state at a blank, read off a linear
probe's KL from the exact posterior at each layer over seeds; a prediction that a loss ends
below or above its exact floor (below is memorisation: the masks it trained on); a prediction
that masking spans raises or lowers the floor, against the measurement's standard error; and
a power law's exponent computed by hand from two sizes and the floor, and what a limit other
than the floor does to it; and the share of a
fresh mask's blanks that lie in a mask identical to one of a few fixed masks, computed
exactly from the sentences' lengths and the masking rate. A word answer is read
case- and space-insensitively; when the seeds disagree, or the measurement cannot tell, the
verdict says so and checks nothing. A wrong answer names the usual mistake it looks like and
asks a question back.

Does not: run a probe or train anything (the chapter passes in what it measured), or fit a
power law to more than two sizes.

>>> check_span_effect("raises", token_floor=1.20, span_floor=1.35, standard_error=0.01)
Your prediction matches: spans raise the floor, from 1.2000 to 1.3500 nats.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from mlmlib._checks import kind, mapping, number, numbers, whole
from mlmlib.exercises._common import Verdict, _check_number, _no, _yes

NO_LAYER = "none"  # the answer when no layer's probe gets below the threshold


def _word(answer) -> str | None:
    """The reader's word, lower case, spaces, hyphens and underscores made one "_", outer
    quotes and full stops dropped; None when the answer is not a non-empty string."""
    if not isinstance(answer, str):
        return None
    word = re.sub(r"[\s_-]+", "_", answer.strip().strip("'\".").strip().lower())
    return word or None


def _higher_or_lower(answer, value: float, reference: float, said: str, hint: str) -> Verdict:
    """The verdict on a prediction, "higher" or "lower", that ``value`` is above or below
    ``reference``; ``said`` states the measured comparison, with ``{side}`` for its side, and
    ``hint`` asks the reader a question back when the prediction is wrong."""
    word = _word(answer)
    if word not in ("higher", "lower"):
        return _no('Not answered yet: predict "higher" or "lower".')
    if value == reference:
        return _no(f"The two are equal ({value:.4f}): no prediction can be checked.")
    side = "higher" if value > reference else "lower"
    if word == side:
        return _yes(f"Your prediction matches: {said.format(side=side)}.")
    return _no(f"The numbers disagree: {said.format(side=side)}. {hint}")


def _on_seeds(n: int) -> str:
    return f"on every one of {n} seeds" if n > 1 else "on its one seed"


def _by(gaps) -> str:
    lo, hi = min(gaps), max(gaps)
    return f"by {lo:.4f} nats" if f"{lo:.4f}" == f"{hi:.4f}" else f"by {lo:.4f} to {hi:.4f} nats"


def check_first_layer(answer, kl: dict[str, Sequence[float]],
                      threshold: float = 0.1) -> Verdict:
    """Check which layer first carries the hidden state at a blank.

    ``kl`` maps each layer's name, in the model's order ("embeddings", "block_1",
    "head_transform"), to its probe's KL (nats) from the exact posterior, one per seed. The
    measured answer is the first layer whose KL is below ``threshold`` on every seed; when the
    first layer below it on some seed is not below on all of them, the seeds disagree and no
    answer is checked. When no layer gets below it, the right answer is "none".
    """
    kl = mapping(kl, "kl", "(layer name, KLs per seed)")
    layers = {}
    for name, values in kl.items():
        kind(name, "each layer name in kl", str)
        layers[name] = numbers(values, f"kl[{name!r}]", -1e-9, above=True, ndim=1, empty=False)
    counts = {name: len(v) for name, v in layers.items()}
    if len(set(counts.values())) > 1:
        raise ValueError(f"kl needs the same number of seeds for every layer, got {counts}")
    threshold = number(threshold, "threshold", 0, above=True)
    names = {_word(name): name for name in layers}
    listed = ", ".join(layers) + f" (or {NO_LAYER})"
    word = _word(answer)
    if word is None:
        return _no(f"Not answered yet: name one layer: {listed}.")
    if word not in names and word != NO_LAYER:
        return _no(f"Not yet: {answer.strip()!r} is not one of the layers: {listed}.")
    n, shown = next(iter(counts.values())), f"{threshold:g} nats"
    below = {name: int((v < threshold).sum()) for name, v in layers.items()}
    first = next((name for name in layers if below[name]), None)
    if first is not None and below[first] < n:
        return _no(f"The seeds disagree: at {first} the probe gets below {shown} on "
                   f"{below[first]} of {n} seeds, so this experiment cannot settle it; no answer "
                   "can be checked.")
    got = names.get(word)
    if first is None:
        if got is None:
            return _yes(f"Your answer matches: no layer's probe gets below {shown} on any of "
                        f"{n} seeds.")
        return _no(f"Not yet: the probe at {got} never gets below {shown}; its KL is about "
                   f"{layers[got].mean():.3f} nats. Does any layer get below it?")
    if got == first:
        return _yes(f"Your answer matches: {first} is the first layer whose probe gets below "
                    f"{shown} {_on_seeds(n)} (KL at most {layers[first].max():.3f} nats).")
    if got is None:
        return _no(f"Not yet: one layer's probe gets below {shown} {_on_seeds(n)}. Which "
                   "comes first?")
    order = list(layers)
    if order.index(got) > order.index(first):
        return _no(f"Not yet: the hidden state is already readable at {first} (KL below "
                   f"{shown} {_on_seeds(n)}). What does {got} add?")
    mean = f"about {layers[got].mean():.3f} nats" + (f" (the mean over {n} seeds)" if n > 1
                                                      else "")
    if word == "embeddings":
        return _no("Not yet: at a blank the embeddings hold the [MASK] vector, the same for "
                   "every blank at that position, so they cannot know the words around it; the "
                   f"probe's KL there is {mean}. Where do the visible words first reach it?")
    return _no(f"Not yet: at {got} the probe stays above {shown} on some seed; its KL is "
               f"{mean}. Where does it first get below?")


def check_floor_side(answer, losses, floors, what: str = "the loss") -> Verdict:
    """Check a prediction, "below" or "above": does ``what`` end below or above its floor?

    ``losses`` holds one final loss per seed; ``floors`` one exact floor per seed, or a single
    number for all. A side counts as measured only when every seed shows it.
    """
    losses = numbers(losses, "losses", 0, above=True).reshape(-1)
    floors = numbers(floors, "floors", 0, above=True).reshape(-1)
    kind(what, "what", str)
    if not len(losses) or len(floors) not in (1, len(losses)):
        raise ValueError(f"losses needs at least one loss, and floors one floor per seed (or a "
                         f"single number): got {len(losses)} losses and {len(floors)} floors")
    word = _word(answer)
    if word not in ("below", "above"):
        return _no('Not answered yet: predict "below" or "above".')
    gaps = losses - floors
    n, under = len(gaps), int((gaps < 0).sum())
    if (gaps == 0).any():
        return _no(f"The seeds cannot settle it: {what} came out exactly at its floor on "
                   f"{int((gaps == 0).sum())} of {n} seeds; no prediction can be checked.")
    if 0 < under < n:
        return _no(f"The seeds disagree: {what} came out below its floor on {under} of {n} "
                   "seeds, so this experiment cannot settle it; no prediction can be checked.")
    measured, seeds, by = ("below" if under else "above"), _on_seeds(n), _by(abs(gaps))
    if word == measured == "below":
        return _yes(f"Your prediction matches: {what} came out below its floor {seeds}, {by}: "
                    "the model knows these masks' answers better than the world's "
                    "probabilities do. That is memorisation.")
    if word == measured:
        return _yes(f"Your prediction matches: {what} came out above its floor {seeds}, {by}: "
                    "no model beats the floor on average on blanks it has not trained on.")
    if measured == "below":
        return _no(f"Not yet: {what} came out below its floor {seeds}, {by}. The floor bounds "
                   "the average over sentences and masks the model never trained on; these "
                   "masks it has trained on, many times. Could it know their answers better "
                   "than the world's probabilities do? (That would be memorisation.)")
    return _no(f"Not yet: {what} came out above its floor {seeds}, {by}. No model beats the "
               "floor on average on blanks it has not trained on: the floor is the best any "
               "reader can do from the visible words. Had it trained on these blanks?")


SPAN_WORDS = {"raise": "raise", "raises": "raise", "raised": "raise", "higher": "raise",
              "up": "raise", "lower": "lower", "lowers": "lower", "lowered": "lower",
              "down": "lower"}


def check_span_effect(answer, token_floor: float, span_floor: float,
                      standard_error: float) -> Verdict:
    """Check a prediction: at the same rate and number of hidden words, do spans "raise" or
    "lower" the floor against single words? ("raises", "raised", "higher" and "up" count as
    "raise"; "lowers", "lowered" and "down" as "lower".) A difference of less than 3 standard
    errors is one the measurement cannot tell, and no prediction is checked.
    """
    token_floor = number(token_floor, "token_floor", 0, above=True)
    span_floor = number(span_floor, "span_floor", 0, above=True)
    standard_error = number(standard_error, "standard_error", 0)
    word = SPAN_WORDS.get(_word(answer) or "")
    if word is None:
        return _no('Not answered yet: predict "raise" or "lower".')
    gap = span_floor - token_floor
    if gap == 0 or abs(gap) < 3 * standard_error:
        return _no(f"The measurement cannot tell: the two floors differ by {abs(gap):.4f} nats, "
                   f"less than 3 standard errors ({3 * standard_error:.4f}); no prediction can "
                   "be checked.")
    measured = "raise" if gap > 0 else "lower"
    moved = f"spans {measured} the floor, from {token_floor:.4f} to {span_floor:.4f} nats"
    if word == measured:
        return _yes(f"Your prediction matches: {moved}.")
    if measured == "raise":
        return _no(f"Not yet: {moved}. A span hides a word's neighbours together with it, and "
                   "the neighbours are what predicts it (the determiner and adjective before a "
                   "noun, the noun before its verb). The same number of words are hidden: what "
                   "do the visible words left tell about them?")
    return _no(f"Not yet: {moved}. What did the spans hide instead: positions near the "
               "sentence's edges, or words that predict nothing?")


def check_exponent_side(answer, fitted: float, n1: float, n2: float, loss1: float,
                        loss2: float, floor: float, symbol: str = "alpha") -> Verdict:
    """Check a prediction, "higher" or "lower": is the exponent from two sizes alone (as
    :func:`check_power_law_exponent` computes it) higher or lower than ``fitted``, the exponent
    of a law fitted to more sizes? The two-size exponent is computed here, so that the cell
    that asks does not show it."""
    fitted = number(fitted, "fitted")
    two = _two_size_exponent(n1, n2, loss1, loss2, floor)
    return _higher_or_lower(answer, two, fitted,
                            f"{symbol} from these two sizes is {{side}} than the fitted "
                            f"{fitted:.3f}", "Which sizes set the fitted law's slope most?")


def check_power_law_exponent(answer, n1: float, n2: float, loss1: float, loss2: float,
                             floor: float, symbol: str = "alpha") -> Verdict:
    r"""Check a number: the exponent :math:`\alpha` of :math:`L(n) = E + A n^{-\alpha}` from two
    sizes, with the floor :math:`E` known.

    .. math::

        \alpha = \frac{\log\left((L_1 - E) / (L_2 - E)\right)}{\log(n_2 / n_1)}

    Any log base is right when both logs use it (a ratio of logs does not depend on the base);
    mixing two bases is a named mistake. ``symbol`` names the exponent in the messages
    (``"beta"`` for a data size's, as in Hoffmann et al.'s law).
    """
    return _exponent_verdict(answer, n1, n2, loss1, loss2, floor, symbol, {})


def _two_size_exponent(n1, n2, loss1, loss2, limit, name="floor") -> float:
    """The exponent from two sizes with the limit known, the arguments checked first."""
    n1, n2 = number(n1, "n1", 0, above=True), number(n2, "n2", 0, above=True)
    if n1 == n2:
        raise ValueError(f"n1 and n2 must differ (two sizes), got {n1:g} twice")
    limit = number(limit, name, 0)
    for loss_name, loss in (("loss1", loss1), ("loss2", loss2)):
        if number(loss, loss_name) <= limit:
            raise ValueError(f"{loss_name} must be above the {name} {limit:g}, got {loss}: only "
                             f"the part above the {name} follows the power law")
    return math.log((loss1 - limit) / (loss2 - limit)) / math.log(n2 / n1)


def _exponent_verdict(answer, n1, n2, loss1, loss2, floor, symbol, extra: dict[str, float],
                      name: str = "floor") -> Verdict:
    """The verdict on a two-size exponent with ``floor`` as the limit: the usual mistakes, and
    ``extra`` ones (hint -> the value that mistake gives)."""
    if not isinstance(symbol, str) or not symbol.strip():
        raise TypeError(f"symbol must name the exponent (a string such as 'alpha'), got {symbol!r}")
    alpha = _two_size_exponent(n1, n2, loss1, loss2, floor, name)
    ratio, excess = math.log(n2 / n1), alpha * math.log(n2 / n1)
    mistakes = {
        f"that leaves out the {name}: which part of the loss shrinks as n grows, the whole loss "
        f"or the loss above the {name}?": math.log(loss1 / loss2) / ratio,
        f"the sign is flipped: as n grows, does the loss above the {name} shrink or grow?":
            -alpha,
        f"that is 1/{symbol}, the fraction upside down: which log goes on top?":
            ratio / excess if excess else alpha,  # alpha = 0: no upside down to name
        f"that subtracts the {name} from loss1 only: what about loss2?":
            math.log((loss1 - floor) / loss2) / ratio,
        f"that subtracts the {name} from loss2 only: what about loss1?":
            math.log(loss1 / (loss2 - floor)) / ratio,
        "that mixes two logs, log10 on top and the natural log below: is one kind used for "
        "both?": alpha / math.log(10),
        "that mixes two logs, the natural log on top and log10 below: is one kind used for "
        "both?": alpha * math.log(10),
        "that mixes two logs, log2 on top and the natural log below: is one kind used for "
        "both?": alpha / math.log(2),
        "that mixes two logs, the natural log on top and log2 below: is one kind used for "
        "both?": alpha * math.log(2),
    } | extra
    verdict = _check_number(answer, alpha, mistakes,
                            f"{symbol} = log((loss1 - {name}) / (loss2 - {name})) / log(n2 / n1)")
    if verdict.message.endswith("?."):  # a hint that asks a question ends the message
        verdict.message = verdict.message[:-1]
    return verdict


def check_limit_effect(answer, n1: float, n2: float, loss1: float, loss2: float, floor: float,
                       limit: float, symbol: str = "alpha") -> Verdict:
    """Check a prediction, "higher", "lower" or "same": is the two-size exponent with the limit
    ``limit`` (a fitted E) higher or lower than with E at the exact ``floor``? Both are computed
    here, so that the cell that asks does not show them. "same" is the usual mistake: a shift
    taken from both losses alike does not keep their distances' ratio."""
    at_floor = _two_size_exponent(n1, n2, loss1, loss2, floor)
    at_limit = _two_size_exponent(n1, n2, loss1, loss2, limit, "limit")
    if _word(answer) not in ("higher", "lower", "same", "equal", "unchanged"):
        return _no('Not answered yet: predict "higher", "lower" or "same".')
    if _word(answer) in ("same", "equal", "unchanged"):
        return _no(f"Not the same: {symbol} is {at_limit:.3f} with E = {limit:.4f} and "
                   f"{at_floor:.3f} with E at the floor. Moving E takes the same amount from "
                   "both distances above it: is that the same share of a large distance and of "
                   "a small one?")
    return _higher_or_lower(answer, at_limit, at_floor,
                            f"{symbol} with E = {limit:.4f} is {{side}} than with E at the "
                            f"floor, {at_floor:.3f}",
                            "When E moves, which distance above it changes by the larger share: "
                            "the small model's or the large one's?")


def check_limit_exponent(answer, n1: float, n2: float, loss1: float, loss2: float,
                         floor: float, limit: float, symbol: str = "alpha") -> Verdict:
    """Check a number: the two-size exponent with E = ``limit`` rather than the exact
    ``floor``, as :func:`check_power_law_exponent` computes it; the exponent with E at the floor
    is a named mistake.

    >>> check_limit_exponent(1.0, 1, 10, 1.11, 1.02, floor=1.0, limit=1.01)
    Correct: 1.0000 matches alpha = log((loss1 - limit) / (loss2 - limit)) / log(n2 / n1) = 1.0000.
    """
    at_floor = _two_size_exponent(n1, n2, loss1, loss2, floor)
    return _exponent_verdict(answer, n1, n2, loss1, loss2, limit, symbol, {
        "that subtracts the exact floor, not the limit E this exercise sets: which E does the "
        "paper's law use?": at_floor}, name="limit")


def _sentence_lengths(lengths) -> list[int]:
    """``lengths`` (numbers of words, at least 1 each) checked, as a list of ints."""
    values = numbers(lengths, "lengths", 1, ndim=1, empty=False)
    if (values != values.round()).any():
        raise ValueError("lengths must be whole numbers of words")
    return [int(n) for n in values]


def _repeat_share(lengths: list[int], rate: float, masks: int, per_blank: bool = True) -> float:
    """Over masks drawn word by word (each word a blank with chance ``rate``) for sentences of
    these lengths, each mask as likely as it is: the share of blanks (or, with ``per_blank``
    False, of masks with a blank) whose mask is identical to one of ``masks`` fixed masks of
    the same sentence, drawn the same way."""
    def total(n: int, seen: bool) -> float:
        out = 0.0
        for k in range(1, n + 1):  # a mask with k blanks has chance p; comb(n, k) such masks
            p = rate**k * (1 - rate) ** (n - k)
            out += math.comb(n, k) * p * (k if per_blank else 1) * (1 - (1 - p) ** masks
                                                                     if seen else 1)
        return out
    return sum(total(n, True) for n in lengths) / sum(total(n, False) for n in lengths)


def check_repeat_side(answer, lengths, rate: float, compare_rate: float,
                      masks: int = 10) -> Verdict:
    """Check a prediction, "higher" or "lower": is the share of fresh blanks in one of
    ``masks`` fixed masks (as :func:`check_repeat_share` computes it) higher or lower at
    ``rate`` than at ``compare_rate``? Both shares are computed here, unprinted."""
    lengths = _sentence_lengths(lengths)
    rates = [number(r, name, 0, 1, above=True, below=True)
             for r, name in ((rate, "rate"), (compare_rate, "compare_rate"))]
    masks = whole(masks, "masks", least=1)
    share, other = (_repeat_share(lengths, r, masks) for r in rates)
    return _higher_or_lower(answer, share, other,
                            f"the share is {{side}} at the rate {rates[0]:g} than at "
                            f"{rates[1]:g}",
                            "How likely is each mask with one or two blanks at each rate?")


def check_repeat_share(answer, lengths, rate: float, masks: int = 10,
                       compare_rate: float | None = None) -> Verdict:
    r"""Check a number: the share of a fresh mask's blanks that lie in a mask identical to one
    of ``masks`` fixed masks of the same sentence (BERT's ten), for sentences of ``lengths``
    words masked word by word at ``rate``. A mask with :math:`k` of :math:`n` words hidden
    has the chance :math:`p = r^k (1 - r)^{n-k}`, and one of the fixed masks is it with the
    chance :math:`1 - (1 - p)^{m}`; counting each mask once per blank, as the loss does,

    .. math::

        \text{share} = \frac{\sum_n \sum_k \binom{n}{k}\, p\, k\, (1 - (1 - p)^{m})}
                             {\sum_n \sum_k \binom{n}{k}\, p\, k}.

    Named mistakes: each mask counted once instead of once per blank, one fixed mask instead
    of ``masks``, a percentage, and (with ``compare_rate``) the share at that other rate.
    """
    lengths = _sentence_lengths(lengths)
    rate = number(rate, "rate", 0, 1, above=True, below=True)
    masks = whole(masks, "masks", least=1)
    share = _repeat_share(lengths, rate, masks)
    mistakes = {
        "that counts each mask once: the loss averages over blanks, so a mask with k blanks "
        "counts k times": _repeat_share(lengths, rate, masks, per_blank=False),
        f"that is the share for one fixed mask: the run has {masks} of them":
            _repeat_share(lengths, rate, 1),
        "that is a percentage: give the share as a fraction between 0 and 1": 100 * share,
    }
    if compare_rate is not None:
        other = number(compare_rate, "compare_rate", 0, 1, above=True, below=True)
        mistakes[f"that is the share at the rate {other:g}: the question asks at {rate:g}"] = \
            _repeat_share(lengths, other, masks)
    return _check_number(answer, share, mistakes,
                         f"the share of fresh blanks in one of {masks} fixed masks at rate "
                         f"{rate:g}")
