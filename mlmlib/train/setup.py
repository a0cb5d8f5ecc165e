"""mlmlib.train.setup - what a run needs before its first step: a model, its optimizer, a device.

Does: :func:`build_model` makes the model a run trains - the course's
:class:`~mlmlib.model.MiniBert`, or Hugging Face's ``BertForMaskedLM`` behind the same call
(:func:`mlmlib.hf.masked_lm`) - with seeded weights; :func:`configure_optimizer` gives it
AdamW (weight decay on the matrices only, as BERT) and the schedule (linear warm-up, then
linear decay to 0); :func:`pick_device` chooses CUDA, then Apple MPS, then the CPU;
:func:`start_processes` joins the processes ``torchrun`` started (NCCL on GPUs, gloo on CPUs).

What the trainer needs of a model (the masked-LM protocol): a ``torch.nn.Module`` with a
``config`` (a :class:`~mlmlib.model.BertConfig`: ``vocab_size``, ``max_position``, ``nsp``)
whose call ``model(input_ids, attention_mask=, token_type_ids=, labels=)`` returns an object
with ``logits`` (the scores of the masked positions, ``(|M|, V)``), ``loss`` (their mean
``-log P``) and ``nsp_logits`` (``None`` without an NSP head). ``MiniBert`` meets it as it is;
:func:`mlmlib.hf.masked_lm` wraps Hugging Face's model to meet it.

Does not: train (:mod:`mlmlib.train.trainer`).

>>> from mlmlib.model import BertConfig
>>> model = build_model(BertConfig(vocab_size=50, hidden_size=16, num_heads=2,
...                                intermediate_size=32, max_position=8), seed=0)
>>> optimizer, scheduler = configure_optimizer(model, Recipe(steps=10, warmup=2))
>>> [round(f, 2) for f in (scheduler.lr_lambdas[0](s) for s in (0, 1, 2, 6))]
[0.5, 1.0, 1.0, 0.5]
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from mlmlib.model import BertConfig, MiniBert
from mlmlib.train.config import Recipe

__all__ = ["KINDS", "Processes", "build_model", "configure_optimizer", "pick_device",
           "start_processes"]

#: The models a run can train, the course's and Hugging Face's, behind the same call.
KINDS = ("mlmlib", "transformers")


def build_model(config: BertConfig, seed: int = 0, kind: str = "mlmlib") -> torch.nn.Module:
    """The model of ``kind`` at ``config``, its weights drawn from ``seed`` (no global state)."""
    if not isinstance(config, BertConfig):
        raise TypeError(f"config must be a mlmlib.model.BertConfig, got {type(config).__name__}")
    if kind == "mlmlib":
        return MiniBert(config, rng=seed)
    if kind == "transformers":
        from mlmlib.hf import masked_lm

        return masked_lm(config, seed=seed)
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def schedule(recipe: Recipe):
    """The learning rate's factor at each step: warm-up to the peak, then straight down to 0."""
    def factor(step: int) -> float:
        if step < recipe.warmup:
            return (step + 1) / recipe.warmup
        return max(0.0, (recipe.steps - step) / max(1, recipe.steps - recipe.warmup))
    return factor


def configure_optimizer(model: torch.nn.Module, recipe: Recipe):
    """AdamW (decay on matrices, none on biases and LayerNorms) and its schedule."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    # the fused kernel (one pass over every tensor) where PyTorch has one: the same update,
    # 0.5 ms rather than 1.2 ms a step for the toy recipe on 2 CPU cores
    devices = {p.device.type for p in model.parameters()}
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": recipe.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=recipe.lr, betas=(0.9, 0.999), eps=1e-6,
        fused=True if devices <= {"cpu", "cuda"} else None)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule(recipe))


def pick_device(name: str = "auto") -> torch.device:
    """CUDA if there is one, then Apple MPS, then the CPU; or the device named."""
    if not isinstance(name, str):
        raise TypeError(f"device must be a name such as 'auto', 'cpu' or 'cuda', got {name!r}")
    mps = getattr(torch.backends, "mps", None)
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if mps and mps.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"device {name!r} is not a device name: use 'auto', 'cpu', 'cuda' "
                         "or 'mps'") from None
    if device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device {name!r}: mlmlib trains on 'cpu', 'cuda' or 'mps' only")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} was asked for, but CUDA is not available here")
    if device.type == "mps" and not (mps and mps.is_available()):
        raise ValueError(f"device {name!r} was asked for, but Apple MPS is not available")
    return device


@dataclass
class Processes:
    """This process's place in the run: one process, or one of ``torchrun``'s."""

    device: torch.device
    rank: int = 0
    world_size: int = 1
    distributed: bool = False  # under torchrun: DistributedDataParallel, even for one process


def start_processes(device: torch.device) -> Processes:
    """Join ``torchrun``'s processes when it started this one (NCCL on GPUs, gloo on CPUs)."""
    if not ("WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ):
        return Processes(device)
    if not dist.is_initialized():
        local = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"]))
        if device.type == "cuda" and local > torch.cuda.device_count():
            raise ValueError(
                f"{local} processes on this machine but {torch.cuda.device_count()} GPU(s): "
                "NCCL needs a GPU for each process; start fewer processes (--nproc_per_node) "
                "or train on the CPU (device 'cpu')")
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    return Processes(device, dist.get_rank(), dist.get_world_size(), distributed=True)
