"""Where the im2col form's time goes, on the device machine: per layer its gather alone, the
whole form (the gather and the library's call), a device copy of the column matrix's bytes and
cuDNN (benchmark on; FP32 with TF32 off), GPU time queued behind a sleep kernel.

On one H100 the form lost to immediate mode's first choice in every 16-bit case, at 4.2-10.2x
cuDNN's GPU time (bench/results/im2col_h100-5f39bda/), and the column matrix's bytes over its
time less cuDNN's whole layer came to about 440 GB/s: an estimate that puts the cost in the
gather. This measures it: the gather's own time (the invoker's lead-ins launched alone), its
write rate (the column matrix's bytes over that time), the same bytes copied device to device
(the memory's rate at that size), and the library's share (the whole less the gather).

    python bench/im2col_gather_probe.py --out bench/results/im2col_gather_probe_h100
        [--layers NAME,...] [--repeats 20] [--json]

`--bound RUN.json...` (no GPU) asks the other question, from bench/solver_alternatives.py runs
that timed the form and immediate mode's first choice (`pick`): per case, the geomean over
the layers of the column matrix written and read once at `--gb-s` (a memory's rate: a copy's
measured here, or a datasheet's) over cuDNN's whole layer, beside the first choice's time
over cuDNN's. Where that bound alone is near the first choice, no gather makes the form win.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (name, type, direction, layout, n, C, K, spatial, filter, pad, stride): 16-bit plain layers
#: the form lost on, the FP32 stems and 3-D layers it claims.
LAYERS: tuple[tuple[Any, ...], ...] = (
    ("resnet50 layer3 3x3", "FP16", "F", "NHWC", 32, 256, 256, (14, 14), (3, 3), (1, 1), (1, 1)),
    ("resnet50 layer1 3x3", "FP16", "F", "NHWC", 32, 64, 64, (56, 56), (3, 3), (1, 1), (1, 1)),
    ("resnet50 layer3 3x3 B", "FP16", "B", "NHWC", 32, 256, 256, (14, 14), (3, 3), (1, 1),
     (1, 1)),
    ("resnet50 layer3 3x3 W", "FP16", "W", "NHWC", 32, 256, 256, (14, 14), (3, 3), (1, 1),
     (1, 1)),
    ("vgg16 features.0 W", "FP32", "W", "NHWC", 32, 3, 64, (224, 224), (3, 3), (1, 1), (1, 1)),
    ("sd15_vae decoder.conv_in W", "FP32", "W", "NHWC", 32, 4, 512, (64, 64), (3, 3), (1, 1),
     (1, 1)),
    ("r2plus1d layer3 spatial W", "FP32", "W", "NDHWC", 32, 128, 460, (8, 28, 28), (1, 3, 3),
     (0, 1, 1), (1, 2, 2)),
    ("r2plus1d layer4 temporal W", "FP32", "W", "NDHWC", 32, 921, 512, (4, 7, 7), (3, 1, 1),
     (1, 0, 0), (2, 1, 1)),
)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "im2col_gather_probe")
    ap.add_argument("--layers", default="", help="comma-separated names of LAYERS (default all)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--bound", nargs="+", type=Path, metavar="RUN",
                    help="no GPU: the column matrix's traffic bound from these runs")
    ap.add_argument("--gb-s", type=float, default=3350.0,
                    help="the memory's rate for --bound, GB/s (3350: an H100 SXM's datasheet)")
    return ap.parse_args(argv)


def bound(runs: list[dict[str, Any]], gb_s: float) -> dict[str, dict[str, Any]]:
    """Per case: the layers where the form and `pick` ran, the geomean of the column matrix's
    bytes written and read once at `gb_s` over cuDNN's time, and of the first choice's over
    cuDNN's; the layers where that traffic alone took longer than the first choice."""
    from miopenkernels.problem import ConvProblem
    from zoo import geomean

    cases: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        for r in run.get("rows", []):
            mine = [n for n in r.get("solvers", {}) if n.startswith("ConvBlasIm2col")]
            if not mine or "pick" not in r["solvers"] or not r.get("cudnn_gpu_ms"):
                continue
            p = ConvProblem.from_key(r["key"])
            case = f"{p.in_type}-{p.direction}-{p.in_layout}"
            traffic_ms = 2 * column_bytes(p) / (gb_s * 1e9) * 1e3
            cases.setdefault(case, []).append((traffic_ms / r["cudnn_gpu_ms"],
                                               r["solvers"]["pick"]["gpu_ms"] / r["cudnn_gpu_ms"]))
    return {case: {"layers": len(v), "traffic_vs_cudnn": round(geomean(t for t, _ in v), 3),
                   "pick_vs_cudnn": round(geomean(q for _, q in v), 3),
                   "traffic_above_pick": sum(t > q for t, q in v)}
            for case, v in sorted(cases.items())}


