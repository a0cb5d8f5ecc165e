"""Where a training step's time goes: mlmlib's mini BERT and Hugging Face's BertForMaskedLM.

MFU says how much of the matrix-multiply roof a step reaches, not where the rest goes. This
script profiles full training steps (forward, backward, AdamW) of both models with PyTorch's
profiler, at the settings of ``bench_train.py`` (the same config, batches and masks), and
sorts every operator's own time into a few kinds: the matrix products, attention's fused
kernel, dropout's random masks, LayerNorm, GELU, softmax and the loss, embeddings and
gathers, and the rest (element-wise adds, copies, reshapes); the optimizer's update (AdamW) is
timed apart, on the same gradients. It prints one
table with the milliseconds per step of each kind, and the rate the matrix products
themselves reach (GFLOP/s in their own time), and writes JSON
(``--json``, default bench/results/profile-<config>-<device>-<dtype>.json).

    python -m bench.profile_step                 # reference config, CPU, fp32, 3 processes
    python -m bench.profile_step --steps 8
    python -m bench.profile_step --smoke         # a few seconds: checks the script runs

The profiler adds a little time to every operator call, and some of a step lies in no
operator's own time (Python, the bookkeeping between operators), so the kinds' milliseconds
are not shares of a real step and the table gives none. The performance page sets them beside
a step timed without the profiler by ``bench_train.py``, where its speeds come from.
"""

from __future__ import annotations

import argparse
import copy
import time

import torch
from torch.profiler import ProfilerActivity, profile

from bench._results import machine, parse, separate_processes, spread, write
from bench.bench_train import CONFIGS, batches, build, flops_per_token, forward, random_data
from mlmlib.constants import IGNORE_INDEX
from mlmlib.train import Recipe, RunOptions, Trainer

# the kind of each operator, by the first pattern its name contains (checked in this order)
KINDS = [
    ("matrix products", ("aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm")),
    ("attention kernel", ("scaled_dot_product", "flash_attention", "efficient_attention")),
    ("dropout", ("bernoulli", "dropout", "rand")),
    ("LayerNorm", ("layer_norm",)),
    ("GELU", ("gelu",)),
    ("softmax and loss", ("softmax", "nll_loss", "cross_entropy", "logsumexp")),
    ("embeddings and gathers", ("embedding", "index", "gather", "scatter", "masked_select",
                                "nonzero")),
]
OTHER = "the rest: adds, copies, reshapes"
OPTIMIZER = "optimizer (AdamW), timed apart"


def kind_of(name: str) -> str:
    low = name.lower()
    for kind, patterns in KINDS:
        if any(p in low for p in patterns):
            return kind
    return OTHER


