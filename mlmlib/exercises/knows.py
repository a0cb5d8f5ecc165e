"""mlmlib.exercises.knows - checkers for what the model knows (training_5_what_it_knows):
probes and memorisation.

Does: check which layer first carries the world's hidden state at a blank, read off a linear
probe's KL from the exact posterior at each layer over seeds; whether the probe on the trained
block comes clearly closer to that posterior than a linear reader of the nearby words; a prediction
that a loss ends below or above its exact floor (below is memorisation: the masks it trained
on); the share of a fresh mask's blanks that lie in a mask identical to one of a few fixed
masks, computed exactly from the sentences' lengths and the masking rate; whether, and by how
much, the belief from a blank's two neighbours misses the exact one; and a probe fitted by the
reader (fitted again here), with too few rows or enough. A word answer is
read case- and space-insensitively; when the seeds disagree, the verdict says so. A wrong
answer names the usual mistake it looks like and asks a question back.

Does not: train anything, or run a probe beyond refitting the reader's (the chapter passes in
what it measured); the spans
and scaling checkers are :mod:`mlmlib.exercises.scaling`'s.

>>> verdict = check_block_beats_reader("yes", reader_kls=[0.005, 0.006, 0.005],
...                                     block_kls=[0.003, 0.003, 0.002])
>>> bool(verdict), str(verdict).split(": ")[2][:48]
(True, 'the block minus the reader is -0.0027 on average')
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mlmlib._checks import kind, mapping, number, numbers, whole
from mlmlib.exercises._common import (
    Verdict,
    _check_number,
    _higher_or_lower,
    _judged,
    _no,
    _on_seeds,
    _unsettled,
    _word,
    _yes,
)
from mlmlib.probe import ProbeScore, fit_probe
from mlmlib.seeds import paired_difference

NO_LAYER = "none"  # the answer when no layer's probe gets below the threshold


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
                   f"{layers[got].mean():.3f} nats. An untrained block barely changes its input "
                   "and mixes every word about equally: has anything taught this model to lay "
                   "out what the neighbours say about the state? Does any layer get below it?")
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


def check_block_beats_reader(answer, reader_kls: Sequence[float],
                             block_kls: Sequence[float]) -> Verdict:
    """Check a prediction, "yes" or "no": does the probe on the trained block come clearly
    closer to the belief than a linear reader of the words around the blank, that is, is the
    95% interval of their paired difference, block minus reader, wholly below 0
    (:func:`mlmlib.seeds.paired_difference`)? The pairs: ``reader_kls[k]`` is the reader's KL
    fitted on the k-th draw of sentences, ``block_kls[k]`` the block's of the k-th seed fitted
    on the same draw. The usual mistake, "yes", expects a transformer to beat a reader of the
    words whatever the world."""
    try:
        d = paired_difference(numbers(reader_kls, "reader_kls", 0, ndim=1, empty=False),
                              numbers(block_kls, "block_kls", 0, ndim=1, empty=False))
    except ValueError as err:
        raise ValueError(f"reader_kls and block_kls: {err}") from None
    word = _word(answer)
    if word not in ("yes", "no"):
        return _no('Not answered yet: predict "yes" or "no".')
    interval = (f"the block minus the reader is {d.mean:+.4f} on average over the {d.n} pairs, "
                f"95% interval {d.low:+.4f} to {d.high:+.4f}")
    if d.high < 0:
        said = f"the block is clearly closer: {interval}, wholly below 0"
    elif d.low > 0:
        said = f"the block is not closer; the reader is: {interval}, wholly above 0"
    else:
        said = (f"the block is not clearly closer: {interval}, which holds 0 (the block is "
                f"closer on {d.lower_on} of {d.n} pairs)")
    return _judged(word, "yes" if d.high < 0 else "no", said, {
        "yes": "A transformer need not beat a reader of the words: in this world, what does "
               "the belief at a blank depend on?",
        "no": "The block reads the same words, and more: what could it add here?"},
        "The runs disagree")


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
    unsettled = _unsettled((-gaps).tolist(), what, "below its floor", "exactly at its floor")
    if unsettled is not None:
        return unsettled  # otherwise every seed is on one side: the first seed's
    measured = "below" if gaps[0] < 0 else "above"
    seeds, by = _on_seeds(len(gaps)), _by(abs(gaps))
    if word == measured == "below":
        return _yes(f"Your prediction matches: {what} came out below its floor {seeds}, {by}: "
                    "the model knows these blanks' answers better than the world's "
                    "probabilities do. That is memorisation.")
    if word == measured:
        return _yes(f"Your prediction matches: {what} came out above its floor {seeds}, {by}: "
                    "no model beats the floor on average on blanks it has not trained on.")
    if measured == "below":
        return _no(f"Not yet: {what} came out below its floor {seeds}, {by}. The floor bounds "
                   "the average over sentences the model never trained on. It has trained on "
                   "these sentences many times, and perhaps on these very blanks: a fresh mask "
                   "is not a fresh sentence. Could it know their answers better than the "
                   "world's probabilities do? (That would be memorisation.)")
    return _no(f"Not yet: {what} came out above its floor {seeds}, {by}. No model beats the "
               "floor on average on blanks it has not trained on: the floor is the best any "
               "reader can do from the visible words. Had it trained on these blanks?")


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


def _neighbour_formula(world, words, blank: int, masked) -> tuple[float, float]:
    r"""The largest difference, over the states, between the two-neighbour formula's belief at
    ``blank`` and the exact belief, with ``masked`` the blanks; and the same with only
    ``blank`` masked (the usual mistake). The formula takes the left neighbour's likeliest
    state :math:`a` and the right neighbour's word :math:`w`:
    :math:`P(z = s) \propto T(a, s) \sum_b T(s, b) P(w \mid b)`."""
    for name in ("slot_posterior", "trans", "emit", "words"):
        if not hasattr(world, name):
            raise TypeError(f"world must be a mlmlib.toyworld.ToyWorld, got {type(world).__name__}")
    if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
        raise TypeError("words must be a list of the sentence's words")
    unknown = [w for w in words if w not in world.words]
    if unknown:
        raise ValueError(f"words not in the world's vocabulary: {unknown}")
    blank = whole(blank, "blank", least=1)
    if blank > len(words) - 2:
        raise ValueError(f"blank must have a word on each side: 1 to {len(words) - 2}, got {blank}")
    masked = [whole(i, "masked", least=0) for i in masked]
    if blank not in masked or blank + 1 in masked or max(masked) >= len(words):
        raise ValueError(f"masked must hold the blank {blank}, not its right neighbour "
                         f"{blank + 1}, and only positions of the sentence; got {masked}")
    index = {w: k for k, w in enumerate(world.words)}

    def difference(hid) -> float:
        left = world.slot_posterior(list(words), hid, positions=[blank - 1])[0]
        a, w = int(left.argmax()), index[words[blank + 1]]
        product = world.trans[a] * (world.trans * world.emit[:, w]).sum(1)
        exact = world.slot_posterior(list(words), hid, positions=[blank])[0]
        return float((product / product.sum() - exact).abs().max())

    return difference(masked), difference([blank])


def check_formula_holds(answer, world, words, blank: int, masked) -> Verdict:
    """Check a prediction, "yes" or "no": does the two-neighbour formula give the exact belief
    at ``blank`` (a largest difference under 0.01), with ``masked`` the blanks? The difference
    is computed here, unprinted. The usual mistake, "yes", forgets that the formula takes the
    left neighbour's state as settled."""
    diff, _ = _neighbour_formula(world, words, blank, masked)
    word = _word(answer)
    if word not in ("yes", "no"):
        return _no('Not answered yet: predict "yes" or "no".')
    measured = "yes" if diff < 0.01 else "no"
    said = ("the formula gives the exact belief there" if measured == "yes" else
            "the formula misses the exact belief there")
    return _judged(word, measured, said, {
        "yes": "The formula takes the left neighbour's likeliest state as settled. With that "
               "neighbour masked too, is its state settled?",
        "no": "Is the left neighbour's state settled even though it is masked? What do the "
              "words around it say?"})


