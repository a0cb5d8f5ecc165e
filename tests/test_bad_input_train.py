"""Bad input to mlmlib.train and its command line: each refused clearly, none trained on.

Library cases use the ``refuses`` fixture (tests/conftest.py): the exception type, raised by
mlmlib's own check, with a message naming the problem. Command-line cases run
``python -m mlmlib.train``'s ``main`` in this process and expect exit status 1 and exactly one
line on standard error, ``error: ...``, naming the problem (no traceback).
"""

import math
import zipfile
from dataclasses import fields

import pytest
import torch

from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import Batch
from mlmlib.model import BertConfig, MiniBert
from mlmlib.toyworld import ToyWorld
from mlmlib.train import (
    CheckpointError,
    Recipe,
    RunOptions,
    TrainData,
    Trainer,
    eval_batch,
    pick_device,
    read_checkpoint,
    text_data,
    toy_data,
    toy_recipe,
)
from mlmlib.train.checkpoint import write_checkpoint
from mlmlib.train.cli import main

# (settings, error, words the message must hold)
CONFIGS = [
    ({"steps": 0}, ValueError, "steps"), ({"steps": 1.5}, TypeError, "steps"),
    ({"steps": True}, TypeError, "steps"), ({"batch_size": 0}, ValueError, "batch_size"),
    ({"batch_size": "8"}, TypeError, "batch_size"), ({"eval_every": 0}, ValueError, "eval_every"),
    ({"warmup": -1}, ValueError, "warmup"), ({"checkpoint_every": -5}, ValueError, "checkpoint"),
    ({"keep_checkpoints": 0}, ValueError, "keep_checkpoints"), ({"seed": -1}, ValueError, "seed"),
    ({"seed": 1.0}, TypeError, "seed"), ({"lr": 0}, ValueError, "lr"),
    ({"lr": -1e-3}, ValueError, "lr"), ({"lr": math.inf}, ValueError, "lr", "finite"),
    ({"lr": math.nan}, ValueError, "lr", "nan"), ({"lr": "1e-3"}, TypeError, "lr"),
    ({"lr": True}, TypeError, "lr"), ({"weight_decay": -0.01}, ValueError, "weight_decay"),
    ({"weight_decay": math.inf}, ValueError, "weight_decay"), ({"clip": 0}, ValueError, "clip"),
    ({"clip": -1}, ValueError, "clip"), ({"clip": math.nan}, ValueError, "clip"),
    ({"rate": 0}, ValueError, "rate"), ({"rate": 1.5}, ValueError, "rate"),
    ({"rate": -0.1}, ValueError, "rate"), ({"mask_prob": 1.2}, ValueError, "mask_prob"),
    ({"random_prob": -0.1}, ValueError, "random_prob"),
    ({"mask_prob": 0.8, "random_prob": 0.3}, ValueError, "more than 1"),
    ({"rule": "random"}, ValueError, "rule"), ({"device": 0}, TypeError, "device"),
    ({"bf16": "yes"}, TypeError, "bf16"), ({"quiet": 1}, TypeError, "quiet"),
    ({"warmup": 100, "steps": 10}, ValueError, "warmup", "longer than the run"),
    ({"seed": 2**70}, ValueError, "seed", "64 bits"),
]


RUN_FIELDS = {f.name for f in fields(RunOptions)}


def _settings(**settings):
    """The settings class the fields belong to, made with them: RunOptions or Recipe."""
    return (RunOptions if set(settings) <= RUN_FIELDS else Recipe)(**settings)


@pytest.mark.parametrize("case", CONFIGS,
                         ids=[f"{'RunOptions' if set(c[0]) <= RUN_FIELDS else 'Recipe'}-"
                              f"{'-'.join(c[0])}-{next(iter(c[0].values()))!r}"
                              for c in CONFIGS])
def test_bad_input_train_config(refuses, case):
    settings, error, *words = case
    refuses(lambda: _settings(**settings), error, *words)


@pytest.fixture(scope="module")
def toy():
    data, vocab, _, _ = toy_data(ToyWorld(), n_train=200, n_eval=20, seed=0)
    model_config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_layers=1, num_heads=2,
                              intermediate_size=32, max_position=22)
    return data, model_config


