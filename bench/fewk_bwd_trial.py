"""Backward data of layers of few input channels as the few-filter direct forward, a trial (on
the device machine; FP32 against IEEE cuDNN, GPU time queued behind a sleep kernel).

At stride 1 the backward data of a layer is a forward convolution of dy with the filters
flipped in height and width and transposed (filters <-> channels), padded by dil*(R-1) - pad:
dx[n, c, h, w] = sum over (k, r, s) of dy[n, k, h + pad - r*dil, w + pad - s*dil] *
w[k, c, r, s]. Where the layer's input has 1-8 channels (a VAE decoder's or a UNet's 4-channel
latent input, an image stem at stride 1) that forward has 1-8 filters: the problem of
`ConvTritonFmaFewKFwd` (solvers/triton_fma.py). bench/results/fewk_h100-6a76905/
zoo_fp32_bw.json has such layers at 5.1-6.9x cuDNN on the three-product implicit GEMM. This
times, per layer and layout, cuDNN's backward data and the trial's two steps apart: the
filters' flip and transpose (a copy of the small filter tensor, torch) and the few-filter
kernel's launch through the runtime on the forward problem (its usual tile, the package's
objects), and checks dx against cuDNN's.

    python bench/fewk_bwd_trial.py --out bench/results/fewk_bwd_trial_h100

Prints a table and writes <out>.json (device, versions, rows). Nothing here is shipped: a
solver would do the flip as a lead-in launch into its workspace.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import zoo  # noqa: E402

SOLVER = "ConvTritonFmaFewKFwd"


def forward_equivalent(p: Any) -> Any:
    """The forward problem whose output is `p`'s dx (a backward-data problem of one group at
    stride 1 whose padding is at most dil*(R-1) on each axis): dy as x, the flipped and
    transposed filters as w, dx as y; None where `p` is not such a problem."""
    if p.direction != "B" or p.groups != 1 or p.mode != "conv" or any(s != 1 for s in p.stride):
        return None
    pads = tuple(d * (f - 1) - q for d, f, q in zip(p.dilation, p.filter, p.pad, strict=True))
    if any(q < 0 for q in pads):
        return None
    return replace(p, direction="F", n=p.n, c=p.k, k=p.c, in_spatial=tuple(p.out_spatial),
                   pad=pads)


def flipped_filters(w: Any) -> Any:
    """w[k, c, r, s] -> w'[c, k, R-1-r, S-1-s] (numpy or torch, in the logical K C R S view)."""
    axes = tuple(range(2, w.ndim))
    if hasattr(w, "flip"):
        return w.flip(axes).transpose(0, 1)
    import numpy as np

    return np.flip(w, axes).swapaxes(0, 1)


def _layers(held_out: bool) -> list[Any]:
    """The zoo's 2-D layers whose backward data at stride 1 is a few-filter forward."""
    out = []
    for layer in zoo.load_layers(held_out=held_out):
        p = layer.problem
        if p.spatial_dim == 2 and p.c <= 8 and p.k > 8 and \
                forward_equivalent(replace(p, direction="B")) is not None:
            out.append(layer)
    return out


