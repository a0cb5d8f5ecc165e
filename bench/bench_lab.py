"""The exact lab, trained: mask rate, 80/10/10 against 100% [MASK], calibration against truth.

Every model is the training chapter's mini BERT (2 layers, hidden 128, no dropout) trained on
ONE toy-world data set, ``toy_data(world, 20000, 1000, seed=0)``; only the training seed (the
initial weights, the data order and the masks) changes between runs, so every run is scored
against the same evaluation sentences and the same exact floors. Each experiment runs over
``--seeds`` seeds (0, 1, ...) and records every seed's numbers, and their mean, standard
deviation, min and max.

1. **Mask rate.** One model per rate in ``RATES`` (80/10/10 within M, Bernoulli choice of M,
   the same steps). Each is scored (a) at 15%: the standard evaluation set of ``toy_data``
   (100% [MASK], the "bert" rule: an exact count of targets, at least one per sentence) and
   (b) at its own rate: the same 1000 sentences masked at that rate under the same protocol
   with a fixed generator (``EVAL_MASK_SEED``), so the masks do not depend on the training
   seed (at 0.15 the own-rate set *is* the standard set). Each set has its exact floor,
   ``world.bayes_loss``; the gap is ``loss / floor - 1``.
2. **80/10/10 against 100% [MASK]** at rate 0.15: the 80/10/10 models are experiment 1's
   rate-0.15 models; the 100% [MASK] ones are trained with ``mask_prob=1, random_prob=0``.
   Both are scored on the standard targets three ways: ``mask`` ([MASK] at every target, the
   standard evaluation), ``true`` (the input unchanged, the true word visible at every
   target: what a model meets at fine-tuning; a low loss means it trusts the visible word)
   and ``random`` (a uniformly random ordinary word at every target, from a fixed generator;
   it can be the true word, 1 time in |V|, as in BERT's own 10%).
3. **Calibration and model against truth**, for the same two kinds of model, on the standard
   evaluation (100% [MASK] inputs): at each target slot, the model's distribution over the
   toy world's words ``q`` (softmax over the full vocabulary, then the world's columns: the
   mass left on special tokens is reported as ``special_mass``) against the exact posterior
   ``p``. Recorded: the mean ``KL(p || q)`` in nats, the mean total variation ``1/2 sum |p -
   q|`` over the world's words, and a reliability diagram: every (slot, word) pair binned by
   ``q`` into ``BINS`` equal-width bins on [0, 1] (the last one closed), with each bin's
   mean ``q``, mean ``p`` and count. ``ece`` is ``sum_b count_b / N * |mean q_b - mean p_b|``
   over those pairs (dominated by the many pairs near 0, hence small); ``top1_ece`` is the
   same over one pair per slot, the model's top word (its confidence against the exact
   probability of that word), with its own bins, ``top1_reliability``. For seed 0 the
   ``WORST`` slots with the largest KL are listed.

    python -m bench.bench_lab                  # the full run, 5 seeds (the stored one took 7
                                               # minutes on 2 quiet cores)
    python -m bench.bench_lab --seeds 7        # more seeds; --steps N: steps per training
    python -m bench.bench_lab --smoke          # seconds: tiny settings, writes to a temp dir

It prints a table of every result and writes JSON (``--json``, default bench/results/lab.json;
with ``--smoke``, a temporary file). The JSON (``summary`` below is, for each number of the
per-seed records, ``{"mean", "std", "min", "max"}`` over the seeds; ``std`` is the sample
standard deviation, 0 with one seed)::

    {"benchmark": "lab", "smoke": bool, "machine": {...}, "wall_s": float,  # the whole run
     "settings": {"seeds": [int], "rates": [float], "eval_rate": 0.15,
                  "n_train": int, "n_eval": int, "data_seed": 0, "eval_mask_seed": int,
                  "random_word_seed": int, "bins": int, "worst": int,
                  "world_words": int, "vocab_size": int,      # |V| of the world, of the model
                  "model": {BertConfig fields},
                  "train": {Recipe fields but seed}},  # rate and 80/10/10 vary by run
     "uniform_loss": float,          # log(world_words): the loss of knowing nothing
     "mask_rate": {
        "floor_15": float, "slots_15": int,       # the standard set: exact floor, targets
        "rates": [{"rate": float, "floor_own": float, "slots_own": int,
                   "runs": [{"seed": int, "train_s": float,
                             "loss_15", "gap_15", "accuracy_15",
                             "loss_own", "gap_own", "accuracy_own": float}],
                   "summary": {"loss_15": summary, "gap_15": ..., "accuracy_own": ...}}]},
     "protocol": {
        "floor_mask": float,                      # = mask_rate.floor_15
        "models": {"80/10/10" | "100% [MASK]": {
            "runs": [{"seed": int, "mask": {"loss", "accuracy"}, "true": {...},
                      "random": {...}}],
            "summary": {"mask": {"loss": summary, "accuracy": summary}, "true": ..., ...}}}},
     "calibration": {
        "slots": int, "words": int,               # target slots, world words: pairs = product
        "bin_edges": [float],                     # BINS + 1 edges
        "models": {"80/10/10" | "100% [MASK]": {
            "runs": [{"seed": int, "kl": float, "tv": float, "ece": float, "top1_ece": float,
                      "special_mass": float,
                      "reliability": {"mean_model": [float], "mean_exact": [float],
                                      "count": [int]},        # one entry per bin
                      "top1_reliability": {...}}],  # the same, the top word of each slot
            "summary": {"kl": summary, "tv": ..., "ece": ..., "top1_ece": ...,
                        "special_mass": ...},
            "worst": [{"sentence": "the ___ sat on [MASK] mat .", "kl": float,
                       "truth": str,
                       "model_top3": [[word, prob]], "exact_top3": [[word, prob]]}]}}}}

A bin with no pair has mean_model and mean_exact ``null``. In ``worst``, ``___`` is the slot
and ``[MASK]`` marks the sentence's other targets (hidden from both the model and the truth).
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import asdict

import torch
import torch.nn.functional as F

from bench._results import machine, run_options, write
from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import Batch, pack_rows
from mlmlib.model import BertConfig
from mlmlib.tokenizer import SPECIAL_TOKENS
from mlmlib.toyworld import ToyWorld, compare_with_exact
from mlmlib.train import Recipe, RunOptions, Trainer, build_model, eval_batch, toy_data

RATES = [0.05, 0.1, 0.15, 0.3, 0.5, 0.8]
EVAL_RATE = 0.15  # the standard evaluation; experiments 2 and 3 train at this rate
EVAL_MASK_SEED = 1  # the masks of the own-rate evaluation sets
RANDOM_WORD_SEED = 2  # the random words of experiment 2's "random" inputs
BINS = 10
WORST = 5
KINDS = {"80/10/10": {}, "100% [MASK]": {"mask_prob": 1.0, "random_prob": 0.0}}
FULL = {"n_train": 20000, "n_eval": 1000, "steps": 400, "batch_size": 128, "warmup": 100,
        "hidden": 128, "layers": 2, "heads": 4, "rates": RATES, "seeds": 5}  # 5: the chapter
# draws conclusions from every seed agreeing, which 5 seeds do by chance 1 time in 32
SMOKE = {"n_train": 400, "n_eval": 60, "steps": 4, "batch_size": 16, "warmup": 2,
         "hidden": 32, "layers": 1, "heads": 2, "rates": [0.05, 0.15, 0.8], "seeds": 2}


# ---------------------------------------------------------------------- data and evaluation


class Lab:
    """The world, the one data set, and the evaluation sets with their exact floors."""

    def __init__(self, n_train: int, n_eval: int):
        self.world = ToyWorld()
        self.data, self.vocab, self.sentences, self.masks = toy_data(
            self.world, n_train, n_eval, seed=0)
        self.offset = len(SPECIAL_TOKENS)  # model id = world id + offset
        self.floor = self.world.bayes_loss(self.sentences, self.masks)

    def eval_set(self, rate: float) -> tuple[Batch, list[list[int]]]:
        """The eval sentences masked at ``rate`` (100% [MASK], "bert" rule), and the masks."""
        if rate == EVAL_RATE:
            return self.data.eval, self.masks
        ids = {t: i for i, t in enumerate(self.vocab)}
        rows = pack_rows([[ids[w] for w in s] for s in self.sentences],
                         self.data.eval.input_ids.shape[1], {t: ids[t] for t in SPECIAL_TOKENS})
        ev = eval_batch(rows, len(self.vocab), self.data.mask_token_id, self.data.special_ids,
                        torch.Generator().manual_seed(EVAL_MASK_SEED), rate)
        masks = [((row != IGNORE_INDEX).nonzero().squeeze(1) - 1).tolist()  # -1: the [CLS]
                 for row in ev.labels]
        return ev, masks

    def posterior(self) -> torch.Tensor:
        """The exact ``P(word | visible)`` at every standard target, in the labels' order."""
        return torch.cat([self.world.posterior(s, m)
                          for s, m in zip(self.sentences, self.masks, strict=True) if m])

    def inputs(self, how: str) -> Batch:
        """The standard targets with [MASK] ("mask"), the true word or a random word as input."""
        ev = self.data.eval
        at = ev.labels != IGNORE_INDEX
        if how == "mask":
            return ev
        if how == "true":
            return ev._replace(input_ids=torch.where(at, ev.labels, ev.input_ids))
        g = torch.Generator().manual_seed(RANDOM_WORD_SEED)
        words = torch.randint(self.offset, len(self.vocab), ev.input_ids.shape, generator=g)
        return ev._replace(input_ids=torch.where(at, words, ev.input_ids))


