"""mlmlib's WordPiece gives Hugging Face's ids, id for id, on hostile text; bad input is refused.

The hostile set: hand-picked strings (special tokens typed in the text, every kind of Unicode
space, zero-width and control characters, combining marks, emoji sequences, CJK extensions,
characters newer than Python's Unicode database, Greek sigma, Turkish I, very long words, ...)
plus strings a seeded generator glues together from the same kinds of pieces, plus runs of
random code points. Each one is encoded by ``WordPiece`` and by ``transformers``'
``BertTokenizerFast`` built offline from the same vocabulary, lower-cased and cased.
"""

import random
import tempfile
import unicodedata
from pathlib import Path

import pytest
from transformers import BertTokenizerFast

from mlmlib.tokenizer import SPECIAL_TOKENS, WordPiece, WordVocab, basic_tokenize, train_wordpiece

CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's 3.14 or 1,000,000 - who knows?",
    "Visit https://example.com/path?q=1&lang=en#top or write to first.last+tag@example.co.uk",
    "Café naïve résumé façade coöperate Ångström Straße Öl über déjà vu",
    "Η γρήγορη καφέ αλεπού πηδά ΟΔΟΣ σοφός ΣΟΦΟΣ λόγος",
    "Съешь же ещё этих мягких французских булок, да выпей чаю",
    "İstanbul ılık ışık IĞDIR iğne",
    "我们今天去公园散步 日本語のテキストです カタカナ ひらがな",
    "안녕하세요 세계 한국어 문장입니다",
    "สวัสดีครับ ภาษาไทย ไม่มีช่องว่าง",
    "مرحبا بالعالم هذه جملة عربية",
    "नमस्ते दुनिया यह हिंदी वाक्य है",
    "emoji 🙂 👍🏽 ❤️ 🇺🇸 🎉 here and there, the end!",
    "ﬁne ﬂow Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ½ ² ①",
]
# Pieces for hostile characters, so that their words can match as well as fall to [UNK]
EXTRA = ["🫨", "##🫨", "🙂", "##🙂", "\U00020000", "\U0002b820", "##\U0002b820", "\U00031350",
         "\uffff", "##\uffff", "σ", "ς", "##σ", "##ς", "σας", "οδοσ", "οδος", "ɤ", "\U00010d70",
         "a\u07fd", "##\u07fd", "\u0301", "##\u0301", "e\u0301", "i\u0307", "ı", "ß", "ﬁ", "ａ",
         "ǆ", "ǅ", "mask", "Mask", "MASK", "[", "]", "x", "##x", "y", "##y", "a" * 100,
         "\u1c8a", "\U00016ebb", "\u2e43", "\u061d", "\u166d", "##\u1ac1", "k", "K", "Å", "å"]


def build_vocab(lower: bool) -> list[str]:
    trained = train_wordpiece(CORPUS, vocab_size=700, lower=lower).vocab
    return list(dict.fromkeys([*trained, *EXTRA]))


def char_vocab(texts: list[str]) -> list[str]:
    """Every character of ``texts`` (also after NFD and lower-casing), alone and as ``##c``.

    Then hardly a word is [UNK], so the comparison sees every character of the normalized text.
    """
    chars = sorted({c for t in texts for form in (t, unicodedata.normalize("NFD", t).lower())
                    for c in form if not c.isspace() and c not in "\r\n"})
    return list(dict.fromkeys([*SPECIAL_TOKENS, *chars, *("##" + c for c in chars)]))


