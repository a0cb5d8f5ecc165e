"""The Hugging Face round trip, offline: export, load with transformers, import back."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig as HFConfig
from transformers import (
    BertForMaskedLM,
    BertForPreTraining,
    BertModel,
    BertTokenizerFast,
    GPT2Config,
    GPT2LMHeadModel,
    pipeline,
)

from mlmlib.hf import export_hf, import_hf
from mlmlib.model import BertConfig, MiniBert
from mlmlib.tokenizer import SPECIAL_TOKENS

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", ".", "a", "big"]
VOCAB = [*SPECIAL_TOKENS, *WORDS]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def tiny(nsp=False, **parts):
    torch.manual_seed(0)
    return MiniBert(BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_layers=2,
                               num_heads=4, intermediate_size=64, max_position=16,
                               nsp=nsp, **parts)).eval()


def test_export_loads_in_transformers_with_the_same_scores(tmp_path):
    model = tiny()
    export_hf(model, VOCAB, tmp_path / "m")
    hf = BertForMaskedLM.from_pretrained(tmp_path / "m", local_files_only=True).eval()
    ids = torch.tensor([[2, 5, 6, 4, 8, 5, 9, 3]])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        ours = model(ids, attention_mask=mask).logits
        theirs = hf(input_ids=ids, attention_mask=mask).logits
    assert (ours - theirs).abs().max().item() < 1e-4
    tok = BertTokenizerFast.from_pretrained(tmp_path / "m", local_files_only=True)
    assert tok.convert_ids_to_tokens([2, 5, 4, 3]) == ["[CLS]", "the", "[MASK]", "[SEP]"]
    fill = pipeline("fill-mask", model=hf, tokenizer=tok)
    guesses = fill("the cat [MASK] on the mat .")
    assert len(guesses) == 5 and all(g["token_str"] in VOCAB for g in guesses)
    assert abs(sum(g["score"] for g in fill("the [MASK]", top_k=len(VOCAB))) - 1) < 1e-4


def test_export_with_nsp_head(tmp_path):
    model = tiny(nsp=True)
    export_hf(model, VOCAB, tmp_path)
    hf = BertForPreTraining.from_pretrained(tmp_path, local_files_only=True).eval()
    ids = torch.tensor([[2, 5, 6, 3, 8, 9, 3]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1]])
    with torch.no_grad():
        ours = model(ids, token_type_ids=types)
        theirs = hf(input_ids=ids, token_type_ids=types)
    assert (ours.logits - theirs.prediction_logits).abs().max() < 1e-4
    assert (ours.nsp_logits - theirs.seq_relationship_logits).abs().max() < 1e-4


def test_import_from_a_local_hugging_face_directory(tmp_path):
    torch.manual_seed(1)
    hf = BertForMaskedLM(HFConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=64,
                                  max_position_embeddings=16)).eval()
    hf.save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    model, vocab = import_hf(tmp_path)
    assert not model.training  # as from_pretrained: dropout off, the same scores every call
    ids = torch.tensor([[2, 7, 4, 11, 3, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0]])
    with torch.no_grad():
        diff = (model(ids, attention_mask=mask).logits - hf(input_ids=ids,
                                                            attention_mask=mask).logits)
    assert diff[:, :5].abs().max() < 1e-4
    assert vocab == VOCAB


def test_nothing_saved_is_overwritten_by_accident(tmp_path):
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        export_hf(tiny(), VOCAB, tmp_path)
    assert keep.read_text() == "mine"
    with pytest.raises(ValueError, match="special tokens"):
        export_hf(tiny(), [*WORDS, "v", "w", "x", "y", "z"], tmp_path / "new")
    with pytest.raises(FileNotFoundError, match=r"no config\.json"):
        import_hf(tmp_path)


# ---------------------------------------------------------------- folders that must be refused

SIZES = {"vocab_size": len(VOCAB), "hidden_size": 8, "num_hidden_layers": 1,
         "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 8}
WORD = "bert.embeddings.word_embeddings.weight"


def save_hf(model, folder, vocab_txt=False):
    """``model`` saved as transformers 5 saves it: tokenizer.json, and vocab.txt if asked."""
    model.save_pretrained(folder)
    BertTokenizerFast(vocab={t: i for i, t in enumerate(VOCAB)}).save_pretrained(folder)
    if vocab_txt:
        (folder / "vocab.txt").write_text("".join(f"{t}\n" for t in VOCAB), encoding="utf-8")
    return folder


def variant(base, folder, config=None, weights=None, files=None):
    """A copy of ``base`` with config.json keys changed (None deletes), the weights edited by
    ``weights(state)``, and ``files`` written (text, bytes, or None to delete)."""
    shutil.copytree(base, folder)
    if config is not None:
        raw = json.loads((folder / "config.json").read_text())
        raw.update(config)
        raw = {k: v for k, v in raw.items() if v is not None}
        (folder / "config.json").write_text(json.dumps(raw))
    if weights is not None:
        file = folder / "model.safetensors"
        save_file(weights(load_file(file)), file)
    for name, content in (files or {}).items():
        if content is None:
            (folder / name).unlink()
        elif isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            (folder / name).write_text(content, encoding="utf-8")
    return folder


def edit(**changes):
    """A weights editor: each name set to a tensor, a function of the old one, or None (drop)."""
    def apply(state):
        for name, value in changes.items():
            name = name.replace("__", ".")
            if value is None:
                del state[name]
            else:
                state[name] = value(state[name]) if callable(value) else value
        return state
    return apply


def tokenizer_json(**vocab_changes):
    def text(folder):
        raw = json.loads((folder / "tokenizer.json").read_text())
        raw["model"]["vocab"].update(vocab_changes)
        return json.dumps(raw)
    return text


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Every folder the bad-input cases read, built once: small, so the module runs fast."""
    root = tmp_path_factory.mktemp("hf")
    torch.manual_seed(0)
    good = save_hf(BertForMaskedLM(HFConfig(**SIZES)), root / "good", vocab_txt=True)
    f = {"good": good, "file": good / "config.json", "nowhere": root / "nowhere"}
    f["gpt2"] = root / "gpt2"
    GPT2LMHeadModel(GPT2Config(n_embd=8, n_layer=1, n_head=2, vocab_size=len(VOCAB),
                               n_positions=8, bos_token_id=2, eos_token_id=3)
                    ).save_pretrained(f["gpt2"])
    f["base"] = save_hf(BertModel(HFConfig(**SIZES)), root / "base")
    f["untied"] = save_hf(BertForMaskedLM(HFConfig(**SIZES, tie_word_embeddings=False)),
                          root / "untied")
    tok = json.loads((f["base"] / "tokenizer.json").read_text())
    changes = {
        "not-json": {"files": {"config.json": "{not json"}},
        "json-list": {"files": {"config.json": "[1, 2]"}},
        "no-type": {"config": {"model_type": None}},
        "relu": {"config": {"hidden_act": "relu"}},
        "decoder": {"config": {"is_decoder": True}},
        "cross": {"config": {"add_cross_attention": True}},
        "relative": {"config": {"position_embedding_type": "relative_key"}},
        "eps": {"config": {"layer_norm_eps": -1e-12}},
        "heads": {"config": {"num_attention_heads": 3}},
        "type-size": {"config": {"type_vocab_size": 0}},
        "big": {"config": {"hidden_size": "big"}},
        "pruned": {"config": {"pruned_heads": {"0": [1]}}},
        "vocab-size": {"config": {"vocab_size": len(VOCAB) + 1}},
        "tie-false": {"config": {"tie_word_embeddings": False}},
        "no-weights": {"files": {"model.safetensors": None}},
        "corrupt": {"files": {"model.safetensors": b"not a safetensors file"}},
        "missing": {"weights": edit(bert__encoder__layer__0__output__dense__bias=None)},
        "unused": {"weights": edit(classifier__weight=torch.zeros(2, 8))},
        "pooler": {"weights": edit(bert__pooler__dense__bias=torch.zeros(8))},
        "nan": {"weights": edit(cls__predictions__transform__dense__bias=torch.full(
            (8,), float("nan")))},
        "shape": {"weights": edit(bert__embeddings__LayerNorm__bias=torch.zeros(9))},
        "bias": {"weights": edit(cls__predictions__decoder__bias=torch.ones(len(VOCAB)))},
        "no-vocab": {"files": {"vocab.txt": None, "tokenizer.json": None}},
        "short": {"files": {"vocab.txt": "".join(f"{t}\n" for t in VOCAB[:-1])}},
        "duplicate": {"files": {"vocab.txt": "".join(f"{t}\n" for t in [*VOCAB[:-1], "cat"])}},
        "blank": {"files": {"vocab.txt": "".join(f"{t}\n" for t in [*VOCAB[:-1], ""])}},
        "latin1": {"files": {"vocab.txt": "caf\xe9\n".encode("latin-1")}},
        "gap": {"files": {"vocab.txt": None, "tokenizer.json": tokenizer_json(big=99)}},
        "same-id": {"files": {"vocab.txt": None, "tokenizer.json": tokenizer_json(big=5)}},
        "id-text": {"files": {"vocab.txt": None, "tokenizer.json": tokenizer_json(big="14")}},
        "bpe": {"files": {"vocab.txt": None, "tokenizer.json": json.dumps(
            {**tok, "model": {**tok["model"], "type": "BPE"}})}},
        "tok-not-json": {"files": {"vocab.txt": None, "tokenizer.json": "{"}},
    }
    for name, change in changes.items():
        files = change.get("files", {})
        if files.get("tokenizer.json") is not None and callable(files["tokenizer.json"]):
            files["tokenizer.json"] = files["tokenizer.json"](good)
        f[name] = variant(good, root / name, change.get("config"), change.get("weights"), files)
    f["out-file"] = root / "a-file"
    f["out-file"].write_text("mine")
    return f


