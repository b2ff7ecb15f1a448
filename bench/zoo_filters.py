"""Where a bench/zoo.py run's geomean comes from: per case and part (zoo, held out), its rows by
filter group (1x1 at stride 1, 3x3, the rest), each group's layers, GPU-time geomean against
cuDNN and share (the group's factor in the case's geomean: the product of the shares is the
case's geomean). No GPU.

    python bench/zoo_filters.py RUN.json [--out STEM] [--json]

Exit 2 where the file is not a zoo.py result.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

GROUPS = ("1x1s1", "3x3", "other")


def group_of(key: str) -> str:
    """The filter group of a FindDb key (`C-[D-]H-W-FILTER-K-...-PAD-STRIDE-DILATION-...`: the
    fields with an `x`, in order)."""
    filt, _, stride = [f for f in key.split("-") if "x" in f][:3]
    if set(filt.split("x")) == {"1"} and set(stride.split("x")) == {"1"}:
        return "1x1s1"
    return "3x3" if filt == "3x3" else "other"


def groups(rows: list[dict]) -> dict[str, Any]:
    """{"<case> <part>": {"layers", "gpu_geomean", "groups": {group: {layers, gpu_geomean,
    share}}}}."""
    cases: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("ratio"):
            part = "held_out" if r.get("held_out") else "zoo"
            cases.setdefault(f"{r['case']} {part}", []).append(r)
    out: dict[str, Any] = {}
    for name in sorted(cases):
        rs = cases[name]
        logs = {g: [math.log(r["ratio"]) for r in rs if group_of(r["key"]) == g] for g in GROUPS}
        out[name] = {
            "layers": len(rs),
            "gpu_geomean": round(math.exp(sum(sum(v) for v in logs.values()) / len(rs)), 4),
            "groups": {g: {"layers": len(v), "gpu_geomean": round(math.exp(sum(v) / len(v)), 4),
                           "share": round(math.exp(sum(v) / len(rs)), 4)}
                       for g, v in logs.items() if v}}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a bench/zoo.py JSON result")
    ap.add_argument("--out", help="path stem of a .json result")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    try:
        rows = json.loads(Path(args.run).read_text())["rows"]
        result = {"run": Path(args.run).name, "cases": groups(rows)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        print(f"zoo_filters: {args.run} is not a bench/zoo.py result "
              f"({type(exc).__name__}: {exc}); pass a zoo.py JSON result", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print("| case | part | layers | geomean | " + " | ".join(
        f"{g}: layers, geomean, share" for g in GROUPS) + " |")
    print("| --- " * (4 + len(GROUPS)) + "|")
    for name, e in result["cases"].items():
        case, part = name.split(" ")
        cells = [(f"{e['groups'][g]['layers']}, {e['groups'][g]['gpu_geomean']:.2f}, "
                  f"{e['groups'][g]['share']:.3f}") if g in e["groups"] else "" for g in GROUPS]
        print(f"| {case} | {part} | {e['layers']} | {e['gpu_geomean']:.3f} | "
              + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
