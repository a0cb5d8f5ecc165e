"""The stored toy model (mlmlib/widgets/data/toy_model.json): its checksum, its shapes, its score
against the exact floor, and a loader that refuses a damaged file. Nothing here trains:
tools/export_toy_model.py wrote the file, by training_2's run on a CPU.
"""

from __future__ import annotations

import base64
import hashlib
import json

import numpy as np
import pytest
import torch

from mlmlib.model import BertConfig, MiniBert
from mlmlib.tokenizer import SPECIAL_TOKENS
from mlmlib.toyworld import ToyWorld
from mlmlib.train import toy_data, toy_recipe
from mlmlib.widgets import stored_toy_model, toy_model_blob, toy_model_ids, write_toy_model
from mlmlib.widgets.toy_model import FORMAT, TOY_MODEL_FILE, VERSION

DOC = json.loads(TOY_MODEL_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def evaluation():
    """training_2's data: the evaluation rows and the exact floor of their blanks."""
    world = ToyWorld()
    data, vocab, sentences, masks = toy_data(world, n_train=20000, n_eval=1000, seed=0)
    return data, vocab, world.bayes_loss(sentences, masks)


def test_the_recorded_checksum_is_the_weight_bytes():
    data = base64.b64decode(DOC["weights"], validate=True)
    assert DOC["sha256"] == hashlib.sha256(data).hexdigest()
    assert (DOC["format"], DOC["version"], DOC["byte_order"]) == (FORMAT, VERSION, "little")


def test_the_shapes_are_the_configs_and_the_vocabulary_is_toy_datas():
    config = BertConfig(**DOC["config"])
    wanted = {name: list(t.shape) for name, t in MiniBert(config).state_dict().items()}
    assert {t["name"]: t["shape"] for t in DOC["tensors"]} == wanted
    assert [t["name"] for t in DOC["tensors"]] == list(wanted)  # state_dict's order
    width = {"float16": 2, "float32": 4}
    ends = [t["offset"] + int(np.prod(t["shape"])) * width[t["dtype"]] for t in DOC["tensors"]]
    assert [t["offset"] for t in DOC["tensors"]] == [0, *ends[:-1]]
    assert ends[-1] == len(base64.b64decode(DOC["weights"]))
    assert DOC["vocab"] == [*SPECIAL_TOKENS, *ToyWorld().words]  # toy_data's order
    assert DOC["vocab"][:DOC["words_from"]] == list(SPECIAL_TOKENS)
    recipe_config, _ = toy_recipe(len(DOC["vocab"]), 22)
    assert config == recipe_config  # toy_recipe's model


def test_the_loader_gives_a_float32_minibert_in_eval_mode():
    model, vocab = stored_toy_model()
    assert isinstance(model, MiniBert) and not model.training and vocab == DOC["vocab"]
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    data = base64.b64decode(DOC["weights"])
    for t in DOC["tensors"]:
        stored = np.frombuffer(data, "<f2", int(np.prod(t["shape"])), t["offset"])
        assert np.array_equal(model.state_dict()[t["name"]].numpy().ravel(), stored)
    again, _ = stored_toy_model()
    assert again is not model  # a new model each time: changing one leaves the next alone


def test_the_stored_weights_score_within_2_percent_of_the_floor(evaluation):
    data, vocab, floor = evaluation
    assert vocab == DOC["vocab"]
    model, _ = stored_toy_model()
    ev = data.eval
    with torch.no_grad():
        loss = model(ev.input_ids, attention_mask=ev.attention_mask, labels=ev.labels).loss.item()
    assert loss / floor - 1 < 0.02
    made = DOC["made_by"]
    assert abs(made["floor"] - floor) < 1e-12
    assert abs(made["eval_loss_float16"] - loss) < 1e-4  # as the export measured it
    assert abs(made["eval_loss_float16"] - made["eval_loss_float32"]) < 1e-3  # float16's cost


def _damaged(tmp_path, change) -> str:
    doc = json.loads(TOY_MODEL_FILE.read_text(encoding="utf-8"))
    change(doc)
    path = tmp_path / "toy_model.json"
    path.write_text(json.dumps(doc) if isinstance(doc, dict) else doc, encoding="utf-8")
    return path


def _flip(doc):
    data = bytearray(base64.b64decode(doc["weights"]))
    data[1000] ^= 1  # one bit of one weight
    doc["weights"] = base64.b64encode(bytes(data)).decode()


def _reshape(doc):
    entry = next(t for t in doc["tensors"] if t["name"] == "word_embeddings.weight")
    entry["shape"] = entry["shape"][::-1]  # (d, V) for (V, d): the same bytes, the wrong shape


DAMAGE = [
    (_flip, "checksum"),
    (lambda d: d.update(weights=d["weights"][:-8]), "checksum"),
    (lambda d: d.update(weights=d["weights"][:-3]), "not base64"),  # cut inside a character
    (lambda d: d.update(version=2), "version 2"),
    (lambda d: d.update(format="something else"), "format"),
    (_reshape, "word_embeddings.weight"),
    (lambda d: d["tensors"].pop(), "missing", "head_ln.bias"),  # the last in state_dict's order
    (lambda d: d["config"].update(hidden_size=32), "word_embeddings.weight"),
    (lambda d: d["config"].pop("num_heads"), "config"),
    (lambda d: d.update(vocab=d["vocab"][:-1]), "vocab"),
    (lambda d: d["tensors"][3].update(dtype="int8"), "float16"),
]


@pytest.mark.parametrize(("change", "words"), [(c, w) for c, *w in DAMAGE])
def test_a_damaged_file_is_refused(refuses, tmp_path, change, words):
    path = _damaged(tmp_path, change)
    error = refuses(lambda: stored_toy_model(path), ValueError, *words)
    assert "export_toy_model" in str(error) or "version" in str(error)


def test_a_file_that_is_not_json_or_not_there_is_refused(refuses, tmp_path):
    path = tmp_path / "toy_model.json"
    path.write_bytes(TOY_MODEL_FILE.read_bytes()[:5000])  # cut short
    refuses(lambda: stored_toy_model(path), ValueError, "not JSON")
    refuses(lambda: stored_toy_model(tmp_path / "none.json"), ValueError, "no stored toy model")


def test_writing_and_reading_give_the_same_weights(tmp_path):
    model, vocab = stored_toy_model()
    special = DOC["special"]
    path = write_toy_model(model, vocab, special, tmp_path / "m.json", dtype="float32")
    again, vocab_again = stored_toy_model(path)
    assert vocab_again == vocab
    for name, t in model.state_dict().items():
        assert torch.equal(again.state_dict()[name], t)  # float16 values are float32's exactly


def test_writing_refuses_a_model_the_page_cannot_compute(refuses, tmp_path):
    model, vocab = stored_toy_model()
    config = BertConfig(**{**DOC["config"], "head_bias": False})
    refuses(lambda: write_toy_model(MiniBert(config), vocab, DOC["special"], tmp_path / "m.json"),
            ValueError, "every part", "head_bias")
    refuses(lambda: write_toy_model(model, vocab, DOC["special"], tmp_path / "m.json",
                                    dtype="bfloat16"), ValueError, "dtype")
    refuses(lambda: write_toy_model(model, vocab[:-1], DOC["special"], tmp_path / "m.json"),
            ValueError, "vocab_size")


def test_the_blob_is_the_stored_model_compact():
    blob = toy_model_blob()
    doc = json.loads(blob)
    assert "</" not in blob and "made_by" not in doc and ", " not in blob[:200]
    assert {k: doc[k] for k in ("weights", "sha256", "tensors", "vocab", "special")} == \
        {k: DOC[k] for k in ("weights", "sha256", "tensors", "vocab", "special")}
    assert len(blob.encode()) < 200_000


def test_a_typed_sentence_becomes_the_models_ids(refuses):
    vocab = DOC["vocab"]
    ids, masked = toy_model_ids("The small ___ barked. ")
    assert [vocab[i] for i in ids] == ["[CLS]", "the", "small", "[MASK]", "barked", ".",
                                       "[SEP]"]
    assert masked == [2]
    ids, masked = toy_model_ids("[MASK] cat _ on the mat.")
    assert [vocab[i] for i in ids][:4] == ["[CLS]", "[MASK]", "cat", "[MASK]"] and masked == [0, 2]
    refuses(lambda: toy_model_ids("the small ___ meowed ."), ValueError, "'meowed'",
            "not a word of the toy world")
    refuses(lambda: toy_model_ids("the cat sat ."), ValueError, "no blank: write ___")
    refuses(lambda: toy_model_ids("the ___ " * 11), ValueError, "max_len = 20", "this one 22")
    refuses(lambda: toy_model_ids("  "), ValueError, "no words")
    refuses(lambda: toy_model_ids("[cls] ___ ."), ValueError, "'[cls]'")
