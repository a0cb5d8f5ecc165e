"""The trainer: it learns, resumes exactly after a real kill on any schedule, refuses damaged
checkpoints and changed settings, stops when the loss diverges, and two processes follow the
one-process curve. Its bad-input cases are in tests/test_bad_input_train.py."""

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

from mlmlib.model import BertConfig, MiniBert
from mlmlib.train import (
    CheckpointError,
    DivergedError,
    RunOptions,
    TrainData,
    Trainer,
    pick_device,
    read_checkpoint,
    toy_recipe,
)

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["--hidden-size", "32", "--num-layers", "1", "--num-heads", "2", "--batch-size", "32",
         "--warmup", "10", "--quiet", "--dropout", "0.1", "--attention-dropout", "0.1"]
TOY = ["--train-sentences", "2000"]  # an option of the toy world's only


# Every process of a test that compares two runs bit for bit uses one thread: how a matrix
# product splits its sums over threads changes the last bits, and a CI machine need not give
# each process the same number (a flaky failure on CI was exactly that).
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def cli(*args, out=None, toy=True):
    cmd = [sys.executable, "-m", "mlmlib.train", *SMALL, *(TOY if toy else []), *args]
    if out is not None:
        cmd += ["--out", str(out)]
    return cmd


def run(*args, out=None):
    result = subprocess.run(cli(*args, out=out), cwd=ROOT, capture_output=True, text=True,
                            timeout=300, env=ONE_THREAD)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def without_timing(history):
    return [{k: v for k, v in h.items() if k != "tokens_per_s"} for h in history]


