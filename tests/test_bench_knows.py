"""The four benchmarks of *What the model knows* run (smoke settings) and their JSON holds what
the chapter reads: the probe (``bench_probe``), memorisation (``bench_memorisation``), spans
(``bench_spans``) and the scaling law (``bench_scaling``).

Each script's smoke run is checked for its own invariants (the same targets give the same
floor at every layer, a shared run is not trained again, a curve ends where the final score
is), and, once the full run's JSON is stored in ``bench/results/``, for holding every key of
it with values of the same kind (``test_bench.mismatches``).
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_bench import mismatches

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
NAMES = {"bench_probe": "probe", "bench_memorisation": "memorisation",
         "bench_spans": "spans", "bench_scaling": "scaling"}


def smoke(tmp_path_factory, script: str) -> dict:
    out = tmp_path_factory.mktemp(NAMES[script]) / f"{NAMES[script]}.json"
    result = subprocess.run([sys.executable, "-m", f"bench.{script}", "--smoke", "--json",
                             str(out)], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "wall time" in result.stdout
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every script's smoke result, run once for the module."""
    return {script: smoke(tmp_path_factory, script) for script in NAMES}


def _seeds(entry: dict, seeds: list[int]) -> None:
    assert [r["seed"] for r in entry["runs"]] == seeds
    for u in entry["summary"].values():
        for s in (u.values() if "mean" not in u else [u]):
            assert s["min"] <= s["mean"] <= s["max"] and s["std"] >= 0


@pytest.mark.parametrize("script", list(NAMES))
def test_smoke_json_has_the_stored_results_shape(results, script):
    result = results[script]
    assert result["benchmark"] == NAMES[script] and result["smoke"] is True
    assert result["wall_s"] > 0 and result["machine"]["torch"]
    stored = RESULTS / f"{NAMES[script]}.json"
    if not stored.exists():
        pytest.skip(f"{stored.relative_to(ROOT)} is not stored yet: the full run "
                    f"(python -m bench.{script}) writes it; until then only the smoke run's "
                    "own content is checked")
    found = mismatches(json.loads(stored.read_text()), result)
    assert not found, f"{script}: {found[:8]}"


def test_probe(results):
    r = results["bench_probe"]
    s = r["settings"]
    assert s["layers"] == ["embeddings", "block_1", "head_transform"]  # the recipe: one block
    assert len(s["slots"]) == 14
    assert [e["seed"] for e in r["eval"]["runs"]] == s["seeds"]
    assert 0 < r["eval"]["floor"] < math.log(206)
    tasks = {"masked": ("slots", "control", "neighbours"), "visible": ("slots", "control")}
    for kind in ("masked", "visible"):
        rows = r["rows"][kind]
        assert rows["fit"] > 0 and rows["held_out"] > 0
        assert 0 <= rows["unseen_held_out"] <= rows["held_out"]
        assert 0 <= rows["uncertain_held_out"] <= rows["held_out"]
        assert set(r["probes"]["trained"][kind]) == set(tasks[kind])
        for task in tasks[kind]:
            const = r["constant"][kind][task]
            for model in ("trained", "untrained"):
                entry = r["probes"][model][kind][task]
                assert list(entry) == s["layers"]
                for layer in s["layers"]:
                    _seeds(entry[layer], s["seeds"])
                    for run in entry[layer]["runs"]:
                        assert run["kl"] == pytest.approx(run["cross_entropy"] - run["entropy"])
                        assert run["kl"] > -1e-9 and run["fit_kl"] > -1e-9
                        # the same held-out targets at every layer, model and seed: one floor
                        assert run["entropy"] == pytest.approx(const["entropy"], abs=1e-12)
    assert r["rows"]["masked"]["neighbours_types"] > 0
    assert 0 <= r["rows"]["masked"]["neighbours_unseen_held_out"] <= r["rows"]["masked"]["held_out"]
    # the uncertain blanks' KL is recorded for the real task at blanks, and only there
    uncertain = r["rows"]["masked"]["uncertain_held_out"] > 0
    for model in ("trained", "untrained"):
        for run in r["probes"][model]["masked"]["slots"]["block_1"]["runs"]:
            assert (run["uncertain_kl"] is not None) == uncertain
        assert "uncertain_kl" not in r["probes"][model]["masked"]["control"]["block_1"]["runs"][0]
    # the surface readers: scored on the same held-out blanks, so with the same floor
    assert list(r["surface"]) == ["position", "neighbours_1", "neighbours_2", "neighbours_3",
                                  "all_words"]
    for entry in r["surface"].values():
        assert entry["kl"] > -1e-9
        assert entry["entropy"] == pytest.approx(r["constant"]["masked"]["slots"]["entropy"],
                                                 abs=1e-12)
    assert r["surface"]["neighbours_1"]["offsets"] == [-1, 1]
    # the block fitted as the readers are, for both models, each seed choosing among DECAYS
    assert list(r["block_like_readers"]) == ["trained", "untrained"]
    for runs in r["block_like_readers"].values():
        assert [run["seed"] for run in runs] == s["seeds"]
        for run in runs:
            assert list(run["validation_kl"]) == [f"{d:g}" for d in s["decays"]]
            assert run["validation_kl"][f"{run['weight_decay']:g}"] == min(
                run["validation_kl"].values())
            assert run["entropy"] == pytest.approx(
                r["constant"]["masked"]["slots"]["entropy"], abs=1e-12)
    # each reader but the reader of every word, fitted again on one further draw per seed;
    # the k-th seed's block is fitted on the k-th draw: the pairs the chapter compares
    for name, entry in r["surface"].items():
        if name == "all_words":
            assert "draws" not in entry
            continue
        runs = entry["draws"]["runs"]
        assert len(runs) == len(s["seeds"]) and runs[0]["kl"] == entry["kl"]
        assert [run["surface_seed"] for run in runs] == [
            s["surface_seed"] + s["draw_step"] * k for k in range(len(s["seeds"]))]
        assert all(run["kl"] > -1e-9 for run in runs)
        for model_runs in r["block_like_readers"].values():
            assert [run["surface_seed"] for run in model_runs] == [
                run["surface_seed"] for run in runs]
    # a blank's slot is less settled than a visible word's
    assert r["constant"]["masked"]["slots"]["entropy"] > r["constant"]["visible"]["slots"][
        "entropy"]