@torch.no_grad()
def target_logits(model, ev: Batch, chunk: int = 256) -> torch.Tensor:
    """The model's scores ``(|M|, V)`` at every target of ``ev``, in row-major order."""
    model.eval()
    parts = [Batch(*(t[k:k + chunk] if t is not None else None for t in ev))
             for k in range(0, len(ev.input_ids), chunk)]
    return torch.cat([model(b.input_ids, attention_mask=b.attention_mask,
                            labels=b.labels).logits.float() for b in parts])


def score(model, ev: Batch) -> dict:
    """Mean loss over the targets (nats) and the share whose top word is the truth."""
    logits = target_logits(model, ev)
    truth = ev.labels[ev.labels != IGNORE_INDEX]
    return {"loss": F.cross_entropy(logits, truth).item(),
            "accuracy": (logits.argmax(-1) == truth).double().mean().item()}


def gap_and_se(model, ev: Batch, exact_truth: torch.Tensor, groups: torch.Tensor | None = None,
               expected: float | None = None) -> tuple[float, float]:
    """The model's mean loss minus the exact floor over the targets of ``ev``, and that
    difference's standard error over sentences, each sentence's targets kept together (a ratio
    estimate: :func:`sentence_gaps`, then :func:`ratio_se`)."""
    mean, sums, counts = sentence_gaps(model, ev, exact_truth, groups, expected)
    return mean, ratio_se(sums, counts)


