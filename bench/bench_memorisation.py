"""Memorisation made visible: training loss below the exact floor on masks a model has seen.

No model beats the toy world's exact floor (``world.bayes_loss``) on average over fresh
sentences and fresh masks. On a small training set seen many times, it can: the floor is the
loss of a reader who knows the world's probabilities but not the training sentences, and a
model that has learnt the sentences (or the masked inputs and their answers) knows more.

The course's toy recipe (:func:`mlmlib.train.toy_recipe`: one encoder block, hidden 64, batch
128, lr 4e-3, 100 warm-up steps then a linear decay, 100% ``[MASK]`` at the recipe's rate 0.3,
Bernoulli choice of the blanks) is trained on 2,000 sentences, the training rows of
``toy_data(ToyWorld(), 2000, 1000, seed=0)``, for 2,000 steps (``--steps``: 128 passes over
the set; in the timed one-seed run, the static run was below its floor on its own masks by
step 400, pass 26, and the other two by step 1,200), three ways:

* ``static`` - one fixed mask per sentence, drawn once: every pass shows the same blanks;
* ``duplicated`` - BERT's original data: ``DUPLICATES`` (10) fixed masks per sentence, and a
  sentence's k-th visit uses its mask ``k mod 10`` (cycled, as BERT's 10 copies over 40
  epochs are each seen 4 times);
* ``dynamic`` - a fresh mask at every visit, as RoBERTa (and :class:`mlmlib.train.Trainer`)
  does.

The three share everything else: each pass visits every sentence once, in an order drawn from
the training seed (the same order for the three regimes of a seed), and every mask is drawn by
the same rule (the recipe's: 100% ``[MASK]``, each word a blank with probability 0.3). The
fixed masks come from a generator seeded by ``MASK_SEED + seed``: the first set is
``static``'s, the ten are ``duplicated``'s (the first shared with ``static``), and ``dynamic``
draws its masks afterwards from the same generator. The loop is the library's: a
:class:`~mlmlib.train.Trainer` builds the model, AdamW and the schedule, and
:meth:`~mlmlib.train.Trainer.train_step` takes each step on a batch masked here.

Every ``--every`` steps (and at step 0) each model is scored (mean ``-log P`` over the blanks,
nats, no update) on three masked sets, each with its exact floor, ``world.bayes_loss`` of
exactly those sentences and blanks:

* ``seen`` - the training sentences under the run's training masks (``static``: its one set;
  ``duplicated``: its ten, 10 x 2,000 rows). ``dynamic`` is scored on ``static``'s set
  of the same seed: masks it did not train on as a set, although with a few words a sentence
  and hundreds of visits it will have drawn many of them;
* ``fresh`` - the training sentences under masks drawn from ``FRESH_SEED``, the same for
  every run: blanks a fixed-mask run never trained on, in sentences it has seen;
* ``eval`` - the 1,000 evaluation sentences of the same ``toy_data`` call (never trained
  on), masked from ``EVAL_SEED``.

``train_loss`` is the mean of the training steps' losses since the previous scoring. A run
below its floor on ``seen`` has memorised; below it on ``fresh`` too, it has memorised the
sentences rather than the masked inputs; ``eval`` minus its floor is how far it generalises.

Compute budget: 3 regimes x 5 seeds = 15 runs of 2,000 steps of the toy recipe, with their
scorings and the floors: about 6 minutes on 2 quiet cores (timed: one seed, ``--seeds 1``,
took 71 s, 47 s of it training; the full run took 417 s beside other work; the JSON records
``wall_s`` and each run's ``train_s``).

    python -m bench.bench_memorisation            # the full run, 5 seeds
    python -m bench.bench_memorisation --seeds 7  # more seeds; --steps N, --every N
    python -m bench.bench_memorisation --smoke    # seconds: tiny settings, writes to a temp dir

It prints a table and writes JSON (``--json``, default bench/results/memorisation.json; with
``--smoke``, a temporary file). ``summary`` is, for each number of the per-seed records,
``{"mean", "std", "min", "max"}`` over the seeds (``std`` the sample standard deviation, 0
with one seed); the lists follow ``steps``::

    {"benchmark": "memorisation", "smoke": bool, "machine": {...}, "wall_s": float,
     "settings": {"seeds": [int], "n_train": int, "n_eval": int, "data_seed": 0,
                  "duplicates": int, "mask_seed": int, "fresh_seed": int, "eval_seed": int,
                  "every": int, "epochs": float,   # passes over the training set
                  "model": {BertConfig fields}, "train": {Recipe fields but seed}},
     "steps": [int],                               # where each run was scored
     "floors": {"fresh": float, "eval": float},    # the same for every run
     "slots": {"fresh": int, "eval": int},         # blanks in each set
     "regimes": {"static" | "duplicated" | "dynamic": {
        "runs": [{"seed": int, "train_s": float, "floor_seen": float, "slots_seen": int,
                  "train_loss": [float | null],    # null at step 0
                  "seen": [float], "fresh": [float], "eval": [float],
                  "final": {"seen_gap": float, "fresh_gap": float, "eval_gap": float,
                            "seen_se": float, "fresh_se": float, "eval_se": float}}],
        "summary": {"seen_gap": summary, "fresh_gap": ..., "eval_gap": ...}}}}

A ``*_gap`` is the last scoring's loss minus that set's floor, in nats: negative below it.
Its ``*_se`` is its standard error over that set's sentences (:func:`bench.bench_lab.gap_and_se`:
each sentence's blanks kept together, and the ten-mask set's ten copies of a sentence counted
as one): the noise of the one masked set, which the seeds do not show (every seed is scored on
the same ``fresh`` and ``eval`` sets).
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict

import torch

from bench._results import machine, mask_only_recipe, run_options, write
from bench.bench_lab import gap_and_se, score, summary
from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import Batch, mask_batch
from mlmlib.toyworld import ToyWorld
from mlmlib.train import RunOptions, Trainer, build_model, toy_data

REGIMES = ("static", "duplicated", "dynamic")
DUPLICATES = 10  # BERT's copies of its data, each masked once
MASK_SEED = 100  # + the training seed: the fixed masks, then dynamic's
FRESH_SEED = 1  # the masks of the training sentences' fresh set
EVAL_SEED = 2  # the masks of the evaluation sentences
FULL = {"seeds": 5, "steps": 2000, "every": 100, "n_train": 2000, "n_eval": 1000}
SMOKE = {"seeds": 2, "steps": 8, "every": 4, "n_train": 64, "n_eval": 40, "batch_size": 16,
         "warmup": 2}


class Small:
    """The small training set and the evaluation sentences, the masking rule and the sets
    every run is scored on, with their floors."""

    def __init__(self, size: dict):
        self.world = ToyWorld()
        self.data, self.vocab, self.eval_sentences, _ = toy_data(
            self.world, size["n_train"], size["n_eval"], seed=0)
        self.rows = self.data.rows
        self.sentences = [[self.vocab[i] for i in row[1:n - 1]]  # [CLS] words [SEP] [PAD]...
                          for row, n in zip(self.rows.input_ids.tolist(),
                                            self.rows.attention_mask.sum(1).tolist(),
                                            strict=True)]
        self.config, self.recipe = mask_only_recipe(self.data, self.world, size, seed=0)
        eval_rows = self.data.eval._replace(  # the evaluation rows, unmasked
            input_ids=torch.where(self.data.eval.labels != IGNORE_INDEX, self.data.eval.labels,
                                  self.data.eval.input_ids), labels=None)
        self.fresh = self.mask(self.rows, torch.Generator().manual_seed(FRESH_SEED))
        self.eval = self.mask(eval_rows, torch.Generator().manual_seed(EVAL_SEED))
        self.truths = {"fresh": self.truth(self.sentences, self.fresh),
                       "eval": self.truth(self.eval_sentences, self.eval)}
        self.floors = {name: -truth.mean().item() for name, truth in self.truths.items()}

    def mask(self, rows: Batch, rng: torch.Generator) -> Batch:
        """``rows`` masked by the recipe's rule, with 100% ``[MASK]`` at the blanks."""
        r = self.recipe
        return mask_batch(rows, self.data.vocab_size, self.data.mask_token_id,
                          self.data.special_ids, rng, rate=r.rate, rule=r.rule,
                          mask_prob=r.mask_prob, random_prob=r.random_prob)

    def truth(self, sentences: list[list[str]], masked: Batch) -> torch.Tensor:
        """Each blank's exact log probability of its true word, for these sentences under
        these blanks, in row-major order (-1: the [CLS] in front); minus its mean is the
        set's exact floor."""
        blanks = [((row != IGNORE_INDEX).nonzero().squeeze(1) - 1).tolist()
                  for row in masked.labels]
        return -self.world.bayes_loss(sentences, blanks, reduction="none")


