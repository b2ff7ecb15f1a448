"""The GEMM library's time in a direction no run timed it, estimated from its times on the same
layers' other directions (no GPU).

The library runs every direction of a 1x1 stride-1 layer as one product of the same
multiply-adds over the same three operands (forward Y = X W^T, backward data X = Y W,
backward weights W = Y^T X: solvers/blas_1x1.py); only which operand is the output and which
dimension the reduction runs over differ. From bench/zoo.py runs:
- the calibration, in `--calibrate`'s type (e.g. FP16), over the layers on which the library
  ran all three directions in the case's layout family: the case's direction's time over the
  larger of the other two's (its median, and its `--quantile` point for the pessimistic
  estimate);
- per problem of `--case` (e.g. FP32-W-NHWC; a channel-planar problem of one pixel an image,
  or whose filter covers its input, is one call of the channels-last case's and counts as
  it, as the library's tables have it) whose layer the library ran in both other
  directions: the estimate (the larger of those two times times the median ratio) and the
  pessimistic one, against the time of the solver the run picked for the problem and
  against cuDNN's. Where the problem is channels-last and its channel-planar twin went
  through a Via solver (the NHWC kernels inside transposes), the twin's time stands beside
  it: an upper bound of the NHWC kernel's own time, which a channels-last problem may take
  by another rule (solvers/triton_ieee_first.py).

    python bench/blas_estimate.py RUN [RUN ...] --case FP32-W-NHWC [--calibrate FP16]
        [--quantile 0.9] [--out STEM] [--json]

The first run given that timed a problem speaks for it. Exit 2 where a file is not a zoo.py
result, the case is malformed, or fewer than five layers calibrate.
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
TYPES = ("FP16", "BF16", "FP32")
#: The fewest layers the calibration rests on.
MIN_CALIBRATION = 5


def _family(key: str) -> str:
    """The library's case of a problem without its direction, `<type>-<layout family>`
    (solvers/blas_1x1.py `_case`): one-pixel and whole-window problems count as channels-last."""
    from miopenkernels.problem import ConvProblem
    from miopenkernels.solvers.blas_1x1 import _case

    data_type, _, layout = _case(ConvProblem.from_key(key)).split("-")
    return f"{data_type}-{layout}"


def _rows(paths: list[str]) -> dict[tuple, dict[str, dict]]:
    """{(network, layer, batch, held_out, family): {direction: row}} over the runs, the first
    run given that timed a problem speaking for it; and the channel-planar rows apart, under
    family `<type>-NCHW-twin`, for the Via twins."""
    out: dict[tuple, dict[str, dict]] = {}
    for path in paths:
        try:
            data = read_json(path)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a bench/zoo.py result ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
            raise ValueError(f"{path}: not a bench/zoo.py result")
        for r in data["rows"]:
            if not r.get("ratio") or r["key"].count("-") < 12:
                continue
            base = (r["network"], r["layer"], int(r["n"]), bool(r["held_out"]))
            direction = r["case"].split("-")[1]
            out.setdefault((*base, _family(r["key"])), {}).setdefault(direction, r)
            data_type, _, layout = r["case"].split("-")
            if layout == "NCHW":
                out.setdefault((*base, f"{data_type}-NCHW-twin"), {}).setdefault(direction, r)
    return out


def _library(row: dict | None, direction: str) -> float | None:
    """The row's GPU ms where the library (its one call) ran it, else None."""
    if row is None or row["solver"] != f"ConvBlasGemm1x1{SUFFIX[direction]}":
        return None
    return float(row["ours_gpu_ms"])


def _geomean(values: list[float]) -> float | None:
    return round(math.exp(sum(map(math.log, values)) / len(values)), 3) if values else None


def calibration(rows: dict[tuple, dict[str, dict]], data_type: str, direction: str,
                layout: str, quantile: float) -> dict[str, Any]:
    """The library's time in `direction` over the larger of its other two directions', over
    the layers of `data_type` and `layout` on which it ran all three."""
    others = [d for d in SUFFIX if d != direction]
    ratios = []
    for key, by_dir in rows.items():
        if key[4] != f"{data_type}-{layout}":
            continue
        times = {d: _library(by_dir.get(d), d) for d in SUFFIX}
        if all(times.values()):
            ratios.append(times[direction] / max(times[d] for d in others))  # type: ignore
    if len(ratios) < MIN_CALIBRATION:
        raise ValueError(f"{len(ratios)} {data_type}-{layout} layers ran the library in every "
                         f"direction; too few to calibrate (at least {MIN_CALIBRATION})")
    return {"type": data_type, "layers": len(ratios), "median": quantile_of(ratios, 0.5),
            "quantile": quantile, "pessimistic": quantile_of(ratios, quantile)}


