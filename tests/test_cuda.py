"""What the README promises on a GPU, checked on one: skipped where CUDA is absent.

The rest of the suite runs on any machine (on a GPU machine, too: ``bench/gpu_check.sh`` runs
it there); these tests need CUDA. Each compares the GPU with the CPU for the same inputs and
weights, or runs the path the README names: the model, the losses and masking with tensors
on the GPU, the trainer choosing CUDA by itself with bf16 autocast, a checkpoint written on
the GPU and resumed (there, and on the CPU), the Hugging Face round trip, and the command
line alone and under ``torchrun`` (DistributedDataParallel with NCCL). The CUDA tests never
ask for bitwise equality with the CPU: the two add in other orders.
"""

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from mlmlib.loss import mlm_loss, nsp_loss
from mlmlib.masking import choose_positions, mask_tokens
from mlmlib.model import BertConfig, MiniBert
from mlmlib.train import Recipe, RunOptions, Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ROOT = Path(__file__).resolve().parent.parent
GPU = torch.device("cuda")
SMALL = ["--hidden-size", "32", "--num-layers", "1", "--num-heads", "2", "--batch-size", "32",
         "--train-sentences", "2000", "--warmup", "10", "--quiet"]


def small_model(**changes):
    cfg = BertConfig(vocab_size=300, hidden_size=64, num_layers=2, num_heads=4,
                     intermediate_size=256, max_position=32, **changes)
    return MiniBert(cfg, rng=0)


def batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 300, (8, 32), generator=g)
    keep = torch.ones_like(ids)
    keep[:, 28:] = 0  # padding at the end of every row
    m = mask_tokens(ids, vocab_size=300, mask_token_id=4, special_ids=[0, 1, 2, 3, 4], rng=g,
                    rule="bert")
    return m.input_ids, keep, m.labels


def test_the_model_on_the_gpu_gives_the_cpu_numbers():
    cpu, gpu = small_model().eval(), small_model().to(GPU).eval()
    ids, keep, labels = batch()
    with torch.no_grad():
        a = cpu(ids, attention_mask=keep, labels=labels)
        b = gpu(ids.to(GPU), attention_mask=keep.to(GPU), labels=labels.to(GPU))
    assert b.logits.device.type == "cuda"
    torch.testing.assert_close(b.logits.cpu(), a.logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(b.loss.cpu(), a.loss, atol=1e-5, rtol=1e-5)


def test_the_unpadded_encoder_on_the_gpu_gives_the_padded_loss():
    g = torch.Generator().manual_seed(3)
    lengths = torch.randint(4, 33, (8,), generator=g)
    keep = (torch.arange(32)[None, :] < lengths[:, None]).long()
    ids = torch.randint(5, 300, (8, 32), generator=g) * keep
    labels = torch.where((torch.rand(8, 32, generator=g) < 0.3) & (keep == 1), ids, -100)
    labels[:, 1] = ids[:, 1]  # a target in every row
    losses = []
    for unpad in (True, False):
        model = small_model(unpad=unpad, dropout=0.0, attention_dropout=0.0).to(GPU)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids.to(GPU), attention_mask=keep.to(GPU), labels=labels.to(GPU)).loss
        loss.backward()
        losses.append((loss.item(), model.word_embeddings.weight.grad.float()))
    assert abs(losses[0][0] - losses[1][0]) < 2e-2  # bf16 rounds each route its own way
    assert float((losses[0][1] - losses[1][1]).abs().max()) < 5e-2


def test_gradients_on_the_gpu_match_the_cpu():
    cpu, gpu = small_model(dropout=0.0, attention_dropout=0.0), small_model(
        dropout=0.0, attention_dropout=0.0).to(GPU)
    ids, keep, labels = batch(1)
    cpu(ids, attention_mask=keep, labels=labels).loss.backward()
    gpu(ids.to(GPU), attention_mask=keep.to(GPU), labels=labels.to(GPU)).loss.backward()
    for (name, p), q in zip(cpu.named_parameters(), gpu.parameters(), strict=True):
        torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-5, rtol=1e-3, msg=name)


