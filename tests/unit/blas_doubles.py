"""Doubles of cuBLAS and of the CUDA backend for the GEMM-library solvers' unit tests
(test_blas_1x1.py, test_blas_relayout.py): the calls they make, recorded, and cuBLAS's
strided-batched product run on numpy."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from miopenkernels.backends import cublas
from miopenkernels.solvers.blas_1x1 import GemmCall


def emulate(call: GemmCall, buffers: dict[str, np.ndarray]) -> None:
    """cublasGemmStridedBatchedEx on flat numpy buffers: C = op(A) op(B) per batch entry,
    column-major, element (r, c) of a matrix at r + c * ld."""

    def matrix(buf: np.ndarray, offset: int, rows: int, cols: int, ld: int) -> np.ndarray:
        return buf[offset + np.arange(rows)[:, None] + np.arange(cols)[None, :] * ld]

    for i in range(call.batch):
        a = matrix(buffers[call.a], i * call.stride_a,
                   *((call.k, call.m) if call.transa else (call.m, call.k)), call.lda)
        b = matrix(buffers[call.b], i * call.stride_b,
                   *((call.n, call.k) if call.transb else (call.k, call.n)), call.ldb)
        c = (a.T if call.transa else a) @ (b.T if call.transb else b)
        rows, cols = np.arange(call.m)[:, None], np.arange(call.n)[None, :]
        buffers[call.c][i * call.stride_c + rows + cols * call.ldc] = c



class _Backend:
    name, vendor = "cuda", "nvidia"

    def __init__(self) -> None:
        self.launches = 0
        self.asked: list[tuple[int, int, str]] = []

    def workspace(self, stream: int, nbytes: int, pool: str = "plans") -> int:
        self.asked.append((stream, nbytes, pool))
        return 0x7000_0000

    def _current(self) -> None:
        pass

    def launcher(self, launch: Any) -> Any:
        """The CUDA backend's: a library's call is its own launcher."""
        from miopenkernels.backends.cuda import CudaBackend

        return CudaBackend.launcher(self, launch)  # type: ignore[arg-type]


class _Lib:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        def fn(*args: Any) -> int:
            self.calls.append((name, args))
            return 0

        return fn


class _Blas:
    """What GemmLaunch uses of `cublas.Cublas`, recording the library calls."""

    def __init__(self) -> None:
        self.lib = _Lib()
        self.one, self.zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self._state = cublas._State(0x1234)
        self.gemms: list[tuple[Any, ...]] = []

    def state(self, backend: Any) -> Any:
        return self._state

    def gemm(self, *args: Any) -> int:
        self.gemms.append(args)
        return 0

    def status(self, code: int) -> str:
        return f"status {code}"
