#!/usr/bin/env bash
# bench/gpu_check.sh - what the README promises on a GPU, checked on one (about 8 minutes).
#
# On a machine with an NVIDIA GPU, PyTorch (a CUDA build) and the packages of constraints.txt
# (transformers, pytest; pytest-xdist if present), from the repository's root:
#
#     bash bench/gpu_check.sh            # JSON and a log into bench/results/
#     bash bench/gpu_check.sh DIR        # ... copied into DIR too, each as soon as it is written
#
# It runs, each under its own time limit, and goes on when one fails:
#   1. tests/test_cuda.py: the model, losses, masking, the trainer (device choice, bf16
#      autocast, resume), the Hugging Face round trip and the command line alone and under
#      torchrun (DistributedDataParallel with NCCL), each on the GPU against the CPU;
#   2. bench_train.py --device cuda --dtype bf16 against Hugging Face's BertForMaskedLM, the
#      reference shape and BERT-base's, each as 3 separate processes;
#   3. bench_floor.py --device cuda: the toy world's recipe to within 2% of its exact floor
#      (and Hugging Face's defaults beside it), 3 separate processes of one seed each;
#   4. beside 1, the library's own test suites with the GPU visible (wherever a test leaves the
#      device to "auto", it trains on the GPU).
# Then bench/results/gpu-check.json says what passed, with the machine and the seconds each took.
# The exit status is 0 only when every part passed. Nothing here is needed by `make test`.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
COPY=${1:-}
PY=${PYTHON:-python3}
RESULTS=bench/results
mkdir -p "$RESULTS"
LOG=$RESULTS/gpu-check.log
: >"$LOG"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export TOKENIZERS_PARALLELISM=false
STEPS=$(mktemp)

copy() {  # copy the named result files into $COPY as soon as they exist
    [ -n "$COPY" ] || return 0
    mkdir -p "$COPY"
    for f in "$@"; do [ -f "$f" ] && cp "$f" "$COPY/"; done
    return 0
}

part() {  # part NAME LIMIT_SECONDS COMMAND...: run it, log it, record status and seconds
    local name=$1 limit=$2 start rc
    shift 2
    start=$(date +%s)
    echo "=== $name (limit ${limit} s): $*" | tee -a "$LOG"
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
    rc=${PIPESTATUS[0]}
    echo "=== $name: exit $rc in $(($(date +%s) - start)) s" | tee -a "$LOG"
    printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - start))" >>"$STEPS"
    copy "$LOG"
}

if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_check: no CUDA GPU here (torch.cuda.is_available() is False); nothing to check" >&2
    exit 2
fi
{ nvidia-smi -L 2>/dev/null; "$PY" -c "import torch, transformers; print('torch', \
torch.__version__, 'cuda', torch.version.cuda, '|', torch.cuda.get_device_name(0), '|', \
'transformers', transformers.__version__)"; } | tee -a "$LOG"

XDIST=()
if "$PY" -c "import xdist" 2>/dev/null; then XDIST=(-n 12); fi

missing=$("$PY" -c "
import importlib.util
need = ['torch', 'numpy', 'matplotlib', 'tqdm', 'transformers', 'pytest',
        'hypothesis']  # pyproject.toml's dependencies and what the tests import
print(' '.join(n for n in need if importlib.util.find_spec(n) is None))")
if [ -n "$missing" ]; then  # said at the start, not found out by an import error half-way
    echo "gpu_check: missing $missing: install them with pip install -c constraints.txt" \
        "$missing (tests that import them will fail)" | tee -a "$LOG"
fi

# the two test runs share the GPU (it has room) and the CPU cores: side by side
part "tests on CUDA" 240 "$PY" -m pytest -q -p no:cacheprovider -rs tests/test_cuda.py \
    --junitxml="$RESULTS/gpu-tests-cuda.xml" &
part "library tests, GPU visible" 300 "$PY" -m pytest -q -p no:cacheprovider "${XDIST[@]}" \
    tests/test_loss.py tests/test_masking.py tests/test_model.py tests/test_train.py \
    tests/test_toyworld.py tests/test_hf.py tests/test_byhand.py tests/test_data.py \
    tests/test_bad_input.py tests/test_bad_input_train.py tests/test_tokenizer_hostile.py \
    --junitxml="$RESULTS/gpu-tests-library.xml"
wait
part "train reference bf16" 150 "$PY" -m bench.bench_train --device cuda --dtype bf16 \
    --config reference --runs 3 --reps 3 --steps 10
copy "$RESULTS/train-reference-cuda-bf16.json"
part "train base bf16" 180 "$PY" -m bench.bench_train --device cuda --dtype bf16 \
    --config base --runs 3 --reps 3 --steps 5
copy "$RESULTS/train-base-cuda-bf16.json"
part "toy world to its floor" 240 "$PY" -m bench.bench_floor --device cuda --hf-limit 20 \
    --json "$RESULTS/floor-cuda.json"
copy "$RESULTS/floor-cuda.json"

"$PY" - "$STEPS" "$RESULTS" <<'EOF'
"""Summarise the parts and the test reports into bench/results/gpu-check.json."""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import torch

from bench._results import machine, write  # stdin's script: the clone's top is on sys.path

steps, results = Path(sys.argv[1]), Path(sys.argv[2])
parts = [{"part": name, "exit": int(rc), "seconds": int(s)}
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
import transformers  # noqa: E402

out = {"benchmark": "gpu-check", "machine": machine(torch.device("cuda")),
       "cuda": torch.version.cuda, "transformers": transformers.__version__,
       "passed": all(p["exit"] == 0 for p in parts), "parts": parts, "tests": tests}
write(out, "gpu-check")
for p in parts:
    print(f"{'ok    ' if p['exit'] == 0 else 'FAILED'} {p['part']} ({p['seconds']} s)")
sys.exit(0 if out["passed"] else 1)
EOF
rc=$?
copy "$RESULTS/gpu-check.json" "$LOG"
rm -f "$STEPS"
exit $rc
