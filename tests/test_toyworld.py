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


def brute_force_joint(world, words, i, j):
    """P(x_i = a, x_j = b | every other word), by summing over every path of this length."""
    V = world.vocab_size
    joint = torch.zeros(V, V, dtype=torch.float64)
    for path, p in paths(world, len(words)):
        weight = p
        for t, s in enumerate(path):
            if t not in (i, j):
                weight *= world.emit[s, world.word_id[words[t]]].item()
        if weight:
            joint += weight * torch.outer(world.emit[path[i]], world.emit[path[j]])
    return joint / joint.sum()


def brute_force_posterior(world, words, i, j):
    """P(x_i = v | visible) with x_j also hidden: the row sums of the brute-force joint."""
    return brute_force_joint(world, words, i, j).sum(1)


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
    with pytest.raises(ValueError, match="no position"):  # a floor of 0 would read as perfect
        WORLD.bayes_loss(sentences, [[] for _ in sentences])


def test_bad_input():
    with pytest.raises(ValueError, match="not a word of the toy world"):
        WORLD.posterior(["the", "zebra", "."], [0])
    with pytest.raises(ValueError, match="cannot mask position 5 in a 3-token sentence"):
        WORLD.posterior(["the", "cat", "."], [5])
    with pytest.raises(ValueError, match="listed twice"):
        WORLD.posterior(["the", "cat", "sat", "."], [1, 1])
    with pytest.raises(ValueError, match="impossible"):
        WORLD.posterior(["cat", "the", "."], [0])


# ---------------------------------------------------------------------- less context, pairs

SHORT = ToyWorld(max_len=7)  # short enough to enumerate every sentence's path


def brute_force_left(world, words, i):
    """P(x_i | x_<i) over every sentence of every kept length, summing whole paths."""
    V = world.vocab_size
    out = torch.zeros(V, dtype=torch.float64)
    for length in range(i + 1, world.max_len + 1):
        for path, p in paths(world, length):
            weight = p
            for t in range(i):
                weight *= world.emit[path[t], world.word_id[words[t]]].item()
            out += weight * world.emit[path[i]]
    return out / out.sum()


@pytest.mark.parametrize(("words", "i"), [(["the", "small", "cat", "barked", "."], 2),
                                          (["a", "boy", "sat", "on", "the", "mat", "."], 5),
                                          (["the", "dog", "slept", "."], 0),
                                          (["my", "teacher", "read", "a", "book", "."], 3)])
def test_left_posterior_matches_brute_force(words, i):
    left = SHORT.posterior(words, [i], context="left")[0]
    assert torch.allclose(left, brute_force_left(SHORT, words, i), atol=1e-12)


