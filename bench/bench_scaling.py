"""A scaling law whose irreducible loss is known: eval loss against model size and data size.

Hoffmann et al. (2022) fit ``L(N, D) = E + A / N^alpha + B / D^beta`` and must estimate ``E``,
the irreducible loss; Kaplan et al. (2020) fit pure power laws, with no ``E``. In the toy world
``E`` is known exactly: the floor of the evaluation set, ``world.bayes_loss``. This script
trains the runs a chapter fits; the fits themselves (alpha with ``E`` fixed to the floor, and
with ``E`` fitted; a bootstrap over the seeds) are done in the chapter from this JSON.

Every run is the course's toy recipe (:func:`mlmlib.train.toy_recipe`: one encoder block,
batch 128, lr 4e-3, 100 warm-up steps then a linear decay to 0, rate 0.3, 100% ``[MASK]``
at the blanks, no dropout), for the same fixed budget of ``--steps`` steps (1,400, the
recipe's; so the larger models and the larger data sets are no more trained to convergence
than the others: the law measured is the loss at this budget), on ONE evaluation set, the
3,000 sentences of ``toy_data(ToyWorld(), 20000, 3000, seed=0)`` (100% ``[MASK]`` at 15%, the
standard protocol), scored every ``--every`` steps (the curves):

1. **Model size** (``models``): the width ``d`` in ``WIDTHS`` (the recipe's 64 among them),
   one block, heads of width 16 (``max(1, d // 16)`` heads: one below 32), feed-forward
   ``4 d``; trained on the recipe's 20,000 sentences. ``parameters`` counts every weight
   (Hoffmann's N), ``non_embedding`` leaves out the word, position and segment embeddings
   (Kaplan's N); the word embeddings are tied to the output, so this is the model itself.
2. **Data size** (``data``): the recipe's width 64, trained on the first ``n`` sentences of a
   fixed pool, ``n`` in ``N_TRAINS``: the recipe's 20,000 training sentences, then 20,000
   more drawn with ``EXTRA_SEED`` (for the sizes above 20,000). ``n`` is distinct sentences,
   not tokens seen: at the fixed budget, the small sets are passed over many times
   (``passes`` records how many). Its 20,000 run is the model sweep's width-64 run, not
   trained again.

Each seed (0, 1, ...: the initial weights, the data order and the masks) is a run; the
``excess`` is its last eval loss minus the floor (nats), which is what the power law
describes; ``gap_se`` is that excess's standard error over the evaluation set's sentences
(:func:`bench.bench_lab.gap_and_se`, each sentence's blanks kept together): the noise of the
one evaluation set, which the seeds do not show.

Compute budget: 5 seeds x (6 widths + 5 data sizes) = 55 runs of 1,400 steps: about 13
minutes on 2 cores (timed: the full run took 661 s, with notebooks executing beside it for
part of the time; one seed alone, ``--seeds 1``, took 128 s with the smaller evaluation set of
earlier runs; a run takes from 5 s at width 8 to 17 s at width 96, whatever the data size; the
JSON records ``wall_s`` and each run's ``train_s``).

    python -m bench.bench_scaling              # the full run, 5 seeds
    python -m bench.bench_scaling --seeds 7    # more seeds; --steps N, --every N
    python -m bench.bench_scaling --smoke      # seconds: tiny settings, writes to a temp dir

It prints a table and writes JSON (``--json``, default bench/results/scaling.json; with
``--smoke``, a temporary file). ``summary`` is, for each number of the per-seed records,
``{"mean", "std", "min", "max"}`` over the seeds (``std`` the sample standard deviation, 0
with one seed); the curves follow ``steps``::

    {"benchmark": "scaling", "smoke": bool, "machine": {...}, "wall_s": float,
     "settings": {"seeds": [int], "widths": [int], "n_trains": [int], "data_width": int,
                  "n_eval": int, "eval_rate": float,  # the evaluation's share hidden
                  "data_seed": 0, "extra_seed": int, "every": int,
                  "model": {BertConfig fields at data_width},
                  "train": {Recipe fields but seed}},
     "floor": float, "slots": int,                 # the evaluation set's exact floor, targets
     "uniform_loss": float, "unigram_loss": float,  # log(world words); the context-free floor
     "steps": [int],
     "models": [{"width": int, "layers": int, "heads": int, "parameters": int,
                 "non_embedding": int, "n_train": int,
                 "runs": [{"seed": int, "train_s": float, "eval_loss": float,
                           "excess": float, "gap_se": float,
                           "curve": [float],                         # eval loss at steps
                           "train_curve": [float | null]}],          # null at step 0
                 "summary": {"eval_loss": summary, "excess": summary, "train_s": summary}}],
     "data": [{"n_train": int, "passes": float, "width": int, "parameters": int,
               "runs": [...], "summary": {...}}]}                  # as in "models"
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict

import torch

from bench._results import machine, mask_only_recipe, run_options, write
from bench.bench_lab import gap_and_se, summary
from mlmlib.corpora import Batch, pack_rows
from mlmlib.tokenizer import SPECIAL_TOKENS
from mlmlib.toyworld import ToyWorld
from mlmlib.train import EVAL_RATE, RunOptions, TrainData, Trainer, build_model, toy_data

WIDTHS = [8, 16, 32, 48, 64, 96]
DATA_WIDTH = 64  # the recipe's
N_TRAINS = [1000, 2000, 5000, 10000, 20000, 40000]
EXTRA_SEED = 5  # the sentences past the recipe's 20,000
FULL = {"seeds": 5, "steps": 1400, "every": 100, "n_train": 20000, "n_eval": 3000,
        "widths": WIDTHS, "n_trains": N_TRAINS, "data_width": DATA_WIDTH}
SMOKE = {"seeds": 2, "steps": 6, "every": 3, "n_train": 200, "n_eval": 40, "widths": [8, 16],
         "n_trains": [100, 200, 300], "data_width": 16, "batch_size": 16, "warmup": 2}


def heads(width: int) -> int:
    return max(1, width // 16)


def sized(world: ToyWorld, data: TrainData, size: dict, width: int, seed: int):
    return mask_only_recipe(data, world, size, seed, hidden_size=width, num_heads=heads(width),
                            intermediate_size=4 * width)


def non_embedding(model) -> int:
    """The weights outside the word, position and segment embeddings and their LayerNorm."""
    return sum(p.numel() for name, p in model.named_parameters()
               if not name.startswith(("word_embeddings", "position_embeddings",
                                       "segment_embeddings", "ln_embeddings")))


def run(world: ToyWorld, data: TrainData, size: dict, width: int, seed: int,
        exact_truth: torch.Tensor):
    """One run: its record, and the model's parameter counts (all; non-embedding)."""
    config, recipe = sized(world, data, size, width, seed)
    trainer = Trainer(build_model(config, seed=seed), data, recipe,
                      RunOptions(eval_every=size["every"], quiet=True))
    start = time.perf_counter()
    history = trainer.fit()
    seconds = time.perf_counter() - start
    record = {"seed": seed, "train_s": seconds, "eval_loss": history[-1]["eval_loss"],
              "curve": [h["eval_loss"] for h in history],
              "train_curve": [h["train_loss"] for h in history]}
    _, record["gap_se"] = gap_and_se(trainer.model, data.eval, exact_truth,
                                     expected=record["eval_loss"] + exact_truth.mean().item())
    return record, trainer.model.num_parameters(), non_embedding(trainer.model)


