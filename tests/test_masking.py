"""Tests for mlmlib.masking: exact counts, the statistics of 80/10/10, special tokens, bad input."""

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mlmlib.masking import (
    IGNORE_INDEX,
    bert_count,
    choose_positions,
    is_continuation,
    mask_positions,
    mask_tokens,
    mean_run_length,
    span_positions,
)

# A small vocabulary: ids 0..4 are special, 5..99 ordinary.
PAD, UNK, CLS, SEP, MASK = range(5)
SPECIAL = [PAD, UNK, CLS, SEP, MASK]
V = 100


def batch(b=4, t=12, seed=0, pad_from=None):
    """Rows of [CLS] w w ... w [SEP], with padding from column pad_from on."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (b, t), generator=g)
    ids[:, 0] = CLS
    ids[:, -1] = SEP
    if pad_from is not None:
        ids[:, pad_from - 1] = SEP
        ids[:, pad_from:] = PAD
    return ids


def corrupt(ids, **kw):
    kw.setdefault("rng", 0)
    return mask_tokens(ids, vocab_size=V, mask_token_id=MASK, special_ids=SPECIAL, **kw)


# ----------------------------------------------------------------------------- mask_positions


def test_mask_positions_on_words_and_ids():
    words = ["the", "cat", "sat", "on", "the", "mat", "."]
    out, labels = mask_positions(words, [1, 5])
    assert out == ["the", "[MASK]", "sat", "on", "the", "[MASK]", "."]
    assert labels == [None, "cat", None, None, None, "mat", None]
    assert words[1] == "cat"  # the caller's list is unchanged
    ids = torch.tensor([7, 8, 9])
    out, labels = mask_positions(ids, [2], mask_token=MASK)
    assert out.tolist() == [7, 8, MASK] and labels.tolist() == [IGNORE_INDEX, IGNORE_INDEX, 9]
    assert ids.tolist() == [7, 8, 9]


def test_mask_positions_errors():
    seven = ["the", "cat", "sat", "on", "the", "mat", "."]
    with pytest.raises(ValueError, match="cannot mask position 99 in a 7-token sentence"):
        mask_positions(seven, [99])
    with pytest.raises(ValueError, match="position 2 is listed twice"):
        mask_positions(seven, [2, 2])
    with pytest.raises(ValueError, match="cannot mask position -1"):
        mask_positions(seven, [-1])
    with pytest.raises(TypeError, match="whole number"):
        mask_positions(seven, [1.0])


# ----------------------------------------------------------------------------- choosing M


@pytest.mark.parametrize("rate", [0.1, 0.15, 0.2, 0.3, 0.5, 1.0])
def test_bert_count_is_googles_formula(rate):
    for n in range(1, 600):
        assert bert_count(n, rate) == min(n, max(1, round(n * rate)))
        assert bert_count(n, rate, max_predictions=20) == min(n, 20, max(1, round(n * rate)))
    assert bert_count(0, rate) == 0


def test_bert_rule_gives_exactly_the_stated_count_per_row():
    ids = batch(b=64, t=40, pad_from=None)
    lengths = torch.randint(3, 41, (64,), generator=torch.Generator().manual_seed(5))
    for r, n in enumerate(lengths.tolist()):  # rows of different real lengths
        ids[r, n - 1] = SEP
        ids[r, n:] = PAD
    out = corrupt(ids, rule="bert", rng=11)
    for r, n in enumerate(lengths.tolist()):
        candidates = n - 2  # minus [CLS] and [SEP]
        assert int((out.labels[r] != IGNORE_INDEX).sum()) == bert_count(candidates)
    capped = corrupt(batch(b=8, t=300), rule="bert", max_predictions=20)
    assert ((capped.labels != IGNORE_INDEX).sum(dim=1) == 20).all()


def test_choose_positions_rules():
    assert choose_positions(4, rule="bert", rng=0).numel() == 1
    for seed in range(20):
        chosen = choose_positions([3, 7, 9, 20], rate=0.5, rng=seed)
        assert chosen.numel() == 2 and set(chosen.tolist()) <= {3, 7, 9, 20}
        assert chosen.tolist() == sorted(chosen.tolist())
    assert choose_positions(0, rng=0).numel() == 0
    assert choose_positions(5, rate=1.0, rule="bernoulli", rng=0).tolist() == [0, 1, 2, 3, 4]
    assert choose_positions(5, rate=0.0, rule="bernoulli", rng=0).numel() == 0


def test_bernoulli_empties_a_four_token_sentence_about_half_the_time():
    g = torch.Generator().manual_seed(123)
    trials = 20000
    empty = sum(choose_positions(4, 0.15, rule="bernoulli", rng=g).numel() == 0
                for _ in range(trials))
    p = 0.85**4  # 0.522
    sd = math.sqrt(p * (1 - p) / trials)
    assert abs(empty / trials - p) < 4 * sd


def test_bernoulli_rate_on_a_batch():
    ids = batch(b=200, t=52)
    out = corrupt(ids, rng=9)
    n = 200 * 50
    chosen = int((out.labels != IGNORE_INDEX).sum())
    assert abs(chosen - 0.15 * n) < 4 * math.sqrt(n * 0.15 * 0.85)


# ----------------------------------------------------------------------------- 80/10/10


def test_shares_of_mask_random_unchanged_are_80_10_10():
    ids = batch(b=400, t=130, seed=1)
    out = corrupt(ids, rng=2)
    chosen = out.labels != IGNORE_INDEX
    m = int(chosen.sum())
    masked = int((chosen & (out.input_ids == MASK)).sum())
    changed = int((chosen & (out.input_ids != MASK) & (out.input_ids != ids)).sum())
    same = int((chosen & (out.input_ids == ids)).sum())
    # a random replacement can draw the original word (1 in 95): it then counts as unchanged
    p_random_changed = 0.1 * (1 - 1 / 95)
    shares = [(masked, 0.8), (changed, p_random_changed), (same, 1 - 0.8 - p_random_changed)]
    for count, p in shares:
        assert abs(count - p * m) < 4 * math.sqrt(m * p * (1 - p)), (count, p, m)
    assert masked + changed + same == m


def test_configurable_shares():
    ids = batch(b=100, t=100, seed=3)
    out = corrupt(ids, rng=4, mask_prob=1.0, random_prob=0.0)
    chosen = out.labels != IGNORE_INDEX
    assert (out.input_ids[chosen] == MASK).all()
    assert torch.equal(out.input_ids[~chosen], ids[~chosen])
    keep = corrupt(ids, rng=4, mask_prob=0.0, random_prob=0.0)
    assert torch.equal(keep.input_ids, ids) and (keep.labels != IGNORE_INDEX).any()


def test_special_tokens_never_chosen_nor_inserted():
    ids = batch(b=300, t=20, pad_from=14, seed=6)
    out = corrupt(ids, rng=7, rate=0.5, mask_prob=0.0, random_prob=1.0)
    special = torch.isin(ids, torch.tensor(SPECIAL))
    assert (out.labels[special] == IGNORE_INDEX).all()
    assert torch.equal(out.input_ids[special], ids[special])
    replaced = out.labels != IGNORE_INDEX
    assert replaced.any()
    assert not torch.isin(out.input_ids[replaced], torch.tensor(SPECIAL)).any()


def test_labels_hold_the_original_token():
    ids = batch(b=50, t=30, seed=8)
    out = corrupt(ids, rng=10)
    chosen = out.labels != IGNORE_INDEX
    assert torch.equal(out.labels[chosen], ids[chosen])
    assert out.labels.dtype == torch.long


def test_the_callers_tensor_is_never_changed_and_results_are_new():
    ids = batch()
    before = ids.clone()
    out = corrupt(ids, rate=0.9)
    assert torch.equal(ids, before)
    assert out.input_ids.data_ptr() != ids.data_ptr()


def test_same_seed_same_numbers_and_generators_advance():
    ids = batch(b=8, t=64)
    a, b = corrupt(ids, rng=42), corrupt(ids, rng=42)
    assert torch.equal(a.input_ids, b.input_ids) and torch.equal(a.labels, b.labels)
    g = torch.Generator().manual_seed(42)
    first, second = corrupt(ids, rng=g), corrupt(ids, rng=g)
    assert torch.equal(first.input_ids, a.input_ids)
    assert not torch.equal(first.labels, second.labels)


def test_one_dimensional_input_and_small_dtypes():
    ids = torch.tensor([CLS, 10, 11, 12, 13, SEP], dtype=torch.int32)
    out = corrupt(ids, rule="bert", rate=0.5)
    assert out.input_ids.shape == ids.shape and out.input_ids.dtype == torch.int32
    assert int((out.labels != IGNORE_INDEX).sum()) == 2


# ----------------------------------------------------------------------------- whole words


def test_whole_word_masking_takes_every_piece_of_a_word():
    pieces = ["[CLS]", "the", "em", "##bed", "##ding", "of", "to", "##ken", "##s", "[SEP]"]
    cont = torch.tensor(is_continuation(pieces))
    ids = torch.tensor([CLS, 10, 11, 12, 13, 14, 15, 16, 17, SEP])
    word = torch.tensor([-1, 0, 1, 1, 1, 2, 3, 3, 3, -1])
    for seed in range(50):
        out = corrupt(ids, rng=seed, rate=0.3, continuation=cont)
        chosen = out.labels != IGNORE_INDEX
        for w in range(4):
            in_word = chosen[word == w]
            assert in_word.all() or not in_word.any()
        assert not chosen[0] and not chosen[-1]
    exact = corrupt(ids.repeat(10, 1), rng=1, rule="bert", rate=0.5,
                    continuation=cont.repeat(10, 1))
    starts = (exact.labels != IGNORE_INDEX) & ~cont
    assert (starts.sum(dim=1) == 2).all()  # round(4 words * 0.5)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kw", "error", "message"),
    [
        ({"rate": 1.5}, ValueError, "rate must be a number in [0, 1], got 1.5"),
        ({"rate": -0.1}, ValueError, "rate must be a number in [0, 1]"),
        ({"rate": float("nan")}, ValueError, "rate must be a number in [0, 1]"),
        ({"mask_prob": 0.8, "random_prob": 0.3}, ValueError, "more than 1"),
        ({"random_prob": 2}, ValueError, "random_prob must be a number in [0, 1]"),
        ({"rule": "roberta"}, ValueError, "rule must be one of"),
        ({"rng": None}, TypeError, "seed (int) or a torch.Generator"),
        ({"max_predictions": 0, "rule": "bert"}, ValueError,
         "max_predictions (or None) must be a positive whole number"),
        ({"continuation": torch.zeros(3, dtype=torch.bool)}, ValueError, "continuation has shape"),
    ],
)
def test_bad_settings(kw, error, message):
    with pytest.raises(error) as info:
        corrupt(batch(), **kw)
    assert message in str(info.value)


def test_bad_ids():
    with pytest.raises(TypeError, match="integer token ids"):
        corrupt(torch.zeros(2, 3))
    with pytest.raises(TypeError, match="torch tensor"):
        corrupt([[1, 2, 3]])
    with pytest.raises(ValueError, match=r"input_ids\[0, 1\] = 100 is outside the vocabulary"):
        corrupt(torch.tensor([[5, 100]]))
    with pytest.raises(ValueError, match=r"shape \(T,\) or \(B, T\)"):
        corrupt(torch.zeros(1, 2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size must be a positive whole number, got 0"):
        mask_tokens(torch.tensor([0]), vocab_size=0, mask_token_id=0, special_ids=[0], rng=0)
    with pytest.raises(ValueError, match="must be one of special_ids"):
        mask_tokens(batch(), vocab_size=V, mask_token_id=MASK, special_ids=[PAD], rng=0)
    with pytest.raises(ValueError, match="candidates: position 1 is listed twice"):
        choose_positions([1, 1], rng=0)


# ----------------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 5), t=st.integers(2, 40), rate=st.floats(0, 1),
       rule=st.sampled_from(["bert", "bernoulli"]), seed=st.integers(0, 2**31 - 1))
def test_masking_invariants(b, t, rate, rule, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (b, t), generator=g)  # specials anywhere, including padding
    out = corrupt(ids, rng=seed, rate=rate, rule=rule)
    chosen = out.labels != IGNORE_INDEX
    special = torch.isin(ids, torch.tensor(SPECIAL))
    assert not (chosen & special).any()
    assert torch.equal(out.input_ids[~chosen], ids[~chosen])
    assert torch.equal(out.labels[chosen], ids[chosen])
    assert not torch.isin(out.input_ids[chosen & (out.input_ids != MASK)],
                          torch.tensor(SPECIAL)).any()
    if rule == "bert":
        n = (~special).sum(dim=1)
        expected = torch.tensor([bert_count(int(k), rate) for k in n])
        assert torch.equal(chosen.sum(dim=1), expected)


def test_special_ids_may_be_tensor_scalars():
    ids = batch()
    as_ints = corrupt(ids, rng=5)
    as_tensors = mask_tokens(ids, vocab_size=V, mask_token_id=MASK,
                             special_ids=list(torch.tensor(SPECIAL)), rng=5)
    assert torch.equal(as_ints.input_ids, as_tensors.input_ids)
    assert torch.equal(as_ints.labels, as_tensors.labels)


# ----------------------------------------------------------------------------- span masks


def runs(positions):
    """The lengths of the runs of consecutive positions in a sorted list."""
    out = []
    for k, pos in enumerate(positions):
        if k and pos == positions[k - 1] + 1:
            out[-1] += 1
        else:
            out.append(1)
    return out


def test_span_positions_gives_exactly_count_distinct_sorted_positions():
    for seed in range(20):
        for n, count in [(1, 1), (7, 3), (20, 6), (50, 50), (200, 30), (10, 0)]:
            out = span_positions(n, count, rng=seed)
            assert out.dtype == torch.long and out.shape == (count,)
            assert out.unique().tolist() == out.tolist()  # distinct and sorted
            assert all(0 <= pos < n for pos in out.tolist())
    pool = [2, 3, 5, 8, 9, 10, 11, 20]
    out = span_positions(pool, 5, rng=0, max_span=3)
    assert len(out) == 5 and set(out.tolist()) <= set(pool)
    assert span_positions(torch.tensor(pool[::-1]), 5, rng=0, max_span=3).tolist() == out.tolist()


def test_span_positions_is_seeded():
    a, b = span_positions(100, 20, rng=3), span_positions(100, 20, rng=3)
    assert torch.equal(a, b) and not torch.equal(a, span_positions(100, 20, rng=4))
    g = torch.Generator().manual_seed(3)
    assert torch.equal(span_positions(100, 20, rng=g), a)  # a seed is a fresh generator
    assert not torch.equal(span_positions(100, 20, rng=g), a)  # which advances


def test_spans_are_contiguous_with_the_cut_geometric_mean_length():
    p, max_span = 0.2, 10
    weights = [p * (1 - p) ** (k - 1) for k in range(1, max_span + 1)]
    mean = sum(k * w for k, w in enumerate(weights, 1)) / sum(weights)
    assert mean == pytest.approx(3.8, abs=0.01)  # SpanBERT's mean span length
    g = torch.Generator().manual_seed(0)
    lengths = [r for _ in range(100) for r in runs(span_positions(2000, 100, rng=g).tolist())]
    assert max(lengths) <= 2 * max_span  # two spans may touch; most do not
    assert abs(sum(lengths) / len(lengths) - mean) < 0.15
    single = [r for _ in range(100) for r in runs(span_positions(2000, 100, rng=g, p=1).tolist())]
    assert sum(single) / len(single) < 1.1  # p = 1: single tokens, which rarely touch
    flat = [r for _ in range(20) for r in runs(span_positions(2000, 100, rng=g, p=1e-9,
                                                                max_span=4).tolist())]
    assert 2.3 < sum(flat) / len(flat) < 2.8  # p near 0: lengths 1 to 4 equally likely, mean 2.5
    assert span_positions(10, 10, rng=0, p=0.5).tolist() == list(range(10))  # a full row


@pytest.mark.parametrize(
    ("args", "kw", "error", "message"),
    [
        ((5, 6), {}, ValueError, "count = 6 is more than the 5 candidates"),
        (([1, 4], 3), {}, ValueError, "count = 3 is more than the 2 candidates"),
        ((5, -1), {}, ValueError, "count must be a whole number, not negative, got -1"),
        ((5, 2.0), {}, TypeError, "count must be a whole number"),
        ((5, True), {}, TypeError, "count must be a whole number"),
        ((5.0, 2), {}, TypeError, "candidates (a count n, or positions) must be a whole number"),
        (([1, 1, 2], 2), {}, ValueError, "candidates: position 1 is listed twice"),
        (("abc", 2), {}, TypeError, "candidates"),
        ((5, 2), {"p": 0}, ValueError, "p must be a number in (0, 1], got 0"),
        ((5, 2), {"p": 1.5}, ValueError, "p must be a number in (0, 1], got 1.5"),
        ((5, 2), {"p": float("nan")}, ValueError, "p must be a number in (0, 1]"),
        ((5, 2), {"p": "0.2"}, TypeError, "p must be a number"),
        ((5, 2), {"max_span": 0}, ValueError, "max_span must be a positive whole number"),
        ((5, 2), {"max_span": 2.5}, TypeError, "max_span must be a positive whole number"),
        ((5, 2), {"rng": None}, TypeError, "seed (int) or a torch.Generator"),
    ],
)
def test_span_positions_bad_input(args, kw, error, message):
    kw.setdefault("rng", 0)
    with pytest.raises(error) as info:
        span_positions(*args, **kw)
    assert message in str(info.value)


# ----------------------------------------------------------------------------- run lengths

def test_mean_run_length_counts_runs_by_hand():
    assert mean_run_length([[1, 2, 3, 7], [0], [4, 5]]) == 7 / 4
    assert mean_run_length([[3, 1, 2]]) == 3.0  # order does not matter: one run of three
    assert mean_run_length([torch.tensor([0, 2, 4]), []]) == 1.0  # tensors; an empty mask
    # spans that touch read as one run, as the model sees them
    assert mean_run_length([[0, 1, 2, 3]]) == 4.0
    # against every mask of a 6-word sentence, counted by brute force over the string form
    for k in range(1, 7):
        for mask in itertools.combinations(range(6), k):
            text = "".join("x" if i in mask else "." for i in range(6))
            runs = [r for r in text.split(".") if r]
            assert mean_run_length([list(mask)]) == k / len(runs)


@pytest.mark.parametrize(("masks", "error", "words"), [
    ([[], []], ValueError, "no hidden position"),
    ([[1, 1]], ValueError, "listed twice"),
    ([[-1]], ValueError, "negative"),
    ([[0.5]], TypeError, "whole numbers"),
])
def test_mean_run_length_refuses_bad_masks(masks, error, words):
    with pytest.raises(error, match=words):
        mean_run_length(masks)
