#!/usr/bin/env bash
# bench/gpu_check.sh - what the README promises on a GPU, checked on one (about 9 minutes).
#
# On a machine with an NVIDIA GPU, PyTorch (a CUDA build) and the packages of constraints.txt
# (transformers, pytest; pytest-xdist if present), from the repository's root:
#
#     bash bench/gpu_check.sh            # JSON and a log into bench/results/
#     bash bench/gpu_check.sh DIR        # ... copied into DIR too, each as soon as it is written
#
# On a lent GPU machine (no network; its Python has torch, transformers and pytest, but no
# Jupyter, ipywidgets or perhaps matplotlib): first `make gpu-wheels` here, which downloads
# the missing wheels into .gpu-wheels/ (git-ignored, about 44 MiB), then carry that folder
# with the working tree: the run tool's call is
#
#     run(command='bash bench/gpu_check.sh "$OUT"', carry=[".gpu-wheels"], timeout_s=580)
#
# It runs, each under its own time limit, and goes on when one fails:
#   0. the wheels, when .gpu-wheels/ is here: pip install --no-index of nbclient, nbformat,
#      ipykernel, jupyter_client, ipywidgets (and what they need), and of matplotlib and tqdm
#      only where this Python lacks them; never torch, numpy or CUDA (make gpu-wheels leaves
#      them out). mlmlib itself comes from the clone (PYTHONPATH, below), installed (pip -e,
#      no dependencies) only if it cannot be imported;
#   1. tests/test_cuda.py: the model, losses, masking, the trainer (device choice, bf16
#      autocast, resume), the Hugging Face round trip and the command line alone and under
#      torchrun (DistributedDataParallel with NCCL), each on the GPU against the CPU;
#   2. beside 1, the library's own test suites with the GPU visible (wherever a test leaves the
#      device to "auto", it trains on the GPU);
#   3. beside 1 and 2, the four training chapters executed on the GPU, side by side
#      (bench/gpu_chapters.py: nbclient, kernel python3 = this Python, into temporary copies),
#      and a few of their printed numbers checked by thresholds (nbval's exact comparison
#      does not hold on a GPU); the JSON bench/results/gpu-chapters.json, and the executed
#      copies in DIR/gpu-chapters/;
#   4. bench_train.py --device cuda --dtype bf16 against Hugging Face's BertForMaskedLM (alone
#      on the machine: they are timings): BERT-base's shape at batch 256, as it is and under
#      torch.compile, 3 separate processes each (useful MFU, with the roof measured and the
#      published peak on the performance page); the reference shape as it is (3 processes)
#      and with CUDA graphs (--compile reduce-overhead, 2 processes);
#   5. between them, bench_floor.py --device cuda: the toy world's recipe to within 2% and 1%
#      of its exact floor, beside the previous recipe and Hugging Face's defaults, 3 separate
#      processes of one seed each (alone).
# Then bench/results/gpu-check.json says what passed, with the machine and the seconds each took.
# The exit status is 0 only when every part passed. Nothing here is needed by `make test`.
#
# The budget: GPU_CHECK_BUDGET seconds in all (default 530; the run tool allows 9 minutes):
# about 20 s to start and install, at most 200 s for 1-3 side by side (the chapters 180), about
# 3 minutes for 4, at most 2 for 5. Each part's limit shrinks to what is left of the budget (a
# part with less than 20 s left is not started: exit 125), so the summary is always written.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
COPY=${1:-}
PY=${PYTHON:-python3}
RESULTS=bench/results
mkdir -p "$RESULTS"
LOG=$RESULTS/gpu-check.log
: >"$LOG"
BUDGET=${GPU_CHECK_BUDGET:-530}
BEGAN=$(date +%s)
RESERVE=15  # seconds kept for the summary at the end
WHEELS=$ROOT/.gpu-wheels  # make gpu-wheels
GPU_SITE=${TMPDIR:-/tmp}/gpu-check-site  # the wheels' home where this Python's is read-only
CHAPTERS_OUT=$(mktemp -d)  # the chapters' executed copies
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export TOKENIZERS_PARALLELISM=false
STEPS=$(mktemp)
rm -f "$RESULTS/gpu-chapters.json"  # written again by part 3; never an older run's

copy() {  # copy the named result files into $COPY as soon as they exist
    [ -n "$COPY" ] || return 0
    mkdir -p "$COPY"
    for f in "$@"; do [ -f "$f" ] && cp "$f" "$COPY/"; done
    return 0
}

