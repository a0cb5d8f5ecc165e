"""One training step by hand (mlmlib.byhand.step, mlmlib.plots.step, mlmlib.exercises.step).

The gradient ``p - onehot`` equals torch's autograd; the NumPy AdamW equals
``torch.optim.AdamW`` to 1e-12 in float64 over several steps (a changing learning rate,
weight decay on some weights only, the bias correction of the early steps), and through the
course's own optimizer on a MiniBert; nothing passed in is changed; bad input is a clear error.
The chapter's checkers accept the right answers, name each usual mistake and never raise on an
answer.
"""

import copy
import math
import re

import numpy as np
import pytest
import torch

from mlmlib.byhand import step
from mlmlib.constants import IGNORE_INDEX
from mlmlib.exercises import check_adamw_step, check_gap_prediction, check_score_gradient
from mlmlib.loss import mlm_loss
from mlmlib.model import BertConfig, MiniBert
from mlmlib.plots import alt_text, learning_rate_curve, train_and_held_out
from mlmlib.toyworld import ToyWorld
from mlmlib.train import Recipe, configure_optimizer

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


# ----------------------------------------------------------------------------- the gradient

@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_score_gradient_is_autograds(reduction):
    g = np.random.default_rng(0)
    scores = g.normal(0, 3, (6, 9))
    labels = np.array([0, 8, IGNORE_INDEX, 3, 3, IGNORE_INDEX])
    s = torch.tensor(scores, requires_grad=True)
    mlm_loss(s, torch.tensor(labels), reduction=reduction).backward()
    ours = step.score_gradient(scores, labels, reduction=reduction)
    assert ours.shape == scores.shape
    assert np.abs(ours - s.grad.numpy()).max() < 1e-12
    assert not ours[labels == IGNORE_INDEX].any()  # outside M: no gradient


def test_score_gradient_of_one_slot_is_p_minus_onehot_and_bounded():
    scores = [1000.0, 0.0, -3.0]  # a confident wrong guess when the truth is word 1
    grad = step.score_gradient(scores, 1)
    s = torch.tensor(scores, requires_grad=True)
    (-torch.log_softmax(s, 0)[1]).backward()
    assert np.abs(grad - s.grad.numpy()).max() < 1e-12
    assert grad[1] == pytest.approx(-1.0) and grad[0] == pytest.approx(1.0)
    assert np.isfinite(grad).all() and (np.abs(grad) <= 1).all()
    assert abs(grad.sum()) < 1e-12  # p sums to 1, onehot to 1
    assert step.score_gradient([[0.0, 0.0]], [IGNORE_INDEX], "mean").tolist() == [[0.0, 0.0]]


def test_the_models_own_loss_has_that_gradient_at_its_scores():
    config = BertConfig(vocab_size=20, hidden_size=8, num_layers=1, num_heads=2,
                        intermediate_size=16, max_position=6, dropout=0.0, attention_dropout=0.0)
    model = MiniBert(config, rng=0).double()
    ids = torch.randint(5, 20, (3, 6), generator=torch.Generator().manual_seed(0))
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[:, 2], labels[0, 4] = ids[:, 2], ids[0, 4]
    ids[:, 2] = 4
    logits, loss = model(ids, labels=labels)
    logits.retain_grad()
    loss.backward()
    truth = labels[labels != IGNORE_INDEX]
    ours = step.score_gradient(logits.detach().numpy(), truth.numpy(), reduction="mean")
    assert np.abs(ours - logits.grad.numpy()).max() < 1e-12


# ----------------------------------------------------------------------------- AdamW

def _named_params(g: np.random.Generator) -> dict[str, np.ndarray]:
    return {"matrix": g.normal(0, 1, (3, 4)), "bias": g.normal(0, 1, 4),
            "gain": g.normal(1, 0.1, 1)}


