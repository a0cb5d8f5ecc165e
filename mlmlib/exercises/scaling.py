"""mlmlib.exercises.scaling - checkers for spans and scaling against the exact floor
(training_6_spans_scaling).

Does: check a prediction that masking spans raises or lowers the floor, against the
measurement's standard error, and the rise with other span settings; whether a model trained
on one kind of blank ends closer to or farther from another kind's floor than a model trained
on that kind (the mean over seeds against its 95% interval, a seed within its standard error
counting as level); a power law's exponent
computed by hand from two sizes and the floor; whether that two-size exponent is higher or
lower than a fitted law's; which way a fitted limit moves when one size is left out; and
what a limit other than the floor does to it. A word answer
is read case- and space-insensitively; when the measurement cannot tell, the verdict says so
and checks nothing. A wrong answer names the usual mistake it looks like and asks a question
back.

Does not: fit a power law to more than two sizes (:mod:`mlmlib.scaling` does), or compute a
floor (the chapter passes in what it measured).

>>> check_span_effect("raises", token_floor=1.20, span_floor=1.35, standard_error=0.01)
Your prediction matches: spans raise the floor, from 1.2000 to 1.3500 nats.
"""

from __future__ import annotations

import math

from mlmlib._checks import kind, number, numbers
from mlmlib.exercises._common import (
    Verdict,
    _check_number,
    _higher_or_lower,
    _judged,
    _no,
    _unsettled,
    _word,
    _yes,
)
from mlmlib.seeds import paired_difference

SPAN_WORDS = {"raise": "raise", "raises": "raise", "raised": "raise", "higher": "raise",
              "up": "raise", "lower": "lower", "lowers": "lower", "lowered": "lower",
              "down": "lower", "same": "same", "no_change": "same", "neither": "same"}


def check_span_effect(answer, token_floor: float, span_floor: float,
                      standard_error: float) -> Verdict:
    """Check a prediction: at the same rate and number of hidden words, do spans "raise" or
    "lower" the floor against single words? ("raises", "raised", "higher" and "up" count as
    "raise"; "lowers", "lowered" and "down" as "lower".) A difference of less than 3 standard
    errors is one the measurement cannot tell, and no prediction is checked. The usual mistake,
    "same" (or "no change"), counts the hidden words and forgets their arrangement.
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
    if word == "same":
        return _no(f"Not the same: {moved}. The same number of hidden words does not make the "
                   "same floor: which words does a span hide together?")
    if measured == "raise":
        return _no(f"Not yet: {moved}. A span hides a word's neighbours together with it, and "
                   "the neighbours are what predicts it (the determiner and adjective before a "
                   "noun, the noun before its verb). The same number of words are hidden: what "
                   "do the visible words left tell about them?")
    return _no(f"Not yet: {moved}. What did the spans hide instead: positions near the "
               "sentence's edges, or words that predict nothing?")


def check_rise_side(answer, rise: float, spanbert_rise: float, standard_error: float) -> Verdict:
    """Check a prediction, "higher" or "lower": with other span settings, is the floor's rise
    from single words to spans higher or lower than with SpanBERT's? A difference of less
    than 3 standard errors is one the measurement cannot tell, and nothing is checked. The
    usual mistake, "same", counts the hidden words and forgets their arrangement."""
    rise, spanbert_rise = number(rise, "rise"), number(spanbert_rise, "spanbert_rise")
    standard_error = number(standard_error, "standard_error", 0)
    word, differ = _word(answer), abs(rise - spanbert_rise) >= 3 * standard_error
    if word in ("higher", "lower", "same") and not differ:
        return _no(f"The measurement cannot tell: the two rises differ by "
                   f"{abs(rise - spanbert_rise):.4f} nats, less than 3 standard errors; no "
                   "prediction can be checked.")
    if word == "same":
        side = "higher" if rise > spanbert_rise else "lower"
        return _no(f"Not the same: the rise is {side} than with SpanBERT's spans, {rise:.4f} "
                   f"against {spanbert_rise:.4f} nats. The same number of hidden words does not "
                   "make the same floor: how they are arranged matters.")
    return _higher_or_lower(answer, rise, spanbert_rise,
                            f"the rise is {{side}} than with SpanBERT's spans, {rise:.4f} against "
                            f"{spanbert_rise:.4f} nats",
                            "How long are the spans now, and how many of a blank's neighbours "
                            "do they hide with it?")


def check_span_rise(answer, rise: float, spanbert_rise: float) -> Verdict:
    """Check a number: the floor's rise from single words to spans (the span floor minus the
    single-word floor, nats) with other span settings. Named mistakes: the sign flipped
    (single words minus spans), and SpanBERT's own rise (the new setting not passed)."""
    rise, spanbert_rise = number(rise, "rise"), number(spanbert_rise, "spanbert_rise")
    mistakes = {"that is single words minus spans: the rise is the span floor minus the "
                "single-word floor": -rise,
                "that is the rise with SpanBERT's spans: pass the new setting": spanbert_rise}
    return _check_number(answer, rise, mistakes, "the span floor minus the single-word floor")


