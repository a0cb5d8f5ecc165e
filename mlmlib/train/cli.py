"""mlmlib.train.cli - the command line, ``python -m mlmlib.train``: one line per problem.

Does: parse the options (every field of :class:`~mlmlib.train.config.TrainConfig`, the model's
size, the data), build the data and the model, train, print the last evaluation. Checkpoints
are written every ``--eval-every`` steps whenever ``--out`` is given (unless
``--checkpoint-every`` says otherwise), so ``--resume`` always has something to resume from.
A problem - a bad setting, a missing file, a damaged checkpoint, a run that diverged - ends the
program with one line, ``error: ...``, on standard error and exit status 1 (2 for options
argparse itself refuses); ``--debug`` shows the whole traceback instead.

Does not: hold any training logic of its own (:mod:`mlmlib.train.trainer`).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from mlmlib.model import BertConfig
from mlmlib.train.config import TrainConfig
from mlmlib.train.data import text_data, toy_data
from mlmlib.train.trainer import DivergedError, Trainer

__all__ = ["main"]

_NOT_FLAGS = ("quiet", "bf16", "checkpoint_every")  # spelled differently on the command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mlmlib.train",
        description="Train a mini BERT on the toy world, the CPython docs or your own text. "
                    "Run it under torchrun --nproc_per_node=N for N processes.")
    p.add_argument("--data", default="toy",
                   help="'toy' (the toy world), 'python-docs', or a .txt file (split into its "
                        "paragraphs) or a folder of .txt files")
    p.add_argument("--out", default=None, help="folder for checkpoints and history.json")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint")
    p.add_argument("--allow-changes", action="store_true",
                   help="with --resume: continue although settings or data differ from the "
                        "checkpoint's")
    p.add_argument("--hidden", type=int, default=128, help="hidden size")
    p.add_argument("--layers", type=int, default=2, help="encoder blocks")
    p.add_argument("--heads", type=int, default=4, help="attention heads")
    p.add_argument("--dropout", type=float, default=0.1, help="dropout (BERT's 0.1)")
    p.add_argument("--vocab-size", type=int, default=2000,
                   help="WordPiece vocabulary for text data")
    p.add_argument("--max-len", type=int, default=64, help="tokens per row for text data")
    p.add_argument("--train-sentences", type=int, default=20000,
                   help="toy-world training sentences")
    for name, default in TrainConfig.__dataclass_fields__.items():
        if name not in _NOT_FLAGS:
            value = default.default
            p.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help="steps between checkpoints (default: every evaluation when --out is "
                        "given, none otherwise; 0: none)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-bf16", action="store_true", help="full float32 even on CUDA")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    return p


def _check_args(args) -> None:
    for flag, least in (("hidden", 1), ("layers", 1), ("heads", 1), ("vocab_size", 1),
                        ("max_len", 3), ("train_sentences", 1)):
        if getattr(args, flag) < least:
            raise ValueError(f"--{flag.replace('_', '-')} must be at least {least}, got "
                             f"{getattr(args, flag)}")
    if args.allow_changes and not args.resume:
        raise ValueError("--allow-changes only makes sense with --resume")
    if args.resume and args.out is None:
        raise ValueError("--resume needs --out, the folder that holds the checkpoints")
    if args.data not in ("toy", "python-docs") and (not args.data
                                                     or not Path(args.data).exists()):
        raise ValueError(f"--data must be 'toy', 'python-docs', or a .txt file or folder; "
                         f"there is no file or folder {args.data}")


def _run(args) -> Trainer:
    _check_args(args)
    every = args.checkpoint_every
    if every is None:
        every = args.eval_every if args.out is not None else 0
    config = TrainConfig(**{k: getattr(args, k) for k in TrainConfig.__dataclass_fields__
                            if k not in _NOT_FLAGS},
                         checkpoint_every=every, quiet=args.quiet, bf16=not args.no_bf16)
    if args.data == "toy":
        from mlmlib.toyworld import ToyWorld

        data, _, _, _ = toy_data(ToyWorld(), n_train=args.train_sentences, seed=args.seed)
    else:
        data, _ = text_data(args.data, args.vocab_size, args.max_len, seed=args.seed)
    model_config = BertConfig(vocab_size=data.vocab_size, hidden_size=args.hidden,
                              num_layers=args.layers, num_heads=args.heads,
                              intermediate_size=4 * args.hidden,
                              max_position=data.rows.input_ids.shape[1],
                              dropout=args.dropout, attention_dropout=args.dropout)
    trainer = Trainer(model_config, data, config, out_dir=args.out, resume=args.resume,
                      allow_changes=args.allow_changes)
    if trainer.rank == 0:
        processes = f"{trainer.world_size} process{'es' if trainer.world_size > 1 else ''}"
        if trainer.distributed:  # the backend that averages the gradients: nccl or gloo
            import torch.distributed as dist

            processes += f", {dist.get_backend()}"
        print(f"device: {trainer.device} ({processes}), {trainer.model.num_parameters():,} "
              "parameters", flush=True)
    history = trainer.fit()
    if trainer.rank == 0:
        last = history[-1]
        print(f"step {last['step']}: eval loss {last['eval_loss']:.4f}, accuracy "
              f"{last['accuracy']:.3f}, perplexity {last['perplexity']:.2f}", flush=True)
    return trainer


def main(argv=None) -> int:
    """Run the command line; the exit status (0: trained, 1: refused or failed)."""
    args = _parser().parse_args(argv)
    trainer = None
    try:
        with warnings.catch_warnings():  # restores the caller's warning display afterwards
            if not args.debug:  # a warning is one line too, like an error
                warnings.showwarning = lambda message, *_, **__: print(
                    f"warning: {message}", file=sys.stderr, flush=True)
            trainer = _run(args)
    except (ValueError, TypeError, OSError, DivergedError) as err:
        if args.debug:
            raise
        print(f"error: {err}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        hint = " (resume with --resume)" if args.out else ""
        print(f"interrupted{hint}", file=sys.stderr, flush=True)
        return 130
    finally:
        if trainer is not None and trainer.distributed:
            import torch.distributed as dist

            dist.destroy_process_group()
    return 0
