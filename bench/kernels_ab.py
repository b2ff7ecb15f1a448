"""Two packages' kernel times on the same layers: bench/kernels.py results side by side.

bench/kernels.py's ratio to cuDNN moves between runs with cuDNN's own times (its benchmark
picks, the GPU's clocks), so a change to the package's kernels is judged on our milliseconds
alone: for each pair of results (A run, B run) taken on one machine, the geomean of B's
`ours_ms` over A's per case (`<type>-<direction>-<layout>@<batch>`), the rows that moved most,
and, with several pairs (`--pair A B` repeated, runs taken in turn A, B, A, B), the same over
all of them.

    python bench/kernels_ab.py --pair A1.json B1.json --pair A2.json B2.json --out AB.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def _rows(path: Path) -> dict[tuple[str, int, str], float]:
    return {(r["case"], r["n"], r["key"]): float(r["ours_ms"])
            for r in json.loads(path.read_text())["rows"] if r.get("ours_ms")}


def compare(pairs: list[tuple[Path, Path]]) -> dict[str, Any]:
    """Per case, the geomean over layers and pairs of B's ms over A's; the five rows that
    moved most each way."""
    per_case: dict[str, list[float]] = {}
    moved: list[tuple[float, str]] = []
    for a_path, b_path in pairs:
        a, b = _rows(a_path), _rows(b_path)
        for key in sorted(a.keys() & b.keys()):
            ratio = b[key] / a[key]
            per_case.setdefault(f"{key[0]}@{key[1]}", []).append(ratio)
            moved.append((ratio, key[2]))
    moved.sort()
    return {"pairs": [[str(a), str(b)] for a, b in pairs],
            "cases": {c: {"b_over_a": round(statistics.geometric_mean(v), 3), "rows": len(v),
                          "max": round(max(v), 3), "min": round(min(v), 3)}
                      for c, v in sorted(per_case.items())},
            "faster": [[round(r, 3), k] for r, k in moved[:5]],
            "slower": [[round(r, 3), k] for r, k in moved[-5:][::-1]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", nargs=2, action="append", type=Path, required=True,
                    metavar=("A", "B"), help="bench/kernels.py JSONs of the A and B packages")
    ap.add_argument("--out", type=Path, help="write the comparison here")
    ap.add_argument("--json", action="store_true", help="print the JSON, not the table")
    args = ap.parse_args()
    for a, b in args.pair:
        for path in (a, b):
            if not path.is_file():
                print(f"error: {path} is not a file: give bench/kernels.py's JSON results",
                      file=sys.stderr)
                return 2
    result = compare([(a, b) for a, b in args.pair])
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{'case':22} {'B/A':>6} {'min':>6} {'max':>6} {'rows':>5}")
    for case, v in result["cases"].items():
        print(f"{case:22} {v['b_over_a']:>6} {v['min']:>6} {v['max']:>6} {v['rows']:>5}")
    print("slower in B:", *(f"{r} {k}" for r, k in result["slower"]), sep="\n  ")
    print("faster in B:", *(f"{r} {k}" for r, k in result["faster"]), sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
