"""The trainer: it learns, resumes exactly after a real kill, refuses damaged checkpoints,
and two processes follow the one-process curve."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from mlmlib.model import BertConfig
from mlmlib.toyworld import ToyWorld
from mlmlib.train import (
    CheckpointError,
    TrainConfig,
    Trainer,
    pick_device,
    toy_data,
    toy_recipe,
)

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["--hidden", "32", "--layers", "1", "--heads", "2", "--batch-size", "32",
         "--train-sentences", "2000", "--warmup", "10", "--quiet"]


def cli(*args, out=None):
    cmd = [sys.executable, "-m", "mlmlib.train", *SMALL, *args]
    if out is not None:
        cmd += ["--out", str(out)]
    return cmd


def run(*args, out=None):
    result = subprocess.run(cli(*args, out=out), cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def without_timing(history):
    return [{k: v for k, v in h.items() if k != "tokens_per_s"} for h in history]


@pytest.fixture(scope="module")
def toy():
    data, vocab, _, _ = toy_data(ToyWorld(), n_train=2000, n_eval=200, seed=0)
    model_config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_layers=1, num_heads=2,
                              intermediate_size=128, max_position=22)
    return data, model_config


def test_training_lowers_the_eval_loss_and_records_a_history(toy):
    data, model_config = toy
    trainer = Trainer(model_config, data, TrainConfig(steps=60, batch_size=32, eval_every=20,
                                                      warmup=10, quiet=True))
    history = trainer.fit()
    assert [h["step"] for h in history] == [0, 20, 40, 60]
    assert history[-1]["eval_loss"] < history[1]["eval_loss"] < history[0]["eval_loss"]
    assert abs(history[0]["eval_loss"] - 5.35) < 0.1  # untrained: near log |V|
    for h in history:
        assert h["perplexity"] == pytest.approx(2.718281828459045 ** h["eval_loss"])
        assert 0 <= h["accuracy"] <= 1
    assert all(h["tokens_per_s"] > 0 for h in history[1:])
    assert pick_device("cpu").type == "cpu"


def test_resume_after_a_real_kill_is_exact(tmp_path):
    steps = ["--steps", "80", "--eval-every", "20", "--checkpoint-every", "20"]
    run(*steps, out=tmp_path / "whole")
    killed = tmp_path / "killed"
    proc = subprocess.Popen(cli(*steps, out=killed), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while not (killed / "step-0000040.pt").exists():
        assert proc.poll() is None and time.time() < deadline, "no checkpoint appeared"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "step-0000080.pt").exists(), "the run finished before it was killed"
    run(*steps, "--resume", out=killed)
    a = torch.load(tmp_path / "whole" / "step-0000080.pt", weights_only=True)
    b = torch.load(killed / "step-0000080.pt", weights_only=True)
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    history_a = json.loads((tmp_path / "whole" / "history.json").read_text())
    history_b = json.loads((killed / "history.json").read_text())
    assert without_timing(history_a) == without_timing(history_b)


def test_a_damaged_checkpoint_is_refused_and_the_previous_one_survives(toy, tmp_path):
    data, model_config = toy
    config = TrainConfig(steps=20, batch_size=32, eval_every=10, checkpoint_every=10,
                         quiet=True)
    Trainer(model_config, data, config, out_dir=tmp_path).fit()
    older, newer = sorted(tmp_path.glob("step-*.pt"))
    newer.write_bytes(newer.read_bytes()[:500])  # truncated, as by a full disk
    with pytest.raises(CheckpointError, match="corrupt or truncated") as info:
        Trainer(model_config, data, config, out_dir=tmp_path, resume=True)
    assert older.name in str(info.value)
    resumed = Trainer(model_config, data, config, out_dir=tmp_path)
    resumed.load_checkpoint(older)  # the previous good one still loads
    assert resumed.step == 10
    assert not list(tmp_path.glob(".*.tmp"))


def test_checkpoints_are_kept_to_the_newest_few(toy, tmp_path):
    data, model_config = toy
    config = TrainConfig(steps=40, batch_size=32, eval_every=10, checkpoint_every=10,
                         keep_checkpoints=2, quiet=True)
    Trainer(model_config, data, config, out_dir=tmp_path).fit()
    assert [p.name for p in sorted(tmp_path.glob("step-*.pt"))] == ["step-0000030.pt",
                                                                     "step-0000040.pt"]
    other = BertConfig(vocab_size=model_config.vocab_size, hidden_size=64, num_layers=1,
                       num_heads=2, intermediate_size=128, max_position=22)
    with pytest.raises(CheckpointError, match="another model shape"):
        Trainer(other, data, config, out_dir=tmp_path, resume=True)


def test_bad_settings():
    with pytest.raises(ValueError, match="steps must be at least 1"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="lr must be positive"):
        TrainConfig(lr=0.0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_follow_the_one_process_curve(tmp_path):
    """Same global batch, same masks, dropout off: eval losses agree to 1e-4.

    They are not bitwise equal: the two processes add their gradients in another order.
    """
    args = ["--steps", "30", "--eval-every", "10", "--dropout", "0"]
    run(*args, out=tmp_path / "one")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           f"--master_port={free_port()}", "-m", "mlmlib.train", *SMALL, *args,
           "--out", str(tmp_path / "two")]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 processes" in result.stdout
    one = json.loads((tmp_path / "one" / "history.json").read_text())
    two = json.loads((tmp_path / "two" / "history.json").read_text())
    assert [h["step"] for h in one] == [h["step"] for h in two] == [0, 10, 20, 30]
    for a, b in zip(one, two, strict=True):
        assert abs(a["eval_loss"] - b["eval_loss"]) < 1e-4, (a, b)


def test_toy_recipe_is_the_course_recipe():
    model_config, train_config = toy_recipe(vocab_size=211, max_position=22)
    assert (model_config.vocab_size, model_config.max_position) == (211, 22)
    assert model_config.dropout == model_config.attention_dropout == 0.0
    assert train_config.steps == 1400
    assert train_config.rate > 0.15  # more targets per step than BERT's
    model_config, train_config = toy_recipe(211, 22, steps=3000, seed=2, hidden_size=32,
                                            batch_size=16)
    assert (train_config.steps, train_config.seed, train_config.batch_size) == (3000, 2, 16)
    assert model_config.hidden_size == 32
    with pytest.raises(TypeError, match="no setting hiden_size"):
        toy_recipe(211, 22, hiden_size=64)


def test_toy_recipe_trains(toy):
    data, _ = toy
    model_config, train_config = toy_recipe(
        data.vocab_size, data.rows.input_ids.shape[1], steps=3, hidden_size=32, num_layers=1,
        num_heads=2, intermediate_size=128, batch_size=32, warmup=1, eval_every=3, quiet=True)
    history = Trainer(model_config, data, train_config).fit()
    assert [h["step"] for h in history] == [0, 3]
    assert history[-1]["eval_loss"] < history[0]["eval_loss"]
