"""Summarise bench/gpu_serving_ab.sh's runs: two trees' serving first calls on one machine.

Reads OUTDIR/serving_{before,after}_{FP32,FP16}_r{N}.json (bench/serving.py, miopenkernels
alone, no best-at-hand sweep) and prints, per tree and type, the median and the fastest over the
rounds of each run's first-call median and of its phases (find, run, the wait for the kernel),
beside the host's fixed Python loop of each run; then, per type, how many shapes' first picks
differ between the trees and the geomean of their steady-state times after / before (over every
shape, and over those whose picks differ).

    python bench/serving_ab_summary.py OUTDIR [--out FILE.json] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path

PHASES = ("first_call", "find", "run", "sync")


def load(folder: Path) -> dict[tuple[str, str], list[dict]]:
    runs: dict[tuple[str, str], list[dict]] = {}
    for path in sorted(folder.glob("serving_*_r*.json")):
        m = re.fullmatch(r"serving_(before|after)_(FP32|FP16|BF16)_r(\d+)\.json", path.name)
        if m:
            runs.setdefault((m[1], m[2]), []).append(json.loads(path.read_text()))
    return runs


def summarise(runs: dict[tuple[str, str], list[dict]]) -> dict:
    out: dict = {"trees": {}, "picks": {}}
    for (tree, dtype), data in sorted(runs.items()):
        per = {p: [d["summary"][dtype][f"{p}_median_ms"] for d in data] for p in PHASES}
        out["trees"].setdefault(tree, {})[dtype] = {
            "rounds": len(data),
            **{f"{p}_ms": {"median": round(statistics.median(v), 4), "min": round(min(v), 4)}
               for p, v in per.items()},
            "python_loop_ms": [d.get("python_loop_ms") for d in data]}
    for dtype in sorted({d for _, d in runs}):
        if ("before", dtype) not in runs or ("after", dtype) not in runs:
            continue
        rows = [{r["key"]: r for r in runs[(t, dtype)][0]["engines"][dtype]["miopenkernels"]
                 ["rows"]} for t in ("before", "after")]
        before, after = rows
        keys = [k for k in after if k in before]
        changed = {k for k in keys if (after[k]["solver"], after[k]["params"]) !=
                   (before[k]["solver"], before[k]["params"])}
        ratios = {k: after[k]["steady_ms"] / before[k]["steady_ms"] for k in keys
                  if after[k].get("steady_ms") and before[k].get("steady_ms")}

        def geomean(values: list[float]) -> float | None:
            return round(math.exp(statistics.fmean(map(math.log, values))), 3) if values else None

        out["picks"][dtype] = {
            "shapes": len(keys), "changed": len(changed),
            "steady_after_over_before": geomean(list(ratios.values())),
            "steady_after_over_before_changed": geomean([r for k, r in ratios.items()
                                                         if k in changed])}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="bench/gpu_serving_ab.sh's output folder")
    ap.add_argument("--out", type=Path, help="write the summary as JSON here")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    runs = load(args.folder)
    if not runs:
        print(f"serving_ab_summary: no serving_*_r*.json in {args.folder}", file=sys.stderr)
        return 2
    result = summarise(runs)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result))
        return 0
    print("| tree | type | rounds | first call median / fastest | find | run | kernel wait |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for tree, types in result["trees"].items():
        for dtype, s in types.items():
            cells = " | ".join(f"{s[f'{p}_ms']['median']:.3f} / {s[f'{p}_ms']['min']:.3f}"
                               for p in PHASES)
            print(f"| {tree} | {dtype} | {s['rounds']} | {cells} |")
    for dtype, s in result["picks"].items():
        print(f"{dtype}: {s['changed']} of {s['shapes']} first picks differ; steady state after / "
              f"before, geomean {s['steady_after_over_before']} (over the differing picks "
              f"{s['steady_after_over_before_changed']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
