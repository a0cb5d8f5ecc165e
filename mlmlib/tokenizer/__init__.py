"""mlmlib.tokenizer - text to tokens to ids: BERT's basic and WordPiece tokenizers.

Does:

* ``basic_tokenize`` - BERT's "basic" step, before WordPiece: drop control, format and
  private-use characters, lower-case, strip accents, put spaces around CJK characters and
  split off every punctuation character (ASCII symbols such as ``$`` and ``^`` count, as in
  BERT). The special tokens ``[PAD] [UNK] [CLS] [SEP] [MASK]`` written in the text stay
  whole wherever they stand (``x[MASK]y`` gives ``x [MASK] y``), in exactly that spelling
  (``[mask]`` is three tokens), as in Hugging Face's tokenizers.
* ``WordVocab`` - a word-level vocabulary: the special tokens (ids 0-4), then the words
  of a corpus by falling count, ties in alphabetical order, so the same text always gives the
  same ids. Unknown words map to ``[UNK]``.
* ``WordPiece`` - BERT's tokenizer: the basic step, then each word split greedily into
  the longest pieces found in the vocabulary, continuation pieces written ``##piece``, and
  ``[UNK]`` for a word that cannot be split (one with an emoji newer than Python's Unicode
  database, say: such characters count as letters) or is longer than 100 characters.
* ``train_wordpiece`` - learn a WordPiece vocabulary of a given size from text by merging
  adjacent pieces: by default the most frequent pair (what Hugging Face's ``tokenizers``
  WordPiece trainer does), or by the WordPiece score ``count(ab) / (count(a) * count(b))``.

``WordPiece(vocab).encode(text)`` gives the ids of Hugging Face's ``BertTokenizerFast`` with
the same vocabulary (``add_special_tokens=False``) on any text: its Rust code reads characters
with other Unicode tables than Python's, so the small tables in
:mod:`mlmlib.tokenizer.basic` correct ``unicodedata`` where they differ. Like it, Greek capital
sigma always lower-cases to ``σ``, never ``ς``.

Two modules; every name is importable from ``mlmlib.tokenizer`` itself:
:mod:`mlmlib.tokenizer.basic` (the special tokens, the Unicode rules and the basic step) and
:mod:`mlmlib.tokenizer.wordpiece` (the vocabularies, WordPiece and its training).

Does not: read corpora (:mod:`mlmlib.corpora`), mask (:mod:`mlmlib.masking`), add ``[CLS]``
and ``[SEP]`` (:func:`mlmlib.corpora.pack_rows` does), or take text that is not valid Unicode
(a lone surrogate such as ``"\\ud800"`` is refused).

>>> basic_tokenize("Héllo, World! x^2")
['hello', ',', 'world', '!', 'x', '^', '2']
>>> basic_tokenize("The [MASK] sat, ΟΔΟΣ")
['the', '[MASK]', 'sat', ',', 'οδοσ']
>>> vocab = WordVocab.from_tokens(["the", "cat", "sat", "the"])
>>> vocab.encode(["the", "dog"])
[5, 1]
>>> wp = WordPiece([*SPECIAL_TOKENS, "em", "##bed", "##ding", "the"])
>>> wp.tokenize("The embedding embeds!")
['the', 'em', '##bed', '##ding', '[UNK]', '[UNK]']
>>> wp.tokenize("the [MASK] \\U0001FAE8")
['the', '[MASK]', '[UNK]']
"""

from mlmlib.tokenizer.basic import SPECIAL_TOKENS, basic_tokenize
from mlmlib.tokenizer.wordpiece import WordPiece, WordVocab, train_wordpiece

__all__ = ["SPECIAL_TOKENS", "WordPiece", "WordVocab", "basic_tokenize", "train_wordpiece"]
