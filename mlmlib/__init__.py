"""mlmlib - the library behind the executable course on masked language modeling (BERT).

One module per stage of the loss ``L_MLM = -sum_{i in M} log P(x_i | x_\\M)``:

* :mod:`mlmlib.masking` - hide: choose the set M and corrupt the input.
* :mod:`mlmlib.loss` - softmax, ``-log`` of the truth, sum over M.
* :mod:`mlmlib.model` - read both sides and score every word: the mini BERT.
* :mod:`mlmlib.tokenizer`, :mod:`mlmlib.corpora` and :mod:`mlmlib.toyworld` - the data: text to
  tokens to ids, corpora that need no download, and a toy language with an exact loss floor.
* :mod:`mlmlib.probe` - a linear probe: how much of a target distribution (the toy world's
  exact posterior over a blank's slot, say) a layer's features tell.
* :mod:`mlmlib.hf` - export to and import from Hugging Face's format (needs ``transformers``).
* :mod:`mlmlib.constants` - ``IGNORE_INDEX``, the one value the stages share.
* :mod:`mlmlib.plots` - the course's figures (never imported by the core).
* :mod:`mlmlib.exercises` - checkers for the chapters' exercises (never imported by the core).

``plots`` and ``exercises`` are subpackages with one module per part of the book (walkthrough,
worked, training); import their names from the package (``from mlmlib.plots import pipeline``).

Import the module you need (``from mlmlib.loss import softmax``); importing ``mlmlib`` alone
loads nothing heavy.
"""

__version__ = "0.1.0"
