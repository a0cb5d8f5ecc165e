"""Spans against single words, trained: each kind of model scored on each kind of blank.

SpanBERT hides contiguous spans of geometric length instead of single words. In the toy
world the exact floor of either kind of blank is known (the chapter computes it, for several
rates, before any training); this script trains the course's toy recipe
(:func:`mlmlib.train.toy_recipe`: one encoder block, hidden 64, 1,400 steps, batch 128, lr
4e-3; 100% ``[MASK]`` at the blanks) on ONE data set, ``toy_data(ToyWorld(), 20000, 1000,
seed=0)``, with two kinds of training mask, over ``--seeds`` training seeds (0, 1, ...: the
initial weights, the data order and the masks):

* ``token`` - ``k`` words of each sentence, uniformly at random
  (:func:`mlmlib.masking.choose_positions`, the "bert" rule);
* ``span`` - the same ``k`` words in contiguous spans
  (:func:`mlmlib.masking.span_positions`: lengths geometric with ``p = SPAN_P``, at most
  ``MAX_SPAN``, SpanBERT's 0.2 and 10),

with ``k = bert_count(n, RATE)``: ``max(1, round(RATE * n))`` of a sentence's ``n`` words, the
same number for both kinds (the recipe recorded in the JSON says ``rate`` 0.4 and ``rule``
"bert" for that count; the blanks themselves are drawn here). ``RATE`` is 0.4, not BERT's
0.15: the toy world's sentences have about 8 words, so at 0.15 nearly every sentence gets one
blank, and a span of one word is a token. Each training batch is drawn as the trainer draws
it (rows at random with the seed's generator) and masked here, fresh for every batch (dynamic
masking), and the step is the library's (:meth:`mlmlib.train.Trainer.train_step`).

Every model is scored (mean ``-log P`` over the blanks, nats) on the 1,000 evaluation
sentences under both kinds of test mask at ``RATE``, drawn once from a fixed generator
(``TEST_SEED``), so every run meets the same blanks; each test set has its exact floor,
``world.bayes_loss``, and ``gap`` is ``loss - floor`` (nats), ``se`` its standard error over
the test set's sentences (:func:`bench.bench_lab.sentence_gaps`, each sentence's blanks kept
together): the noise of the one test set, which the seeds do not show. The
curves score both test sets every ``--every`` steps. ``pairs`` compares the two models on each
test sentence by sentence (the same sentences, the same blanks): on each test, the model trained
on the other kind minus the one trained on the test's kind, per seed with its standard error
over sentences, and ``shared_se``, the standard error over sentences of that difference
averaged over the seeds: the noise the one shared test set adds to the mean over seeds.

Compute budget: 2 kinds x 15 seeds = 30 runs of 1,400 steps of the toy recipe, the blanks
drawn one sentence at a time: about 14 minutes on 2 cores (the full run took 812 s beside light
work; one token run trains in about 22 s and one span run in about 30 s, the rest is scoring;
the recipe alone takes about 11 s; the JSON records ``wall_s`` and each run's ``train_s``).

    python -m bench.bench_spans               # the full run, 15 seeds
    python -m bench.bench_spans --seeds 5     # fewer seeds; --steps N, --every N
    python -m bench.bench_spans --smoke       # seconds: tiny settings, writes to a temp dir

It prints a table and writes JSON (``--json``, default bench/results/spans.json; with
``--smoke``, a temporary file). ``summary`` is, for each number of the per-seed records,
``{"mean", "std", "min", "max"}`` over the seeds (``std`` the sample standard deviation, 0
with one seed)::

    {"benchmark": "spans", "smoke": bool, "machine": {...}, "wall_s": float,
     "settings": {"seeds": [int], "rate": float, "span_p": float, "max_span": int,
                  "n_train": int, "n_eval": int, "data_seed": 0, "test_seed": int,
                  "every": int, "model": {BertConfig fields}, "train": {Recipe fields but seed}},
     "uniform_loss": float,                        # log(world words)
     "steps": [int],                               # where the curves are scored
     "test": {"token" | "span": {"floor": float, "slots": int,
                                 "mean_run": float}},  # mean length of a run of blanks
     "models": {"token" | "span": {                # the kind of mask trained on
        "runs": [{"seed": int, "train_s": float,
                  "token": {"loss": float, "gap": float, "se": float,  # test kind
                            "accuracy": float},
                  "span": {...},
                  "curves": {"token": [float], "span": [float]}}],           # eval losses
        "summary": {"token": {"loss": summary, "gap": ..., "se": ..., "accuracy": ...},
                    "span": {...}}}},
     "pairs": {"token" | "span": {                 # the test kind
        "other_minus_own": [float],                # per seed, nats per blank
        "se": [float],                             # per seed, over the test's sentences
        "shared_se": float}}}                      # of the mean over seeds
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict

import torch

from bench._results import machine, mask_only_recipe, run_options, write
from bench.bench_lab import ratio_se, score, sentence_gaps, summary
from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import Batch
from mlmlib.masking import bert_count, choose_positions, mean_run_length, span_positions
from mlmlib.toyworld import ToyWorld
from mlmlib.train import RunOptions, Trainer, build_model, toy_data

KINDS = ("token", "span")
OTHER = {"token": "span", "span": "token"}
RATE = 0.4
SPAN_P, MAX_SPAN = 0.2, 10  # SpanBERT's
TEST_SEED = 1  # the test masks
FULL = {"seeds": 15, "steps": 1400, "every": 100, "n_train": 20000, "n_eval": 1000}
SMOKE = {"seeds": 2, "steps": 6, "every": 3, "n_train": 300, "n_eval": 50, "batch_size": 16,
         "warmup": 2}


def blanks(n: int, kind: str, rng: torch.Generator) -> list[int]:
    """The word positions hidden in an ``n``-word sentence: ``bert_count(n, RATE)`` of them."""
    if kind == "token":
        return choose_positions(n, RATE, rule="bert", rng=rng).tolist()
    return span_positions(n, bert_count(n, RATE), rng=rng, p=SPAN_P,
                          max_span=MAX_SPAN).tolist()


def mask_rows(rows: Batch, kind: str, mask_token_id: int, rng: torch.Generator):
    """``rows`` with ``kind`` blanks, all ``[MASK]``, and the blanks' word positions."""
    ids = rows.input_ids.clone()
    labels = torch.full_like(ids, IGNORE_INDEX)
    where = []
    for r, n in enumerate((rows.attention_mask.sum(1) - 2).tolist()):  # [CLS], [SEP] out
        hidden = blanks(n, kind, rng)
        cols = torch.tensor(hidden, dtype=torch.long) + 1  # +1: the [CLS] in front
        labels[r, cols] = ids[r, cols]
        ids[r, cols] = mask_token_id
        where.append(hidden)
    return rows._replace(input_ids=ids, labels=labels), where