def sentence_gaps(model, ev: Batch, exact_truth: torch.Tensor,
                  groups: torch.Tensor | None = None, expected: float | None = None):
    """The model's mean loss minus the exact floor over the targets of ``ev``, and each
    sentence's summed gap and number of targets (float64 and long tensors, by sentence id):
    what a standard error over sentences needs. ``exact_truth`` is each target's exact log
    probability of its true word, in row-major order
    (``-world.bayes_loss(sentences, blanks, reduction="none")``).

    The blanks of one sentence are not independent, so they are summed by sentence: each
    row's targets stay together. ``groups`` gives each row of ``ev`` a sentence
    id, for sets whose rows repeat a sentence (several masks of it); by default each row is
    its own sentence. ``expected`` is the loss minus the floor the caller measured its own way
    (in float32): a mean more than 1e-3 away from it means the targets and their exact log
    probabilities are misaligned, a ``RuntimeError``."""
    targets = ev.labels != IGNORE_INDEX
    truth = ev.labels[targets]
    if len(truth) != len(exact_truth):
        raise ValueError(f"{len(truth)} targets but {len(exact_truth)} exact log probabilities")
    rows = targets.nonzero()[:, 0]  # each target's row, in row-major order
    sentence = rows if groups is None else groups[rows]
    logits = target_logits(model, ev).double()
    per_target = exact_truth - logits.log_softmax(-1)[torch.arange(len(truth)), truth]
    mean = per_target.mean()
    if expected is not None and abs(mean.item() - expected) > 1e-3:  # float32 against float64
        raise RuntimeError(f"the blanks' gaps do not add up to the loss minus the floor "
                           f"({mean.item():.4f} against {expected:.4f}): the targets and their "
                           "exact log probabilities are misaligned")
    _, sentence = torch.unique(sentence, return_inverse=True)  # 0, 1, ... per sentence
    n = int(sentence.max()) + 1
    sums = torch.zeros(n, dtype=torch.float64).index_add_(0, sentence, per_target)
    return mean.item(), sums, torch.bincount(sentence, minlength=n)


