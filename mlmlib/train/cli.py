"""mlmlib.train.cli - the command line, ``python -m mlmlib.train``: one line per problem.

Does: parse the options, build the data, the model and the trainer, train, print the last
evaluation. The options are the fields of the three settings classes - the model's
(:class:`~mlmlib.model.BertConfig`, but its vocabulary and length, which the data fixes), the
:class:`~mlmlib.train.config.Recipe` and the :class:`~mlmlib.train.config.RunOptions` - each
spelled as its field (``--hidden-size``, ``--lr``, ``--bf16``/``--no-bf16``, ``--out-dir``,
which ``--out`` abbreviates), plus the data's own (``--data``, ``--vocab-size``, ``--max-len``,
``--train-sentences``). Whatever is not given comes from the data: the toy world trains the
course's recipe (:func:`~mlmlib.train.config.toy_recipe`); text trains the classes' defaults,
with a feed-forward 4 times the hidden size. Checkpoints are written every evaluation whenever
an output folder is given (unless ``--checkpoint-every`` says otherwise), so ``--resume``
always has something to resume from. A problem - a bad setting, a missing file, a damaged
checkpoint, a run that diverged - ends the program with one line, ``error: ...``, on standard
error and exit status 1 (2 for options argparse itself refuses); ``--debug`` shows the whole
traceback instead.

Does not: hold any training logic of its own (:mod:`mlmlib.train.trainer`).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import MISSING, asdict, fields
from pathlib import Path

from mlmlib.masking import RULES
from mlmlib.model import BertConfig
from mlmlib.train.config import Recipe, RunOptions, toy_recipe
from mlmlib.train.data import text_data, toy_data
from mlmlib.train.setup import build_model
from mlmlib.train.trainer import DivergedError, Trainer

__all__ = ["main"]

FIXED_BY_DATA = ("vocab_size", "max_position")  # the model's fields the data decides
SETTINGS = {"model": BertConfig, "recipe": Recipe, "run": RunOptions}
ALIASES = {"out_dir": ["--out"]}  # the README's and the error messages' shorter spelling
MORE_HELP = {"rule": f"one of {', '.join(RULES)}", "clip": "inf turns clipping off",
             "checkpoint_every": "with --out, every evaluation unless given",
             "intermediate_size": "text data: 4 x --hidden-size when that is given"}


def _defaults() -> dict[str, dict[str, object]]:
    """Each field's default by data: the toy world's recipe, and the classes' own (text)."""
    model, recipe = toy_recipe(vocab_size=2, max_position=2)  # the sizes come from the data
    toy = {**asdict(model), **asdict(recipe)}
    text = {**asdict(BertConfig()), **asdict(Recipe())}
    return {name: {"toy": toy[name], "text": text[name]} for name in toy}


def _comment(cls, name: str) -> str:
    """A field's help: the comment beside it in the class's source (one line), if any."""
    import inspect

    for line in inspect.getsource(cls).splitlines():
        if line.strip().startswith(f"{name}:") and "#" in line:
            return line.split("#", 1)[1].strip()
    return ""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mlmlib.train",
        description="Train a mini BERT on the toy world, the CPython docs or your own text. "
                    "Run it under torchrun --nproc_per_node=N for N processes. Settings not "
                    "given come from the data: the toy world trains the course's recipe.")
    data = p.add_argument_group("data")
    data.add_argument("--data", default="toy",
                      help="'toy' (the toy world), 'python-docs', or a .txt file (split into its "
                           "paragraphs) or a folder of .txt files (default: toy)")
    data.add_argument("--vocab-size", type=int, default=None,
                      help="text data: the WordPiece vocabulary (default: 2000)")
    data.add_argument("--max-len", type=int, default=None,
                      help="text data: tokens per row (default: 64)")
    data.add_argument("--train-sentences", type=int, default=None,
                      help="the toy world: training sentences (default: 20000)")
    by_data = _defaults()
    for group, cls in SETTINGS.items():
        args = p.add_argument_group(f"{group} ({cls.__name__}): the defaults follow the data")
        for f in fields(cls):
            if group == "model" and f.name in FIXED_BY_DATA:
                continue
            flag, default = f"--{f.name.replace('_', '-')}", f.default
            said = [_comment(cls, f.name), MORE_HELP.get(f.name, "")]
            if f.name in by_data:
                toy, text = ({True: "on", False: "off"}.get(by_data[f.name][d], by_data[f.name][d])
                             for d in ("toy", "text"))
                said.append(f"default: {toy}" if toy == text else f"toy: {toy}, text: {text}")
            elif default not in (None, MISSING):
                shown = {True: "on", False: "off"}.get(default, default)
                said.append(f"default: {shown}")
            common = {"dest": f"{group}.{f.name}", "default": argparse.SUPPRESS,
                      "help": "; ".join(x for x in said if x)}
            flags = [flag, *ALIASES.get(f.name, [])]
            if isinstance(default, bool):
                args.add_argument(*flags, action=argparse.BooleanOptionalAction, **common)
            else:
                kind = str if default is None or default is MISSING else type(default)
                args.add_argument(*flags, type=kind, metavar=f.name.upper(), **common)
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    return p


