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
stop). :meth:`ToyWorld.slot_posterior` gives the slot part of it, ``P(z_i = s | visible
tokens)``, at masked or visible positions: what a model would have to know about a blank's
grammar, exactly (a probe's target).

The same messages answer the course's exact experiments: the floor of a reader that sees
less (``context="left"``: only the words before the blank, as a left-to-right model;
``"none"``: nothing, the unigram frequencies), and the joint posterior of two blanks
(:meth:`ToyWorld.pair_posterior`), whose mutual information
(:meth:`ToyWorld.pair_information`) is exactly what an MLM gives away by scoring two blanks
independently. :func:`compare_with_exact` measures how far a model's predictions are from the
exact posterior.

Three modules; every name is importable from ``mlmlib.toyworld`` itself:
:mod:`mlmlib.toyworld.grammar` (the words, the slots and their order),
:mod:`mlmlib.toyworld.world` (the hidden Markov model, sampling and exact inference) and
:mod:`mlmlib.toyworld.compare` (a model against the exact answers).

Does not: tokenize into sub-words (the toy world's tokens are whole words) or train anything,
or answer for a sentence it cannot write (it says why: a word, the order, the length).

>>> world = ToyWorld()
>>> " ".join(world.sample(2, rng=0)[0])
'a small boy sat on their river .'
>>> post = world.posterior(["the", "small", "cat", "barked", "."], masked=[2])
>>> [world.words[int(i)] for i in post[0].topk(2).indices]
['cat', 'dog']
>>> slots = world.slot_posterior(["the", "small", "cat", "sat", "."], masked=[2])
>>> {world.states[s]: round(float(p), 3) for s, p in enumerate(slots[0]) if p > 0}
{'animal': 0.518, 'person': 0.482}
"""

from mlmlib.toyworld.compare import compare_with_exact

# the grammar's tables stay importable from the package (not in __all__: no API entry)
from mlmlib.toyworld.grammar import LEXICON as LEXICON
from mlmlib.toyworld.grammar import MAX_LEN as MAX_LEN
from mlmlib.toyworld.grammar import STATES as STATES
from mlmlib.toyworld.grammar import TRANSITIONS as TRANSITIONS
from mlmlib.toyworld.world import ToyWorld

__all__ = ["ToyWorld", "compare_with_exact"]

# The public names belong to the package, where the chapters import them from: the API page
# documents them, and cross-references and type hints name them, as mlmlib.toyworld.ToyWorld
# (as when the toy world was one module), not mlmlib.toyworld.world.ToyWorld.
for _obj in (ToyWorld, compare_with_exact):
    _obj.__module__ = __name__
del _obj