def cases() -> list[str]:
    """The hostile set: hand-picked strings, then seeded mixtures and random code points."""
    specials = ["[MASK]", "[mask]", "[Mask]", "[MASK ]", "[ MASK]", "[CLS]", "[SEP]", "[PAD]",
                "[UNK]", "[unk]", "[MASK", "MASK]", "[[MASK]]", "[MA\u200bSK]", "[MA\x00SK]",
                "[\uff2dASK]", "［MASK］"]
    spaces = [" ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u00a0",
              "\u1680", "\u180e", *map(chr, range(0x2000, 0x200b)), "\u2028", "\u2029",
              "\u202f", "\u205f", "\u3000", "\ufeff"]
    invisible = ["\x00", "\x01", "\x1b", "\x7f", "\x9f", "\u00ad", "\u061c", "\u200b", "\u200c",
                 "\u200d", "\u200e", "\u202e", "\u2060", "\u2066", "\ufff9", "\ue000",
                 "\U000f0000", "\U0010fffd", "\U000e0001", "\U000e0041", "\ufffd"]
    marks = ["\u0301", "\u0308", "\u0316", "\u0334", "\u0345", "\u0363", "\u07fd", "\u0898",
             "\u1ac1", "\u1dfa", "\u20dd", "\u302a", "\u3099", "\ufe0f", "\U0001e944",
             "\U0001e94a", "\U00011938", "\U0001d165", "\U000e0100", "\u1734", "\u111c9"]
    words = ["the", "The", "THE", "cat", "naïve", "nai\u0308ve", "ΟΔΟΣ", "σοφός", "ΣΑΣ", "Σ",
             "ς", "İstanbul", "IĞDIR", "ı", "Straße", "STRASSE", "ẞ", "ﬁne", "Ｆｕｌｌ",
             "Ǆǅǆ", "\u212a", "\u212b", "\u2126", "안녕", "하세요", "\u1100\u1161\u11a8",
             "สวัสดี", "ไม่", "مرحبا", "لا", "नमस्ते", "क्षि", "我们", "日本語", "\U00020000\U00020001",
             "\U0002a6df", "\U0002b740", "\U0002b81f", "\U0002b820", "\U0002b91f", "\U0002b920",
             "\U0002ceaf", "\U0002ceb0", "\U0002ebf0", "\U00030000", "\U00031350", "\u3400",
             "\uf900", "\ufa6e", "\U0002f800", "ｶﾀｶﾅ", "カタカナ", "mask", "a" * 99, "a" * 100,
             "a" * 101, "ab" * 60, "\ua7cb", "\U00010d50", "\u1c89", "\U00016ea0", "𝐀𝐁𝐂",
             "\u0130", "i\u0307", "emoji"]
    emoji = ["🙂", "👍🏽", "👩‍👩‍👧‍👦", "🏳️‍🌈", "🇺🇸", "🇬🇧🇫🇷", "❤️", "1️⃣", "🫨", "🫠", "🪿",
             "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "\U0001fae8",
             "\U0001f9d1\u200d\U0001f4bb", "👋🏿", "\u263a\ufe0e"]
    odd = ["\uffff", "\ufffe", "\ufdd0", "\ufdef", "\U0001ffff", "\U0010ffff", "\u0378",
           "\u0e3b", "\U000e01f0", "\U0002fffe", "\u2fff", "\u1ffe"]
    punct = ["...", "?!", "—", "–", "«»", "¿¡", "、。", "！？", "@#$%^&*()", "\u2e43", "\u061d",
             "‽", "…", "''", '"', "`~", "\\", "|", "\u166d", "\U000111c9", "\u2e5d", "\u00b7",
             "©®™", "°", "€$¥", "+-=<>", "/", "_", "\u0589", "\u05be", "\u2010\u2011"]
    numbers = ["3.14", "1,000,000", "١٢٣", "१२३", "①", "²", "½", "0x1F", "10e-3", "٫", "๑๒"]
    web = ["https://example.com/a?b=c&d=e#f", "user.name+tag@example.co.uk", "ftp://x.y/z",
           "http://[::1]:8080/", "mailto:someone@example.org", "www.ex-ample.org/~user/"]

    hand = [
        "", " ", "\t\n\r", "the [MASK] sat", "The [MASK] sat on the [MASK].", "[MASK]",
        "[MASK] starts", "ends [MASK]", "x[MASK]y", "[MASK][MASK]", " [MASK] ", "[mask]",
        "[Mask] mixed", "[CLS] a [SEP] b [SEP] [PAD] [PAD]", "[UNK] [unk]", "[ MASK ]",
        "the\u00a0[MASK]\u3000sat", "ΟΔΟΣ[MASK]ΣΑΣ", "\u0301[MASK]\u0301", "[MASK]\u0301a",
        "ΣΑΣ ΟΔΟΣ σοφός Σ", "ΌΣΟΣ.", "\u0130stanbul \u0131l\u0131k", "Straße STRASSE ẞ",
        "ﬁne ﬂow ﬃ", "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ", "\u0301start", "\u0301", "\u0301\u0308\u0316",
        "a\u0316\u0301b", "a\u0301\u0316b", "a\u07fd\u0301b", "a\u0345\u0334b",
        "a\U0001e94a\U0001e944b", "a\U0001e944\U0001e94ab", "\U00011938", "\U00011935\U00011930",
        "e\u0301 é e\u0301\u0301", "\ufffd", "a\ufffdb", "\x00", "a\x00b", "tab\tnew\nline\r",
        "\u2028para\u2029graph", "no\u200bspace", "soft\u00adhyphen", "zero\u200dwidth\u200cjoin",
        "x" * 150, "x" * 100, "x" * 101, "é" * 100, "e\u0301" * 60, "a--b...c!?",
        "!!!???...,,,;;;", "((()))[[[]]]{{{}}}", "1,234.56 -7 +8e9 0x1f 3/4",
        "https://example.com/path?q=1&x=2#frag", "first.last+tag@example.co.uk",
        "emoji 🙂 here", "👩‍👩‍👧‍👦🏳️‍🌈🇺🇸👍🏽", "🫨🫨", "a🫨b", "\U0001fae8 new", "🙂🙂",
        "\uffff", "a\uffffb", "\U0010ffff", "\ue000private", "中文 and 日本語", "한국어 문장",
        "ภาษาไทยไม่มีช่องว่าง", "مرحبا بالعالم", "नमस्ते दुनिया", "mixed中文text日本",
        "Ωmega Kelvin\u212a", "中[MASK]文", "[MASK].", "¿[MASK]?", "[SEP]\n[CLS]\t[MASK]",
        "a" * 97 + "[MASK]" + "b" * 97, "[MASK]" + "x" * 101, "\U0001fae8[MASK]\U0001fae8",
        "\U0002b820\U0002b91f\U0002b920", "\U00031350\U00030000", "ｶﾀｶﾅ ﾞﾟ", "\ua7cb\U00010d50\u1c89",
        "\u2e43\u061d\u166d\U000111c9", "a\u1734b", "a\u1ac1b", "\u180e", "a\u180eb",
        "a\u1680b\u2000c\u200ad\u3000e", "\x85\x0b\x0c\x1c\x1d\x1e\x1f", "a\x85b",
        "\U000e0001\U000e0041tag", "\u202eevil\u202c", "tricky\u2066isolate\u2069",
    ]
    rng = random.Random(20240531)
    pools = [specials, spaces, invisible, marks, words, emoji, odd, punct, numbers, web]
    mixed = []
    for _ in range(260):
        parts = [rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 8))]
        glue = rng.choice(["", " ", rng.choice(spaces)])
        mixed.append(glue.join(parts))
    points = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    random_points = ["".join(chr(rng.choice(points)) for _ in range(rng.randint(1, 6)))
                     for _ in range(120)]
    return hand + mixed + random_points