def pool(world: ToyWorld, data: TrainData, vocab: list[str], most: int) -> Batch:
    """The data sweep's training rows: the recipe's, then fresh sentences up to ``most``."""
    if most <= len(data.rows.input_ids):
        return data.rows
    ids = {t: i for i, t in enumerate(vocab)}
    more = world.sample(most - len(data.rows.input_ids), rng=EXTRA_SEED)
    extra = pack_rows([[ids[w] for w in s] for s in more], data.rows.input_ids.shape[1],
                      {t: ids[t] for t in SPECIAL_TOKENS})
    return Batch(*(torch.cat([a, b]) if a is not None else None
                   for a, b in zip(data.rows, extra, strict=True)))


def entry(runs: list[dict], **fields) -> dict:
    """One sweep point: its fields, its runs, and their summary over the seeds."""
    return {**fields, "runs": runs,
            "summary": {key: summary([r[key] for r in runs])
                        for key in ("eval_loss", "excess", "train_s")}}


def print_table(result: dict) -> None:
    s = result["settings"]
    print(f"\nscaling: {len(s['seeds'])} seeds, {result['steps'][-1]} steps each; floor "
          f"{result['floor']:.4f}, unigram {result['unigram_loss']:.4f}")
    print("eval loss minus the floor (nats), mean ± sd over seeds, and per seed")
    print(f"{'width':>6} {'params':>8} {'non-emb':>8} {'excess':>17}  per seed")
    for m in result["models"]:
        u = m["summary"]["excess"]
        print(f"{m['width']:>6} {m['parameters']:>8} {m['non_embedding']:>8} "
              f"{u['mean']:.4f} ± {u['std']:.4f}  "
              + " ".join(f"{r['excess']:.4f}" for r in m["runs"]))
    print(f"\n{'n_train':>8} {'passes':>7} {'excess':>17}  per seed  (width {s['data_width']})")
    for d in result["data"]:
        u = d["summary"]["excess"]
        print(f"{d['n_train']:>8} {d['passes']:7.1f} {u['mean']:.4f} ± {u['std']:.4f}  "
              + " ".join(f"{r['excess']:.4f}" for r in d["runs"]))
    print(f"\nwall time {result['wall_s']:.0f} s")


