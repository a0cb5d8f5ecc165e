"""mlmlib.widgets.toy_model - the course's trained mini BERT of the toy world, stored with the
package, so that a page can run it as well as Python.

Does: :func:`write_toy_model` stores a trained :class:`~mlmlib.model.MiniBert` in one JSON
file (``tools/export_toy_model.py`` trains it as the chapter *The toy world* does, then calls
it); :func:`stored_toy_model` reads it back as a ``MiniBert`` (float32, eval mode) and its
vocabulary; :func:`toy_model_blob` gives the same weights as one compact JSON text for a
page to carry inside an output (a page opened from disk cannot fetch a file), which
``widgets/js/bertio.js`` decodes and ``widgets/js/bert.js`` runs; :func:`toy_model_ids` reads
a typed sentence into the model's token ids, as the page does.

The file (``widgets/data/toy_model.json``, ``FORMAT``, version ``VERSION``) holds:
``config`` (every field of :class:`~mlmlib.model.BertConfig`), ``vocab`` (the token of each
id, in order), ``special`` (the names of ``[CLS]``, ``[SEP]``, ``[MASK]``, ``[PAD]``),
``words_from`` (``vocab[words_from:]`` are the toy world's words), ``tensors`` (each one's
``name`` as in ``model.state_dict()``, ``shape``, ``dtype`` and byte ``offset``),
``byte_order`` (little), ``sha256`` (the checksum of the weight bytes), ``made_by`` (how it
was trained and what it scored), and ``weights``: the weight bytes, tensor after tensor,
in base64. Reading checks all of it and refuses a damaged or foreign file with a
``ValueError`` that says what is wrong.

Does not: train (``tools/export_toy_model.py`` does, with :mod:`mlmlib.train`), or compute a
forward pass itself (``MiniBert`` does, and in the page ``js/bert.js``); it stores only a
BERT with every part (position embeddings, the head's transform, its bias, tied embeddings),
the one the page computes.

>>> model, vocab = stored_toy_model()
>>> model.config.num_layers, model.training, vocab[:3]
(1, False, ['[PAD]', '[UNK]', '[CLS]'])
>>> toy_model_ids("The small ___ barked.")[0] == [vocab.index(t) for t in
...     ["[CLS]", "the", "small", "[MASK]", "barked", ".", "[SEP]"]]
True
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np
import torch

from mlmlib.model import BertConfig, MiniBert
from mlmlib.widgets.live import BLANKS, read_sentence

__all__ = ["FORMAT", "TOY_MODEL_FILE", "VERSION", "stored_toy_model", "toy_model_blob",
           "toy_model_ids", "write_toy_model"]

FORMAT, VERSION = "mlmlib toy model", 1
#: Where the package keeps the trained model (package data, shipped with the wheel).
TOY_MODEL_FILE = Path(__file__).with_name("data") / "toy_model.json"
#: The dtypes a tensor may be stored in (little-endian, as NumPy names them).
DTYPES = {"float16": "<f2", "float32": "<f4"}
#: The special tokens the page needs by role, in the stored vocabulary.
ROLES = ("pad", "cls", "sep", "mask")
#: The parts of BERT the page computes: a stored model has every one.
EVERY_PART = ("position_embeddings", "head_transform", "head_bias", "tie_embeddings")


def write_toy_model(model: MiniBert, vocab: list[str], special: dict[str, str],
                    path: Path | str = TOY_MODEL_FILE, dtype: str = "float16",
                    made_by: dict | None = None) -> Path:
    """Store ``model``'s weights in ``dtype`` with its config and ``vocab`` (see the module's
    docstring for the format); ``special`` maps each of ``ROLES`` to its token, and the
    toy world's words follow the special tokens in ``vocab``. Returns the path."""
    if not isinstance(model, MiniBert):
        raise TypeError(f"model must be a MiniBert, got {type(model).__name__}")
    missing = [part for part in EVERY_PART if not getattr(model.config, part)]
    if missing or model.config.nsp:
        raise ValueError(f"the page computes BERT with every part and no NSP head: this model "
                         f"has {'nsp' if model.config.nsp else ', '.join(missing) + ' off'}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    vocab = list(vocab)
    if len(vocab) != model.config.vocab_size:
        raise ValueError(f"{len(vocab)} tokens in vocab, but the model has "
                         f"vocab_size {model.config.vocab_size}")
    if sorted(special) != sorted(ROLES) or not set(special.values()) <= set(vocab):
        raise ValueError(f"special must map {ROLES} to tokens of vocab, got {special!r}")
    words_from = max(vocab.index(t) for t in special.values()) + 1
    tensors, chunks, offset = [], [], 0
    for name, t in model.state_dict().items():
        raw = t.detach().cpu().numpy().astype(DTYPES[dtype]).tobytes()
        tensors.append({"name": name, "shape": list(t.shape), "dtype": dtype, "offset": offset})
        chunks.append(raw)
        offset += len(raw)
    data = b"".join(chunks)
    doc = {"format": FORMAT, "version": VERSION, "config": asdict(model.config),
           "vocab": list(vocab), "special": dict(special), "words_from": words_from,
           "byte_order": "little", "tensors": tensors,
           "sha256": hashlib.sha256(data).hexdigest(), "made_by": made_by or {},
           "weights": base64.b64encode(data).decode("ascii")}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def _refuse(path: Path, what: str) -> ValueError:
    return ValueError(f"the stored toy model {path} is damaged or not one: {what}; "
                      "write it again with tools/export_toy_model.py")


def _read(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The file's document (its weights decoded) and each tensor as a float32 array; every
    part checked."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _refuse(path, f"it is not JSON ({error})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise _refuse(path, f"its format is not {FORMAT!r}")
    if doc.get("version") != VERSION:
        raise ValueError(f"the stored toy model {path} is version {doc.get('version')!r}; "
                         f"this mlmlib reads version {VERSION}")
    names = {f.name for f in fields(BertConfig)}
    config = doc.get("config")
    if not isinstance(config, dict) or set(config) != names:
        raise _refuse(path, "its config is not a BertConfig's fields")
    try:
        config = BertConfig(**config)
    except (TypeError, ValueError) as error:
        raise _refuse(path, f"its config is refused ({error})") from None
    try:
        data = base64.b64decode(doc.get("weights", ""), validate=True)
    except (TypeError, binascii.Error) as error:
        raise _refuse(path, f"its weights are not base64 ({error})") from None
    if hashlib.sha256(data).hexdigest() != doc.get("sha256"):
        raise _refuse(path, "the checksum (sha256) of its weight bytes does not match")
    tensors = doc.get("tensors")
    if not isinstance(tensors, list) or not all(isinstance(t, dict) for t in tensors):
        raise _refuse(path, "its tensors are not a list of entries")
    if doc.get("byte_order") != "little" or any(t.get("dtype") not in DTYPES for t in tensors):
        raise _refuse(path, f"its weights are not little-endian {' or '.join(DTYPES)}")
    vocab = doc.get("vocab")
    if not isinstance(vocab, list) or len(vocab) != config.vocab_size:
        raise _refuse(path, f"its vocab does not have vocab_size = {config.vocab_size} tokens")
    if sorted(doc.get("special", {})) != sorted(ROLES) or \
            not set(doc["special"].values()) <= set(vocab):
        raise _refuse(path, f"its special tokens are not {ROLES}, each in its vocab")
    wanted = {n: tuple(t.shape) for n, t in MiniBert(config).state_dict().items()}
    arrays, end = {}, 0
    for t in tensors:
        name, shape = t.get("name"), tuple(t.get("shape", ()))
        if wanted.get(name) != shape:
            raise _refuse(path, f"tensor {name!r} of shape {shape} is not in its config's "
                                f"model ({wanted.get(name, 'no such tensor')})")
        size = int(np.prod(shape)) * np.dtype(DTYPES[t["dtype"]]).itemsize
        if t.get("offset") != end or end + size > len(data):
            raise _refuse(path, f"tensor {name!r} does not lie where its offset says")
        arrays[name] = np.frombuffer(data, DTYPES[t["dtype"]], int(np.prod(shape)),
                                     end).reshape(shape).astype(np.float32)
        end += size
    if set(arrays) != set(wanted) or end != len(data):
        raise _refuse(path, f"its tensors are not its config's model's: missing "
                            f"{sorted(set(wanted) - set(arrays))}, {len(data) - end} bytes over")
    return doc, arrays


@functools.cache
def _stored(path: str, stamp: float) -> tuple[dict, dict[str, np.ndarray]]:
    return _read(Path(path))


def _load(path) -> tuple[dict, dict[str, np.ndarray]]:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no stored toy model at {path}: tools/export_toy_model.py writes it")
    return _stored(str(path.resolve()), path.stat().st_mtime_ns)


def stored_toy_model(path: Path | str = TOY_MODEL_FILE) -> tuple[MiniBert, list[str]]:
    """The stored toy model as a new ``MiniBert`` (float32, eval mode), and its vocabulary
    (the token of each id). A damaged or foreign file is refused with a ``ValueError``."""
    doc, arrays = _load(path)
    model = MiniBert(BertConfig(**doc["config"]))
    model.load_state_dict({n: torch.from_numpy(a.copy()) for n, a in arrays.items()})
    return model.eval(), list(doc["vocab"])


def toy_model_blob(path: Path | str = TOY_MODEL_FILE) -> str:
    """The stored model as a compact JSON text for a page to carry (``bertio.js`` decodes it):
    the file's document without ``made_by``, and of the config only what the page uses."""
    doc, _ = _load(path)
    config = {k: doc["config"][k] for k in ("vocab_size", "hidden_size", "num_layers",
                                            "num_heads", "max_position", "layer_norm_eps")}
    keep = ("format", "version", "vocab", "special", "words_from", "byte_order", "tensors",
            "sha256", "weights")
    return json.dumps({"config": config, **{k: doc[k] for k in keep}}, separators=(",", ":"),
                      ensure_ascii=False).replace("</", "<\\/")


def toy_model_ids(sentence: str, path: Path | str = TOY_MODEL_FILE) -> tuple[list[int],
                                                                             list[int]]:
    """A typed toy-world sentence as the stored model's token ids (``[CLS]``, the words with
    each blank as ``[MASK]``, ``[SEP]``) and the word positions of its blanks; read as
    :func:`~mlmlib.widgets.live.read_sentence` reads it, and refused as the page refuses it."""
    doc, _ = _load(path)
    words, masked = read_sentence(sentence)
    ids = {t: i for i, t in enumerate(doc["vocab"])}
    known = set(doc["vocab"][doc["words_from"]:])
    most = doc["config"]["max_position"] - 2  # [CLS] and [SEP] take two positions
    unknown = [w for w in words if w not in BLANKS and w not in known]
    if not words:
        raise ValueError(f"the sentence {sentence!r} has no words")
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a word of the toy world")
    if len(words) > most:
        raise ValueError(f"the toy world's sentences have 1 to max_len = {most} words, this "
                         f"one {len(words)}")
    if not masked:
        raise ValueError(f"the sentence {sentence!r} has no blank: write {BLANKS[0]} where a "
                         "word is hidden")
    special = doc["special"]
    return ([ids[special["cls"]], *(ids[special["mask"]] if i in masked else ids[w]
                                    for i, w in enumerate(words)), ids[special["sep"]]], masked)