def profile_steps(model, optimizer, data, bf16: bool, device) -> dict[str, float]:
    """Each kind's own time in ms per step, over the steps in ``data`` (after one warm-up).

    The forward and backward passes are profiled; the optimizer's update is timed apart (its
    element-wise operators would otherwise land among "the rest"), on the same gradients.
    """
    def forward_backward(batch):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = forward(model, batch.input_ids, batch.attention_mask, batch.labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()

    forward_backward(data[0])
    optimizer.step()  # warm-up: AdamW creates its state at the first step
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in data[1:]:
            forward_backward(batch)
    per_kind: dict[str, float] = {}
    for event in prof.key_averages():
        if event.key.startswith(("ProfilerStep", "autograd::engine")):
            continue  # annotations that enclose other operators: their own time is near 0
        kind = kind_of(event.key)
        per_kind[kind] = per_kind.get(kind, 0.0) + event.self_cpu_time_total / 1000
    n = len(data) - 1
    start = time.perf_counter()
    for _ in range(n):
        optimizer.step()
    per_kind[OPTIMIZER] = (time.perf_counter() - start) * 1000
    return {k: v / n for k, v in per_kind.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=list(CONFIGS), default="reference")
    p.add_argument("--steps", type=int, default=6, help="profiled steps (after one warm-up)")
    p.add_argument("--no-dropout", action="store_true", help="both models without dropout")
    args, argv = parse(p, argv, "separate processes; the table gives each kind's median over "
                       "them")
    if args.smoke:
        args.config, args.steps = "smoke", 2
    if args.runs > 1:
        results = separate_processes(__file__, argv, args.runs)
        result = {**copy.deepcopy(results[0]), "processes": args.runs, "runs": results}
        for name, side in result["sides"].items():
            kinds = {k for r in results for k in r["sides"][name]["ms_per_step"]}
            per_run = [r["sides"][name] for r in results]
            side["ms_per_step"] = {k: spread([s["ms_per_step"].get(k, 0.0) for s in per_run])
                                   ["median"] for k in kinds}
            side["profiled_ms_per_step"] = sum(side["ms_per_step"].values())
            side["matmul_gflops_in_own_time"] = spread(
                [s["matmul_gflops_in_own_time"] or 0.0 for s in per_run])["median"]
        print(f"\nthe median of {args.runs} processes:")
        print_table(result)
        if not args.smoke or args.json:
            write(result, result_name(args), args.json)
        return 0
    device = torch.device("cpu")
    dropout = 0.0 if args.no_dropout else 0.1
    ours, theirs, (v, d, layers, i, t, b) = build(args.config, dropout, hf_dropout=dropout)
    # the batches bench_train times, drawn as the Trainer draws them (both sides get the same)
    drawer = Trainer(build(args.config, dropout)[0], random_data(v, t, b),
                     Recipe(batch_size=b, warmup=0), RunOptions(device="cpu", quiet=True))
    data = batches(drawer, args.steps + 1)
    masked_share = float((data[0].labels != IGNORE_INDEX).float().mean())
    result = {"benchmark": "profile", "config": args.config, "device": "cpu", "dtype": "fp32",
              "dropout": dropout, "steps": args.steps, "machine": machine(device), "sides": {}}
    for name, model, score_all in (("mlmlib", ours, False), ("transformers", theirs, True)):
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        start = time.perf_counter()
        per_kind = profile_steps(model, optimizer, data, False, device)
        wall = (time.perf_counter() - start) / (args.steps + 1) * 1000
        flops = flops_per_token(v, d, layers, i, t, masked_share, score_all) * b * t
        matmul_ms = per_kind.get("matrix products", 0.0) + per_kind.get("attention kernel", 0.0)
        result["sides"][name] = {
            "ms_per_step": per_kind, "profiled_ms_per_step": sum(per_kind.values()),
            "wall_ms_per_step_with_profiler": wall, "flops_per_step": flops,
            "matmul_gflops_in_own_time": flops / (matmul_ms / 1000) / 1e9 if matmul_ms else None}
    print(f"{args.config} config, CPU, fp32, dropout {dropout}; own time per training step, "
          f"mean of {args.steps} profiled steps")
    print_table(result)
    if not args.smoke or args.json:
        write(result, result_name(args), args.json)
    return 0


def result_name(args) -> str:
    return f"profile-{args.config}-cpu-fp32{'-nodropout' if args.no_dropout else ''}"


def print_table(result: dict) -> None:
    """The table: each kind's own ms per step under the profiler, for both sides (no shares:
    the profiled kinds need not add up to a step without the profiler)."""
    tables = {name: side["ms_per_step"] for name, side in result["sides"].items()}
    order = [k for k, _ in KINDS] + [OTHER, OPTIMIZER]
    print(f"{'kind':36s} {'mlmlib ms':>10s} {'transformers ms':>16s}")
    totals = {n: sum(t.values()) for n, t in tables.items()}
    for kind in order:
        a, c = tables["mlmlib"].get(kind, 0.0), tables["transformers"].get(kind, 0.0)
        print(f"{kind:36s} {a:10.1f} {c:16.1f}")
    print(f"{'sum of the kinds':36s} {totals['mlmlib']:10.1f} {totals['transformers']:16.1f}")
    for name, side in result["sides"].items():
        rate = side["matmul_gflops_in_own_time"]
        print(f"{name}: the model's FLOPs over the matrix products' own time: "
              f"{rate:,.0f} GFLOP/s" if rate else f"{name}: no matrix products seen")


if __name__ == "__main__":
    raise SystemExit(main())
