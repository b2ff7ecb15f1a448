"""The GEMM-library solvers' call against PyTorch's matmul on the same operands (on the device
machine): a few 1x1 NHWC forward layers as [N*H*W, C] x [C, K], GPU time queued behind a
sleep kernel, for
- `torch.mm` (cuBLAS/cuBLASLt as PyTorch calls it),
- the solver's plan (`ConvBlasGemm1x1Fwd`: cublasGemmStridedBatchedEx, batch 1, on its own
  handle with the backend's workspace),
- the same call through ctypes on a handle of our own, per variant: `ex` (cublasGemmEx),
  `strided` (cublasGemmStridedBatchedEx, batch 1), each with the 32 MiB workspace or none,
  and with the handle's math mode set to CUBLAS_TF32_TENSOR_OP_MATH or left at the default.
Prints a table (microseconds) and writes JSON.

    python bench/blas_probe.py [--out bench/results/blas_probe_h200]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# (N*H*W rows, C, K): ResNet-50 and RetinaNet 1x1 layers at batch 32.
SHAPES = [(32 * 7 * 7, 2048, 1024), (32 * 14 * 14, 1024, 1024), (32 * 65 * 65, 2048, 512),
          (32 * 56 * 56, 64, 128), (32 * 28 * 28, 512, 512)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="path stem of a .json result")
    args = ap.parse_args(argv)
    import torch
    from _gpu_timing import queued_gpu_ms
    from miopenkernels.backends import cublas
    from miopenkernels.handle import Handle
    from miopenkernels.problem import ConvProblem

    blas = cublas.load()
    if blas is None:
        print("blas_probe: no cuBLAS here", file=sys.stderr)
        return 6
    handle = Handle()
    lib = blas.lib
    own = ctypes.c_void_p()
    assert lib.cublasCreate_v2(ctypes.byref(own)) == 0
    ws = torch.empty(cublas.WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
    lib.cublasSetMathMode.argtypes = [ctypes.c_void_p, ctypes.c_int]
    ex = lib.cublasGemmEx
    p, i = ctypes.c_void_p, ctypes.c_int
    ex.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    rows = []
    for m_rows, c, k in SHAPES:
        x = torch.randn((m_rows, c), device="cuda", dtype=torch.float16)
        w = torch.randn((k, c), device="cuda", dtype=torch.float16) / 16
        y = torch.empty((m_rows, k), device="cuda", dtype=torch.float16)
        row = {"rows": m_rows, "c": c, "k": k}
        row["torch_mm_us"] = 1e3 * queued_gpu_ms(lambda x=x, w=w: torch.mm(x, w.t()), 20, 3)
        prob = ConvProblem(n=1, c=c, k=k, in_spatial=(1, m_rows), filter=(1, 1),
                           in_type="FP16", in_layout="NHWC", wei_layout="NHWC",
                           out_layout="NHWC")
        plan = handle.plan(prob, "ConvBlasGemm1x1Fwd")
        xv, wv, yv = x.view(1, 1, m_rows, c), w.view(k, 1, 1, c), y.view(1, 1, m_rows, k)
        row["plan_us"] = 1e3 * queued_gpu_ms(lambda p=plan, a=(xv, wv, yv): p(*a), 20, 3)
        # find's own timer (Backend.time_kernel) on the same invoker, and find itself.
        inv = plan.invoker
        ptrs = {"x": x.data_ptr(), "w": w.data_ptr(), "y": y.data_ptr(), "workspace": 0}
        backend = handle.backend
        row["find_timer_plan_us"] = 1e3 * sorted(
            backend.time_kernel(lambda i=inv, q=ptrs: i(q), 10))[5]
        row["find_timer_torch_mm_us"] = 1e3 * sorted(
            backend.time_kernel(lambda x=x, w=w: torch.mm(x, w.t()), 10))[5]
        found = handle.find(prob, xv, wv, yv, mode="NORMAL")
        row["found_us"] = {f.solver: round(1e3 * f.time, 2) for f in found}
        want = torch.mm(x.float(), w.float().t())
        row["plan_err"] = float((y.float() - want).norm() / want.norm())
        stream = torch.cuda.current_stream().cuda_stream
        lib.cublasSetStream_v2(own, stream)
        for math in (0, 3):
            lib.cublasSetMathMode(own, math)
            for with_ws in (True, False):
                lib.cublasSetWorkspace_v2(own, ws.data_ptr() if with_ws else None,
                                          cublas.WORKSPACE_BYTES if with_ws else 0)
                tag = f"math{math}_{'ws' if with_ws else 'nows'}"

                def call_ex(x=x, w=w, y=y, k=k, c=c, m_rows=m_rows) -> None:
                    ex(own, 1, 0, k, m_rows, c, ctypes.addressof(one), w.data_ptr(), 2, c,
                       x.data_ptr(), 2, c, ctypes.addressof(zero), y.data_ptr(), 2, k, 68, -1)

                def call_strided(x=x, w=w, y=y, k=k, c=c, m_rows=m_rows) -> None:
                    blas.gemm(own, 1, 0, k, m_rows, c, ctypes.addressof(one), w.data_ptr(), 2,
                              c, 0, x.data_ptr(), 2, c, 0, ctypes.addressof(zero),
                              y.data_ptr(), 2, k, 0, 1, 68, -1)

                row[f"ex_{tag}_us"] = 1e3 * queued_gpu_ms(call_ex, 20, 3)
                row[f"strided_{tag}_us"] = 1e3 * queued_gpu_ms(call_strided, 20, 3)
        rows.append(row)
        print(json.dumps({k2: round(v, 2) if isinstance(v, float) else v
                          for k2, v in row.items()}))
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cublas": list(blas.version), "cublas_path": blas.path, "rows": rows}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        Path(str(args.out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