def test_bf16_autocast_stays_close_to_fp32():
    model = small_model().to(GPU).eval()
    ids, keep, labels = (t.to(GPU) for t in batch(2))
    seen = []
    model.blocks[0].ffn_in.register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    with torch.no_grad():
        full = model(ids, attention_mask=keep, labels=labels).loss
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(ids, attention_mask=keep, labels=labels)
    assert seen == [torch.float32, torch.bfloat16]  # the second pass multiplied in bf16
    assert abs(float(out.loss) - float(full)) < 0.01 * float(full)


def test_masking_a_batch_on_the_gpu_gives_the_cpu_masks_on_the_gpu():
    ids = torch.randint(5, 300, (4, 50), generator=torch.Generator().manual_seed(3))
    kwargs = {"vocab_size": 300, "mask_token_id": 4, "special_ids": [0, 1, 2, 3, 4],
              "rule": "bert"}
    on_cpu = mask_tokens(ids, rng=7, **kwargs)
    on_gpu = mask_tokens(ids.to(GPU), rng=7, **kwargs)
    assert on_gpu.input_ids.device.type == on_gpu.labels.device.type == "cuda"
    assert torch.equal(on_gpu.input_ids.cpu(), on_cpu.input_ids)
    assert torch.equal(on_gpu.labels.cpu(), on_cpu.labels)
    cont = torch.zeros_like(ids, dtype=torch.bool)
    cont[:, 1::3] = True  # some ## pieces: whole-word masking on the GPU too
    whole = mask_tokens(ids.to(GPU), rng=7, continuation=cont.to(GPU), **kwargs)
    assert torch.equal(whole.labels.cpu(), mask_tokens(ids, rng=7, continuation=cont,
                                                       **kwargs).labels)
    chosen = choose_positions(torch.arange(10, 30, device=GPU), rng=1)
    assert torch.equal(chosen.cpu(), choose_positions(torch.arange(10, 30), rng=1))


def test_the_losses_on_the_gpu_give_the_cpu_numbers():
    logits = torch.randn(6, 10, 50, generator=torch.Generator().manual_seed(4))
    labels = torch.full((6, 10), -100)
    labels[:, 3] = torch.arange(6)
    a = mlm_loss(logits, labels)
    b = mlm_loss(logits.to(GPU), labels.to(GPU))
    assert b.device.type == "cuda"
    torch.testing.assert_close(b.cpu(), a)
    pairs = torch.randn(5, 2, generator=torch.Generator().manual_seed(5))
    is_next = torch.tensor([1, 0, 1, 1, 0])
    torch.testing.assert_close(nsp_loss(pairs.to(GPU), is_next.to(GPU)).cpu(),
                               nsp_loss(pairs, is_next))


def test_the_trainer_picks_cuda_and_trains_in_bf16(toy):
    data, model_config = toy
    trainer = Trainer(MiniBert(model_config), data, Recipe(steps=40, batch_size=32, warmup=5),
                      RunOptions(eval_every=20, quiet=True))  # device "auto"
    assert trainer.device.type == "cuda"
    seen = []
    hook = trainer.model.blocks[0].ffn_in.register_forward_hook(
        lambda module, args, out: seen.append(out.dtype))
    history = trainer.fit()
    hook.remove()
    assert torch.bfloat16 in seen  # autocast on: the matrix products ran in bf16
    assert history[-1]["eval_loss"] < history[0]["eval_loss"]
    off = Trainer(MiniBert(model_config), data, Recipe(steps=1, batch_size=32, warmup=0),
                  RunOptions(eval_every=1, bf16=False, quiet=True))
    seen.clear()
    hook = off.model.blocks[0].ffn_in.register_forward_hook(
        lambda module, args, out: seen.append(out.dtype))
    off.fit()
    hook.remove()
    assert seen and set(seen) == {torch.float32}  # bf16=False: full float32


def weights(trainer):
    return {k: v.detach().cpu().clone() for k, v in trainer.model.state_dict().items()}