def estimate(paths: list[str], case: str, calibrate: str, quantile: float) -> dict[str, Any]:
    data_type, direction, layout = case.split("-")
    others = [d for d in SUFFIX if d != direction]
    rows = _rows(paths)
    cal = calibration(rows, calibrate, direction, layout, quantile)
    layers = []
    for key in sorted(rows):
        if key[4] != f"{data_type}-{layout}" or direction not in rows[key]:
            continue
        by_dir = rows[key]
        row = by_dir[direction]
        times = [_library(by_dir.get(d), d) for d in others]
        if not all(times) or row["solver"].startswith("ConvBlasGemm1x1"):
            continue
        base = max(times)  # type: ignore[type-var]
        entry = {"network": key[0], "layer": key[1], "n": key[2], "held_out": key[3],
                 "key": row["key"], "solver": row["solver"],
                 "ms": round(row["ours_gpu_ms"], 4), "cudnn_ms": round(row["cudnn_gpu_ms"], 4),
                 "library_other_ms": round(base, 4), "est_ms": round(base * cal["median"], 4),
                 "pessimistic_ms": round(base * cal["pessimistic"], 4)}
        twin = rows.get((*key[:4], f"{data_type}-NCHW-twin"), {}).get(direction)
        if layout == "NHWC" and row["key"].endswith(f"NHWC-{data_type}-{direction}") and \
                twin is not None and twin["solver"].startswith("ConvTritonImplicitGemmViaNhwc"):
            entry["via_twin_ms"] = round(twin["ours_gpu_ms"], 4)
        alternative = min(entry["ms"], entry.get("via_twin_ms", math.inf))
        entry["est_over_alternative"] = round(entry["est_ms"] / alternative, 3)
        entry["pessimistic_over_alternative"] = round(entry["pessimistic_ms"] / alternative, 3)
        layers.append(entry)
    summary = {}
    for part, held in (("zoo", False), ("held_out", True)):
        mine = [e for e in layers if e["held_out"] == held]
        summary[part] = {
            "layers": len(mine),
            "picked_vs_cudnn": _geomean([e["ms"] / e["cudnn_ms"] for e in mine]),
            "est_vs_cudnn": _geomean([e["est_ms"] / e["cudnn_ms"] for e in mine]),
            "pessimistic_vs_cudnn": _geomean([e["pessimistic_ms"] / e["cudnn_ms"]
                                              for e in mine]),
            "est_over_alternative": _geomean([e["est_over_alternative"] for e in mine]),
            "max_pessimistic_over_alternative": max(
                (e["pessimistic_over_alternative"] for e in mine), default=None)}
    return {"runs": [Path(p).name for p in paths], "case": case,
            "calibration": {k: round(v, 4) if isinstance(v, float) else v
                            for k, v in cal.items()},
            "summary": summary, "layers": layers}


def markdown(result: dict[str, Any]) -> str:
    c = result["calibration"]
    lines = [f"The GEMM library's {result['case']} time estimated from its other directions' "
             f"times on the same layers, from {', '.join(result['runs'])}. Calibrated on "
             f"{c['layers']} {c['type']} layers timed in every direction: median ratio "
             f"{c['median']}, {c['quantile']:.0%} point {c['pessimistic']} (pessimistic).", "",
             "| part | layers | picked / cuDNN | est. / cuDNN | pessimistic / cuDNN "
             "| est. / alternative | worst pessimistic / alternative |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for part, s in result["summary"].items():
        lines.append(f"| {part} | {s['layers']} | {s['picked_vs_cudnn']} | {s['est_vs_cudnn']} "
                     f"| {s['pessimistic_vs_cudnn']} | {s['est_over_alternative']} "
                     f"| {s['max_pessimistic_over_alternative']} |")
    lines += ["", "| network | layer | picked | ms | Via twin ms | est. ms | pessimistic ms "
              "| cuDNN ms |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in result["layers"]:
        held = " (held out)" if e["held_out"] else ""
        lines.append(f"| {e['network']}{held} | {e['layer']} | {e['solver']} | {e['ms']} | "
                     f"{e.get('via_twin_ms', '')} | {e['est_ms']} | {e['pessimistic_ms']} | "
                     f"{e['cudnn_ms']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="bench/zoo.py results (.json or .json.gz)")
    ap.add_argument("--case", required=True,
                    help="<type>-<direction>-<layout> to estimate, e.g. FP32-W-NHWC")
    ap.add_argument("--calibrate", default="FP16",
                    help="the type whose layers timed in every direction calibrate (FP16)")
    ap.add_argument("--quantile", type=float, default=0.9,
                    help="the pessimistic estimate's point of the calibration's ratios")
    ap.add_argument("--out", type=Path, help="path stem of the .json and .md written")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    parts = args.case.split("-")
    if len(parts) != 3 or parts[0] not in TYPES or parts[1] not in SUFFIX or \
            parts[2] not in ("NCHW", "NHWC"):
        print(f"error: --case {args.case!r} is not <type>-<direction>-<layout> "
              "(e.g. FP32-W-NHWC)", file=sys.stderr)
        return 2
    if args.calibrate not in TYPES:
        print(f"error: --calibrate {args.calibrate!r} is not one of {', '.join(TYPES)}",
              file=sys.stderr)
        return 2
    if not 0.5 <= args.quantile <= 1.0:
        print("error: --quantile must be between 0.5 and 1", file=sys.stderr)
        return 2
    try:
        result = estimate(args.runs, args.case, args.calibrate, args.quantile)
    except (OSError, ValueError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    emit(result, markdown(result), args.out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
