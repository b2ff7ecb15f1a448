"""A family of solvers against the one it stands beside and against cuDNN, layer by layer.

Families: `winograd`, the Winograd backward weights (ConvTritonWinograd{Tf32x3,Tf32}Wrw) against
the implicit GEMM of the same precision on ResNet-50's 3x3 stride-1 layers, NCHW and NHWC, FP32
(three TF32 products, against cuDNN with TF32 off) and TF32 (the TF32 math mode, against cuDNN
with TF32 on); `gemm1x1`, the 1x1 NCHW GEMMs (ConvTritonGemm1x1{Fwd,Bwd,Wrw}) against the
implicit GEMM on the 1x1 stride-1 layers, FP16 and BF16, every direction. For each problem,
through the runtime (`make_invoker`, every launch of a call; objects compiled on first use into
the kernel cache, outside the timing): the family's solver at its defaults and at its seed
parameter sets (the fastest kept, as tuning would), the other solver at its defaults, and
PyTorch (cuDNN, cudnn.benchmark on), each timed the same way (bench/kernels.py: median of
`--repeats` CUDA-event timings of one call after `--warmup` calls, inputs made beforehand), and
each output compared with float64 (relative L2 error).

    python bench/solver_pairs.py --family winograd --out bench/results/winograd_wrw_h100
    python bench/solver_pairs.py --family gemm1x1 --out bench/results/triton_1x1_h100

Writes <out>.json (device, driver, versions, rows) and <out>.md, and prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

FAMILIES = {
    "winograd": {"types": ("FP32", "TF32"), "layouts": ("NCHW", "NHWC"), "directions": ("W",),
                 "filter": (3, 3)},
    "gemm1x1": {"types": ("FP16", "BF16"), "layouts": ("NCHW",), "directions": ("F", "B", "W"),
                "filter": (1, 1)},
}
BATCHES = (32, 1, 64)
_SUFFIX = {"F": "Fwd", "B": "Bwd", "W": "Wrw"}


def solvers(family: str, type_name: str, direction: str) -> tuple[str, str]:
    """(the family's solver, the one it is measured against)."""
    if family == "winograd":
        infix = "Tf32x3" if type_name == "FP32" else "Tf32"
        return f"ConvTritonWinograd{infix}Wrw", f"ConvTritonImplicitGemm{infix}Wrw"
    return f"ConvTritonGemm1x1{_SUFFIX[direction]}", f"ConvTritonImplicitGemm{_SUFFIX[direction]}"


def layers(family: str, type_name: str, direction: str, batch: int, layout: str) -> list:
    """The family's layers (stride 1) as problems of one case."""
    from _layers import resnet50_layers

    storage = "FP32" if type_name == "TF32" else type_name
    return [replace(p, direction=direction, in_layout=layout, wei_layout=layout,
                    out_layout=layout) for p in resnet50_layers(storage, batch)
            if p.filter == FAMILIES[family]["filter"] and p.stride == (1, 1)]


def _time_solver(handle, p, name: str, params, dev, ptrs, out, ref, args) -> tuple:  # noqa: ANN001
    """(ms, relative error) of one solver and parameter set through its invoker."""
    import torch
    from miopenkernels.find import make_invoker, solver_of
    from miopenkernels.invoke import workspace_ptr

    from kernels import _median_ms

    inv = make_invoker(handle, p, solver_of(handle, name), params=params, specialised=False)
    call = dict(ptrs, workspace=workspace_ptr(handle.backend, inv))
    out.fill_(float("nan"))
    inv(call)
    torch.cuda.synchronize()
    err = float((out.double() - ref).norm() / ref.norm())
    return _median_ms(lambda: inv(call), args.repeats, args.warmup), err, tuple(inv.params)


def measure(handle, p, family: str, type_name: str, args) -> dict:  # noqa: ANN001
    import torch
    from miopenkernels.find import solver_of
    from miopenkernels.invoke import output_role
    from miopenkernels.problem import TYPE_BYTES
    from miopenkernels.tensor import DeviceTensor

    from kernels import _median_ms, _peer, _tensors

    tdt = {"FP16": torch.float16, "BF16": torch.bfloat16}.get(p.in_type, torch.float32)
    tensors = _tensors(p, tdt, p.in_layout == "NHWC")
    # Memory-order shapes (N, H, W, C for NHWC): the runtime checks them against the layout.
    dev = {role: DeviceTensor(t.data_ptr(), t.numel() * TYPE_BYTES[p.in_type], p.in_type,
                              tuple(t.shape)) for role, (t, _) in tensors.items()}
    ptrs = {role: t.ptr for role, t in dev.items()}
    views = {role: view for role, (_, view) in tensors.items()}
    ref = _peer(p, {role: v.double() for role, v in views.items()})()
    out = views[output_role(p)]
    ours, other = solvers(family, type_name, p.direction)
    solver = solver_of(handle, ours)
    sets = [tuple(solver.default_params(p, handle.target))]
    sets += [q for q in solver.seed_params(p, handle.target) if q not in sets]
    tried = [(*_time_solver(handle, p, ours, q, dev, ptrs, out, ref, args),) for q in sets]
    best = min(tried)
    default = tried[0]
    gemm = _time_solver(handle, p, other, None, dev, ptrs, out, ref, args)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = type_name == "TF32"
    peer = _peer(p, views)
    cudnn_err = float((peer().double() - ref).norm() / ref.norm())
    cudnn_ms = _median_ms(peer, args.repeats, args.warmup)
    return {"type": type_name, "direction": p.direction, "layout": p.in_layout, "n": p.n,
            "key": p.key(), "solver": ours, "other": other,
            "ours_ms": best[0], "ours_params": list(best[2]), "ours_err": best[1],
            "ours_default_ms": default[0], "ours_default_params": list(default[2]),
            "other_ms": gemm[0], "other_params": list(gemm[2]), "other_err": gemm[1],
            "cudnn_ms": cudnn_ms, "cudnn_err": cudnn_err,
            "vs_other": best[0] / gemm[0], "default_vs_other": default[0] / gemm[0],
            "vs_cudnn": best[0] / cudnn_ms}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", choices=sorted(FAMILIES), default="winograd",
                    help="which solvers")
    ap.add_argument("--out", type=Path, default=None,
                    help="result files' stem (default bench/results/<family>)")
    ap.add_argument("--types", default="", help="a subset of the family's types")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)), help="batch sizes")
    ap.add_argument("--repeats", type=int, default=20, help="timed calls per engine")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls first")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    family = FAMILIES[args.family]
    types = [t for t in args.types.split(",") if t] or list(family["types"])
    out = args.out or HERE / "results" / args.family
    try:
        batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        print(f"solver_pairs: --batches {args.batches!r} is not a list of integers",
              file=sys.stderr)
        return 3
    bad = [t for t in types if t not in family["types"]]
    if bad or any(b < 1 for b in batches):
        print(f"solver_pairs: {', '.join(bad) or 'a batch size'} is not one of the family's; "
              "see --help", file=sys.stderr)
        return 3
    from _gpu_timing import no_gpu

    if (why := no_gpu()) is not None:
        print(f"solver_pairs: {why}", file=sys.stderr)
        return 6
    import torch
    from _machine import nvidia_driver
    from miopenkernels.handle import Handle

    ieee = Handle()
    handles = {"TF32": Handle(math_mode="tf32")} if "TF32" in types else {}
    rows: list[dict] = []
    start = time.perf_counter()
    print(f"{'case':16s} {'n':>3s} {'layer':>14s} {'ours':>8s} {'other':>8s} {'cudnn':>8s} "
          f"{'/other':>6s} {'/cudnn':>6s} {'err':>8s}", flush=True)
    for batch in batches:
        for type_name in types:
            for direction in family["directions"]:
                for layout in family["layouts"]:
                    for p in layers(args.family, type_name, direction, batch, layout):
                        row = measure(handles.get(type_name, ieee), p, args.family, type_name,
                                      args)
                        rows.append(row)
                        layer = f"{p.c}>{p.k}@{p.in_spatial[0]}"
                        print(f"{type_name}-{direction}-{layout:9s} {batch:3d} {layer:>14s} "
                              f"{row['ours_ms']:8.4f} {row['other_ms']:8.4f} "
                              f"{row['cudnn_ms']:8.4f} {row['vs_other']:6.2f} "
                              f"{row['vs_cudnn']:6.2f} {row['ours_err']:8.1e}", flush=True)
    be = ieee.backend
    result = {"family": args.family, "device": be.device_name, "driver": nvidia_driver(),
              "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
              "method": __doc__.split("\n\n")[1], "repeats": args.repeats,
              "warmup": args.warmup, "seconds": round(time.perf_counter() - start, 1),
              "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    md = [f"{args.family}: the family's solver against the other and cuDNN, "
          f"{result['device']}, driver {result['driver']}, torch {result['torch']}, cuDNN "
          f"{result['cudnn']}; median of {args.repeats} CUDA-event timings of one call (ms).",
          "", "| case | n | key | ours | params | other | cuDNN | ours / other | ours / cuDNN "
          "| rel. err |", "|---|---|---|---|---|---|---|---|---|---|"]
    md += [f"| {r['type']}-{r['direction']}-{r['layout']} | {r['n']} | {r['key']} | "
           f"{r['ours_ms']:.4f} | {','.join(map(str, r['ours_params']))} | "
           f"{r['other_ms']:.4f} | {r['cudnn_ms']:.4f} | {r['vs_other']:.2f} | "
           f"{r['vs_cudnn']:.2f} | {r['ours_err']:.1e} |" for r in rows]
    Path(str(out) + ".md").write_text("\n".join(md) + "\n")
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
