"""The toy world's exact posterior against brute-force enumeration, and its loss floor."""

import math

import pytest
import torch

from mlmlib.toyworld import ToyWorld

WORLD = ToyWorld()


def paths(world, length):
    """Every state sequence of this length with positive probability (depth-first)."""
    out = []

    def extend(path, p):
        if len(path) == length:
            if world.stop[path[-1]] > 0:
                out.append((path, p * world.stop[path[-1]].item()))
            return
        for s in range(len(world.states)):
            q = (world.start[s] if not path else world.trans[path[-1], s]).item()
            if q > 0:
                extend([*path, s], p * q)

    extend([], 1.0)
    return out


def brute_force_posterior(world, words, i, j):
    """P(x_i = v | visible) with x_j also hidden, summing over all paths and all words at j."""
    V = world.vocab_size
    joint = torch.zeros(V, V, dtype=torch.float64)  # (v at i, w at j)
    for path, p in paths(world, len(words)):
        weight = p
        for t, s in enumerate(path):
            if t not in (i, j):
                weight *= world.emit[s, world.word_id[words[t]]].item()
        if weight:
            joint += weight * torch.outer(world.emit[path[i]], world.emit[path[j]])
    marginal = joint.sum(1)
    return marginal / marginal.sum()


@pytest.mark.parametrize(
    ("words", "i", "j"),
    [
        (["the", "small", "cat", "barked", "."], 2, 3),
        (["a", "boy", "sat", "on", "the", "mat", "."], 2, 5),
        (["the", "dog", "slept", "quietly", "."], 0, 3),
        (["my", "teacher", "read", "the", "book", "."], 1, 4),
    ],
)
def test_posterior_matches_brute_force(words, i, j):
    exact = WORLD.posterior(words, [i, j])[0]
    assert torch.allclose(exact, brute_force_posterior(WORLD, words, i, j), atol=1e-12)


def test_posterior_is_a_distribution_that_uses_both_sides():
    post = WORLD.posterior(["the", "small", "cat", "barked", "."], [2])[0]
    assert math.isclose(post.sum().item(), 1.0)
    animals = {"cat", "dog", "bird"}
    assert all(post[WORLD.word_id[w]] > 0 for w in animals)
    assert post[WORLD.word_id["boy"]] == 0  # boys do not bark
    either = WORLD.posterior(["the", "small", "cat", "sat", "."], [2])[0]
    assert either[WORLD.word_id["boy"]] > 0  # but they do sit


def test_sampling_is_seeded_and_every_sample_is_possible():
    a, b = WORLD.sample(50, rng=3), WORLD.sample(50, rng=3)
    assert a == b and a != WORLD.sample(50, rng=4)
    for words in a:
        assert words[-1] == "." and len(words) <= WORLD.max_len
        post = WORLD.posterior(words, [0, len(words) // 2])
        truth = [WORLD.word_id[words[0]], WORLD.word_id[words[len(words) // 2]]]
        assert (post[[0, 1], truth] > 0).all()


def test_bayes_loss_is_the_mean_over_slots_and_below_uniform():
    sentences = WORLD.sample(20, rng=5)
    masks = [[1] for _ in sentences]
    floor = WORLD.bayes_loss(sentences, masks)
    by_hand = -sum(math.log(WORLD.posterior(s, [1])[0, WORLD.word_id[s[1]]].item())
                   for s in sentences) / len(sentences)
    assert math.isclose(floor, by_hand, rel_tol=1e-12)
    assert 0 < floor < math.log(WORLD.vocab_size)
    assert WORLD.bayes_loss(sentences, [[] for _ in sentences]) == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="not a word of the toy world"):
        WORLD.posterior(["the", "zebra", "."], [0])
    with pytest.raises(ValueError, match="cannot mask position 5 in a 3-token sentence"):
        WORLD.posterior(["the", "cat", "."], [5])
    with pytest.raises(ValueError, match="listed twice"):
        WORLD.posterior(["the", "cat", "sat", "."], [1, 1])
    with pytest.raises(ValueError, match="impossible"):
        WORLD.posterior(["cat", "the", "."], [0])