@pytest.mark.parametrize("fused", [None, False, True])
def test_adamw_step_is_torchs_over_several_steps(fused):
    g = np.random.default_rng(1)
    start = _named_params(g)
    params = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in start.items()}
    decay = {"matrix": 0.1, "bias": 0.0, "gain": 0.0}  # as the course: the matrices only
    betas, eps = (0.8, 0.99), 1e-6
    optimizer = torch.optim.AdamW(
        [{"params": [params["matrix"]], "weight_decay": 0.1},
         {"params": [params["bias"], params["gain"]], "weight_decay": 0.0}],
        lr=0.05, betas=betas, eps=eps, **({} if fused is None else {"fused": fused}))
    ours, state = start, None
    for k, lr in enumerate([0.01, 0.05, 0.03, 0.02, 0.001, 0.04]):  # a schedule
        grads = {name: g.normal(0, 10.0 ** (k - 3), v.shape) for name, v in start.items()}
        grads["bias"][0] = 0.0  # a weight without gradient: only eps keeps it finite
        for group in optimizer.param_groups:
            group["lr"] = lr
        for name, p in params.items():
            p.grad = torch.tensor(grads[name])
        optimizer.step()
        ours, state = step.adamw_step(ours, grads, state, lr=lr, betas=betas, eps=eps,
                                      weight_decay=decay)
        theirs = {name: p.detach().numpy() for name, p in params.items()}
        assert step.largest_difference(ours, theirs) < 1e-12, k
        assert state.step == k + 1
    assert np.abs(ours["matrix"] - start["matrix"]).max() > 1e-3  # it did move


def test_adamw_step_is_the_course_optimizers_on_a_mini_bert():
    config = BertConfig(vocab_size=25, hidden_size=8, num_layers=1, num_heads=2,
                        intermediate_size=16, max_position=6, dropout=0.0, attention_dropout=0.0)
    model = MiniBert(config, rng=3).double()
    optimizer, scheduler = configure_optimizer(model, Recipe(steps=6, warmup=2, lr=1e-2,
                                                             weight_decay=0.1))
    gen = torch.Generator().manual_seed(3)
    ours, state = step.parameters_of(model), None
    for _ in range(4):
        ids = torch.randint(5, 25, (4, 6), generator=gen)
        labels = torch.full_like(ids, IGNORE_INDEX)
        labels[:, 1] = ids[:, 1]
        ids[:, 1] = 4
        optimizer.zero_grad()
        model(ids, labels=labels).loss.backward()
        grads = step.parameters_of(model, grads=True)
        group = optimizer.param_groups[0]  # the matrices: the only ones decayed
        decay = {n: group["weight_decay"] if w.ndim >= 2 else 0.0 for n, w in ours.items()}
        ours, state = step.adamw_step(ours, grads, state, lr=group["lr"], betas=group["betas"],
                                      eps=group["eps"], weight_decay=decay)
        optimizer.step()
        scheduler.step()
        assert step.largest_difference(ours, step.parameters_of(model)) < 1e-12


def test_the_first_step_moves_each_weight_by_about_lr_against_its_gradient():
    w = {"w": np.array([0.5, -2.0, 3.0])}
    new, _ = step.adamw_step(w, {"w": np.array([1e-3, -40.0, 2.0])}, lr=0.1, weight_decay=0.0)
    assert np.allclose(new["w"] - w["w"], [-0.1, 0.1, -0.1], atol=1e-5)


def test_adamw_step_changes_nothing_it_is_given():
    g = np.random.default_rng(2)
    weights, grads = _named_params(g), _named_params(g)
    kept_w, kept_g = copy.deepcopy(weights), copy.deepcopy(grads)
    new, state = step.adamw_step(weights, grads, lr=0.1)
    kept_state = copy.deepcopy(state)
    _, later = step.adamw_step(new, grads, state, lr=0.1)
    for name in weights:
        assert np.array_equal(weights[name], kept_w[name])
        assert np.array_equal(grads[name], kept_g[name])
        assert np.array_equal(state.m[name], kept_state.m[name])
        assert np.array_equal(state.v[name], kept_state.v[name])
        new[name][...] = 0.0  # the results are new arrays, not views of the inputs
        assert np.array_equal(weights[name], kept_w[name])
    assert state.step == 1 and later.step == 2
    scores = np.array([[1.0, 2.0], [3.0, 0.0]])
    step.score_gradient(scores, [0, 1])
    assert scores.tolist() == [[1.0, 2.0], [3.0, 0.0]]