def ratio_se(sums: torch.Tensor, counts: torch.Tensor) -> float:
    """The standard error over sentences of ``sums.sum() / counts.sum()``, a mean over targets
    whose sentence ``j`` holds ``counts[j]`` targets adding up to ``sums[j]``: a ratio
    estimate, the spread of each sentence's sum around the mean times its count."""
    n = len(sums)
    if n < 2:
        raise ValueError("a standard error over sentences needs targets in two sentences")
    counts = counts.double()
    mean = sums.sum() / counts.sum()
    spread = ((sums - mean * counts) ** 2).sum() / (n * (n - 1))
    return (spread.sqrt() / counts.mean()).item()


# ---------------------------------------------------------------------- training


def model_config(lab: Lab, size: dict) -> BertConfig:
    return BertConfig(vocab_size=len(lab.vocab), hidden_size=size["hidden"],
                      num_layers=size["layers"], num_heads=size["heads"],
                      intermediate_size=4 * size["hidden"],
                      max_position=lab.data.rows.input_ids.shape[1], dropout=0.0,
                      attention_dropout=0.0)


def recipe(size: dict, seed: int, rate: float = EVAL_RATE, kind: str = "80/10/10") -> Recipe:
    return Recipe(steps=size["steps"], batch_size=size["batch_size"], lr=2e-3,
                  warmup=size["warmup"], rate=rate, seed=seed, **KINDS[kind])


def train(lab: Lab, size: dict, seed: int, rate: float = EVAL_RATE, kind: str = "80/10/10"):
    """A trained model and the seconds it took."""
    start = time.perf_counter()
    trainer = Trainer(build_model(model_config(lab, size), seed=seed), lab.data,
                      recipe(size, seed, rate, kind),
                      RunOptions(eval_every=size["steps"], quiet=True))
    trainer.fit()
    return trainer.model, time.perf_counter() - start


# ---------------------------------------------------------------------- calibration


def bins(q: torch.Tensor, p: torch.Tensor) -> dict:
    """Reliability diagram: pairs binned by model probability ``q``; each bin's means, count."""
    index = (q * BINS).long().clamp(max=BINS - 1)
    count = torch.bincount(index, minlength=BINS)
    sum_q = torch.bincount(index, weights=q, minlength=BINS)
    sum_p = torch.bincount(index, weights=p, minlength=BINS)
    count, sum_q, sum_p = count.tolist(), sum_q.tolist(), sum_p.tolist()
    return {"mean_model": [s / n if n else None for s, n in zip(sum_q, count, strict=True)],
            "mean_exact": [s / n if n else None for s, n in zip(sum_p, count, strict=True)],
            "count": count,
            "ece": sum(abs(a - b) for a, b in zip(sum_q, sum_p, strict=True)) / len(q)}


