"""mlmlib.hf - move a mini BERT to and from Hugging Face's format, offline.

Does: :func:`export_hf` writes a :class:`~mlmlib.model.MiniBert` and its vocabulary to a
directory that ``transformers.BertForMaskedLM.from_pretrained`` (or ``BertForPreTraining``
when the model has an NSP head) and ``BertTokenizerFast.from_pretrained`` load without a
network, giving the same scores. :func:`import_hf` goes the other way, from a local
Hugging Face BERT directory. The weights map one to one; the only reshaping is that
``MiniBert`` keeps query, key and value in one fused matrix, which Hugging Face stores as three.

Does not: download anything (every load is ``local_files_only``), or need ``transformers`` at
run time for the rest of mlmlib: it is imported here, when these functions are called.

>>> import tempfile
>>> from mlmlib.model import BertConfig, MiniBert
>>> model = MiniBert(BertConfig(vocab_size=8, hidden_size=8, num_layers=1, num_heads=2,
...                             intermediate_size=16, max_position=8))
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]
>>> folder = export_hf(model, vocab, tempfile.mkdtemp() + "/mini-bert")
>>> sorted(p.name for p in folder.iterdir())
['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'vocab.txt']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from mlmlib.model import BertConfig, MiniBert

__all__ = ["export_hf", "import_hf"]


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


def _hf_config(cfg: BertConfig):
    return _transformers().BertConfig(
        vocab_size=cfg.vocab_size, hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
        intermediate_size=cfg.intermediate_size, hidden_act="gelu",
        hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.attention_dropout,
        max_position_embeddings=cfg.max_position, type_vocab_size=cfg.type_vocab_size,
        initializer_range=cfg.initializer_range, layer_norm_eps=cfg.layer_norm_eps,
        pad_token_id=cfg.pad_token_id)


def export_hf(model: MiniBert, vocab: Sequence[str], directory, overwrite: bool = False) -> Path:
    """Write ``model`` and its vocabulary (one token per id) as a Hugging Face BERT.

    Refuses a directory that already holds files unless ``overwrite=True``, so nothing a user
    saved is replaced by accident.
    """
    tf = _transformers()
    cfg = model.config
    if len(vocab) != cfg.vocab_size:
        raise ValueError(f"the vocabulary has {len(vocab)} tokens but the model has "
                         f"{cfg.vocab_size}")
    missing = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t not in vocab]
    if missing:
        raise ValueError(f"the vocabulary lacks BERT's special tokens {missing}")
    out = Path(directory)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} is not empty; pass overwrite=True to replace its files")
    out.mkdir(parents=True, exist_ok=True)

    hf_cls = tf.BertForPreTraining if cfg.nsp else tf.BertForMaskedLM
    hf = hf_cls(_hf_config(cfg))
    ours = model.state_dict()
    state = {theirs: ours[mine] for mine, theirs in _pairs(cfg.num_layers, cfg.nsp)}
    for i in range(cfg.num_layers):
        for part in ("weight", "bias"):
            q, k, v = ours[f"blocks.{i}.attention.qkv.{part}"].chunk(3, dim=0)
            for name, t in (("query", q), ("key", k), ("value", v)):
                state[f"bert.encoder.layer.{i}.attention.self.{name}.{part}"] = t
    missing, unexpected = hf.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.startswith("cls.predictions.decoder")]  # tied
    if missing or unexpected:
        raise RuntimeError(f"weight mapping is incomplete: missing {missing}, "
                           f"unexpected {unexpected}")
    hf.tie_weights()
    hf.save_pretrained(out)
    tf.BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True,
                         model_max_length=cfg.max_position).save_pretrained(out)
    # BERT's own vocab.txt too (one token per line, the line number is the id)
    (out / "vocab.txt").write_text("".join(f"{t}\n" for t in vocab), encoding="utf-8")
    return out


def import_hf(directory) -> tuple[MiniBert, list[str]]:
    """Load a local Hugging Face BERT directory into a ``MiniBert``; also return its vocab."""
    tf = _transformers()
    path = Path(directory)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} has no config.json: not a Hugging Face model directory")
    hc = tf.BertConfig.from_pretrained(path, local_files_only=True)
    if hc.hidden_act != "gelu":
        raise ValueError(f"only BERT's exact GELU is supported, the model uses {hc.hidden_act}")
    archs = hc.architectures or []
    nsp = "BertForPreTraining" in archs
    hf_cls = tf.BertForPreTraining if nsp else tf.BertForMaskedLM
    hf = hf_cls.from_pretrained(path, local_files_only=True)
    cfg = BertConfig(vocab_size=hc.vocab_size, hidden_size=hc.hidden_size,
                     num_layers=hc.num_hidden_layers, num_heads=hc.num_attention_heads,
                     intermediate_size=hc.intermediate_size,
                     max_position=hc.max_position_embeddings, type_vocab_size=hc.type_vocab_size,
                     dropout=hc.hidden_dropout_prob,
                     attention_dropout=hc.attention_probs_dropout_prob,
                     layer_norm_eps=hc.layer_norm_eps, initializer_range=hc.initializer_range,
                     pad_token_id=hc.pad_token_id or 0, nsp=nsp)
    model = MiniBert(cfg)
    theirs = hf.state_dict()
    state = {mine: theirs[name] for mine, name in _pairs(cfg.num_layers, nsp)}
    for i in range(cfg.num_layers):
        for part in ("weight", "bias"):
            prefix = f"bert.encoder.layer.{i}.attention.self."
            state[f"blocks.{i}.attention.qkv.{part}"] = torch.cat(
                [theirs[f"{prefix}{n}.{part}"] for n in ("query", "key", "value")], dim=0)
    model.load_state_dict(state)
    vocab_file = path / "vocab.txt"
    vocab = vocab_file.read_text(encoding="utf-8").splitlines() if vocab_file.is_file() else []
    return model, vocab