def test_parameters_of_copies_the_weights_and_the_gradients():
    model = MiniBert(BertConfig(vocab_size=12, hidden_size=4, num_layers=1, num_heads=1,
                                intermediate_size=8, max_position=4), rng=0)
    weights = step.parameters_of(model)
    assert set(weights) == {name for name, _ in model.named_parameters()}
    assert all(w.dtype == np.float64 for w in weights.values())
    with pytest.raises(ValueError, match=r"loss\.backward"):
        step.parameters_of(model, grads=True)
    weights["head_bias"][...] = 7.0
    assert not model.head_bias.detach().any()


def _refuses(call, error, *words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), (word, str(info.value))


W, G = {"w": np.ones(2)}, {"w": np.ones(2)}
BAD = [
    (lambda: step.adamw_step({"w": torch.ones(2)}, G, lr=0.1), TypeError, "no torch"),
    (lambda: step.adamw_step([1.0], G, lr=0.1), TypeError, "weights", "dict"),
    (lambda: step.adamw_step(W, {"v": np.ones(2)}, lr=0.1), ValueError, "grads", "missing"),
    (lambda: step.adamw_step(W, {"w": np.ones(3)}, lr=0.1), ValueError, "shape"),
    (lambda: step.adamw_step(W, {"w": [np.nan, 1.0]}, lr=0.1), ValueError, "grads['w']"),
    (lambda: step.adamw_step(W, G, lr=0), ValueError, "lr", "positive"),
    (lambda: step.adamw_step(W, G, lr=math.inf), ValueError, "lr"),
    (lambda: step.adamw_step(W, G, lr="0.1"), TypeError, "lr"),
    (lambda: step.adamw_step(W, G, lr=0.1, betas=0.9), TypeError, "betas"),
    (lambda: step.adamw_step(W, G, lr=0.1, betas=(0.9, 1.0)), ValueError, "betas[1]"),
    (lambda: step.adamw_step(W, G, lr=0.1, eps=0.0), ValueError, "eps"),
    (lambda: step.adamw_step(W, G, lr=0.1, weight_decay=-0.1), ValueError, "weight_decay"),
    (lambda: step.adamw_step(W, G, lr=0.1, weight_decay={"v": 0.1}), ValueError,
     "weight_decay", "missing"),
    (lambda: step.adamw_step(W, G, {"m": {}}, lr=0.1), TypeError, "state", "AdamWState"),
    (lambda: step.adamw_step(W, G, step.AdamWState(1, {"w": np.ones(3)}, {"w": np.ones(2)}),
                             lr=0.1), ValueError, "state.m"),
    (lambda: step.score_gradient(torch.ones(3), 0), TypeError, "no torch"),
    (lambda: step.score_gradient([1.0, 2.0], 2), ValueError, "targets", "outside"),
    (lambda: step.score_gradient([1.0, 2.0], 0.0), TypeError, "targets", "whole"),
    (lambda: step.score_gradient([[1.0, 2.0]], [0, 1]), ValueError, "targets", "one target"),
    (lambda: step.score_gradient(np.ones((2, 2, 2)), [0, 1]), ValueError, "scores", "(N, V)"),
    (lambda: step.score_gradient([], 0), ValueError, "scores"),
    (lambda: step.score_gradient([1.0, 2.0], 0, reduction="avg"), ValueError, "reduction"),
    (lambda: step.largest_difference(W, {"v": np.ones(2)}), ValueError, "theirs", "missing"),
    (lambda: step.parameters_of("model"), TypeError, "model"),
    (lambda: step.overfitting_run("world"), TypeError, "ToyWorld"),
    (lambda: step.overfitting_run(ToyWorld(), steps=0), ValueError, "steps"),
    (lambda: learning_rate_curve([0.1, -0.1]), ValueError, "rates"),
    (lambda: learning_rate_curve([0.1, 0.2], warmup=3), ValueError, "warmup"),
    (lambda: train_and_held_out([0, 1], [1.0], [1.0, 2.0]), ValueError, "as many"),
    (lambda: train_and_held_out([1, 0], [1.0, 2.0], [1.0, 2.0]), ValueError, "increase"),
    (lambda: train_and_held_out([0], [1.0], [1.0], lines={"x": "a"}), TypeError, "line"),
]


