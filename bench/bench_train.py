"""Training throughput: mlmlib's mini BERT against Hugging Face's BertForMaskedLM.

Both models get the same config, the same batches and the same masked positions, and both are
trained by the course's own :class:`mlmlib.train.Trainer` (Hugging Face's model behind
:func:`mlmlib.hf.masked_lm`): each measurement is a few calls of its one training step
(forward, backward, gradient clipping, AdamW and its schedule) on batches made once and handed
to both. A and B alternate in one process after a warm-up, and the table gives the median
with min-max over repetitions.
It also measures this machine's fp32 matrix-multiply roof (a benchmarked rate, not the
hardware's published peak) and each implementation's share of it: **MFU** counts the FLOPs
that implementation performs, padding included where it computes on padding; **useful MFU**
counts only the FLOPs on real tokens. The two differ with ``--ragged``, whose rows have
different lengths (uniform between a quarter of the sequence and all of it), padded as a
batch is: Hugging Face's model computes on the padding, mlmlib's leaves it out
(``BertConfig.unpad``). Without ``--ragged`` every row is full and the two are the same.

    python -m bench.bench_train                      # the reference config, CPU, fp32
    python -m bench.bench_train --dtype bf16         # bf16 autocast on both sides
    python -m bench.bench_train --device cuda        # on a GPU
    python -m bench.bench_train --ragged             # rows of different lengths, padded
    python -m bench.bench_train --device cuda --dtype bf16 --compile reduce-overhead
    python -m bench.bench_train --recipe             # the course's recipe against HF defaults
    python -m bench.bench_train --smoke              # a few seconds: checks the script runs

``--recipe`` compares the course's pretraining recipe (no dropout; bf16 autocast on a GPU, as
the Trainer does) on mlmlib with ``BertForMaskedLM`` at its defaults (fp32, dropout 0.1). Both
train for the same number of steps on the same batches of real text (the CPython docs,
WordPiece, 128 tokens a row) with the same recipe; the steps alternate in chunks, and each
chunk is timed. It reports tokens/s *and* the validation loss both reach (the Trainer's
evaluation), so that speed is not bought with quality. The Trainer autocasts to bf16 on CUDA
only, so ``--dtype bf16`` needs ``--device cuda``.

It prints a table and writes JSON (``--json``, default bench/results/train-<device>-<dtype>.json).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import asdict, replace

import torch

from bench._results import (
    across,
    machine,
    parse,
    separate_processes,
    spread,
    write,
)
from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import Batch
from mlmlib.model import BertConfig, MiniBert
from mlmlib.train import Recipe, RunOptions, TrainData, Trainer, build_model, eval_batch

SIDES = ("mlmlib", "transformers")
CONFIGS = {  # (vocab, hidden, layers, heads, intermediate, sequence, batch)
    "base": (30522, 768, 12, 12, 3072, 128, 64),  # BERT-base's shape: for a GPU
    "reference": (8192, 256, 4, 4, 1024, 128, 32),
    "tiny": (1024, 128, 2, 4, 512, 128, 32),
    "smoke": (512, 32, 1, 2, 64, 32, 4),
}


def matmul_roof(device: torch.device, dtype: torch.dtype, seconds: float) -> float:
    """The best fp32 (or bf16) matmul rate in GFLOP/s over a few shapes like the model's.

    On a shared machine one measurement can come out far low (119 against 187 GFLOP/s, seen
    here), which would inflate every MFU; main() measures it after each repetition and keeps
    the best.
    """
    best = 0.0
    shapes = [(4096, 256, 1024), (4096, 1024, 256), (2048, 2048, 2048)]
    if device.type == "cuda":  # a GPU reaches its roof only on large products
        shapes.append((8192, 8192, 8192))
    for m, k, n in shapes:
        a = torch.randn(m, k, device=device, dtype=dtype)
        b = torch.randn(k, n, device=device, dtype=dtype)
        for _ in range(3):
            a @ b
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            a @ b
            reps += 1
        _sync(device)
        best = max(best, 2 * m * k * n * reps / (time.perf_counter() - start) / 1e9)
    return best


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def flops_per_token(v, d, layers, i, t, masked_share, score_all):
    """Training FLOPs per token: 3x the forward matmuls (forward + backward)."""
    block = 2 * (3 * d * d + d * d + 2 * d * i) + 2 * 2 * t * d  # projections + attention
    head = 2 * (d * d + d * v) * (1.0 if score_all else masked_share)
    return 3 * (layers * block + head)


def shape(config: str, dropout: float, hf_dropout: float) -> tuple[BertConfig, BertConfig]:
    """Both models' configs at ``config``, with their dropout."""
    v, d, layers, heads, i, t, _ = CONFIGS[config]
    common = dict(vocab_size=v, hidden_size=d, num_layers=layers, num_heads=heads,
                  intermediate_size=i, max_position=t)
    return (BertConfig(**common, dropout=dropout, attention_dropout=dropout),
            BertConfig(**common, dropout=hf_dropout, attention_dropout=hf_dropout))


