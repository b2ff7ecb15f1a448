"""Where the im2col form should claim first place, from timed runs of it beside the kernels
(bench/solver_alternatives.py's JSON, as bench/gpu_im2col.sh writes them; no GPU needed).

Per layer: the im2col solver's GPU time over the fastest other solver timed on the same layer
(what immediate mode would run at best without it) and over cuDNN's, and where the run timed
it (`pick`), immediate mode's first choice over cuDNN's (what a first call gets); the
channels of the
side the column matrix does not hold (`conv_triton_im2col_spec.other_width`: K where x is
gathered, C where dy is), the width its traffic against the product's work goes with.
Per case (`<type>-<direction>-<layout>`): a width and a cap on the column matrix's columns
(CAPS, none first) such that, over the zoo's layers at least that wide and within the cap,
the form beat the best other solver by `--margin` in geomean and on at least `--share` of
them, over `--least` layers at least; of those, the pair whose claims leave the case's layers
fastest against cuDNN: solvers/blas_im2col.py's `IM2COL_FIRST` entry (width, columns; none
where no pair holds). A network's layer two runs timed counts once (the first). The held-out
networks' layers are left out of that choice and reported apart, the rule applied to them as
it stands.

    python bench/im2col_claims.py bench/results/im2col_h100/fp32_w.json ... \\
        --out bench/results/im2col_claims_h100
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import emit, read_json  # noqa: E402

PREFIX = "ConvBlasIm2col"
#: bench/solver_alternatives.py's name for immediate mode's first choice.
PICK = "pick"


#: The column caps tried per case (None: no cap), least first after none.
CAPS: tuple[int | None, ...] = (None, 32, 64, 128, 256, 512)


def _shape(key: str) -> tuple[int, int]:
    """(width, columns): the channels of the side not gathered and the column matrix's
    columns (`conv_triton_im2col_spec.other_width`, `col_shape`)."""
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers.blas_im2col import _view, im2col_spec

    p = ConvProblem.from_key(key)
    view, sizes, _ = _view(p)
    spec = im2col_spec()
    return (int(spec.other_width(view.direction, sizes)),
            int(spec.col_shape(view.direction, sizes)[1]))


def _case(row: dict) -> str:
    """The row's case with the problem's own layout (a 3-D layer's NCDHW or NDHWC: runs
    before 2026-12-07 named 3-D rows by the 2-D layout asked for)."""
    from miopenkernels.problem import ConvProblem

    data_type, direction = row["case"].split("-")[:2]
    return f"{data_type}-{direction}-{ConvProblem.from_key(row['key']).in_layout}"


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def layer_rows(runs: list[dict]) -> list[dict[str, Any]]:
    """Per timed layer where the im2col form and another solver ran: case, key, held_out,
    width, its time over the best other's and over cuDNN's, the best other's over cuDNN's."""
    out = []
    seen = set()
    for run in runs:
        for r in run.get("rows", []):
            layer = (r.get("network"), r.get("layer"), r.get("key"), r.get("n"),
                     bool(r.get("held_out")))
            if layer in seen:
                continue  # a network's layer two steps timed: the first run's row
            seen.add(layer)
            solvers = r.get("solvers", {})
            mine = [n for n in solvers if n.startswith(PREFIX)]
            others = [s["gpu_ms"] for n, s in solvers.items() if not n.startswith(PREFIX)]
            if len(mine) != 1 or not others or not r.get("cudnn_gpu_ms"):
                continue
            ms, best = solvers[mine[0]]["gpu_ms"], min(others)
            pick = solvers.get(PICK)
            width, columns = _shape(r["key"])
            out.append({"case": _case(r), "key": r["key"], "n": r["n"],
                        "held_out": bool(r.get("held_out")), "width": width,
                        "columns": columns,
                        "vs_best": ms / best, "vs_cudnn": ms / r["cudnn_gpu_ms"],
                        "best_vs_cudnn": best / r["cudnn_gpu_ms"],
                        "pick_vs_cudnn": pick["gpu_ms"] / r["cudnn_gpu_ms"] if pick else None})
    return out


def _stats(rows: list[dict], claimed: list[dict]) -> dict[str, Any]:
    """The case's layers with the rule applied: the form where claimed, else the best other;
    where every layer timed immediate mode's first choice (`pick`), also what a first call
    got before and gets with the rule (the form where claimed, else that choice)."""
    chosen = [r["vs_cudnn"] if r in claimed else r["best_vs_cudnn"] for r in rows]
    picked = all(r["pick_vs_cudnn"] is not None for r in rows)
    return {"layers": len(rows), "claimed": len(claimed),
            "before_vs_cudnn": round(_geomean([r["best_vs_cudnn"] for r in rows]), 4),
            "after_vs_cudnn": round(_geomean(chosen), 4),
            "claimed_vs_best": round(_geomean([r["vs_best"] for r in claimed]), 4)
            if claimed else None,
            "pick_before_vs_cudnn": round(_geomean([r["pick_vs_cudnn"] for r in rows]), 4)
            if picked else None,
            "pick_after_vs_cudnn": round(_geomean([r["vs_cudnn"] if r in claimed else
                                                   r["pick_vs_cudnn"] for r in rows]), 4)
            if picked else None}


def _meets(claimed: list[dict], margin: float, share: float, least: int) -> bool:
    """Whether claims on these layers (`least` of them at least) hold: the form's time over
    the best other's has a geomean of at most `margin` and it won on `share` of them."""
    wins = sum(r["vs_best"] < 1.0 for r in claimed)
    return len(claimed) >= least and wins >= share * len(claimed) and \
        _geomean([r["vs_best"] for r in claimed]) <= margin