def stack(batches: list[Batch]) -> Batch:
    return Batch(*(torch.cat(parts) if parts[0] is not None else None
                   for parts in zip(*batches, strict=True)))


def visits(n: int, batch_size: int, order: torch.Generator):
    """Batches of sentence indices: pass after pass, each a fresh permutation of all ``n``."""
    pending = torch.empty(0, dtype=torch.long)
    while True:
        while len(pending) < batch_size:
            pending = torch.cat([pending, torch.randperm(n, generator=order)])
        yield pending[:batch_size]
        pending = pending[batch_size:]


def run(small: Small, size: dict, regime: str, seed: int, fixed: list[Batch],
        after_fixed: torch.Tensor) -> dict:
    """One training run: its curves on the three sets, and its time."""
    config, rec = mask_only_recipe(small.data, small.world, size, seed)
    trainer = Trainer(build_model(config, seed=seed), small.data, rec,
                      RunOptions(eval_every=size["steps"], quiet=True))
    seen = stack(fixed) if regime == "duplicated" else fixed[0]
    n = len(small.rows.input_ids)
    ids = torch.stack([b.input_ids for b in fixed])  # (copies, n, T)
    labels = torch.stack([b.labels for b in fixed])
    count = torch.zeros(n, dtype=torch.long)  # each sentence's visits so far
    masking = torch.Generator()
    masking.set_state(after_fixed)  # dynamic draws after the fixed sets, from their generator
    batches = visits(n, rec.batch_size, torch.Generator().manual_seed(seed))
    out = {"train_loss": [], "seen": [], "fresh": [], "eval": []}
    pending: list[float] = []
    clock = 0.0

    def scoring():
        out["train_loss"].append(sum(pending) / len(pending) if pending else None)
        pending.clear()
        for name, batch in (("seen", seen), ("fresh", small.fresh), ("eval", small.eval)):
            out[name].append(score(trainer.model, batch)["loss"])
        trainer.model.train()

    scoring()
    for step in range(1, size["steps"] + 1):
        start = time.perf_counter()
        index = next(batches)
        rows = Batch(*(t[index] if t is not None else None for t in small.rows))
        if regime == "dynamic":
            batch = small.mask(rows, masking)
        else:
            copy = torch.zeros(len(index), dtype=torch.long)
            if regime == "duplicated":
                for j, i in enumerate(index.tolist()):  # one at a time: a batch that spans
                    copy[j] = count[i] % DUPLICATES  # two passes can hold a sentence twice
                    count[i] += 1
            batch = rows._replace(input_ids=ids[copy, index], labels=labels[copy, index])
        pending.append(trainer.train_step(batch))
        clock += time.perf_counter() - start
        if step % size["every"] == 0 or step == size["steps"]:
            scoring()
    return {"train_s": clock, "model": trainer.model, **out}


