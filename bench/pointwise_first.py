"""Where the pointwise row GEMMs (solvers/triton_pointwise.py) should rank first, from runs of
bench/solver_alternatives.py that timed them beside immediate mode's first choice (`pick`).

Per case (`<type>-<direction>-<layout>`), over the zoo's layers (held-out networks apart), the
claim is a pair (w, r): the solver takes the layers of at most w channels on the narrow side (a
layer's fewer channels, 1-16) and at least r rows (positions of every image): the pair whose
claims leave the zoo rows' geomean of the chosen time against cuDNN's least (the pick's time on
the layers it does not claim), and none where no pair beats the pick alone (ties: the narrower
claim). Where no pair gains, a bounded claim (w, r, most, 1): the layers of at most w channels
on the narrow side, that side read (forward's input, backward data's output gradient), and r to
`most` rows, the least that gains (ties: the narrower range). A claim may not take a zoo layer
the solver ran more than MAX_LOSS times the pick's time on (a geomean's gain bought with one
layer's loss). The held-out rows are scored with the zoo's claim. No GPU:

    python bench/pointwise_first.py RUN.json [RUN.json ...] [--json] [--out OUT]

Prints a table; writes OUT.json (cases, `first`: the spec's FIRST entry for sm90) with --out.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from miopenkernels.problem import ConvProblem

SOLVER = "ConvTritonPointwise"
#: The most a claimed zoo layer may take against the pick's time.
MAX_LOSS = 1.25


def narrow_width(key: str) -> int:
    """A pointwise layer's fewer channels, from its FindDb key."""
    p = ConvProblem.from_key(key)
    return min(p.c, p.k)


def rows_of(key: str) -> int:
    """A pointwise layer's rows from its FindDb key: the batch times the positions (a 1x1
    filter at stride 1: the input's and the output's alike)."""
    p = ConvProblem.from_key(key)
    return p.n * math.prod(p.in_spatial)


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
                              "narrow": narrow_width(r["key"]), "rows": rows_of(r["key"]),
                              "reads_narrow": reads_narrow(r["key"], r["case"]),
                              "pick_solver": pick["solver"],
                              "pick": pick["gpu_ms"] / base, "ours": ours["gpu_ms"] / base}
    return list(rows.values())


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def reads_narrow(key: str, case: str) -> bool:
    """Whether the side a layer's direction reads is its narrow one, the other wider (the
    spec's `side` 1): forward's input channels, backward data's filters."""
    p = ConvProblem.from_key(key)
    read, written = (p.c, p.k) if case.split("-")[1] == "F" else (p.k, p.c)
    return read < written


def claimed(row: dict, claim: tuple[int, ...]) -> bool:
    if row["narrow"] > claim[0] or row["rows"] < claim[1]:
        return False
    return len(claim) == 2 or (row["rows"] <= claim[2] and (not claim[3] or row["reads_narrow"]))


def with_claim(rows: list[dict], claim: tuple[int, ...]) -> float:
    return geomean([r["ours"] if claimed(r, claim) else r["pick"] for r in rows])


def _best(zoo: list[dict], candidates: list[tuple[int, ...]]) -> tuple[float, tuple[int, ...]]:
    """The candidate claim of least geomean over the zoo rows that loses no claimed layer more
    than MAX_LOSS, the first of equals; (the pick's geomean, (0, 0)) where none gains."""
    best, claim = geomean([r["pick"] for r in zoo]), (0, 0)
    for c in candidates:
        if any(claimed(r, c) and r["ours"] > MAX_LOSS * r["pick"] for r in zoo):
            continue
        g = with_claim(zoo, c)
        if g < best - 1e-9:
            best, claim = g, c
    return best, claim


def fit(rows: list[dict]) -> dict:
    """Per case: the claim (width, rows[, most rows, 1]; width 0: none) and the geomeans
    before and with it."""
    out = {}
    for case in sorted({r["case"] for r in rows}):
        zoo = [r for r in rows if r["case"] == case and not r["held_out"]]
        held = [r for r in rows if r["case"] == case and r["held_out"]]
        widths = sorted({r["narrow"] for r in zoo})
        counts = sorted({r["rows"] for r in zoo})
        _, claim = _best(zoo, [(w, least) for w in widths
                               for least in sorted({*counts, 0}, reverse=True)])
        if not claim[0]:
            _, claim = _best(zoo, [(w, least, most, 1) for w in widths
                                   for least in reversed(counts)
                                   for most in counts if most >= least])
        width = claim[0]
        out[case] = {
            "layers": len(zoo), "held_out_layers": len(held), "width": width,
            "least_rows": claim[1], "claim": list(claim),
            "claimed": sum(claimed(r, claim) for r in zoo),
            "pick": geomean([r["pick"] for r in zoo]), "ours": geomean([r["ours"] for r in zoo]),
            "with_claim": with_claim(zoo, claim),
            "held_out_pick": geomean([r["pick"] for r in held]),
            "held_out_with_claim": with_claim(held, claim),
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
              "first": {"sm90": {c: v["claim"] for c, v in cases.items() if v["width"]}}}
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print("| case | layers | pick / cuDNN | pointwise / cuDNN | claim up to | rows | claimed "
          "| with the claim | held out | pick | with |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for case, v in cases.items():
        claim = v["claim"]
        rows = f"{claim[1]}-{claim[2]}, narrow read" if len(claim) > 2 else f"from {claim[1]}"
        print(f"| {case} | {v['layers']} | {v['pick']:.2f} | {v['ours']:.2f} | {v['width']} | "
              f"{rows} | {v['claimed']} | {v['with_claim']:.2f} | "
              f"{v['held_out_layers']} | "
              f"{v['held_out_pick']:.2f} | {v['held_out_with_claim']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