def largest_difference(a, b):
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def test_resume_on_the_gpu_continues_the_dropout_stream(toy, tmp_path):
    """Stopped at step 10 and resumed, a run with dropout on the GPU ends where an
    uninterrupted one does, as close as two uninterrupted GPU runs are to each other (the
    GPU's sums need not come out bitwise the same twice); a resumed run that started the GPU's
    dropout stream afresh would not."""
    data, model_config = toy

    def make(out_dir, resume=False):
        return Trainer(MiniBert(model_config, rng=3), data,
                       Recipe(steps=20, batch_size=32, warmup=5, seed=3),
                       RunOptions(out_dir=out_dir, resume=resume, eval_every=10,
                                  checkpoint_every=10, quiet=True))

    runs = []
    for name in ("one", "two"):
        trainer = make(tmp_path / name)
        trainer.fit()
        runs.append(weights(trainer))
    noise = largest_difference(*runs)
    shutil.copytree(tmp_path / "one", tmp_path / "cut")  # as if stopped after step 10
    (tmp_path / "cut" / "step-0000020.pt").unlink()
    resumed = make(tmp_path / "cut", resume=True)
    assert resumed.step == 10
    resumed.fit()
    gap = largest_difference(weights(resumed), runs[0])
    assert gap <= 10 * noise + 1e-6, (gap, noise)


def test_a_checkpoint_written_on_the_gpu_resumes_on_the_cpu(toy, tmp_path):
    data, model_config = toy
    recipe = Recipe(steps=10, batch_size=32, warmup=2)
    run = RunOptions(out_dir=tmp_path, eval_every=5, checkpoint_every=5, quiet=True)
    Trainer(MiniBert(model_config), data, recipe, run).fit()
    longer = dataclasses.replace(recipe, steps=15)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = Trainer(MiniBert(model_config), data, longer,
                          dataclasses.replace(run, device="cpu", resume=True,
                                              allow_changes=True))
    assert trainer.device.type == "cpu" and trainer.step == 10
    assert any("cuda" in str(w.message) for w in caught)  # the last bits will differ
    history = trainer.fit()
    assert history[-1]["step"] == 15


def test_the_hugging_face_round_trip_from_the_gpu(tmp_path):
    transformers = pytest.importorskip("transformers")
    from mlmlib.hf import export_hf, import_hf

    model = small_model().to(GPU).eval()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(295)]
    export_hf(model, vocab, tmp_path / "hf")
    theirs = transformers.BertForMaskedLM.from_pretrained(tmp_path / "hf").to(GPU).eval()
    back, _ = import_hf(tmp_path / "hf")
    ids, keep, _ = (t.to(GPU) for t in batch(6))
    with torch.no_grad():
        ours = model(ids, attention_mask=keep).logits
        hf = theirs(input_ids=ids, attention_mask=keep).logits
        again = back.to(GPU).eval()(ids, attention_mask=keep).logits
    torch.testing.assert_close(hf, ours, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(again, ours)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_command_line_picks_cuda_and_runs_under_torchrun_with_nccl(tmp_path):
    """One process under torchrun is DistributedDataParallel with NCCL on a single GPU (NCCL
    refuses two processes on one GPU): the same curve as the plain run, to GPU noise."""
    args = [*SMALL, "--steps", "30", "--eval-every", "10", "--dropout", "0",
            "--attention-dropout", "0"]
    plain = subprocess.run([sys.executable, "-m", "mlmlib.train", *args,
                            "--out", str(tmp_path / "plain")], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert "device: cuda (1 process)" in plain.stdout, plain.stdout
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "MASTER_ADDR")}
    ddp = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=1",
                          f"--master_port={free_port()}", "-m", "mlmlib.train", *args,
                          "--out", str(tmp_path / "ddp")], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env=env)
    assert ddp.returncode == 0, ddp.stderr[-3000:]
    assert "device: cuda:0 (1 process, nccl)" in ddp.stdout, ddp.stdout
    one = json.loads((tmp_path / "plain" / "history.json").read_text())
    two = json.loads((tmp_path / "ddp" / "history.json").read_text())
    assert [h["step"] for h in one] == [h["step"] for h in two] == [0, 10, 20, 30]
    for a, b in zip(one, two, strict=True):
        assert abs(a["eval_loss"] - b["eval_loss"]) < 1e-3, (a, b)


@pytest.mark.skipif(torch.cuda.device_count() != 1, reason="needs exactly one GPU")
def test_more_processes_than_gpus_is_refused_in_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                             f"--master_port={free_port()}", "-m", "mlmlib.train", *SMALL,
                             "--steps", "2", "--warmup", "1", "--device", "cuda"], cwd=ROOT,
                            capture_output=True,
                            text=True, timeout=300)
    assert result.returncode != 0
    assert "error: 2 processes on this machine but 1 GPU(s): NCCL needs a GPU for each " \
           "process" in result.stderr, result.stderr[-3000:]