HOSTILE = cases()


@pytest.fixture(scope="module", params=[("trained", True), ("trained", False),
                                        ("chars", True), ("chars", False)],
                ids=["trained-lower", "trained-cased", "chars-lower", "chars-cased"])
def pair(request):
    kind, lower = request.param
    vocab = build_vocab(lower) if kind == "trained" else char_vocab(HOSTILE)
    ours = WordPiece(vocab, lower=lower)
    theirs = BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=lower)
    return ours, theirs


def test_the_hostile_set_is_big_and_reproducible():
    assert len(HOSTILE) >= 300 and HOSTILE == cases()


def test_same_ids_as_hugging_face_on_hostile_text(pair):
    ours, theirs = pair
    wrong, unknown, known = [], 0, 0
    for text in HOSTILE:
        mine = ours.encode(text)
        hf = theirs(text, add_special_tokens=False)["input_ids"]
        if mine != hf:
            shown = repr(text) if text.isascii() else f"{text!r} = {text!a}"
            wrong.append(f"{shown}\n  mlmlib: {ours.decode(mine)}\n"
                         f"  HF:     {theirs.convert_ids_to_tokens(hf)}")
        unknown += mine.count(ours.token_id("[UNK]"))
        known += len(mine) - mine.count(ours.token_id("[UNK]"))
    assert not wrong, f"{len(wrong)} of {len(HOSTILE)} differ:\n" + "\n".join(wrong[:20])
    assert unknown >= 10 and known > 2500, (unknown, known)  # both pieces and [UNK] are used