def _given(args, group: str) -> dict:
    """The options of ``group`` given on the command line, by field name."""
    return {k.split(".", 1)[1]: v for k, v in vars(args).items() if k.startswith(f"{group}.")}


def _check_data_args(args) -> None:
    toy = args.data == "toy"
    for flag, least, default, applies in (("vocab_size", 1, 2000, not toy),
                                          ("max_len", 3, 64, not toy),
                                          ("train_sentences", 1, 20000, toy)):
        option = f"--{flag.replace('_', '-')}"
        if getattr(args, flag) is None:
            setattr(args, flag, default)
        elif not applies:
            raise ValueError(f"{option} does not apply to --data {args.data}: it is for "
                             f"{'text' if toy else 'the toy world'}")
        if getattr(args, flag) < least:
            raise ValueError(f"{option} must be at least {least}, got {getattr(args, flag)}")
    if args.data not in ("toy", "python-docs") and (not args.data
                                                     or not Path(args.data).exists()):
        raise ValueError(f"--data must be 'toy', 'python-docs', or a .txt file or folder; "
                         f"there is no file or folder {args.data}")


def _settings(args, data) -> tuple[BertConfig, Recipe, RunOptions]:
    """The model's config, the recipe and the run options: the data's, then what was given."""
    model, recipe, run = (_given(args, g) for g in SETTINGS)
    length = data.rows.input_ids.shape[1]
    if args.data == "toy":
        model_config, recipe = toy_recipe(data.vocab_size, length, **model, **recipe)
    else:
        if "hidden_size" in model:
            model.setdefault("intermediate_size", 4 * model["hidden_size"])
        model_config = BertConfig(vocab_size=data.vocab_size, max_position=length, **model)
        recipe = Recipe(**recipe)
    if "checkpoint_every" not in run and run.get("out_dir") is not None:
        run["checkpoint_every"] = run.get("eval_every", RunOptions.eval_every)
    return model_config, recipe, RunOptions(**run)


def _run(args) -> Trainer:
    _check_data_args(args)
    run = _given(args, "run")
    if run.get("resume") and run.get("out_dir") is None:
        raise ValueError("--resume needs --out, the folder that holds the checkpoints")
    if run.get("allow_changes") and not run.get("resume"):
        raise ValueError("--allow-changes only makes sense with --resume")
    seed = _given(args, "recipe").get("seed", Recipe.seed)
    if args.data == "toy":
        from mlmlib.toyworld import ToyWorld

        data, _, _, _ = toy_data(ToyWorld(), n_train=args.train_sentences, seed=seed)
    else:
        data, _ = text_data(args.data, args.vocab_size, args.max_len, seed=seed)
    model_config, recipe, run = _settings(args, data)
    trainer = Trainer(build_model(model_config, seed=recipe.seed), data, recipe, run)
    if trainer.rank == 0:
        processes = f"{trainer.world_size} process{'es' if trainer.world_size > 1 else ''}"
        if trainer.distributed:  # the backend that averages the gradients: nccl or gloo
            import torch.distributed as dist

            processes += f", {dist.get_backend()}"
        size = sum(p.numel() for p in trainer.model.parameters())
        print(f"device: {trainer.device} ({processes}), {size:,} parameters", flush=True)
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
        hint = " (resume with --resume)" if _given(args, "run").get("out_dir") else ""
        print(f"interrupted{hint}", file=sys.stderr, flush=True)
        return 130
    finally:
        if trainer is not None and trainer.distributed:
            import torch.distributed as dist

            dist.destroy_process_group()
    return 0
