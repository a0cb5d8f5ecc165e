"""mlmlib.train.trainer - the training loop: AdamW, evaluation, checkpoints, exact resume, stops.

Does: :class:`Trainer` runs AdamW with linear warm-up and linear decay (as BERT), gradient
clipping, dynamic masking (each batch masked afresh by :mod:`mlmlib.masking`), periodic
evaluation under the 100% ``[MASK]`` protocol (eval MLM loss, masked-token accuracy,
perplexity) and a history the chapters plot. It picks the device by itself (CUDA, then Apple
MPS, then CPU) and uses bf16 autocast on CUDA. Under ``torchrun --nproc_per_node=N`` the same
code uses DistributedDataParallel (gloo on CPU, NCCL on GPU): every process draws the same
global batch and trains on its shard, and the loss is scaled so the gradient equals the
single-process one.

It refuses to go wrong quietly:

* a loss or gradient that turns NaN or infinite stops the run with :class:`DivergedError`
  before the optimizer touches the weights; the last checkpoint stays the last good one;
* an output folder that is a file, or cannot be written, is refused before training; one that
  already holds a run is refused unless ``resume=True``;
* ``resume=True`` with no checkpoint to resume from is an error, and so is resuming with other
  settings or other data than the checkpoint's: the error names every difference
  (``allow_changes=True`` continues anyway, with the new settings).

Checkpoints (:mod:`mlmlib.train.checkpoint`: checksummed, written atomically) hold the model,
the optimizer, the scheduler, the step, the history, the training losses since the last
evaluation and every random state, so a run resumed from any checkpoint, on any schedule of
checkpoints and evaluations, ends with exactly the weights and the history of a run that was
never stopped (on the CPU; the measured tokens per second aside), when it runs on the same
kind of device with the same number of threads: how a matrix product splits its sums over
threads changes the last bits of a float, so a checkpoint records both and resuming with
others warns that the run will differ in those bits. ``history.json`` is written with every
checkpoint and at the end, the same durable way.

Does not: define the model (:mod:`mlmlib.model`) or the data (:mod:`mlmlib.train.data`).
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
import warnings
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import Batch, mask_batch
from mlmlib.loss import nsp_loss
from mlmlib.model import BertConfig, MiniBert
from mlmlib.train.checkpoint import (
    CheckpointError,
    checkpoints_in,
    prepare_out_dir,
    read_checkpoint,
    write_checkpoint,
    write_text,
)
from mlmlib.train.config import TrainConfig
from mlmlib.train.data import TrainData, fingerprint

__all__ = ["DivergedError", "Trainer", "pick_device"]

#: Settings a resumed run may change freely: they decide what is logged, saved or shown, not
#: what is learned.
FREE_ON_RESUME = ("eval_every", "checkpoint_every", "keep_checkpoints", "device", "bf16",
                  "quiet")


class DivergedError(FloatingPointError):
    """The loss or the gradient became NaN or infinite; the weights were left as they were."""


def pick_device(name: str = "auto") -> torch.device:
    """CUDA if there is one, then Apple MPS, then the CPU; or the device named."""
    if not isinstance(name, str):
        raise TypeError(f"device must be a name such as 'auto', 'cpu' or 'cuda', got {name!r}")
    if name != "auto":
        try:
            device = torch.device(name)
        except RuntimeError:
            raise ValueError(f"device {name!r} is not a device name: use 'auto', 'cpu', 'cuda' "
                             "or 'mps'") from None
        if device.type not in ("cpu", "cuda", "mps"):
            raise ValueError(f"device {name!r}: mlmlib trains on 'cpu', 'cuda' or 'mps' only")
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {name!r} was asked for, but CUDA is not available here")
        mps = getattr(torch.backends, "mps", None)
        if device.type == "mps" and not (mps and mps.is_available()):
            raise ValueError(f"device {name!r} was asked for, but Apple MPS is not available")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def _schedule(config: TrainConfig):
    def factor(step: int) -> float:  # warm-up to the peak, then straight down to 0
        if step < config.warmup:
            return (step + 1) / config.warmup
        return max(0.0, (config.steps - step) / max(1, config.steps - config.warmup))
    return factor


class Trainer:
    """Train a :class:`~mlmlib.model.MiniBert` on :class:`~mlmlib.train.data.TrainData`.

    See the module docstring.
    """

    def __init__(self, model_config: BertConfig, data: TrainData,
                 config: TrainConfig | None = None, out_dir=None, resume: bool = False,
                 allow_changes: bool = False):
        self.config = TrainConfig() if config is None else config
        for name, value, kind in (("model_config", model_config, BertConfig),
                                  ("data", data, TrainData), ("config", self.config, TrainConfig)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
        for name, flag in (("resume", resume), ("allow_changes", allow_changes)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        if out_dir is not None and not isinstance(out_dir, str | os.PathLike):
            raise TypeError(f"out_dir must be a folder's path (str or Path), got {out_dir!r}")
        self.model_config, self.data = model_config, data
        self.allow_changes = allow_changes
        self._check_fit()
        self.out_dir = None if out_dir is None else Path(out_dir)
        if resume and self.out_dir is None:
            raise ValueError("resume=True needs out_dir, the folder that holds the checkpoints")
        if self.config.checkpoint_every and self.out_dir is None:
            raise ValueError(f"checkpoint_every={self.config.checkpoint_every} but there is no "
                             "out_dir to write the checkpoints to")
        # under torchrun (which sets WORLD_SIZE and MASTER_ADDR), even with one process
        self.distributed = "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ
        self.device = pick_device(self.config.device)
        if self.distributed and not dist.is_initialized():
            local = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"]))
            if self.device.type == "cuda" and local > torch.cuda.device_count():
                raise ValueError(
                    f"{local} processes on this machine but {torch.cuda.device_count()} "
                    "GPU(s): NCCL needs a GPU for each process; start fewer processes "
                    "(--nproc_per_node) or train on the CPU (device 'cpu')")
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        self.rank = dist.get_rank() if self.distributed else 0
        self.world_size = dist.get_world_size() if self.distributed else 1
        if self.config.batch_size % self.world_size:
            raise ValueError(f"batch_size {self.config.batch_size} must divide evenly over "
                             f"{self.world_size} processes")
        latest = prepare_out_dir(self.out_dir, resume, write=self.rank == 0)
        if self.distributed and self.device.type == "cuda":
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(self.device)

        torch.manual_seed(self.config.seed * 1000 + self.rank)  # dropout, per process
        self.model = MiniBert(model_config, rng=self.config.seed).to(self.device)
        self.net = self.model
        if self.distributed:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.net = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        decay = [p for n, p in self.model.named_parameters() if p.ndim >= 2]
        no_decay = [p for n, p in self.model.named_parameters() if p.ndim < 2]  # biases, LN
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": self.config.weight_decay},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=self.config.lr, betas=(0.9, 0.999), eps=1e-6)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer,
                                                           _schedule(self.config))
        self.data_rng = torch.Generator().manual_seed(self.config.seed)  # order and masks
        self.step = 0
        self.history: list[dict] = []
        self._pending: list[float] = []  # training losses since the last evaluation
        self._seen_tokens = 0
        if latest:
            self._resume(latest)

    def _check_fit(self) -> None:
        """The model, the data and the settings fit together (before anything is built)."""
        cfg, data = self.model_config, self.data
        if cfg.vocab_size != data.vocab_size:
            raise ValueError(f"the model's vocab_size {cfg.vocab_size} differs from the data's "
                             f"{data.vocab_size}")
        longest = max(data.rows.input_ids.shape[1], data.eval.input_ids.shape[1])
        if longest > cfg.max_position:
            raise ValueError(f"rows of {longest} tokens are longer than the model's max_position "
                             f"{cfg.max_position}")
        if self.config.batch_size > len(data.rows.input_ids):
            raise ValueError(f"batch_size {self.config.batch_size} is larger than the training "
                             f"set of {len(data.rows.input_ids)} rows")
        if cfg.nsp and data.rows.is_next is None:
            raise ValueError("the model has an NSP head but the training rows have no is_next")

    # ------------------------------------------------------------------ checkpoints

    @functools.cached_property
    def data_fingerprint(self) -> str:
        """The checksum of the data that checkpoints store, hashed once rather than every time."""
        return fingerprint(self.data)

    def checkpoints(self) -> list[Path]:
        """This run's checkpoint files, oldest first."""
        return checkpoints_in(self.out_dir)

    def _rng_states(self) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """Every process's dropout stream: the CPU generator's state, and the GPU's on CUDA."""
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        state = (torch.get_rng_state(), cuda)
        if not self.distributed:
            return [state]
        states = [None] * self.world_size
        dist.all_gather_object(states, state)
        return states

    def save_history(self) -> Path | None:
        """Write ``history.json`` into the output folder (rank 0 only), atomically."""
        if self.rank != 0 or self.out_dir is None:
            return None
        return write_text(self.out_dir / "history.json", json.dumps(self.history, indent=1))

    def save_checkpoint(self) -> Path | None:
        """Write ``step-NNNNNNN.pt`` (rank 0 only), keep the newest few, update the history."""
        rng = self._rng_states()
        if self.rank != 0 or self.out_dir is None:
            return None
        state = {
            "step": self.step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "history": self.history,
            "pending_losses": self._pending,
            "seen_tokens": self._seen_tokens,
            "rng": {"torch": [cpu for cpu, _ in rng], "cuda": [gpu for _, gpu in rng],
                    "data": self.data_rng.get_state()},
            "model_config": asdict(self.model_config),
            "train_config": asdict(self.config),
            "data": self.data_fingerprint,
            "machine": self._machine(),
        }
        final = write_checkpoint(self.out_dir / f"step-{self.step:07d}.pt", state)
        for old in self.checkpoints()[: -self.config.keep_checkpoints]:
            old.unlink()
        self.save_history()
        return final

    def _machine(self) -> dict:
        """What decides the last bits of every float: the kind of device and the threads."""
        return {"device": self.device.type, "threads": torch.get_num_threads()}

    def _warn_if_other_machine(self, path: Path, saved: dict | None) -> None:
        now = self._machine()
        if saved is None or saved == now:  # older checkpoints did not record it
            return
        warnings.warn(
            f"checkpoint {path} was written on {saved['device']} with {saved['threads']} "
            f"thread(s); this run uses {now['device']} with {now['threads']}. Training goes "
            "on, but its floats will differ from an uninterrupted run's in the last bits (set "
            f"OMP_NUM_THREADS={saved['threads']} and the same device for a bit-identical resume)",
            RuntimeWarning, stacklevel=3)

    def _differences(self, state: dict) -> list[str]:
        """The settings and data of this run that differ from the checkpoint's."""
        saved, now = state["train_config"], asdict(self.config)
        diffs = [f"{k} (checkpoint {saved.get(k)!r}, now {v!r})" for k, v in now.items()
                 if k not in FREE_ON_RESUME and saved.get(k) != v]
        if state["data"] != self.data_fingerprint:
            diffs.append("the data (training or evaluation rows, or the vocabulary)")
        return diffs

    def _resume(self, found: list[Path]) -> None:
        """Load the newest checkpoint; if it is damaged, say whether the one before is whole."""
        try:
            state = read_checkpoint(found[-1])
        except CheckpointError as err:
            if len(found) < 2:
                raise
            try:
                read_checkpoint(found[-2])
                hint = (f"the previous checkpoint {found[-2]} is whole: delete {found[-1].name} "
                        "to resume from it")
            except CheckpointError:
                hint = f"the previous checkpoint {found[-2]} is damaged too"
            raise CheckpointError(f"{err}; {hint}") from None
        self._restore(found[-1], state)

    def load_checkpoint(self, path, previous=None) -> None:
        """Restore everything from ``path``.

        A damaged file raises :class:`~mlmlib.train.checkpoint.CheckpointError`, and so does
        one made for another model or, unless ``allow_changes``, other settings or data.
        """
        self._restore(Path(path), read_checkpoint(path, previous=previous))

    def _restore(self, path: Path, state: dict) -> None:
        needed = {"step", "model", "optimizer", "scheduler", "history", "pending_losses",
                  "seen_tokens", "rng", "model_config", "train_config", "data"}
        if needed - set(state):
            raise CheckpointError(f"checkpoint {path} lacks {sorted(needed - set(state))}")
        if not isinstance(state["model_config"], dict) or not isinstance(state["train_config"],
                                                                        dict):
            raise CheckpointError(f"checkpoint {path} is not one of mlmlib's: its configs are "
                                  "not tables of settings")
        if state["model_config"] != asdict(self.model_config):
            other = [k for k, v in asdict(self.model_config).items()
                     if state["model_config"].get(k) != v]
            raise CheckpointError(f"checkpoint {path} was made for another model shape "
                                  f"(differs in {', '.join(other)})")
        diffs = self._differences(state)
        if diffs and not self.allow_changes:
            raise CheckpointError(
                f"checkpoint {path} belongs to a run with other settings: "
                f"{'; '.join(diffs)}. Resume with the same settings, or pass allow_changes=True "
                "(--allow-changes) to continue with the new ones")
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
        except (RuntimeError, ValueError, KeyError, TypeError) as err:
            raise CheckpointError(f"checkpoint {path} does not fit this model: "
                                  f"{str(err).splitlines()[0]}") from None
        if diffs:  # the new learning rate, decay and schedule from here on
            factor = _schedule(self.config)(state["step"])
            self.scheduler.base_lrs = [self.config.lr] * len(self.optimizer.param_groups)
            for group, decay in zip(self.optimizer.param_groups,
                                    (self.config.weight_decay, 0.0), strict=True):
                group.update(initial_lr=self.config.lr, lr=self.config.lr * factor,
                             weight_decay=decay)
        self._warn_if_other_machine(path, state.get("machine"))
        self.step = state["step"]
        self.history = state["history"]
        self._pending = list(state["pending_losses"])
        self._seen_tokens = state["seen_tokens"]
        self.data_rng.set_state(state["rng"]["data"])
        states = state["rng"]["torch"]
        torch.set_rng_state(states[self.rank] if self.rank < len(states) else states[0])
        gpu = state["rng"].get("cuda") or [None]  # absent in older checkpoints
        gpu = gpu[self.rank] if self.rank < len(gpu) else gpu[0]
        if gpu is not None and self.device.type == "cuda":  # dropout's stream on the GPU
            torch.cuda.set_rng_state(gpu, self.device)

    # ------------------------------------------------------------------ training

    def _batch(self) -> Batch:
        """The next global batch, masked afresh, then this process's shard, on the device."""
        n = len(self.data.rows.input_ids)
        index = torch.randint(n, (self.config.batch_size,), generator=self.data_rng)
        rows = Batch(*(t[index] if t is not None else None for t in self.data.rows))
        c = self.config
        masked = mask_batch(rows, self.data.vocab_size, self.data.mask_token_id,
                            self.data.special_ids, self.data_rng, rate=c.rate, rule=c.rule,
                            mask_prob=c.mask_prob, random_prob=c.random_prob)
        mine = slice(self.rank, None, self.world_size)
        return Batch(*(t[mine].to(self.device) if t is not None else None for t in masked))

    def _autocast(self):
        use = self.config.bf16 and self.device.type == "cuda"
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=use)

    def _diverged(self, what: str) -> DivergedError:
        kept = self.checkpoints()
        where = (f"the last checkpoint, {kept[-1]}, written before it, is kept"
                 if kept and self.rank == 0 else "no checkpoint was saved before it")
        return DivergedError(
            f"training diverged: {what}; {where}. A peak learning rate of {self.config.lr:g} "
            f"may be too high for this model (or clip {self.config.clip:g} too loose)")

    def train_step(self) -> float:
        """One optimizer step; returns this process's mean MLM loss on its shard.

        Raises :class:`DivergedError`, without changing the weights, when the loss or the
        gradient norm is NaN or infinite (the same decision on every process: the gradient is
        all-reduced before its norm is taken).
        """
        b = self._batch()
        in_m = b.labels != IGNORE_INDEX
        count = in_m.sum()
        total = count.clone()
        if self.distributed:
            dist.all_reduce(total)  # |M| over the whole global batch
        with self._autocast():  # the model's loss is the mean over this shard's M
            out = self.net(b.input_ids, attention_mask=b.attention_mask,
                           token_type_ids=b.token_type_ids, labels=b.labels)
            mlm_sum = out.loss * count
            # the global mean over M: DDP averages gradients over processes, so scale by N
            loss = mlm_sum * self.world_size / total.clamp(min=1)
            if self.model_config.nsp and b.is_next is not None:
                loss = loss + nsp_loss(out.nsp_logits, b.is_next)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip)
        value = (mlm_sum / count.clamp(min=1)).item()
        if not torch.isfinite(norm):
            self.optimizer.zero_grad(set_to_none=True)
            raise self._diverged(f"at step {self.step + 1} the gradient norm is {norm.item()} "
                                 f"(the loss {value:.4g}), so that step was not applied")
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        self._seen_tokens += int(b.attention_mask.sum()) * self.world_size
        return value

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Eval MLM loss (mean over every target), accuracy and perplexity, on this process."""
        self.model.eval()
        ev = self.data.eval
        total, correct, count = 0.0, 0, 0
        for start in range(0, len(ev.input_ids), 256):
            part = [t[start:start + 256].to(self.device) if t is not None else None
                    for t in ev]
            b = Batch(*part)
            with self._autocast():
                out = self.model(b.input_ids, attention_mask=b.attention_mask,
                                 token_type_ids=b.token_type_ids, labels=b.labels)
            truth = b.labels[b.labels != IGNORE_INDEX]
            total += out.loss.item() * len(truth)  # the model's mean over M, back to a sum
            correct += int((out.logits.argmax(-1) == truth).sum())
            count += len(truth)
        self.model.train()
        loss = total / max(count, 1)
        if not math.isfinite(loss):
            raise self._diverged(f"the evaluation loss after step {self.step} is {loss}")
        return {"eval_loss": loss, "accuracy": correct / max(count, 1),
                "perplexity": math.exp(loss) if loss < 709 else math.inf}  # exp overflows past 709

    def fit(self) -> list[dict]:
        """Train to ``config.steps``, evaluating and checkpointing on the way; the history."""
        c = self.config
        self.model.train()
        bar = tqdm(total=c.steps, initial=min(self.step, c.steps),
                   disable=c.quiet or self.rank != 0, desc=f"training on {self.device.type}",
                   unit="step")
        try:
            if self.step == 0 and not self.history:  # where training starts, for the curve
                self.history.append({"step": 0, "train_loss": None, **self.evaluate(),
                                     "tokens_per_s": 0.0})
            start, tokens_at_start = time.perf_counter(), self._seen_tokens
            while self.step < c.steps:
                self._pending.append(self.train_step())
                elapsed = max(time.perf_counter() - start, 1e-9)
                rate = (self._seen_tokens - tokens_at_start) / elapsed
                bar.update(1)
                bar.set_postfix(loss=f"{self._pending[-1]:.3f}", tokens_per_s=f"{rate:,.0f}")
                if self.step % c.eval_every == 0 or self.step == c.steps:
                    record = {"step": self.step,
                              "train_loss": sum(self._pending) / len(self._pending),
                              **self.evaluate(), "tokens_per_s": rate}
                    self.history.append(record)
                    self._pending = []
                if c.checkpoint_every and (self.step % c.checkpoint_every == 0
                                           or self.step == c.steps):
                    self.save_checkpoint()
        except DivergedError:
            self.save_history()  # the good records so far
            raise
        finally:
            bar.close()
        self.save_history()
        return self.history
