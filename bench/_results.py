"""What the benchmarks share: the machine they ran on, and where they write their JSON.

Each benchmark is a module of the package ``bench``, run from the top of the clone as
``python -m bench.<name>``.

Results go to bench/results/, or to the path given with --json. Every result records the
machine (processor, cores, torch, whether bf16 is native), since the numbers mean little without it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"


def write(result: dict, name: str, path: str | None = None, smoke: bool = False) -> Path:
    """Write ``result`` as JSON to ``path`` or ``bench/results/<name>.json``; say where.

    A smoke run (``smoke=True``) without a ``path`` writes into a fresh temporary folder, so that
    its tiny numbers never replace the stored results."""
    if path:
        out = Path(path)
    elif smoke:
        out = Path(tempfile.mkdtemp()) / f"{name}.json"
    else:
        out = RESULTS / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")
    return out


def _cpu_flags() -> tuple[str, set[str]]:
    """The CPU's model name and feature flags (Linux; empty elsewhere)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine(), set()
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                 if line.startswith("model name")), platform.machine())
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines()
                  if line.startswith("flags")), [])
    return name, set(flags)


def bf16_is_native(device: torch.device) -> bool:
    """Whether bf16 matmuls run in hardware: AVX-512 BF16 or AMX on a CPU, or a recent GPU.

    Without it (AVX2 only, say) PyTorch emulates bf16 and autocast makes training slower, not
    faster: measured here on an AVX2-only EPYC, a (600, 8192) @ (8192, 256) bf16 matmul took
    2.9 s against 0.02 s in fp32.
    """
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return bool(_cpu_flags()[1] & {"avx512_bf16", "amx_bf16"})


def machine(device: torch.device | None = None) -> dict:
    """The machine a result was measured on, for its JSON (and the GPU when ``device`` is one)."""
    name, _ = _cpu_flags()
    out = {"processor": name, "cpus": os.cpu_count(), "torch": torch.__version__,
           "threads": torch.get_num_threads(),
           "cpu_capability": torch.backends.cpu.get_cpu_capability(),
           "bf16_native": bf16_is_native(torch.device("cpu"))}
    if device is not None and device.type == "cuda":
        out["gpu"] = torch.cuda.get_device_name(device)
    return out


RUNS_HELP = "separate processes, one after the other (the spread across them is reported)"


def parse(p: argparse.ArgumentParser, argv: list[str] | None, runs_help: str = RUNS_HELP):
    """Add the options every benchmark has (``--smoke``, ``--runs``, ``--json``) and parse;
    ``(args, argv)``. ``--smoke`` keeps the multi-process path, but with two processes."""
    p.add_argument("--smoke", action="store_true", help="tiny and quick: check the script")
    p.add_argument("--runs", type=int, default=3, help=runs_help)
    p.add_argument("--json", default=None, help="where the JSON goes (default: bench/results/)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    if args.smoke:
        args.runs = min(args.runs, 2)
    return args, argv


def _without(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    """``argv`` without the given options and their values (``--x v`` or ``--x=v``)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in flags:
            skip = True
        elif not arg.startswith(tuple(f"{f}=" for f in flags)):
            out.append(arg)
    return out


def separate_processes(script: str, argv: list[str], runs: int, each=None) -> list[dict]:
    """Run the benchmark ``script`` (its ``__file__``; run as ``python -m bench.<name>`` from
    the top of the clone) with ``argv`` as ``runs`` separate processes, one after the other;
    their results. Repetitions inside one process share its warm caches, its memory layout and its
    thread placement, so a ratio is only trusted when it holds across processes too.
    ``each(r)``, if given, returns options of the r-th process's own (a seed, say), which
    replace the same options in ``argv``."""
    own = each(0) if each else []
    argv = _without(argv, ("--runs", "--json", *(a for a in own if a.startswith("--"))))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(runs):
            print(f"--- process {r + 1} of {runs}", flush=True)
            out = Path(tmp) / f"run-{r}.json"
            subprocess.run([sys.executable, "-m", f"bench.{Path(script).stem}", *argv,
                            *(each(r) if each else []), "--runs", "1", "--json", str(out)],
                           check=True, cwd=RESULTS.parent.parent)
            results.append(json.loads(out.read_text()))
    return results


def spread(values: list[float]) -> dict:
    """The median and the range of one figure over separate runs."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return {"median": median, "min": ordered[0], "max": ordered[-1], "runs": list(values)}


def across(results: list[dict]) -> dict:
    """Several processes' results of one benchmark as one: the first one's settings, every
    process's whole result under ``runs``, and the ratio and each side's figures (median
    speed, MFU, eval losses: whichever it has) as spreads across the processes."""
    first = results[0]
    out = {k: v for k, v in first.items() if k not in ("implementations", "ratio")}
    out["processes"] = len(results)
    out["runs"] = results
    out["ratio"] = spread([r["ratio"] for r in results])
    out["implementations"] = {
        name: {key: spread([r["implementations"][name][key] for r in results])
               for key in ("median", "mfu", "useful_mfu", "eval_loss", "eval_loss_step0",
                           "seconds_to_target") if key in impl}
        for name, impl in first["implementations"].items()}
    return out


def run_options(doc: str, full: dict, smoke: dict, argv=None,
                every: bool = False) -> tuple[argparse.Namespace, dict, list[int]]:
    """The options the training benchmarks share, parsed: ``(args, size, seeds)``.

    ``--seeds N`` (seeds 0..N-1), ``--steps``, ``--every`` (steps between curve points, when
    ``every``), ``--smoke`` (``smoke``'s settings over ``full``'s: seconds, checks it runs) and
    ``--json`` (where to write). ``size`` is the settings in force, with the given steps (and
    every) in it; ``seeds`` the list of seeds.
    """
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--seeds", type=int, default=None, help=f"training seeds 0..N-1 "
                   f"(default {full['seeds']}; {smoke['seeds']} with --smoke)")
    p.add_argument("--steps", type=int, default=None, help=f"steps per training "
                   f"(default {full['steps']}; {smoke['steps']} with --smoke)")
    if every:
        p.add_argument("--every", type=int, default=None, help=f"steps between curve points "
                       f"(default {full['every']}; {smoke['every']} with --smoke)")
    p.add_argument("--smoke", action="store_true", help="tiny settings, seconds: checks it runs")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    size = {**full, **(smoke if args.smoke else {})}
    size["steps"] = args.steps or size["steps"]
    if every:
        size["every"] = args.every or size["every"]
    return args, size, list(range(args.seeds or size["seeds"]))


def mask_only_recipe(data, world, size: dict, seed: int, **changes):
    """The toy world's recipe with every blank ``[MASK]`` (no 80/10/10: ``ToyWorld.posterior``
    is the floor of exactly this corruption), trained for ``size["steps"]``, with the batch size
    and warm-up of ``size`` where it sets them (the smoke settings do); ``changes`` replace any
    other field, by name. Returns ``(model_config, recipe)``, as ``toy_recipe`` does."""
    from mlmlib.train import toy_recipe

    extra = {k: size[k] for k in ("batch_size", "warmup") if k in size}
    return toy_recipe(data.vocab_size, world.max_len + 2, steps=size["steps"], seed=seed,
                      mask_prob=1.0, random_prob=0.0, **extra, **changes)
