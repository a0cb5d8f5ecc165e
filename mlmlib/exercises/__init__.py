"""mlmlib.exercises - checkers for the exercises: a verdict and a hint, never an exception.

Does: run a reader's answer (a function or a number) against the reference computed by
:mod:`mlmlib.loss`, give one clear verdict, and when the answer is wrong, recognise the usual
mistakes and say which one it looks like: a forgotten minus sign, ``log10`` (or ``log2``)
instead of the natural log, the probability instead of its ``-log``, the score of the top word
instead of the true one, summing over every word, softmax without subtracting the maximum (it
overflows at scores of 1000). Each checker returns a :class:`Verdict` - true when the answer
is right, shown as its message in a notebook or by ``print`` - and never raises, whatever
answer it is given (a string where a number is expected gets "Not answered yet: ..."). The
exercise's own settings, which the chapter passes in (the scores, a rate, the measured losses),
are checked too: a bad one raises a ``ValueError`` or ``TypeError`` that names it.

Does not: teach the answer - the chapters' solution dropdowns do that - or grade anything
outside the course.

One module per part of the book; every name is importable from ``mlmlib.exercises`` itself:

* :mod:`mlmlib.exercises.walkthrough` - the walkthrough, Steps 1-7 and the summary (the worked
  examples ask some of these again).
* :mod:`mlmlib.exercises.worked` - the exercises that first appear in the worked examples.
* :mod:`mlmlib.exercises.training` - the training chapters.
* :mod:`mlmlib.exercises.lab` - the exact lab (results over seeds, pointwise information).
* :mod:`mlmlib.exercises.encoder` - inside the encoder (attention weights by hand, the weights
  of one block, a gap over seeds).
* ``mlmlib.exercises._common`` - :class:`Verdict` and the number checks they share.

>>> from mlmlib.exercises import check_loss_value
>>> check_loss_value(0.6265, scores=[1, 2, 0, 1], target=1)
Correct: 0.6265 matches -log P = 0.6265.
"""

from mlmlib.exercises._common import Verdict
from mlmlib.exercises.encoder import (
    block_parameter_count,
    check_attention_weights,
    check_block_parameters,
    check_seed_gap,
)
from mlmlib.exercises.lab import check_direction_over_seeds, check_pointwise_information
from mlmlib.exercises.training import (
    bert_parameter_count,
    check_direction,
    check_excess_loss,
    check_parameter_count,
    check_perplexity,
    check_speed_ratio,
)
from mlmlib.exercises.walkthrough import (
    check_empty_loss,
    check_hide,
    check_labels,
    check_loss_from_product,
    check_loss_value,
    check_missing_probability,
    check_mlm_loss,
    check_probability_from_loss,
    check_slot_loss,
    check_softmax,
)
from mlmlib.exercises.worked import (
    check_branch_counts,
    check_empty_probability,
    check_random_branch_probability,
    check_total_loss,
)

__all__ = [
    "Verdict",
    "bert_parameter_count",
    "block_parameter_count",
    "check_attention_weights",
    "check_block_parameters",
    "check_branch_counts",
    "check_direction",
    "check_direction_over_seeds",
    "check_empty_loss",
    "check_empty_probability",
    "check_excess_loss",
    "check_hide",
    "check_labels",
    "check_loss_from_product",
    "check_loss_value",
    "check_missing_probability",
    "check_mlm_loss",
    "check_parameter_count",
    "check_perplexity",
    "check_pointwise_information",
    "check_probability_from_loss",
    "check_random_branch_probability",
    "check_seed_gap",
    "check_slot_loss",
    "check_softmax",
    "check_speed_ratio",
    "check_total_loss",
]
