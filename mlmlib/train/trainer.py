"""mlmlib.train.trainer - the training loop: a step, an evaluation, and fit, which runs them.

Does: :class:`Trainer` trains a model it is given (anything that meets the masked-LM protocol
of :mod:`mlmlib.train.setup`: :class:`~mlmlib.model.MiniBert`, or Hugging Face's
``BertForMaskedLM`` through :func:`mlmlib.hf.masked_lm`) on :class:`~mlmlib.train.data.TrainData`
with a :class:`~mlmlib.train.config.Recipe`, run as :class:`~mlmlib.train.config.RunOptions`
say. A step draws a batch, masks it afresh (dynamic masking, :mod:`mlmlib.masking`), and takes
one AdamW step with gradient clipping on a linear warm-up and decay (as BERT); an evaluation
scores the fixed evaluation batch under the 100% ``[MASK]`` protocol (eval MLM loss,
masked-token accuracy, perplexity); :meth:`Trainer.fit` alternates them and keeps a history the
chapters plot. bf16 autocast on CUDA. Under ``torchrun --nproc_per_node=N`` every process draws
the same global batch and trains on its shard through DistributedDataParallel, the loss scaled
so the gradient equals the single-process one.

Randomness is the run's own: the batches and masks come from a generator seeded by the recipe,
and dropout draws from a state the trainer keeps (seeded by the recipe and the process's rank)
and puts in place only around its own forward and backward passes, so the caller's global
generator is left as it was, and a run gives the same numbers whatever the caller drew before
(on the CPU and on CUDA; Apple MPS's dropout draws from MPS's own generator, which the trainer
neither keeps nor restores, so a run there is neither isolated nor exactly resumable).

It refuses to go wrong quietly: a loss or gradient that turns NaN or infinite stops the run with
:class:`DivergedError` before the optimizer touches the weights (the last checkpoint stays the
last good one); an output folder that would lose work, a resume with nothing to resume from or
with another recipe or other data than the checkpoint's, are errors that name the problem
(:mod:`mlmlib.train.checkpoint` saves and restores a run, exactly: a run resumed from any
checkpoint ends with the weights and the history of a run that was never stopped, on the same
kind of device with the same number of threads).

Does not: build the model or its optimizer (:mod:`mlmlib.train.setup`), define the data
(:mod:`mlmlib.train.data`), or read and write checkpoints (:mod:`mlmlib.train.checkpoint`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import time

import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from mlmlib._checks import kind
from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import Batch, mask_batch
from mlmlib.loss import nsp_loss
from mlmlib.train import checkpoint
from mlmlib.train.config import Recipe, RunOptions
from mlmlib.train.data import TrainData, fingerprint
from mlmlib.train.setup import configure_optimizer, pick_device, start_processes

__all__ = ["DivergedError", "Trainer"]


class DivergedError(FloatingPointError):
    """The loss or the gradient became NaN or infinite; the weights were left as they were."""


def _protocol(model) -> None:
    """``model`` meets the masked-LM protocol as far as can be seen before a call."""
    kind(model, "model", torch.nn.Module, "a torch.nn.Module that meets the masked-LM protocol "
         "(MiniBert, or mlmlib.hf.masked_lm(...))")
    config = getattr(model, "config", None)
    if not all(hasattr(config, name) for name in ("vocab_size", "max_position", "nsp")):
        raise TypeError(f"model.config must say the model's vocab_size, max_position and nsp "
                        f"(a mlmlib.model.BertConfig), got {type(config).__name__}")


class Trainer:
    """Train ``model`` on ``data`` with ``recipe``, run as ``run`` says (see the module)."""

    def __init__(self, model: torch.nn.Module, data: TrainData, recipe: Recipe | None = None,
                 run: RunOptions | None = None):
        self.recipe = Recipe() if recipe is None else recipe
        self.run = RunOptions() if run is None else run
        _protocol(model)
        kind(data, "data", TrainData)
        kind(self.recipe, "recipe", Recipe)
        kind(self.run, "run", RunOptions)
        self.model, self.data = model, data
        self._check_fit()
        self.processes = start_processes(pick_device(self.run.device))
        self.device = self.processes.device
        self.rank, self.world_size = self.processes.rank, self.processes.world_size
        self.distributed = self.processes.distributed
        if self.recipe.batch_size % self.world_size:
            raise ValueError(f"batch_size {self.recipe.batch_size} must divide evenly over "
                             f"{self.world_size} processes")
        latest = checkpoint.prepare_out_dir(self.run.out_dir, self.run.resume,
                                            write=self.rank == 0)
        self.model.to(self.device)
        self.net = self.model
        if self.distributed:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.net = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        self.optimizer, self.scheduler = configure_optimizer(self.model, self.recipe)
        self.data_rng = torch.Generator().manual_seed(self.recipe.seed)  # order and masks
        self.dropout_rng = self._seed_dropout()
        self.step = 0
        self.history: list[dict] = []
        self.pending: list[float] = []  # training losses since the last evaluation
        self.seen_tokens = 0
        if latest:
            checkpoint.resume_run(self, latest)

    def _check_fit(self) -> None:
        """The model, the data and the recipe fit together (before anything is built)."""
        cfg, data = self.model.config, self.data
        if cfg.vocab_size != data.vocab_size:
            raise ValueError(f"the model's vocab_size {cfg.vocab_size} differs from the data's "
                             f"{data.vocab_size}")
        longest = max(data.rows.input_ids.shape[1], data.eval.input_ids.shape[1])
        if longest > cfg.max_position:
            raise ValueError(f"rows of {longest} tokens are longer than the model's max_position "
                             f"{cfg.max_position}")
        if self.recipe.batch_size > len(data.rows.input_ids):
            raise ValueError(f"batch_size {self.recipe.batch_size} is larger than the training "
                             f"set of {len(data.rows.input_ids)} rows")
        if cfg.nsp and data.rows.is_next is None:
            raise ValueError("the model has an NSP head but the training rows have no is_next")

    # ------------------------------------------------------------------ randomness

    def _seed_dropout(self) -> dict:
        """Dropout's own random state: seeded by the recipe and this process's rank."""
        seed = (self.recipe.seed * 1000 + self.rank) % 2**63  # one stream per process
        state = {"cpu": torch.Generator().manual_seed(seed).get_state(), "cuda": None}
        if self.device.type == "cuda":
            with torch.random.fork_rng(devices=[self.device]):
                torch.cuda.manual_seed(seed)
                state["cuda"] = torch.cuda.get_rng_state(self.device)
        return state

    @contextlib.contextmanager
    def _dropout_stream(self):
        """The trainer's dropout state in place of the global one, for one step only."""
        cuda = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):  # the caller's state comes back afterwards
            torch.set_rng_state(self.dropout_rng["cpu"])
            if cuda:
                torch.cuda.set_rng_state(self.dropout_rng["cuda"], self.device)
            yield
            self.dropout_rng = {"cpu": torch.get_rng_state(), "cuda":
                                torch.cuda.get_rng_state(self.device) if cuda else None}

    # ------------------------------------------------------------------ checkpoints

    @functools.cached_property
    def data_fingerprint(self) -> str:
        """The checksum of the data that checkpoints store, hashed once rather than every time."""
        return fingerprint(self.data)

    def checkpoints(self):
        """This run's checkpoint files, oldest first."""
        return checkpoint.checkpoints_in(self.run.out_dir)

    def save_checkpoint(self):
        """Write ``step-NNNNNNN.pt`` (the first process only) and the history; its path."""
        return checkpoint.save_run(self)

    def save_history(self):
        """Write ``history.json`` into the output folder (the first process only)."""
        return checkpoint.save_history(self)

    def load_checkpoint(self, path) -> None:
        """Restore the run saved in ``path`` (a damaged file, one made for another model, or,
        unless ``allow_changes``, another recipe or other data raises CheckpointError)."""
        checkpoint.restore_run(self, path, checkpoint.read_checkpoint(path))

    # ------------------------------------------------------------------ training

    def next_batch(self) -> Batch:
        """The next global batch of training rows, masked afresh (on the CPU)."""
        n = len(self.data.rows.input_ids)
        index = torch.randint(n, (self.recipe.batch_size,), generator=self.data_rng)
        rows = Batch(*(t[index] if t is not None else None for t in self.data.rows))
        r = self.recipe
        return mask_batch(rows, self.data.vocab_size, self.data.mask_token_id,
                          self.data.special_ids, self.data_rng, rate=r.rate, rule=r.rule,
                          mask_prob=r.mask_prob, random_prob=r.random_prob)

    def _autocast(self):
        use = self.run.bf16 and self.device.type == "cuda"
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=use)

    def _diverged(self, what: str) -> DivergedError:
        kept = self.checkpoints()
        where = (f"the last checkpoint, {kept[-1]}, written before it, is kept"
                 if kept and self.rank == 0 else "no checkpoint was saved before it")
        return DivergedError(
            f"training diverged: {what}; {where}. A peak learning rate of {self.recipe.lr:g} "
            f"may be too high for this model (or clip {self.recipe.clip:g} too loose)")

    def train_step(self, batch: Batch | None = None) -> float:
        """One optimizer step on ``batch`` (the next one when None); this process's mean MLM
        loss on its shard.

        ``batch`` is a global batch (every process passes the same one), already masked: the
        benchmarks pass one batch to two trainers. Raises :class:`DivergedError`, without
        changing the weights, when the loss or the gradient norm is NaN or infinite (the same
        decision on every process: the gradient is all-reduced before its norm is taken).
        """
        batch = self.next_batch() if batch is None else batch
        if not isinstance(batch, Batch) or batch.labels is None:
            raise TypeError("batch must be a masked mlmlib.corpora.Batch (with labels), as "
                            "Trainer.next_batch() makes")
        mine = slice(self.rank, None, self.world_size)  # this process's shard
        b = Batch(*(t[mine].to(self.device) if t is not None else None for t in batch))
        in_m = b.labels != IGNORE_INDEX
        count = in_m.sum()
        total = count.clone()
        if self.distributed:
            dist.all_reduce(total)  # |M| over the whole global batch
        with self._dropout_stream():
            with self._autocast():  # the model's loss is the mean over this shard's M
                out = self.net(b.input_ids, attention_mask=b.attention_mask,
                               token_type_ids=b.token_type_ids, labels=b.labels)
                mlm_sum = out.loss * count
                # the global mean over M: DDP averages gradients over processes, so scale by N
                loss = mlm_sum * self.world_size / total.clamp(min=1)
                if self.model.config.nsp and b.is_next is not None:
                    loss = loss + nsp_loss(out.nsp_logits, b.is_next)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.recipe.clip)
        value = (mlm_sum / count.clamp(min=1)).item()
        if not torch.isfinite(norm):
            self.optimizer.zero_grad(set_to_none=True)
            raise self._diverged(f"at step {self.step + 1} the gradient norm is {norm.item()} "
                                 f"(the loss {value:.4g}), so that step was not applied")
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        self.seen_tokens += int(b.attention_mask.sum()) * self.world_size
        return value

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Eval MLM loss (mean over every target), accuracy and perplexity, on this process."""
        self.model.eval()
        ev = self.data.eval
        total, correct, count = 0.0, 0, 0
        for start in range(0, len(ev.input_ids), 256):
            b = Batch(*(t[start:start + 256].to(self.device) if t is not None else None
                        for t in ev))
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
        """Train to ``recipe.steps``, evaluating and checkpointing on the way; the history."""
        steps, run = self.recipe.steps, self.run
        self.model.train()
        bar = tqdm(total=steps, initial=min(self.step, steps),
                   disable=run.quiet or self.rank != 0, desc=f"training on {self.device.type}",
                   unit="step")
        try:
            if self.step == 0 and not self.history:  # where training starts, for the curve
                self.history.append({"step": 0, "train_loss": None, **self.evaluate(),
                                     "tokens_per_s": 0.0})
            start, tokens_at_start = time.perf_counter(), self.seen_tokens
            while self.step < steps:
                self.pending.append(self.train_step())
                rate = (self.seen_tokens - tokens_at_start) / max(time.perf_counter() - start,
                                                                  1e-9)
                bar.update(1)
                bar.set_postfix(loss=f"{self.pending[-1]:.3f}", tokens_per_s=f"{rate:,.0f}")
                if self.step % run.eval_every == 0 or self.step == steps:
                    self.history.append({"step": self.step,
                                         "train_loss": sum(self.pending) / len(self.pending),
                                         **self.evaluate(), "tokens_per_s": rate})
                    self.pending = []
                if run.checkpoint_every and (self.step % run.checkpoint_every == 0
                                             or self.step == steps):
                    self.save_checkpoint()
        except DivergedError:
            self.save_history()  # the good records so far
            raise
        finally:
            bar.close()
        self.save_history()
        return self.history
