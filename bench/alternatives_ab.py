"""Two runs of bench/solver_alternatives.py compared (no GPU): the same solvers on the same
layers at two trees (a kernel before and after a change), per solver and case the geometric
mean of the GPU time after over before, on the rows both ran at the same parameters, with
cuDNN's own ratio beside it (the drift between the runs, which a change of ours cannot
cause). Rows whose parameters split the reduction on either side are left out unless
`--splits` (a tree that had no split ran them unsplit whatever the parameters say).

    python bench/alternatives_ab.py BEFORE.json AFTER.json [--json] [--splits]

Exit codes: 0 compared; 2 a file unreadable or without `rows`; 3 no row in common.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

_MAX_BYTES = 64 << 20
_SPLIT = 4  # SPLIT_K's place in the Triton solvers' parameters


def _rows(path: Path) -> dict[tuple[str, str], tuple[float, float, list[int], str]]:
    """(key, solver) -> (GPU ms, cuDNN's GPU ms, parameters, case); ValueError naming what is
    wrong."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise ValueError(f"{path}: larger than {_MAX_BYTES >> 20} MB")
        data = json.loads(path.read_text())
        out = {}
        for row in data["rows"]:
            for name, entry in row["solvers"].items():
                if entry.get("gpu_ms"):
                    out[(str(row["key"]), name)] = (float(entry["gpu_ms"]),
                                                    float(row["cudnn_gpu_ms"]),
                                                    list(entry.get("params") or []),
                                                    str(row["case"]))
        return out
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError,
            ValueError, AttributeError) as exc:
        raise ValueError(f"{path}: not a bench/solver_alternatives.py JSON "
                         f"({type(exc).__name__})") from None


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def compare(before: dict, after: dict, splits: bool = False) -> dict[str, Any]:
    groups: dict[str, list[tuple[float, float]]] = {}
    for k, (ms, cudnn, params, case) in after.items():
        old = before.get(k)
        if old is None or old[2] != params or not (ms > 0 and old[0] > 0 and cudnn > 0):
            continue
        if not splits and len(params) > _SPLIT and params[_SPLIT] != 1:
            continue
        groups.setdefault(f"{k[1]} {case}", []).append((ms / old[0], cudnn / old[1]))
    return {name: {"rows": len(v), "after_over_before": round(_geomean([a for a, _ in v]), 3),
                   "min": round(min(a for a, _ in v), 3), "max": round(max(a for a, _ in v), 3),
                   "cudnn_after_over_before": round(_geomean([c for _, c in v]), 3)}
            for name, v in sorted(groups.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    ap.add_argument("--splits", action="store_true",
                    help="keep the rows whose parameters split the reduction")
    args = ap.parse_args(argv)
    try:
        result = compare(_rows(args.before), _rows(args.after), args.splits)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not result:
        print("error: no row in common at the same parameters; compare runs of the same "
              "solvers and layers", file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for name, r in result.items():
        print(f"{name:44} {r['rows']:3} rows  after/before {r['after_over_before']:.3f} "
              f"({r['min']:.2f}-{r['max']:.2f})  cuDNN {r['cudnn_after_over_before']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
