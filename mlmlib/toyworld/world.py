r"""mlmlib.toyworld.world - the toy world itself: sampling, and exact inference.

Does: :class:`~mlmlib.toyworld.ToyWorld` builds the hidden Markov model of
:mod:`mlmlib.toyworld.grammar` (its start, transition, stop and emission tables, as float64
tensors), draws sentences from it with a seed, and answers every exact question the course
asks of it from the scaled forward and backward messages :math:`\alpha_t(s)` and
:math:`\beta_t(s)`: the posterior over a blank's words and over its slot, the joint of two
blanks and their mutual information, and the Bayes-optimal loss of a set of masked sentences.

Does not: hold the grammar's tables (:mod:`mlmlib.toyworld.grammar`), compare a model with
the exact answers (:mod:`mlmlib.toyworld.compare`), or train anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from mlmlib._checks import generator, indices, items, one_of, whole
from mlmlib.toyworld.grammar import LEXICON, MAX_LEN, STATES, TRANSITIONS


class ToyWorld:
    """A hidden Markov model that writes little English sentences, with exact posteriors.

    Its tables are float64 tensors over the ``S`` hidden states and the ``V`` words: ``start``
    ``(S,)``, ``trans`` ``(S, S)`` (from row to column), ``stop`` ``(S,)`` (the probability
    that the sentence ends after each state) and ``emit`` ``(S, V)``. ``states`` names the
    states, the grammatical slots (``"det_s"``, ``"animal"``, ...), in the order of the
    tables' rows and of :meth:`slot_posterior`'s columns; ``words`` lists the words, sorted,
    and ``word_id`` maps each word to its index.
    """

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
        return self._slots(e)[masked] @ self.emit  # (|M|, V)

    def slot_posterior(self, words: Sequence[str], masked: Sequence[int],
                       positions: Sequence[int] | None = None) -> torch.Tensor:
        r"""``P(z_i = s | visible words)`` at each of ``positions``: ``(len(positions), S)``.

        The exact posterior over the hidden state (the grammatical slot) at position ``i``,
        given every word outside ``masked`` and the sentence's length, from the same messages
        as :meth:`posterior`:

        .. math::

            P(z_i = s \mid \mathbf{x}_{\setminus M}) =
            \frac{\alpha_i(s) \, \beta_i(s)}{\sum_{s'} \alpha_i(s') \, \beta_i(s')}

        Each row sums to 1; the columns follow ``states``. ``positions`` defaults to
        ``masked`` (then ``slot_posterior(...) @ emit`` is :meth:`posterior`), and may also
        name visible positions, where the word itself nearly settles the slot ("cat" is an
        ``animal``; "sat" is one of two kinds of verb, which the noun before it decides).
        """
        words, masked = self._check(words, masked)
        if positions is not None:
            positions = indices(positions, "positions", len(words),
                                phrase="positions: position {p} is outside the {n}-token "
                                       "sentence (positions are 0..{last})")
        e = self._emissions(words, set(masked))
        return self._slots(e)[masked if positions is None else positions]  # (|positions|, S)

    def _slots(self, e: torch.Tensor) -> torch.Tensor:
        """(T, S): P(z_t = s | everything visible), each row the normalised alpha * beta."""
        alpha, beta = self._messages(e)
        gamma = alpha * beta  # (T, S), proportional to P(z_t = s | everything visible)
        return gamma / gamma.sum(1, keepdim=True)

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
                   masks: Sequence[Sequence[int]], context: str = "both",
                   reduction: str = "mean") -> float | torch.Tensor:
        """The exact Bayes-optimal MLM loss: the mean of ``-log P(true word | visible)``.

        Averaged over every masked slot of every sentence (the "mean" reduction a trainer
        reports), with each sentence's masked positions given in ``masks``. ``context`` is as
        in :meth:`posterior`: ``"left"`` and ``"none"`` give the floors of a reader that sees
        less. Every sentence must be one the world can write, and one slot at least is needed.
        ``reduction="none"`` returns the slots' losses instead, as a float64 tensor in the order
        of the sentences and of each sentence's ``masks`` (their mean is the floor).
        """
        one_of(reduction, "reduction", ("mean", "none"))
        sentences = items(sentences, "sentences", "sentences (each a list of words)")
        masks = items(masks, "masks", "masks (each a list of masked positions)")
        if len(sentences) != len(masks):
            raise ValueError(f"sentences and masks must have one entry each: {len(sentences)} "
                             f"sentences but {len(masks)} masks")
        losses = []
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
            losses.append(-post[torch.arange(len(masked)), truth].log())
        if not losses:
            raise ValueError("masks hide no position at all: a mean loss over no slot is "
                             "undefined (it is not 0)")
        losses = torch.cat(losses)  # (slots,) float64
        return losses if reduction == "none" else losses.sum().item() / len(losses)

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