def problem(spec: tuple[Any, ...]) -> Any:
    """The layer's problem (all three tensors in its layout)."""
    from miopenkernels.problem import ConvProblem

    _, t, d, lay, n, c, k, size, filt, pad, stride = spec
    return ConvProblem(n=n, c=c, k=k, in_spatial=size, filter=filt, pad=pad, stride=stride,
                       dilation=(1,) * len(size), direction=d, in_type=t, in_layout=lay,
                       wei_layout=lay, out_layout=lay)


def column_bytes(p: Any) -> int:
    from miopenkernels.solvers.blas_im2col import _view, im2col_spec

    _, sizes, _ = _view(p)
    return int(im2col_spec().col_bytes(p.direction, sizes, p.in_type))


def _layer(handle: Any, spec: tuple[Any, ...], repeats: int) -> dict[str, Any]:
    import torch
    import zoo
    from _gpu_timing import queued_gpu_ms
    from miopenkernels.invoke import workspace_ptr
    from miopenkernels.problem import TYPE_BYTES

    p = problem(spec)
    name = "ConvBlasIm2col" + {"F": "Fwd", "B": "Bwd", "W": "Wrw"}[p.direction]
    sol = next((s for s in handle.solutions(p) if s.solver == name), None)
    if sol is None:
        return {"layer": spec[0], "key": p.key(), "error": f"{name} does not apply"}
    dtype = {"FP16": torch.float16, "BF16": torch.bfloat16}.get(p.in_type, torch.float32)
    tensors = zoo._tensors(p, dtype)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    peer = zoo._peer(p, {r: v for r, (_, v) in tensors.items()})
    inv = handle.compile_solution(p, sol)
    ptrs = {role: t.data_ptr() for role, (t, _) in tensors.items()}
    ptrs["workspace"] = workspace_ptr(handle.backend, inv)

    def gather() -> None:
        for launch, pointers in inv.first:
            for slot, role, offset in pointers:
                launch.set(slot, ptrs[role] + offset)
            launch(None)

    nbytes = column_bytes(p)
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    row = {"layer": spec[0], "key": p.key(), "column_bytes": nbytes,
           "element_bytes": TYPE_BYTES[p.in_type],
           "cudnn_ms": queued_gpu_ms(peer, repeats, 3),
           "form_ms": queued_gpu_ms(lambda: inv(ptrs), repeats, 3),
           "gather_ms": queued_gpu_ms(gather, repeats, 3),
           "copy_ms": queued_gpu_ms(lambda: dst.copy_(src), repeats, 3)}
    row["gather_gb_s"] = nbytes / (row["gather_ms"] * 1e6)
    row["copy_gb_s"] = nbytes / (row["copy_ms"] * 1e6)
    row["library_ms"] = max(row["form_ms"] - row["gather_ms"], 0.0)
    if inv.workspace is not None:
        inv.workspace.free()
        inv.workspace = None
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| layer | column MB | cuDNN ms | form ms | gather ms | library ms | gather GB/s | "
             "copy GB/s |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['layer']} | {r['error']} |  |  |  |  |  |  |")
            continue
        lines.append(f"| {r['layer']} | {r['column_bytes'] / 1e6:.1f} | {r['cudnn_ms']:.3f} | "
                     f"{r['form_ms']:.3f} | {r['gather_ms']:.3f} | {r['library_ms']:.3f} | "
                     f"{r['gather_gb_s']:.0f} | {r['copy_gb_s']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.bound:
        from _results import read_json

        try:
            runs = [read_json(path) for path in args.bound]
        except (OSError, ValueError) as exc:
            print(f"im2col_gather_probe: {exc}; give bench/solver_alternatives.py JSON files",
                  file=sys.stderr)
            return 2
        result = bound(runs, args.gb_s)
        if not result:
            print("im2col_gather_probe: no layer where the form and `pick` ran", file=sys.stderr)
            return 3
        print(json.dumps(result, indent=1) if args.json else "\n".join(
            f"{c}: {e['layers']} layers, column traffic at {args.gb_s:.0f} GB/s "
            f"{e['traffic_vs_cudnn']:.2f} of cuDNN, first choice {e['pick_vs_cudnn']:.2f}, "
            f"traffic above it on {e['traffic_above_pick']}" for c, e in result.items()))
        return 0
    names = [n for n in args.layers.split(",") if n]
    unknown = [n for n in names if n not in {s[0] for s in LAYERS}]
    if unknown:
        print(f"im2col_gather_probe: no layer {unknown[0]!r}; the layers: "
              f"{', '.join(s[0] for s in LAYERS)}", file=sys.stderr)
        return 3
    from _gpu_timing import no_gpu

    if (why := no_gpu()) is not None:
        print(f"im2col_gather_probe: {why}", file=sys.stderr)
        return 6
    import zoo
    from miopenkernels.handle import Handle

    handle = Handle()
    rows = [_layer(handle, s, args.repeats) for s in LAYERS if not names or s[0] in names]
    result = {**zoo._versions({"ieee": handle}), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0 if all("error" not in r and math.isfinite(r["form_ms"]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
