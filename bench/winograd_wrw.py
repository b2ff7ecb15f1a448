"""Winograd backward weights (ConvTritonWinograd{Tf32x3,Tf32}Wrw) against the implicit GEMM of
the same precision and against cuDNN, on ResNet-50's 3x3 stride-1 layers.

For each layer (bench/_layers.py: 64 channels at 56x56, 128 at 28x28, 256 at 14x14, 512 at
7x7), batch, layout (NCHW, NHWC) and type (FP32: three TF32 products, against cuDNN with TF32
off; TF32: the TF32 math mode, against cuDNN with TF32 on), through the runtime (`make_invoker`,
every launch of a call; objects compiled on first use into the kernel cache, outside the
timing): the Winograd solver at its defaults and at its seed parameter sets (the fastest kept,
as tuning would), the implicit GEMM of the same precision at its defaults, and PyTorch's
`conv2d_weight` (cuDNN, cudnn.benchmark on), each timed the same way (bench/kernels.py: median
of `--repeats` CUDA-event timings of one call after `--warmup` calls, inputs made beforehand),
and each output compared with float64 (relative L2 error).

    python bench/winograd_wrw.py --out bench/results/winograd_wrw_h100 [--batches 32,1,64]

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

TYPES = ("FP32", "TF32")
LAYOUTS = ("NCHW", "NHWC")
BATCHES = (32, 1, 64)
_SOLVERS = {"FP32": ("ConvTritonWinogradTf32x3Wrw", "ConvTritonImplicitGemmTf32x3Wrw"),
            "TF32": ("ConvTritonWinogradTf32Wrw", "ConvTritonImplicitGemmTf32Wrw")}


def layers(batch: int, layout: str) -> list:
    """The 3x3 stride-1 layers as backward-weights problems."""
    from _layers import resnet50_layers

    return [replace(p, direction="W", in_layout=layout, wei_layout=layout, out_layout=layout)
            for p in resnet50_layers("FP32", batch)
            if p.filter == (3, 3) and p.stride == (1, 1)]


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


def measure(handle, p, type_name: str, args) -> dict:  # noqa: ANN001
    import torch
    from miopenkernels.find import solver_of
    from miopenkernels.problem import TYPE_BYTES
    from miopenkernels.tensor import DeviceTensor

    from kernels import _median_ms, _peer, _tensors

    tensors = _tensors(p, torch.float32, p.in_layout == "NHWC")
    shapes = {"x": p.in_shape, "w": p.wei_shape, "y": p.out_shape}
    dev = {role: DeviceTensor(t.data_ptr(), t.numel() * TYPE_BYTES["FP32"], "FP32",
                              shapes[role]) for role, (t, _) in tensors.items()}
    ptrs = {role: t.ptr for role, t in dev.items()}
    views = {role: view for role, (_, view) in tensors.items()}
    ref = torch.nn.grad.conv2d_weight(views["x"].double(), tuple(views["w"].shape),
                                      views["y"].double(), p.stride, p.pad, p.dilation,
                                      p.groups)
    out = views["w"]
    winograd, igemm = _SOLVERS[type_name]
    solver = solver_of(handle, winograd)
    sets = [tuple(solver.default_params(p, handle.target))]
    sets += [q for q in solver.seed_params(p, handle.target) if q not in sets]
    tried = [(*_time_solver(handle, p, winograd, q, dev, ptrs, out, ref, args),)
             for q in sets]
    best = min(tried)
    default = tried[0]
    gemm = _time_solver(handle, p, igemm, None, dev, ptrs, out, ref, args)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = type_name == "TF32"
    peer = _peer(p, views)
    got = peer().double()
    cudnn_err = float((got - ref).norm() / ref.norm())
    cudnn_ms = _median_ms(peer, args.repeats, args.warmup)
    return {"type": type_name, "layout": p.in_layout, "n": p.n, "key": p.key(),
            "winograd_ms": best[0], "winograd_params": list(best[2]), "winograd_err": best[1],
            "winograd_default_ms": default[0], "winograd_default_params": list(default[2]),
            "igemm_ms": gemm[0], "igemm_params": list(gemm[2]), "igemm_err": gemm[1],
            "cudnn_ms": cudnn_ms, "cudnn_err": cudnn_err,
            "vs_igemm": best[0] / gemm[0], "default_vs_igemm": default[0] / gemm[0],
            "vs_cudnn": best[0] / cudnn_ms}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "winograd_wrw")
    ap.add_argument("--types", default=",".join(TYPES), help="FP32, TF32")
    ap.add_argument("--layouts", default=",".join(LAYOUTS), help="NCHW, NHWC")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)), help="batch sizes")
    ap.add_argument("--repeats", type=int, default=20, help="timed calls per engine")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls first")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    types = [t for t in args.types.split(",") if t]
    layouts = [lay for lay in args.layouts.split(",") if lay]
    try:
        batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        print(f"winograd_wrw: --batches {args.batches!r} is not a list of integers",
              file=sys.stderr)
        return 3
    bad = [t for t in types if t not in TYPES] + [lay for lay in layouts if lay not in LAYOUTS]
    if bad or any(b < 1 for b in batches):
        print(f"winograd_wrw: unknown {', '.join(bad) or 'batch size'}; see --help",
              file=sys.stderr)
        return 3
    try:
        import torch
    except ImportError:
        print("winograd_wrw: PyTorch is not installed; run this on the GPU machine",
              file=sys.stderr)
        return 6
    if not torch.cuda.is_available():
        print("winograd_wrw: no CUDA device; run this on the GPU machine", file=sys.stderr)
        return 6
    from _machine import nvidia_driver
    from miopenkernels.handle import Handle

    handles = {"FP32": Handle(), "TF32": Handle(math_mode="tf32")}
    rows: list[dict] = []
    start = time.perf_counter()
    head = (f"{'case':14s} {'n':>3s} {'layer':>12s} {'winograd':>9s} {'igemm':>8s} "
            f"{'cudnn':>8s} {'w/ig':>6s} {'w/cudnn':>7s} {'err':>8s}")
    print(head, flush=True)
    for batch in batches:
        for type_name in types:
            for layout in layouts:
                for p in layers(batch, layout):
                    row = measure(handles[type_name], p, type_name, args)
                    rows.append(row)
                    print(f"{type_name + '-' + layout:14s} {batch:3d} "
                          f"{f'{p.c}@{p.in_spatial[0]}':>12s} {row['winograd_ms']:9.4f} "
                          f"{row['igemm_ms']:8.4f} {row['cudnn_ms']:8.4f} "
                          f"{row['vs_igemm']:6.2f} {row['vs_cudnn']:7.2f} "
                          f"{row['winograd_err']:8.1e}", flush=True)
    be = handles["FP32"].backend
    result = {"device": be.device_name, "driver": nvidia_driver(),
              "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
              "method": __doc__.split("\n\n")[1], "repeats": args.repeats,
              "warmup": args.warmup, "seconds": round(time.perf_counter() - start, 1),
              "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    md = [f"Winograd backward weights against the implicit GEMM and cuDNN, {result['device']}, "
          f"driver {result['driver']}, torch {result['torch']}, cuDNN {result['cudnn']}; "
          f"median of {args.repeats} CUDA-event timings of one call (ms).", "",
          "| case | n | layer | winograd | params | implicit GEMM | cuDNN | w / igemm | "
          "w / cuDNN | rel. err |", "|---|---|---|---|---|---|---|---|---|---|"]
    md += [f"| {r['type']}-{r['layout']} | {r['n']} | {r['key'].split('-')[0]}@"
           f"{r['key'].split('-')[1]} | {r['winograd_ms']:.4f} | "
           f"{','.join(map(str, r['winograd_params']))} | {r['igemm_ms']:.4f} | "
           f"{r['cudnn_ms']:.4f} | {r['vs_igemm']:.2f} | {r['vs_cudnn']:.2f} | "
           f"{r['winograd_err']:.1e} |" for r in rows]
    Path(str(args.out) + ".md").write_text("\n".join(md) + "\n")
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
