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

Three controls, after Hewitt & Liang (2019), "Designing and interpreting probes with control
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
3. **Neighbour control** (``neighbours``, masked rows only): the same draw, with the type a
   blank's two neighbouring tokens as the model reads them (the word, ``[MASK]``, ``[CLS]`` or
   ``[SEP]`` before and after it). It asks whether the probe can memorise a label per
   neighbour pair; with about 2,100 pairs for a 64-number vector it probably lacks the room
   whatever the vector holds, so the surface readers below are the sharper test.

**Uncertain blanks.** Most blanks' slot posterior is nearly one-hot. The held-out blanks whose
posterior's entropy is above ``UNCERTAIN`` (0.1 nats) are scored again on their own
(``uncertain_kl``, the real task at masked rows only; their count and mean entropy in
``rows``): does the vector carry a split belief, not only the likeliest slot?

**Surface readers** (``surface``): linear probes on the words instead of the model: at each
blank, its position (one-hot) and, for each offset in ``SURFACE``, the token the model reads
there (one-hot, with a column for "off the row"). Any vector that adds up the words' vectors
with fixed weights per offset gives a linear probe no more than these features do. Each is
fitted once (seed 0, ``probe_steps``) on the blanks of ``n_surface`` other sentences, as many
as the model trains on, for each weight decay in ``DECAYS``; the one with the lowest KL on the
blanks of ``n_validation`` further sentences is kept (the reader of every word, slow with its
9,000 columns, takes the decay chosen for three words a side). The sentences are
``world.sample(n_surface + n_validation, rng=SURFACE_SEED)``, masked as the probe's rows. The
readers are scored on the probe's held-out blanks and on the uncertain ones. Their weight
decay is far below the model probes' (the full run fits them on about 46,000 blanks), and so
is the block's when it is fitted the same way: at the model probes' 1e-4 the readers stop well
short of what the words allow.

**Each reader on further draws** (``surface[name]["draws"]``, every reader but the reader of
every word): the readers above are fitted on one draw of sentences, so their KL has a spread
the one fit does not show. Each is fitted again, at the weight decay it chose, on one further
draw per further seed (``SURFACE_SEED + DRAW_STEP * k`` for the k-th seed, k = 1, 2, ...),
and scored on the same held-out blanks: as many draws as there are seeds, the first one the
draw above.