def _run_layer(handle: Any, layer: Any, layout: str, batch: int, repeats: int,
               warmup: int) -> dict | None:
    import torch
    from miopenkernels.invoke import workspace_ptr
    from miopenkernels.problem import TYPE_BYTES
    from miopenkernels.solvers import get_solver
    from miopenkernels.tensor import DeviceTensor

    p = zoo.layer_problem(layer, "FP32", "B", layout, batch)
    q = forward_equivalent(p)
    if q is None or zoo.tensor_gb(p) > 6:
        return None
    solver = get_solver(SOLVER)
    if not solver.is_applicable(q, handle.target):
        return None
    tensors = zoo._tensors(p, torch.float32)
    views = {r: v for r, (_, v) in tensors.items()}
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    peer = zoo._peer(p, views)
    ref = peer().float()
    cl = layout == "NHWC"
    memory = torch.channels_last if cl else torch.contiguous_format

    def flip() -> Any:
        return flipped_filters(views["w"]).contiguous(memory_format=memory)

    w2 = flip()
    from miopenkernels.plan import ConvSolution

    sol = ConvSolution(SOLVER, "", 0.0, 0, "defaults", tuple(solver.default_params(q,
                                                                                    handle.target)))
    inv = handle.compile_solution(q, sol)
    ptrs = {}
    for role, t in (("x", tensors["y"][0]), ("w", w2), ("y", tensors["x"][0])):
        ptrs[role] = DeviceTensor(t.data_ptr(), t.numel() * TYPE_BYTES[q.in_type], q.in_type,
                                  tuple(t.shape)).ptr
    ptrs["workspace"] = workspace_ptr(handle.backend, inv)
    out = tensors["x"][1]
    out.fill_(float("nan"))
    inv(ptrs)
    torch.cuda.synchronize()
    err = float((out.float() - ref).norm() / max(float(ref.norm()), 1e-30))
    row = {"network": layer.network, "layer": layer.name, "held_out": layer.held_out,
           "case": zoo.case_name("FP32", "B", layout), "n": batch, "key": p.key(),
           "forward_key": q.key(), "params": list(sol.params or ()), "rel_err": err,
           "cudnn_gpu_ms": zoo.queued_gpu_ms(peer, repeats, warmup),
           "flip_gpu_ms": zoo.queued_gpu_ms(flip, repeats, warmup),
           "kernel_gpu_ms": zoo.queued_gpu_ms(lambda: inv(ptrs), repeats, warmup)}
    row["ratio"] = (row["flip_gpu_ms"] + row["kernel_gpu_ms"]) / row["cudnn_gpu_ms"]
    return row


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="path stem of the .json result")
    ap.add_argument("--batches", default="32", help="comma-separated batch sizes")
    ap.add_argument("--layouts", default="NCHW,NHWC")
    ap.add_argument("--held-out", action="store_true", help="also the held-out networks")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=120.0, help="stop between layers after")
    ap.add_argument("--list", action="store_true", help="print the layers and exit (no GPU)")
    args = ap.parse_args(argv)
    layers = _layers(args.held_out)
    if args.list:
        for layer in layers:
            print(layer.network, layer.name, layer.problem.key())
        return 0
    if args.out is None:
        print("fewk_bwd_trial: name the result's path stem (--out PATH)", file=sys.stderr)
        return 3
    from _gpu_timing import no_gpu

    if (why := no_gpu()) is not None:
        print(f"fewk_bwd_trial: {why}", file=sys.stderr)
        return 6
    from miopenkernels.handle import Handle

    handle = Handle()
    rows, failures, start = [], [], time.perf_counter()
    for batch in (int(b) for b in args.batches.split(",") if b):
        for layout in (v for v in args.layouts.split(",") if v):
            for layer in layers:
                if time.perf_counter() - start > args.budget_s:
                    break
                try:
                    row = _run_layer(handle, layer, layout, batch, args.repeats, args.warmup)
                except Exception as exc:  # noqa: BLE001 - reported, the run goes on
                    failures.append({"layer": layer.name, "error": str(exc)[:300]})
                    continue
                if row is not None:
                    rows.append(row)
                    print(f"{row['case']} {row['network']:14s} {row['layer']:22s} "
                          f"cuDNN {row['cudnn_gpu_ms']:8.3f} ms  flip {row['flip_gpu_ms']:6.3f}"
                          f"  kernel {row['kernel_gpu_ms']:8.3f}  ratio {row['ratio']:5.2f}"
                          f"  err {row['rel_err']:.1e}", flush=True)
    summary = {c: _geomean([r["ratio"] for r in rows if r["case"] == c])
               for c in dict.fromkeys(r["case"] for r in rows)}
    result = {**zoo._versions({"ieee": handle}), "rows": rows, "failures": failures,
              "summary": summary, "seconds": round(time.perf_counter() - start, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    for case, g in summary.items():
        print(f"{case}: {sum(r['case'] == case for r in rows)} layers, geomean {g:.2f} of cuDNN")
    print(f"{len(rows)} rows, {len(failures)} failures, {result['seconds']} s")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