def test_left_context_cannot_see_the_verb_and_none_sees_nothing():
    words = ["the", "small", "cat", "barked", "."]
    left = WORLD.posterior(words, [2], context="left")[0]
    assert left[WORLD.word_id["boy"]] > 0  # "barked" is to the right: boys stay possible
    assert left[WORLD.word_id["mat"]] == 0  # but an object cannot follow "the small"
    none = WORLD.posterior(words, [2, 3], context="none")
    assert torch.equal(none[0], none[1]) and torch.equal(none[0], WORLD.unigram())
    sentences = WORLD.sample(300, rng=9)
    counts = torch.zeros(WORLD.vocab_size, dtype=torch.float64)
    for s in sentences:
        for w in s:
            counts[WORLD.word_id[w]] += 1
    assert (counts / counts.sum() - WORLD.unigram()).abs().max() < 0.02  # sampled frequencies
    masks = [[len(s) // 2] for s in sentences]
    both, left_floor, no_floor = (WORLD.bayes_loss(sentences, masks, c)
                                  for c in ("both", "left", "none"))
    assert both < left_floor < no_floor < math.log(WORLD.vocab_size)


@pytest.mark.parametrize(("words", "i", "j"), [(["the", "small", "cat", "barked", "."], 2, 3),
                                               (["a", "boy", "sat", "on", "the", "mat", "."], 1, 5),
                                               (["the", "dog", "slept", "."], 2, 0)])
def test_pair_posterior_matches_brute_force(words, i, j):
    joint = SHORT.pair_posterior(words, i, j)
    lo, hi = sorted((i, j))
    assert torch.allclose(joint, brute_force_joint(SHORT, words, lo, hi), atol=1e-12)
    marginals = SHORT.posterior(words, [lo, hi])
    assert torch.allclose(joint.sum(1), marginals[0], atol=1e-12)
    assert torch.allclose(joint.sum(0), marginals[1], atol=1e-12)


def test_pair_information_is_large_for_noun_and_verb_and_zero_when_determined():
    words = ["the", "small", "cat", "barked", "."]
    assert WORLD.pair_information(words, 2, 3) > 0.1  # the noun decides the kind of verb
    # "the" and "small" hidden: two slots that barely constrain each other
    assert 0 <= WORLD.pair_information(words, 0, 3) < WORLD.pair_information(words, 2, 3)
    assert WORLD.pair_information(["the", "cat", "sat", "."], 3, 0) == pytest.approx(0, abs=1e-12)


def test_context_and_pair_bad_input():
    with pytest.raises(ValueError, match="context must be"):
        WORLD.posterior(["the", "cat", "."], [1], context="right")
    with pytest.raises(ValueError, match="must differ"):
        WORLD.pair_information(["the", "cat", "."], 1, 1)
    with pytest.raises(ValueError, match="cannot mask position 9"):
        WORLD.pair_posterior(["the", "cat", "."], 1, 9)


def test_landmarks_share_the_targets_and_the_vocabulary():
    sentences = WORLD.sample(40, rng=11)
    masks = [[1, len(s) - 2] for s in sentences]
    marks = WORLD.landmarks(sentences, masks)
    assert marks["uniform"] == math.log(WORLD.vocab_size)
    assert marks["floor"] < marks["unigram"] < marks["uniform"]
    assert marks["unigram"] == WORLD.bayes_loss(sentences, masks, context="none")


def test_compare_with_exact():
    from mlmlib.toyworld import compare_with_exact

    p = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    q = torch.tensor([[0.25, 0.5, 0.25], [0.5, 0.25, 0.0]], dtype=torch.float64)  # 0.25 lost
    out = compare_with_exact(p, q)
    assert out["kl"][0].item() == pytest.approx(0.5 * math.log(2))
    assert out["kl"][1].item() == pytest.approx(math.log(2))
    assert out["tv"].tolist() == pytest.approx([0.25, 0.5])
    assert out["impossible"].tolist() == pytest.approx([0.25, 0.5])
    same = compare_with_exact(p, p)
    assert all(v.abs().max() == 0 for v in same.values())
    with pytest.raises(ValueError, match="one shape"):
        compare_with_exact(p, q[:1])
    with pytest.raises(ValueError, match="negative"):
        compare_with_exact(p, -q)


# ---------------------------------------------------------------------- the slots' posterior


def brute_force_slots(world, words, masked, positions):
    """P(z_i = s | the words outside masked) for each i in positions, summing every path."""
    out = torch.zeros(len(positions), len(world.states), dtype=torch.float64)
    for path, p in paths(world, len(words)):
        weight = p
        for t, s in enumerate(path):
            if t not in masked:
                weight *= world.emit[s, world.word_id[words[t]]].item()
        for k, i in enumerate(positions):
            out[k, path[i]] += weight
    return out / out.sum(1, keepdim=True)


@pytest.mark.parametrize(
    ("words", "masked", "positions"),
    [
        (["the", "small", "cat", "barked", "."], [2, 3], [2, 3, 1, 4]),
        (["a", "boy", "sat", "on", "the", "mat", "."], [2, 5], [0, 2, 3, 5, 6]),
        (["the", "dog", "slept", "quietly", "."], [0, 3], [0, 1, 2, 3, 4]),
        (["my", "teacher", "read", "the", "book", "."], [1, 4], [1, 2, 4]),
        (["the", "old", "big", "dog", "sat", "."], [], [1, 2, 4]),
        (["the", "cat", "sat", "."], [1, 2], [2, 1]),
    ],
)
def test_slot_posterior_matches_brute_force(words, masked, positions):
    exact = WORLD.slot_posterior(words, masked, positions)
    assert exact.dtype == torch.float64 and exact.shape == (len(positions), len(WORLD.states))
    assert torch.allclose(exact, brute_force_slots(WORLD, words, masked, positions),
                          atol=1e-12, rtol=0)
    assert torch.allclose(exact.sum(1), torch.ones(len(positions), dtype=torch.float64))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_slots_times_emissions_is_the_word_posterior(seed):
    for words in WORLD.sample(10, rng=seed):
        masked = sorted({0, len(words) // 2, len(words) - 2})
        slots = WORLD.slot_posterior(words, masked)  # positions default to masked
        assert slots.shape == (len(masked), len(WORLD.states))
        assert torch.allclose(slots @ WORLD.emit, WORLD.posterior(words, masked),
                              atol=1e-15, rtol=0)


def test_slot_posterior_at_visible_positions_and_the_states_names():
    words = ["the", "small", "cat", "sat", "."]
    slots = WORLD.slot_posterior(words, [2], positions=[2, 3, 0, 4])
    names = [dict(zip(WORLD.states, row.tolist(), strict=True)) for row in slots]
    assert 0 < names[0]["animal"] < 1 and names[0]["animal"] + names[0]["person"] == \
        pytest.approx(1, abs=1e-12)  # "the small ___ sat": an animal or a person
    # "sat" is a verb of either kind; the hidden noun decides which, with the same odds
    assert names[1]["verb_i_animal"] == pytest.approx(names[0]["animal"], abs=1e-12)
    assert names[2]["det_s"] == 1 and names[3]["end"] == 1  # visible and determined
    seen = WORLD.slot_posterior(words, [], positions=[2, 3])
    assert seen[0, WORLD.states.index("animal")] == 1  # "cat" is an animal
    assert seen[1, WORLD.states.index("verb_i_animal")] == 1  # so "sat" is an animal's verb
    assert WORLD.slot_posterior(words, []).shape == (0, len(WORLD.states))
    assert WORLD.slot_posterior(words, [1], positions=[1, 1]).shape == (2, len(WORLD.states))


def test_slot_posterior_bad_input():
    words = ["the", "cat", "sat", "."]
    with pytest.raises(ValueError, match="positions: position 4 is outside the 4-token"):
        WORLD.slot_posterior(words, [1], positions=[4])
    with pytest.raises(ValueError, match="positions: position -1"):
        WORLD.slot_posterior(words, [1], positions=[-1])
    with pytest.raises(TypeError, match=r"positions\[0\] is float"):
        WORLD.slot_posterior(words, [1], positions=[1.0])
    with pytest.raises(TypeError, match="positions must be a list"):
        WORLD.slot_posterior(words, [1], positions=2)
    with pytest.raises(ValueError, match="cannot mask position 5 in a 4-token sentence"):
        WORLD.slot_posterior(words, [5])
    with pytest.raises(ValueError, match="listed twice"):
        WORLD.slot_posterior(words, [1, 1])
    with pytest.raises(ValueError, match="not a word of the toy world"):
        WORLD.slot_posterior(["the", "zebra", "."], [1])
    with pytest.raises(ValueError, match="impossible"):
        WORLD.slot_posterior(["cat", "the", "."], [0])
    with pytest.raises(TypeError, match="words"):
        WORLD.slot_posterior("the cat sat .", [1])


# ---------------------------------------------------------------------- span masks' floor


@pytest.mark.parametrize("rate", [0.15, 0.4])
def test_the_floor_of_span_masks_and_of_token_masks_over_the_same_sentences(rate):
    from mlmlib.masking import choose_positions, span_positions

    sentences = WORLD.sample(50, rng=12)
    g = torch.Generator().manual_seed(13)
    tokens = [choose_positions(len(s), rate, rule="bert", rng=g).tolist() for s in sentences]
    spans = [span_positions(len(s), len(t), rng=g).tolist() for s, t in zip(sentences, tokens,
                                                                             strict=True)]
    assert [len(m) for m in spans] == [len(m) for m in tokens]  # the same number of blanks
    assert spans != tokens
    for masks in (tokens, spans):
        floor = WORLD.bayes_loss(sentences, masks)
        assert math.isfinite(floor) and 0 < floor < math.log(WORLD.vocab_size)


def test_bayes_loss_without_reduction_gives_each_slot_in_order():
    sentences = WORLD.sample(30, rng=5)
    masks = [[0, len(s) - 2] if len(s) > 2 else [0] for s in sentences]
    slots = WORLD.bayes_loss(sentences, masks, reduction="none")
    assert slots.dtype == torch.float64 and len(slots) == sum(map(len, masks))
    assert abs(slots.mean().item() - WORLD.bayes_loss(sentences, masks)) < 1e-12
    first = WORLD.posterior(sentences[0], masks[0])[0, WORLD.word_id[sentences[0][0]]]
    assert abs(slots[0].item() + math.log(first)) < 1e-12  # sentence 0's first blank first
    with pytest.raises(ValueError, match="reduction"):
        WORLD.bayes_loss(sentences, masks, reduction="sum")