def print_table(result: dict) -> None:
    s = result["settings"]
    f = result["floors"]
    print(f"\nmemorisation: {s['n_train']} sentences, {result['steps'][-1]} steps "
          f"({s['epochs']:.0f} passes), {len(s['seeds'])} seeds; floors: fresh masks "
          f"{f['fresh']:.4f}, eval {f['eval']:.4f}")
    print("last scoring, loss minus its floor (nats), mean ± sd over seeds, and per seed")
    for regime, entry in result["regimes"].items():
        for key in ("seen_gap", "fresh_gap", "eval_gap"):
            u = entry["summary"][key]
            per_seed = " ".join(f"{r['final'][key]:+.4f}" for r in entry["runs"])
            ses = " ".join(f"{r['final'][key[:-3] + 'se']:.4f}" for r in entry["runs"])
            print(f"{regime:>10} {key:>9} {u['mean']:+.4f} ± {u['std']:.4f}  {per_seed}  "
                  f"(standard errors {ses})")
    print(f"\nwall time {result['wall_s']:.0f} s")


def main(argv=None) -> int:
    args, size, seeds = run_options(__doc__, FULL, SMOKE, argv, every=True)
    start = time.perf_counter()
    small = Small(size)
    train = asdict(small.recipe)
    del train["seed"]
    result = {"benchmark": "memorisation", "smoke": args.smoke, "machine": machine(),
              "settings": {"seeds": seeds, "n_train": size["n_train"], "n_eval": size["n_eval"],
                           "data_seed": 0, "duplicates": DUPLICATES, "mask_seed": MASK_SEED,
                           "fresh_seed": FRESH_SEED, "eval_seed": EVAL_SEED,
                           "every": size["every"],
                           "epochs": size["steps"] * small.recipe.batch_size / size["n_train"],
                           "model": asdict(small.config), "train": train},
              "steps": [0, *(s for s in range(1, size["steps"] + 1)
                             if s % size["every"] == 0 or s == size["steps"])],
              "floors": small.floors,
              "slots": {name: int((b.labels != IGNORE_INDEX).sum())
                        for name, b in (("fresh", small.fresh), ("eval", small.eval))},
              "regimes": {regime: {"runs": []} for regime in REGIMES}}
    for seed in seeds:
        masking = torch.Generator().manual_seed(MASK_SEED + seed)
        fixed = [small.mask(small.rows, masking) for _ in range(DUPLICATES)]
        after_fixed = masking.get_state()
        truths = {"static": small.truth(small.sentences, fixed[0]),
                  "duplicated": small.truth(small.sentences * DUPLICATES, stack(fixed))}
        truths["dynamic"] = truths["static"]  # scored on static's set
        floors = {regime: -truth.mean().item() for regime, truth in truths.items()}
        for regime in REGIMES:
            out = run(small, size, regime, seed, fixed, after_fixed)
            seen = stack(fixed) if regime == "duplicated" else fixed[0]
            out["final"] = {"seen_gap": out["seen"][-1] - floors[regime],
                            "fresh_gap": out["fresh"][-1] - small.floors["fresh"],
                            "eval_gap": out["eval"][-1] - small.floors["eval"]}
            model = out.pop("model")
            n = len(small.rows.input_ids)
            copies = torch.arange(len(seen.input_ids)) % n  # the ten masks: one sentence each
            for name, batch, truth, groups in (("seen", seen, truths[regime], copies),
                                               ("fresh", small.fresh, small.truths["fresh"], None),
                                               ("eval", small.eval, small.truths["eval"], None)):
                _, out["final"][f"{name}_se"] = gap_and_se(
                    model, batch, truth, groups, expected=out["final"][f"{name}_gap"])
            result["regimes"][regime]["runs"].append({
                "seed": seed, "train_s": out.pop("train_s"), "floor_seen": floors[regime],
                "slots_seen": int((seen.labels != IGNORE_INDEX).sum()), **out})
            g = out["final"]
            print(f"  {regime} seed {seed}: seen {g['seen_gap']:+.4f}, fresh "
                  f"{g['fresh_gap']:+.4f}, eval {g['eval_gap']:+.4f} (minus each floor)",
                  flush=True)
    for entry in result["regimes"].values():
        entry["summary"] = {key: summary([r["final"][key] for r in entry["runs"]])
                            for key in ("seen_gap", "fresh_gap", "eval_gap")}
    result["wall_s"] = time.perf_counter() - start
    print_table(result)
    write(result, "memorisation", args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