def build(config: str, dropout: float, hf_dropout: float = 0.1):
    """Both models at ``config`` (mlmlib with ``dropout``, transformers with its default 0.1
    unless told), each built by the course's setup with weights from seed 0; and the shape."""
    ours, theirs = shape(config, dropout, hf_dropout)
    return (build_model(ours, seed=0), build_model(theirs, seed=0, kind="transformers"),
            CONFIGS[config][:2] + CONFIGS[config][2:3] + CONFIGS[config][4:])


def forward(model, ids, mask, labels=None):
    """One forward pass of either model (both meet the trainer's masked-LM protocol)."""
    return model(ids, attention_mask=mask, labels=labels)


def trainers(models: dict, data: TrainData, recipe: Recipe, device, bf16: bool) -> dict:
    """A Trainer for each model: the same recipe (so the same batches and masks), the same run."""
    run = RunOptions(device=str(device), bf16=bf16, quiet=True)
    return {name: Trainer(model, data, recipe, run) for name, model in models.items()}


def computed_tokens(model, batch: Batch) -> int:
    """The positions of ``batch`` that ``model``'s encoder computes on: the real tokens for a
    MiniBert that unpads (``config.unpad``), every position for any other model."""
    model = getattr(model, "_orig_mod", model)  # torch.compile's wrapper: the model inside
    unpads = isinstance(model, MiniBert) and model.config.unpad  # Hugging Face's never does
    return int(batch.attention_mask.sum()) if unpads else batch.attention_mask.numel()


def timed_steps(trainer: Trainer, chunk: list[Batch]) -> float:
    """The Trainer's training step on every batch of ``chunk``; tokens per second."""
    _sync(trainer.device)
    start = time.perf_counter()
    for batch in chunk:
        trainer.train_step(batch)
    _sync(trainer.device)
    tokens = sum(int(b.attention_mask.sum()) for b in chunk)
    return tokens / (time.perf_counter() - start)


