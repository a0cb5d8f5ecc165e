"""mlmlib.hf - move a mini BERT to and from Hugging Face's format, offline.

Does: :func:`export_hf` writes a :class:`~mlmlib.model.MiniBert` and its vocabulary to a
directory that ``transformers.BertForMaskedLM.from_pretrained`` (or ``BertForPreTraining``
when the model has an NSP head) and ``BertTokenizerFast.from_pretrained`` load without a
network, giving the same scores. :func:`import_hf` goes the other way, from a local
Hugging Face BERT directory. The weights map one to one; the only reshaping is that
``MiniBert`` keeps query, key and value in one fused matrix, which Hugging Face stores as three.

:func:`import_hf` reads the saved weights themselves (``model.safetensors``, its shards, or
``pytorch_model.bin``), never ``from_pretrained``, which silently fills a missing weight with
random numbers. So it refuses, naming the problem: a model that is not BERT (``model_type``), a
BERT without the masked-LM head (``BertModel``, a classifier), a decoder (``is_decoder``),
cross-attention, relative positions, an activation other than GELU, any weight MiniBert needs
that is missing, any weight it cannot use (buffers such as ``position_ids`` are dropped), and
weights of the wrong shape or with NaN. An NSP head (``BertForPreTraining``) comes along. The
vocabulary is ``vocab.txt`` (line number = id) or, without it, ``tokenizer.json``'s WordPiece
map (ids 0..n-1); it must have one unique token per row of the embedding table. A decoder
untied from the word embeddings (``tie_word_embeddings=False`` with its own
``cls.predictions.decoder.weight``) is loaded as it is, into ``BertConfig(tie_embeddings=False)``.

:func:`masked_lm` puts Hugging Face's ``BertForMaskedLM`` behind MiniBert's call
(:class:`HFMaskedLM`), so that the course's trainer trains either one (the benchmarks compare
them step for step).

Does not: download anything (nothing is fetched; ``transformers`` only reads local files), or
need ``transformers`` at run time for the rest of mlmlib: it is imported here, when these
functions are called. It does not convert other architectures, or export a MiniBert with a
part switched off (no position embeddings, no head transform, no bias ``b_v``): Hugging Face's
BERT has no such variant.

>>> import tempfile
>>> from mlmlib.model import BertConfig, MiniBert
>>> model = MiniBert(BertConfig(vocab_size=8, hidden_size=8, num_layers=1, num_heads=2,
...                             intermediate_size=16, max_position=8))
>>> vocab = [*SPECIAL_TOKENS, "a", "b", "c"]  # [PAD] [UNK] [CLS] [SEP] [MASK] a b c
>>> folder = export_hf(model, vocab, tempfile.mkdtemp() + "/mini-bert")
>>> sorted(p.name for p in folder.iterdir())
['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'vocab.txt']
>>> again, words = import_hf(folder)
>>> words == vocab, again.config == model.config
(True, True)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch

from mlmlib._checks import described, flag, items, kind, pathlike
from mlmlib.constants import IGNORE_INDEX, SPECIAL_TOKENS
from mlmlib.model import BertConfig, BertOutput, MiniBert

__all__ = ["HFMaskedLM", "export_hf", "import_hf", "masked_lm"]

# saved by some versions of transformers, needed by none: buffers, not learned weights
_BUFFERS = {"bert.embeddings.position_ids", "bert.embeddings.token_type_ids"}
# the decoder: its weight is the word embeddings (tied) or its own (untied); its bias must equal
# the head bias (checked)
_DECODER_BIAS = "cls.predictions.decoder.bias"
_DECODER = {"cls.predictions.decoder.weight", _DECODER_BIAS}


def _transformers():
    try:
        import transformers
    except ImportError as err:  # a test and bench dependency, not a runtime one
        raise ImportError("mlmlib.hf needs the transformers package: pip install transformers"
                          ) from err
    return transformers


def _pairs(num_layers: int, nsp: bool) -> list[tuple[str, str]]:
    """(mlmlib name, Hugging Face name) for every tensor except the fused q/k/v."""
    pairs = [
        ("word_embeddings.weight", "bert.embeddings.word_embeddings.weight"),
        ("position_embeddings.weight", "bert.embeddings.position_embeddings.weight"),
        ("segment_embeddings.weight", "bert.embeddings.token_type_embeddings.weight"),
        ("head_dense.weight", "cls.predictions.transform.dense.weight"),
        ("head_dense.bias", "cls.predictions.transform.dense.bias"),
        ("head_ln.weight", "cls.predictions.transform.LayerNorm.weight"),
        ("head_ln.bias", "cls.predictions.transform.LayerNorm.bias"),
        ("head_bias", "cls.predictions.bias"),
    ]
    for part in ("weight", "bias"):
        pairs.append((f"ln_embeddings.{part}", f"bert.embeddings.LayerNorm.{part}"))
        for i in range(num_layers):
            ours, theirs = f"blocks.{i}.", f"bert.encoder.layer.{i}."
            pairs += [
                (ours + f"attention.out.{part}", theirs + f"attention.output.dense.{part}"),
                (ours + f"ln_attention.{part}", theirs + f"attention.output.LayerNorm.{part}"),
                (ours + f"ffn_in.{part}", theirs + f"intermediate.dense.{part}"),
                (ours + f"ffn_out.{part}", theirs + f"output.dense.{part}"),
                (ours + f"ln_ffn.{part}", theirs + f"output.LayerNorm.{part}"),
            ]
        if nsp:
            pairs += [(f"pooler.{part}", f"bert.pooler.dense.{part}"),
                      (f"nsp_head.{part}", f"cls.seq_relationship.{part}")]
    return pairs


def _qkv(i: int, part: str) -> list[str]:
    """Hugging Face's names for the three parts of MiniBert's fused ``attention.qkv``."""
    return [f"bert.encoder.layer.{i}.attention.self.{n}.{part}" for n in ("query", "key", "value")]


def _check_vocab(vocab, size: int, where: str) -> list[str]:
    """``vocab`` as a list: ``size`` unique, non-empty str tokens with no line break."""
    tokens, seen = items(vocab, where, "str tokens (id = position)", ordered=True), {}
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"{where} must hold str tokens, but id {i} is {described(token)}")
        if not token or "\n" in token or "\r" in token:
            raise ValueError(f"token {i} of {where} is {token!r}: a token must be non-empty "
                             "and hold no line break (vocab.txt has one token per line)")
        if token in seen:
            raise ValueError(f"{where} has the duplicate token {token!r} at ids {seen[token]} "
                             f"and {i}: each token needs its own id")
        seen[token] = i
    if len(tokens) != size:
        raise ValueError(f"{where} has {len(tokens)} tokens but the model has vocab_size {size}")
    return [str(t) for t in tokens]  # a str subclass (NumPy's) becomes a plain str


def _hf_config(cfg: BertConfig):
    return _transformers().BertConfig(
        vocab_size=cfg.vocab_size, hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
        intermediate_size=cfg.intermediate_size, hidden_act="gelu",
        hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.attention_dropout,
        max_position_embeddings=cfg.max_position, type_vocab_size=cfg.type_vocab_size,
        initializer_range=cfg.initializer_range, layer_norm_eps=cfg.layer_norm_eps,
        pad_token_id=cfg.pad_token_id, tie_word_embeddings=cfg.tie_embeddings)


def export_hf(model: MiniBert, vocab: Sequence[str], directory, overwrite: bool = False) -> Path:
    """Write ``model`` and its vocabulary (one token per id) as a Hugging Face BERT.

    Refuses a directory that already holds files unless ``overwrite=True``, so nothing a user
    saved is replaced by accident.
    """
    cfg = kind(model, "model", MiniBert, "a mlmlib MiniBert").config
    off = [name for name in ("position_embeddings", "head_transform", "head_bias")
           if not getattr(cfg, name)]
    if off:
        raise ValueError(f"the model has {', '.join(off)} switched off; Hugging Face's BERT "
                         "has no such variant, so it cannot be exported")
    tokens = _check_vocab(vocab, cfg.vocab_size, "the vocabulary")
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise ValueError(f"the vocabulary lacks BERT's special tokens {missing}")
    if tokens[cfg.pad_token_id] != "[PAD]":
        raise ValueError(f"the model's pad_token_id is {cfg.pad_token_id} but the vocabulary "
                         f"has [PAD] at id {tokens.index('[PAD]')}")
    flag(overwrite, "overwrite")
    out = pathlike(directory, "directory")
    for place in (out, *out.parents):  # the first that exists must be a directory
        if place.exists():
            if not place.is_dir():
                raise NotADirectoryError(f"{place} is a file, not a directory")
            break
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} is not empty; pass overwrite=True to replace its files")
    tf = _transformers()
    out.mkdir(parents=True, exist_ok=True)

    hf_cls = tf.BertForPreTraining if cfg.nsp else tf.BertForMaskedLM
    hf = hf_cls(_hf_config(cfg))
    ours = model.state_dict()
    state = {theirs: ours[mine] for mine, theirs in _pairs(cfg.num_layers, cfg.nsp)}
    for i in range(cfg.num_layers):
        for part in ("weight", "bias"):
            pieces = ours[f"blocks.{i}.attention.qkv.{part}"].chunk(3, dim=0)
            state.update(zip(_qkv(i, part), pieces, strict=True))
    if not cfg.tie_embeddings:
        state["cls.predictions.decoder.weight"] = ours["decoder"]
    missing, unexpected = hf.load_state_dict(state, strict=False)
    tied = ("cls.predictions.decoder",) if cfg.tie_embeddings else (_DECODER_BIAS,)
    missing = [m for m in missing if not m.startswith(tied)]  # shared with another tensor
    if missing or unexpected:
        raise RuntimeError(f"weight mapping is incomplete: missing {missing}, "
                           f"unexpected {unexpected}")
    if cfg.tie_embeddings:
        hf.tie_weights()
    hf.save_pretrained(out)
    tf.BertTokenizerFast(vocab={t: i for i, t in enumerate(tokens)}, do_lower_case=True,
                         model_max_length=cfg.max_position).save_pretrained(out)
    # BERT's own vocab.txt too (one token per line, the line number is the id)
    (out / "vocab.txt").write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")
    return out


def _read_json(file: Path) -> dict:
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{file} is not valid JSON: {err}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{file} must hold a JSON object, got {type(raw).__name__}")
    return raw


def _read_config(path: Path) -> tuple[dict, bool]:
    """MiniBert's settings from ``config.json`` (every BERT variant it cannot run refused), and
    whether the config says the decoder is tied to the word embeddings."""
    file = path / "config.json"
    raw = _read_json(file)
    if raw.get("model_type") != "bert":
        raise ValueError(f"{file} has model_type {raw.get('model_type')!r}: only BERT "
                         "(model_type 'bert') can become a MiniBert")
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{file} has position_embedding_type "
                         f"{raw['position_embedding_type']!r}; MiniBert has only BERT's "
                         "absolute position embeddings")
    try:
        hc = _transformers().BertConfig.from_pretrained(path, local_files_only=True)
    except Exception as err:  # transformers' own validation: re-raised as ours, named
        raise ValueError(f"{file} is not a valid BERT config: {err}") from err
    if hc.hidden_act != "gelu":
        raise ValueError(f"only BERT's exact GELU is supported, the model uses {hc.hidden_act}")
    if getattr(hc, "is_decoder", False) or getattr(hc, "add_cross_attention", False):
        raise ValueError(f"{file} describes a decoder (is_decoder / add_cross_attention, "
                         "causal or cross-attention); MiniBert is BERT's encoder")
    if getattr(hc, "pruned_heads", None):
        raise ValueError(f"{file} has pruned_heads {hc.pruned_heads}; MiniBert's layers all "
                         "have num_attention_heads heads")
    settings = dict(
        vocab_size=hc.vocab_size, hidden_size=hc.hidden_size, num_layers=hc.num_hidden_layers,
        num_heads=hc.num_attention_heads, intermediate_size=hc.intermediate_size,
        max_position=hc.max_position_embeddings, type_vocab_size=hc.type_vocab_size,
        dropout=hc.hidden_dropout_prob, attention_dropout=hc.attention_probs_dropout_prob,
        layer_norm_eps=hc.layer_norm_eps, initializer_range=hc.initializer_range,
        pad_token_id=hc.pad_token_id or 0)
    return settings, bool(getattr(hc, "tie_word_embeddings", True))


def _read_weights(path: Path) -> dict[str, torch.Tensor]:
    """Every tensor the folder holds, by Hugging Face name, read from the files themselves."""
    single, index = path / "model.safetensors", path / "model.safetensors.index.json"
    pickled = path / "pytorch_model.bin"
    if not (single.is_file() or index.is_file() or pickled.is_file()):
        raise FileNotFoundError(f"{path} has no weights: no model.safetensors, "
                                "model.safetensors.index.json or pytorch_model.bin")
    try:
        from safetensors.torch import load_file
        if single.is_file():
            state = load_file(single)
        elif index.is_file():
            shards = sorted(set(_read_json(index)["weight_map"].values()))
            state = {k: v for shard in shards for k, v in load_file(path / shard).items()}
        else:
            state = torch.load(pickled, map_location="cpu", weights_only=True)
    except Exception as err:
        raise ValueError(f"the weights in {path} could not be read: {err}") from err
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor)
                                              for t in state.values()):
        raise ValueError(f"the weights in {path} are not a map of names to tensors")
    state = {k.replace("LayerNorm.gamma", "LayerNorm.weight")  # TensorFlow-era names
             .replace("LayerNorm.beta", "LayerNorm.bias"): t for k, t in state.items()}
    if not any(k.startswith(("bert.", "cls.")) for k in state):  # a bare BertModel's names
        state = {f"bert.{k}": t for k, t in state.items()}
    return state


def _check_head(state: dict, tied: bool, path: Path) -> bool:
    """Refuse a folder without BERT's MLM head; whether its decoder is untied (its own matrix)."""
    if not any(k.startswith("cls.predictions.") for k in state):
        raise ValueError(f"{path} has no MLM head: the weights cls.predictions.* are missing "
                         "(saved from BertModel, or a BERT for another task?)")
    word = state.get("bert.embeddings.word_embeddings.weight")
    decoder = state.get("cls.predictions.decoder.weight")
    untied = decoder is not None and word is not None and not torch.equal(decoder, word)
    if decoder is None and not tied:
        raise ValueError(f"{path}/config.json says tie_word_embeddings is false (an untied "
                         "decoder) but cls.predictions.decoder.weight is missing: the output "
                         "matrix is unknown")
    bias, decoder_bias = state.get("cls.predictions.bias"), state.get(_DECODER_BIAS)
    if bias is None and decoder_bias is not None:
        state["cls.predictions.bias"] = decoder_bias
    elif decoder_bias is not None and not torch.equal(bias, decoder_bias):
        raise ValueError(f"{path} has two different output biases: {_DECODER_BIAS} differs "
                         "from cls.predictions.bias, and MiniBert has one")
    return untied


