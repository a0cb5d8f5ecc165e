r"""mlmlib.byhand.step - one training step by hand: the gradient at the scores, one AdamW update.

Does: compute, in NumPy and in float64, the two pieces of a training step that the chapter
``training_0_one_step`` derives, each a pure function that returns new arrays and never changes
its inputs:

* :func:`score_gradient` - the gradient of ``-log P(truth)`` with respect to the scores,
  ``p - onehot``: for each masked slot, the softmax of its scores minus 1 at the true word
  (summed over the slots, or divided by their number for the mean, as the model's loss is);
* :func:`adamw_step` - one AdamW update of named weights from their gradients, as
  ``torch.optim.AdamW`` computes it (the tests check it to 1e-12 over several steps): the
  running averages ``m`` (of the gradient) and ``v`` (of its square), their bias correction,
  the step ``lr * m_hat / (sqrt(v_hat) + eps)``, and the decoupled weight decay
  ``w <- w - lr * weight_decay * w``. It returns the new weights and a new
  :class:`AdamWState` (the step count and the two averages).

And three helpers for the chapter (torch is imported only inside the one that trains):
:func:`parameters_of` copies a model's weights, or their gradients, into float64 arrays by
name; :func:`largest_difference` compares two such sets; :func:`overfitting_run` trains a tiny
mini BERT on a handful of toy-world sentences with the course's trainer and records its loss on
those sentences and on held-out ones.

Does not: backpropagate through the encoder (PyTorch's autograd does; :func:`score_gradient`
is the gradient at the scores only), clip gradients, or schedule the learning rate (the caller
passes this step's rate; :func:`~mlmlib.train.setup.configure_optimizer` holds the course's
schedule). Bad input raises a ``ValueError`` or ``TypeError`` that names it; a torch tensor is
refused (by hand means NumPy: pass ``t.detach().numpy()``).

>>> score_gradient([2.0, 0.0, 0.0], 0).round(4)  # p - onehot: p - 1 at the truth
array([-0.213 ,  0.1065,  0.1065])
>>> new, state = adamw_step({"w": [1.0]}, {"w": [0.5]}, lr=0.1, weight_decay=0.0)
>>> new["w"].round(6), state.step  # the first step moves by about lr, against the gradient
(array([0.9]), 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mlmlib._checks import mapping, number, one_of, whole
from mlmlib.byhand.forward import _array, softmax
from mlmlib.constants import IGNORE_INDEX

__all__ = ["AdamWState", "adamw_step", "largest_difference", "overfitting_run",
           "parameters_of", "score_gradient"]


# ----------------------------------------------------------------------------- the gradient

def _targets(targets, rows: int, size: int) -> np.ndarray:
    """One whole number per slot (``rows`` of them), each a word (``0..size - 1``) or
    ``IGNORE_INDEX`` (a slot outside M, which gets no gradient)."""
    if hasattr(targets, "detach"):
        raise TypeError("targets must be an int or a list or NumPy array of ints (by hand, no "
                        "torch): use targets.detach().numpy()")
    arr = np.asarray(targets)
    if arr.dtype.kind not in "iu" or arr.dtype == bool:
        raise TypeError(f"targets must be whole numbers (word indices), got {arr.dtype} "
                        f"{targets!r}"[:200])
    arr = arr.reshape(-1).astype(np.int64)
    if arr.size != rows:
        raise ValueError(f"targets has {arr.size} entries but the scores have {rows} "
                         f"row{'s' * (rows != 1)} (one target per slot)")
    bad = (arr != IGNORE_INDEX) & ((arr < 0) | (arr >= size))
    if bad.any():
        raise ValueError(f"targets: {int(arr[bad][0])} is outside the vocabulary of {size} "
                         f"words (0..{size - 1}; {IGNORE_INDEX} marks a slot outside M)")
    return arr


# L = -log P(t) = logsumexp(s) - s_t  =>  dL/ds_v = softmax(s)_v - [v == t] = p_v - onehot_v
def score_gradient(scores, targets, reduction: str = "sum") -> np.ndarray:
    """The gradient of ``-log P(truth)`` with respect to the scores: ``p - onehot``.

    Args:
        scores: one slot's scores ``(V,)``, or one row per slot ``(N, V)`` (the model's
            logits for the masked slots).
        targets: the true word's index for the slot (an int), or one per row (``(N,)``);
            ``IGNORE_INDEX`` marks a row outside M, whose gradient is 0.
        reduction: ``"sum"`` for the loss summed over the slots (the course's formula), or
            ``"mean"`` for it divided by the number of slots (what the model's ``loss`` is):
            every row is then divided by that number.

    Every entry lies between -1 and 1 (for the mean, divided by the number of slots): the
    probabilities lie in [0, 1] and the truth's entry is ``p_t - 1``.
    """
    s = _array(scores, "scores")
    if s.ndim not in (1, 2) or s.shape[-1] == 0:
        raise ValueError(f"scores must be one slot's scores (V,) or one row per slot (N, V), "
                         f"got shape {s.shape}")
    one_of(reduction, "reduction", ("sum", "mean"))
    rows = s.reshape(-1, s.shape[-1])  # (N, V)
    t = _targets(targets, rows.shape[0], rows.shape[1])  # (N,)
    grad = softmax(rows, axis=-1)  # (N, V): p
    counted = t != IGNORE_INDEX
    grad[np.flatnonzero(counted), t[counted]] -= 1.0  # p - onehot at each counted slot
    grad[~counted] = 0.0  # a slot outside M is not in the loss
    if reduction == "mean":
        grad /= max(int(counted.sum()), 1)  # the mean over M; an empty M gives 0
    return grad.reshape(s.shape)


# ----------------------------------------------------------------------------- AdamW

@dataclass(frozen=True)
class AdamWState:
    """What AdamW remembers between steps: how many it has taken, and for each weight (by
    name) ``m``, the running average of its gradient, and ``v``, of the gradient squared."""

    step: int
    m: dict
    v: dict


def _named(values, name: str) -> dict[str, np.ndarray]:
    """A dict of name -> float64 array of finite numbers (new arrays: a copy of each)."""
    values = mapping(values, name, "weight name -> array")
    for key in values:
        if not isinstance(key, str):
            raise TypeError(f"{name} must be keyed by weight names (str), got {key!r}")
    return {key: _array(v, f"{name}[{key!r}]") for key, v in values.items()}


def _same_shapes(ours: dict, theirs: dict, name: str, like: str) -> None:
    if set(ours) != set(theirs):
        missing, extra = sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours))
        raise ValueError(f"{name} must name the same weights as {like}: missing {missing}, "
                         f"extra {extra}")
    for key in ours:
        if ours[key].shape != theirs[key].shape:
            raise ValueError(f"{name}[{key!r}] has shape {theirs[key].shape} but "
                             f"{like}[{key!r}] has {ours[key].shape}")


def _decays(weight_decay, weights: dict) -> dict[str, float]:
    """Each weight's decay: one number for all, or a dict with one per name."""
    if isinstance(weight_decay, Mapping):
        decay = {k: number(v, f"weight_decay[{k!r}]", 0) for k, v in weight_decay.items()}
        if set(decay) != set(weights):
            raise ValueError(f"weight_decay must give a decay for every weight and no other: "
                             f"missing {sorted(set(weights) - set(decay))}, extra "
                             f"{sorted(set(decay) - set(weights))}")
        return decay
    value = number(weight_decay, "weight_decay (one number, or a dict name -> number)", 0)
    return dict.fromkeys(weights, value)


# m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2   (running averages, starting at 0)
# m_hat = m / (1 - b1^t);  v_hat = v / (1 - b2^t)     (bias correction, t = this step's number)
# w <- w - lr * wd * w  (decoupled decay: not through the gradient)
# w <- w - lr * m_hat / (sqrt(v_hat) + eps)
def adamw_step(weights, grads, state: AdamWState | None = None, *, lr: float,
               betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
               weight_decay=0.01) -> tuple[dict, AdamWState]:
    """One AdamW update: ``(new weights, new state)``; nothing passed in is changed.

    Args:
        weights, grads: dicts of weight name -> array (the same names and shapes), such as
            :func:`parameters_of` gives.
        state: what the previous step returned, or None before the first step (``m`` and
            ``v`` start at 0).
        lr: this step's learning rate (with a schedule, the scheduled value).
        betas: how much of the old averages ``m`` and ``v`` each step keeps.
        eps: added to ``sqrt(v_hat)``, so a weight whose gradient is 0 is not divided by 0.
        weight_decay: one number for every weight, or a dict with one per name (the course
            decays the matrices only).

    The defaults are ``torch.optim.AdamW``'s; the course's optimizer uses ``eps=1e-6``.
    """
    weights, grads = _named(weights, "weights"), _named(grads, "grads")
    _same_shapes(weights, grads, "grads", "weights")
    lr = number(lr, "lr", 0, above=True)
    if isinstance(betas, str | bytes) or not hasattr(betas, "__len__") or len(betas) != 2:
        raise TypeError(f"betas must be two numbers (beta1, beta2), got {betas!r}")
    b1, b2 = (number(b, f"betas[{k}]", 0, 1, below=True) for k, b in enumerate(betas))
    eps = number(eps, "eps", 0, above=True)
    decay = _decays(weight_decay, weights)
    if state is None:
        state = AdamWState(0, {k: np.zeros_like(w) for k, w in weights.items()},
                           {k: np.zeros_like(w) for k, w in weights.items()})
    elif not isinstance(state, AdamWState):
        raise TypeError(f"state must be None (the first step) or the AdamWState the previous "
                        f"step returned, got {type(state).__name__}")
    else:
        whole(state.step, "state.step", 0)
        state = AdamWState(state.step, _named(state.m, "state.m"), _named(state.v, "state.v"))
        _same_shapes(weights, state.m, "state.m", "weights")
        _same_shapes(weights, state.v, "state.v", "weights")
    t = state.step + 1
    correction1, correction2 = 1 - b1**t, 1 - b2**t  # the averages start at 0: undo that pull
    new, m, v = {}, {}, {}
    for k, w in weights.items():
        g = grads[k]
        m[k] = b1 * state.m[k] + (1 - b1) * g  # running average of g
        v[k] = b2 * state.v[k] + (1 - b2) * g * g  # ... and of g squared
        m_hat = m[k] / correction1
        root_v_hat = np.sqrt(v[k]) / np.sqrt(correction2)
        decayed = w * (1 - lr * decay[k])  # decoupled weight decay
        new[k] = decayed - lr * m_hat / (root_v_hat + eps)  # about lr per weight, against g
    return new, AdamWState(t, m, v)


# ----------------------------------------------------------------------------- helpers

def parameters_of(model, grads: bool = False) -> dict[str, np.ndarray]:
    """A model's weights (or, with ``grads=True``, their gradients) as float64 NumPy arrays,
    by the names of ``model.named_parameters()``; copies, which nothing later changes."""
    if not hasattr(model, "named_parameters"):
        raise TypeError(f"model must be a torch model (a MiniBert), got {type(model).__name__}")
    if not isinstance(grads, bool):
        raise TypeError(f"grads must be True or False, got {grads!r}")
    out = {}
    for name, p in model.named_parameters():
        t = p.grad if grads else p
        if t is None:
            raise ValueError(f"{name} has no gradient: call loss.backward() first")
        out[name] = t.detach().cpu().double().numpy().copy()
    return out


def largest_difference(ours, theirs) -> float:
    """The largest ``|ours - theirs|`` over every entry of every weight of two dicts of
    arrays with the same names and shapes."""
    ours, theirs = _named(ours, "ours"), _named(theirs, "theirs")
    _same_shapes(ours, theirs, "theirs", "ours")
    return max((float(np.abs(ours[k] - theirs[k]).max(initial=0.0)) for k in ours),
               default=0.0)


def overfitting_run(world, n_train: int = 8, n_held_out: int = 200, steps: int = 400,
                    every: int = 20, seed: int = 0, hidden_size: int = 32, lr: float = 3e-3,
                    dropout: float = 0.0) -> dict:
    """Train a tiny mini BERT on ``n_train`` toy-world sentences and record, every ``every``
    steps, its mean loss on those sentences and on ``n_held_out`` others.

    The data are :func:`~mlmlib.train.data.toy_data`'s (``seed``); the model has one encoder block
    of width ``hidden_size`` (weights from ``seed``) and ``dropout`` on both kinds; the
    optimizer, its warm-up (a tenth of ``steps``) and the masking of every batch are the
    course's trainer's (:class:`~mlmlib.train.trainer.Trainer`, on the CPU), each batch all
    ``n_train`` rows drawn with replacement. Both losses are measured as the evaluation does
    (:func:`~mlmlib.train.data.eval_batch`: 15% of the words, every one ``[MASK]``, the same
    positions every time), with dropout off. It runs on one CPU thread (the caller's number
    of threads comes back afterwards): a model this small runs fastest there, many times
    faster than on two threads of a busy machine.

    Returns ``{"step": [...], "train": [...], "held_out": [...]}``, step 0 (before training)
    first.
    """
    import torch

    from mlmlib.model import BertConfig, MiniBert
    from mlmlib.toyworld import ToyWorld
    from mlmlib.train import Recipe, RunOptions, Trainer, eval_batch, toy_data

    if not isinstance(world, ToyWorld):
        raise TypeError(f"world must be a mlmlib.toyworld.ToyWorld, got {type(world).__name__}")
    steps, every = whole(steps, "steps", 1), whole(every, "every", 1)
    n_train = whole(n_train, "n_train (training sentences)", 1)
    data, vocab, _, _ = toy_data(world, n_train=n_train, n_eval=n_held_out, seed=seed)
    seen = eval_batch(data.rows, data.vocab_size, data.mask_token_id, data.special_ids,
                      torch.Generator().manual_seed(seed + 1))  # the training sentences
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden_size, num_layers=1,
                        num_heads=2, intermediate_size=2 * hidden_size,
                        max_position=data.rows.input_ids.shape[1], dropout=dropout,
                        attention_dropout=dropout)
    model = MiniBert(config, rng=seed)
    recipe = Recipe(steps=steps, batch_size=n_train, lr=lr, warmup=max(1, steps // 10),
                    seed=seed)
    trainer = Trainer(model, data, recipe, RunOptions(device="cpu", quiet=True))

    def loss_on(batch) -> float:
        model.eval()
        with torch.no_grad():
            out = model(batch.input_ids, attention_mask=batch.attention_mask,
                        labels=batch.labels)
        model.train()
        return out.loss.item()

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        record = {"step": [0], "train": [loss_on(seen)], "held_out": [loss_on(data.eval)]}
        for k in range(1, steps + 1):
            trainer.train_step()
            if k % every == 0 or k == steps:
                record["step"].append(k)
                record["train"].append(loss_on(seen))
                record["held_out"].append(loss_on(data.eval))
    finally:
        torch.set_num_threads(threads)
    return record