part() {  # part NAME LIMIT_SECONDS COMMAND...: run it, log it, record status and seconds
    local name=$1 limit=$2 start rc left
    shift 2
    left=$((BUDGET - RESERVE - 10 - ($(date +%s) - BEGAN)))  # 10: timeout's --kill-after
    if [ "$left" -lt 20 ]; then
        echo "=== $name: not started, ${BUDGET} s budget spent" | tee -a "$LOG"
        printf '%s\t%s\t%s\n' "$name" 125 0 >>"$STEPS"
        return 0
    fi
    [ "$limit" -le "$left" ] || limit=$left
    start=$(date +%s)
    echo "=== $name (limit ${limit} s): $*" | tee -a "$LOG"
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
    rc=${PIPESTATUS[0]}
    echo "=== $name: exit $rc in $(($(date +%s) - start)) s" | tee -a "$LOG"
    printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - start))" >>"$STEPS"
    copy "$LOG"
}

install_wheels() {  # part 0: what .gpu-wheels holds and this Python lacks; no network
    local pip=("$PY" -m pip) into=() wheel rc=0
    if ! "$PY" -m pip --version >/dev/null 2>&1; then  # a venv made without pip
        wheel=$(ls "$WHEELS"/pip-*.whl 2>/dev/null | head -n 1)
        [ -n "$wheel" ] || { echo "gpu_check: no pip, and no pip wheel in $WHEELS"; return 1; }
        pip=("$PY" "$wheel/pip")  # pip runs from its own wheel
    fi
    if [ ! -w "$("$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" ]; then
        into=(--target "$GPU_SITE")  # on PYTHONPATH after this part
        echo "gpu_check: site-packages is read-only: installing into $GPU_SITE"
    fi
    local install=("${pip[@]}" install --quiet --disable-pip-version-check --no-input --no-index
                   --find-links "$WHEELS" "${into[@]}")
    "${install[@]}" nbclient nbformat ipykernel jupyter_client ipywidgets || rc=1
    if ! "$PY" -c "import matplotlib, tqdm" 2>/dev/null; then  # their numpy: this Python's
        "${install[@]}" --no-deps matplotlib contourpy cycler fonttools kiwisolver pillow \
            pyparsing python-dateutil six packaging tqdm || rc=1
    fi
    if ! "$PY" -c "import mlmlib" 2>/dev/null; then  # PYTHONPATH has the clone: not expected
        "${pip[@]}" install --quiet --no-deps --no-build-isolation -e "$ROOT" || rc=1
    fi
    PYTHONPATH="$PYTHONPATH:$GPU_SITE" "$PY" -c "
import importlib.metadata as m, mlmlib
print('installed:', ', '.join(f'{n} {m.version(n)}' for n in ('nbclient', 'ipykernel',
      'ipywidgets', 'matplotlib', 'tqdm')), '| mlmlib from', mlmlib.__file__)" || rc=1
    return $rc
}
export -f install_wheels
export PY WHEELS GPU_SITE ROOT

if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_check: no CUDA GPU here (torch.cuda.is_available() is False); nothing to check" >&2
    exit 2
fi
{ nvidia-smi -L 2>/dev/null; "$PY" -c "import torch, transformers; print('torch', \
torch.__version__, 'cuda', torch.version.cuda, '|', torch.cuda.get_device_name(0), '|', \
'transformers', transformers.__version__)"; } | tee -a "$LOG"

if [ -d "$WHEELS" ]; then
    part "install the wheels" 60 bash -c install_wheels
    [ -d "$GPU_SITE" ] && export PYTHONPATH="$PYTHONPATH:$GPU_SITE"
else
    echo "gpu_check: no .gpu-wheels/ (make gpu-wheels, then carry it): nothing installed" \
        | tee -a "$LOG"
fi

XDIST=()
if "$PY" -c "import xdist" 2>/dev/null; then XDIST=(-n 12); fi

missing=$("$PY" -c "
import importlib.util
need = ['torch', 'numpy', 'matplotlib', 'tqdm', 'transformers', 'pytest',
        'hypothesis',  # pyproject.toml's dependencies and what the tests import
        'nbclient', 'nbformat', 'ipykernel', 'ipywidgets']  # the chapters, test_bad_input
print(' '.join(n for n in need if importlib.util.find_spec(n) is None))")
if [ -n "$missing" ]; then  # said at the start, not found out by an import error half-way
    echo "gpu_check: missing $missing: install them with pip install -c constraints.txt" \
        "$missing, or carry make gpu-wheels' .gpu-wheels (tests and chapters that import" \
        "them will fail)" | tee -a "$LOG"
fi

# 1-3 share the GPU (it has room: the chapters' models are small) and the 16 CPU cores: side
# by side, none of them a timing; the chapters' kernels get 2 threads each
part "tests on CUDA" 180 "$PY" -m pytest -q -p no:cacheprovider -rs tests/test_cuda.py \
    --junitxml="$RESULTS/gpu-tests-cuda.xml" &
part "training chapters" 180 "$PY" -m bench.gpu_chapters --expect-device cuda --threads 2 \
    --out "$CHAPTERS_OUT" --json "$RESULTS/gpu-chapters.json" &
part "library tests, GPU visible" 200 "$PY" -m pytest -q -p no:cacheprovider "${XDIST[@]}" \
    tests/test_loss.py tests/test_masking.py tests/test_model.py tests/test_train.py \
    tests/test_toyworld.py tests/test_hf.py tests/test_byhand.py tests/test_data.py \
    tests/test_bad_input.py tests/test_bad_input_train.py tests/test_tokenizer_hostile.py \
    --junitxml="$RESULTS/gpu-tests-library.xml"
wait
copy "$RESULTS/gpu-chapters.json"
if [ -n "$COPY" ]; then  # the executed chapters and their processes' logs, for a post-mortem
    mkdir -p "$COPY/gpu-chapters" && cp "$CHAPTERS_OUT"/* "$COPY/gpu-chapters/" 2>/dev/null
fi

# 4 and 5 are timings: one at a time, nothing beside them. The targets first (BERT-base's
# useful MFU, compiled and not; the toy world to its floor), then the reference shape, which
# is launch-bound on a GPU: there CUDA graphs (torch.compile's reduce-overhead) may help.
part "train base bf16 b256" 75 "$PY" -m bench.bench_train --device cuda --dtype bf16 \
    --config base --batch 256 --runs 3 --reps 3 --steps 3
copy "$RESULTS/train-base-cuda-bf16.json"
part "train base bf16 b256 compiled" 110 "$PY" -m bench.bench_train --device cuda \
    --dtype bf16 --config base --batch 256 --compile default --runs 3 --reps 3 --steps 3
copy "$RESULTS/train-base-cuda-bf16-compiled.json"
part "toy world to its floor" 100 "$PY" -m bench.bench_floor --device cuda --hf-limit 15 \
    --json "$RESULTS/floor-cuda.json"
copy "$RESULTS/floor-cuda.json"
part "train reference bf16" 45 "$PY" -m bench.bench_train --device cuda --dtype bf16 \
    --config reference --runs 3 --reps 3 --steps 10
copy "$RESULTS/train-reference-cuda-bf16.json"
part "train reference bf16 CUDA graphs" 70 "$PY" -m bench.bench_train --device cuda \
    --dtype bf16 --config reference --compile reduce-overhead --runs 2 --reps 3 --steps 10
copy "$RESULTS/train-reference-cuda-bf16-compiled.json"

"$PY" - "$STEPS" "$RESULTS" <<'EOF'
"""Summarise the parts, the test reports and the chapters into bench/results/gpu-check.json."""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import torch

from bench._results import machine, write  # stdin's script: the clone's top is on sys.path

steps, results = Path(sys.argv[1]), Path(sys.argv[2])
WHY = {124: "timed out", 137: "killed at its limit", 125: "not started: the budget was spent"}
parts = [{"part": name, "exit": int(rc), "seconds": int(s)}
         | ({"why": WHY[int(rc)]} if int(rc) in WHY else {})
         for name, rc, s in (line.split("\t") for line in steps.read_text().splitlines())]
tests = {}
for name in ("cuda", "library"):
    report = results / f"gpu-tests-{name}.xml"
    if report.exists():
        suite = ET.parse(report).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        failed = [f"{case.get('classname')}::{case.get('name')}" for case in suite.iter("testcase")
                  if case.find("failure") is not None or case.find("error") is not None]
        tests[name] = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors",
                                                          "skipped")}
        tests[name]["failed"] = failed
        report.unlink()  # folded into the JSON
chapters = None  # bench/results/gpu-chapters.json (kept), in short
if (results / "gpu-chapters.json").exists():
    report = json.loads((results / "gpu-chapters.json").read_text())
    chapters = {"passed": report["passed"], "chapters": [
        {"chapter": r["chapter"], "ran": r["ran"], "seconds": r["seconds"],
         "errors": [f"cell {e['cell']}: {e['error']}" for e in r["errors"]],
         "checks": {c["check"]: {"value": c["value"], "passed": c["passed"]}
                    for c in r["checks"]}} for r in report["chapters"]]}
import transformers  # noqa: E402

out = {"benchmark": "gpu-check", "machine": machine(torch.device("cuda")),
       "cuda": torch.version.cuda, "transformers": transformers.__version__,
       "passed": all(p["exit"] == 0 for p in parts), "parts": parts, "tests": tests,
       "chapters": chapters}
write(out, "gpu-check")
for p in parts:
    print(f"{'ok    ' if p['exit'] == 0 else 'FAILED'} {p['part']} ({p['seconds']} s)"
          + (f": {p['why']}" if "why" in p else ""))
sys.exit(0 if out["passed"] else 1)
EOF
rc=$?
copy "$RESULTS/gpu-check.json" "$LOG"
rm -f "$STEPS"
exit $rc
