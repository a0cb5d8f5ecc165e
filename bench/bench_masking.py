"""Masking speed: mlmlib.masking.mask_tokens against transformers' DataCollatorForLanguageModeling.

End to end from token ids: each side gets the same 32 lists of 128 ids and returns masked
input ids and labels (mlm_probability 0.15, 80/10/10). Measured as batches per second, A and
B alternating, median and min-max over repetitions; the whole run is repeated as ``--runs``
separate processes (3), and the ratio is reported with its spread across them.

    python -m bench.bench_masking            # 3 separate processes; bench/results/masking.json
    python -m bench.bench_masking --smoke    # a second or two: checks the script runs
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from bench._results import across, machine, parse, separate_processes, write
from mlmlib.masking import mask_tokens
from mlmlib.tokenizer import SPECIAL_TOKENS


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--seconds", type=float, default=0.5, help="time per measurement")
    args, argv = parse(p, argv)
    if args.runs > 1:
        out = across(separate_processes(__file__, argv, args.runs))
        r = out["ratio"]
        print(f"\nacross {args.runs} separate processes: ratio {r['median']:.1f}x "
              f"({r['min']:.1f}-{r['max']:.1f})")
        if not args.smoke or args.json:
            write(out, "masking", args.json)
        return 0
    if args.smoke:
        args.reps, args.seconds = 2, 0.05
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling

    vocab = {t: i for i, t in enumerate([*SPECIAL_TOKENS,
                                         *(f"w{k}" for k in range(args.vocab - 5))])}
    tokenizer = BertTokenizerFast(vocab=vocab)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15,
                                               return_tensors="pt")
    g = torch.Generator().manual_seed(0)
    rows = torch.randint(5, args.vocab, (args.batch, args.length), generator=g)
    rows[:, 0], rows[:, -1] = vocab["[CLS]"], vocab["[SEP]"]
    examples = [{"input_ids": r.tolist()} for r in rows]
    special = [vocab[t] for t in SPECIAL_TOKENS]
    torch.manual_seed(0)  # the collator draws from the global generator

    def ours():  # lists of ids -> one tensor (through NumPy, the fast way), then mask
        ids = torch.from_numpy(np.array([e["input_ids"] for e in examples], dtype=np.int64))
        return mask_tokens(ids, vocab_size=args.vocab, mask_token_id=vocab["[MASK]"],
                           special_ids=special, rng=g)

    def theirs():
        return collator(examples)

    def rate(fn):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            fn()
            n += 1
        return n / (time.perf_counter() - start)

    impls = {"mlmlib": ours, "transformers": theirs}
    for fn in impls.values():
        rate(fn)  # warm-up
    rates = {name: [] for name in impls}
    for _ in range(args.reps):
        for name, fn in impls.items():
            rates[name].append(rate(fn))
    result = {"benchmark": "masking", "batch": args.batch, "length": args.length,
              "vocab": args.vocab, "machine": machine(), "implementations": {}}
    print(f"masking {args.batch}x{args.length} batches from token ids")
    print(f"{'':14s} {'batches/s (median)':>19s} {'min-max':>19s}")
    for name, values in rates.items():
        median = statistics.median(values)
        result["implementations"][name] = {"batches_per_s": values, "median": median}
        print(f"{name:14s} {median:19,.0f} {min(values):9,.0f}-{max(values):<9,.0f}")
    result["ratio"] = (result["implementations"]["mlmlib"]["median"]
                       / result["implementations"]["transformers"]["median"])
    print(f"ratio mlmlib / transformers: {result['ratio']:.1f}x")
    if not args.smoke or args.json:
        write(result, "masking", args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