def _rows(ids, labels=None):
    return Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), labels, None)


def _data(**change):
    ids = torch.tensor([[2, 5, 6, 3], [2, 6, 5, 3]])
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[:, 1] = ids[:, 1]
    parts = {"rows": _rows(ids), "eval": _rows(ids, labels), "vocab_size": 7,
             "mask_token_id": 4, "special_ids": [0, 1, 2, 3, 4], **change}
    return TrainData(**parts)


def _world_file(tmp_path, text):
    path = tmp_path / "corpus.txt"
    path.write_text(text)
    return path


def _damaged(tmp_path, how):
    path = tmp_path / "step-0000001.pt"
    if how == "legacy":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", b"x")
    elif how == "text":
        path.write_text("hello")
    elif how == "list":
        write_checkpoint(path, [1, 2])  # whole, but not a dict
    else:
        write_checkpoint(path, {"w": torch.ones(100)})
        data = bytearray(path.read_bytes())
        if how == "truncated":
            data = data[:-30]
        else:
            data[-60] ^= 0x01
        path.write_bytes(bytes(data))
    return path


def _padded(**change):
    ids = torch.tensor([[2, 5, 6, 3, 0, 0], [2, 6, 5, 5, 6, 3]])
    rows = Batch(ids, (ids != 0).long(), torch.zeros_like(ids), None, None)
    return _data(rows=rows, **change)


def _crafted(tmp_path, older=False):
    state = dict.fromkeys(["step", "model", "optimizer", "scheduler", "history",
                           "pending_losses", "seen_tokens", "rng", "data"], 0)
    settings = {"train_config": {}} if older else {"recipe": {}, "model_kind": "MiniBert"}
    write_checkpoint(tmp_path / "step-0000001.pt",
                     {**state, "model_config": "mini", **settings})
    return tmp_path


def _existing_run(tmp_path, toy):
    data, model_config = toy
    Trainer(MiniBert(model_config), data, Recipe(steps=2, batch_size=8, warmup=1),
            RunOptions(out_dir=tmp_path, eval_every=2, quiet=True)).fit()
    return tmp_path


def _trainer(model_config, data, recipe=None, **run):
    """A Trainer of a MiniBert at ``model_config``, run as ``run`` says."""
    return Trainer(MiniBert(model_config), data, recipe, RunOptions(**run))


NSP = BertConfig(vocab_size=7, hidden_size=8, num_layers=1, num_heads=2, intermediate_size=16,
                 max_position=8, nsp=True)
SMALL_MODEL = BertConfig(vocab_size=7, hidden_size=8, num_layers=1, num_heads=2,
                         intermediate_size=16, max_position=8)

