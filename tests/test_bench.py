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