def pairs(sums: dict, tests: dict) -> dict:
    """On each test, the model trained on the other kind minus the one trained on the test's
    kind, seed by seed, paired sentence by sentence: each seed's mean difference (nats per
    blank) and its standard error over the test's sentences; and ``shared_se``, the standard
    error over sentences of the difference averaged over the seeds, the noise that the one
    test set every run shares adds to the mean over seeds (the seeds' spread does not hold
    it). ``sums`` holds each sentence's summed gap (loss minus floor): both models share each
    sentence's floor, so the difference of gaps is the difference of losses."""
    out = {}
    for test in KINDS:
        counts = (tests[test][0].labels != IGNORE_INDEX).sum(1)
        diffs = [other[test] - own[test]  # (sentences,) one seed's paired differences
                 for own, other in zip(sums[test], sums[OTHER[test]], strict=True)]
        out[test] = {"other_minus_own": [(d.sum() / counts.sum()).item() for d in diffs],
                     "se": [ratio_se(d, counts) for d in diffs],
                     "shared_se": ratio_se(torch.stack(diffs).mean(0), counts)}
    return out


def run(data, world: ToyWorld, size: dict, kind: str, seed: int, tests: dict):
    """One model trained on ``kind`` blanks: its scores on both test sets and its curves, and
    each test sentence's summed gap (loss minus floor), by test kind."""
    config, rec = mask_only_recipe(data, world, size, seed, rate=RATE, rule="bert")
    trainer = Trainer(build_model(config, seed=seed), data, rec,
                      RunOptions(eval_every=size["steps"], quiet=True))
    g = torch.Generator().manual_seed(seed)  # the rows and the blanks, as the trainer's
    n = len(data.rows.input_ids)
    curves = {k: [] for k in KINDS}
    clock = 0.0

    def scoring():
        for k, (batch, _, _) in tests.items():
            curves[k].append(score(trainer.model, batch)["loss"])
        trainer.model.train()

    scoring()
    for step in range(1, size["steps"] + 1):
        start = time.perf_counter()
        index = torch.randint(n, (rec.batch_size,), generator=g)
        rows = Batch(*(t[index] if t is not None else None for t in data.rows))
        trainer.train_step(mask_rows(rows, kind, data.mask_token_id, g)[0])
        clock += time.perf_counter() - start
        if step % size["every"] == 0 or step == size["steps"]:
            scoring()
    out, sums = {"seed": seed, "train_s": clock}, {}
    for k, (batch, _, truth) in tests.items():
        s = score(trainer.model, batch)
        gap, sums[k], counts = sentence_gaps(trainer.model, batch, truth,
                                             expected=s["loss"] + truth.mean().item())
        out[k] = {"loss": s["loss"], "gap": gap, "se": ratio_se(sums[k], counts),
                  "accuracy": s["accuracy"]}
    out["curves"] = curves
    return out, sums