# (call taking (tmp_path, toy), error, words)
CALLS = {
    "pick_device-gpu": (lambda p, t: pick_device("gpu"), ValueError, "device", "gpu"),
    "pick_device-int": (lambda p, t: pick_device(5), TypeError, "device"),
    "eval_batch-rows-tensor": (lambda p, t: eval_batch(torch.zeros(2, 4, dtype=torch.long), 10,
                                                       4, [0, 4], 0), TypeError, "rows",
                               "Batch"),
    "eval_batch-rate-2": (lambda p, t: eval_batch(Batch(torch.full((2, 4), 5),
                                                        torch.ones(2, 4), None),
                                                  10, 4, [0, 4], 0, rate=2.0), ValueError,
                          "rate"),
    "toy_data-world-str": (lambda p, t: toy_data("toy"), TypeError, "world"),
    "toy_data-n_train-0": (lambda p, t: toy_data(ToyWorld(), n_train=0), ValueError, "n_train"),
    "toy_data-n_eval-neg": (lambda p, t: toy_data(ToyWorld(), n_eval=-1), ValueError, "n_eval"),
    "toy_data-n_train-float": (lambda p, t: toy_data(ToyWorld(), n_train=2.5), ValueError,
                               "n_train"),
    "TrainData-vocab-1": (lambda p, t: _data(vocab_size=1), ValueError, "vocab_size"),
    "TrainData-rows-list": (lambda p, t: _data(rows=[[1, 2]]), TypeError, "rows", "batch"),
    "TrainData-float-ids": (lambda p, t: _data(rows=_rows(torch.ones(2, 3))), TypeError,
                            "input_ids", "integer"),
    "TrainData-id-outside": (lambda p, t: _data(rows=_rows(torch.tensor([[2, 9, 3]]))),
                             ValueError, "9", "outside"),
    "TrainData-negative-id": (lambda p, t: _data(rows=_rows(torch.tensor([[2, -1, 3]]))),
                              ValueError, "-1", "outside"),
    "TrainData-eval-unlabelled": (lambda p, t: _data(eval=_rows(torch.tensor([[2, 5, 3]]))),
                                  ValueError, "eval", "labels"),
    "TrainData-eval-no-target": (
        lambda p, t: _data(eval=_rows(torch.tensor([[2, 5, 3]]),
                                      torch.full((1, 3), IGNORE_INDEX))),
        ValueError, "no target"),
    "TrainData-mask-not-special": (lambda p, t: _data(mask_token_id=5), ValueError,
                                   "mask_token_id"),
    "TrainData-empty-rows": (lambda p, t: _data(rows=_rows(torch.zeros(0, 4, dtype=torch.long))),
                             ValueError, "no rows"),
    "Trainer-model-dict": (lambda p, t: Trainer(vars(t[1]), t[0]), TypeError, "model",
                           "masked-LM protocol"),
    "Trainer-model-config-missing": (lambda p, t: Trainer(torch.nn.Linear(2, 2), t[0]),
                                     TypeError, "model.config"),
    "Trainer-data-tuple": (lambda p, t: _trainer(t[1], tuple(t[0].rows)), TypeError, "data"),
    "Trainer-recipe-dict": (lambda p, t: _trainer(t[1], t[0], {"steps": 2}), TypeError,
                            "recipe"),
    "Trainer-run-dict": (lambda p, t: Trainer(MiniBert(t[1]), t[0], None, {"quiet": True}),
                         TypeError, "run"),
    "Trainer-vocab-mismatch": (lambda p, t: _trainer(SMALL_MODEL, t[0]), ValueError,
                               "vocab_size"),
    "Trainer-max-position": (
        lambda p, t: _trainer(BertConfig(vocab_size=t[0].vocab_size, hidden_size=8,
                                         num_layers=1, num_heads=2, intermediate_size=16,
                                         max_position=8), t[0]),
        ValueError, "max_position"),
    "Trainer-batch-too-big": (lambda p, t: _trainer(t[1], t[0], Recipe(batch_size=500)),
                              ValueError, "batch_size", "training set"),
    "Trainer-resume-no-out": (lambda p, t: _trainer(t[1], t[0], resume=True), ValueError,
                              "out_dir"),
    "Trainer-out-is-file": (lambda p, t: _trainer(t[1], t[0], out_dir=_world_file(p, "x")),
                            ValueError, "is a file"),
    "Trainer-resume-empty": (lambda p, t: _trainer(t[1], t[0], out_dir=p, resume=True),
                             CheckpointError, "nothing to resume"),
    "Trainer-run-exists": (lambda p, t: _trainer(t[1], t[0], out_dir=_existing_run(p, t)),
                           FileExistsError, "already holds"),
    "Trainer-resume-str": (lambda p, t: _trainer(t[1], t[0], out_dir=p, resume="no"),
                           TypeError, "resume"),
    "Trainer-allow-changes-str": (lambda p, t: _trainer(t[1], t[0], allow_changes="no"),
                                  TypeError, "allow_changes"),
    "Trainer-allow-changes-alone": (lambda p, t: _trainer(t[1], t[0], allow_changes=True),
                                    ValueError, "allow_changes", "resume"),
    "Trainer-out-dir-int": (lambda p, t: _trainer(t[1], t[0], out_dir=123), TypeError,
                            "out_dir"),
    "Trainer-checkpoints-nowhere": (
        lambda p, t: _trainer(t[1], t[0], Recipe(batch_size=8), checkpoint_every=1),
        ValueError, "checkpoint_every", "out_dir"),
    "Trainer-crafted-checkpoint": (
        lambda p, t: _trainer(t[1], t[0], out_dir=_crafted(p), resume=True), CheckpointError,
        "not one of mlmlib's"),
    "Trainer-older-checkpoint": (
        lambda p, t: _trainer(t[1], t[0], out_dir=_crafted(p, older=True), resume=True),
        CheckpointError, "older mlmlib", "recipe", "cannot be resumed", "['model']"),
    "Trainer-step-not-a-batch": (
        lambda p, t: _trainer(t[1], t[0], Recipe(batch_size=8)).train_step([1, 2]), TypeError,
        "batch", "masked"),
    "TrainData-pad-not-special": (lambda p, t: _padded(special_ids=[1, 2, 3, 4]), ValueError,
                                  "padding", "special_ids"),
    "TrainData-all-special": (lambda p, t: _data(special_ids=list(range(7))), ValueError,
                              "no ordinary word"),
    "TrainData-specials-str": (lambda p, t: _data(special_ids="01234"), TypeError,
                               "special_ids"),
    "TrainData-specials-none": (lambda p, t: _data(special_ids=None), TypeError, "special_ids"),
    "pick_device-meta": (lambda p, t: pick_device("meta"), ValueError, "meta", "cpu"),
    "toy_data-seed-huge": (lambda p, t: toy_data(ToyWorld(), 10, 5, seed=2**70), ValueError,
                           "seed"),
    "toy_data-seed-str": (lambda p, t: toy_data(ToyWorld(), 10, 5, seed="a"), ValueError,
                          "seed"),
    "text_data-empty-source": (lambda p, t: text_data(""), ValueError, "source"),
    "read_checkpoint-none": (lambda p, t: read_checkpoint(None), TypeError, "path"),
    "Trainer-nsp-without-pairs": (lambda p, t: _trainer(NSP, _data(), Recipe(batch_size=2)),
                                  ValueError, "nsp", "is_next"),
    "read_checkpoint-missing": (lambda p, t: read_checkpoint(p / "nope.pt"), CheckpointError,
                                "no checkpoint"),
    "read_checkpoint-text": (lambda p, t: read_checkpoint(_damaged(p, "text")), CheckpointError,
                             "not an mlmlib checkpoint"),
    "read_checkpoint-legacy": (lambda p, t: read_checkpoint(_damaged(p, "legacy")),
                               CheckpointError, "older mlmlib", "torch.load"),
    "read_checkpoint-truncated": (lambda p, t: read_checkpoint(_damaged(p, "truncated")),
                                  CheckpointError, "checksum"),
    "read_checkpoint-bit-flip": (lambda p, t: read_checkpoint(_damaged(p, "flip")),
                                 CheckpointError, "checksum"),
    "read_checkpoint-not-dict": (lambda p, t: read_checkpoint(_damaged(p, "list")),
                                 CheckpointError, "not a checkpoint"),
    "text_data-one-paragraph": (lambda p, t: text_data(str(_world_file(p, "One paragraph."))),
                                ValueError, "paragraph"),
    "text_data-missing": (lambda p, t: text_data(str(p / "missing.txt")), FileNotFoundError,
                          "no such file"),
    "text_data-empty-folder": (lambda p, t: text_data(str(p)), ValueError, ".txt"),
    "text_data-vocab-too-small": (
        lambda p, t: text_data(str(_world_file(p, "a cat.\n\nthe dog.")), vocab_size=3),
        ValueError, "vocab_size"),
    "toy_recipe-unknown": (lambda p, t: toy_recipe(211, 22, hiden_size=64), TypeError,
                           "no setting", "hiden_size"),
    "toy_recipe-bad-lr": (lambda p, t: toy_recipe(211, 22, lr=-1.0), ValueError, "lr"),
    "toy_recipe-bad-hidden": (lambda p, t: toy_recipe(211, 22, hidden_size=0), ValueError,
                              "hidden_size"),
}