def main(argv=None) -> int:
    args, size, seeds = run_options(__doc__, FULL, SMOKE, argv, every=True)
    start = time.perf_counter()
    if size["data_width"] not in size["widths"] or size["n_train"] not in size["n_trains"]:
        raise SystemExit("the data sweep's width and the model sweep's data size must be "
                         "points of the other sweep (their run is shared)")
    world = ToyWorld()
    data, vocab, sentences, masks = toy_data(world, size["n_train"], size["n_eval"], seed=0)
    marks = world.landmarks(sentences, masks)
    # each evaluation blank's exact log probability of its true word, in data.eval's order
    exact_truth = -world.bayes_loss(sentences, masks, reduction="none")
    config, recipe = sized(world, data, size, size["data_width"], 0)
    train = asdict(recipe)
    del train["seed"]
    result = {"benchmark": "scaling", "smoke": args.smoke, "machine": machine(),
              "settings": {"seeds": seeds, "widths": size["widths"],
                           "n_trains": size["n_trains"], "data_width": size["data_width"],
                           "n_eval": size["n_eval"], "eval_rate": EVAL_RATE, "data_seed": 0,
                           "extra_seed": EXTRA_SEED,
                           "every": size["every"], "model": asdict(config), "train": train},
              "floor": marks["floor"], "slots": sum(map(len, masks)),
              "uniform_loss": math.log(world.vocab_size), "unigram_loss": marks["unigram"],
              "steps": [0, *(s for s in range(1, size["steps"] + 1)
                             if s % size["every"] == 0 or s == size["steps"])],
              "models": [], "data": []}

    def sweep_point(train_data: TrainData, width: int) -> tuple[list[dict], int, int]:
        runs = []
        for seed in seeds:
            record, total, inner = run(world, train_data, size, width, seed, exact_truth)
            record["excess"] = record["eval_loss"] - marks["floor"]
            runs.append(record)
            print(f"  width {width}, {len(train_data.rows.input_ids)} sentences, seed {seed}: "
                  f"{record['train_s']:.0f} s, excess {record['excess']:.4f}", flush=True)
        return runs, total, inner

    shared = None
    for width in size["widths"]:
        runs, total, inner = sweep_point(data, width)
        result["models"].append(entry(runs, width=width, layers=config.num_layers,
                                      heads=heads(width), parameters=total,
                                      non_embedding=inner, n_train=size["n_train"]))
        if width == size["data_width"]:
            shared = (runs, total)
    rows = pool(world, data, vocab, max(size["n_trains"]))
    for n in size["n_trains"]:
        if n == size["n_train"]:
            runs, total = shared
        else:
            subset = TrainData(Batch(*(t[:n] if t is not None else None for t in rows)),
                               data.eval, data.vocab_size, data.mask_token_id, data.special_ids)
            runs, total, _ = sweep_point(subset, size["data_width"])
        result["data"].append(entry(runs, n_train=n, passes=size["steps"] * recipe.batch_size / n,
                                    width=size["data_width"], parameters=total))
    result["wall_s"] = time.perf_counter() - start
    print_table(result)
    write(result, "scaling", args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