def print_table(result: dict) -> None:
    s = result["settings"]
    t = result["test"]
    print(f"\nspans: rate {s['rate']}, {len(s['seeds'])} seeds, {result['steps'][-1]} steps; "
          "exact floors: " + ", ".join(f"{k} {t[k]['floor']:.4f} (mean run {t[k]['mean_run']:.2f})"
                                       for k in KINDS))
    print("loss minus the test set's floor (nats), mean ± sd over seeds, and per seed")
    print(f"{'trained on':>10} {'test':>6} {'gap':>17}  per seed")
    for trained, entry in result["models"].items():
        for test in KINDS:
            u = entry["summary"][test]["gap"]
            per_seed = " ".join(f"{r[test]['gap']:+.4f}" for r in entry["runs"])
            print(f"{trained:>10} {test:>6} {u['mean']:+.4f} ± {u['std']:.4f}  {per_seed}")
    for test, p in result["pairs"].items():
        d = p["other_minus_own"]
        per_seed = " ".join(f"{v:+.4f} ({e:.4f})" for v, e in zip(d, p["se"], strict=True))
        print(f"on the {test} test, trained on {OTHER[test]} minus trained on {test}: mean "
              f"{sum(d) / len(d):+.4f}, the shared test set's standard error "
              f"{p['shared_se']:.4f}; per seed {per_seed}")
    print(f"\nwall time {result['wall_s']:.0f} s")


def main(argv=None) -> int:
    args, size, seeds = run_options(__doc__, FULL, SMOKE, argv, every=True)
    start = time.perf_counter()
    world = ToyWorld()
    data, _, sentences, _ = toy_data(world, size["n_train"], size["n_eval"], seed=0)
    ev = data.eval
    rows = ev._replace(input_ids=torch.where(ev.labels != IGNORE_INDEX, ev.labels,
                                             ev.input_ids), labels=None)  # unmasked
    tests = {}
    for kind in KINDS:
        batch, where = mask_rows(rows, kind, data.mask_token_id,
                                 torch.Generator().manual_seed(TEST_SEED))
        # each blank's exact log probability of its true word; minus its mean is the floor
        tests[kind] = (batch, where, -world.bayes_loss(sentences, where, reduction="none"))
    config, rec = mask_only_recipe(data, world, size, 0, rate=RATE, rule="bert")
    train = asdict(rec)
    del train["seed"]
    result = {"benchmark": "spans", "smoke": args.smoke, "machine": machine(),
              "settings": {"seeds": seeds, "rate": RATE, "span_p": SPAN_P, "max_span": MAX_SPAN,
                           "n_train": size["n_train"], "n_eval": size["n_eval"], "data_seed": 0,
                           "test_seed": TEST_SEED, "every": size["every"],
                           "model": asdict(config), "train": train},
              "uniform_loss": math.log(world.vocab_size),
              "steps": [0, *(s for s in range(1, size["steps"] + 1)
                             if s % size["every"] == 0 or s == size["steps"])],
              "test": {k: {"floor": -truth.mean().item(), "slots": sum(map(len, where)),
                           "mean_run": mean_run_length(where)}
                       for k, (_, where, truth) in tests.items()},
              "models": {}}
    sums = {}  # trained kind -> one {test kind: (sentences,) summed gaps} per seed
    for kind in KINDS:
        runs, sums[kind] = [], []
        for seed in seeds:
            out, per_sentence = run(data, world, size, kind, seed, tests)
            runs.append(out)
            sums[kind].append(per_sentence)
            print(f"  trained on {kind}, seed {seed}: {runs[-1]['train_s']:.0f} s, gap "
                  + ", ".join(f"{k} {runs[-1][k]['gap']:+.4f}" for k in KINDS), flush=True)
        result["models"][kind] = {
            "runs": runs,
            "summary": {k: {key: summary([r[k][key] for r in runs])
                            for key in ("loss", "gap", "se", "accuracy")} for k in KINDS}}
    result["pairs"] = pairs(sums, tests)
    result["wall_s"] = time.perf_counter() - start
    print_table(result)
    write(result, "spans", args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
