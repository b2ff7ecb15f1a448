"""Where the GEMM library should rank first, fitted from bench/solver_alternatives.py runs of it
against the kernels over the zoo's 1x1 layers (no GPU): what solvers/blas_1x1.py's BLAS_FIRST,
BLAS_FEW, BLAS_MOST_MACS and VIA_FIRST hold, and the figures their comments quote.

Per case, over the zoo part's layers (held-out networks' layers are not looked at), each layer
gives the library's GPU time against cuDNN and the best kernel's measured beside it. A split
claims the layers whose measure (pixels per image for the one call; C*K/(C+K), on more than
one pixel, for the channel-planar backward weights through copies) reaches a threshold: the
fitted threshold is the smallest whose geomean of the picks (the library where claimed, the
best kernel elsewhere) comes within 1% of the best threshold's. A case is listed where at
least MIN_CLAIMED claimed layers run at most GAIN (0.8) of the best kernel's time, whatever
cuDNN takes: a first place goes to the faster solver (an earlier limit against cuDNN's time
left FP32's channels-last cases, where the library took 2.2-2.5x cuDNN with TF32 on and the
kernels 2.9-3.4x, to the model, which chose the three-product kernel at up to 9x the
library's time: bench/results/ranking_zoo_compare-47b51a0.json). The
channel-planar backward weights through copies are fitted on the layers where the Triton 1x1
GEMM does not rank first (its aligned object, pixels a multiple of 16, does not apply;
`triton_1x1.gemm1x1_first`): where it does, it runs ahead of the copies (the solvers'
YIELDS_TO gives it way only to the one-call library): on the 36 zoo layers whose choice that
moved from the copies to it, the committed timings give 1.27 of cuDNN's GPU time before and
1.08 after (bench/results/ranking_zoo_compare-39642db.json).

Where the runtime's alternative to the library is a solver the library's run did not time, a
whole-zoo bench/zoo.py run in which that solver was the pick joins the kernels' side (PICKS):
FP16 backward data NCHW, whose alternative is the Via solver (its table lists the case; the
run timed the plain implicit GEMM alone). Below a listed one-call case's pixel threshold, the
layers whose product's reduction (`GemmCall.k`) is at most a limit may still be the library's
(BLAS_FEW): the largest limit whose picks come within 1% of the best, listed by the same test
over the layers it claims. Over a listed case's claimed layers, the library may keep only
those of at most a number of multiply-adds (BLAS_MOST_MACS): the largest whose picks come
within 1% of the best, where claiming them all does not.

    python bench/first_place.py [RUN.json ...] [--out STEM] [--json]

Exit 2 where a file is not a solver_alternatives.py run of the library.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from functools import cache
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
#: The runs BLAS_FIRST and VIA_FIRST are read from (H200).
RUNS = ("alternatives_blas_f_h200.json", "alternatives_blas_b_h200.json",
        "alternatives_blas_w_h200.json", "alternatives_blas_bf16_h200.json",
        "alternatives_blas_via_w_h200.json", "alternatives_blas_fp32_h200.json.gz",
        "alternatives_blas_fp32_w_h200.json")
#: Per case, the whole-zoo run whose picks join the kernels' side (see the module's text):
#: the FP16 run of tree bf2b0b9, before the library claimed NCHW backward data.
PICKS = {"FP16-B-NCHW": "zoo_h200-fb-bf2b0b9.json.gz"}
#: The fewest layers a listed split claims (a case's tables rest on more than a handful).
MIN_CLAIMED = 20
#: The target the runs measured (an H200: 132 SMs).
TARGET = "sm90-132"
#: The share of the best kernel's time a listed case's claimed layers may take at most.
GAIN = 0.8


def load_run(path: Path) -> dict:
    """A committed run (its JSON, gzip-compressed or not)."""
    sys.path.insert(0, str(RESULTS.parent))
    from _results import read_json

    data: dict = read_json(path)
    return data


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def measure(key: str, through_copies: bool) -> float:
    """What a split compares for a FindDb key: pixels per image for the one call; C*K/(C+K)
    on more than one pixel (0 on one) through copies."""
    c, h, w, _, k = (int(v) if v.isdigit() else 0 for v in key.split("-")[:5])
    if not through_copies:
        return float(h * w)
    return c * k / (c + k) if h * w > 1 else 0.0


def fit(rows: list[tuple[float, float, float]]) -> dict[str, Any]:
    """The split of (measure, library / cuDNN, best kernel / cuDNN) rows: the threshold and
    the geomeans of the library and of the best kernel over the claimed layers, of each over
    the rest, and of the picks over all."""
    def picks(t: float) -> list[float]:
        return [b if m >= t and m > 0 else o for m, b, o in rows]

    candidates = sorted({0.0} | {m for m, _, _ in rows if m > 0})
    picked = {t: float(geomean(picks(t)) or 0.0) for t in candidates}
    least = min(t for t, g in picked.items() if g <= 1.01 * min(picked.values()))
    claimed = [(b, o) for m, b, o in rows if m >= least and m > 0]
    rest = [(b, o) for m, b, o in rows if not (m >= least and m > 0)]
    return {"threshold": least, "layers": len(rows), "claimed": len(claimed),
            "library": geomean([b for b, _ in claimed]),
            "kernels": geomean([o for _, o in claimed]),
            "rest_library": geomean([b for b, _ in rest]),
            "rest_kernels": geomean([o for _, o in rest]),
            "picked": picked[least], "kernels_alone": geomean([o for _, _, o in rows])}


@cache
def gemm1x1_ranks_first(key: str) -> bool:
    """Whether the Triton 1x1 GEMM ranks first on the sm90 problem a FindDb key names."""
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers.triton_1x1 import gemm1x1_first
    from miopenkernels.target import Target

    return gemm1x1_first(ConvProblem.from_key(key), Target.parse(TARGET))


def picked(case: str) -> dict[tuple, float]:
    """{(network, layer, n): GPU time over cuDNN's} of the kernels a case's PICKS run chose."""
    name = PICKS.get(case)
    if name is None:
        return {}
    sys.path.insert(0, str(RESULTS.parent))
    from _results import read_json

    return {(r["network"], r["layer"], r["n"]): r["ours_gpu_ms"] / r["cudnn_gpu_ms"]
            for r in read_json(RESULTS / name)["rows"]
            if r["case"] == case and not r["solver"].startswith("ConvBlas") and
            r.get("rel_err") is not None and r["rel_err"] <= 1e-2 and r.get("cudnn_gpu_ms")}


@cache
def work(key: str) -> int:
    """The multiply-adds of the problem a FindDb key names."""
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers._conv import macs

    return macs(ConvProblem.from_key(key))


def fit_work(rows: list[tuple[float, float, float]]) -> dict[str, Any]:
    """The most multiply-adds of (work, library / cuDNN, best kernel / cuDNN) rows up to which
    the library keeps its claim: the largest whose picks come within 1% of the best, or None
    where claiming every row comes within 1% (no split)."""
    def picks(most: float) -> list[float]:
        return [b if m <= most else o for m, b, o in rows]

    whole = float(geomean([b for _, b, _ in rows]) or 0.0)
    geo = {t: float(geomean(picks(t)) or 0.0) for t in sorted({m for m, _, _ in rows})}
    best = min(geo.values())
    most = max(t for t, g in geo.items() if g <= 1.01 * best)
    split = whole > 1.01 * best and most < max(geo)
    return {"most": most if split else None, "claimed": sum(m <= most for m, _, _ in rows),
            "layers": len(rows), "library_all": whole, "picked": geo[most] if split else whole}


@cache
def reduction(key: str) -> int:
    """The reduction (k) of the library's one call on the problem a FindDb key names."""
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers.blas_1x1 import gemm_call

    call = gemm_call(ConvProblem.from_key(key))
    return 0 if call is None else call.k


def fit_reduction(rows: list[tuple[float, float, float]]) -> dict[str, Any]:
    """The limit of (reduction, library / cuDNN, best kernel / cuDNN) rows under which the
    library claims: the largest whose picks come within 1% of the best (0: none)."""
    def picks(limit: float) -> list[float]:
        return [b if m <= limit else o for m, b, o in rows]

    candidates = sorted({0.0} | {m for m, _, _ in rows})
    geo = {t: float(geomean(picks(t)) or 0.0) for t in candidates}
    most = max(t for t, g in geo.items() if g <= 1.01 * min(geo.values()))
    claimed = [(b, o) for m, b, o in rows if m <= most]
    rest = [(b, o) for m, b, o in rows if m > most]
    return {"limit": most, "layers": len(rows), "claimed": len(claimed),
            "library": geomean([b for b, _ in claimed]),
            "kernels": geomean([o for _, o in claimed]),
            "rest_library": geomean([b for b, _ in rest]),
            "rest_kernels": geomean([o for _, o in rest])}


def _listed(e: dict[str, Any], least: int = MIN_CLAIMED) -> bool:
    """Whether a split's claimed layers (at least `least`) run at most GAIN of the kernels'."""
    lib, ker = e["library"], e["kernels"]
    return lib is not None and ker is not None and e["claimed"] >= least and lib <= GAIN * ker


def cases(data: dict) -> dict[str, dict[str, Any]]:
    """{case: fit and whether it is listed, `through_copies`, and below a one-call case's
    threshold the reduction split (`few`)} of one run."""
    out = {}
    for case, entry in data["summary"].items():
        library, = (s for s in entry["solvers"] if s.startswith("ConvBlasGemm1x1"))
        others = [s for s in entry["solvers"] if s != library]
        copies = "Via" in library
        extra = picked(case)
        rows = []
        keys = []
        for r in data["rows"]:
            times = {s: t["gpu_ms"] / r["cudnn_gpu_ms"] for s, t in r["solvers"].items()}
            mine = times.pop(library, None)
            kernels = [times[o] for o in others if o in times]
            if (r["network"], r["layer"], r["n"]) in extra:
                kernels.append(extra[(r["network"], r["layer"], r["n"])])
            if r["case"] == case and mine is not None and kernels and not r["held_out"] and \
                    not (copies and gemm1x1_ranks_first(r["key"])):
                rows.append((measure(r["key"], copies), mine, min(kernels)))
                keys.append(r["key"])
        e = fit(rows)
        e["through_copies"] = copies
        e["max_rel_err"] = entry[library]["max_rel_err"]
        e["listed"] = _listed(e)
        claimed = [(float(work(k)), b, o) for k, (m, b, o) in zip(keys, rows, strict=True)
                   if m >= e["threshold"] and m > 0]
        if e["listed"] and not copies and claimed:
            e["work"] = fit_work(claimed)
        below = [(float(reduction(k)), b, o) for k, (m, b, o) in zip(keys, rows, strict=True)
                 if m < e["threshold"]]
        if e["listed"] and not copies and below:
            few = fit_reduction(below)
            few["listed"] = few["limit"] > 0 and _listed(few, 1)
            e["few"] = few
        out[case] = e
    return out


def tables(runs: list[dict]) -> dict[str, dict[str, float]]:
    """{"BLAS_FIRST": {case: fewest pixels}, "BLAS_FEW": {case: most reduction below them},
    "BLAS_MOST_MACS": {case: most multiply-adds}, "VIA_FIRST": {case: least C*K/(C+K)}} of
    the listed cases."""
    out: dict[str, dict[str, float]] = {"BLAS_FIRST": {}, "BLAS_FEW": {}, "BLAS_MOST_MACS": {},
                                        "VIA_FIRST": {}}
    for data in runs:
        for case, e in cases(data).items():
            if e["listed"]:
                out["VIA_FIRST" if e["through_copies"] else "BLAS_FIRST"][case] = e["threshold"]
            if e.get("few", {}).get("listed"):
                out["BLAS_FEW"][case] = e["few"]["limit"]
            if e.get("work", {}).get("most") is not None:
                out["BLAS_MOST_MACS"][case] = e["work"]["most"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", help=f"solver_alternatives.py JSON runs (default: {RUNS})")
    ap.add_argument("--out", help="path stem of a .json result")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    paths = [Path(p) for p in args.runs] or [RESULTS / r for r in RUNS]
    try:
        runs = [load_run(p) for p in paths]
        result = {"runs": [p.name for p in paths],
                  "cases": {c: e for d in runs for c, e in cases(d).items()},
                  "tables": tables(runs)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError) as exc:
        print(f"first_place: not a bench/solver_alternatives.py run of the library "
              f"({type(exc).__name__}: {exc}); pass such JSON results", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print("| case | layers | split from | claimed | library / cuDNN | kernels / cuDNN | "
          "rest: library, kernels | picks | kernels alone | listed |")
    print("| --- " * 10 + "|")
    def f(v: float | None) -> str:
        return "" if v is None else f"{v:.3f}"

    for case, e in result["cases"].items():
        print(f"| {case} | {e['layers']} | {e['threshold']:g} | {e['claimed']} | "
              f"{f(e['library'])} | {f(e['kernels'])} | {f(e['rest_library'])}, "
              f"{f(e['rest_kernels'])} | {f(e['picked'])} | {f(e['kernels_alone'])} | "
              f"{'yes' if e['listed'] else ''} |")
        split = e.get("work", {})
        if split.get("most") is not None:
            print(f"| {case} up to {split['most']:.4g} multiply-adds | {split['layers']} | | "
                  f"{split['claimed']} | picks {f(split['picked'])} (library alone "
                  f"{f(split['library_all'])}) | | | | | yes |")
        few = e.get("few")
        if few and few["limit"]:
            print(f"| {case} below {e['threshold']:g} | {few['layers']} | reduction <= "
                  f"{few['limit']:g} | {few['claimed']} | {f(few['library'])} | "
                  f"{f(few['kernels'])} | {f(few['rest_library'])}, {f(few['rest_kernels'])} "
                  f"| | | {'yes' if few['listed'] else ''} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