def calibration(logits: torch.Tensor, exact: torch.Tensor, offset: int):
    """Model against the exact posterior, per slot; returns the record and each slot's KL."""
    full = logits.double().softmax(-1)
    q = full[:, offset:]  # (|M|, world words): the columns of the world's words
    kl = compare_with_exact(exact, q)["kl"]  # (|M|,)
    reliability = bins(q.flatten(), exact.flatten())
    top = q.argmax(-1, keepdim=True)
    top1 = bins(q.gather(1, top).squeeze(1), exact.gather(1, top).squeeze(1))  # one pair a slot
    record = {"kl": kl.mean().item(), "tv": 0.5 * (exact - q).abs().sum(-1).mean().item(),
              "ece": reliability.pop("ece"), "top1_ece": top1.pop("ece"),
              "special_mass": full[:, :offset].sum(-1).mean().item(),
              "reliability": reliability, "top1_reliability": top1}
    return record, kl


def worst_slots(lab: Lab, logits: torch.Tensor, exact: torch.Tensor, kl: torch.Tensor) -> list:
    """The ``WORST`` slots with the largest KL: the sentence, the truth, both top 3s."""
    slots = [(i, pos) for i, m in enumerate(lab.masks) for pos in m]
    q = logits.double().softmax(-1)[:, lab.offset:]
    words = lab.world.words

    def top3(dist):
        values, index = dist.topk(3)
        pairs = zip(index.tolist(), values.tolist(), strict=True)
        return [[words[i], round(v, 4)] for i, v in pairs]

    out = []
    for k in kl.topk(min(WORST, len(kl))).indices.tolist():
        i, pos = slots[k]
        shown = ["___" if j == pos else "[MASK]" if j in lab.masks[i] else w
                 for j, w in enumerate(lab.sentences[i])]
        out.append({"sentence": " ".join(shown), "truth": lab.sentences[i][pos],
                    "kl": kl[k].item(), "model_top3": top3(q[k]), "exact_top3": top3(exact[k])})
    return out


# ---------------------------------------------------------------------- summaries


def summary(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values)}


def summarize(runs: list[dict]) -> dict:
    """``summary`` of every number in the runs (nested one level), over the seeds."""
    out = {}
    for key, value in runs[0].items():
        if key in ("seed", "reliability", "top1_reliability"):
            continue
        if isinstance(value, dict):
            out[key] = summarize([r[key] for r in runs])
        else:
            out[key] = summary([r[key] for r in runs])
    return out


# ---------------------------------------------------------------------- the experiments


def mask_rate(lab: Lab, size: dict, rates, seeds, models: dict) -> dict:
    """Experiment 1; keeps the rate-0.15 models in ``models`` for experiments 2 and 3."""
    out = {"floor_15": lab.floor, "slots_15": int((lab.data.eval.labels != IGNORE_INDEX).sum()),
           "rates": []}
    for rate in rates:
        ev, masks = lab.eval_set(rate)
        floor = lab.world.bayes_loss(lab.sentences, masks)
        runs = []
        for seed in seeds:
            model, seconds = train(lab, size, seed, rate)
            at15, own = score(model, lab.data.eval), score(model, ev)
            runs.append({"seed": seed, "train_s": seconds,
                         "loss_15": at15["loss"], "gap_15": at15["loss"] / lab.floor - 1,
                         "accuracy_15": at15["accuracy"],
                         "loss_own": own["loss"], "gap_own": own["loss"] / floor - 1,
                         "accuracy_own": own["accuracy"]})
            print(f"  rate {rate:g} seed {seed}: {seconds:.0f} s, gap at 15% "
                  f"{runs[-1]['gap_15']:+.2%}", flush=True)
            if rate == EVAL_RATE:
                models[("80/10/10", seed)] = model
        out["rates"].append({"rate": rate, "floor_own": floor,
                             "slots_own": int((ev.labels != IGNORE_INDEX).sum()),
                             "runs": runs, "summary": summarize(runs)})
    return out


