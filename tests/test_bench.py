"""Smoke runs of the benchmarks: the scripts work. Their speed is measured by running them,
never asserted in a test."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.parametrize("script", ["bench_train.py", "bench_train.py --recipe",
                                    "bench_masking.py", "bench_book.py", "bench_floor.py",
                                    "bench_encoder.py", "profile_step.py"])
def test_benchmark_smoke_run(script):
    name, *flags = script.split()
    result = subprocess.run([sys.executable, str(ROOT / "bench" / name), "--smoke", *flags],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.strip()
