"""The exact lab's benchmark runs (smoke settings) and its JSON holds what the chapter reads."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("80/10/10", "100% [MASK]")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    out = tmp_path_factory.mktemp("lab") / "lab.json"
    result = subprocess.run([sys.executable, "-m", "bench.bench_lab", "--smoke", "--json",
                             str(out)], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "mask rate" in result.stdout and "exact posterior" in result.stdout
    return json.loads(out.read_text())


def test_settings_and_seeds(lab):
    s = lab["settings"]
    assert lab["benchmark"] == "lab" and lab["smoke"] is True
    assert lab["wall_s"] > 0 and lab["machine"]["torch"]
    assert [r["rate"] for r in lab["mask_rate"]["rates"]] == s["rates"]
    assert math.isclose(lab["uniform_loss"], math.log(s["world_words"]))
    for entry in [*lab["mask_rate"]["rates"], *lab["protocol"]["models"].values(),
                  *lab["calibration"]["models"].values()]:
        assert [r["seed"] for r in entry["runs"]] == s["seeds"]


def test_floors(lab):
    rates = {r["rate"]: r for r in lab["mask_rate"]["rates"]}
    floors = [lab["mask_rate"]["floor_15"], *(r["floor_own"] for r in rates.values())]
    assert all(0 < f < lab["uniform_loss"] for f in floors)
    assert rates[0.8]["floor_own"] > rates[0.05]["floor_own"]  # more hidden, harder
    assert rates[0.15]["floor_own"] == lab["mask_rate"]["floor_15"]  # the same set
    assert lab["protocol"]["floor_mask"] == lab["mask_rate"]["floor_15"]


def test_mask_rate_runs(lab):
    floor_15 = lab["mask_rate"]["floor_15"]
    for entry in lab["mask_rate"]["rates"]:
        assert entry["slots_own"] >= lab["settings"]["n_eval"]  # at least one per sentence
        for run in entry["runs"]:
            assert math.isfinite(run["loss_15"]) and math.isfinite(run["loss_own"])
            assert math.isclose(run["gap_15"], run["loss_15"] / floor_15 - 1)
            assert math.isclose(run["gap_own"], run["loss_own"] / entry["floor_own"] - 1)
            assert 0 <= run["accuracy_15"] <= 1 and 0 <= run["accuracy_own"] <= 1
        u = entry["summary"]["loss_15"]
        assert u["min"] <= u["mean"] <= u["max"] and u["std"] >= 0


def test_protocol(lab):
    models = lab["protocol"]["models"]
    assert tuple(models) == KINDS
    for entry in models.values():
        for run in entry["runs"]:
            for how in ("mask", "true", "random"):
                assert math.isfinite(run[how]["loss"]) and 0 <= run[how]["accuracy"] <= 1
    # the 80/10/10 models are experiment 1's rate-0.15 models, not retrained
    rate_15 = next(r for r in lab["mask_rate"]["rates"] if r["rate"] == 0.15)
    for run, again in zip(rate_15["runs"], models["80/10/10"]["runs"], strict=True):
        assert math.isclose(run["loss_15"], again["mask"]["loss"], rel_tol=1e-6)


def test_calibration(lab):
    c = lab["calibration"]
    assert len(c["bin_edges"]) == lab["settings"]["bins"] + 1
    assert c["words"] == lab["settings"]["world_words"]
    for entry in c["models"].values():
        for run in entry["runs"]:
            assert run["kl"] >= 0 and 0 <= run["tv"] <= 1 and 0 <= run["special_mass"] < 1
            assert 0 <= run["ece"] <= 1 and 0 <= run["top1_ece"] <= 1
            rel = run["reliability"]
            assert sum(rel["count"]) == c["slots"] * c["words"]
            for q, p, n in zip(rel["mean_model"], rel["mean_exact"], rel["count"], strict=True):
                assert (q is None) == (n == 0)
                assert q is None or (0 <= q <= 1 and 0 <= p <= 1)
        worst = entry["worst"]
        assert len(worst) == lab["settings"]["worst"]
        assert [w["kl"] for w in worst] == sorted((w["kl"] for w in worst), reverse=True)
        for w in worst:
            assert "___" in w["sentence"] and len(w["model_top3"]) == len(w["exact_top3"]) == 3
