"""Training throughput: mlmlib's mini BERT against Hugging Face's BertForMaskedLM.

Both models get the same config, the same batches and the same masked positions, and both are
trained by the course's own :class:`mlmlib.train.Trainer` (Hugging Face's model behind
:func:`mlmlib.hf.masked_lm`): each measurement is a few calls of its one training step
(forward, backward, gradient clipping, AdamW and its schedule) on batches made once and handed
to both. A and B alternate in one process after a warm-up, and the table gives the median
with min-max over repetitions.
It also measures this machine's fp32 matrix-multiply roof and each implementation's share
of it (MFU), counting the FLOPs that implementation actually performs.

    python -m bench.bench_train                      # the reference config, CPU, fp32
    python -m bench.bench_train --dtype bf16         # bf16 autocast on both sides
    python -m bench.bench_train --device cuda        # on a GPU
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
from dataclasses import asdict

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
from mlmlib.model import BertConfig
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


def timed_steps(trainer: Trainer, chunk: list[Batch]) -> float:
    """The Trainer's training step on every batch of ``chunk``; tokens per second."""
    _sync(trainer.device)
    start = time.perf_counter()
    for batch in chunk:
        trainer.train_step(batch)
    _sync(trainer.device)
    tokens = sum(int(b.attention_mask.sum()) for b in chunk)
    return tokens / (time.perf_counter() - start)