@pytest.mark.parametrize(("text", "lower", "tokens"), [
    ("the [MASK] sat", True, ["the", "[MASK]", "sat"]),
    ("x[MASK]y", True, ["x", "[MASK]", "y"]),
    ("the [mask] sat", True, ["the", "[", "mask", "]", "sat"]),  # only the exact spelling
    ("[Mask]", False, ["[", "Mask", "]"]),
    ("[MA\u200bSK]", False, ["[", "MASK", "]"]),  # matched before the text is cleaned
    ("ΟΔΟΣ", True, ["οδοσ"]),  # Σ is always σ, as in Hugging Face (Python's lower() gives ς)
    ("a🫨b \uffff \U0002b820x", True, ["a🫨b", "\uffff", "\U0002b820x"]),  # letters, not dropped
    ("a\u2e43b", True, ["a\u2e43b"]),  # punctuation since Unicode 9.0: a letter to HF
    ("\u0130\u0131", True, ["iı"]),
    ("tab\tnew\u2028line\x0bgone\u200b", False, ["tab", "new", "linegone"]),
])
def test_basic_step_examples(text, lower, tokens):
    assert basic_tokenize(text, lower=lower) == tokens


def test_unknown_characters_become_unk_not_nothing():
    wp = WordPiece([*SPECIAL_TOKENS, "hi", "🙂"])  # 🫨 (U+1FAE8) is newer than Python 3.11
    assert wp.tokenize("hi 🫨 🙂 \uffff hi") == ["hi", "[UNK]", "🙂", "[UNK]", "hi"]
    assert wp.tokenize("[MASK]" * 30) == ["[MASK]"] * 30  # never a word longer than 100


def test_vocab_file_keeps_odd_tokens(tmp_path):
    wp = WordPiece([*SPECIAL_TOKENS, "a\u2028b", "\x85", "\u3000x", "ß"])
    wp.save(tmp_path / "vocab.txt")
    assert WordPiece.from_file(tmp_path / "vocab.txt").vocab == wp.vocab
    (tmp_path / "crlf.txt").write_bytes("\r\n".join([*SPECIAL_TOKENS, "a"]).encode() + b"\r\n")
    assert WordPiece.from_file(tmp_path / "crlf.txt").vocab == [*SPECIAL_TOKENS, "a"]


def test_decode_takes_numpy_and_torch_integers():
    import numpy as np
    import torch

    wp = WordPiece([*SPECIAL_TOKENS, "a"])
    assert wp.decode(torch.tensor([5, 4])) == ["a", "[MASK]"]
    assert wp.decode(np.array([5, 1])) == ["a", "[UNK]"]


# ----------------------------------------------------------------------------- bad input

