"""Steady-state time per ResNet-50 layer: the solution find picked vs cuDNN (same process, data).

For each of the 23 forward layers (batch 32, NCHW, FP32 and FP16): torch tensors on the GPU are
used in place by the Handle; find (default mode; an installed package's FindDb when
MIOPEN_SYSTEM_DB_PATH points at one) picks a solution, its invoker is timed with CUDA events
(median of repeats after warm-up), and torch.nn.functional.conv2d with cudnn.benchmark on is
timed the same way. FP32 is compared with cuDNN both with TF32 allowed (PyTorch's default for
convolutions) and with TF32 off (plain FP32, what these kernels compute). The ratio is
ours / cuDNN (above 1: cuDNN is faster); the geometric mean of the ratios is reported.

    python bench/kernels.py --out bench/results/kernels_h100
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _median_ms(fn, repeats: int, warmup: int = 3) -> float:  # noqa: ANN001
    import torch

    for _ in range(warmup):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(statistics.median(times))


def measure(handle, p, dtype: str, tdt, repeats: int) -> dict:  # noqa: ANN001
    """Find, then time our invoker and cuDNN on the same torch tensors."""
    import torch
    import torch.nn.functional as F
    from miopenkernels.find import bind

    x = torch.randn(p.in_shape, device="cuda", dtype=tdt)
    w = torch.randn(p.wei_shape, device="cuda", dtype=tdt) / math.sqrt(
        p.wei_shape[1] * math.prod(p.filter))
    y = torch.full(p.out_shape, float("nan"), device="cuda", dtype=tdt)
    sols = handle.find(p, x, w, y)
    best = sols[0]
    inv = handle.compile_solution(p, best)
    bound = bind(handle, p, x, w, y)
    ptrs = {r: t.ptr for r, t in bound.items()}
    ptrs["workspace"] = inv.workspace.ptr if inv.workspace is not None else 0
    inv(ptrs)
    torch.cuda.synchronize()

    def conv() -> torch.Tensor:
        return F.conv2d(x, w, None, p.stride, p.pad, p.dilation, p.groups)

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    ref = conv()
    err = float((y.double() - ref.double()).norm() / ref.double().norm())
    row = {"dtype": dtype, "key": p.key(), "solver": best.solver,
           "source": best.source, "rel_err_vs_cudnn": err,
           "ours_ms": _median_ms(lambda: inv(ptrs), repeats),
           "cudnn_ms": _median_ms(conv, repeats)}
    if dtype == "FP32":
        torch.backends.cudnn.allow_tf32 = True
        row["cudnn_tf32_ms"] = _median_ms(conv, repeats)
    row["ratio"] = row["ours_ms"] / row["cudnn_ms"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "kernels")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--dtypes", default="FP32,FP16")
    args = ap.parse_args()

    import torch

    sys.path.insert(0, str(HERE))
    from _layers import resnet50_layers
    from miopenkernels.handle import Handle

    handle = Handle()
    rows = []
    for dtype in args.dtypes.split(","):
        tdt = torch.float16 if dtype == "FP16" else torch.float32
        for p in resnet50_layers(dtype):
            row = measure(handle, p, dtype, tdt, args.repeats)
            rows.append(row)
            print(f"{dtype} {p.key():55s} {row['solver']:22s} {row['ours_ms']:8.3f} ms "
                  f"cuDNN {row['cudnn_ms']:8.3f} ms x{row['ratio']:.2f} "
                  f"err {row['rel_err_vs_cudnn']:.1e}",
                  flush=True)
    summary = {}
    for dtype in args.dtypes.split(","):
        rs = [r for r in rows if r["dtype"] == dtype]
        summary[dtype] = {"geomean_ratio": math.exp(statistics.mean(math.log(r["ratio"])
                                                                   for r in rs)),
                          "layers": len(rs),
                          "ours_total_ms": sum(r["ours_ms"] for r in rs),
                          "cudnn_total_ms": sum(r["cudnn_ms"] for r in rs)}
        if dtype == "FP32":
            summary[dtype]["geomean_ratio_vs_tf32"] = math.exp(statistics.mean(
                math.log(r["ours_ms"] / r["cudnn_tf32_ms"]) for r in rs))
    meta = {"device": handle.backend.device_name, "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "kernel_sources": handle.stats.to_dict(),
            "summary": summary, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps(meta, indent=1) + "\n")
    md = [f"Steady state per layer, ResNet-50 forward, batch 32, NCHW, {meta['device']}, "
          f"torch {meta['torch']}, cuDNN {meta['cudnn']}. Median of {args.repeats} CUDA-event "
          "timings; ratio = ours / cuDNN (cudnn.benchmark on, TF32 off).", "",
          "| type | layer | solver | ours ms | cuDNN ms | ratio | rel. err |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    md += [f"| {r['dtype']} | {r['key']} | {r['solver']} | {r['ours_ms']:.3f} | "
           f"{r['cudnn_ms']:.3f} | {r['ratio']:.2f} | {r['rel_err_vs_cudnn']:.1e} |" for r in rows]
    md += ["", "| type | geomean ratio | ours total ms | cuDNN total ms |",
           "| --- | --- | --- | --- |"]
    for dtype, s in summary.items():
        md.append(f"| {dtype} | {s['geomean_ratio']:.2f} | {s['ours_total_ms']:.2f} | "
                  f"{s['cudnn_total_ms']:.2f} |")
    if "FP32" in summary:
        md.append("")
        md.append(f"FP32 against cuDNN with TF32 allowed (PyTorch's default): geomean ratio "
                  f"{summary['FP32']['geomean_ratio_vs_tf32']:.2f}.")
    Path(str(args.out) + ".md").write_text("\n".join(md) + "\n")
    print("\n".join(md[-6:]))


if __name__ == "__main__":
    main()
