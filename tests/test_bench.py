"""Smoke runs of the benchmarks: each runs as a module (``python -m bench.<name> --smoke``) and
writes JSON of the shape the chapters read.

The chapters read the stored results in ``bench/results/`` (the performance appendix, the
encoder chapter, the exact lab). A smoke run's JSON must hold every key of the stored result it
stands for, with values of the same kind, all the way down (a list's items are compared with
the first item; keys that number things - seeds, variants - are compared where both have
them; ``None``, which marks a target not reached, matches anything). So a benchmark that
stops writing what a chapter reads fails here, not in the chapter. Speed is measured by
running the scripts, never asserted in a test.
"""

import json
import numbers
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# a smoke run, and the stored result the chapters read that it stands for
SMOKE = {"bench_train": "train-reference-cpu-fp32.json",
         "bench_train --recipe": "train-recipe-cpu.json",
         "bench_masking": "masking.json", "bench_book": "book.json", "bench_floor": "floor.json",
         "bench_encoder": "encoder.json", "profile_step": "profile-reference-cpu-fp32.json",
         "profile_toy": "profile-toy-cpu.json"}


def _counting(keys) -> bool:
    """Keys that number things (seeds, rates, variants) rather than name fields."""
    return all(re.fullmatch(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?%?", k) for k in keys)  # 0.15, 1e-07


def mismatches(stored, smoke, where="") -> list[str]:
    """Where ``smoke`` lacks a key of ``stored`` or holds another kind of value."""
    if stored is None or smoke is None:
        return []
    if isinstance(stored, dict):
        if not isinstance(smoke, dict):
            return [f"{where or 'the result'}: a {type(smoke).__name__}, not a dict"]
        keys = set(stored) & set(smoke) if _counting(stored) else set(stored)
        missing = [f"{where}.{k}: missing" for k in sorted(keys - set(smoke))]
        return missing + [m for k in sorted(keys & set(smoke))
                          for m in mismatches(stored[k], smoke[k], f"{where}.{k}")]
    if isinstance(stored, list):
        if not isinstance(smoke, list):
            return [f"{where}: a {type(smoke).__name__}, not a list"]
        return mismatches(stored[0], smoke[0], f"{where}[0]") if stored and smoke else []
    if isinstance(stored, numbers.Real) and not isinstance(stored, bool):
        ok = isinstance(smoke, numbers.Real) and not isinstance(smoke, bool)
    else:
        ok = isinstance(smoke, type(stored))
    return [] if ok else [f"{where}: {type(smoke).__name__}, stored {type(stored).__name__}"]


def test_the_shape_check_can_fail():
    stored = {"a": 1.5, "runs": [{"x": "s", "y": None}], "seeds": {"0": 1, "1": 2}}
    assert not mismatches(stored, {"a": 2, "runs": [{"x": "t", "y": 3}], "seeds": {"0": 5}})
    assert mismatches(stored, {"runs": [{"x": "t"}], "seeds": {}}) == [".a: missing",
                                                                      ".runs[0].y: missing"]
    assert mismatches(stored, {"a": "1.5", "runs": [], "seeds": {}}) == [".a: str, stored float"]
    # keys that number things (weight decays, rates) may differ between a smoke run and a full one
    assert not mismatches({"kl": {"1e-07": 0.1, "0.15": 0.2}}, {"kl": {"0": 0.3}})
    assert mismatches({"kl": {"1e-07": 0.1, "weight": 0.2}}, {"kl": {"0": 0.3}}) == [
        ".kl.1e-07: missing", ".kl.weight: missing"]


@pytest.mark.slow
@pytest.mark.parametrize("script", list(SMOKE))
def test_benchmark_smoke_run_writes_what_the_chapters_read(script, tmp_path):
    name, *flags = script.split()
    out = tmp_path / "result.json"
    result = subprocess.run([sys.executable, "-m", f"bench.{name}", "--smoke", *flags,
                             "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.strip()
    stored = json.loads((RESULTS / SMOKE[script]).read_text())
    found = mismatches(stored, json.loads(out.read_text()))
    assert not found, f"{script}: {found[:8]}"


def test_gap_and_se_keeps_each_sentence_together():
    """The standard error of a set's gap is taken over its sentences, by hand here."""
    import torch

    from bench.bench_lab import gap_and_se
    from mlmlib.constants import IGNORE_INDEX
    from mlmlib.corpora import Batch
    from mlmlib.model import BertConfig
    from mlmlib.train import build_model

    g = torch.Generator().manual_seed(0)
    model = build_model(BertConfig(vocab_size=12, hidden_size=8, num_layers=1, num_heads=1,
                                   intermediate_size=16, max_position=6), seed=0)
    ids = torch.randint(4, 12, (4, 6), generator=g)
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[0, [1, 2]], labels[1, 3], labels[2, [1, 4]], labels[3, [2, 3, 5]] = 5, 6, 7, 8
    ev = Batch(ids, torch.ones_like(ids), torch.zeros_like(ids), labels)
    exact = -torch.rand(8, generator=g, dtype=torch.float64)  # each target's log P, row-major
    model.eval()
    with torch.no_grad():
        logp = model(ids, attention_mask=torch.ones_like(ids)).logits.double().log_softmax(-1)
    rows, cols = (labels != IGNORE_INDEX).nonzero().T
    gaps = exact - logp[rows, cols, labels[rows, cols]]
    mean = gaps.mean()

    def by_hand(sentence):  # the ratio estimate over the sentences' summed gaps
        sums = torch.zeros(max(sentence) + 1, dtype=torch.float64).index_add_(
            0, torch.tensor(sentence), gaps)
        counts = torch.bincount(torch.tensor(sentence)).double()
        n = len(sums)
        return ((((sums - mean * counts) ** 2).sum() / (n * (n - 1))).sqrt() / counts.mean()).item()

    gap, se = gap_and_se(model, ev, exact)
    assert gap == pytest.approx(mean.item()) and se == pytest.approx(by_hand(rows.tolist()))
    # rows 0 and 2 one sentence (two masks of it), rows 1 and 3 another
    gap2, se2 = gap_and_se(model, ev, exact, groups=torch.tensor([0, 1, 0, 1]))
    assert gap2 == gap and se2 == pytest.approx(by_hand([0, 0, 1, 0, 0, 1, 1, 1])) and se2 != se
    with pytest.raises(ValueError, match="two sentences"):
        gap_and_se(model, ev, exact, groups=torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="exact log probabilities"):
        gap_and_se(model, ev, exact[:3])
    # the caller's own measure of the gap must agree: else targets and floors are misaligned
    assert gap_and_se(model, ev, exact, expected=mean.item() + 5e-4) == (gap, se)
    with pytest.raises(RuntimeError, match="misaligned"):
        gap_and_se(model, ev, exact, expected=mean.item() + 0.01)