def case(call, error, *words, id):
    return pytest.param(call, error, words, id=id)


M, V = tiny(), VOCAB  # the export cases' model and vocabulary
SWAPPED = [V[1], V[0], *V[2:]]  # [PAD] no longer at the model's pad_token_id 0


@pytest.mark.parametrize(("call", "error", "words"), [
    case(lambda f: import_hf(f["gpt2"]), ValueError, "gpt2", "model_type", "bert", id="gpt2"),
    case(lambda f: import_hf(f["base"]), ValueError, "no mlm head", "cls.predictions",
         id="bert-model"),
    case(lambda f: export_hf(tiny(position_embeddings=False), VOCAB, f["good"] / "x"),
         ValueError, "position_embeddings", "no such variant", id="export-no-positions"),
    case(lambda f: export_hf(tiny(head_transform=False, head_bias=False), VOCAB,
                             f["good"] / "x"),
         ValueError, "head_transform, head_bias", id="export-no-head-transform"),
    case(lambda f: import_hf(f["file"]), NotADirectoryError, "is a file", id="path-is-file"),
    case(lambda f: import_hf(f["nowhere"]), FileNotFoundError, "no config.json", id="missing"),
    case(lambda f: import_hf(3), TypeError, "directory", "path", id="path-not-path"),
    case(lambda f: import_hf(f["not-json"]), ValueError, "config.json", "not valid json",
         id="config-not-json"),
    case(lambda f: import_hf(f["json-list"]), ValueError, "json object", id="config-list"),
    case(lambda f: import_hf(f["no-type"]), ValueError, "model_type none", id="no-model-type"),
    case(lambda f: import_hf(f["relu"]), ValueError, "gelu", "relu", id="relu"),
    case(lambda f: import_hf(f["decoder"]), ValueError, "is_decoder", id="is-decoder"),
    case(lambda f: import_hf(f["cross"]), ValueError, "cross-attention", id="cross-attention"),
    case(lambda f: import_hf(f["relative"]), ValueError, "position_embedding_type",
         "relative_key", id="relative-positions"),
    case(lambda f: import_hf(f["eps"]), ValueError, "layer_norm_eps", "positive",
         id="negative-eps"),
    case(lambda f: import_hf(f["heads"]), ValueError, "multiple of num_heads", id="heads"),
    case(lambda f: import_hf(f["type-size"]), ValueError, "type_vocab_size", id="type-size"),
    case(lambda f: import_hf(f["big"]), ValueError, "config", "hidden_size", id="size-str"),
    case(lambda f: import_hf(f["pruned"]), ValueError, "pruned_heads", id="pruned-heads"),
    case(lambda f: import_hf(f["vocab-size"]), ValueError, WORD, "shape", id="vocab-size"),
    case(lambda f: import_hf(f["tie-false"]), ValueError, "tie_word_embeddings",
         "decoder.weight", id="tie-false-no-decoder"),
    case(lambda f: import_hf(f["no-weights"]), FileNotFoundError, "no weights",
         "model.safetensors", id="no-weights"),
    case(lambda f: import_hf(f["corrupt"]), ValueError, "could not be read", id="corrupt"),
    case(lambda f: import_hf(f["missing"]), ValueError, "lacks weights",
         "bert.encoder.layer.0.output.dense.bias", id="missing-weight"),
    case(lambda f: import_hf(f["unused"]), ValueError, "cannot use", "classifier.weight",
         id="unused-weight"),
    case(lambda f: import_hf(f["pooler"]), ValueError, "cannot use", "bert.pooler",
         id="pooler-without-nsp"),
    case(lambda f: import_hf(f["nan"]), ValueError, "transform.dense.bias", "finite",
         id="nan-weight"),
    case(lambda f: import_hf(f["shape"]), ValueError, "layernorm.bias", "(9,)", id="shape"),
    case(lambda f: import_hf(f["bias"]), ValueError, "decoder.bias", "cls.predictions.bias",
         id="two-biases"),
    case(lambda f: import_hf(f["no-vocab"]), FileNotFoundError, "vocab.txt", "tokenizer.json",
         id="no-vocabulary"),
    case(lambda f: import_hf(f["short"]), ValueError, "14 tokens", "vocab_size 15",
         id="vocab-too-short"),
    case(lambda f: import_hf(f["duplicate"]), ValueError, "duplicate", "'cat'",
         id="vocab-duplicate"),
    case(lambda f: import_hf(f["blank"]), ValueError, "token 14", "non-empty", id="vocab-blank"),
    case(lambda f: import_hf(f["latin1"]), ValueError, "vocab.txt", "utf-8", id="vocab-latin1"),
    case(lambda f: import_hf(f["gap"]), ValueError, "not contiguous", "id 14", id="id-gap"),
    case(lambda f: import_hf(f["same-id"]), ValueError, "'the'", "'big'", "both have id 5",
         id="same-id"),
    case(lambda f: import_hf(f["id-text"]), ValueError, "'big'", "not a whole number",
         id="id-not-int"),
    case(lambda f: import_hf(f["bpe"]), ValueError, "wordpiece", id="not-wordpiece"),
    case(lambda f: import_hf(f["tok-not-json"]), ValueError, "tokenizer.json", "not valid json",
         id="tokenizer-not-json"),
    case(lambda f: export_hf(BertForMaskedLM(HFConfig(**SIZES)), V, f["good"] / "x"), TypeError,
         "minibert", "bertformaskedlm", id="export-not-minibert"),
    case(lambda f: export_hf(M, "".join(V), f["good"] / "x"), TypeError, "list of str tokens",
         id="export-vocab-str"),
    case(lambda f: export_hf(M, {t: i for i, t in enumerate(V)}, f["good"] / "x"), TypeError,
         "list of str tokens", "dict", id="export-vocab-dict"),
    case(lambda f: export_hf(M, set(V), f["good"] / "x"), TypeError, "list of str tokens", "set",
         id="export-vocab-set"),
    case(lambda f: export_hf(M, [*V[:-1], 7], f["good"] / "x"), TypeError, "str tokens",
         "id 14", id="export-vocab-int"),
    case(lambda f: export_hf(M, [*V[:-1], "the"], f["good"] / "x"), ValueError, "duplicate",
         "'the'", "ids 5 and 14", id="export-duplicate"),
    case(lambda f: export_hf(M, V[:-1], f["good"] / "x"), ValueError, "14 tokens",
         "vocab_size 15", id="export-vocab-size"),
    case(lambda f: export_hf(M, [*V[:-1], "two\nlines"], f["good"] / "x"), ValueError,
         "token 14", "line break", id="export-newline"),
    case(lambda f: export_hf(M, [*V[:-1], ""], f["good"] / "x"), ValueError, "token 14",
         "non-empty", id="export-empty-token"),
    case(lambda f: export_hf(M, [*WORDS, "v", "w", "x", "y", "z"], f["good"] / "x"), ValueError,
         "special tokens", id="export-no-specials"),
    case(lambda f: export_hf(M, SWAPPED, f["good"] / "x"), ValueError, "pad_token_id is 0",
         "[pad] at id 1", id="export-pad-id"),
    case(lambda f: export_hf(M, V, f["out-file"]), NotADirectoryError, "is a file",
         id="export-to-file"),
    case(lambda f: export_hf(M, V, f["out-file"] / "below"), NotADirectoryError, "a-file",
         "is a file", id="export-below-file"),
    case(lambda f: export_hf(M, V, None), TypeError, "directory", "nonetype",
         id="export-path-none"),
    case(lambda f: export_hf(M, V, f["good"]), FileExistsError, "not empty",
         id="export-not-empty"),
    case(lambda f: export_hf(M, V, f["good"] / "x", overwrite="yes"), TypeError, "overwrite",
         id="export-overwrite-str"),
])
def test_bad_input_hf(folders, refuses, call, error, words):
    refuses(lambda: call(folders), error, *words)