def protocol(lab: Lab, models: dict) -> dict:
    """Experiment 2: each model with [MASK], the true word or a random word at the targets."""
    inputs = {how: lab.inputs(how) for how in ("mask", "true", "random")}
    out = {"floor_mask": lab.floor, "models": {}}
    for kind in KINDS:
        runs = [{"seed": seed, **{how: score(model, ev) for how, ev in inputs.items()}}
                for (k, seed), model in models.items() if k == kind]
        out["models"][kind] = {"runs": runs, "summary": summarize(runs)}
    return out


def calibrate(lab: Lab, models: dict) -> dict:
    """Experiment 3: every model's distribution at the standard targets against the truth."""
    exact = lab.posterior()
    truth = lab.data.eval.labels[lab.data.eval.labels != IGNORE_INDEX] - lab.offset
    exact_loss = -exact[torch.arange(len(truth)), truth].log().mean().item()
    assert math.isclose(exact_loss, lab.floor, rel_tol=1e-9), "posterior and labels disagree"
    out = {"slots": exact.shape[0], "words": exact.shape[1],
           "bin_edges": [k / BINS for k in range(BINS + 1)], "models": {}}
    for kind in KINDS:
        runs, worst = [], []
        for (k, seed), model in models.items():
            if k != kind:
                continue
            logits = target_logits(model, lab.data.eval)
            record, kl = calibration(logits, exact, lab.offset)
            runs.append({"seed": seed, **record})
            if not worst:
                worst = worst_slots(lab, logits, exact, kl)
        out["models"][kind] = {"runs": runs, "summary": summarize(runs), "worst": worst}
    return out


# ---------------------------------------------------------------------- the table


def _ms(s: dict, pct: bool = False) -> str:
    if pct:
        return f"{s['mean']:+7.2%} ± {s['std']:.2%}"
    return f"{s['mean']:.4f} ± {s['std']:.4f}"


def _seeds(runs: list[dict], key: str, pct: bool = False) -> str:
    return " ".join(f"{r[key]:+.2%}" if pct else f"{r[key]:.4f}" for r in runs)


def print_tables(result: dict) -> None:
    s = result["settings"]
    m = result["mask_rate"]
    print(f"\nexact lab: {len(s['seeds'])} seeds, {s['train']['steps']} steps, "
          f"{s['n_eval']} eval sentences; uniform loss {result['uniform_loss']:.4f}, "
          f"floor at 15% {m['floor_15']:.4f} ({m['slots_15']} targets)")
    print("\n1. mask rate (mean ± sd over seeds; gap = loss / floor - 1)")
    print(f"{'rate':>5} {'floor own':>9} {'loss at 15%':>17} {'gap at 15%':>16} "
          f"{'acc 15%':>7} {'loss at own':>17} {'gap at own':>16} {'acc own':>7}  "
          "gaps at 15%, per seed")
    for r in m["rates"]:
        u = r["summary"]
        print(f"{r['rate']:5.2f} {r['floor_own']:9.4f} {_ms(u['loss_15'])} "
              f"{_ms(u['gap_15'], True)} {u['accuracy_15']['mean']:7.3f} "
              f"{_ms(u['loss_own'])} {_ms(u['gap_own'], True)} "
              f"{u['accuracy_own']['mean']:7.3f}  {_seeds(r['runs'], 'gap_15', True)}")
    print(f"\n2. input at the targets (rate 0.15; floor with [MASK] {m['floor_15']:.4f})")
    print(f"{'model':>12} {'input':>7} {'loss':>17} {'accuracy':>17}  losses per seed")
    for kind, entry in result["protocol"]["models"].items():
        for how, u in entry["summary"].items():
            per_seed = " ".join(f"{r[how]['loss']:.4f}" for r in entry["runs"])
            print(f"{kind:>12} {how:>7} {_ms(u['loss'])} {_ms(u['accuracy'])}  {per_seed}")
    c = result["calibration"]
    print(f"\n3. against the exact posterior ({c['slots']} slots x {c['words']} words)")
    print(f"{'model':>12} {'KL (nats)':>17} {'TV':>17} {'ECE':>17} {'top-1 ECE':>17} "
          f"{'special mass':>12}")
    for kind, entry in c["models"].items():
        u = entry["summary"]
        print(f"{kind:>12} {_ms(u['kl'])} {_ms(u['tv'])} {_ms(u['ece'])} {_ms(u['top1_ece'])} "
              f"{u['special_mass']['mean']:12.2e}")
    for kind, entry in c["models"].items():
        print(f"\n   reliability, {kind} (all seeds pooled): bin, mean model p, mean exact p, "
              "count")
        _print_reliability(c["bin_edges"], [r["reliability"] for r in entry["runs"]])
    for kind, entry in c["models"].items():
        print(f"\n   largest KL, {kind}, seed {entry['runs'][0]['seed']}")
        for w in entry["worst"]:
            print(f"   KL {w['kl']:.3f}  {w['sentence']}  (truth: {w['truth']})")
            print(f"      model {_top(w['model_top3'])}   exact {_top(w['exact_top3'])}")
    print(f"\nwall time {result['wall_s']:.0f} s")