@pytest.mark.parametrize(("call", "error", "words"), [(c, e, w) for c, e, *w in BAD])
def test_bad_input_is_a_clear_error(call, error, words):
    _refuses(call, error, *words)


def test_an_overfitting_run_is_seeded_and_recorded():
    world = ToyWorld()
    a = step.overfitting_run(world, n_train=4, n_held_out=20, steps=12, every=5, seed=3)
    b = step.overfitting_run(world, n_train=4, n_held_out=20, steps=12, every=5, seed=3)
    assert a == b
    assert a["step"] == [0, 5, 10, 12]
    assert len(a["train"]) == len(a["held_out"]) == 4
    assert a["train"][-1] < a["train"][0]  # it learns its four sentences
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        step.overfitting_run(world, n_train=2, n_held_out=5, steps=1, every=1)
        assert torch.get_num_threads() == 2  # the caller's threads come back
    finally:
        torch.set_num_threads(threads)


def test_the_figures_say_what_they_draw():
    fig = learning_rate_curve([0.5, 1.0, 0.75], warmup=2)
    assert "peak 1 at step 2" in alt_text(fig) and "warm-up at step 2" in alt_text(fig)
    fig = train_and_held_out([0, 10, 20], [5.0, 3.0, 1.0], [5.0, 4.0, 4.5])
    assert "lowest 4 at step 10" in alt_text(fig)


# ----------------------------------------------------------------------------- the checkers

SCORES, TARGET = [1001.0, 1003.0, 998.5, 1002.0], 0


def _p(scores):
    s = np.asarray(scores, float)
    e = np.exp(s - s.max())
    return e / e.sum()


def _ends_with(verdict, value: float, decimals: int) -> None:
    """A "Correct" line ends with its answer (the number the exercise asks for)."""
    last = NUMBER.findall(str(verdict))[-1]
    assert float(last) == round(value, decimals), (str(verdict), value)


def test_score_gradient_checker_accepts_the_right_answer():
    p = _p(SCORES)
    right = p - np.eye(4)[TARGET]
    for answer in (right, right.tolist(), torch.tensor(right), right.round(4)):
        verdict = check_score_gradient(answer, SCORES, TARGET)
        assert verdict and str(verdict).startswith("Correct"), verdict
    _ends_with(check_score_gradient(right, SCORES, TARGET), right[TARGET], 4)


@pytest.mark.parametrize(("answer", "hint"), [
    (lambda p, onehot: p, "probabilities p themselves"),
    (lambda p, onehot: onehot - p, "sign is flipped"),
    (lambda p, onehot: -onehot / p[TARGET], "with respect to P"),
    (lambda p, onehot: np.where(onehot == 1, p - 1, 0.0), "only the truth's entry"),
    (lambda p, onehot: np.full(4, np.nan), "overflows"),
    (lambda p, onehot: (p - onehot)[:3], "expected 4 numbers"),
    (lambda p, onehot: (p - onehot)[TARGET], "expected 4 numbers"),
    (lambda p, onehot: p - onehot + 0.01, "your entry for word"),
])
def test_score_gradient_checker_names_the_mistakes(answer, hint):
    p = _p(SCORES)
    verdict = check_score_gradient(answer(p, np.eye(4)[TARGET]), SCORES, TARGET)
    assert not verdict and hint in str(verdict), verdict


def test_a_nan_without_an_overflow_is_not_blamed_on_the_softmax():
    verdict = check_score_gradient([np.nan, 0.0], [1.0, 2.0], 0)
    assert not verdict and "overflow" not in str(verdict) and "nan or inf" in str(verdict)


FIRST = {"weight": 1.5, "grad": -0.04, "lr": 0.01, "weight_decay": 0.1}


def _first_step(w, g, lr, wd, corrected=True, b1=0.9, b2=0.999, eps=1e-6):
    m, v = (1 - b1) * g, (1 - b2) * g * g
    if corrected:
        m, v = m / (1 - b1), v / (1 - b2)
    return w - lr * wd * w - lr * m / (math.sqrt(v) + eps)