@pytest.mark.parametrize("name", CALLS)
def test_bad_input_train(refuses, tmp_path, toy, name):
    call, error, *words = CALLS[name]
    refuses(lambda: call(tmp_path, toy), error, *words)


def test_cuda_asked_for_without_cuda(refuses):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    refuses(lambda: pick_device("cuda"), ValueError, "cuda", "not available")


# the toy world's option first: a case with text data leaves it out
SMALL = ["--train-sentences", "200", "--hidden-size", "16", "--num-heads", "2",
         "--num-layers", "1", "--batch-size", "8", "--steps", "2", "--warmup", "1",
         "--eval-every", "1", "--quiet"]

# (command-line arguments after SMALL, what the one line of error must hold); {tmp} is a
# fresh folder, {file} a one-paragraph text file, {run} a folder holding a finished run
CLI = {
    "clip-negative": (["--clip", "-1"], "clip"), "clip-zero": (["--clip", "0"], "clip"),
    "rate-zero": (["--rate", "0"], "rate"), "lr-inf": (["--lr", "inf"], "lr"),
    "lr-nan": (["--lr", "nan"], "lr"), "weight-decay": (["--weight-decay", "-1"], "weight_decay"),
    "batch-size-0": (["--batch-size", "0"], "batch_size"), "steps-0": (["--steps", "0"], "steps"),
    "eval-every-0": (["--eval-every", "0"], "eval_every"),
    "keep-0": (["--keep-checkpoints", "0"], "keep_checkpoints"),
    "rule": (["--rule", "xyz"], "rule"),
    "probabilities": (["--mask-prob", "0.9", "--random-prob", "0.2"], "more than 1"),
    "device-gpu": (["--device", "gpu"], "device"),
    "resume-no-out": (["--resume"], "--out"),
    "allow-changes-alone": (["--allow-changes"], "--resume"),
    "resume-nothing": (["--resume", "--out", "{tmp}"], "nothing to resume"),
    "out-is-file": (["--out", "{file}"], "is a file"),
    "out-has-a-run": (["--out", "{run}"], "already holds"),
    "resume-other-settings": (["--resume", "--out", "{run}", "--lr", "0.1"], "lr"),
    "data-missing": (["--data", "{tmp}/nope.txt"], "--data"),
    "data-one-paragraph": (["--data", "{file}"], "paragraph"),
    "data-empty-folder": (["--data", "{tmp}"], ".txt"),
    "hidden-0": (["--hidden-size", "0"], "hidden_size"),
    "heads-not-divisor": (["--num-heads", "3"], "multiple"),
    "dropout": (["--dropout", "1.5"], "dropout"), "max-len": (["--max-len", "2"], "--max-len"),
    "train-sentences-0": (["--train-sentences", "0"], "--train-sentences"),
    "vocab-size-for-toy": (["--vocab-size", "500"], "--vocab-size", "does not apply", "toy"),
    "train-sentences-for-text": (["--data", "python-docs", "--train-sentences", "5"],
                                 "--train-sentences", "does not apply"),
    "batch-bigger-than-data": (["--batch-size", "64", "--train-sentences", "10"],
                               "training set"),
    "data-empty": (["--data", ""], "--data"),
    "device-meta": (["--device", "meta"], "device"),
    "warmup-longer-than-run": (["--warmup", "100"], "warmup"),
}


@pytest.mark.parametrize("name", CLI)
def test_bad_input_cli(capsys, tmp_path, toy, name):
    args, words = CLI[name][0], CLI[name][1:]
    folders = {"tmp": tmp_path / "fresh", "file": tmp_path / "one.txt", "run": tmp_path / "run"}
    folders["tmp"].mkdir()
    folders["file"].write_text("Just one paragraph.\n")
    if "{run}" in args:
        assert main([*SMALL, "--out", str(folders["run"])]) == 0
        capsys.readouterr()
    args = [a.format(**{k: str(v) for k, v in folders.items()}) for a in args]
    small = SMALL if "--data" not in args or name.endswith("-for-text") else \
        SMALL[2:]  # --train-sentences is the toy world's: text data refuses it
    assert main([*small, *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    missing = [w for w in words if w.lower() not in err.lower()]
    assert not missing, f"{err!r} does not name {missing}"


def test_cli_debug_shows_the_traceback():
    with pytest.raises(ValueError, match="clip"):
        main([*SMALL, "--clip", "-1", "--debug"])
