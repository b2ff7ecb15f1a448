"""The split reduction's second launch: the package's reduce kernel against variants and torch.

A split launch (SPLIT_K > 1) of the implicit GEMM writes FP32 partials, [SPLIT_K][TOTAL], and
`conv2d_bwd_weight_reduce` sums them into the output. At small batches the output is small
(a ResNet-50 layer at batch 1: 25k-200k values), and the graph-replayed forward showed that
launch at about 4 us where a torch elementwise kernel of that size takes 1.4 us
(bench/torch_graph_profile.py). This script times, for outputs of those sizes in NCHW and NHWC
and splits of 2-16, GPU time per call in a CUDA graph of `--calls` calls (median of 7
replays):
- `package`: the installed package's kernel at its own block and warps (REDUCE_BLOCK,
  REDUCE_WARPS; at tree a07afd4, which bench/results/reduce_kernel_h100.json measured: SPLIT_K
  a constexpr, the split loop a `range`, 1024 values on 4 warps);
- `unrolled`: SPLIT_K a constexpr and the split loop unrolled (`tl.static_range`), so that the
  SPLIT_K loads are all in flight at once, 1024 values on 4 warps;
- `runtime`: the split count a run-time argument, the loop unrolled by 4
  (`tl.range(..., loop_unroll_factor=4)`), at BLOCK 1024 and 256;
- `torch`: `torch.sum` of the partials over the split axis into the output (its reduction
  kernel), a yardstick.
Every variant's output is checked against the float64 sum.

    python bench/reduce_kernel.py --out bench/results/reduce_kernel_h100   (GPU machine)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

SIZES = ((1, 512, 7, 7), (1, 2048, 7, 7), (1, 256, 14, 14), (1, 1024, 14, 14),
         (1, 512, 28, 28), (8, 256, 14, 14), (1, 64, 112, 112))
SPLITS = (2, 4, 8, 16)


@triton.jit
def _store(acc, i, ok, w_ptr, C, R, S, swk, swc, swr, sws):
    """The shipped kernel's store: flat index i of (i0, C, R, S) into any strides."""
    c, rs = (i // (R * S)) % C, i % (R * S)
    tl.store(w_ptr + (i // (C * R * S)) * swk + c * swc + (rs // S) * swr + (rs % S) * sws,
             acc.to(w_ptr.dtype.element_ty), mask=ok)


@triton.jit
def reduce_unrolled(ws_ptr, w_ptr, TOTAL, C, R, S, swk, swc, swr, sws,
                    SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < TOTAL
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for sp in tl.static_range(SPLIT_K):
        acc += tl.load(ws_ptr + sp * TOTAL + i, mask=ok, other=0.0)
    _store(acc, i, ok, w_ptr, C, R, S, swk, swc, swr, sws)


@triton.jit
def reduce_runtime(ws_ptr, w_ptr, TOTAL, C, R, S, swk, swc, swr, sws, splits,
                   BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < TOTAL
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for sp in tl.range(0, splits, loop_unroll_factor=4):
        acc += tl.load(ws_ptr + sp * TOTAL + i, mask=ok, other=0.0)
    _store(acc, i, ok, w_ptr, C, R, S, swk, swc, swr, sws)


def graph_us(torch: Any, fn: Any, calls: int) -> float:
    """GPU microseconds per call: `calls` calls in one CUDA graph, median of 7 replays."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(7):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / calls)
    return float(statistics.median(times))


def one(torch: Any, package: Any, size: tuple[int, ...], split: int, layout: str,
        calls: int) -> dict[str, Any]:
    from miopenkernels.kernels import conv_triton_spec as spec

    n, k, p, q = size
    total = n * k * p * q
    ws = torch.randn(split, total, device="cuda", dtype=torch.float32)
    if layout == "NHWC":
        y = torch.empty(n, p, q, k, device="cuda", dtype=torch.float16).permute(0, 3, 1, 2)
    else:
        y = torch.empty(n, k, p, q, device="cuda", dtype=torch.float16)
    ref = ws.double().sum(0).view(n, k, p, q)
    args = (total, k, p, q, *y.stride())
    variants = {
        "package": lambda: package[(triton.cdiv(total, spec.REDUCE_BLOCK),)](
            ws, y, *args, SPLIT_K=split, BLOCK=spec.REDUCE_BLOCK, num_warps=spec.REDUCE_WARPS,
            num_stages=1),
        "unrolled": lambda: reduce_unrolled[(triton.cdiv(total, 1024),)](
            ws, y, *args, SPLIT_K=split, BLOCK=1024, num_warps=4, num_stages=1),
        "runtime": lambda: reduce_runtime[(triton.cdiv(total, 1024),)](
            ws, y, *args, split, BLOCK=1024, num_warps=4, num_stages=1),
        "runtime256": lambda: reduce_runtime[(triton.cdiv(total, 256),)](
            ws, y, *args, split, BLOCK=256, num_warps=2, num_stages=1),
        "torch": lambda: torch.sum(ws.view(split, n, k, p, q), 0, out=y),
    }
    row: dict[str, Any] = {"size": list(size), "split": split, "layout": layout}
    for name, fn in variants.items():
        y.zero_()
        fn()
        torch.cuda.synchronize()
        err = float((y.double() - ref).abs().max() / ref.abs().max())
        row[name] = round(graph_us(torch, fn, calls), 3)
        row[f"{name}_ok"] = err < 2e-3
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="OUT.json is written")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="print the JSON, not the table")
    args = ap.parse_args()
    import torch
    from miopenkernels.kernels.conv_triton import conv2d_bwd_weight_reduce as package

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA GPU; run this on the GPU machine", file=sys.stderr)
        return 6
    rows = [one(torch, package, size, split, layout, args.calls)
            for size in SIZES for split in SPLITS for layout in ("NHWC", "NCHW")]
    names = ("package", "unrolled", "runtime", "runtime256", "torch")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _machine import nvidia_driver

    result = {"device": torch.cuda.get_device_name(), "driver": nvidia_driver(),
              "torch": torch.__version__,
              "triton": triton.__version__, "calls": args.calls, "rows": rows,
              "geomean_over_package": {
                  v: round(statistics.geometric_mean(r[v] / r["package"] for r in rows), 3)
                  for v in names}}
    path = args.out.with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{'size':18} {'split':>5} {'layout':6}" + "".join(f"{v:>11}" for v in names))
    for r in rows:
        print(f"{'x'.join(map(str, r['size'])):18} {r['split']:>5} {r['layout']:6}"
              + "".join(f"{r[v]:>10.2f}{'' if r[v + '_ok'] else '!'}" for v in names))
    print("geomean over package:", result["geomean_over_package"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
