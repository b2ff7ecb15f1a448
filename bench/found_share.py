"""One solver family against the rest, from the times find returned in a bench/zoo.py run (each
row's `found`: every solver find ranked, its ms): per case, part (zoo, held out) and where
those times come from (the row's `source`: `find` where they were measured, `ranking` where
they are the miss ranking's estimates, as in zoo.py's default find mode without a FindDb
record), the rows where the family ran, the geomean of its best time over the best other
solver's, how many rows it won, and the GPU-time ratio against cuDNN of the rows as picked.
Measured times are what a ranks-first table (solvers/blas_1x1.py BLAS_FIRST) is read from;
estimates show what the ranking thought. No GPU.

    python bench/found_share.py RUN.json [--family ConvBlasGemm1x1] [--out STEM] [--json]

Exit 2 where the file is not a zoo.py run with find's timings.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def share(rows: list[dict], family: str) -> dict[str, Any]:
    """{"<case> <part> <source>": {layers, family_over_best_other, wins, picked_ratio}}."""
    out: dict[str, Any] = {}
    groups: dict[str, list[tuple[float, float, float]]] = {}
    for r in rows:
        found = r["found"]
        mine = [t for s, t in found.items() if s.startswith(family)]
        others = [t for s, t in found.items() if not s.startswith(family)]
        if not mine or not others or not r.get("ratio"):
            continue
        part = "held_out" if r.get("held_out") else "zoo"
        groups.setdefault(f"{r['case']} {part} {r.get('source', 'find')}", []).append(
            (min(mine) / min(others), float(r["ratio"]), 1.0 if min(mine) < min(others) else 0.0))
    for name in sorted(groups):
        g = groups[name]
        out[name] = {"layers": len(g),
                     "family_over_best_other": round(geomean([a for a, _, _ in g]), 4),
                     "wins": int(sum(w for _, _, w in g)),
                     "picked_ratio": round(geomean([b for _, b, _ in g]), 4)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a bench/zoo.py JSON result whose rows carry `found`")
    ap.add_argument("--family", default="ConvBlasGemm1x1", help="solver name prefix")
    ap.add_argument("--out", help="path stem of a .json result")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    try:
        data = json.loads(Path(args.run).read_text())
        rows = data["rows"]
        if not isinstance(rows, list) or not all(isinstance(r.get("found"), dict) for r in rows):
            raise ValueError("rows without find's timings")
        result = {"run": Path(args.run).name, "family": args.family,
                  "cases": share(rows, args.family)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"found_share: {args.run} is not a bench/zoo.py run with find's timings "
              f"({type(exc).__name__}: {exc}); pass a zoo.py JSON result", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"| case | part | times | layers | {args.family} / best other | wins | "
          "picked / cuDNN |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, e in result["cases"].items():
        case, part, source = name.split(" ")
        print(f"| {case} | {part} | {source} | {e['layers']} | {e['family_over_best_other']:.3f} | "
              f"{e['wins']} | {e['picked_ratio']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
