"""A probe for the world's hidden state: is the exact slot posterior linearly in ``h_i``?

At a blank, the toy world's exact posterior over the hidden state (the grammatical slot),
``P(z_i = s | visible words)`` (:meth:`ToyWorld.slot_posterior
<mlmlib.toyworld.ToyWorld.slot_posterior>`), is known. This script trains the course's toy
recipe (:func:`mlmlib.train.toy_recipe`: one encoder block, hidden 64, 1,400 steps) with 100%
``[MASK]`` at its blanks (``mask_prob=1, random_prob=0``, the recipe's rate 0.3) on ONE data
set, ``toy_data(ToyWorld(), 20000, 1000, seed=0)``, over ``--seeds`` training seeds (0, 1,
...: the initial weights, the data order and the masks), and fits a linear probe
(:func:`mlmlib.probe.fit_probe`, softmax regression on soft targets) from the model's hidden
states to that posterior at every layer:

* ``embeddings`` - the sum of the word, position and segment embeddings after their
  LayerNorm (what the block reads; a blank's is the same ``[MASK]`` vector at every blank of a
  position, so it knows only the position);
* ``block_1`` ... - the output of each encoder block (the recipe has one): ``h_i``;
* ``head_transform`` - the masked-LM head's transform of ``h_i`` (dense, GELU, LayerNorm),
  the vector the word scores are dot products with.

The probe's rows are the positions of 3,000 fresh sentences (``n_probe``),
``world.sample(3000, rng=PROBE_SEED)``, masked once by the evaluation protocol
(:func:`mlmlib.train.eval_batch`: 100% ``[MASK]``, the "bert" rule's exact count, at least one
blank a sentence) at the recipe's rate, from a fixed generator (``PROBE_SEED``), so every
seed's model is probed on the same rows. Two kinds of row, probed separately: ``masked`` (the
blanks; the target is the slot posterior there) and ``visible`` (every other word; the target
is the slot posterior at that position given every visible word, the word itself included,
which nearly settles it: the probe's floor there is close to 0). The first ``FIT_SHARE`` of the
sentences fit the probe (``fit_probe(..., weight_decay=WEIGHT_DECAY, steps=200)``,
started from the training seed); it is scored on the rest, sentences it never saw:
``cross_entropy`` (nats per row), ``entropy`` (the targets' mean entropy: the floor, no probe
does better on average) and ``kl = cross_entropy - entropy`` (what the features do not tell
linearly); ``fit_kl`` is the KL on the rows it was fitted on (their gap to ``kl`` is
what the probe memorised).

Two controls, after Hewitt & Liang (2019), "Designing and interpreting probes with control
tasks", each probed the same way:

1. **Untrained model** (``untrained``): the same probe on the model as built, same config,
   same seed, no step taken. What the architecture gives for free (the position embeddings,
   a random mixing of the words around a blank).
2. **Control task** (``control``). Each row gets a *control target* that depends only on a
   surface type of the row, with the task's own distribution of targets, so a probe can fit it
   only by memorising types; a probe that fits the real task much better than its control
   reads the slot from the features rather than memorising (Hewitt & Liang's selectivity).

   - Visible rows: the type is the word. Each word type gets the exact slot posterior of one
     visible row drawn uniformly from all of them (fixed per type; ``CONTROL_SEED``), as in
     Hewitt & Liang's part-of-speech control: an output per word type, drawn from the task's
     empirical distribution of outputs (visible targets are nearly one-hot, so this is
     nearly one slot drawn with the slots' frequencies). Not from the type's own slots: most
     words have one slot and the rest two (a determiner or an adjective is the subject's or
     the object's; "sat" an animal's or a person's verb), so that would mostly be the real
     task again; and not uniformly: the control's outputs would then be spread unlike the
     task's, and a probe's bias alone would score them differently.
   - Masked rows: the word is hidden, so the type is what a model sees of a blank without its
     neighbours' words: (sentence length, position), from the position embeddings and where
     ``[SEP]`` falls. Each such type gets the slot posterior of one masked row drawn uniformly
     from all of them (fixed per type). Types recur often (175 pairs among about 6,900
     masked rows in the full run), as word types do, so memorising is possible, which the
     control needs. Not a
     shuffle of the targets *within* each type: that keeps each type's mean target, which
     holds part of the real answer (a blank at position 0 is always the subject's
     determiner), so its control would partly be the task; drawing from the whole pool keeps
     none of it.

   The control's floor (its ``entropy``) differs from the task's; compare KLs. Held-out rows
   whose type the fit rows never had cannot be memorised; their count is in ``rows``.

``constant`` is a probe that sees nothing (a constant feature: its bias learns the fit rows'
mean target), the line a probe must clear to have read anything. The trained models' eval
loss on ``toy_data``'s standard set (100% ``[MASK]`` at 15%) and its exact floor are recorded
to show they are trained as the recipe trains.

Compute budget: 5 seeds x (a recipe training of 1,400 steps + 2 models x 2 kinds of row x 2
tasks x 3 layers = 24 probe fits): about 3 minutes on 2 quiet cores (timed: one seed,
``--seeds 1``, took 31 s, 11 s of it training; the JSON records ``wall_s``). On a busy machine
it is many times slower: each small tensor operation waits for a second thread.

    python -m bench.bench_probe               # the full run, 5 seeds
    python -m bench.bench_probe --seeds 7     # more seeds; --steps N: steps per training
    python -m bench.bench_probe --smoke       # seconds: tiny settings, writes to a temp dir

It prints a table and writes JSON (``--json``, default bench/results/probe.json; with
``--smoke``, a temporary file). ``summary`` is, for each number of the per-seed records,
``{"mean", "std", "min", "max"}`` over the seeds (``std`` the sample standard deviation, 0
with one seed)::

    {"benchmark": "probe", "smoke": bool, "machine": {...}, "wall_s": float,
     "settings": {"seeds": [int], "n_train": int, "n_eval": int, "data_seed": 0,
                  "n_probe": int, "probe_seed": int, "probe_rate": float, "fit_share": float,
                  "control_seed": int, "weight_decay": float, "probe_steps": int,
                  "layers": [str], "slots": [str],          # the probe's output columns
                  "model": {BertConfig fields}, "train": {Recipe fields but seed}},
     "rows": {"masked" | "visible": {"fit": int, "held_out": int, "types": int,
                                      "unseen_held_out": int}},  # control types not in fit
     "eval": {"floor": float, "runs": [{"seed": int, "train_s": float, "eval_loss": float}]},
     "constant": {"masked" | "visible": {"slots" | "control":
                  {"cross_entropy": float, "entropy": float, "kl": float, "fit_kl": float}}},
     "probes": {"trained" | "untrained": {"masked" | "visible": {"slots" | "control": {
                layer: {"runs": [{"seed": int, "cross_entropy": float, "entropy": float,
                                  "kl": float, "fit_kl": float}],
                        "summary": {"cross_entropy": summary, "entropy": ..., "kl": ...,
                                    "fit_kl": ...}}}}}}}
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict

import torch

from bench._results import machine, mask_only_recipe, run_options, write
from bench.bench_lab import summary
from mlmlib.constants import IGNORE_INDEX
from mlmlib.corpora import Batch, pack_rows
from mlmlib.probe import fit_probe
from mlmlib.tokenizer import SPECIAL_TOKENS
from mlmlib.toyworld import ToyWorld
from mlmlib.train import RunOptions, Trainer, build_model, eval_batch, toy_data

PROBE_SEED = 3  # the probe's sentences and their masks (the data set uses seed 0)
CONTROL_SEED = 4  # the control task's draw of a target per type
FIT_SHARE = 2 / 3  # of the probe's sentences, those that fit it; the rest score it
WEIGHT_DECAY = 1e-4
FULL = {"seeds": 5, "steps": 1400, "n_train": 20000, "n_eval": 1000, "n_probe": 3000,
        "probe_steps": 200}  # probe_steps: L-BFGS iterations at most
SMOKE = {"seeds": 2, "steps": 6, "n_train": 300, "n_eval": 50, "n_probe": 60,
         "probe_steps": 5, "batch_size": 16, "warmup": 2}
MODELS = ("trained", "untrained")
KINDS = ("masked", "visible")
TASKS = ("slots", "control")


# ---------------------------------------------------------------------- the probe's rows


class ProbeRows:
    """The probe's sentences masked once, and at each kind of row its place and its targets."""

    def __init__(self, world: ToyWorld, vocab: list[str], mask_token_id: int,
                 special_ids: list[int], n: int, rate: float):
        self.sentences = world.sample(n, rng=PROBE_SEED)
        ids = {t: i for i, t in enumerate(vocab)}
        rows = pack_rows([[ids[w] for w in s] for s in self.sentences], world.max_len + 2,
                         {t: ids[t] for t in SPECIAL_TOKENS})
        self.batch = eval_batch(rows, len(vocab), mask_token_id, special_ids,
                                torch.Generator().manual_seed(PROBE_SEED), rate)
        self.n_fit = round(n * FIT_SHARE)
        places = {kind: [] for kind in KINDS}  # (sentence, word position), in sentence order
        targets = {kind: [] for kind in KINDS}
        types = {kind: [] for kind in KINDS}
        for r, words in enumerate(self.sentences):
            masked = ((self.batch.labels[r] != IGNORE_INDEX).nonzero().squeeze(1) - 1).tolist()
            visible = [i for i in range(len(words)) if i not in masked]
            for kind, where in (("masked", masked), ("visible", visible)):
                places[kind] += [(r, i) for i in where]
                targets[kind].append(world.slot_posterior(words, masked, positions=where))
                types[kind] += [(len(words), i) if kind == "masked" else words[i]
                                for i in where]
        self.places = {k: torch.tensor(v) for k, v in places.items()}  # (rows, 2)
        self.targets = {"slots": {k: torch.cat(v) for k, v in targets.items()}}
        self.targets["control"] = {k: self._control(self.targets["slots"][k], types[k])
                                   for k in KINDS}
        self.fit = {k: self.places[k][:, 0] < self.n_fit for k in KINDS}  # (rows,) bool
        self.rows = {k: {"fit": int(self.fit[k].sum()), "held_out": int((~self.fit[k]).sum()),
                         "types": len(set(types[k])),
                         "unseen_held_out": self._unseen(types[k], self.fit[k])} for k in KINDS}

    @staticmethod
    def _control(targets: torch.Tensor, types: list) -> torch.Tensor:
        """Each type's control target: the target of one row drawn from all rows."""
        g = torch.Generator().manual_seed(CONTROL_SEED)
        drawn = {t: targets[int(torch.randint(len(targets), (), generator=g))]
                 for t in sorted(set(types), key=str)}
        return torch.stack([drawn[t] for t in types])

    @staticmethod
    def _unseen(types: list, fit: torch.Tensor) -> int:
        seen = {t for t, f in zip(types, fit.tolist(), strict=True) if f}
        return sum(1 for t, f in zip(types, fit.tolist(), strict=True) if not f and t not in seen)