def random_data(v, t, b, seed=0, ragged=False) -> TrainData:
    """Rows of random words between [CLS] and [SEP], and an evaluation batch. Every row fills
    the ``t`` positions, or with ``ragged`` has a length drawn uniformly from ``t // 4`` to
    ``t`` and is padded (id 0) to ``t``."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, v, (4 * b, t), generator=g)
    lengths = (torch.randint(max(3, t // 4), t + 1, (4 * b,), generator=g) if ragged
               else torch.full((4 * b,), t))
    mask = (torch.arange(t)[None, :] < lengths[:, None]).long()  # (rows, t)
    ids = ids * mask
    ids[:, 0] = 2
    ids[torch.arange(4 * b), lengths - 1] = 3  # [SEP] at each row's end
    rows = Batch(ids, mask, torch.zeros_like(ids))
    evaluation = eval_batch(Batch(*(x[:b] for x in rows[:3])), v, 4, [0, 1, 2, 3, 4], g)
    return TrainData(rows, evaluation, v, 4, [0, 1, 2, 3, 4])


def batches(trainer: Trainer, n: int) -> list[Batch]:
    """``n`` masked global batches, drawn by ``trainer`` as it would train on them."""
    return [trainer.next_batch() for _ in range(n)]


def docs_data(max_len: int, vocab_size: int, smoke: bool):
    """Real text: the CPython docs split by document, WordPiece, packed rows, eval masks."""
    from mlmlib.corpora import pack_rows, python_docs, split_documents
    from mlmlib.tokenizer import SPECIAL_TOKENS, train_wordpiece

    docs = python_docs()[:12] if smoke else python_docs()
    train_docs, valid_docs = split_documents(docs, valid_fraction=0.1, rng=0)
    wordpiece = train_wordpiece([d.text for d in train_docs], vocab_size=vocab_size)
    special = {t: wordpiece.ids[t] for t in SPECIAL_TOKENS}
    rows = pack_rows([wordpiece.encode(d.text) for d in train_docs], max_len, special)
    valid = pack_rows([wordpiece.encode(d.text) for d in valid_docs], max_len, special)
    evaluation = eval_batch(valid, vocab_size, special["[MASK]"], wordpiece.special_ids,
                            rng=torch.Generator().manual_seed(1))
    return wordpiece, special, rows, evaluation


def compare_recipes(args) -> int:
    """The course's recipe (no dropout, ``--ours-lr``) on mlmlib against HF at its defaults,
    both trained by the course's Trainer on the same batches and masks: the speed, the eval
    loss each reaches, and the training time mlmlib takes to reach HF's final eval loss."""
    if args.smoke:
        args.config, args.train_steps, args.steps = "smoke", 4, 1
    ours, theirs, (v, _, _, _, t, b) = build(args.config, dropout=0.0)
    device = torch.device(args.device)
    wordpiece, special, rows, evaluation = docs_data(t, v, args.smoke)
    data = TrainData(rows, evaluation, v, special["[MASK]"], wordpiece.special_ids)
    recipe = Recipe(steps=args.train_steps, batch_size=b, lr=1e-3,
                    warmup=max(1, args.train_steps // 10), seed=0)
    recipes = {"mlmlib": replace(recipe, lr=args.ours_lr), "transformers": recipe}
    sides = {"mlmlib": Trainer(ours, data, recipes["mlmlib"],
                               RunOptions(device=args.device, quiet=True)),
             "transformers": Trainer(theirs, data, recipe,  # Hugging Face's defaults: fp32
                                     RunOptions(device=args.device, bf16=False, quiet=True))}
    start_loss = {n: tr.evaluate()["eval_loss"] for n, tr in sides.items()}
    k = args.steps
    rates = {n: [] for n in sides}
    clock = {n: 0.0 for n in sides}  # training time only, the warm-up chunk included
    curves = {n: [(0.0, 0, start_loss[n])] for n in sides}  # (seconds, step, eval loss)
    for c in range(0, args.train_steps, k):  # A B A B in chunks of k steps
        for name, trainer in sides.items():
            chunk = batches(trainer, min(k, args.train_steps - c))  # the same for both sides
            rate = timed_steps(trainer, chunk)
            clock[name] += sum(int(x.attention_mask.sum()) for x in chunk) / rate
            curves[name].append((clock[name], trainer.step,  # evaluated off the clock
                                 trainer.evaluate()["eval_loss"]))
            if c > 0 or args.smoke:  # the first chunk is the warm-up
                rates[name].append(rate)
    bf16 = device.type == "cuda"
    target = curves["transformers"][-1][2]  # HF's final eval loss
    reached = {n: next(((sec, step) for sec, step, loss in curve[1:] if loss <= target), None)
               for n, curve in curves.items()}  # after training starts (a tiny smoke run's
    # untrained model can sit below the target already: that is no time to reach it)
    result = {"benchmark": "train-recipe", "config": args.config, "device": str(device),
              "train_steps": args.train_steps, "chunk_steps": k,
              "data": f"CPython docs, WordPiece vocabulary {len(wordpiece)} (model rows {v}), "
                      f"{len(rows.input_ids)} training rows of {t}, "
                      f"{int((evaluation.labels != IGNORE_INDEX).sum())} validation targets",
              "recipe": asdict(recipe), "recipes": {n: asdict(r) for n, r in recipes.items()},
              "target_loss": target, "machine": machine(device), "implementations": {}}
    settings = {"mlmlib": f"{'bf16 autocast' if bf16 else 'fp32'}, dropout 0, "
                          f"lr {args.ours_lr:g}",
                "transformers": "fp32, dropout 0.1, lr 0.001"}
    print(f"{args.config} config, {device}; {args.train_steps} steps each on the same batches")
    print(f"{'':14s} {'settings':36s} {'tokens/s (median)':>18s} {'min-max':>17s} "
          f"{'eval loss':>10s} {'at step 0':>10s} {'s to target':>12s}")
    for name, values in rates.items():
        median = statistics.median(values)
        loss = curves[name][-1][2]
        seconds = reached[name][0] if reached[name] else None
        result["implementations"][name] = {
            "settings": settings[name], "tokens_per_s": values, "median": median,
            "eval_loss": loss, "eval_loss_step0": start_loss[name],
            "curve": [{"seconds": a, "step": n, "eval_loss": x} for a, n, x in curves[name]],
            "seconds_to_target": seconds if seconds is not None else clock[name],
            "reached_target": seconds is not None,
            "steps_to_target": reached[name][1] if reached[name] else None}
        shown = f"{seconds:.1f}" if seconds is not None else f">{clock[name]:.1f}"
        print(f"{name:14s} {settings[name]:36s} {median:18,.0f} "
              f"{min(values):8,.0f}-{max(values):<8,.0f} {loss:10.4f} {start_loss[name]:10.4f} "
              f"{shown:>12s}")
    impl = result["implementations"]
    result["ratio"] = impl["mlmlib"]["median"] / impl["transformers"]["median"]
    # how much sooner mlmlib reaches HF's final eval loss (a lower bound of 0 if it never does)
    result["ratio_to_target"] = (impl["transformers"]["seconds_to_target"]
                                 / impl["mlmlib"]["seconds_to_target"]
                                 if impl["mlmlib"]["reached_target"] else 0.0)
    print(f"ratio mlmlib recipe / transformers defaults: {result['ratio']:.2f}x tokens/s; eval "
          f"loss {impl['mlmlib']['eval_loss']:.4f} against {impl['transformers']['eval_loss']:.4f}"
          f"; transformers' final eval loss reached {result['ratio_to_target']:.2f}x sooner")
    if not args.smoke or args.json:
        write(result, f"train-recipe-{device.type}", args.json)
    return 0


def across_processes(results: list[dict]) -> dict:
    """One result from several processes' results: every figure with its spread.

    The speed ratio is the product of two effects, reported apart: the FLOPs per token that
    each side does (mlmlib scores only the masked positions) and the MFU, the speed per FLOP:
    ratio = (transformers' FLOPs / mlmlib's) x (mlmlib's MFU / transformers').
    """
    out = across(results)
    out["roof_gflops"] = spread([r["roof_gflops"] for r in results])
    ours, theirs = ([r["implementations"][n] for r in results] for n in SIDES)
    for name, runs in zip(SIDES, (ours, theirs), strict=True):
        out["implementations"][name]["flops_per_token"] = runs[0]["flops_per_token"]
    out["flops_ratio"] = theirs[0]["flops_per_token"] / ours[0]["flops_per_token"]
    # useful MFU: speed ratio = FLOPs ratio x this ratio exactly (padding or not)
    key = "useful_mfu" if "useful_mfu" in ours[0] else "mfu"
    out["mfu_ratio"] = spread([a[key] / b[key] for a, b in zip(ours, theirs, strict=True)])
    out["mfu_points"] = spread([100 * (a[key] - b[key])
                                for a, b in zip(ours, theirs, strict=True)])
    return out


def report(out: dict) -> None:
    """Print the figures across processes."""
    n = out["processes"]
    print(f"\nacross {n} separate processes: median (min-max)")
    for name, impl in out["implementations"].items():
        t, m = impl["median"], impl["mfu"]
        u = impl.get("useful_mfu", m)
        print(f"{name:14s} {t['median']:10,.0f} tokens/s ({t['min']:,.0f}-{t['max']:,.0f})  "
              f"MFU {m['median']:6.1%} ({m['min']:.1%}-{m['max']:.1%})  useful MFU "
              f"{u['median']:6.1%} ({u['min']:.1%}-{u['max']:.1%})")
    r, f, q, pts = out["ratio"], out["flops_ratio"], out["mfu_ratio"], out["mfu_points"]
    print(f"speed ratio {r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f}) = FLOPs ratio "
          f"{f:.2f}x x MFU ratio {q['median']:.2f}x ({q['min']:.2f}-{q['max']:.2f}); "
          f"MFU lead {pts['median']:+.1f} points ({pts['min']:+.1f} to {pts['max']:+.1f})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=list(CONFIGS), default="reference")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--reps", type=int, default=5, help="alternating repetitions")
    p.add_argument("--steps", type=int, default=3, help="training steps per measurement")
    p.add_argument("--compile", default="none",
                   choices=["none", "default", "reduce-overhead", "max-autotune-no-cudagraphs"],
                   help="torch.compile both models with this mode (reduce-overhead: CUDA "
                        "graphs); the warm-up steps, off the clock, compile them")
    p.add_argument("--batch", type=int, default=None,
                   help="rows per step instead of the config's (the JSON's shape says which)")
    p.add_argument("--ragged", action="store_true",
                   help="rows of different lengths, padded to the sequence (see the module)")
    p.add_argument("--no-dropout", action="store_true",
                   help="mlmlib without dropout (the course's recipe); HF keeps its 0.1")
    p.add_argument("--recipe", action="store_true",
                   help="mlmlib with bf16 and no dropout against HF's defaults, on real text, "
                        "with the eval loss after the same steps")
    p.add_argument("--train-steps", type=int, default=240, help="--recipe: steps for each")
    p.add_argument("--ours-lr", type=float, default=1e-3,
                   help="--recipe: mlmlib's peak learning rate (default: Hugging Face's side's; "
                        "2e-3, the real-text chapter's, ended further from its final loss)")
    args, argv = parse(p, argv)
    if args.runs > 1:
        results = separate_processes(__file__, argv, args.runs)
        device = torch.device(args.device)
        if args.recipe:
            out = across(results)
            out["ratio_to_target"] = spread([r["ratio_to_target"] for r in results])
            r, ours, theirs = out["ratio"], *(out["implementations"][n] for n in SIDES)
            sooner = out["ratio_to_target"]
            print(f"\nacross {args.runs} separate processes: speed ratio {r['median']:.2f}x "
                  f"({r['min']:.2f}-{r['max']:.2f}); eval loss mlmlib "
                  f"{ours['eval_loss']['median']:.4f} ({ours['eval_loss']['min']:.4f}-"
                  f"{ours['eval_loss']['max']:.4f}), transformers "
                  f"{theirs['eval_loss']['median']:.4f} ({theirs['eval_loss']['min']:.4f}-"
                  f"{theirs['eval_loss']['max']:.4f}); transformers' final eval loss reached "
                  f"{sooner['median']:.2f}x sooner ({sooner['min']:.2f}-{sooner['max']:.2f}; "
                  f"target: at least 3x in every process: "
                  f"{'met' if sooner['min'] >= 3 else 'not met'})")
            name = f"train-recipe-{device.type}"
        else:
            out = across_processes(results)
            report(out)
            name = result_name(args, device)
        if not args.smoke or args.json:
            write(out, name, args.json)
        return 0
    if args.recipe:
        return compare_recipes(args)
    if args.smoke:
        args.config, args.reps, args.steps = "smoke", 2, 1
    device = torch.device(args.device)
    use_bf16 = args.dtype == "bf16"
    if use_bf16 and device.type != "cuda":
        raise SystemExit("--dtype bf16: the Trainer autocasts to bf16 on CUDA only; use "
                         "--device cuda")
    ours, theirs, (v, d, layers, i, t, b) = build(args.config, 0.0 if args.no_dropout else 0.1)
    b = args.batch or b
    data = random_data(v, t, b, ragged=args.ragged)
    recipe = Recipe(steps=10**6, batch_size=b, lr=1e-4, warmup=0)  # a long, flat schedule
    if args.compile != "none":  # both sides compiled alike; the first steps compile
        ours, theirs = (torch.compile(m, mode=None if args.compile == "default" else
                                      args.compile) for m in (ours, theirs))
    sides = trainers({"mlmlib": ours, "transformers": theirs}, data, recipe, device, use_bf16)
    k = args.steps
    chunks = [batches(sides["mlmlib"], k) for _ in range(2 * args.reps + 2)]
    for trainer in sides.values():  # warm-up (compiled: a few batch shapes, so a few chunks)
        for chunk in chunks[:1] if args.compile == "none" else chunks[:2] * 2:
            timed_steps(trainer, chunk)
    rates = {name: [] for name in sides}
    roof_dtype = torch.bfloat16 if use_bf16 else torch.float32
    roofs = []  # the roof is a ceiling: measured between repetitions too, and the best kept
    for r in range(args.reps):  # A B A B ...
        for j, (name, trainer) in enumerate(sides.items()):
            rates[name].append(timed_steps(trainer, chunks[2 * r + j + 2]))
        # a GPU runs thousands of products in 0.05 s: enough for its best rate
        short = args.smoke or device.type == "cuda"
        roofs.append(matmul_roof(device, roof_dtype, 0.05 if short else 0.3))
    roof = max([*roofs, matmul_roof(device, roof_dtype, 0.2 if short else 1.0)])
    real = sum(int(x.attention_mask.sum()) for c in chunks for x in c)
    masked_share = sum(int((x.labels != IGNORE_INDEX).sum()) for c in chunks for x in c) / real
    computed = {name: sum(computed_tokens(trainer.model, x) for c in chunks for x in c) / real
                for name, trainer in sides.items()}  # positions computed per real token
    flops = {"mlmlib": flops_per_token(v, d, layers, i, t, masked_share, score_all=False),
             "transformers": flops_per_token(v, d, layers, i, t, masked_share, score_all=True)}
    result = {
        "benchmark": "train", "config": args.config, "device": str(device),
        "dtype": args.dtype, "mlmlib_dropout": 0.0 if args.no_dropout else 0.1,
        "compile": args.compile,
        "shape": {"vocab": v, "hidden": d, "layers": layers, "intermediate": i,
                  "sequence": t, "batch": b, "masked_share": masked_share,
                  "real_share": real / sum(x.attention_mask.numel() for c in chunks
                                           for x in c)},
        "machine": machine(device),
        "roof_gflops": roof, "implementations": {},
    }
    print(f"{args.config} config, {device}, {args.dtype}; matmul roof {roof:.0f} GFLOP/s")
    print(f"{'':14s} {'tokens/s (median)':>18s} {'min-max':>17s} {'GFLOP/token':>12s} "
          f"{'MFU':>6s} {'useful MFU':>10s}")
    for name, values in rates.items():  # tokens/s counts real tokens only
        median = statistics.median(values)
        useful = median * flops[name] / 1e9 / roof  # the FLOPs on real tokens
        mfu = useful * computed[name]  # the FLOPs done, padding included
        result["implementations"][name] = {"tokens_per_s": values, "median": median,
                                           "flops_per_token": flops[name], "mfu": mfu,
                                           "useful_mfu": useful,
                                           "computed_per_real_token": computed[name]}
        print(f"{name:14s} {median:18,.0f} {min(values):8,.0f}-{max(values):<8,.0f} "
              f"{flops[name] / 1e9:12.4f} {mfu:6.1%} {useful:10.1%}")
    ratio = result["implementations"]["mlmlib"]["median"] / \
        result["implementations"]["transformers"]["median"]
    result["ratio"] = ratio
    print(f"ratio mlmlib / transformers: {ratio:.2f}x")
    if not args.smoke or args.json:
        write(result, result_name(args, device), args.json)
    return 0


def result_name(args, device: torch.device) -> str:
    """The JSON's name under bench/results/."""
    return (f"train-{args.config}-{device.type}-{args.dtype}"
            f"{'-ragged' if args.ragged else ''}{'-nodropout' if args.no_dropout else ''}"
            f"{'' if args.compile == 'none' else '-compiled'}")


if __name__ == "__main__":
    raise SystemExit(main())
