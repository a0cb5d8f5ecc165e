"""mlmlib.train - train a mini BERT, on one CPU or GPU or on several processes, and resume exactly.

Does: put a model and its data together and train them, refusing quietly wrong runs. One
module per part of the job; every name is importable from ``mlmlib.train`` itself:

* :mod:`mlmlib.train.config` - ``Recipe`` (what a run learns: resume compares it) and
  ``RunOptions`` (how it is run: resume leaves it free), every setting checked when it is made,
  ``toy_recipe``, the course's measured recipe for the toy world, and
  ``baseline_toy_recipe``, the one before it (the benchmark's baseline).
* :mod:`mlmlib.train.setup` - ``build_model`` (MiniBert, or Hugging Face's model behind the
  same call), ``configure_optimizer`` (AdamW and its schedule), ``pick_device`` and
  ``start_processes``; its docstring states the masked-LM protocol a model meets.
* :mod:`mlmlib.train.data` - ``TrainData``, the evaluation protocol ``eval_batch`` (at
  ``EVAL_RATE``), ``toy_data`` and ``text_data``.
* :mod:`mlmlib.train.trainer` - ``Trainer(model, data, recipe, run)``: the training step,
  the evaluation and ``fit``, a stop with ``DivergedError`` when the loss or the gradient turns
  NaN or infinite.
* :mod:`mlmlib.train.checkpoint` - a run saved and restored exactly, in checksummed, atomic
  files (``CheckpointError`` for a damaged one).
* :mod:`mlmlib.train.cli` - the command line: ``python -m mlmlib.train --help``.

Does not: define the model (:mod:`mlmlib.model`), the masking (:mod:`mlmlib.masking`) or the
corpora (:mod:`mlmlib.corpora`, :mod:`mlmlib.toyworld`).

>>> from mlmlib.train import Recipe
>>> Recipe(rate=0)
Traceback (most recent call last):
...
ValueError: rate (the share of tokens to predict) must be a number in (0, 1], got 0
"""

from mlmlib.train.checkpoint import CheckpointError, read_checkpoint
from mlmlib.train.config import Recipe, RunOptions, baseline_toy_recipe, toy_recipe
from mlmlib.train.data import EVAL_RATE, TrainData, eval_batch, text_data, toy_data
from mlmlib.train.setup import build_model, configure_optimizer, pick_device, start_processes
from mlmlib.train.trainer import DivergedError, Trainer

__all__ = ["EVAL_RATE", "CheckpointError", "DivergedError", "Recipe", "RunOptions", "TrainData",
           "Trainer", "baseline_toy_recipe", "build_model", "configure_optimizer", "eval_batch",
           "pick_device", "read_checkpoint", "start_processes", "text_data", "toy_data",
           "toy_recipe"]
