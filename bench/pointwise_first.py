"""Where the pointwise row GEMMs (solvers/triton_pointwise.py) should rank first, from runs of
bench/solver_alternatives.py that timed them beside immediate mode's first choice (`pick`).

Per case (`<type>-<direction>-<layout>`), over the zoo's layers (held-out networks apart), the
claim is the widest narrow side w (a layer's fewer channels, 1-16) up to which the solver
takes the layers: the w whose claims leave the zoo rows' geomean of the chosen time against
cuDNN's least (the pick's time on the layers it does not claim), and none where no w beats
the pick alone. The held-out rows are scored with the zoo's w. No GPU:

    python bench/pointwise_first.py RUN.json [RUN.json ...] [--json] [--out OUT]

Prints a table; writes OUT.json (cases, `first`: the spec's FIRST entry for sm90) with --out.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

SOLVER = "ConvTritonPointwise"


def narrow_width(key: str) -> int:
    """A pointwise layer's fewer channels, from its FindDb key (the direction's input channels
    first, the filter, then the output's)."""
    parts = key.split("-")
    at = next(i for i, part in enumerate(parts) if "x" in part)
    return min(int(parts[0]), int(parts[at + 1]))


def read_rows(paths: list[Path]) -> list[dict]:
    """(case, key, held_out, narrow, pick/cuDNN, ours/cuDNN) per timed layer; a later run's
    row replaces an earlier one's of the same key."""
    rows: dict[str, dict] = {}
    for path in paths:
        for r in json.loads(path.read_text())["rows"]:
            sols = r.get("solvers", {})
            ours = next((v for k, v in sols.items() if k.startswith(SOLVER)), None)
            pick = sols.get("pick")
            base = r.get("cudnn_gpu_ms")
            if not ours or not pick or not base or "gpu_ms" not in ours or \
                    "gpu_ms" not in pick or pick.get("solver", "").startswith(SOLVER):
                continue
            rows[r["key"]] = {"case": r["case"], "key": r["key"], "network": r["network"],
                              "layer": r["layer"], "held_out": bool(r.get("held_out")),
                              "narrow": narrow_width(r["key"]), "pick_solver": pick["solver"],
                              "pick": pick["gpu_ms"] / base, "ours": ours["gpu_ms"] / base}
    return list(rows.values())


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def with_claim(rows: list[dict], width: int) -> float:
    return geomean([r["ours"] if r["narrow"] <= width else r["pick"] for r in rows])


def fit(rows: list[dict]) -> dict:
    """Per case: the claim's width (0: none) and the geomeans before and with it."""
    out = {}
    for case in sorted({r["case"] for r in rows}):
        zoo = [r for r in rows if r["case"] == case and not r["held_out"]]
        held = [r for r in rows if r["case"] == case and r["held_out"]]
        best, width = geomean([r["pick"] for r in zoo]), 0
        for w in sorted({r["narrow"] for r in zoo}):
            g = with_claim(zoo, w)
            if g < best - 1e-9:
                best, width = g, w
        out[case] = {
            "layers": len(zoo), "held_out_layers": len(held), "width": width,
            "claimed": sum(r["narrow"] <= width for r in zoo),
            "pick": geomean([r["pick"] for r in zoo]), "ours": geomean([r["ours"] for r in zoo]),
            "with_claim": with_claim(zoo, width),
            "held_out_pick": geomean([r["pick"] for r in held]),
            "held_out_with_claim": with_claim(held, width),
            "worst_ours": max(((r["ours"], f"{r['network']} {r['layer']}") for r in zoo),
                              default=(float("nan"), ""))}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="bench/solver_alternatives.py JSON")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--out", type=Path, help="also write OUT.json")
    args = ap.parse_args(argv)
    missing = [str(p) for p in args.runs if not p.is_file()]
    if missing:
        print(f"pointwise_first: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        rows = read_rows(args.runs)
    except (OSError, ValueError, KeyError) as exc:
        print(f"pointwise_first: not a solver_alternatives run: {exc}", file=sys.stderr)
        return 3
    cases = fit(rows)
    result = {"runs": [p.name for p in args.runs], "cases": cases,
              "first": {"sm90": {c: v["width"] for c, v in cases.items() if v["width"]}}}
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print("| case | layers | pick / cuDNN | pointwise / cuDNN | claim up to | claimed | with the "
          "claim | held out | pick | with |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for case, v in cases.items():
        print(f"| {case} | {v['layers']} | {v['pick']:.2f} | {v['ours']:.2f} | {v['width']} | "
              f"{v['claimed']} | {v['with_claim']:.2f} | {v['held_out_layers']} | "
              f"{v['held_out_pick']:.2f} | {v['held_out_with_claim']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
