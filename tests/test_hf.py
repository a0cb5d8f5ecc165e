"""The Hugging Face round trip, offline: export, load with transformers, import back."""

import pytest
import torch
from transformers import BertConfig as HFConfig
from transformers import BertForMaskedLM, BertForPreTraining, BertTokenizerFast, pipeline

from mlmlib.hf import export_hf, import_hf
from mlmlib.model import BertConfig, MiniBert
from mlmlib.tokenizer import SPECIAL_TOKENS

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", ".", "a", "big"]
VOCAB = [*SPECIAL_TOKENS, *WORDS]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def tiny(nsp=False):
    torch.manual_seed(0)
    return MiniBert(BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_layers=2,
                               num_heads=4, intermediate_size=64, max_position=16,
                               nsp=nsp)).eval()


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
    model.eval()
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
        export_hf(tiny(), WORDS + ["x"] * 5, tmp_path / "new")
    with pytest.raises(FileNotFoundError, match=r"no config\.json"):
        import_hf(tmp_path)
