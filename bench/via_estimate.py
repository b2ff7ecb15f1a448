"""The Via route's time estimated where no run timed it (no GPU): an NCHW problem through the
transposes and the NHWC kernel takes that kernel's time on the NHWC problem plus the copies'.

From bench/zoo.py runs of one type and direction, NCHW and NHWC (one run with both layouts,
or several: the first that timed a layer in a layout speaks for it), over the layers both
layouts timed:
- the copies' cost, measured where the NCHW problem went through a Via solver and the NHWC
  one ran the Via solver's inner kernel itself (the same object and parameters): the
  difference of the two times per byte the copies read and write (every operand, each read
  and written once);
- then, on the layers whose NCHW problem ran another solver (`--solver`, default the NCHW
  implicit GEMM), the Via route's estimate, the NHWC problem's measured time plus the copies
  at the median cost per byte of the measured layers of a similar size (within a factor of 2
  of its bytes, wider where fewer than 5 are), and a pessimistic one with the copies at those
  layers' `--quantile` point, against the NCHW time measured, per layer.

3-D layers (`--dims 3`) read NCDHW for NCHW and NDHWC for NHWC, the 3-D family's solvers
(ConvTriton3dViaNdhwc* through ConvTriton3d*) for the Via route and its kernel. Where the case's
own runs hold no Via layers (FP32, whose NCDHW problems never went through copies), the copies'
cost per byte may come from another case's (`--copies-case FP16-F`, from `--copies-runs`):
the copies are transposes whose time goes with the bytes they move. `--from-nhwc` turns it
around: the channels-last problems (of `--solver`) through the channel-planar kernels, the
NCHW twin's measured time plus the copies (the ViaNchw solvers' route).

    python bench/via_estimate.py NCHW_RUN [NHWC_RUN] --case FP16-W [--solver NAME]
        [--only grouped|packed|strided-1x1|aligned|misaligned-1x1|few-channel]
        [--twin-solver NAME] [--from-nhwc] [--dims 2|3]
        [--copies-case CASE --copies-runs RUN[,RUN]] [--out STEM] [--json]

Exit 2 where a file is not a zoo.py result, or too few layers measure the copies.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import emit, read_json  # noqa: E402
from _results import quantile as quantile_of  # noqa: E402

SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}
BYTES = {"FP16": 2, "BF16": 2, "FP32": 4}
ONLY = ("grouped", "packed", "strided-1x1", "aligned", "misaligned-1x1", "few-channel")
#: Each dimensionality's layouts (channel-planar, channels-last) and solver names (the Via
#: route's, its kernel's; `{}` the direction's suffix).
LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}
SOLVERS = {2: ("ConvTritonImplicitGemmViaNhwc{}", "ConvTritonImplicitGemm{}"),
           3: ("ConvTriton3dViaNdhwc{}", "ConvTriton3d{}")}


def _rows(paths: list[str], case: str, dims: int = 2) -> dict[str, dict[tuple, dict]]:
    """{layout: {(network, layer, batch, held_out): row}} of `case` (`FP16-W`) in the runs,
    the layouts named NCHW and NHWC (NCDHW and NDHWC rows where `dims` is 3)."""
    out: dict[str, dict[tuple, dict]] = {"NCHW": {}, "NHWC": {}}
    named = dict(zip(LAYOUTS[dims], ("NCHW", "NHWC"), strict=True))
    for path in paths:
        try:
            data = read_json(path)
        except ValueError as exc:
            raise ValueError(f"{path}: not a bench/zoo.py result ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
            raise ValueError(f"{path}: not a bench/zoo.py result")
        for r in data["rows"]:
            own = r["case"].rsplit("-", 1)[-1]
            layout = named.get(own, "")
            if r.get("ratio") and r["case"] == f"{case}-{own}" and layout in out:
                # The first run given that timed a layer in a layout speaks for it.
                key = (r["network"], r["layer"], int(r["n"]), bool(r["held_out"]))
                out[layout].setdefault(key, r)
    return out


def copied_bytes(key: str) -> int:
    """The bytes the Via route's copies read and write for a problem's FindDb key: each
    operand of the convolution once each way (the output's copy back included)."""
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers.reference import conv_tensor_shapes

    p = ConvProblem.from_key(key)
    elements = sum(math.prod(shape) for shape in conv_tensor_shapes(p).values())
    return 2 * elements * BYTES[p.in_type]


def _kind(key: str) -> set[str]:
    from miopenkernels.kernels.conv_triton_spec import PACKED_BELOW
    from miopenkernels.problem import ConvProblem

    p = ConvProblem.from_key(key)
    kinds = set()
    if p.c < 16:
        kinds.add("few-channel")  # below the Via tables' VIA_NHWC_MIN_C
    if p.groups > 1 and p.groups != p.c:
        kinds.add("grouped")
        if min(p.c, p.k) // p.groups < PACKED_BELOW:
            kinds.add("packed")
    if p.filter == (1, 1) and max(p.stride) > 1:
        kinds.add("strided-1x1")
    if p.c % 16 == 0 and p.k % 16 == 0:
        kinds.add("aligned")  # no channel padding: the relaid problem is the layout's alone
    pixels = math.prod(p.in_spatial)
    if set(p.filter) == {1} and set(p.stride) == {1} and not any(p.pad) and p.groups == 1 \
            and pixels > 1 and pixels * BYTES[p.in_type] % 16:
        kinds.add("misaligned-1x1")  # a channel plane not a whole number of 16-byte vectors
    return kinds


def _channels_ratio(key: str) -> float:
    """C*K/(C+K) of a problem: multiply-adds per element the copies move, per pixel."""
    from miopenkernels.problem import ConvProblem

    p = ConvProblem.from_key(key)
    return round(p.c * p.k / (p.c + p.k), 1)


def copies_ms(pairs: list[tuple[int, float]], nbytes: int, q: float) -> float:
    """The copies' ms for `nbytes` at the `q` point of the cost per byte measured on the
    layers of a similar size (within 2x of its bytes; 4x, 8x... where fewer than 5 are)."""
    span = 2.0
    while True:
        near = [t / b for b, t in pairs if nbytes / span <= b <= nbytes * span]
        if len(near) >= 5 or span > 1e6:
            break
        span *= 2
    return max(0.0, quantile_of(near, q) * nbytes) if near else math.nan


def copy_pairs(paths: list[str], case: str, dims: int = 2) -> list[tuple[int, float]]:
    """(bytes the copies move, their ms) over the layers of `case` whose channel-planar
    problem went through the Via solver and whose channels-last one ran its kernel: the
    difference of the two times."""
    direction = case.split("-")[1]
    via, inner = (name.format(SUFFIX[direction]) for name in SOLVERS[dims])
    rows = _rows(paths, case, dims)
    pairs = []
    for k in rows["NCHW"]:
        a, b = rows["NCHW"][k], rows["NHWC"].get(k)
        if b is not None and a["solver"] == via and b["solver"] == inner:
            pairs.append((copied_bytes(a["key"]), a["ours_gpu_ms"] - b["ours_gpu_ms"]))
    if len(pairs) < 5:
        lay = LAYOUTS[dims]
        raise ValueError(f"{len(pairs)} layers ran {via} in {lay[0]} and {inner} in {lay[1]}; "
                         "too few to measure the copies")
    return pairs


def estimate(paths: list[str], case: str, solver: str | None, only: str | None,
             quantile: float, dims: int = 2, copies_case: str | None = None,
             copies_runs: list[str] | None = None, twin_solver: str | None = None,
             planar: bool = True) -> dict[str, Any]:
    """The Via route's estimate on the channel-planar problems of `case` (`planar`), or on
    its channels-last ones through the channel-planar kernels: the twin layout's measured
    time plus the copies."""
    direction = case.split("-")[1]
    target = solver or SOLVERS[dims][1].format(SUFFIX[direction])
    rows = _rows(paths, case, dims)
    own, twin = ("NCHW", "NHWC") if planar else ("NHWC", "NCHW")
    o, t = own.lower(), twin.lower()
    pairs = copy_pairs(copies_runs or paths, copies_case or case, dims)
    layers = []
    for k in sorted(k for k in rows[own] if k in rows[twin]):
        a, b = rows[own][k], rows[twin][k]
        if (target != "*" and a["solver"] not in target.split(",")) or \
                (only and only not in _kind(a["key"])) or \
                (twin_solver and b["solver"] != twin_solver):
            continue
        nbytes = copied_bytes(a["key"])
        est = b["ours_gpu_ms"] + copies_ms(pairs, nbytes, 0.5)
        worst = b["ours_gpu_ms"] + copies_ms(pairs, nbytes, quantile)
        layers.append({"network": k[0], "layer": k[1], "n": k[2], "held_out": k[3],
                       "key": a["key"], f"{o}_solver": a["solver"],
                       "channels_ratio": _channels_ratio(a["key"]),
                       f"{o}_ms": round(a["ours_gpu_ms"], 4), f"{t}_solver": b["solver"],
                       f"{t}_ms": round(b["ours_gpu_ms"], 4), "via_ms": round(est, 4),
                       "via_ms_pessimistic": round(worst, 4),
                       f"via_over_{o}": round(est / a["ours_gpu_ms"], 3),
                       f"pessimistic_over_{o}": round(worst / a["ours_gpu_ms"], 3),
                       f"{o}_vs_cudnn": round(a["ratio"], 3),
                       "via_vs_cudnn": round(est / a["cudnn_gpu_ms"], 3)})
    out = {"runs": [Path(p).name for p in paths], "case": case, "dims": dims}
    if not planar:
        out["problems"] = "channels-last"
    return {**out, "solver": target, "only": only,
            "copies": {"case": copies_case or case,
                       "runs": [Path(p).name for p in copies_runs or paths],
                       "pairs": len(pairs), "quantile": quantile,
                       "ms_per_gb_median": round(quantile_of(
                           [t / b * 1e9 for b, t in pairs], 0.5), 4)},
            "layers": layers}


def markdown(result: dict[str, Any]) -> str:
    c = result["copies"]
    planar, last = LAYOUTS[result.get("dims", 2)]
    own, twin = (last, planar) if result.get("problems") == "channels-last" else (planar, last)
    o, t = ("nhwc", "nchw") if own == last else ("nchw", "nhwc")
    lines = [f"Via route estimated for {result['case']}-{own} layers on {result['solver']}"
             f"{' (' + result['only'] + ')' if result['only'] else ''}, from "
             f"{', '.join(result['runs'])}. Copies measured on {c['pairs']} layers "
             f"of {c.get('case', result['case'])} ({', '.join(c.get('runs', result['runs']))}) "
             f"(median {c['ms_per_gb_median']} ms/GB); the estimate takes the median cost per "
             f"byte of the layers of a similar size, the pessimistic one their "
             f"{c['quantile']:.0%} point.", "",
             f"| network | layer | {own} ms | {twin} ms | Via est. ms | pessimistic "
             f"| est./{own} |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["layers"]:
        held = " (held out)" if r["held_out"] else ""
        lines.append(f"| {r['network']}{held} | {r['layer']} | {r[o + '_ms']} | {r[t + '_ms']} "
                     f"| {r['via_ms']} | {r['via_ms_pessimistic']} | {r['via_over_' + o]} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="bench/zoo.py results (.json or .json.gz)")
    ap.add_argument("--case", required=True, help="type and direction, e.g. FP16-W")
    ap.add_argument("--solver", help="the NCHW problems' solver to estimate against, or "
                    "several, comma-separated, or * for any (default: the NCHW implicit GEMM)")
    ap.add_argument("--twin-solver", metavar="NAME",
                    help="only layers whose problem in the other layout ran this solver (the "
                    "one the route runs)")
    ap.add_argument("--from-nhwc", action="store_true",
                    help="estimate the channels-last problems through the channel-planar "
                    "kernels instead")
    ap.add_argument("--only", choices=ONLY, help="only layers of this kind")
    ap.add_argument("--dims", type=int, choices=(2, 3), default=2,
                    help="2-D layers (NCHW, NHWC) or 3-D ones (NCDHW, NDHWC)")
    ap.add_argument("--copies-case", metavar="CASE",
                    help="measure the copies on this case's layers (default: --case)")
    ap.add_argument("--copies-runs", metavar="RUN[,RUN]",
                    help="the runs the copies are measured on (default: the runs given)")
    ap.add_argument("--quantile", type=float, default=0.9,
                    help="the pessimistic estimate's point of the similar layers' copy costs")
    ap.add_argument("--out", type=Path, help="path stem of the .json and .md written")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    parts = args.case.split("-")
    if len(parts) != 2 or parts[0] not in BYTES or parts[1] not in SUFFIX:
        print(f"error: --case {args.case!r} is not <type>-<direction> (e.g. FP16-W)",
              file=sys.stderr)
        return 2
    copies = args.copies_case.split("-") if args.copies_case else ["FP16", "F"]
    if len(copies) != 2 or copies[0] not in BYTES or copies[1] not in SUFFIX:
        print(f"error: --copies-case {args.copies_case!r} is not <type>-<direction> "
              "(e.g. FP16-F)", file=sys.stderr)
        return 2
    if not 0.5 <= args.quantile <= 1.0:
        print("error: --quantile must be between 0.5 and 1", file=sys.stderr)
        return 2
    try:
        result = estimate(args.runs, args.case, args.solver, args.only, args.quantile,
                          args.dims, args.copies_case,
                          args.copies_runs.split(",") if args.copies_runs else None,
                          args.twin_solver, not args.from_nhwc)
    except (OSError, ValueError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    emit(result, markdown(result), args.out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
