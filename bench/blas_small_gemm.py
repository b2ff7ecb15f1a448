"""The GEMM library's call for small FP32 1x1 layers (squeeze-and-excitation: a few rows, one
side of 4-16 channels), on the device machine: the call the package makes
(`cublasGemmStridedBatchedEx`, one batch, CUBLAS_GEMM_DEFAULT; backends/cublas.py) against
`cublasGemmEx` with the same arguments, PyTorch's `torch.mm` and cuDNN's 1x1 convolution, GPU
time queued behind a sleep kernel (bench/_gpu_timing.py), IEEE FP32 (TF32 off).

On the H100 the package's call took 28-29 us on EfficientNet-B0's 6 -> 144 layer at batch 32
where cuDNN took 5 (bench/results/pointwise_h100-e75bf7f/alt.json): this says whether the
entry point or the shape is to blame.

    python bench/blas_small_gemm.py --out bench/results/blas_small_gemm_h100

Prints a table and writes <out>.json (device, versions, rows).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (input channels, filters) of the zoo's and held-out networks' FP32 squeeze-and-excitation
#: layers and their reverse.
PAIRS = ((4, 96), (6, 144), (8, 16), (8, 32), (8, 48), (10, 240), (12, 104), (96, 4),
         (144, 6), (104, 12), (240, 10))
ROWS = (1, 8, 16, 32, 64, 128)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("blas_small_gemm"), help="output stem")
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rows", default=",".join(map(str, ROWS)))
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    return ap.parse_args(argv)


class _Calls:
    """A cuBLAS handle of its own (the current context's, on the default stream) and the two
    entry points, FP32 in and out, CUBLAS_COMPUTE_32F, the default algorithm."""

    def __init__(self) -> None:
        from miopenkernels.backends.cublas import COMPUTE_TYPES, DATA_TYPES, load

        blas = load()
        if blas is None:
            raise SystemExit("cuBLAS is not installed here")
        self.lib = lib = blas.lib
        p, i = ctypes.c_void_p, ctypes.c_int
        lib.cublasGemmEx.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
        lib.cublasGemmEx.restype = i
        self.batched = blas.gemm
        self.handle = ctypes.c_void_p()
        if lib.cublasCreate_v2(ctypes.byref(self.handle)) != 0:
            raise SystemExit("cublasCreate failed")
        self.one, self.zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self.f32, self.compute = DATA_TYPES["FP32"], COMPUTE_TYPES["ieee"]

    def strided_batched(self, y: Any, x: Any, w: Any) -> None:
        """y[rows, K] = x[rows, C] @ w[K, C]^T, as the package's call: column-major
        y^T (K x rows) = w (K x C, transposed from C x K) times x^T (C x rows)."""
        rows, c = x.shape
        k = w.shape[0]
        code = self.batched(self.handle, 1, 0, k, rows, c, ctypes.addressof(self.one),
                            w.data_ptr(), self.f32, c, k * c, x.data_ptr(), self.f32, c,
                            rows * c, ctypes.addressof(self.zero), y.data_ptr(), self.f32, k,
                            rows * k, 1, self.compute, -1)
        assert code == 0, code

    def gemm_ex(self, y: Any, x: Any, w: Any) -> None:
        rows, c = x.shape
        k = w.shape[0]
        code = self.lib.cublasGemmEx(self.handle, 1, 0, k, rows, c, ctypes.addressof(self.one),
                                     w.data_ptr(), self.f32, c, x.data_ptr(), self.f32, c,
                                     ctypes.addressof(self.zero), y.data_ptr(), self.f32, k,
                                     self.compute, -1)
        assert code == 0, code


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import torch.nn.functional as F
    from _gpu_timing import queued_gpu_ms

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.init()
    calls = _Calls()
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "cudnn": torch.backends.cudnn.version(), "rows": []}
    print("| rows | C -> K | StridedBatchedEx us | GemmEx us | torch.mm us | cuDNN us |")
    print("| --- | --- | --- | --- | --- | --- |")
    for rows in (int(r) for r in args.rows.split(",")):
        for c, k in PAIRS:
            x = torch.randn(rows, c, device="cuda")
            w = torch.randn(k, c, device="cuda")
            ref = x.double() @ w.double().t()
            xc = x.reshape(rows, 1, 1, c).permute(0, 3, 1, 2)  # NHWC storage, NCHW view
            wc = w.reshape(k, c, 1, 1)
            row: dict[str, Any] = {"rows": rows, "C": c, "K": k}

            def us(fn: Any) -> float:
                return 1e3 * queued_gpu_ms(fn, args.repeats, args.warmup)

            for name, call in (("strided_batched", calls.strided_batched),
                               ("gemm_ex", calls.gemm_ex)):
                y = torch.full((rows, k), float("nan"), device="cuda")
                call(y, x, w)
                torch.cuda.synchronize()
                row[f"{name}_err"] = float((y.double() - ref).norm() / ref.norm())
                row[f"{name}_us"] = us(lambda call=call, y=y, x=x, w=w: call(y, x, w))
            row["torch_mm_us"] = us(lambda x=x, w=w: torch.mm(x, w.t()))
            row["cudnn_us"] = us(lambda xc=xc, wc=wc: F.conv2d(xc, wc))
            result["rows"].append(row)
            print(f"| {rows} | {c} -> {k} | {row['strided_batched_us']:.1f} | "
                  f"{row['gemm_ex_us']:.1f} | {row['torch_mm_us']:.1f} | {row['cudnn_us']:.1f} |",
                  flush=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result["rows"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