def test_adamw_checker_accepts_the_right_answer_and_agrees_with_the_library():
    new, _ = step.adamw_step({"w": [1.5]}, {"w": [-0.04]}, lr=0.01, eps=1e-6,
                             weight_decay=0.1)
    verdict = check_adamw_step(new["w"][0], **FIRST)
    assert verdict and str(verdict).startswith("Correct"), verdict
    _ends_with(verdict, new["w"][0], 6)
    assert check_adamw_step(np.float32(new["w"][0]), **FIRST)


@pytest.mark.parametrize(("answer", "hint"), [
    (_first_step(1.5, -0.04, 0.01, 0.1, corrected=False), "bias correction"),
    (_first_step(1.5, -0.04, 0.01, 0.0), "weight decay is missing"),
    (_first_step(1.5, -0.04 + 0.1 * 1.5, 0.01, 0.0), "L2"),
    (_first_step(1.5, -0.04, 0.01, 0.0) - 0.1 * 1.5, "missing its learning rate"),
    (1.5 - 0.01 * 0.1 * 1.5 - 0.01, "along the gradient"),
    (1.5 - 0.01 * 0.1 * 1.5 + 0.01 * 0.04, "plain gradient descent"),
    (_first_step(1.5, -0.04, 0.01, 0.1) - 1.5, "the change of the weight"),
    (1.7, "is not"),
    (None, "Not answered yet"),
])
def test_adamw_checker_names_the_mistakes(answer, hint):
    verdict = check_adamw_step(answer, **FIRST)
    assert not verdict and hint in str(verdict), verdict


def test_gap_checker():
    right = check_gap_prediction("larger", gap=2.5, new_gap=3.125)
    assert right and str(right).startswith("Correct")
    _ends_with(right, 3.125, 4)
    assert check_gap_prediction(" Smaller ", gap=2.5, new_gap=1.0)
    wrong = check_gap_prediction("smaller", gap=2.5, new_gap=3.125)
    assert not wrong and "came out larger" in str(wrong)
    assert "tie" in str(check_gap_prediction("larger", gap=2.5, new_gap=2.5))
    for junk in (None, "bigger", 3, ["larger"]):
        assert "Not answered yet" in str(check_gap_prediction(junk, gap=2.5, new_gap=3.0))
    seeds = check_gap_prediction("larger", gap=[1.0, 2.0, 3.0], new_gap=[1.5, 2.5, 3.5])
    assert seeds and "every one of 3 seeds" in str(seeds)
    _ends_with(seeds, 3.5, 4)
    mixed = check_gap_prediction("larger", gap=[1.0, 2.0], new_gap=[1.5, 1.5])
    assert not mixed and "disagree" in str(mixed) and "1 of 2" in str(mixed)
    assert "tie" in str(check_gap_prediction("smaller", gap=[1.0, 2.0], new_gap=[0.5, 2.0]))


def test_checkers_never_raise_on_junk_answers():
    for junk in (None, "0.5", object(), {"a": 1}, True, [[1.0, 2.0]], [1.0, "a"], math.nan):
        assert not check_score_gradient(junk, SCORES, TARGET)
        assert not check_adamw_step(junk, **FIRST)
        assert not check_gap_prediction(junk, gap=1.0, new_gap=2.0)


def test_checkers_refuse_bad_settings():
    _refuses(lambda: check_score_gradient([0.5, -0.5], [1.0, 2.0], 2), ValueError, "target")
    _refuses(lambda: check_score_gradient([0.5], "ab", 0), TypeError, "scores")
    _refuses(lambda: check_adamw_step(1.0, 1.0, 0.1, lr=0.0, weight_decay=0.1), ValueError, "lr")
    _refuses(lambda: check_adamw_step(1.0, 1.0, 0.1, lr=0.1, weight_decay=-1), ValueError,
             "weight_decay")
    _refuses(lambda: check_gap_prediction("larger", gap=math.nan, new_gap=1.0), ValueError, "gap")
    _refuses(lambda: check_gap_prediction("larger", gap=[1.0, 2.0], new_gap=[1.0]), ValueError,
             "one value per seed")
