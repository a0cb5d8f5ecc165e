"""Book build time: a full build from scratch, then a rebuild with nothing changed.

The build goes to a fresh temporary folder (``--path-output``), so the cache the book keeps
in ``_build/`` is neither used nor disturbed. A full build executes every chapter; the
rebuild finds every notebook in its execution cache.

    python -m bench.bench_book            # prints both times, writes bench/results/book.json
    python -m bench.bench_book --smoke    # no execution: checks the script runs
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._results import machine, write

ROOT = Path(__file__).resolve().parent.parent


def build(out: Path, config: Path | None) -> float:
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT),
           "--path-output", str(out), "--builder", "html", "-W", "-n", "--keep-going"]
    if config is not None:
        cmd += ["--config", str(config)]
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"the build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


def student_edition() -> None:
    """The site serves the student edition (``make student``): write it if it is missing."""
    if not (ROOT / "_build" / "student-edition").exists():
        subprocess.run([sys.executable, "-m", "mlmlib.course.edition", "--root", str(ROOT),
                        "--downloads", str(ROOT / "_build" / "student-edition")],
                       check=True, capture_output=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    student_edition()
    out = Path(tempfile.mkdtemp(prefix="mlm-book-"))
    try:
        if args.smoke:
            config = out / "_config_smoke.yml"
            text = (ROOT / "_config.yml").read_text().replace("execute_notebooks: cache",
                                                              "execute_notebooks: "
                                                              "'off'")
            # local extensions are found relative to the config file, which now lies elsewhere
            text = text.replace(": book/_ext", f": {ROOT / 'book' / '_ext'}")
            config.write_text(text)
            full = build(out / "book", config)
            rebuild = build(out / "book", config)
        else:
            full = build(out, None)
            rebuild = build(out, None)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    result = {"benchmark": "book", "full_build_s": full, "unchanged_rebuild_s": rebuild,
              "machine": machine()}
    print(f"full build from scratch{' (smoke: no execution)' * args.smoke}: {full:.0f} s; "
          f"rebuild with nothing changed: {rebuild:.1f} s")
    if not args.smoke or args.json:
        write(result, "book", args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