def check_trained_elsewhere(answer, matched_gaps, other_gaps, standard_errors=None,
                            test: str = "single-word", shared_se: float | None = None) -> Verdict:
    """Check a prediction, "closer" or "farther": on a test mask of one kind, does the model
    trained on the other kind end closer to the test's floor than the model trained on the
    test's own kind, or farther? ``matched_gaps`` are the loss minus the floor of the model
    trained on the test's kind, one per seed, ``other_gaps`` those of the model trained on the
    other kind, paired seed by seed; ``standard_errors`` (optional) one per seed, the standard
    error of that seed's difference (the test set's noise). A seed whose difference is no
    larger than its standard error counts as level, on neither side. ``shared_se`` (optional)
    is the standard error that the one test set every seed is scored on adds to the mean
    difference, which the seeds' spread does not hold.

    With two seeds or more, a side counts only when the 95% interval of the mean difference
    excludes 0 (:func:`mlmlib.seeds.paired_difference`, ``shared_se`` included); with one
    seed, only when that seed is not level. The usual mistake, "closer", expects the harder
    training to teach the easier test too."""
    # a gap may be a little below 0: one test set's luck
    matched = numbers(matched_gaps, "matched_gaps", ndim=1, empty=False)
    other = numbers(other_gaps, "other_gaps", ndim=1, empty=False)
    kind(test, "test", str)
    if shared_se is not None:
        shared_se = number(shared_se, "shared_se", 0)
    if len(matched) != len(other):
        raise ValueError(f"matched_gaps and other_gaps must pair seed with seed: got "
                         f"{len(matched)} and {len(other)} numbers")
    diffs = other - matched  # above 0: the model trained on the other kind is farther
    ses = (numbers(standard_errors, "standard_errors", 0, ndim=1, empty=False)
           if standard_errors is not None else 0 * diffs)
    if len(ses) != len(diffs):
        raise ValueError(f"standard_errors needs one number per seed: got {len(ses)} for "
                         f"{len(diffs)} seeds")
    word = _word(answer)
    if word not in ("closer", "farther"):
        return _no('Not answered yet: predict "closer" or "farther".')
    level = abs(diffs) <= ses
    n = len(diffs)
    farther, closer = int(((diffs > 0) & ~level).sum()), int(((diffs < 0) & ~level).sum())
    what = "the model trained on the other kind"
    if n == 1:
        unsettled = _unsettled([0.0 if level[0] else float(-diffs[0])], what,
                               f"closer to the {test} test's floor", "level with the other, "
                               "within its standard error,")
        if unsettled is not None:
            return unsettled
        measured = "closer" if diffs[0] < 0 else "farther"
        said = (f"on the {test} test, {what} ends {measured} from the floor on its one seed, by "
                f"{abs(diffs[0]):.3f} nats")
    else:
        d = paired_difference(matched, other, shared_se or 0.0)
        seeds = (f"farther on {farther} of {n} seeds, closer on {closer}"
                 + (f", level within one standard error on {n - farther - closer}"
                    if standard_errors is not None or level.any() else ""))
        interval = (f"95% interval {d.low:+.3f} to {d.high:+.3f}"
                    + (", the test set's noise included" if shared_se is not None else ""))
        if d.low <= 0 <= d.high:
            disagree = "The seeds disagree" if farther and closer else "The seeds cannot settle it"
            side = "farther" if d.mean > 0 else "closer"
            return _no(f"{disagree}: on the {test} test, {what} ends {side} from the floor by "
                       f"{abs(d.mean):.3f} nats on average over {n} seeds, but the {interval} "
                       f"holds 0 ({seeds}), so this experiment cannot settle it; no prediction "
                       "can be checked.")
        measured = "farther" if d.low > 0 else "closer"
        said = (f"on the {test} test, {what} ends {measured} from the floor, by "
                f"{abs(d.mean):.3f} nats on average over {n} seeds ({interval}; {seeds})")
    return _judged(word, measured, said, {
        "closer": "Harder training need not teach the easier test: a model learns the blanks "
                  "it is shown. How often did it see a blank like this test's, with its "
                  "neighbours in view?",
        "farther": "Which blanks did each model see in training, and which does this test "
                   "show?"}, "The seeds disagree with you")


