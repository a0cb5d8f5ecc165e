"""mlmlib.corpora - text that needs no download: the CPython documentation, as documents.

Does: load the documentation that ships inside every CPython installation
(``pydoc_data.topics``: the language reference's topics, as ``help()`` shows them) as a list
of named documents, and turn a list of documents into word tokens with BERT's basic
tokenizer. The text depends on the Python version, so counts made from it differ slightly
between Python versions (the course's checked outputs use Python 3.11).

Does not: download anything, or batch and mask (:mod:`mlmlib.masking` does the masking).

>>> docs = python_docs()
>>> docs[0].name, docs[0].text.split()[:2]
('assert', ['The', '"assert"'])
"""

from __future__ import annotations

from typing import NamedTuple

from mlmlib.tokenizer import basic_tokenize

__all__ = ["Document", "python_docs", "tokens_of"]


class Document(NamedTuple):
    name: str
    text: str


def python_docs() -> list[Document]:
    """The CPython documentation topics that ship with Python, sorted by name."""
    from pydoc_data.topics import topics

    return [Document(name, topics[name]) for name in sorted(topics)]


def tokens_of(documents: list[Document], lower: bool = True) -> list[str]:
    """Every word and punctuation token of the documents, in order."""
    tokens: list[str] = []
    for doc in documents:
        tokens.extend(basic_tokenize(doc.text, lower=lower))
    return tokens
