"""mlmlib.constants - the values that several stages of the pipeline must agree on.

Does: names ``IGNORE_INDEX``, the label that marks "this position is not in M, do not score it".
It is PyTorch's own default (``torch.nn.CrossEntropyLoss().ignore_index == -100``), so labels
made by :mod:`mlmlib.masking` can go straight into PyTorch or Hugging Face code. And
``SPECIAL_TOKENS``, BERT's five special tokens in id order, which the tokenizer, the data and
the Hugging Face export all write.

Does not: hold anything else. It imports nothing, so the stages that must stay independent
(:mod:`mlmlib.masking` makes labels, :mod:`mlmlib.loss` reads them) can both use it.

>>> from mlmlib.constants import IGNORE_INDEX, SPECIAL_TOKENS
>>> IGNORE_INDEX, SPECIAL_TOKENS[0]
(-100, '[PAD]')
"""

#: The label that marks a position outside M, which losses skip (PyTorch's ``ignore_index``).
IGNORE_INDEX = -100

#: BERT's five special tokens in id order, so [PAD] is 0 and [MASK] is 4.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
