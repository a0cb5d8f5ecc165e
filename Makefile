# The two commands of the README:   make book   (build the site)   and   make test   (every check).
# Each creates .venv on first use (or when pyproject.toml / constraints.txt change) and installs
# the exact versions pinned in constraints.txt, so it works on a fresh machine with Python 3.11.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(CURDIR)/$(VENV)/bin
STAMP  := $(VENV)/.installed
# The venv's bin first, so notebook kernels (nbval, the book build) run the venv's Python.
export PATH := $(BIN):$(PATH)

BUILD_FLAGS := -n -W --keep-going
NBVAL_FLAGS := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: book test test-quick lint serve constraints clean student lab editions live-chapters \
        chapters gpu-wheels

# CONSTRAINTS=/dev/null installs the newest versions pyproject.toml's ranges allow instead of
# the pins (the weekly workflow .github/workflows/newest.yml does, to catch upstream changes).
CONSTRAINTS ?= constraints.txt

# pip compiles every module as it installs: keep it (no --no-compile), since where
# PYTHONDONTWRITEBYTECODE is set, as on the course's machines, Python never caches what it compiles
# and every process would compile torch again (a fresh make test took 14 min instead of 12.5).
$(STAMP): pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23.2"
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e ".[book,test,course]"
	touch $(STAMP)