**The block fitted as the readers are** (``block_like_readers``, per seed, for the trained
and the untrained model): the probe on the model's last block, fitted on the blanks of the
k-th seed's draw of the readers' sentences (its ``surface_seed``) with the same choice of
weight decay, scored on the same held-out blanks: the fair comparison with the readers (the
model probes above are fitted on the probe's own 2,000 sentences), paired draw by draw with
the readers' further fits, and the untrained control under the strongest fit the script
makes.

``constant`` is a probe that sees nothing (a constant feature: its bias learns the fit rows'
mean target), the line a probe must clear to have read anything. The trained models' eval
loss on ``toy_data``'s standard set (100% ``[MASK]`` at 15%) and its exact floor are recorded
to show they are trained as the recipe trains.

Compute budget: 4 surface readers x 6 weight decays and the reader of every word (the
slowest), then 5 seeds x (a recipe training of 1,400 steps + 2 models x 5 (kind of row, task)
pairs x 3 layers = 30 probe fits + 2 models x 6 fits of the block as the readers are fitted),
and 4 further draws x (their sentences' slot posteriors + 4 reader fits):
under 30 minutes on 2 quiet cores (the JSON records ``wall_s``). On a busy machine
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
                  "uncertain": float, "n_surface": int, "n_validation": int,
                  "decays": [float], "surface_seed": int, "draw_step": int,
                  "layers": [str], "slots": [str],          # the probe's output columns
                  "model": {BertConfig fields}, "train": {Recipe fields but seed}},
     "rows": {"masked" | "visible": {"fit": int, "held_out": int, "types": int,
                                      "unseen_held_out": int,  # control types not in fit
                                      "uncertain_held_out": int,
                                      "uncertain_entropy": float | None},
              # masked rows also: "neighbours_types", "neighbours_unseen_held_out"},
     "eval": {"floor": float, "runs": [{"seed": int, "train_s": float, "eval_loss": float}]},
     "constant": {"masked" | "visible": {"slots" | "control" (| "neighbours", masked):
                  {"cross_entropy": float, "entropy": float, "kl": float, "fit_kl": float,
                   "uncertain_kl": float | None  # masked slots only
                  }}},
     "surface": {"position" | "neighbours_1" | "neighbours_2" | "neighbours_3" | "all_words":
                 {"offsets": [int], "weight_decay": float,  # the one chosen
                  "validation_kl": {decay: float}, "cross_entropy": float, "entropy": float,
                  "kl": float, "uncertain_kl": float | None,
                  "draws": {"runs": [{"surface_seed": int, "kl": float,  # not all_words
                                      "uncertain_kl": float | None}],
                            "summary": {"kl": summary}}}},
     "block_like_readers": {"trained" | "untrained": [{"seed": int, "layer": str,
                             "surface_seed": int, "weight_decay": float,
                             "validation_kl": {decay: float},
                             "cross_entropy": float, "entropy": float, "kl": float,
                             "uncertain_kl": float | None}]},
     "probes": {"trained" | "untrained": {"masked" | "visible": {task: {
                layer: {"runs": [{"seed": int, "cross_entropy": float, "entropy": float,
                                  "kl": float, "fit_kl": float,
                                  "uncertain_kl": float | None}],  # masked slots only
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
SURFACE_SEED = 5  # the surface readers' own sentences and their masks
DRAW_STEP = 10  # the k-th further draw of the readers' sentences: SURFACE_SEED + DRAW_STEP * k
UNCERTAIN = 0.1  # a blank is "uncertain" when its slot posterior's entropy is above this (nats)
DECAYS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 0.0)  # the weight decays a reader chooses from
FIT_SHARE = 2 / 3  # of the probe's sentences, those that fit it; the rest score it
WEIGHT_DECAY = 1e-4
# probe_steps: L-BFGS iterations at most; n_surface, n_validation: the readers' sentences
FULL = {"seeds": 5, "steps": 1400, "n_train": 20000, "n_eval": 1000, "n_probe": 3000,
        "n_surface": 20000, "n_validation": 2000, "probe_steps": 200}
SMOKE = {"seeds": 2, "steps": 6, "n_train": 300, "n_eval": 50, "n_probe": 60,
         "n_surface": 80, "n_validation": 40, "probe_steps": 5, "batch_size": 16, "warmup": 2}
MODELS = ("trained", "untrained")
KINDS = ("masked", "visible")
TASKS = {"masked": ("slots", "control", "neighbours"), "visible": ("slots", "control")}
# the surface readers: word offsets from the blank whose words they see (besides its position)
SURFACE = {"position": (), "neighbours_1": (-1, 1), "neighbours_2": (-2, -1, 1, 2),
           "neighbours_3": (-3, -2, -1, 1, 2, 3), "all_words": None}  # None: every offset


# ---------------------------------------------------------------------- the probe's rows


class ProbeRows:
    """The probe's sentences masked once, and at each kind of row its place and its targets."""

    def __init__(self, world: ToyWorld, vocab: list[str], mask_token_id: int,
                 special_ids: list[int], n: int, rate: float, seed: int = PROBE_SEED,
                 fit_share: float = FIT_SHARE):
        self.sentences = world.sample(n, rng=seed)
        ids = {t: i for i, t in enumerate(vocab)}
        rows = pack_rows([[ids[w] for w in s] for s in self.sentences], world.max_len + 2,
                         {t: ids[t] for t in SPECIAL_TOKENS})
        self.batch = eval_batch(rows, len(vocab), mask_token_id, special_ids,
                                torch.Generator().manual_seed(seed), rate)
        self.n_fit = round(n * fit_share)
        places = {kind: [] for kind in KINDS}  # (sentence, word position), in sentence order
        targets = {kind: [] for kind in KINDS}
        types = {kind: {task: [] for task in TASKS[kind][1:]} for kind in KINDS}
        for r, words in enumerate(self.sentences):
            masked = ((self.batch.labels[r] != IGNORE_INDEX).nonzero().squeeze(1) - 1).tolist()
            visible = [i for i in range(len(words)) if i not in masked]
            seen = ["[CLS]", *("[MASK]" if i in masked else w for i, w in enumerate(words)),
                    "[SEP]"]  # what the model reads, word i at i + 1
            for kind, where in (("masked", masked), ("visible", visible)):
                places[kind] += [(r, i) for i in where]
                targets[kind].append(world.slot_posterior(words, masked, positions=where))
            types["masked"]["control"] += [(len(words), i) for i in masked]
            types["masked"]["neighbours"] += [(seen[i], seen[i + 2]) for i in masked]
            types["visible"]["control"] += [words[i] for i in visible]
        self.places = {k: torch.tensor(v) for k, v in places.items()}  # (rows, 2)
        self.targets = {"slots": {k: torch.cat(v) for k, v in targets.items()}}
        for kind in KINDS:
            for task, of_row in types[kind].items():
                self.targets.setdefault(task, {})[kind] = self._control(
                    self.targets["slots"][kind], of_row)
        self.fit = {k: self.places[k][:, 0] < self.n_fit for k in KINDS}  # (rows,) bool
        # held-out rows whose exact slot posterior is far from certain
        entropy = {k: -torch.special.xlogy(q, q).sum(1) for k, q in self.targets["slots"].items()}
        self.uncertain = {k: ~self.fit[k] & (entropy[k] > UNCERTAIN) for k in KINDS}
        self.rows = {}
        for k in KINDS:
            info = {"fit": int(self.fit[k].sum()), "held_out": int((~self.fit[k]).sum()),
                    "uncertain_held_out": int(self.uncertain[k].sum()),
                    "uncertain_entropy": (entropy[k][self.uncertain[k]].mean().item()
                                          if self.uncertain[k].any() else None)}
            for task, of_row in types[k].items():  # "types", "neighbours_types", ...
                prefix = "" if task == "control" else f"{task}_"
                info[f"{prefix}types"] = len(set(of_row))
                info[f"{prefix}unseen_held_out"] = self._unseen(of_row, self.fit[k])
            self.rows[k] = info

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


def probe_layers(states: dict[str, torch.Tensor], rows: ProbeRows, seed: int,
                 steps: int) -> dict:
    """Every layer's ``states`` (:func:`layer_states` on ``rows.batch``), kind of row and task:
    the probe fitted on the fit rows, scored on the rest (and, for the real task at blanks, on
    the uncertain held-out blanks too)."""
    out = {kind: {task: {} for task in TASKS[kind]} for kind in KINDS}
    for kind in KINDS:
        r, i = rows.places[kind].T
        fit = rows.fit[kind]
        for layer, h in states.items():
            x = h[r, i + 1]  # (rows, d): +1 for the [CLS] in front
            for task in TASKS[kind]:
                out[kind][task][layer] = fit_and_score(
                    x, rows.targets[task][kind], fit, seed, steps,
                    rows.uncertain[kind] if (kind, task) == ("masked", "slots") else None)
    return out


def fit_and_score(x: torch.Tensor, q: torch.Tensor, fit: torch.Tensor, seed: int,
                  steps: int, uncertain: torch.Tensor | None = None) -> dict:
    """A probe fitted on the rows ``fit``, scored on the others; with ``uncertain`` (a subset
    of the others), also its KL on those (``None`` when there are none)."""
    probe = fit_probe(x[fit], q[fit], rng=seed, weight_decay=WEIGHT_DECAY, steps=steps)
    out = held_out(probe, x, q, ~fit)
    out["fit_kl"] = probe.score(x[fit], q[fit]).kl
    if uncertain is not None:
        out["uncertain_kl"] = held_out(probe, x, q, ~fit, uncertain)["uncertain_kl"]
    return out


def held_out(probe, x: torch.Tensor, q: torch.Tensor, held: torch.Tensor,
             uncertain: torch.Tensor | None = None) -> dict:
    """``probe``'s cross-entropy, entropy and KL on the rows ``held``; with ``uncertain`` (a
    subset of them), also its KL there (``None`` when there are none)."""
    score = probe.score(x[held], q[held])
    out = {"cross_entropy": score.cross_entropy, "entropy": score.entropy, "kl": score.kl}
    if uncertain is not None:
        out["uncertain_kl"] = probe.score(x[uncertain], q[uncertain]).kl if uncertain.any() \
            else None
    return out


def surface_features(rows: ProbeRows, offsets, vocab_size: int, max_len: int) -> torch.Tensor:
    """At each blank of ``rows``: its position, one-hot, and the token the model reads at each
    offset from it (a word, ``[MASK]``, ``[CLS]``, ``[SEP]``, padding, or "off the row"),
    one-hot per offset: ``(blanks, max_len + len(offsets) * (vocab_size + 1))`` float64. A
    linear probe on these is the best a linear reader can do from any weighted sum of those
    words' vectors, each offset with its own weights."""
    ids = rows.batch.input_ids  # (B, T): word i at i + 1
    r, i = rows.places["masked"].T
    cols = [torch.nn.functional.one_hot(i, max_len)]
    for d in offsets:
        j = i + 1 + d
        inside = (j >= 0) & (j < ids.shape[1])
        token = torch.where(inside, ids[r, j.clamp(0, ids.shape[1] - 1)],
                            torch.full_like(j, vocab_size))  # vocab_size: off the row
        cols.append(torch.nn.functional.one_hot(token, vocab_size + 1))
    return torch.cat(cols, 1).double()


class ReaderRows:
    """The readers' own sentences: the blanks of ``n`` sentences to fit on, then those of
    ``n_validation`` more to choose each reader's weight decay on (drawn with ``seed``)."""

    def __init__(self, world: ToyWorld, vocab: list[str], data, rate: float, n: int,
                 n_validation: int, seed: int = SURFACE_SEED):
        self.seed = seed
        self.rows = ProbeRows(world, vocab, data.mask_token_id, data.special_ids,
                              n + n_validation, rate, seed=seed,
                              fit_share=n / (n + n_validation))
        self.fit = self.rows.fit["masked"]  # (blanks,) bool: False for validation blanks
        self.targets = self.rows.targets["slots"]["masked"]


def fit_chosen(x: torch.Tensor, readers: ReaderRows, rows: ProbeRows, steps: int,
               decays=DECAYS) -> tuple[dict, torch.Tensor]:
    """A probe from the readers' blanks' features ``x`` to their slot posteriors, for each
    weight decay in ``decays``; the one with the lowest KL on the validation blanks. Returns
    its record and its weight decay's probe, to be scored on the probe's rows."""
    fitted = {}
    for decay in decays:
        probe = fit_probe(x[readers.fit], readers.targets[readers.fit], rng=0,
                          weight_decay=decay, steps=steps)
        fitted[decay] = (probe.score(x[~readers.fit], readers.targets[~readers.fit]).kl, probe)
    decay = min(fitted, key=lambda d: fitted[d][0])
    return {"weight_decay": decay,
            "validation_kl": {f"{d:g}": kl for d, (kl, _) in fitted.items()}}, fitted[decay][1]


def scored(probe, x: torch.Tensor, rows: ProbeRows) -> dict:
    """A probe fitted elsewhere, scored on the probe's held-out blanks and the uncertain ones."""
    return held_out(probe, x, rows.targets["slots"]["masked"], ~rows.fit["masked"],
                    rows.uncertain["masked"])


def surface_readers(rows: ProbeRows, readers: ReaderRows, vocab_size: int, max_len: int,
                    steps: int) -> dict:
    """Linear probes that read the words, not the model, fitted at the readers' blanks (weight
    decay chosen on their validation blanks; the reader of every word takes the one chosen for
    three words a side, to save time), scored on the probe's held-out blanks."""
    out = {}
    for name, offsets in SURFACE.items():
        offsets = (tuple(d for d in range(-max_len - 1, max_len + 2) if d)
                   if offsets is None else offsets)
        decays = (out["neighbours_3"]["weight_decay"],) if name == "all_words" else DECAYS
        choice, probe = fit_chosen(surface_features(readers.rows, offsets, vocab_size, max_len),
                                   readers, rows, steps, decays)
        out[name] = {"offsets": list(offsets), **choice,
                     **scored(probe, surface_features(rows, offsets, vocab_size, max_len), rows)}
    return out


def reader_draw(surface: dict, rows: ProbeRows, readers: ReaderRows, vocab_size: int,
                max_len: int, steps: int) -> dict:
    """Each surface reader but the reader of every word (slow) refitted on another draw of
    the readers' sentences, ``readers``, at the weight decay it chose on the first draw,
    scored on the probe's held-out blanks: how much a reader's KL owes to its draw."""
    out = {}
    for name, entry in surface.items():
        if name == "all_words":
            continue
        offsets = entry["offsets"]
        x = surface_features(readers.rows, offsets, vocab_size, max_len)
        probe = fit_probe(x[readers.fit], readers.targets[readers.fit], rng=0,
                          weight_decay=entry["weight_decay"], steps=steps)
        out[name] = scored(probe, surface_features(rows, offsets, vocab_size, max_len), rows)
    return out


def block_like_readers(model, states: dict[str, torch.Tensor], rows: ProbeRows,
                       readers: ReaderRows, steps: int) -> dict:
    """The probe on the model's last block, fitted as the surface readers are: on the readers'
    blanks, weight decay chosen on their validation blanks; scored on the probe's held-out
    blanks (``states``: :func:`layer_states` of ``model`` on ``rows.batch``)."""
    layer = f"block_{len(model.blocks)}"
    r, i = readers.rows.places["masked"].T
    fitted_on = layer_states(model, readers.rows.batch)[layer][r, i + 1]  # (blanks, d)
    r, i = rows.places["masked"].T
    choice, probe = fit_chosen(fitted_on, readers, rows, steps)
    return {"layer": layer, "surface_seed": readers.seed, **choice,
            **scored(probe, states[layer][r, i + 1], rows)}


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
        print(f"\n{kind} rows: {rows['fit']} fit, {rows['held_out']} held out "
              f"({rows['uncertain_held_out']} uncertain); "
              f"{rows['types']} control types ({rows['unseen_held_out']} held-out rows of an "
              "unseen type)")
        print(f"{'':>10} {'':>10} {'floor':>7} {'constant KL':>11}  "
              + "  ".join(f"{layer:>17}" for layer in s["layers"]))
        for task in TASKS[kind]:
            const = result["constant"][kind][task]
            for model in MODELS:
                entry = result["probes"][model][kind][task]
                cells = "  ".join(f"{entry[layer]['summary']['kl']['mean']:.4f} ± "
                                  f"{entry[layer]['summary']['kl']['std']:.4f}"
                                  for layer in s["layers"])
                print(f"{model:>10} {task:>10} {const['entropy']:7.4f} {const['kl']:11.4f}  "
                      f"{cells}")
    print("\nsurface readers at the held-out blanks (KL; on the uncertain ones):")
    for name, entry in result["surface"].items():
        print(f"  {name:13s} {entry['kl']:.4f}; {entry['uncertain_kl']} (weight decay "
              f"{entry['weight_decay']:g})")
        if "draws" in entry:
            print("  " + " " * 13 + " each draw: "
                  + " ".join(f"{r['kl']:.4f}" for r in entry["draws"]["runs"]))
    for model, runs in result["block_like_readers"].items():
        for run in runs:
            print(f"  {model} seed {run['seed']}'s {run['layer']}, fitted as they are: "
                  f"{run['kl']:.4f}; {run['uncertain_kl']} (weight decay "
                  f"{run['weight_decay']:g})")
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
                           "uncertain": UNCERTAIN, "n_surface": size["n_surface"],
                           "n_validation": size["n_validation"], "decays": list(DECAYS),
                           "surface_seed": SURFACE_SEED, "draw_step": DRAW_STEP,
                           "probe_steps": size["probe_steps"], "layers": layers,
                           "slots": list(world.states), "model": asdict(config),
                           "train": train_settings},
              "rows": rows.rows,
              "eval": {"floor": world.bayes_loss(sentences, masks), "runs": []}}
    result["constant"] = {kind: {task: fit_and_score(
        torch.ones(len(rows.fit[kind]), 1), rows.targets[task][kind], rows.fit[kind], 0,
        size["probe_steps"], rows.uncertain[kind] if (kind, task) == ("masked", "slots")
        else None) for task in TASKS[kind]} for kind in KINDS}
    readers = ReaderRows(world, vocab, data, recipe.rate, size["n_surface"],
                         size["n_validation"])
    result["surface"] = surface_readers(rows, readers, len(vocab), world.max_len,
                                        size["probe_steps"])
    draws = {name: [{"surface_seed": SURFACE_SEED, "kl": entry["kl"],
                     "uncertain_kl": entry["uncertain_kl"]}]
             for name, entry in result["surface"].items() if name != "all_words"}
    like_readers = {model: [] for model in MODELS}
    per_seed = {model: [] for model in MODELS}
    for k, seed in enumerate(seeds):
        if k:  # the k-th seed's block is fitted on the k-th draw of the readers' sentences
            readers = ReaderRows(world, vocab, data, recipe.rate, size["n_surface"],
                                 size["n_validation"], seed=SURFACE_SEED + DRAW_STEP * k)
            for name, scores in reader_draw(result["surface"], rows, readers, len(vocab),
                                            world.max_len, size["probe_steps"]).items():
                draws[name].append({"surface_seed": readers.seed, "kl": scores["kl"],
                                    "uncertain_kl": scores["uncertain_kl"]})
        untrained, trained, seconds, eval_loss = train(data, world, size, seed)
        result["eval"]["runs"].append({"seed": seed, "train_s": seconds, "eval_loss": eval_loss})
        for model, net in (("trained", trained), ("untrained", untrained)):
            states = layer_states(net, rows.batch)
            per_seed[model].append(probe_layers(states, rows, seed, size["probe_steps"]))
            like_readers[model].append({"seed": seed, **block_like_readers(
                net, states, rows, readers, size["probe_steps"])})
        slots = per_seed["trained"][-1]["masked"]["slots"]
        print(f"  seed {seed}: trained in {seconds:.0f} s, eval loss {eval_loss:.4f}; masked "
              "slots KL " + " ".join(f"{layer} {slots[layer]['kl']:.4f}" for layer in layers),
              flush=True)
    result["probes"] = {model: {kind: {task: {layer: _runs(per_seed[model], seeds, kind, task,
                                                           layer)
                                              for layer in layers}
                                       for task in TASKS[kind]} for kind in KINDS}
                        for model in MODELS}
    result["block_like_readers"] = like_readers
    for name, runs in draws.items():
        result["surface"][name]["draws"] = {
            "runs": runs, "summary": {"kl": summary([r["kl"] for r in runs])}}
    result["wall_s"] = time.perf_counter() - start
    print_table(result)
    write(result, "probe", args.json, smoke=args.smoke)
    return 0


def _runs(records: list[dict], seeds: list[int], kind: str, task: str, layer: str) -> dict:
    runs = [{"seed": seed, **r[kind][task][layer]}
            for seed, r in zip(seeds, records, strict=True)]
    return {"runs": runs, "summary": {key: summary([r[key] for r in runs])
                                      for key in runs[0]
                                      if key != "seed" and runs[0][key] is not None}}


if __name__ == "__main__":
    sys.exit(main())