WP = WordPiece([*SPECIAL_TOKENS, "a", "##b"])
WV = WordVocab.from_tokens(["a", "b"])


def not_utf8() -> Path:
    path = Path(tempfile.mkdtemp()) / "vocab.txt"
    path.write_bytes(b"[PAD]\n\xff\xfe\n")
    return path


case = pytest.param


@pytest.mark.parametrize(("call", "error", "words"), [
    case(lambda: train_wordpiece("one long text", 100), TypeError, ["texts", "list of texts"],
         id="train_wordpiece-str"),
    case(lambda: train_wordpiece(b"bytes", 100), TypeError, ["texts", "bytes"],
         id="train_wordpiece-bytes"),
    case(lambda: train_wordpiece(42, 100), TypeError, ["texts", "int"], id="train_wordpiece-int"),
    case(lambda: train_wordpiece(["ok", 3], 100), TypeError, ["texts[1]", "int"],
         id="train_wordpiece-item-int"),
    case(lambda: train_wordpiece(["a"], 0), ValueError, ["vocab_size", "positive", "got 0"],
         id="vocab_size-zero"),
    case(lambda: train_wordpiece(["a"], -5), ValueError, ["vocab_size", "-5"],
         id="vocab_size-negative"),
    case(lambda: train_wordpiece(["a"], 10.5), TypeError, ["vocab_size", "whole number"],
         id="vocab_size-float"),
    case(lambda: train_wordpiece(["a"], True), TypeError, ["vocab_size", "whole number"],
         id="vocab_size-bool"),
    case(lambda: train_wordpiece(["hello world"], 10), ValueError, ["vocab_size 10",
         "smaller than"], id="vocab_size-too-small"),
    case(lambda: train_wordpiece(["a"], 100, min_count=0), ValueError, ["min_count",
         "positive", "got 0"], id="min_count-zero"),
    case(lambda: train_wordpiece(["a"], 100, min_count=1.5), TypeError, ["min_count",
         "whole number"], id="min_count-float"),
    case(lambda: train_wordpiece(["a b"], 100, min_count=5), ValueError, ["min_count=5"],
         id="min_count-above-every-count"),
    case(lambda: train_wordpiece(["a"], 100, lower="yes"), TypeError, ["lower", "'yes'"],
         id="train_wordpiece-lower-str"),
    case(lambda: train_wordpiece(["a"], 100, score="bpe"), ValueError, ["score", "'bpe'"],
         id="score-unknown"),
    case(lambda: train_wordpiece(["", " [MASK] "], 100), ValueError, ["empty"],
         id="train_wordpiece-nothing-but-specials"),
    case(lambda: train_wordpiece(["a\ud800"], 100), ValueError, ["surrogate", "U+D800"],
         id="train_wordpiece-surrogate"),
    case(lambda: basic_tokenize(None), TypeError, ["text", "nonetype"], id="basic-none"),
    case(lambda: basic_tokenize(b"bytes"), TypeError, ["text", "bytes"], id="basic-bytes"),
    case(lambda: basic_tokenize("a", lower=None), TypeError, ["lower", "none"],
         id="basic-lower-none"),
    case(lambda: basic_tokenize("a\udc80b"), ValueError, ["surrogate", "U+DC80", "index 1"],
         id="basic-surrogate"),
    case(lambda: WordVocab("[PAD] [UNK]"), TypeError, ["words", "str"], id="vocab-str"),
    case(lambda: WordVocab([*SPECIAL_TOKENS, 3]), TypeError, ["words[5]", "int"],
         id="vocab-item-int"),
    case(lambda: WordVocab(["a", "b"]), ValueError, ["starts with the special tokens"],
         id="vocab-no-specials"),
    case(lambda: WordVocab.from_tokens("the cat"), TypeError, ["tokens", "str"],
         id="from_tokens-str"),
    case(lambda: WordVocab.from_tokens(["a"], max_size=2.5), TypeError, ["max_size", "2.5"],
         id="max_size-float"),
    case(lambda: WordVocab.from_tokens(["a"], max_size=3), ValueError, ["max_size",
         "leave room"], id="max_size-too-small"),
    case(lambda: WordVocab.from_tokens(["a"], min_count=0), ValueError, ["min_count"],
         id="from_tokens-min_count-zero"),
    case(lambda: WV.encode("ab"), TypeError, ["tokens", "str"], id="vocab-encode-str"),
    case(lambda: WV.encode(["a", None]), TypeError, ["tokens[1]", "nonetype"],
         id="vocab-encode-none"),
    case(lambda: WV.decode([1.5]), TypeError, ["ids", "whole numbers", "1.5"],
         id="decode-float"),
    case(lambda: WV.decode(["3"]), TypeError, ["ids", "'3'"], id="decode-str-id"),
    case(lambda: WV.decode([True]), TypeError, ["ids", "bool"], id="decode-bool"),
    case(lambda: WV.decode(3), TypeError, ["ids", "list", "int"], id="decode-int"),
    case(lambda: WV.decode([-1]), ValueError, ["id -1", "outside"], id="decode-negative"),
    case(lambda: WP.decode([7]), ValueError, ["id 7", "outside", "7 tokens"],
         id="decode-too-big"),
    case(lambda: WP.decode([[1, 2]]), TypeError, ["whole numbers", "list"],
         id="decode-nested"),
    case(lambda: WordPiece("vocab.txt"), TypeError, ["vocab", "from_file"], id="wordpiece-str"),
    case(lambda: WordPiece(Path("vocab.txt")), TypeError, ["vocab", "from_file"],
         id="wordpiece-path"),
    case(lambda: WordPiece([*SPECIAL_TOKENS, None]), TypeError, ["vocab[5]", "nonetype"],
         id="wordpiece-item-none"),
    case(lambda: WordPiece([*SPECIAL_TOKENS, ""]), ValueError, ["vocab[5]", "empty"],
         id="wordpiece-empty-token"),
    case(lambda: WordPiece([*SPECIAL_TOKENS, "a\nb"]), ValueError, ["vocab[5]", "line break"],
         id="wordpiece-newline-token"),
    case(lambda: WordPiece([*SPECIAL_TOKENS, "a", "a"]), ValueError, ["vocab", "'a'", "twice"],
         id="wordpiece-duplicate"),
    case(lambda: WordPiece(["a"]), ValueError, ["special tokens", "[MASK]"],
         id="wordpiece-no-specials"),
    case(lambda: WordPiece(list(SPECIAL_TOKENS), lower="False"), TypeError, ["lower"],
         id="wordpiece-lower-str"),
    case(lambda: WordPiece.from_file(Path(__file__).parent), ValueError, ["is a folder",
         "vocab.txt"], id="from_file-folder"),
    case(lambda: WordPiece.from_file(42), TypeError, ["path", "int"], id="from_file-int"),
    case(lambda: WordPiece.from_file(not_utf8()), ValueError, ["not utf-8", "0xff",
         "offset 6"], id="from_file-not-utf8"),
    case(lambda: WP.save(None), TypeError, ["path", "nonetype"], id="save-none"),
    case(lambda: WP.encode(["a", "b"]), TypeError, ["text", "list"], id="encode-list"),
    case(lambda: WP.tokenize(b"ab"), TypeError, ["text", "bytes"], id="tokenize-bytes"),
    case(lambda: WP.token_id("zzz"), ValueError, ["'zzz'", "not in the vocabulary"],
         id="token_id-unknown"),
    case(lambda: WP.token_id(5), TypeError, ["token", "int"], id="token_id-int"),
    case(lambda: WP.split_word(None), TypeError, ["word", "nonetype"], id="split_word-none"),
])
def test_bad_input_tokenizer(refuses, call, error, words):
    refuses(call, error, *words)
