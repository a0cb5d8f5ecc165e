"""The linear probe: at the floor on the targets' own log-probabilities, above it on noise."""

import math

import numpy as np
import pytest
import torch

from mlmlib.probe import Probe, ProbeScore, fit_probe
from mlmlib.toyworld import ToyWorld

WORLD = ToyWorld()
NAN = float("nan")


def slot_targets(n_sentences, seed):
    """The exact slot posteriors of two blanks per sampled sentence: (rows, S)."""
    rows = [WORLD.slot_posterior(s, sorted({1, len(s) // 2}))
            for s in WORLD.sample(n_sentences, rng=seed)]
    return torch.cat(rows)


TARGETS = slot_targets(200, seed=0)  # about 400 rows, 14 slots
TRAIN, TEST = slice(0, 250), slice(250, None)


def test_a_probe_on_the_posteriors_own_log_probabilities_reaches_the_floor():
    features = TARGETS.clamp_min(1e-12).log()  # log 0 would not be a number
    probe = fit_probe(features[TRAIN], TARGETS[TRAIN], rng=0)
    assert isinstance(probe, Probe) and probe.weight.shape == (14, 14)
    assert probe.weight.dtype == probe.bias.dtype == torch.float64
    score = probe.score(features[TEST], TARGETS[TEST])  # rows it did not see
    assert isinstance(score, ProbeScore)
    assert score.entropy > 0.05  # the targets are not one-hot: the floor is not 0
    assert 0 <= score.kl < 1e-3
    assert score.cross_entropy == pytest.approx(score.entropy + score.kl, abs=1e-12)
    log_q = probe.log_probs(features[TEST])
    assert log_q.shape == TARGETS[TEST].shape
    assert torch.allclose(log_q.exp().sum(1), torch.ones(len(log_q), dtype=torch.float64))


def test_a_probe_on_random_features_stays_clearly_above_the_floor():
    noise = torch.randn(len(TARGETS), 8, generator=torch.Generator().manual_seed(1),
                        dtype=torch.float64)
    probe = fit_probe(noise[TRAIN], TARGETS[TRAIN], rng=0, weight_decay=1e-3)
    score = probe.score(noise[TEST], TARGETS[TEST])
    assert score.kl > 0.5
    # and no better than the best constant guess: the targets' mean distribution
    mean = TARGETS[TRAIN].mean(0)
    constant = -(TARGETS[TEST] * mean.clamp_min(1e-12).log()).sum(1).mean().item()
    assert score.cross_entropy > constant - 0.05


def test_the_score_by_hand():
    probe = Probe(torch.zeros(3, 2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64))
    targets = torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=torch.float64)
    score = probe.score(torch.ones(2, 3), targets)  # a uniform guess: log 2 per row
    assert score.cross_entropy == pytest.approx(math.log(2))
    assert score.entropy == pytest.approx(0.5 * math.log(2))  # 0 log 0 = 0 in the first row
    assert score.kl == pytest.approx(0.5 * math.log(2))


def test_the_probe_is_seeded_and_leaves_its_input_alone():
    features = TARGETS.clamp_min(1e-12).log()
    before_x, before_q = features.clone(), TARGETS.clone()
    a = fit_probe(features[TRAIN], TARGETS[TRAIN], rng=3, weight_decay=1e-4)
    b = fit_probe(features[TRAIN], TARGETS[TRAIN], rng=torch.Generator().manual_seed(3),
                  weight_decay=1e-4)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)
    c = fit_probe(features[TRAIN], TARGETS[TRAIN], rng=4, weight_decay=1e-4)
    assert not torch.equal(a.weight, c.weight)  # another start, the same convex problem:
    assert c.score(features[TEST], TARGETS[TEST]).kl == pytest.approx(
        a.score(features[TEST], TARGETS[TEST]).kl, abs=1e-4)  # the same fit, nearly
    assert torch.equal(features, before_x) and torch.equal(TARGETS, before_q)
    with torch.no_grad():  # a caller's no_grad does not stop the fit
        d = fit_probe(features[TRAIN], TARGETS[TRAIN], rng=3, weight_decay=1e-4)
    assert torch.equal(a.weight, d.weight)
    # lists, arrays and float32 tensors are read as float64
    e = fit_probe(features[TRAIN].numpy(), TARGETS[TRAIN].tolist(), rng=3, weight_decay=1e-4)
    assert torch.equal(a.weight, e.weight)


X = torch.zeros(4, 3)
Q = torch.full((4, 2), 0.5)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: fit_probe(X, Q[:3], rng=0), ValueError,
         "one row each: 4 rows of features but 3 of targets"),
        (lambda: fit_probe(X[0], Q, rng=0), ValueError, "features must be 2-D"),
        (lambda: fit_probe(X, Q[:, 0], rng=0), ValueError, "targets must be 2-D"),
        (lambda: fit_probe(X[:0], Q[:0], rng=0), ValueError, "features is empty"),
        (lambda: fit_probe(X, torch.full((4, 2), 0.4), rng=0), ValueError,
         "row 0 sums to 0.8"),
        (lambda: fit_probe(X, torch.tensor([[1.5, -0.5]] * 4), rng=0), ValueError,
         "targets must be numbers in [0, 1]"),
        (lambda: fit_probe(X, torch.tensor([[NAN, 1.0]] * 4), rng=0), ValueError,
         "targets[0, 0] is nan"),
        (lambda: fit_probe(torch.tensor([[0.0, NAN, 1.0]] * 4), Q, rng=0), ValueError,
         "features[0, 1] is nan"),
        (lambda: fit_probe(torch.full((4, 3), -math.inf), Q, rng=0), ValueError,
         "features must be finite numbers"),
        (lambda: fit_probe("abc", Q, rng=0), TypeError,
         "features must be finite numbers (a list or an array), got str"),
        (lambda: fit_probe(X, np.array([["a", "b"]] * 4), rng=0), TypeError,
         "targets must be numbers in [0, 1] (a list or an array)"),
        (lambda: fit_probe(X.bool(), Q, rng=0), TypeError, "dtype torch.bool"),
        (lambda: fit_probe(X, Q, rng=None), TypeError, "rng must be a seed"),
        (lambda: fit_probe(X, Q, rng=0, weight_decay=-1), ValueError,
         "weight_decay must be a finite number, not negative"),
        (lambda: fit_probe(X, Q, rng=0, steps=0), ValueError, "steps must be a positive"),
        (lambda: fit_probe(X, Q, rng=0, steps=1.5), TypeError, "steps must be a positive"),
        (lambda: fit_probe(X, Q, rng=0).score(torch.zeros(4, 5), Q), ValueError,
         "features have 5 columns, but the probe was fitted on 3"),
        (lambda: fit_probe(X, Q, rng=0).score(X, torch.full((4, 3), 1 / 3)), ValueError,
         "targets have 3 columns, but the probe gives 2"),
        (lambda: fit_probe(X, Q, rng=0).score(X, Q[:2]), ValueError, "4 rows of features"),
    ],
)
def test_bad_input(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)
