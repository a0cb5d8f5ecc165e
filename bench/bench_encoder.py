"""What each part of the encoder is for: the mini BERT with one part taken away, on the toy world.

The course's toy recipe (:func:`mlmlib.train.toy_recipe`: one encoder block, hidden 64, 4
heads, no dropout, 1,400 steps) trained on ONE toy-world data set,
``toy_data(ToyWorld(), 20000, 1000, seed=0)``, in five variants, each over ``--seeds``
training seeds (0, 1, ...: the initial weights, the data order and the masks):

* ``full`` - the model as built, every part in place;
* ``no_positions`` - no position embeddings (``BertConfig(position_embeddings=False)``): the
  encoder cannot tell word order;
* ``one_head`` - one attention head of width 64 instead of four of width 16 (the same hidden
  size, the same number of weights);
* ``no_head_transform`` - the masked-LM head without its transform (dense, GELU, LayerNorm)
  and without the bias ``b_v``: the scores are ``w_v . h_i`` straight from the encoder;
* ``untied`` - the scores use their own ``(V, d)`` matrix instead of the word embeddings.

Every run is scored on the same 1,000 evaluation sentences (100% ``[MASK]``, 15% of the words
in each, at least one), whose exact Bayes floor ``world.bayes_loss`` is the loss no model can
beat; ``excess`` is a run's eval loss minus that floor (nats per masked word).

    python -m bench.bench_encoder              # the full run: 5 seeds (the JSON records its
                                               # wall time, meta.wall_s)
    python -m bench.bench_encoder --seeds 8    # more seeds; --steps N: steps per training
    python -m bench.bench_encoder --smoke      # seconds: tiny settings, writes to a temp dir

It prints a table and writes JSON (``--json``, default bench/results/encoder.json; with
``--smoke``, a temporary file), read by the chapter *Inside the encoder*::

    {"meta": {"command": str, "wall_s": float, "steps": int, "seeds": [int], "machine": str,
              "machine_detail": {...}, "date": str, "smoke": bool, "n_train": int,
              "n_eval": int, "model": {BertConfig fields of "full"}},
     "floor": float, "unigram": float, "uniform": float,   # nats per masked word, same targets
     "variants": [{"name": str, "label": str, "changes": {BertConfig field: value},
                   "parameters": int, "eval_loss": [per seed], "excess": [per seed],
                   "train_s": [per seed], "steps": [int], "curves": [[eval loss] per seed]}]}
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict

from bench._results import machine, write
from mlmlib.toyworld import ToyWorld
from mlmlib.train import RunOptions, Trainer, build_model, toy_data, toy_recipe

VARIANTS = [
    ("full", "the mini BERT as built", {}),
    ("no_positions", "no position embeddings", {"position_embeddings": False}),
    ("one_head", "one head instead of four", {"num_heads": 1}),
    ("no_head_transform", "no head transform, no bias b_v",
     {"head_transform": False, "head_bias": False}),
    ("untied", "output matrix untied from the embeddings", {"tie_embeddings": False}),
]
FULL = {"seeds": 5, "steps": 1400, "n_train": 20000, "n_eval": 1000}
SMOKE = {"seeds": 1, "steps": 6, "n_train": 300, "n_eval": 50}


def run_variant(data, world_max_len: int, changes: dict, size: dict, seed: int) -> dict:
    model_config, recipe = toy_recipe(
        data.vocab_size, world_max_len + 2, steps=size["steps"], seed=seed,
        **changes, **({"batch_size": 16, "warmup": 2} if size is SMOKE else {}))
    run = RunOptions(eval_every=3 if size is SMOKE else 50, quiet=True)
    trainer = Trainer(build_model(model_config, seed=seed), data, recipe, run)
    start = time.perf_counter()
    history = trainer.fit()
    return {"seconds": time.perf_counter() - start, "history": history,
            "parameters": trainer.model.num_parameters(), "config": asdict(model_config)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=None, help="training seeds 0..N-1")
    p.add_argument("--steps", type=int, default=None, help="steps per training")
    p.add_argument("--smoke", action="store_true", help="tiny settings, seconds: checks it runs")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    size = SMOKE if args.smoke else dict(FULL)
    if args.seeds is not None or args.steps is not None:
        size = {**size, **{k: v for k, v in (("seeds", args.seeds), ("steps", args.steps))
                           if v is not None}}
    begin = time.perf_counter()
    world = ToyWorld()
    data, _, sentences, masks = toy_data(world, size["n_train"], size["n_eval"], seed=0)
    marks = world.landmarks(sentences, masks)
    seeds = list(range(size["seeds"]))
    variants, full_model = [], None
    for name, label, changes in VARIANTS:
        runs = [run_variant(data, world.max_len, changes, size, seed) for seed in seeds]
        full_model = full_model or runs[0]["config"]
        losses = [r["history"][-1]["eval_loss"] for r in runs]
        variants.append({
            "name": name, "label": label, "changes": changes,
            "parameters": runs[0]["parameters"], "eval_loss": losses,
            "excess": [loss - marks["floor"] for loss in losses],
            "train_s": [r["seconds"] for r in runs],
            "steps": [h["step"] for h in runs[0]["history"]],
            "curves": [[h["eval_loss"] for h in r["history"]] for r in runs]})
        print(f"{label:45s} " + "  ".join(f"{x:.4f}" for x in variants[-1]["excess"]),
              flush=True)
    detail = machine()
    result = {
        "meta": {"command": "python -m bench.bench_encoder" + (" --smoke" if args.smoke else "")
                 + (f" --seeds {args.seeds}" if args.seeds else "")
                 + (f" --steps {args.steps}" if args.steps else ""),
                 "wall_s": time.perf_counter() - begin, "steps": size["steps"], "seeds": seeds,
                 "machine": f"{detail['processor']}, {detail['cpus']} CPUs, torch "
                            f"{detail['torch']}",
                 "machine_detail": detail, "date": time.strftime("%Y-%m-%d"),
                 "smoke": args.smoke, "n_train": size["n_train"], "n_eval": size["n_eval"],
                 "model": full_model},
        "floor": marks["floor"], "unigram": marks["unigram"], "uniform": marks["uniform"],
        "variants": variants}
    print(f"\nexcess over the exact floor {marks['floor']:.4f} (nats per masked word), seeds "
          f"{seeds}; unigram {marks['unigram']:.4f}, uniform {marks['uniform']:.4f}; "
          f"wall {result['meta']['wall_s']:.0f} s")
    write(result, "encoder", args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
