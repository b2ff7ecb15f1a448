"""Compare committed bench/kernels.py runs: how our times and cuDNN's moved between them.

No GPU: reads the result JSONs of `bench/kernels.py` (bench/results/kernels_h100*.json) and
prints, per `<type>-<direction>-<layout>` case at one batch size, for the first file (the run
of record) against the second (an earlier run):

- ours: the total of our times over the case's layers, as a share of the earlier run's total;
- cudnn_spread: cuDNN's largest total over its smallest across all the files (fresh machines
  differ; the ratios move with it);
- vs_fastest_cudnn: the geomean over the layers of our time in the first file over the fastest
  cuDNN time of that layer in any of the files (a figure that a slow cuDNN cannot flatter).

    python bench/compare_kernels.py bench/results/kernels_h100.json \
        bench/results/kernels_h100-fdd5c89.json bench/results/kernels_h100-45341a7.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any


def _rows(result: dict[str, Any], batch: int) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["case"], r["key"]): r for r in result["rows"]
            if r["n"] == batch and r.get("ours_ms") and r.get("cudnn_ms")}


def compare(results: list[dict[str, Any]], batch: int) -> dict[str, dict[str, float]]:
    """{case: {ours, cudnn_spread, vs_fastest_cudnn, layers}} (see the module's text)."""
    runs = [_rows(r, batch) for r in results]
    first, earlier = runs[0], runs[1]
    out: dict[str, dict[str, float]] = {}
    for case in sorted({c for c, _ in first}):
        keys = [k for k in first if k[0] == case and all(k in run for run in runs)]
        if not keys:
            continue
        totals = [sum(run[k]["cudnn_ms"] for k in keys) for run in runs]
        fastest = [first[k]["ours_ms"] / min(run[k]["cudnn_ms"] for run in runs) for k in keys]
        out[case] = {
            "ours": sum(first[k]["ours_ms"] for k in keys)
            / sum(earlier[k]["ours_ms"] for k in keys),
            "cudnn_spread": max(totals) / min(totals),
            "vs_fastest_cudnn": math.exp(sum(math.log(v) for v in fastest) / len(fastest)),
            "layers": len(keys),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path,
                    help="kernels.py result JSONs: the run of record first, then earlier runs")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = ap.parse_args(argv)
    if len(args.files) < 2:
        ap.error("give the run of record and at least one earlier run")
    try:
        results = [json.loads(f.read_text()) for f in args.files]
    except (OSError, ValueError) as exc:
        print(f"error: cannot read a result file: {exc}; give bench/kernels.py JSON outputs",
              file=sys.stderr)
        return 2
    table = compare(results, args.batch)
    if args.json:
        print(json.dumps({"files": [str(f) for f in args.files], "batch": args.batch,
                          "cases": table}))
        return 0
    print(f"| case | ours / {args.files[1].name} | cuDNN spread | vs fastest cuDNN |")
    print("|---|---|---|---|")
    for case, v in table.items():
        print(f"| {case} | {v['ours']:.2f} | {v['cudnn_spread']:.2f} | "
              f"{v['vs_fastest_cudnn']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