def test_the_refused_folders_are_really_what_they_say(folders):
    """The cases above test what they mean to: transformers itself would load them silently."""
    assert not any(k.startswith("cls.") for k in load_file(folders["base"] / "model.safetensors"))
    assert json.loads((folders["gpt2"] / "config.json").read_text())["model_type"] == "gpt2"
    assert not (folders["good"] / "x").exists()  # no export case wrote anything


def test_a_folder_with_only_tokenizer_json_imports_its_vocabulary(tmp_path):
    torch.manual_seed(2)
    hf = BertForMaskedLM(HFConfig(**SIZES)).eval()
    save_hf(hf, tmp_path)  # transformers 5: tokenizer.json, no vocab.txt
    assert not (tmp_path / "vocab.txt").exists()
    model, vocab = import_hf(tmp_path)
    assert vocab == VOCAB
    ids = torch.tensor([[2, 5, 4, 7, 3]])
    with torch.no_grad():
        diff = model.eval()(ids).logits - hf(input_ids=ids).logits
    assert diff.abs().max() < 1e-5


def test_an_untied_decoder_is_loaded_as_it_is_and_exported_back(folders, tmp_path):
    """A BERT whose output matrix is its own: MiniBert(tie_embeddings=False), the same scores,
    and the same weights after a round trip through export_hf."""
    hf = BertForMaskedLM.from_pretrained(folders["untied"], local_files_only=True).eval()
    decoder = hf.cls.predictions.decoder.weight
    assert not torch.equal(decoder, hf.bert.embeddings.word_embeddings.weight)
    model, vocab = import_hf(folders["untied"])
    assert not model.config.tie_embeddings and torch.equal(model.decoder, decoder)
    ids = torch.tensor([[2, 5, 4, 7, 3]])
    with torch.no_grad():
        assert (model(ids).logits - hf(input_ids=ids).logits).abs().max() < 1e-5
    again, _ = import_hf(export_hf(model, vocab, tmp_path / "back"))
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, again.state_dict()[name]), name


