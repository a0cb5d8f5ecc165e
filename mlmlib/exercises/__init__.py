"""mlmlib.exercises - checkers for the exercises: a verdict and a hint, never an exception.

Does: run a reader's answer (a function or a number) against the reference computed by
:mod:`mlmlib.loss`, give one clear verdict, and when the answer is wrong, recognise the usual
mistakes and say which one it looks like: a forgotten minus sign, ``log10`` (or ``log2``)
instead of the natural log, the probability instead of its ``-log``, the score of the top word
instead of the true one, summing over every word, softmax without subtracting the maximum (it
overflows at scores of 1000), ``-log`` of a softmax probability that underflows to 0 (a truth
scored 1000 below the top: ``logsumexp(s) - s_t`` is the loss). Each checker returns a
:class:`Verdict` - true when the answer is right, shown as its message in a notebook or by
``print`` - and never raises, whatever answer it is given (a string where a number is expected
gets "Not answered yet: ..."). The exercise's own settings, which the chapter passes in (the
scores, a rate, the measured losses), are checked too: a bad one raises a ``ValueError`` or
``TypeError`` that names it.

Does not: teach the answer - the chapters' solution dropdowns do that - or grade anything
outside the course.

One module per part of the book; every name is importable from ``mlmlib.exercises`` itself:

* :mod:`mlmlib.exercises.walkthrough` - the walkthrough, Steps 1-7 and the summary (the worked
  examples ask some of these again).
* :mod:`mlmlib.exercises.functions` - a reader's own softmax and loss functions, tried on
  scores of 1000 (worked example A).
* :mod:`mlmlib.exercises.worked` - the exercises that first appear in the worked examples.
* :mod:`mlmlib.exercises.step` - one training step by hand (the gradient at the scores, one
  AdamW step, a prediction about overfitting).
* :mod:`mlmlib.exercises.training` - the training chapters.
* :mod:`mlmlib.exercises.lab` - the exact lab (results over seeds, pointwise information).
* :mod:`mlmlib.exercises.encoder` - inside the encoder (attention weights by hand, the weights
  of one block, a gap over seeds).
* :mod:`mlmlib.exercises.knows` - what the model knows, exactly (the first layer a probe reads
  the hidden state at, a reader of the words against the block, a loss below or above its
  floor, how often a fresh mask repeats a fixed one).
* :mod:`mlmlib.exercises.scaling` - spans and scaling (spans and the floor, a power law's
  exponent and what its limit does to it).
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
from mlmlib.exercises.functions import check_mlm_loss, check_slot_loss, check_softmax
from mlmlib.exercises.knows import (
    check_block_beats_reader,
    check_first_layer,
    check_floor_side,
    check_formula_difference,
    check_formula_holds,
    check_probe_holds,
    check_probe_kl,
    check_repeat_share,
    check_repeat_side,
)
from mlmlib.exercises.lab import check_direction_over_seeds, check_pointwise_information
from mlmlib.exercises.scaling import (
    check_exponent_side,
    check_left_out_limit,
    check_limit_effect,
    check_limit_exponent,
    check_power_law_exponent,
    check_rise_side,
    check_span_effect,
    check_span_rise,
    check_trained_elsewhere,
)
from mlmlib.exercises.step import check_adamw_step, check_gap_prediction, check_score_gradient
from mlmlib.exercises.training import (
    bert_parameter_count,
    check_direction,
    check_excess_loss,
    check_parameter_count,
    check_perplexity,
    check_sentence_floor,
    check_speed_ratio,
)
from mlmlib.exercises.walkthrough import (
    check_empty_loss,
    check_hide,
    check_labels,
    check_loss_from_product,
    check_loss_value,
    check_missing_probability,
    check_probability_from_loss,
    check_score,
    check_truth_gradient,
)
from mlmlib.exercises.worked import (
    check_branch_counts,
    check_empty_probability,
    check_fresh_loss,
    check_random_branch_probability,
    check_slotwise_loss,
    check_tested_share,
    check_total_loss,
    check_unchanged_share,
)

__all__ = [
    "Verdict",
    "bert_parameter_count",
    "block_parameter_count",
    "check_adamw_step",
    "check_attention_weights",
    "check_block_beats_reader",
    "check_block_parameters",
    "check_branch_counts",
    "check_direction",
    "check_direction_over_seeds",
    "check_empty_loss",
    "check_empty_probability",
    "check_excess_loss",
    "check_exponent_side",
    "check_first_layer",
    "check_floor_side",
    "check_formula_difference",
    "check_formula_holds",
    "check_fresh_loss",
    "check_gap_prediction",
    "check_hide",
    "check_labels",
    "check_left_out_limit",
    "check_limit_effect",
    "check_limit_exponent",
    "check_loss_from_product",
    "check_loss_value",
    "check_missing_probability",
    "check_mlm_loss",
    "check_parameter_count",
    "check_perplexity",
    "check_pointwise_information",
    "check_power_law_exponent",
    "check_probability_from_loss",
    "check_probe_holds",
    "check_probe_kl",
    "check_random_branch_probability",
    "check_repeat_share",
    "check_repeat_side",
    "check_rise_side",
    "check_score",
    "check_score_gradient",
    "check_seed_gap",
    "check_sentence_floor",
    "check_slot_loss",
    "check_slotwise_loss",
    "check_softmax",
    "check_span_effect",
    "check_span_rise",
    "check_speed_ratio",
    "check_tested_share",
    "check_total_loss",
    "check_trained_elsewhere",
    "check_truth_gradient",
    "check_unchanged_share",
]
