r"""mlmlib.toyworld - a small language with known probabilities, and the exact MLM loss floor.

Does: :class:`ToyWorld` is a hidden Markov model over about 200 English words that writes
grammatical little sentences ("the small cat sat on the old mat ."). Each hidden state is a
grammatical slot (a subject noun that is an animal or a person, its kind of verb, a
preposition, ...), so the words on *both* sides of a blank matter: "the small ___ barked"
calls for an animal, "the ___ read a book" for a person, "the ___ sat" for either. Because
every probability is known, :meth:`ToyWorld.posterior` gives the exact
``P(x_i = v | visible tokens)`` for any set of masked positions (the forward-backward
algorithm), and :meth:`ToyWorld.bayes_loss` the exact Bayes-optimal MLM loss of a set of
masked sentences: the floor that no model can beat on average.

.. math::

    P(x_i = v \mid \mathbf{x}_{\setminus M}) =
    \sum_s P(z_i = s \mid \mathbf{x}_{\setminus M}) \, e_s(v),
    \qquad P(z_i = s \mid \cdot) \propto \alpha_i(s) \beta_i(s)

where a masked position contributes the factor :math:`\sum_v e_s(v) = 1`. The posterior also
conditions on the sentence's length, which a model sees too (sentences end with "." and then
stop).

The same messages answer the course's exact experiments: the floor of a reader that sees
less (``context="left"``: only the words before the blank, as a left-to-right model;
``"none"``: nothing, the unigram frequencies), and the joint posterior of two blanks
(:meth:`ToyWorld.pair_posterior`), whose mutual information
(:meth:`ToyWorld.pair_information`) is exactly what an MLM gives away by scoring two blanks
independently.

Does not: tokenize into sub-words (the toy world's tokens are whole words) or train anything,
or answer for a sentence it cannot write (it says why: a word, the order, the length).

>>> world = ToyWorld()
>>> " ".join(world.sample(2, rng=0)[0])
'a small boy sat on their river .'
>>> post = world.posterior(["the", "small", "cat", "barked", "."], masked=[2])
>>> [world.words[int(i)] for i in post[0].topk(2).indices]
['cat', 'dog']
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from mlmlib._checks import generator, indices, items, one_of, whole

__all__ = ["ToyWorld", "compare_with_exact"]

# The lexicon: each slot's words, most likely first. Some words belong to several slots
# ("sat", "watched"), which is what makes the posterior interesting.
LEXICON = {
    "det": "the a this that every my your our their some".split(),
    "adj": ("small big old young little happy sad quiet loud tired hungry clever lazy brave "
            "gentle angry calm busy shy proud sleepy friendly grumpy curious silly kind wild "
            "noisy fluffy tiny huge lucky patient nervous cheerful bored polite").split(),
    "animal": ("cat dog bird horse cow mouse rabbit fox duck goat sheep pig owl frog bear "
               "lion tiger wolf deer hen parrot hamster turtle snake monkey donkey puppy "
               "kitten goose squirrel").split(),
    "person": ("boy girl man woman teacher doctor farmer baker child king queen student "
               "painter singer driver nurse pilot cook sailor writer judge poet clown "
               "grandmother uncle aunt neighbour friend stranger guard").split(),
    "verb_i_animal": ("sat slept barked purred ran jumped hid waited played growled squeaked "
                      "howled hopped rested").split(),
    "verb_i_person": ("sat slept laughed sang ran waited smiled danced worked cried rested "
                      "studied shouted").split(),
    "verb_t_animal": "chased ate watched found caught smelled licked dropped bit".split(),
    "verb_t_person": ("read painted watched found wrote cooked bought opened carried cleaned "
                      "fixed washed").split(),
    "adv": "quietly quickly happily slowly loudly again alone together".split(),
    "prep": "on under near behind beside in by across inside over".split(),
    "object": ("mat table box hat book chair bed garden window door floor wall rug basket "
               "cake letter cup ball bone apple bench tree fence roof kitchen river road "
               "bridge car boat sofa lamp pillow blanket field hill shed stove shelf").split(),
    "end": ["."],
}

# (state name, the lexicon entry it emits from)
STATES = [
    ("det_s", "det"), ("adj_s", "adj"), ("animal", "animal"), ("person", "person"),
    ("verb_i_animal", "verb_i_animal"), ("verb_i_person", "verb_i_person"),
    ("verb_t_animal", "verb_t_animal"), ("verb_t_person", "verb_t_person"),
    ("adv", "adv"), ("prep", "prep"), ("det_o", "det"), ("adj_o", "adj"),
    ("object", "object"), ("end", "end"),
]

# transition probabilities; every sentence starts at det_s and stops after "end"
TRANSITIONS = {
    "det_s": {"adj_s": 0.4, "animal": 0.3, "person": 0.3},
    "adj_s": {"adj_s": 0.15, "animal": 0.425, "person": 0.425},
    "animal": {"verb_i_animal": 0.55, "verb_t_animal": 0.45},
    "person": {"verb_i_person": 0.5, "verb_t_person": 0.5},
    "verb_i_animal": {"prep": 0.65, "adv": 0.2, "end": 0.15},
    "verb_i_person": {"prep": 0.6, "adv": 0.25, "end": 0.15},
    "verb_t_animal": {"det_o": 1.0},
    "verb_t_person": {"det_o": 1.0},
    "adv": {"prep": 0.5, "end": 0.5},
    "prep": {"det_o": 1.0},
    "det_o": {"adj_o": 0.35, "object": 0.65},
    "adj_o": {"adj_o": 0.1, "object": 0.9},
    "object": {"end": 0.8, "prep": 0.2},
    "end": {},
}


# the exact computations (the unigram shares, the "left" floor) grow with max_len squared
MAX_LEN = 200


class ToyWorld:
    """A hidden Markov model that writes little English sentences, with exact posteriors."""

    def __init__(self, max_len: int = 20):
        self._unigram = None  # (max_len, word shares), filled by unigram() on first use
        self.states = [name for name, _ in STATES]
        self.words = sorted({w for ws in LEXICON.values() for w in ws})
        self.word_id = {w: i for i, w in enumerate(self.words)}
        S, V = len(self.states), len(self.words)
        index = {name: k for k, name in enumerate(self.states)}
        self.start = torch.zeros(S, dtype=torch.float64)  # (S,)
        self.start[index["det_s"]] = 1.0
        self.trans = torch.zeros(S, S, dtype=torch.float64)  # (S, S): from row to column
        for a, nexts in TRANSITIONS.items():
            for b, p in nexts.items():
                self.trans[index[a], index[b]] = p
        self.stop = torch.zeros(S, dtype=torch.float64)  # (S,): P(sentence ends after s)
        self.stop[index["end"]] = 1.0
        self.emit = torch.zeros(S, V, dtype=torch.float64)  # (S, V): e_s(v)
        for k, (_, entry) in enumerate(STATES):
            words = LEXICON[entry]
            weights = torch.tensor([1.0 / (r + 1) for r in range(len(words))],
                                   dtype=torch.float64)  # Zipf: the first words most likely
            for w, p in zip(words, weights / weights.sum(), strict=True):
                self.emit[k, self.word_id[w]] = p
        assert torch.allclose(self.trans.sum(1) + self.stop, torch.ones(S, dtype=torch.float64))
        self.max_len = max_len  # longer samples are redrawn (the length is always observed)

    @property
    def max_len(self) -> int:
        """How long the world's sentences may be, from its shortest one up to 200 (checked)."""
        return self._max_len

    @max_len.setter
    def max_len(self, value: int) -> None:
        value = whole(value, "max_len")
        if value > MAX_LEN:
            raise ValueError(f"max_len = {value} is more than {MAX_LEN}: the toy world's sentences "
                             "are short, and its exact computations grow with max_len squared")
        shortest = next(k for k in range(1, len(self.states) + 1)  # a path visits each state once
                        if self.start @ self._finish_within(k) > 0)
        if value < shortest:
            raise ValueError(f"max_len = {value} is shorter than the shortest sentence the toy "
                             f"world writes ({shortest} words): no sentence could be drawn")
        self._max_len = value

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    # ------------------------------------------------------------------ sampling

    def sample(self, n: int, rng) -> list[list[str]]:
        """``n`` sentences (lists of words), drawn with a seed or a ``torch.Generator``."""
        n = whole(n, "n (the number of sentences)", least=0)
        gen = generator(rng)  # a seed that fits in 64 bits, or a torch.Generator
        out = []
        while len(out) < n:
            s = int(torch.multinomial(self.start, 1, generator=gen))
            words = []
            while True:
                words.append(self.words[int(torch.multinomial(self.emit[s], 1, generator=gen))])
                if self.stop[s] > 0 and torch.rand((), generator=gen) < self.stop[s]:
                    break
                s = int(torch.multinomial(self.trans[s], 1, generator=gen))
            if len(words) <= self.max_len:
                out.append(words)
        return out

    # ------------------------------------------------------------------ exact inference

    def _emissions(self, words: Sequence[str], masked: set[int]) -> torch.Tensor:
        """(T, S): e_s(x_t) at visible positions, 1 at masked ones (summed over every word)."""
        unknown = [w for w in words if w not in self.word_id]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not a word of the toy world")
        e = self.emit[:, [self.word_id[w] for w in words]].T.clone()  # (T, S)
        for t in masked:
            e[t] = 1.0
        return e

    def _check(self, words: Sequence[str], masked: Sequence[int]) -> tuple[list, list[int]]:
        """Checked input: a list of 1 to max_len words, distinct masked positions inside it."""
        words = items(words, "words", "words, e.g. 'the cat sat .'.split()", text=True)
        items(masked, "masked", "positions")
        if not 1 <= len(words) <= self.max_len:
            raise ValueError(f"this sentence is impossible: the toy world's sentences have 1 to "
                             f"max_len = {self.max_len} words, this one {len(words)}")
        return words, indices(masked, "masked", len(words), unique=True,
                              phrase="cannot mask position {p} in a {n}-token sentence")

    def _forward(self, e: torch.Tensor) -> torch.Tensor:
        """Scaled forward messages alpha, (T, S) with rows summing to 1; refuses P(words) = 0."""
        alpha = torch.zeros(len(e), len(self.states), dtype=torch.float64)
        a = self.start * e[0]
        for t in range(len(e)):
            if t:
                a = (alpha[t - 1] @ self.trans) * e[t]
            total = a.sum()
            if total == 0:
                raise ValueError(f"this sentence is impossible in the toy world (its words "
                                 f"cannot follow each other up to position {t})")
            alpha[t] = a / total
        if alpha[-1] @ self.stop == 0:
            raise ValueError("this sentence is impossible in the toy world (it cannot end after "
                             "its last word; the world's sentences end with '.')")
        return alpha

    def _messages(self, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scaled forward and backward messages (alpha, beta): (T, S) each, rows summing to 1."""
        T = len(e)
        alpha = self._forward(e)
        beta = torch.zeros(T, len(self.states), dtype=torch.float64)
        b = self.stop.clone()
        for t in range(T - 1, -1, -1):
            if t < T - 1:
                b = self.trans @ (e[t + 1] * beta[t + 1])
            beta[t] = b / b.sum() if b.sum() > 0 else b
        return alpha, beta

    def _finish_within(self, k: int) -> torch.Tensor:
        """(S,): P(the sentence ends within k more words, this one included | current state)."""
        f = torch.zeros(len(self.states), dtype=torch.float64)
        for _ in range(k):
            f = self.stop + self.trans @ f
        return f

    def unigram(self) -> torch.Tensor:
        """(V,): each word's share of all the words the world writes (no context at all)."""
        if self._unigram is None or self._unigram[0] != self.max_len:  # once per max_len:
            self._unigram = (self.max_len, self._word_shares())  # every "none" posterior uses it
        return self._unigram[1].clone()

    def _word_shares(self) -> torch.Tensor:
        p = self.start.clone()  # P(z_t = s, the sentence reaches position t)
        counts = torch.zeros(len(self.states), dtype=torch.float64)
        for t in range(self.max_len):
            counts += p * self._finish_within(self.max_len - t)  # only sentences kept
            p = p @ self.trans
        words = counts @ self.emit
        return words / words.sum()

    def posterior(self, words: Sequence[str], masked: Sequence[int],
                  context: str = "both") -> torch.Tensor:
        """``P(x_i = v | what the context shows)`` for each masked position: ``(|M|, V)``.

        ``context`` says what the reader sees besides the sentence's other masked blanks:
        ``"both"`` every visible word and the length (what BERT sees); ``"left"`` only the
        visible words to the left of each blank (what a left-to-right model sees: no words
        after it, no length); ``"none"`` nothing (the unigram frequencies, :meth:`unigram`).
        """
        words, masked = self._check(words, masked)
        one_of(context, "context", ("both", "left", "none"))
        e = self._emissions(words, set(masked))
        if context != "both":
            self._forward(e)  # the same checks: a sentence the world can write
            if context == "none":
                return self.unigram().expand(len(masked), -1).clone()
            return self._left_posterior(e, masked)
        alpha, beta = self._messages(e)
        gamma = alpha * beta  # (T, S), proportional to P(z_t = s | everything visible)
        gamma = gamma / gamma.sum(1, keepdim=True)
        return gamma[masked] @ self.emit  # (|M|, V)

    def _left_posterior(self, e: torch.Tensor, masked: list[int]) -> torch.Tensor:
        out = torch.zeros(len(masked), self.vocab_size, dtype=torch.float64)
        a = self.start.clone()  # P(z_t = s | the words before t), t = 0 first
        for t in range(max(masked, default=-1) + 1):
            if t in masked:
                z = a * self._finish_within(self.max_len - t)  # kept sentences only
                out[masked.index(t)] = (z / z.sum()) @ self.emit
            a = a * e[t]  # never all 0: posterior() has checked the sentence
            a = (a / a.sum()) @ self.trans
        return out

    def pair_posterior(self, words: Sequence[str], i: int, j: int,
                       masked: Sequence[int] = ()) -> torch.Tensor:
        """The exact joint ``P(x_i = a, x_j = b | visible words)``: a ``(V, V)`` table.

        ``i`` and ``j`` are hidden, as is every position in ``masked``. An MLM's loss scores
        the two blanks as if they were independent, with the product of the two rows of
        :meth:`posterior`; this is the joint that the product stands in for.
        """
        i, j = whole(i, "i"), whole(j, "j")
        if i == j:
            raise ValueError("the two positions of a pair must differ")
        i, j = sorted((i, j))
        words, masked = self._check(words, masked)
        words, hidden = self._check(words, sorted({*masked, i, j}))
        e = self._emissions(words, set(hidden))
        alpha, beta = self._messages(e)
        between = torch.eye(len(self.states), dtype=torch.float64)  # (S, S): z_i to z_j
        for t in range(i + 1, j + 1):
            between = (between @ self.trans) * e[t]
            between = between / between.sum()
        states = alpha[i][:, None] * between * beta[j][None, :]  # (S, S): P(z_i, z_j | .)
        states = states / states.sum()
        return self.emit.T @ states @ self.emit  # (V, V)

    def pair_information(self, words: Sequence[str], i: int, j: int,
                         masked: Sequence[int] = ()) -> float:
        r"""The mutual information of blanks ``i`` and ``j`` given the visible words, in nats.

        .. math::

            I = \sum_{a, b} P(a, b) \log \frac{P(a, b)}{P(a) P(b)} \ge 0

        It is what scoring the two blanks independently gives away on average: the mean of
        (sum of the two marginal ``-log P``) minus (the joint ``-log P``), over the world's
        own fillings of the two blanks. 0 when one blank tells nothing about the other.
        """
        joint = self.pair_posterior(words, i, j, masked)
        product = joint.sum(1)[:, None] * joint.sum(0)[None, :]
        seen = joint > 0
        return float((joint[seen] * (joint[seen] / product[seen]).log()).sum())

    def bayes_loss(self, sentences: Sequence[Sequence[str]],
                   masks: Sequence[Sequence[int]], context: str = "both") -> float:
        """The exact Bayes-optimal MLM loss: the mean of ``-log P(true word | visible)``.

        Averaged over every masked slot of every sentence (the "mean" reduction a trainer
        reports), with each sentence's masked positions given in ``masks``. ``context`` is as
        in :meth:`posterior`: ``"left"`` and ``"none"`` give the floors of a reader that sees
        less. Every sentence must be one the world can write, and one slot at least is needed.
        """
        sentences = items(sentences, "sentences", "sentences (each a list of words)")
        masks = items(masks, "masks", "masks (each a list of masked positions)")
        if len(sentences) != len(masks):
            raise ValueError(f"sentences and masks must have one entry each: {len(sentences)} "
                             f"sentences but {len(masks)} masks")
        total, count = 0.0, 0
        for k, (words, masked) in enumerate(zip(sentences, masks, strict=True)):
            words, masked = self._check(words, masked)
            try:  # the sentence itself, not only its visible words, must be possible
                self._forward(self._emissions(words, set()))
            except ValueError as err:
                raise ValueError(f"sentences[{k}] = {' '.join(map(str, words))!r}: {err}") from None
            if not masked:
                continue
            post = self.posterior(words, masked, context)
            truth = torch.tensor([self.word_id[words[i]] for i in masked])
            total -= post[torch.arange(len(masked)), truth].log().sum().item()
            count += len(masked)
        if not count:
            raise ValueError("masks hide no position at all: a mean loss over no slot is "
                             "undefined (it is not 0)")
        return total / count

    def landmarks(self, sentences: Sequence[Sequence[str]],
                  masks: Sequence[Sequence[int]]) -> dict[str, float]:
        """The three landmarks of an evaluation set, over its targets and the world's words.

        ``"uniform"``: ``log |V|`` for the toy world's words (the clueless guess);
        ``"unigram"``: the exact context-free floor (each word's true frequency,
        ``context="none"``); ``"floor"``: the Bayes-optimal loss with both sides visible.
        """
        return {"uniform": math.log(self.vocab_size),
                "unigram": self.bayes_loss(sentences, masks, context="none"),
                "floor": self.bayes_loss(sentences, masks)}


def compare_with_exact(exact: torch.Tensor, model: torch.Tensor) -> dict[str, torch.Tensor]:
    r"""How far a model's distributions are from the exact ones, slot by slot.

    ``exact`` and ``model`` are ``(slots, V)`` rows of probabilities over the same words (a
    model's row may sum to less than 1 when it also gives some probability to tokens that are
    not words, such as ``[SEP]``). Returns, per slot:

    * ``"kl"``: :math:`\mathrm{KL}(p \,\|\, q) = \sum_v p_v \log (p_v / q_v)`, in nats: how
      much loss the model pays above the floor on average over the true fillings of the slot;
    * ``"tv"``: the total variation :math:`\tfrac12 \sum_v |p_v - q_v|` (with the missing
      mass counted), the largest difference in probability the two give any set of words;
    * ``"impossible"``: the model's probability on what the exact posterior rules out.

    >>> p = torch.tensor([[0.5, 0.5, 0.0]])
    >>> {k: round(float(v), 4) for k, v in compare_with_exact(p, p).items()}
    {'kl': 0.0, 'tv': 0.0, 'impossible': 0.0}
    """
    try:
        p, q = (torch.as_tensor(x, dtype=torch.float64) for x in (exact, model))
    except (TypeError, ValueError, RuntimeError):  # a str, a ragged list, ...
        raise TypeError("exact and model must be (slots, V) tables of probabilities, got "
                        f"{type(exact).__name__} and {type(model).__name__}") from None
    if p.shape != q.shape or p.ndim != 2:
        raise ValueError(f"expected two (slots, V) tables of one shape, got {tuple(p.shape)} "
                         f"and {tuple(q.shape)}")
    if not (((p >= 0) & (p <= 1)).all() and ((q >= 0) & (q <= 1)).all()):  # NaN fails too
        raise ValueError("exact and model must hold probabilities in [0, 1]: none negative, "
                         "none above 1, none NaN")
    # a float32 softmax sums to 1 within about 1e-6; 1e-4 leaves room and still catches a table
    # that is not a distribution
    if ((p.sum(1) - 1).abs() > 1e-4).any() or (q.sum(1) > 1 + 1e-4).any():
        raise ValueError("each row of exact must sum to 1 and each row of model to 1 at most")
    seen = p > 0
    kl = torch.where(seen, p * (p / q.clamp_min(1e-300)).log(), torch.zeros_like(p)).sum(1)
    missing = (1 - q.sum(1)).clamp_min(0)  # the model's mass outside these words
    tv = 0.5 * ((p - q).abs().sum(1) + missing)
    impossible = torch.where(seen, torch.zeros_like(q), q).sum(1) + missing
    return {"kl": kl, "tv": tv, "impossible": impossible}
