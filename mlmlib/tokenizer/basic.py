"""mlmlib.tokenizer.basic - BERT's basic step: the special tokens, the Unicode rules, the split.

Does: :func:`basic_tokenize` cleans text, lower-cases and strips accents, and splits off
punctuation and CJK characters, deciding what each character is with Python's ``unicodedata``
corrected by small tables to the Unicode versions Hugging Face's tokenizers uses, so the two
agree on any text; and names BERT's special tokens, ``SPECIAL_TOKENS``.

Does not: split words into pieces (:mod:`mlmlib.tokenizer.wordpiece`).

>>> basic_tokenize("x[MASK]y, ΟΔΟΣ")
['x', '[MASK]', 'y', ',', 'οδοσ']
"""

from __future__ import annotations

import re
import string
import unicodedata
from functools import cache

from mlmlib import constants
from mlmlib._checks import flag, kind

__all__ = ["SPECIAL_TOKENS", "basic_tokenize"]

#: The five special tokens in id order, so [PAD] is 0 and [MASK] is 4 (defined once, in
#: :mod:`mlmlib.constants`).
SPECIAL_TOKENS = constants.SPECIAL_TOKENS

_SPECIAL_IN_TEXT = re.compile("(" + "|".join(map(re.escape, SPECIAL_TOKENS)) + ")")


def _code_points(ranges: str) -> frozenset[int]:
    """The code points of a list such as ``"7FD 898-89F"`` (hex; ranges inclusive)."""
    points: set[int] = set()
    for item in ranges.split():
        first, _, last = item.partition("-")
        points.update(range(int(first, 16), int(last or first, 16) + 1))
    return frozenset(points)


# Hugging Face's tokenizers tells punctuation, accents (Mn) and control characters apart with
# Unicode 8.0's tables (2015). Python files these later additions as Mn, P* or Cf; to Hugging
# Face they are letters. (Found by comparing the two on every code point, up to Unicode 17.0.)
_NEWER_THAN_UNICODE_8 = _code_points("""
5C8-5C9 61D 7FD 890-891 897-89F 8CA-8E2 9FD-9FE A76 AFA-AFF B53-B55 C04 C3C C77 C84 D00 D3B-D3C
D81 EBA ECE 180F 1885-1886 1ABF-1AF0 1B4E-1B4F 1B7D-1B7F 1DF6-1DFB 2E43-2E4F 2E52-2E5D 2E60-2E63
A82C A8C5 A8FF A9BD 10D24-10D27 10D69-10D6E 10EAB-10EAD 10ECB-10ED0 10EF0-10EFF 10F46-10F50
10F55-10F59 10F82-10F89 11070 11073-11074 110C2 110CD 111CF 1123E 11241 1133B 113BB-113C0 113CE
113D0 113D2 113D4-113D5 113D7-113D8 113E1-113E2 11438-1143F 11442-11444 11446 1144B-1144F
1145A-1145B 1145D-1145E 11660-1166C 116B9 1182F-11837 11839-1183B 1193B-1193C 1193E 11943-11946
119D4-119D7 119DA-119DB 119E0 119E2 11A01-11A0A 11A33-11A38 11A3B-11A47 11A51-11A56 11A59-11A5B
11A8A-11A96 11A98-11A9C 11A9E-11AA2 11B00-11B09 11B60 11B62-11B64 11B66 11BE1 11C30-11C36
11C38-11C3D 11C3F 11C41-11C45 11C70-11C71 11C92-11CA7 11CAA-11CB0 11CB2-11CB3 11CB5-11CB6
11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45 11D47 11D90-11D91 11D95 11D97 11DF0 11EF3-11EF4
11EF7-11EF8 11F00-11F01 11F36-11F3A 11F40 11F42-11F4F 11F5A 11FFF 12FF1-12FF2 13430-13440
13447-13455 1611E-16129 1612D-1612F 16D6D-16D6F 16E97-16E9A 16F4F 16FE2 16FE4 1CF00-1CF2D
1CF30-1CF46 1D127-1D128 1D25B-1D25C 1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A
1E08F 1E130-1E136 1E2AE 1E2EC-1E2EF 1E4EC-1E4EF 1E5EE-1E5EF 1E5FF 1E6E3 1E6E6 1E6EE-1E6EF 1E6F5
1E944-1E94A 1E95E-1E95F""")
# ... and these four changed category after Unicode 8.0; Hugging Face keeps the old one.
_CATEGORY_IN_UNICODE_8 = {0x166D: "Po", 0x1734: "Mn", 0x111C9: "Po", 0x1171E: "Mn"}
# It decomposes (NFD) with Unicode 9.0's tables, so it neither decomposes nor reorders these.
_NEWER_THAN_UNICODE_9 = re.compile("([{}])".format("".join(map(chr, sorted(_code_points("""
5C8-5C9 7FD 897-89F 8CA-8D3 9FE C3C D3B-D3C EBA 1715 1ABF-1AF0 1DF6-1DFA A82C 105C9 105E4
10D24-10D27 10D69-10D6D 10EAB-10EAC 10ECB-10ECF 10EF0-10EFB 10EFD-10EFF 10F46-10F50 10F82-10F85
11070 1133B 11383 11385 1138E 11391 113C5 113C7-113C8 113CE-113D0 1145E 11839-1183A 11938
1193D-1193E 11943 119E0 11A34 11A47 11A99 11D42 11D44-11D45 11D97 11F41-11F42 16121-16128 1612F
16D68-16D6A 16FF0-16FF1 1D127-1D128 1D250-1D252 1D25B-1D25C 1D25F 1D280-1D281 1E08F 1E130-1E136
1E2AE 1E2EC-1E2EF 1E4EC-1E4EF 1E5EE-1E5EF 1E6E3 1E6E6 1E6EE-1E6EF 1E6F5"""))))))
# It lower-cases with Rust's Unicode 17.0: these capitals are newer than Python 3.11's 14.0.
_NEWER_LOWER_CASE = {0x1C89: 0x1C8A, 0xA7CB: 0x0264, 0xA7CC: 0xA7CD, 0xA7CE: 0xA7CF,
                     0xA7D2: 0xA7D3, 0xA7D4: 0xA7D5, 0xA7DA: 0xA7DB, 0xA7DC: 0x019B,
                     **{cp: cp + 0x20 for cp in range(0x10D50, 0x10D66)},  # Garay
                     **{cp: cp + 0x1B for cp in range(0x16EA0, 0x16EB9)}}  # Beria Erfe