def test_memorisation(results):
    r = results["bench_memorisation"]
    s = r["settings"]
    steps = r["steps"]
    assert steps[0] == 0 and steps == sorted(steps)
    uniform = math.log(206)
    assert all(0 < f < uniform for f in r["floors"].values())
    assert list(r["regimes"]) == ["static", "duplicated", "dynamic"]
    seen = {regime: [run["floor_seen"] for run in entry["runs"]]
            for regime, entry in r["regimes"].items()}
    assert seen["dynamic"] == seen["static"]  # scored on static's masks
    for entry in r["regimes"].values():
        _seeds(entry, s["seeds"])
        for run in entry["runs"]:
            for key in ("train_loss", "seen", "fresh", "eval"):
                assert len(run[key]) == len(steps)
            assert run["train_loss"][0] is None and None not in run["train_loss"][1:]
            assert run["final"]["seen_gap"] == pytest.approx(run["seen"][-1] - run["floor_seen"])
            assert run["final"]["eval_gap"] == pytest.approx(run["eval"][-1] - r["floors"]["eval"])
            assert 0 < run["floor_seen"] < uniform and run["slots_seen"] > 0
            for name in ("seen", "fresh", "eval"):  # each set's noise: a spread over blanks
                assert 0 < run["final"][f"{name}_se"] < 1
    for static, dup in zip(r["regimes"]["static"]["runs"], r["regimes"]["duplicated"]["runs"],
                           strict=True):
        assert dup["slots_seen"] > static["slots_seen"]  # ten sets of blanks, not one


def test_spans(results):
    r = results["bench_spans"]
    test = r["test"]
    assert test["token"]["slots"] == test["span"]["slots"]  # the same count per sentence
    assert test["span"]["mean_run"] > test["token"]["mean_run"] >= 1
    assert all(0 < t["floor"] < r["uniform_loss"] for t in test.values())
    for entry in r["models"].values():
        _seeds(entry, r["settings"]["seeds"])
        for run in entry["runs"]:
            for kind in ("token", "span"):
                assert run[kind]["gap"] == pytest.approx(run[kind]["loss"] - test[kind]["floor"])
                assert 0 <= run[kind]["accuracy"] <= 1
                assert 0 < run[kind]["se"] < 0.5  # the test set's noise, far below a loss
                curve = run["curves"][kind]
                assert len(curve) == len(r["steps"])
                assert curve[-1] == pytest.approx(run[kind]["loss"], rel=1e-6)
    other = {"token": "span", "span": "token"}
    for test, pair in r["pairs"].items():
        # sentence by sentence in float64, the same as the two models' gaps in float32
        gaps = {k: [run[test]["gap"] for run in r["models"][k]["runs"]] for k in other}
        assert pair["other_minus_own"] == pytest.approx(
            [b - a for a, b in zip(gaps[test], gaps[other[test]], strict=True)], abs=1e-3)
        assert len(pair["se"]) == len(r["settings"]["seeds"])
        # a difference's spread over sentences is at most the sum of the two models' spreads
        for se, a, b in zip(pair["se"], r["models"][test]["runs"], r["models"][other[test]]["runs"],
                            strict=True):
            assert 0 < se <= a[test]["se"] + b[test]["se"] + 1e-9
        assert 0 < pair["shared_se"] <= max(pair["se"])  # the mean over seeds is no noisier


def test_scaling(results):
    r = results["bench_scaling"]
    s = r["settings"]
    assert [m["width"] for m in r["models"]] == s["widths"]
    assert [d["n_train"] for d in r["data"]] == s["n_trains"]
    sizes = [m["parameters"] for m in r["models"]]
    assert sizes == sorted(sizes) and all(
        0 < m["non_embedding"] < m["parameters"] for m in r["models"])
    for point in [*r["models"], *r["data"]]:
        _seeds(point, s["seeds"])
        for run in point["runs"]:
            assert len(run["curve"]) == len(run["train_curve"]) == len(r["steps"])
            assert run["curve"][-1] == run["eval_loss"]
            assert run["excess"] == pytest.approx(run["eval_loss"] - r["floor"])
            # the evaluation set's noise: a spread over its blanks, far smaller than a loss
            assert 0 < run["gap_se"] < 0.5 and "gap_mean" not in run
    shared = next(d for d in r["data"] if d["n_train"] == r["models"][0]["n_train"])
    model = next(m for m in r["models"] if m["width"] == s["data_width"])
    assert shared["runs"] == model["runs"]  # the same runs, not trained again