def test_training_lowers_the_eval_loss_and_records_a_history(make_trainer, toy):
    data, model_config = toy
    trainer = make_trainer(model_config, data, **dict(steps=60, batch_size=32, eval_every=20,
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


@pytest.mark.slow
def test_resume_after_a_real_kill_is_exact_between_evaluations(tmp_path):
    """Checkpoints every 10 steps, evaluations every 20: killed right after step 30 (half-way
    through an evaluation window), resumed, it ends with the weights and the history of the
    run that was never stopped, training losses included."""
    steps = ["--steps", "100", "--eval-every", "20", "--checkpoint-every", "10",
             "--device", "cpu"]  # the bitwise claim is the CPU's (a GPU: tests/test_cuda.py)
    run(*steps, out=tmp_path / "whole")
    killed = tmp_path / "killed"
    proc = subprocess.Popen(cli(*steps, out=killed), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=ONE_THREAD)
    deadline = time.time() + 240
    while not (killed / "step-0000030.pt").exists():
        assert proc.poll() is None and time.time() < deadline, "no checkpoint appeared"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "step-0000100.pt").exists(), "the run finished before it was killed"
    for later in killed.glob("step-*.pt"):  # on a busy machine the kill may come late
        if int(later.stem[5:]) > 30:
            later.unlink()
    stopped_at = read_checkpoint(killed / "step-0000030.pt")
    assert stopped_at["pending_losses"], "no training loss waiting for its evaluation"
    resumed = run(*steps, "--resume", out=killed)
    assert "warning" not in resumed.stderr  # the same machine and threads: nothing to warn of
    a = read_checkpoint(tmp_path / "whole" / "step-0000100.pt")
    b = read_checkpoint(killed / "step-0000100.pt")
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    history_a = json.loads((tmp_path / "whole" / "history.json").read_text())
    history_b = json.loads((killed / "history.json").read_text())
    assert [h["step"] for h in history_a] == [0, 20, 40, 60, 80, 100]
    assert without_timing(history_a) == without_timing(history_b)


@pytest.mark.slow
def test_resuming_with_other_threads_warns_that_the_last_bits_will_differ(make_trainer, toy,
                                                                          tmp_path):
    data, model_config = toy
    config = dict(warmup=2, steps=10, batch_size=32, eval_every=5, checkpoint_every=5,
                  quiet=True, device="cpu")
    make_trainer(model_config, data, **config, out_dir=tmp_path).fit()
    threads = torch.get_num_threads()
    torch.set_num_threads(threads + 1)
    try:
        with pytest.warns(RuntimeWarning, match=rf"with {threads} thread\(s\); this run uses "
                          rf"cpu with {threads + 1}.*OMP_NUM_THREADS={threads}"):
            make_trainer(model_config, data, **config, out_dir=tmp_path, resume=True)
    finally:
        torch.set_num_threads(threads)
    result = subprocess.run(cli("--steps", "10", "--eval-every", "5", "--resume", out=tmp_path
                                / "cli"), cwd=ROOT, capture_output=True, text=True)
    cpu = ("--device", "cpu")
    assert result.returncode == 1  # nothing to resume in a new folder: refused, in one line
    run("--steps", "10", "--eval-every", "5", "--checkpoint-every", "5", *cpu,
        out=tmp_path / "cli")
    result = subprocess.run(cli("--steps", "12", "--eval-every", "6", "--checkpoint-every", "6",
                                "--allow-changes", "--resume", *cpu, out=tmp_path / "cli"),
                            cwd=ROOT,
                            capture_output=True, text=True,
                            env={**ONE_THREAD, "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"})
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "with 1 thread(s); this run uses cpu with 2" in warning[0]


@pytest.mark.parametrize("checkpoint_every,eval_every,resume_from",
                         [(7, 10, 14), (5, 3, 5), (4, 4, 8), (6, 25, 18)])
def test_resume_is_exact_on_any_schedule(make_trainer, toy, tmp_path, checkpoint_every,
                                         eval_every, resume_from):
    data, model_config = toy
    config = dict(steps=24, batch_size=32, warmup=5, eval_every=eval_every,
                  checkpoint_every=checkpoint_every, keep_checkpoints=10, quiet=True,
                  device="cpu")
    whole = make_trainer(model_config, data, **config, out_dir=tmp_path / "whole")
    whole.fit()
    make_trainer(model_config, data, **config, out_dir=tmp_path).fit()
    for later in sorted(tmp_path.glob("step-*.pt")):
        if int(later.stem[5:]) > resume_from:
            later.unlink()  # as if killed just after the checkpoint at resume_from
    resumed = make_trainer(model_config, data, **config, out_dir=tmp_path, resume=True)
    assert resumed.step == resume_from
    resumed.fit()
    for (name, a), b in zip(whole.model.state_dict().items(),
                            resumed.model.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert without_timing(whole.history) == without_timing(resumed.history)
    assert without_timing(json.loads((tmp_path / "history.json").read_text())) \
        == without_timing(whole.history)


def test_a_damaged_checkpoint_is_refused_and_the_previous_one_survives(make_trainer, toy,
                                                                        tmp_path):
    data, model_config = toy
    config = dict(warmup=2, steps=20, batch_size=32, eval_every=10, checkpoint_every=10,
                  quiet=True)
    make_trainer(model_config, data, **config, out_dir=tmp_path).fit()
    older, newer = sorted(tmp_path.glob("step-*.pt"))
    whole = newer.read_bytes()
    newer.write_bytes(whole[:500])  # truncated, as by a full disk
    with pytest.raises(CheckpointError, match="corrupt or truncated") as info:
        make_trainer(model_config, data, **config, out_dir=tmp_path, resume=True)
    assert older.name in str(info.value)
    flipped = bytearray(whole)
    flipped[len(whole) // 2] ^= 0x10  # one bit inside a tensor, as by a bad disk or copy
    newer.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="checksum does not match") as info:
        make_trainer(model_config, data, **config, out_dir=tmp_path, resume=True)
    assert older.name in str(info.value)
    resumed = make_trainer(model_config, data, **config, out_dir=tmp_path / "elsewhere")
    resumed.load_checkpoint(older)  # the previous good one still loads
    assert resumed.step == 10
    assert not list(tmp_path.glob(".*.tmp"))


def test_checkpoints_are_kept_to_the_newest_few(make_trainer, toy, tmp_path):
    data, model_config = toy
    config = dict(warmup=2, steps=40, batch_size=32, eval_every=10, checkpoint_every=10,
                  keep_checkpoints=2, quiet=True)
    make_trainer(model_config, data, **config, out_dir=tmp_path).fit()
    assert [p.name for p in sorted(tmp_path.glob("step-*.pt"))] == ["step-0000030.pt",
                                                                     "step-0000040.pt"]
    other = BertConfig(vocab_size=model_config.vocab_size, hidden_size=64, num_layers=1,
                       num_heads=2, intermediate_size=128, max_position=22)
    with pytest.raises(CheckpointError, match="another model shape"):
        make_trainer(other, data, **config, out_dir=tmp_path, resume=True)


def test_resuming_with_other_settings_or_data_is_refused_naming_each(make_trainer, toy,
                                                                      tmp_path):
    data, model_config = toy
    config = dict(warmup=2, steps=20, batch_size=32, eval_every=10, checkpoint_every=10,
                  quiet=True)
    make_trainer(model_config, data, **config, out_dir=tmp_path).fit()
    other = dict(warmup=2, steps=30, batch_size=16, lr=1e-3, eval_every=5,
                 checkpoint_every=10, seed=3, quiet=True)
    with pytest.raises(CheckpointError) as info:
        make_trainer(model_config, data, **other, out_dir=tmp_path, resume=True)
    message = str(info.value)
    for setting in ("steps (checkpoint 20, now 30)", "batch_size", "lr", "seed"):
        assert setting in message
    assert "eval_every" not in message  # logging only: free to change
    smaller = TrainData(data.rows._replace(input_ids=data.rows.input_ids[:100],
                                           attention_mask=data.rows.attention_mask[:100],
                                           token_type_ids=data.rows.token_type_ids[:100]),
                        data.eval, data.vocab_size, data.mask_token_id, data.special_ids)
    with pytest.raises(CheckpointError, match="the data"):
        make_trainer(model_config, smaller, **config, out_dir=tmp_path, resume=True)
    longer = make_trainer(model_config, data, **other, out_dir=tmp_path, resume=True,
                     allow_changes=True)
    assert longer.optimizer.param_groups[0]["initial_lr"] == 1e-3
    assert [h["step"] for h in longer.fit()] == [0, 10, 20, 25, 30]


def test_a_folder_with_a_run_is_not_overwritten(make_trainer, toy, tmp_path):
    data, model_config = toy
    config = dict(warmup=2, steps=4, batch_size=32, eval_every=2, quiet=True)
    make_trainer(model_config, data, **config, out_dir=tmp_path).fit()  # no checkpoints
    saved = (tmp_path / "history.json").read_text()
    with pytest.raises(FileExistsError, match="already holds a training run"):
        make_trainer(model_config, data, **config, out_dir=tmp_path)
    with pytest.raises(CheckpointError, match="without checkpoints"):
        make_trainer(model_config, data, **config, out_dir=tmp_path, resume=True)
    assert (tmp_path / "history.json").read_text() == saved


@pytest.mark.slow
def test_a_diverging_run_stops_with_a_clear_error_and_keeps_its_checkpoint(tmp_path):
    """A learning rate of 1e30 blows the weights up: the run stops at the first non-finite
    loss or gradient, exit status 1, one line of error; the last checkpoint still loads."""
    result = subprocess.run(cli("--steps", "6", "--lr", "1e30", "--warmup", "0",
                                "--eval-every", "3", "--checkpoint-every", "1", "--clip", "inf",
                                out=tmp_path),
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("error: training diverged: "), result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
    kept = sorted(tmp_path.glob("step-*.pt"))
    assert kept and str(kept[-1]) in result.stderr
    state = read_checkpoint(kept[-1])
    assert all(torch.isfinite(t).all() for t in state["model"].values())
    history = json.loads((tmp_path / "history.json").read_text())
    assert history == state["history"]  # the records up to the checkpoint, durably written


def test_diverged_error_in_process(make_trainer, toy):
    data, model_config = toy
    trainer = make_trainer(model_config, data, **dict(steps=5, batch_size=32, lr=1e30,
                                                      warmup=0, clip=float("inf"),
                                                      eval_every=1, quiet=True))
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    with pytest.raises(DivergedError, match="no checkpoint was saved"):
        trainer.fit()
    assert trainer.step >= 1  # at least one step went through before the blow-up
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    assert any(not torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_follow_the_one_process_curve(tmp_path):
    """Same global batch, same masks, dropout off: eval losses agree to 1e-4.

    They are not bitwise equal: the two processes add their gradients in another order.
    """
    args = ["--steps", "30", "--eval-every", "10", "--dropout", "0", "--attention-dropout", "0",
            "--device", "cpu"]
    run(*args, out=tmp_path / "one")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           f"--master_port={free_port()}", "-m", "mlmlib.train", *SMALL, *TOY, *args,
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
    model_config, recipe = toy_recipe(
        data.vocab_size, data.rows.input_ids.shape[1], steps=3, hidden_size=32, num_layers=1,
        num_heads=2, intermediate_size=128, batch_size=32, warmup=1)
    history = Trainer(MiniBert(model_config, rng=0), data, recipe,
                      RunOptions(eval_every=3, quiet=True)).fit()
    assert [h["step"] for h in history] == [0, 3]
    assert history[-1]["eval_loss"] < history[0]["eval_loss"]


def test_numpy_settings_are_stored_as_plain_numbers_and_resume(make_trainer, toy, tmp_path):
    """NumPy numbers (from a sweep, say) become Python ones, so the checkpoint loads back."""
    import numpy as np

    data, model_config = toy
    config = dict(steps=np.int64(4), batch_size=32, lr=np.geomspace(1e-3, 1e-2, 3)[0],
                  rate=np.float64(0.3), warmup=1, eval_every=2, checkpoint_every=2,
                  seed=np.int64(0), quiet=True)
    trainer = make_trainer(model_config, data, **config, out_dir=tmp_path)
    recipe = trainer.recipe
    assert type(recipe.lr) is float and type(recipe.steps) is int and type(recipe.seed) is int
    trainer.fit()
    for later in tmp_path.glob("step-0000004.pt"):
        later.unlink()
    assert make_trainer(model_config, data, **config, out_dir=tmp_path, resume=True).step == 2


def test_when_both_checkpoints_are_damaged_the_error_says_so(make_trainer, toy, tmp_path):
    data, model_config = toy
    config = dict(steps=4, batch_size=32, warmup=1, eval_every=2, checkpoint_every=2,
                  quiet=True)
    make_trainer(model_config, data, **config, out_dir=tmp_path).fit()
    for path in tmp_path.glob("step-*.pt"):
        path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(CheckpointError, match="is damaged too"):
        make_trainer(model_config, data, **config, out_dir=tmp_path, resume=True)


@pytest.mark.slow
def test_a_single_txt_file_is_split_into_paragraphs_and_trains(tmp_path):
    """The README's "a .txt file": one file becomes one document per paragraph (one held out
    for evaluation), and the command line trains on it."""
    from mlmlib.train import text_data

    paragraphs = [f"The {a} sat on the {b}. It was {c} and the {b} was warm."
                  for a, b, c in zip(["cat", "dog", "bird", "fox", "cow"] * 4,
                                     ["mat", "rug", "bed", "sofa", "chair"] * 4,
                                     ["happy", "tired", "calm", "old", "young"] * 4, strict=True)]
    story = tmp_path / "story.txt"
    story.write_text("\n\n".join(paragraphs) + "\n")
    data, wordpiece = text_data(str(story), vocab_size=120, max_len=24)
    train_rows, eval_rows = len(data.rows.input_ids), len(data.eval.input_ids)
    assert eval_rows >= 1 and train_rows >= 10  # 20 paragraphs: 2 held out, 18 packed
    assert wordpiece.encode("the cat sat") == [wordpiece.ids[w] for w in ("the", "cat", "sat")]
    result = subprocess.run(cli("--data", str(story), "--vocab-size", "120", "--max-len", "24",
                                "--steps", "4", "--warmup", "1", "--eval-every", "2",
                                "--batch-size", "8", toy=False),
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "step 4: eval loss" in result.stdout
