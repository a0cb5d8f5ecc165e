"""Book build time: a full build from scratch, a rebuild with nothing changed, and a rebuild
after one walkthrough chapter's text is edited.

The build runs on a copy of the clone's tracked files in a fresh temporary folder, so the
cache the book keeps in ``_build/`` is neither used nor disturbed and no chapter of the clone
is touched. A full build executes every chapter; the rebuild finds every notebook in its
execution cache; the edit adds a sentence to a Markdown cell of
``notebooks/walkthrough_1_hide.ipynb`` (its code is unchanged, so its cached run still
serves), as an author's edit would, and the last rebuild shows what that costs.

    python -m bench.bench_book            # prints the times, writes bench/results/book.json
    python -m bench.bench_book --smoke    # no execution: checks the script runs
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._results import machine, write

ROOT = Path(__file__).resolve().parent.parent


def build(source: Path, out: Path, config: Path | None) -> float:
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(source),
           "--path-output", str(out), "--builder", "html", "-W", "-n", "--keep-going"]
    if config is not None:
        cmd += ["--config", str(config)]
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"the build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


def chapter_seconds(book: Path) -> list[dict]:
    """Each chapter's execution time in the full build, longest first, from the build's own
    cache (empty when nothing was executed): where the full build's time goes."""
    cache = book / "_build" / ".jupyter_cache"
    if not cache.is_dir():
        return []
    from jupyter_cache import get_cache

    times = [{"chapter": Path(r.uri).stem, "seconds": (r.data or {}).get("execution_seconds", 0.0)}
             for r in get_cache(str(cache)).list_cache_records()]
    return sorted(times, key=lambda t: -t["seconds"])


def copy_clone(to: Path) -> Path:
    """The clone's tracked files (and the student edition the site serves) under ``to``."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, to / name)
    shutil.copytree(ROOT / "_build" / "student-edition", to / "_build" / "student-edition")
    return to


def edit_walkthrough(source: Path) -> None:
    """Add a sentence to the first Markdown cell of the first walkthrough chapter (the copy's)."""
    path = source / "notebooks" / "walkthrough_1_hide.ipynb"
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    cell["source"] = ["".join(cell["source"]) + "\n\nAn author's edit, for the benchmark.\n"]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


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
        source = copy_clone(out / "clone")
        config = None
        if args.smoke:
            config = out / "_config_smoke.yml"
            text = (source / "_config.yml").read_text().replace("execute_notebooks: cache",
                                                                "execute_notebooks: "
                                                                "'off'")
            # local extensions are found relative to the config file, which now lies elsewhere
            text = text.replace(": book/_ext", f": {source / 'book' / '_ext'}")
            config.write_text(text)
        full = build(source, out / "book", config)
        chapters = chapter_seconds(out / "book")
        rebuild = build(source, out / "book", config)
        edit_walkthrough(source)
        edited = build(source, out / "book", config)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    result = {"benchmark": "book", "full_build_s": full, "unchanged_rebuild_s": rebuild,
              "edited_walkthrough_rebuild_s": edited, "chapter_execution_s": chapters,
              "machine": machine()}
    print(f"full build from scratch{' (smoke: no execution)' * args.smoke}: {full:.0f} s; "
          f"rebuild with nothing changed: {rebuild:.1f} s; after editing one walkthrough "
          f"chapter's text: {edited:.1f} s")
    if chapters:
        print(f"executing the chapters: {sum(t['seconds'] for t in chapters):.0f} s, of which "
              + ", ".join(f"{t['chapter']} {t['seconds']:.0f} s" for t in chapters[:6]))
    if not args.smoke or args.json:
        write(result, "book", args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
