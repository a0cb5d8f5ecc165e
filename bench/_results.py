"""Where the benchmarks write their JSON: bench/results/, or the path given with --json."""

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def write(result: dict, name: str, path: str | None = None) -> Path:
    """Write ``result`` as JSON to ``path`` or ``bench/results/<name>.json``; say where."""
    out = Path(path) if path else RESULTS / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")
    return out