# The chapters with live figures (found, not listed: those that import mlmlib.widgets), and what
# the script inside each live output is built from (mlmlib.widgets.live.script).
LIVE_CHAPTERS = $(shell grep -l 'mlmlib\.widgets' notebooks/*.ipynb)
LIVE_SOURCES := mlmlib/widgets/live.py $(wildcard mlmlib/widgets/js/*.js)

# make book executes the chapters through its cache (_build/.jupyter_cache), which is keyed on a
# chapter's code, not on mlmlib's: a cached chapter would keep the live figures' script it ran
# with. When the script's sources change, the cached runs whose live outputs carry another
# script (by its hash, data-mlm-script) are forgotten, and the chapters with live figures are
# touched, so that Sphinx reads them again and they run afresh; every other chapter keeps its
# cache and its pages.
define FORGET_STALE_LIVE_RUNS
import os, re
from mlmlib.widgets import script_hash
if os.path.isdir("_build/.jupyter_cache"):
    from jupyter_cache import get_cache
    cache = get_cache("_build/.jupyter_cache")
    for record in cache.list_cache_records():
        cells = cache.get_cache_bundle(record.pk).nb.cells
        html = "".join("".join(o.get("data", {}).get("text/html", ""))
                       for c in cells for o in c.get("outputs", []))
        if 'class="mlm-live"' in html and \
                set(re.findall(r'data-mlm-script="(\w*)"', html)) != {script_hash()}:
            cache.remove_cache(record.pk)
            print("make: forgot the cached run of", os.path.basename(record.uri))
endef
export FORGET_STALE_LIVE_RUNS
LIVE_STAMP := _build/.live-figures-stamp
$(LIVE_STAMP): $(LIVE_SOURCES)
	$(BIN)/python -c "$$FORGET_STALE_LIVE_RUNS"
	touch $(LIVE_CHAPTERS)
	mkdir -p _build && touch $@

## make live-chapters: re-execute, in place, the chapters with live figures (found: those that
## import mlmlib.widgets), so that their committed outputs carry the current script, then rewrite
## the editions; run it after changing mlmlib/widgets (tests/test_widgets.py fails until then),
## and commit notebooks/ and editions/
live-chapters: $(STAMP)
	$(MAKE) --no-print-directory -o $(STAMP) chapters CHAPTERS="$(LIVE_CHAPTERS)"

## make chapters CHAPTERS="notebooks/a.ipynb notebooks/b.ipynb": re-execute those chapters in
## place (every chapter when CHAPTERS is not given), on a quiet machine, so that their committed
## outputs are what they print now; then rewrite the editions. Commit notebooks/ and editions/.
CHAPTERS ?= $(wildcard notebooks/*.ipynb)
chapters: $(STAMP)
	cd notebooks && for nb in $(notdir $(CHAPTERS)); do \
	    echo "chapters: $$nb"; \
	    $(BIN)/jupyter nbconvert --to notebook --execute --inplace --log-level=WARN \
	        --ExecutePreprocessor.timeout=1800 --ExecutePreprocessor.record_timing=False \
	        "$$nb" || exit 1; \
	done
	$(EDITIONS)

## make student: the student edition (solutions out) and the answer key, in
## _build/student-edition/downloads (the site offers them for download)
student: $(STAMP)
	$(BIN)/python -m mlmlib.course.edition --downloads _build/student-edition

## make editions: rewrite editions/ (the notebook and student editions, committed) from the
## chapters; run it after changing a chapter (tests/test_editions.py fails until they agree)
EDITIONS = $(BIN)/python -m mlmlib.course.edition
editions: $(STAMP)
	$(EDITIONS)

## make book: build the site into _build/html (re-executes only the notebooks that changed), then
## the whole book as one PDF, _build/html/mlm-course.pdf, which the site links (tools/book_pdf.py:
## Chromium prints a single-page build; without Chromium or Playwright it says so and skips it)
BOOK_CONFIG ?= _config.yml
book: $(STAMP) $(LIVE_STAMP) student $(BOOK_CONFIG)
	$(BIN)/jupyter-book build . --builder html $(BUILD_FLAGS) --config $(BOOK_CONFIG)
	$(BIN)/python tools/book_pdf.py $(BUILD_FLAGS) --config $(BOOK_CONFIG)

# make test builds the site from the chapters' committed outputs (_config.yml with execution
# off), and nbval then runs every chapter and compares it with those same outputs: each chapter
# runs once, and the site shows exactly what a fresh run printed (nbval's sanitised and ignored
# cells aside). make book, on its own, executes the chapters that changed.
OUTPUTS_CONFIG := _build/_config.committed-outputs.yml
$(OUTPUTS_CONFIG): _config.yml
	mkdir -p _build
	sed -e 's/^  execute_notebooks: cache$$/  execute_notebooks: "off"/' \
	    -e 's/: book\/_ext /: ..\/book\/_ext /' _config.yml > $@  # paths from _build/
	grep -q '^  execute_notebooks: "off"$$' $@ || { rm -f $@; echo "Makefile: _config.yml's execute_notebooks line moved"; exit 1; }

## make test: lint, the book build from the committed outputs (warnings are errors), then the
## library's tests and doctests, every notebook through nbval, the built site and JupyterLab in
## a browser (tests/test_site.py, tests/test_lab.py), the PDF and the grader
test: $(STAMP)
	$(BIN)/ruff check mlmlib tests bench tools
	$(MAKE) --no-print-directory book BOOK_CONFIG=$(OUTPUTS_CONFIG)
	$(BIN)/python -m pytest --doctest-modules $(NBVAL_FLAGS) mlmlib tests notebooks

## make test-quick: your loop while you work (about 2 minutes on 2 cores): ruff, then the
## library's tests and doctests without the notebooks, the browser, the benchmarks' smoke runs
## and the tests that start processes (pytest markers slow and browser; make test runs them all)
test-quick: $(STAMP)
	$(BIN)/ruff check mlmlib tests bench tools
	$(BIN)/python -m pytest -q -m "not slow and not browser" --doctest-modules mlmlib tests

## make lab: JupyterLab on this machine, at the top of the clone: the chapters (notebooks/, their
## MyST rendered by jupyterlab-myst) and both editions (editions/notebooks/, editions/student/).
## It opens a browser tab; Ctrl-C stops it. LAB_ARGS passes more options, e.g.
## make lab LAB_ARGS="--no-browser --ServerApp.port=8899"
LAB_ARGS ?=
lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=$(CURDIR) $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check mlmlib tests bench tools

## make serve: look at the built site on http://localhost:8000 (after make book)
serve:
	$(PYTHON) -m http.server --directory _build/html 8000

## make constraints: re-pin every package from the current .venv (review the diff before committing)
constraints: $(STAMP)
	{ sed -n '/^#/p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable \
	  | sed 's/^torch==\([0-9.]*\)+cpu/torch==\1/' | LC_ALL=C sort -f; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

## make gpu-wheels: into .gpu-wheels/, the wheels a lent GPU machine lacks to execute the
## chapters (CPython 3.12, manylinux x86_64, no network there): nbclient, nbformat, ipykernel,
## jupyter_client, ipywidgets and all they need; matplotlib and tqdm with theirs but never numpy;
## pip's own wheel (for a Python without pip). Versions from constraints.txt. Never torch, numpy,
## transformers or a CUDA library: the GPU machine's own builds stay. bench/gpu_check.sh installs
## them from there (pip --no-index); carry the folder with the run (its carry list: .gpu-wheels).
GPU_WHEELS := .gpu-wheels
GPU_DOWNLOAD = $(BIN)/python -m pip download --quiet --disable-pip-version-check \
    --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux_2_28_x86_64 -c constraints.txt -d $(GPU_WHEELS)
GPU_JUPYTER := nbclient nbformat ipykernel jupyter_client ipywidgets
# matplotlib's own dependencies named one by one (--no-deps): its numpy is the GPU machine's
GPU_PLOTS := matplotlib contourpy cycler fonttools kiwisolver pillow pyparsing python-dateutil \
    six packaging tqdm
gpu-wheels: $(STAMP)
	rm -rf $(GPU_WHEELS)
	$(GPU_DOWNLOAD) $(GPU_JUPYTER)
	$(GPU_DOWNLOAD) --no-deps $(GPU_PLOTS) pip==$$($(BIN)/python -c 'import pip; print(pip.__version__)')
	@if ls $(GPU_WHEELS) | grep -iE '^(torch|numpy|nvidia|triton|transformers|tokenizers|safetensors)[-_]'; \
	then echo "gpu-wheels: the wheels above would replace the GPU machine's own builds"; exit 1; fi
	@size=$$(du -sk $(GPU_WHEELS) | cut -f1); \
	echo "gpu-wheels: $$(ls $(GPU_WHEELS) | wc -l) wheels, $$((size / 1024)) MiB in $(GPU_WHEELS)/"; \
	if [ $$size -gt 51200 ]; then echo "gpu-wheels: over 50 MiB, too much to carry"; exit 1; fi

clean:
	rm -rf _build