@torch.no_grad()
def layer_states(model, batch: Batch, chunk: int = 512) -> dict[str, torch.Tensor]:
    """The hidden states ``(B, T, d)`` after each layer: the embeddings (after their
    LayerNorm), each block, and the head's transform, taken with forward hooks while the
    model scores every position."""
    model.eval()
    out: dict[str, list] = {}

    def keep(name, pick=lambda o: o):
        return lambda module, inputs, output: out.setdefault(name, []).append(pick(output))

    hooks = [model.ln_embeddings.register_forward_hook(keep("embeddings"))]
    hooks += [block.register_forward_hook(keep(f"block_{k + 1}", lambda o: o[0]))
              for k, block in enumerate(model.blocks)]
    if model.head_ln is not None:
        hooks.append(model.head_ln.register_forward_hook(keep("head_transform")))
    try:
        for k in range(0, len(batch.input_ids), chunk):
            model(batch.input_ids[k:k + chunk], attention_mask=batch.attention_mask[k:k + chunk],
                  score_all=True)
    finally:
        for hook in hooks:
            hook.remove()
    return {name: torch.cat(parts) for name, parts in out.items()}


def probe_layers(model, rows: ProbeRows, seed: int, steps: int) -> dict:
    """Every layer, kind of row and task: the probe fitted on the fit rows, scored on the rest."""
    states = layer_states(model, rows.batch)
    out = {kind: {task: {} for task in TASKS} for kind in KINDS}
    for kind in KINDS:
        r, i = rows.places[kind].T
        fit = rows.fit[kind]
        for layer, h in states.items():
            x = h[r, i + 1]  # (rows, d): +1 for the [CLS] in front
            for task in TASKS:
                out[kind][task][layer] = fit_and_score(x, rows.targets[task][kind], fit, seed,
                                                       steps)
    return out