def check_formula_difference(answer, world, words, blank: int, masked) -> Verdict:
    """Check a number: the largest difference, over the states, between the two-neighbour
    formula's belief at ``blank`` and the exact belief (``world.slot_posterior``), with
    ``masked`` the blanks. Named mistake: only the blank masked, its left neighbour visible."""
    diff, alone = _neighbour_formula(world, words, blank, masked)
    mistakes = {"that is the difference with only the blank masked: mask the left neighbour "
                "too": alone} if abs(alone - diff) > 1e-3 else {}
    return _check_number(answer, diff, mistakes,
                         "the largest difference between the formula's belief and the exact one")


def _probe_scores(features, targets, held_features, held_targets,
                  weight_decay: float) -> tuple[ProbeScore, ProbeScore]:
    """A probe fitted as the exercise says (``fit_probe``, ``rng=0``, 200 iterations), scored
    on the held-out rows and on its own."""
    probe = fit_probe(features, targets, rng=0, weight_decay=weight_decay, steps=200)
    return probe.score(held_features, held_targets), probe.score(features, targets)


def check_probe_holds(answer, features, targets, held_features, held_targets, *,
                      weight_decay: float = 1e-4, threshold: float = 0.1) -> Verdict:
    """Check a prediction, "yes" or "no": does a linear probe fitted on ``features`` and
    ``targets`` stay below ``threshold`` nats of KL on the held-out rows? The probe is fitted
    here, unprinted. The usual mistake, "yes", reads what the vectors carry as what a probe
    can learn from a few rows."""
    threshold = number(threshold, "threshold", 0, above=True)
    held, own = _probe_scores(features, targets, held_features, held_targets, weight_decay)
    word = _word(answer)
    if word not in ("yes", "no"):
        return _no('Not answered yet: predict "yes" or "no".')
    measured = "yes" if held.kl < threshold else "no"
    said = (f"fitted on {len(targets)} rows, the probe's KL is about {held.kl:.1f} nats on the "
            f"held-out rows ({'below' if measured == 'yes' else 'above'} {threshold:g}) and "
            f"{own.kl:.4f} on its own rows")
    return _judged(word, measured, said, {
        "yes": "The vectors carry the belief, but the probe must learn to read it: how many "
               "weights does it have, and how many rows pin them down?",
        "no": "Are there enough rows for the probe's weights?"})


def check_probe_kl(answer, features, targets, held_features, held_targets, *,
                   weight_decay: float = 1e-4) -> Verdict:
    """Check a number: the held-out KL of a linear probe fitted on ``features`` and
    ``targets`` (``fit_probe(..., rng=0, weight_decay=..., steps=200)``). Named mistakes: the
    KL on the rows it was fitted on, and the held-out cross-entropy instead of the KL."""
    held, own = _probe_scores(features, targets, held_features, held_targets, weight_decay)
    mistakes = {"that is the KL on the rows the probe was fitted on: score it on the held-out "
                "rows": own.kl,
                "that is the cross-entropy: the KL is the cross-entropy minus the beliefs' "
                "entropy (the probe's floor)": held.cross_entropy}
    return _check_number(answer, held.kl, mistakes, "the probe's KL on the held-out rows",
                         tol=2e-3)
