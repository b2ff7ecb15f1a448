"""Two bench/zoo.py runs compared layer by layer: per case (and zoo / held-out part), over the
rows both runs measured, the GPU-time geomeans against cuDNN before and after, and the same
over the rows whose solver is the same in both runs, per solver, so that a change to one
solver's choices shows apart from what other solvers' changes moved.

    python bench/zoo_compare.py BEFORE.json AFTER.json [--cases FP16-W-NHWC,FP16-W-NCHW]
        [--out bench/results/zoo_compare_x] [--json]

Exit 2 where a file is not a zoo.py result.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import read_json  # noqa: E402


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def _rows(path: str) -> dict[tuple[str, str, str, int], dict]:
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ValueError("no rows")
    return {(r["network"], r["layer"], r["case"], int(r["n"])): r for r in data["rows"]
            if r.get("ratio")}


def compare(before: dict, after: dict, cases: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    common = [k for k in after if k in before]
    for case in sorted({k[2] for k in common}):
        if cases and case not in cases:
            continue
        for part, held in (("zoo", False), ("held_out", True)):
            keys = [k for k in common if k[2] == case and bool(after[k]["held_out"]) == held]
            if not keys:
                continue
            entry: dict[str, Any] = {
                "layers": len(keys), "before": geomean([before[k]["ratio"] for k in keys]),
                "after": geomean([after[k]["ratio"] for k in keys]), "same_solver": {}}
            for solver in sorted({after[k]["solver"] for k in keys}):
                same = [k for k in keys if after[k]["solver"] == before[k]["solver"] == solver]
                if same:
                    entry["same_solver"][solver] = {
                        "layers": len(same), "before": geomean([before[k]["ratio"] for k in same]),
                        "after": geomean([after[k]["ratio"] for k in same])}
            changed = [k for k in keys if after[k]["solver"] != before[k]["solver"]]
            entry["solver_changed"] = {
                "layers": len(changed), "before": geomean([before[k]["ratio"] for k in changed]),
                "after": geomean([after[k]["ratio"] for k in changed])}
            out[f"{case} {part}"] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--cases", help="comma-separated cases (default: every case in both)")
    ap.add_argument("--out", help="path stem of a .json result")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    try:
        before, after = _rows(args.before), _rows(args.after)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"zoo_compare: {args.before} or {args.after} is not a bench/zoo.py result "
              f"({type(exc).__name__}: {exc}); pass two zoo.py JSON files", file=sys.stderr)
        return 2
    result = {"before": Path(args.before).name, "after": Path(args.after).name,
              "cases": compare(before, after, args.cases.split(",") if args.cases else None)}
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print("| case | part | layers | before | after | solver | layers | before | after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, e in result["cases"].items():
        case, part = name.split(" ")
        print(f"| {case} | {part} | {e['layers']} | {e['before']:.3f} | {e['after']:.3f} "
              "| | | | |")
        for solver, s in e["same_solver"].items():
            print(f"| | | | | | {solver} | {s['layers']} | {s['before']:.3f} | {s['after']:.3f} |")
        c = e["solver_changed"]
        if c["layers"]:
            print(f"| | | | | | (solver changed) | {c['layers']} | {c['before']:.3f} "
                  f"| {c['after']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