def fit_and_score(x: torch.Tensor, q: torch.Tensor, fit: torch.Tensor, seed: int,
                  steps: int) -> dict:
    probe = fit_probe(x[fit], q[fit], rng=seed, weight_decay=WEIGHT_DECAY, steps=steps)
    held = probe.score(x[~fit], q[~fit])
    return {"cross_entropy": held.cross_entropy, "entropy": held.entropy, "kl": held.kl,
            "fit_kl": probe.score(x[fit], q[fit]).kl}


# ---------------------------------------------------------------------- main


def train(data, world: ToyWorld, size: dict, seed: int):
    """The recipe's model at ``seed``, untrained and trained; the seconds and the eval loss."""
    config, recipe = mask_only_recipe(data, world, size, seed)
    untrained = build_model(config, seed=seed)
    trainer = Trainer(build_model(config, seed=seed), data, recipe,
                      RunOptions(eval_every=size["steps"], quiet=True))
    start = time.perf_counter()
    history = trainer.fit()
    return untrained, trainer.model, time.perf_counter() - start, history[-1]["eval_loss"]


def print_table(result: dict) -> None:
    s = result["settings"]
    print(f"\nprobe: {len(s['seeds'])} seeds; held-out KL (nats per row), mean ± sd over "
          "seeds; the floor is the targets' entropy")
    for kind in KINDS:
        rows = result["rows"][kind]
        print(f"\n{kind} rows: {rows['fit']} fit, {rows['held_out']} held out; "
              f"{rows['types']} control types ({rows['unseen_held_out']} held-out rows of an "
              "unseen type)")
        print(f"{'':>10} {'':>7} {'floor':>7} {'constant KL':>11}  "
              + "  ".join(f"{layer:>17}" for layer in s["layers"]))
        for task in TASKS:
            const = result["constant"][kind][task]
            for model in MODELS:
                entry = result["probes"][model][kind][task]
                cells = "  ".join(f"{entry[layer]['summary']['kl']['mean']:.4f} ± "
                                  f"{entry[layer]['summary']['kl']['std']:.4f}"
                                  for layer in s["layers"])
                print(f"{model:>10} {task:>7} {const['entropy']:7.4f} {const['kl']:11.4f}  "
                      f"{cells}")
    ev = result["eval"]
    print(f"\ntrained models' eval loss (floor {ev['floor']:.4f}): "
          + " ".join(f"{r['eval_loss']:.4f}" for r in ev["runs"]))
    print(f"wall time {result['wall_s']:.0f} s")


