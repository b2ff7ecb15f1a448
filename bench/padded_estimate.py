"""The 3-D relaid route's time on channel-planar layers whose channel counts need padding, where
no run timed it (no GPU).

An NCDHW problem whose channels miss the aligned objects' multiple goes through NDHWC with its
channels rounded up (solvers/triton_3d_relaid.py): the padded problem runs the 3-D kernel's
aligned channels-last object, a problem no run timed. From bench/zoo.py runs of one type and
direction:
- the kernel's throughput, multiply-adds per ms, on the layers whose channel counts take the
  aligned object in NDHWC and that ran `--solver` there;
- per NCDHW layer that ran `--solver` and whose channels need padding (both at least the
  multiple: few-channel stems are left out), the estimate: the padded problem's multiply-adds
  at the median throughput of the aligned layers of a similar size (within a factor of 2 of
  its multiply-adds, wider where fewer than 3 are), plus the copies (the padded problem's
  operands each way) at the cost per byte that `--copies-case`'s Via layers measured
  (bench/via_estimate.py); the pessimistic one at those layers' lowest throughput and the
  copies at `--quantile`; against the NCDHW time measured and cuDNN's. `--layout NDHWC` does
  the same for the NDHWC layers, whose padded copies the Padded solvers make in place (the
  copies counted as every operand's, an upper bound).

    python bench/padded_estimate.py RUN [RUN ...] --case FP32-F --solver ConvTriton3dTf32x3Fwd
        --copies-case FP16-F --copies-runs RUN[,RUN] [--layout NCDHW|NDHWC] [--quantile 0.9]
        [--out STEM] [--json]

The first run given that timed a layer in a layout speaks for it. Exit 2 where a file is not a
zoo.py result, an argument is malformed, or no aligned layer measures the throughput.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import via_estimate  # noqa: E402
from _results import emit  # noqa: E402

#: The fewest aligned layers a throughput is taken over (the window widens until it has them).
MIN_NEAR = 3


def _problem(key: str) -> Any:
    from miopenkernels.problem import ConvProblem

    return ConvProblem.from_key(key)


def throughputs(rows: dict[tuple, dict], solver: str) -> list[tuple[float, float]]:
    """(multiply-adds, multiply-adds per ms) of the NDHWC layers that took the aligned object
    and ran `solver`."""
    from miopenkernels.solvers._conv import macs
    from miopenkernels.solvers.triton_3d_relaid import relaid_problem

    out = []
    for r in rows.values():
        p = _problem(r["key"])
        if r["solver"] == solver and relaid_problem(p, "NDHWC") is None and \
                p.c % 16 == 0 and p.k % 16 == 0:
            out.append((float(macs(p)), macs(p) / r["ours_gpu_ms"]))
    return out


def near(points: list[tuple[float, float]], work: float) -> list[float]:
    """The throughputs of the layers within a factor of 2 of `work` multiply-adds (4, 8...
    where fewer than MIN_NEAR are)."""
    span = 2.0
    while True:
        found = [t for w, t in points if work / span <= w <= work * span]
        if len(found) >= MIN_NEAR or span > 1e6:
            return found
        span *= 2


def estimate(paths: list[str], case: str, solver: str, copies_case: str,
             copies_runs: list[str], quantile: float, layout: str = "NCDHW"
             ) -> dict[str, Any]:
    """The estimates on the `layout` layers (NCDHW: through NDHWC padded; NDHWC: padded in
    place) whose channels need padding."""
    from miopenkernels.solvers._conv import macs
    from miopenkernels.solvers.triton_3d_relaid import relaid_problem

    rows = via_estimate._rows(paths, case, 3)
    own = rows["NCHW" if layout == "NCDHW" else "NHWC"]
    o = layout.lower()
    points = throughputs(rows["NHWC"], solver)
    if not points:
        raise ValueError(f"no NDHWC layer of {case} took the aligned object on {solver}; "
                         "nothing measures its throughput")
    pairs = via_estimate.copy_pairs(copies_runs, copies_case, 3)
    layers = []
    for k in sorted(own):
        r = own[k]
        p = _problem(r["key"])
        q = relaid_problem(p, layout)
        if r["solver"] != solver or q is None or (q.c, q.k) == (p.c, p.k) or \
                min(p.c, p.k) // p.groups < 16:
            continue
        work = float(macs(q))
        tps = near(points, work)
        nbytes = via_estimate.copied_bytes(q.key())
        est = work / statistics.median(tps) + via_estimate.copies_ms(pairs, nbytes, 0.5)
        worst = work / min(tps) + via_estimate.copies_ms(pairs, nbytes, quantile)
        layers.append({"network": k[0], "layer": k[1], "n": k[2], "held_out": k[3],
                       "key": r["key"], "padded_key": q.key(),
                       f"{o}_ms": round(r["ours_gpu_ms"], 4),
                       "est_ms": round(est, 4), "pessimistic_ms": round(worst, 4),
                       f"est_over_{o}": round(est / r["ours_gpu_ms"], 3),
                       f"pessimistic_over_{o}": round(worst / r["ours_gpu_ms"], 3),
                       f"{o}_vs_cudnn": round(r["ratio"], 3),
                       "est_vs_cudnn": round(est / r["cudnn_gpu_ms"], 3)})
    out = {"layout": layout} if layout != "NCDHW" else {}
    return {"runs": [Path(p).name for p in paths], "case": case, **out, "solver": solver,
            "throughput": {"layers": len(points),
                           "macs_per_ms": [round(t) for _, t in sorted(points)]},
            "copies": {"case": copies_case, "runs": [Path(p).name for p in copies_runs],
                       "pairs": len(pairs), "quantile": quantile},
            "layers": layers}


def markdown(result: dict[str, Any]) -> str:
    t = result["throughput"]
    lay = result.get("layout", "NCDHW")
    o = lay.lower()
    lines = [f"The relaid route estimated on the {result['case']}-{lay} layers whose channels "
             f"need padding, from {', '.join(result['runs'])}: {result['solver']}'s aligned "
             f"object measured on {t['layers']} NDHWC layers, the copies on "
             f"{result['copies']['pairs']} of {result['copies']['case']}.", "",
             f"| network | layer | {lay} ms | est. ms | pessimistic ms | est./{lay} "
             "| est./cuDNN |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for e in result["layers"]:
        held = " (held out)" if e["held_out"] else ""
        lines.append(f"| {e['network']}{held} | {e['layer']} | {e[o + '_ms']} | {e['est_ms']} "
                     f"| {e['pessimistic_ms']} | {e['est_over_' + o]} | {e['est_vs_cudnn']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="bench/zoo.py results (.json or .json.gz)")
    ap.add_argument("--case", required=True, help="<type>-<direction>, e.g. FP32-F")
    ap.add_argument("--solver", required=True,
                    help="the 3-D solver the layers ran and the route runs (its aligned object)")
    ap.add_argument("--copies-case", required=True, help="the case whose Via layers measure "
                    "the copies, e.g. FP16-F")
    ap.add_argument("--copies-runs", required=True, metavar="RUN[,RUN]")
    ap.add_argument("--layout", choices=("NCDHW", "NDHWC"), default="NCDHW",
                    help="the layers estimated: NCDHW through NDHWC, or NDHWC padded in place")
    ap.add_argument("--quantile", type=float, default=0.9,
                    help="the pessimistic estimate's point of the copies' cost per byte")
    ap.add_argument("--out", type=Path, help="path stem of the .json and .md written")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    for name, value in (("--case", args.case), ("--copies-case", args.copies_case)):
        parts = value.split("-")
        if len(parts) != 2 or parts[0] not in via_estimate.BYTES or \
                parts[1] not in via_estimate.SUFFIX:
            print(f"error: {name} {value!r} is not <type>-<direction> (e.g. FP32-F)",
                  file=sys.stderr)
            return 2
    if not 0.5 <= args.quantile <= 1.0:
        print("error: --quantile must be between 0.5 and 1", file=sys.stderr)
        return 2
    try:
        result = estimate(args.runs, args.case, args.solver, args.copies_case,
                          args.copies_runs.split(","), args.quantile, args.layout)
    except (OSError, ValueError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    emit(result, markdown(result), args.out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
