"""mlmlib.constants - the one number that two stages of the pipeline must agree on.

Does: names ``IGNORE_INDEX``, the label that marks "this position is not in M, do not score it".
It is PyTorch's own default (``torch.nn.CrossEntropyLoss().ignore_index == -100``), so labels
made by :mod:`mlmlib.masking` can go straight into PyTorch or Hugging Face code.

Does not: hold anything else. It imports nothing, so the stages that must stay independent
(:mod:`mlmlib.masking` makes labels, :mod:`mlmlib.loss` reads them) can both use it.

>>> from mlmlib.constants import IGNORE_INDEX
>>> IGNORE_INDEX
-100
"""

#: The label that marks a position outside M, which losses skip (PyTorch's ``ignore_index``).
IGNORE_INDEX = -100