def main(argv=None) -> int:
    args, size, seeds = run_options(__doc__, FULL, SMOKE, argv)
    start = time.perf_counter()
    world = ToyWorld()
    data, vocab, sentences, masks = toy_data(world, size["n_train"], size["n_eval"], seed=0)
    config, recipe = mask_only_recipe(data, world, size, 0)
    rows = ProbeRows(world, vocab, data.mask_token_id, data.special_ids, size["n_probe"],
                     recipe.rate)
    train_settings = asdict(recipe)
    del train_settings["seed"]
    layers = ["embeddings", *(f"block_{k + 1}" for k in range(config.num_layers)),
              *(["head_transform"] if config.head_transform else [])]
    result = {"benchmark": "probe", "smoke": args.smoke, "machine": machine(),
              "settings": {"seeds": seeds, "n_train": size["n_train"], "n_eval": size["n_eval"],
                           "data_seed": 0, "n_probe": size["n_probe"], "probe_seed": PROBE_SEED,
                           "probe_rate": recipe.rate, "fit_share": FIT_SHARE,
                           "control_seed": CONTROL_SEED, "weight_decay": WEIGHT_DECAY,
                           "probe_steps": size["probe_steps"], "layers": layers,
                           "slots": list(world.states), "model": asdict(config),
                           "train": train_settings},
              "rows": rows.rows,
              "eval": {"floor": world.bayes_loss(sentences, masks), "runs": []}}
    one = {kind: {task: torch.ones(len(rows.targets[task][kind]), 1) for task in TASKS}
           for kind in KINDS}
    result["constant"] = {kind: {task: fit_and_score(one[kind][task], rows.targets[task][kind],
                                                     rows.fit[kind], 0, size["probe_steps"])
                                       for task in TASKS}
                          for kind in KINDS}
    per_seed = {model: [] for model in MODELS}
    for seed in seeds:
        untrained, trained, seconds, eval_loss = train(data, world, size, seed)
        result["eval"]["runs"].append({"seed": seed, "train_s": seconds, "eval_loss": eval_loss})
        for model, net in (("trained", trained), ("untrained", untrained)):
            per_seed[model].append(probe_layers(net, rows, seed, size["probe_steps"]))
        slots = per_seed["trained"][-1]["masked"]["slots"]
        print(f"  seed {seed}: trained in {seconds:.0f} s, eval loss {eval_loss:.4f}; masked "
              "slots KL " + " ".join(f"{layer} {slots[layer]['kl']:.4f}" for layer in layers),
              flush=True)
    result["probes"] = {model: {kind: {task: {layer: _runs(per_seed[model], seeds, kind, task,
                                                           layer)
                                              for layer in layers}
                                       for task in TASKS} for kind in KINDS}
                        for model in MODELS}
    result["wall_s"] = time.perf_counter() - start
    print_table(result)
    write(result, "probe", args.json, smoke=args.smoke)
    return 0


def _runs(records: list[dict], seeds: list[int], kind: str, task: str, layer: str) -> dict:
    runs = [{"seed": seed, **r[kind][task][layer]}
            for seed, r in zip(seeds, records, strict=True)]
    return {"runs": runs, "summary": {key: summary([r[key] for r in runs])
                                      for key in runs[0] if key != "seed"}}


if __name__ == "__main__":
    sys.exit(main())