def random_data(v, t, b, seed=0) -> TrainData:
    """Rows of random words between [CLS] and [SEP] (no padding), and an evaluation batch."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, v, (4 * b, t), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3
    rows = Batch(ids, torch.ones_like(ids), torch.zeros_like(ids))
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
    """The course's recipe (no dropout) on mlmlib against HF at its defaults, both trained by
    the course's Trainer on the same batches; the eval loss each reaches."""
    if args.smoke:
        args.config, args.train_steps, args.steps = "smoke", 4, 1
    ours, theirs, (v, _, _, _, t, b) = build(args.config, dropout=0.0)
    device = torch.device(args.device)
    wordpiece, special, rows, evaluation = docs_data(t, v, args.smoke)
    data = TrainData(rows, evaluation, v, special["[MASK]"], wordpiece.special_ids)
    recipe = Recipe(steps=args.train_steps, batch_size=b, lr=1e-3,
                    warmup=max(1, args.train_steps // 10), seed=0)
    sides = {"mlmlib": Trainer(ours, data, recipe, RunOptions(device=args.device, quiet=True)),
             "transformers": Trainer(theirs, data, recipe,  # Hugging Face's defaults: fp32
                                     RunOptions(device=args.device, bf16=False, quiet=True))}
    start_loss = {n: tr.evaluate()["eval_loss"] for n, tr in sides.items()}
    k = args.steps
    rates = {n: [] for n in sides}
    for c in range(0, args.train_steps, k):  # A B A B in chunks of k steps
        for name, trainer in sides.items():
            chunk = batches(trainer, min(k, args.train_steps - c))  # the same for both sides
            rate = timed_steps(trainer, chunk)
            if c > 0 or args.smoke:  # the first chunk is the warm-up
                rates[name].append(rate)
    bf16 = device.type == "cuda"
    result = {"benchmark": "train-recipe", "config": args.config, "device": str(device),
              "train_steps": args.train_steps, "chunk_steps": k,
              "data": f"CPython docs, WordPiece vocabulary {len(wordpiece)} (model rows {v}), "
                      f"{len(rows.input_ids)} training rows of {t}, "
                      f"{int((evaluation.labels != IGNORE_INDEX).sum())} validation targets",
              "recipe": asdict(recipe), "machine": machine(device), "implementations": {}}
    settings = {"mlmlib": f"{'bf16 autocast' if bf16 else 'fp32'}, dropout 0",
                "transformers": "fp32, dropout 0.1"}
    print(f"{args.config} config, {device}; {args.train_steps} steps each on the same batches")
    print(f"{'':14s} {'settings':36s} {'tokens/s (median)':>18s} {'min-max':>17s} "
          f"{'eval loss':>10s} {'at step 0':>10s}")
    for name, values in rates.items():
        median = statistics.median(values)
        loss = sides[name].evaluate()["eval_loss"]
        result["implementations"][name] = {"settings": settings[name], "tokens_per_s": values,
                                           "median": median, "eval_loss": loss,
                                           "eval_loss_step0": start_loss[name]}
        print(f"{name:14s} {settings[name]:36s} {median:18,.0f} "
              f"{min(values):8,.0f}-{max(values):<8,.0f} {loss:10.4f} {start_loss[name]:10.4f}")
    impl = result["implementations"]
    result["ratio"] = impl["mlmlib"]["median"] / impl["transformers"]["median"]
    print(f"ratio mlmlib recipe / transformers defaults: {result['ratio']:.2f}x; eval loss "
          f"{impl['mlmlib']['eval_loss']:.4f} against {impl['transformers']['eval_loss']:.4f}")
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
    out["mfu_ratio"] = spread([a["mfu"] / b["mfu"] for a, b in zip(ours, theirs, strict=True)])
    out["mfu_points"] = spread([100 * (a["mfu"] - b["mfu"])
                                for a, b in zip(ours, theirs, strict=True)])
    return out


def report(out: dict) -> None:
    """Print the figures across processes."""
    n = out["processes"]
    print(f"\nacross {n} separate processes: median (min-max)")
    for name, impl in out["implementations"].items():
        t, m = impl["median"], impl["mfu"]
        print(f"{name:14s} {t['median']:10,.0f} tokens/s ({t['min']:,.0f}-{t['max']:,.0f})  "
              f"MFU {m['median']:6.1%} ({m['min']:.1%}-{m['max']:.1%})")
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
    p.add_argument("--no-dropout", action="store_true",
                   help="mlmlib without dropout (the course's recipe); HF keeps its 0.1")
    p.add_argument("--recipe", action="store_true",
                   help="mlmlib with bf16 and no dropout against HF's defaults, on real text, "
                        "with the eval loss after the same steps")
    p.add_argument("--train-steps", type=int, default=240, help="--recipe: steps for each")
    args, argv = parse(p, argv)
    if args.runs > 1:
        results = separate_processes(__file__, argv, args.runs)
        device = torch.device(args.device)
        if args.recipe:
            out = across(results)
            r, ours, theirs = out["ratio"], *(out["implementations"][n] for n in SIDES)
            print(f"\nacross {args.runs} separate processes: speed ratio {r['median']:.2f}x "
                  f"({r['min']:.2f}-{r['max']:.2f}); eval loss mlmlib "
                  f"{ours['eval_loss']['median']:.4f} ({ours['eval_loss']['min']:.4f}-"
                  f"{ours['eval_loss']['max']:.4f}), transformers "
                  f"{theirs['eval_loss']['median']:.4f} ({theirs['eval_loss']['min']:.4f}-"
                  f"{theirs['eval_loss']['max']:.4f})")
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
    data = random_data(v, t, b)
    recipe = Recipe(steps=10**6, batch_size=b, lr=1e-4, warmup=0)  # a long, flat schedule
    sides = trainers({"mlmlib": ours, "transformers": theirs}, data, recipe, device, use_bf16)
    k = args.steps
    chunks = [batches(sides["mlmlib"], k) for _ in range(2 * args.reps + 2)]
    for trainer in sides.values():  # warm-up
        timed_steps(trainer, chunks[0])
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
    masked_share = float((chunks[0][0].labels != IGNORE_INDEX).float().mean())
    flops = {"mlmlib": flops_per_token(v, d, layers, i, t, masked_share, score_all=False),
             "transformers": flops_per_token(v, d, layers, i, t, masked_share, score_all=True)}
    result = {
        "benchmark": "train", "config": args.config, "device": str(device),
        "dtype": args.dtype, "mlmlib_dropout": 0.0 if args.no_dropout else 0.1,
        "shape": {"vocab": v, "hidden": d, "layers": layers, "intermediate": i,
                  "sequence": t, "batch": b, "masked_share": masked_share},
        "machine": machine(device),
        "roof_gflops": roof, "implementations": {},
    }
    print(f"{args.config} config, {device}, {args.dtype}; matmul roof {roof:.0f} GFLOP/s")
    print(f"{'':14s} {'tokens/s (median)':>18s} {'min-max':>17s} {'GFLOP/token':>12s} "
          f"{'MFU':>6s}")
    for name, values in rates.items():
        median = statistics.median(values)
        mfu = median * flops[name] / 1e9 / roof
        result["implementations"][name] = {"tokens_per_s": values, "median": median,
                                           "flops_per_token": flops[name], "mfu": mfu}
        print(f"{name:14s} {median:18,.0f} {min(values):8,.0f}-{max(values):<8,.0f} "
              f"{flops[name] / 1e9:12.4f} {mfu:6.1%}")
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
            f"{'-nodropout' if args.no_dropout else ''}")


if __name__ == "__main__":
    raise SystemExit(main())