def _print_reliability(edges, diagrams) -> None:
    for b in range(len(edges) - 1):
        n = sum(d["count"][b] for d in diagrams)
        if not n:
            print(f"   [{edges[b]:.1f}, {edges[b + 1]:.1f})  (empty)")
            continue
        q = sum(d["mean_model"][b] * d["count"][b] for d in diagrams if d["count"][b]) / n
        p = sum(d["mean_exact"][b] * d["count"][b] for d in diagrams if d["count"][b]) / n
        print(f"   [{edges[b]:.1f}, {edges[b + 1]:.1f})  {q:.4f}  {p:.4f}  {n:>8}")


def _top(pairs) -> str:
    return ", ".join(f"{w} {p:.2f}" for w, p in pairs)


# ---------------------------------------------------------------------- main


def settings(lab: Lab, size: dict, rates, seeds) -> dict:
    train = asdict(recipe(size, seed=0))
    del train["seed"]
    return {"seeds": seeds, "rates": rates, "eval_rate": EVAL_RATE,
            "n_train": size["n_train"], "n_eval": size["n_eval"], "data_seed": 0,
            "eval_mask_seed": EVAL_MASK_SEED, "random_word_seed": RANDOM_WORD_SEED,
            "bins": BINS, "worst": WORST, "world_words": lab.world.vocab_size,
            "vocab_size": len(lab.vocab), "model": asdict(model_config(lab, size)),
            "train": train}


def main(argv=None) -> int:
    args, size, seeds = run_options(__doc__, FULL, SMOKE, argv)
    start = time.perf_counter()
    rates = size.pop("rates")
    del size["seeds"]
    if EVAL_RATE not in rates:
        raise SystemExit(f"the rates must include {EVAL_RATE}: experiments 2 and 3 use it")
    lab = Lab(size["n_train"], size["n_eval"])
    models: dict = {}
    result = {"benchmark": "lab", "smoke": args.smoke, "machine": machine(),
              "settings": settings(lab, size, rates, seeds),
              "uniform_loss": math.log(lab.world.vocab_size)}
    print(f"training {len(rates) * len(seeds) + len(seeds)} models", flush=True)
    result["mask_rate"] = mask_rate(lab, size, rates, seeds, models)
    for seed in seeds:
        models[("100% [MASK]", seed)], seconds = train(lab, size, seed, kind="100% [MASK]")
        print(f"  100% [MASK] seed {seed}: {seconds:.0f} s", flush=True)
    result["protocol"] = protocol(lab, models)
    result["calibration"] = calibrate(lab, models)
    result["wall_s"] = time.perf_counter() - start
    print_tables(result)
    write(result, "lab", args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