def check_exponent_side(answer, fitted: float, n1: float, n2: float, loss1: float,
                        loss2: float, floor: float, symbol: str = "alpha") -> Verdict:
    """Check a prediction, "higher" or "lower": is the exponent from two sizes alone (as
    :func:`check_power_law_exponent` computes it) higher or lower than ``fitted``, the exponent
    of a law fitted to more sizes? The two-size exponent is computed here, so that the cell
    that asks does not show it."""
    fitted = number(fitted, "fitted")
    two = _two_size_exponent(n1, n2, loss1, loss2, floor)
    hint = ("A fit on the logarithms of the whole loss leans on the sizes where the loss falls "
            "most. Is the fall between these two sizes as steep as the one the fit leans on?")
    if _word(answer) == "higher":  # the usual mistake, named
        hint = ("Expecting the steep fall of the smallest sizes to go on is the usual mistake. "
                + hint)
    return _higher_or_lower(answer, two, fitted,
                            f"{symbol} from these two sizes is {{side}} than the fitted "
                            f"{fitted:.3f}", hint)


def check_left_out_limit(answer, limit_all: float, limit_left_out: float,
                         left_out: str = "the widest model") -> Verdict:
    """Check a prediction, "higher" or "lower": with ``left_out`` taken out of the fit, does
    the fitted limit E land higher or lower than with every size? ``limit_all`` and
    ``limit_left_out`` are the two fitted E's. The usual mistake, "higher", takes the size left
    out as an anchor that held the limit down; a free limit follows the shape of the points
    left."""
    limit_all = number(limit_all, "limit_all")
    limit_left_out = number(limit_left_out, "limit_left_out")
    kind(left_out, "left_out", str)
    hint = ("A free E follows the shape of the points left. Without this one, do the "
            "others fall evenly, or steeper towards the end? Which way must E move for a "
            "power law to steepen?" if _word(answer) == "higher" else
            "Did this point pull the end of the curve up or down?")
    return _higher_or_lower(answer, limit_left_out, limit_all,
                            f"without {left_out}, the fitted E lands {{side}}, at "
                            f"{limit_left_out:.4f} against {limit_all:.4f} with every size", hint)


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
    if _word(answer) not in ("higher", "lower", "same"):
        return _no('Not answered yet: predict "higher", "lower" or "same".')
    if _word(answer) == "same":
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