def _is_cjk(cp: int) -> bool:
    # BERT's list of CJK blocks, as Hugging Face has it (its Extension E starts at 0x2B920,
    # not 0x2B820, so 0x2B820-0x2B91F are ordinary letters there and here).
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B920 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


@cache
def _kind(ch: str) -> str:
    """What the basic step does with ``ch``: "space", "drop", "cjk", "punct", "mark" (Mn: an
    accent, stripped when lower-casing) or "char" (letters, and what Unicode 8.0 lacks)."""
    cp = ord(ch)
    category = _CATEGORY_IN_UNICODE_8.get(cp) or (
        "Cn" if cp in _NEWER_THAN_UNICODE_8 else unicodedata.category(ch))
    if ch in "\t\n\r" or (ch.isspace() and category != "Cc"):
        return "space"
    if cp in (0, 0xFFFD) or category in ("Cc", "Cf", "Co"):  # control, format, private use
        return "drop"
    if _is_cjk(cp):
        return "cjk"
    # BERT counts every ASCII symbol that is not a letter or digit ("$", "^", "`") as punctuation
    if category.startswith("P") or ch in string.punctuation:
        return "punct"
    return "mark" if category == "Mn" else "char"


def _words(text: str, lower: bool) -> list[str]:
    """The basic step on text without special tokens (Hugging Face's ``BertNormalizer`` and
    ``BertPreTokenizer``): clean, strip accents and lower-case, split off punctuation and CJK."""
    text = "".join({"space": " ", "drop": ""}.get(_kind(c), c) for c in text)
    if lower:  # NFD, then drop the accents, then lower-case one character at a time
        parts = _NEWER_THAN_UNICODE_9.split(text)  # odd parts: characters NFD leaves alone
        text = "".join(p if i % 2 else unicodedata.normalize("NFD", p)
                       for i, p in enumerate(parts))
        # per character, so Σ is always σ: Python's str.lower() would write a final ς
        text = "".join(c.lower() for c in text if _kind(c) != "mark")
        text = text.translate(_NEWER_LOWER_CASE)
    return "".join(f" {c} " if _kind(c) in ("punct", "cjk") else c for c in text).split()


def _has_words(text: str) -> bool:
    """Whether the basic step keeps anything of ``text``: a character that is not whitespace,
    a control, format or private-use character (dropped) or an accent (stripped)."""
    return any(_kind(c) not in ("space", "drop", "mark") for c in text)


def _check_text(text, name: str = "text") -> str:
    """A ``str`` of valid Unicode: a lone surrogate (``"\\ud800"``) cannot be UTF-8 encoded."""
    kind(text, name, str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"{name} holds a lone surrogate U+{ord(text[err.start]):04X} at index "
                         f"{err.start}: it is not valid Unicode text") from None
    return text


def basic_tokenize(text: str, lower: bool = True) -> list[str]:
    """Split text into words and punctuation the way BERT's basic tokenizer does."""
    _check_text(text)
    flag(lower, "lower")
    tokens = []
    for i, part in enumerate(_SPECIAL_IN_TEXT.split(text)):
        # the odd parts are special tokens written in the text: kept whole, never lower-cased
        tokens += [part] if i % 2 else _words(part, lower)
    return tokens