def test_an_untied_config_whose_decoder_equals_the_embeddings_imports(tmp_path):
    hf = BertForMaskedLM(HFConfig(**SIZES, tie_word_embeddings=False)).eval()
    with torch.no_grad():
        hf.cls.predictions.decoder.weight.copy_(hf.bert.embeddings.word_embeddings.weight)
    save_hf(hf, tmp_path)
    model, _ = import_hf(tmp_path)
    ids = torch.tensor([[2, 5, 4, 3]])
    with torch.no_grad():
        assert (model.eval()(ids).logits - hf(input_ids=ids).logits).abs().max() < 1e-5


def test_nsp_round_trip(tmp_path):
    model = tiny(nsp=True)
    again, vocab = import_hf(export_hf(model, tuple(VOCAB), tmp_path))  # any sequence
    assert vocab == VOCAB and again.config == model.config
    ids = torch.tensor([[2, 5, 6, 3, 8, 9, 3]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1]])
    a, b = model(ids, token_type_ids=types), again.eval()(ids, token_type_ids=types)
    assert torch.equal(a.logits, b.logits) and torch.equal(a.nsp_logits, b.nsp_logits)


def test_legacy_pytorch_model_bin_with_gamma_and_beta(folders, tmp_path):
    state = load_file(folders["good"] / "model.safetensors")
    state = {k.replace("LayerNorm.weight", "LayerNorm.gamma")
             .replace("LayerNorm.bias", "LayerNorm.beta"): t for k, t in state.items()}
    state["bert.embeddings.position_ids"] = torch.arange(8)[None]  # an old buffer, dropped
    folder = variant(folders["good"], tmp_path / "old", files={"model.safetensors": None})
    torch.save(state, folder / "pytorch_model.bin")
    old, _ = import_hf(folder)
    new, _ = import_hf(folders["good"])
    assert all(torch.equal(x, y) for x, y in zip(old.state_dict().values(),
                                                 new.state_dict().values(), strict=True))


def test_a_model_trained_unpadded_scores_the_same_in_transformers(tmp_path):
    """The unpadded encoder (BertConfig.unpad, the training default) gives Hugging Face's
    loss on a padded batch of ragged rows, after an export."""
    from mlmlib.constants import IGNORE_INDEX

    model = tiny()
    assert model.config.unpad
    export_hf(model, VOCAB, tmp_path / "m")
    hf = BertForMaskedLM.from_pretrained(tmp_path / "m", local_files_only=True).eval()
    ids = torch.tensor([[2, 5, 6, 4, 8, 5, 9, 3], [2, 7, 5, 3, 0, 0, 0, 0],
                        [2, 9, 8, 6, 5, 3, 0, 0]])
    mask = (ids != 0).long()
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[0, 2], labels[1, 1], labels[2, 3], labels[2, 4] = 6, 7, 6, 5
    with torch.no_grad():
        ours = model(ids, attention_mask=mask, labels=labels).loss
        theirs = hf(input_ids=ids, attention_mask=mask, labels=labels).loss
    assert abs(ours.item() - theirs.item()) < 1e-5