def import_hf(directory) -> tuple[MiniBert, list[str]]:
    """Load a local Hugging Face BERT directory into a ``MiniBert``; also return its vocab.

    The model comes back in evaluation mode (dropout off), as ``from_pretrained`` returns
    Hugging Face's; call ``model.train()`` to fine-tune it.

    Raises ``ValueError`` (naming the problem) for anything MiniBert cannot reproduce exactly,
    ``FileNotFoundError`` for a missing config, weights or vocabulary; see the module docstring.
    """
    path = pathlike(directory, "directory")
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} is a file, not a Hugging Face model directory")
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} has no config.json: not a Hugging Face model directory")
    settings, tied = _read_config(path)
    state = _read_weights(path)
    untied = _check_head(state, tied, path)
    nsp = "cls.seq_relationship.weight" in state
    try:
        cfg = BertConfig(**settings, nsp=nsp, tie_embeddings=not untied)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}/config.json does not describe a valid MiniBert: {err}"
                         ) from err
    model = MiniBert(cfg)
    shapes = {mine: t.shape for mine, t in model.state_dict().items()}
    expected = {name: shapes[mine] for mine, name in _pairs(cfg.num_layers, nsp)}
    for i in range(cfg.num_layers):
        for part in ("weight", "bias"):
            shape = shapes[f"blocks.{i}.attention.qkv.{part}"]
            expected.update((name, (shape[0] // 3, *shape[1:])) for name in _qkv(i, part))
    if untied:
        expected["cls.predictions.decoder.weight"] = shapes["decoder"]
    missing = [name for name in expected if name not in state]
    if missing:
        raise ValueError(f"{path} lacks weights MiniBert needs: {', '.join(missing)}")
    unused = sorted(set(state) - set(expected) - _BUFFERS - _DECODER)
    if unused:
        raise ValueError(f"{path} holds weights MiniBert cannot use: {', '.join(unused)}")
    for name, shape in expected.items():
        t = state[name]
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"weight {name} has shape {tuple(t.shape)} but config.json makes "
                             f"MiniBert expect {tuple(shape)}")
        if not t.is_floating_point() or not torch.isfinite(t).all():
            raise ValueError(f"weight {name} must hold finite floating-point numbers")
    ours = {mine: state[name] for mine, name in _pairs(cfg.num_layers, nsp)}
    for i in range(cfg.num_layers):
        for part in ("weight", "bias"):
            ours[f"blocks.{i}.attention.qkv.{part}"] = torch.cat(
                [state[name] for name in _qkv(i, part)], dim=0)
    if untied:
        ours["decoder"] = state["cls.predictions.decoder.weight"]
    model.load_state_dict(ours)
    model.eval()  # as from_pretrained returns it: dropout off, so scores match Hugging Face's
    return model, _read_vocab(path, cfg.vocab_size)


def _read_vocab(path: Path, size: int) -> list[str]:
    """``vocab.txt`` (line number = id) or, without it, ``tokenizer.json``'s WordPiece map."""
    txt, tokenizer = path / "vocab.txt", path / "tokenizer.json"
    if txt.is_file():
        try:
            with txt.open(encoding="utf-8") as lines:  # as BERT's own reader splits them
                return _check_vocab([line.rstrip("\n") for line in lines], size, str(txt))
        except UnicodeDecodeError as err:
            raise ValueError(f"{txt} is not UTF-8 text: {err}") from None
    if not tokenizer.is_file():
        raise FileNotFoundError(f"{path} has no vocabulary: neither vocab.txt nor "
                                "tokenizer.json")
    raw = _read_json(tokenizer)
    spec = raw.get("model")
    table = spec.get("vocab") if isinstance(spec, dict) else None
    if not isinstance(table, dict) or spec.get("type", "WordPiece") != "WordPiece":
        raise ValueError(f"{tokenizer} has no WordPiece model.vocab map (token -> id)")
    added = raw.get("added_tokens")  # usually the special tokens again, perhaps new ones
    added = [(a.get("content"), a.get("id")) for a in added if isinstance(a, dict)] \
        if isinstance(added, list) else []
    by_id = {}
    for source, pairs in (("model.vocab", list(table.items())), ("added_tokens", added)):
        for token, i in pairs:
            if isinstance(i, bool) or not isinstance(i, int):
                raise ValueError(f"{tokenizer}: token {token!r} in {source} has id {i!r}, not "
                                 "a whole number")
            if source == "added_tokens" and by_id.get(i) == token:
                continue
            if i in by_id:
                raise ValueError(f"{tokenizer}: tokens {by_id[i]!r} and {token!r} both have "
                                 f"id {i}")
            by_id[i] = token
    gaps = sorted(set(range(len(by_id))) - set(by_id))
    if gaps:
        raise ValueError(f"{tokenizer}: the ids are not contiguous 0..{len(by_id) - 1}: id "
                         f"{gaps[0]} is missing")
    return _check_vocab([by_id[i] for i in range(len(by_id))], size, str(tokenizer))


class HFMaskedLM(torch.nn.Module):
    """Hugging Face's ``BertForMaskedLM`` behind :class:`~mlmlib.model.MiniBert`'s call.

    It meets the trainer's masked-LM protocol (:mod:`mlmlib.train.setup`): ``config`` is the
    :class:`~mlmlib.model.BertConfig` it was made from, and a call returns a
    :class:`~mlmlib.model.BertOutput` whose ``logits``, when ``labels`` are given, are the
    scores of the masked positions only (every position's without labels) and whose ``loss``
    is their mean ``-log P``: 0 when no position is masked, as MiniBert's (Hugging Face's own
    mean over nothing is NaN, which the trainer would take for a diverged run). Hugging Face
    scores every position, as it does in its own training (that work stays part of its time);
    only the masked rows are handed back. ``bert`` is the ``BertForMaskedLM`` itself.
    """

    def __init__(self, config: BertConfig, seed: int = 0):
        super().__init__()
        if not isinstance(config, BertConfig):
            raise TypeError(f"config must be a mlmlib.model.BertConfig, got "
                            f"{type(config).__name__}")
        off = [name for name in ("position_embeddings", "head_transform", "head_bias")
               if not getattr(config, name)] + (["nsp"] if config.nsp else [])
        if off:
            raise ValueError(f"Hugging Face's BertForMaskedLM has no variant with "
                             f"{', '.join(off)} changed: use mlmlib's MiniBert for those")
        self.config = config
        with torch.random.fork_rng(devices=[]):  # its weights come from the global CPU
            torch.random.default_generator.manual_seed(seed)  # generator: seeded here, and
            self.bert = _transformers().BertForMaskedLM(_hf_config(config))  # left as it was

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        """Hugging Face's forward pass; the scores of the masked positions and their loss."""
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                        token_type_ids=token_type_ids, labels=labels)
        if labels is None:
            return BertOutput(out.logits, None)
        masked = labels != IGNORE_INDEX
        loss = out.loss if bool(masked.any()) else out.logits.sum() * 0.0  # an empty M: 0
        return BertOutput(out.logits[masked], loss)


def masked_lm(config: BertConfig, seed: int = 0) -> HFMaskedLM:
    """Hugging Face's ``BertForMaskedLM`` at ``config``, seeded, behind MiniBert's call."""
    return HFMaskedLM(config, seed=seed)