def _claims(rows: list[dict], width: int | None, cap: int | None) -> list[dict]:
    return [r for r in rows if width is not None and r["width"] >= width and
            (cap is None or r["columns"] <= cap)]


def choose(rows: list[dict], margin: float, share: float, least: int) -> dict[str, Any]:
    """Per case, over the fitted (not held-out) layers: of the (width, cap) pairs, a cap of
    CAPS and a width whose claims (layers at least that wide within the cap) meet the rule
    (`_meets`), the one whose claims leave the case's layers fastest against cuDNN (on a tie
    the first: no cap, then the least width); the figures before and after on both sets."""
    result: dict[str, Any] = {}
    for case in sorted({r["case"] for r in rows}):
        mine = [r for r in rows if r["case"] == case]
        fit = [r for r in mine if not r["held_out"]]
        width: int | None = None
        cap: int | None = None
        best = math.inf
        for c in CAPS:
            within = [r for r in fit if c is None or r["columns"] <= c]
            for w in sorted({r["width"] for r in within}):
                if not _meets(_claims(within, w, None), margin, share, least):
                    continue
                after = _stats(fit, _claims(fit, w, c))["after_vs_cudnn"]
                if after < best - 1e-9:
                    width, cap, best = w, c, after
        entry: dict[str, Any] = {"width": width, "columns": cap}
        for name, part in (("fit", fit), ("held_out", [r for r in mine if r["held_out"]])):
            entry[name] = _stats(part, _claims(part, width, cap)) if part else None
        result[case] = entry
    return result


def table(result: dict[str, Any]) -> str:
    lines = ["| case | width from | columns up to | set | layers | claimed | "
             "best other / cuDNN | "
             "with the rule | claimed: im2col / best other | first choice / cuDNN | "
             "with the rule |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for case, e in result.items():
        for name in ("fit", "held_out"):
            s = e[name]
            if not s:
                continue
            lines.append(f"| {case} | {e['width'] if e['width'] is not None else '-'} | "
                         f"{e['columns'] if e['columns'] is not None else '-'} | {name} | "
                         f"{s['layers']} | {s['claimed']} | {s['before_vs_cudnn']:.3f}"
                         f" | {s['after_vs_cudnn']:.3f} | {s['claimed_vs_best'] or '-'} | "
                         f"{s['pick_before_vs_cudnn'] or '-'} | "
                         f"{s['pick_after_vs_cudnn'] or '-'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="solver_alternatives JSON files")
    ap.add_argument("--margin", type=float, default=0.95,
                    help="geomean of im2col over the best other at most this (0.95)")
    ap.add_argument("--share", type=float, default=2 / 3,
                    help="share of the claimed layers it must win (2/3)")
    ap.add_argument("--least", type=int, default=3, help="fewest layers a claim rests on (3)")
    ap.add_argument("--out", type=Path, help="write OUT.json and OUT.md")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    runs = []
    for path in args.runs:
        try:
            runs.append(read_json(path))
        except (OSError, ValueError) as exc:
            print(f"im2col_claims: {path}: {exc}; give solver_alternatives JSON files",
                  file=sys.stderr)
            return 2
    rows = layer_rows(runs)
    if not rows:
        print("im2col_claims: no layer with the im2col form and another solver timed",
              file=sys.stderr)
        return 3
    result = {"runs": [str(p) for p in args.runs], "margin": args.margin, "share": args.share,
              "least": args.least, "cases": choose(rows, args.margin, args.share, args.least)}
    emit(result, table(result["cases"]), args.out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
