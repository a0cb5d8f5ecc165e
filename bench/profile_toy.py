"""Where a step of the toy-world recipe goes: the course's recipe beside the previous one.

``bench_floor.py`` measures the time to the floor; this script says what a step of it is made
of, on this machine. For :func:`mlmlib.train.toy_recipe` (one encoder block, the padding left
out) and :func:`mlmlib.train.baseline_toy_recipe` (two blocks, the padding computed), each in
the course's :class:`~mlmlib.train.Trainer` on ``toy_data(ToyWorld(), 20000, 1000, seed=0)``,
it times whole training steps (drawing and masking the batch, forward, backward, clipping,
AdamW) without the profiler, then profiles the same number of steps and sorts every
operator's own time into the kinds of ``profile_step.py``. Per kind it records the
milliseconds per step *and the operator calls per step*: a step made of many short calls is
bound by the cost of a call, not by arithmetic. It also counts the step's FLOPs (the matrix
products' and attention's, on the positions each side computes) and the time they would take
at this machine's fp32 matrix-product roof, measured in the same process.

    python -m bench.profile_toy              # 3 processes; bench/results/profile-toy-cpu.json
    python -m bench.profile_toy --smoke      # a few seconds: checks the script runs

The profiler adds a little time to every call, so the kinds' milliseconds are for where the
time goes, not shares of the unprofiled step (the JSON keeps both totals side by side).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from bench._results import machine, parse, separate_processes, spread, write
from bench.bench_train import flops_per_token, matmul_roof
from bench.profile_step import kind_of
from mlmlib.constants import IGNORE_INDEX
from mlmlib.toyworld import ToyWorld
from mlmlib.train import RunOptions, Trainer, baseline_toy_recipe, build_model, toy_data, toy_recipe

RECIPES = {"mlmlib": toy_recipe, "baseline": baseline_toy_recipe}


def step_flops(trainer: Trainer, batch) -> float:
    """The FLOPs of one training step on ``batch``: 3x the forward's matrix products and
    attention, on the positions the model computes (the real ones when it unpads)."""
    cfg = trainer.model.config
    real = int(batch.attention_mask.sum())
    length = int(batch.attention_mask.ne(0).any(0).nonzero().max()) + 1 if cfg.unpad else \
        batch.attention_mask.shape[1]
    tokens = real if cfg.unpad else batch.attention_mask.numel()
    masked = int((batch.labels != IGNORE_INDEX).sum()) / tokens
    return tokens * flops_per_token(cfg.vocab_size, cfg.hidden_size, cfg.num_layers,
                                    cfg.intermediate_size, length, masked, score_all=False)


def measure(name: str, data, steps: int, warmup: int) -> dict:
    """One recipe: unprofiled ms per step, then each kind's profiled ms and calls per step."""
    model_config, recipe = RECIPES[name](data.vocab_size, data.rows.input_ids.shape[1], seed=0)
    trainer = Trainer(build_model(model_config, seed=0), data, recipe,
                      RunOptions(device="cpu", quiet=True))
    for _ in range(warmup):
        trainer.train_step()
    batches = [trainer.next_batch() for _ in range(steps)]
    flops = statistics.mean(step_flops(trainer, b) for b in batches)
    start = time.perf_counter()
    for _ in range(steps):
        trainer.train_step()  # draws and masks its own batch, as in training
    step_ms = (time.perf_counter() - start) / steps * 1000
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            trainer.train_step()
    ms, calls = {}, {}
    for event in prof.key_averages():
        if event.key.startswith(("ProfilerStep", "autograd::engine", "Optimizer.")):
            continue  # annotations that enclose other operators
        kind = kind_of(event.key)
        ms[kind] = ms.get(kind, 0.0) + event.self_cpu_time_total / 1000 / steps
        calls[kind] = calls.get(kind, 0) + event.count / steps
    return {"ms_per_step": ms, "calls_per_step": calls, "profiled_ms_per_step": sum(ms.values()),
            "unprofiled_ms_per_step": step_ms, "flops_per_step": flops,
            "layers": model_config.num_layers, "unpad": model_config.unpad}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40, help="steps timed, then as many profiled")
    args, argv = parse(p, argv, "separate processes; the table gives medians over them")
    if args.smoke:
        args.steps = 3
    if args.runs > 1:
        results = separate_processes(__file__, argv, args.runs)
        result = {**copy.deepcopy(results[0]), "processes": args.runs, "runs": results}
        result["roof_gflops"] = spread([r["roof_gflops"] for r in results])
        for name, side in result["sides"].items():
            per_run = [r["sides"][name] for r in results]
            for key in ("ms_per_step", "calls_per_step"):
                kinds = {k for s in per_run for k in s[key]}
                side[key] = {k: statistics.median(s[key].get(k, 0.0) for s in per_run)
                             for k in kinds}
            for key in ("unprofiled_ms_per_step", "profiled_ms_per_step"):
                side[key] = spread([s[key] for s in per_run])
        print(f"\nthe median of {args.runs} processes:")
        report(result)
        if not args.smoke or args.json:
            write(result, "profile-toy-cpu", args.json)
        return 0
    torch.manual_seed(0)
    n_train, n_eval = (400, 40) if args.smoke else (20000, 1000)
    data = toy_data(ToyWorld(), n_train, n_eval, seed=0)[0]
    result = {"benchmark": "profile-toy", "device": "cpu", "dtype": "fp32", "steps": args.steps,
              "machine": machine(torch.device("cpu")),
              "roof_gflops": matmul_roof(torch.device("cpu"), torch.float32,
                                         0.05 if args.smoke else 0.5),
              "sides": {name: measure(name, data, args.steps, 3 if args.smoke else 20)
                        for name in RECIPES}}
    report(result)
    if not args.smoke or args.json:
        write(result, "profile-toy-cpu", args.json)
    return 0


def _median(x):
    return x["median"] if isinstance(x, dict) else x


def report(result: dict) -> None:
    """Per recipe: the step with and without the profiler, its FLOPs at the roof, and the kinds
    with their calls per step and mean microseconds per call."""
    roof = _median(result["roof_gflops"])
    for name, side in result["sides"].items():
        step, flops = _median(side["unprofiled_ms_per_step"]), side["flops_per_step"]
        print(f"{name} ({side['layers']} block(s), unpad {side['unpad']}): {step:.2f} ms per "
              f"step without the profiler, {_median(side['profiled_ms_per_step']):.2f} ms "
              f"profiled; {flops / 1e9:.3f} GFLOP, {flops / roof / 1e6:.2f} ms at the roof of "
              f"{roof:,.0f} GFLOP/s")
        print(f"  {'kind':34s} {'ms/step':>8s} {'calls/step':>11s} {'us/call':>8s}")
        for kind, ms in sorted(side["ms_per_step"].items(), key=lambda kv: -kv[1]):
            calls = side["calls_per_step"].get(kind, 0)
            print(f"  {kind:34s} {ms:8.2f} {calls:11.0f} {1000 * ms / max(calls, 1):8.1f}")
        total_calls = sum(side["calls_per_step"].values())
        print(f"  {'all':34s} {_median(side['profiled_ms_per_step']):8.2f} {total_calls:11.0f}")


if __name__ == "__main__":
    raise SystemExit(main())
