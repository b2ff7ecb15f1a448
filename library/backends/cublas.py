"""cuBLAS, NVIDIA's GEMM library, through ctypes: the GEMM solvers' calls (solvers/blas_1x1.py).

The library is the one the `nvidia-cublas` wheel installs (`pip install
'miopenkernels[blas]'`, or PyTorch's CUDA wheels), else the CUDA toolkit's on the loader's
path (`libcublas.so.13`, then `.12`); `load()` answers None where neither loads, and the
solvers that need it are then not offered. Calls run in the CUDA backend's context (the
device's primary context, PyTorch's), one cuBLAS handle per thread and device. A call's
scratch memory is the backend's shared workspace of its stream in a pool of its own
(`Backend.workspace(..., pool="library")`, WORKSPACE_BYTES): launches on one stream run in
order, so every call shares it, and a plan whose workspace holds the call's operands (the
transposed tensors of solvers/blas_relayout.py) never sees them overwritten; inside a capture
that has none yet, cuBLAS runs without one (its kernels that need none).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from pathlib import Path
from typing import Any

from .._log import get_logger
from ..errors import BackendError

__all__ = ["Cublas", "GemmLaunch", "load", "WORKSPACE_BYTES", "DATA_TYPES", "COMPUTE_TYPES",
           "library_paths"]

log = get_logger("miopenkernels.cublas")

#: cuBLAS's workspace: NVIDIA's recommendation for Hopper (cuBLAS documentation, "cuBLAS
#: workspace"), what PyTorch gives it per stream there.
WORKSPACE_BYTES = 32 << 20
#: cudaDataType_t of the problem's storage types.
DATA_TYPES = {"FP16": 2, "FP32": 0, "BF16": 14}
#: cublasComputeType_t per math: FP32 accumulation (16-bit operands on tensor cores; FP32
#: operands in IEEE FP32), or TF32 products with FP32 accumulation.
COMPUTE_TYPES = {"ieee": 68, "tf32": 77}
_OK = 0
#: Wheel folders (under a sys.path entry) and sonames, newest first.
_WHEEL_FILES = ("nvidia/cu13/lib/libcublas.so.13", "nvidia/cublas/lib/libcublas.so.13",
                "nvidia/cublas/lib/libcublas.so.12")
_SONAMES = ("libcublas.so.13", "libcublas.so.12")

_lock = threading.Lock()
_loaded: list[Cublas | None] = []  # [] before the first load(), then [library or None]


def library_paths() -> list[str]:
    """Where `load` looks, in order: the wheel's files under each sys.path entry, then the
    sonames for the dynamic loader."""
    out: list[str] = []
    for entry in sys.path:
        for rel in _WHEEL_FILES:
            path = Path(entry or ".") / rel
            if path.is_file():
                out.append(str(path))
    return out + list(_SONAMES)


def load() -> Cublas | None:
    """cuBLAS, loaded once per process; None where it is not installed (or not Linux)."""
    with _lock:
        if not _loaded:
            _loaded.append(_load())
        return _loaded[0]


def _load() -> Cublas | None:
    if not sys.platform.startswith("linux"):
        return None
    for name in library_paths():
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            return Cublas(lib, name)
        except (AttributeError, BackendError) as exc:  # too old, or not cuBLAS
            log.info("cuBLAS at %s not used: %s", name, exc)
    return None


class _State:
    """One thread's cuBLAS handle on one device, with the stream and workspace it was last
    given (each set only when it changes: cublasSetStream resets the workspace)."""

    __slots__ = ("handle", "stream", "workspace")

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.stream: int | None = None
        self.workspace: int | None = None


class Cublas:
    """The loaded library: its GEMM entry point and a handle per (thread, device)."""

    def __init__(self, lib: Any, path: str) -> None:
        self.path = path
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.cublasGetProperty.argtypes = [ctypes.c_int, ctypes.c_void_p]
        # libraryPropertyType: MAJOR_VERSION 0, MINOR_VERSION 1.
        if lib.cublasGetProperty(0, ctypes.byref(major)) != _OK or \
                lib.cublasGetProperty(1, ctypes.byref(minor)) != _OK or major.value < 11:
            raise BackendError(f"{path} is cuBLAS {major.value}; 11 or later is needed")
        self.version = (major.value, minor.value)
        p, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        lib.cublasCreate_v2.argtypes = [p]
        lib.cublasSetStream_v2.argtypes = [p, p]
        lib.cublasSetWorkspace_v2.argtypes = [p, p, ctypes.c_size_t]
        lib.cublasGetStatusString.argtypes = [i]
        lib.cublasGetStatusString.restype = ctypes.c_char_p
        gemm = lib.cublasGemmStridedBatchedEx
        gemm.argtypes = [p, i, i, i, i, i, p, p, i, i, ll, p, i, i, ll, p, p, i, i, ll, i, i, i]
        for fn in (lib.cublasCreate_v2, lib.cublasSetStream_v2, lib.cublasSetWorkspace_v2, gemm):
            fn.restype = i
        self.lib = lib
        self.gemm = gemm
        self._local = threading.local()
        self.one = ctypes.c_float(1.0)
        self.zero = ctypes.c_float(0.0)

    def status(self, code: int) -> str:
        text = self.lib.cublasGetStatusString(code)
        return text.decode() if text else f"status {code}"

    def state(self, backend: Any) -> _State:
        """This thread's handle on the backend's device, made in its context on first use."""
        states = getattr(self._local, "states", None)
        if states is None:
            states = self._local.states = {}
        state = states.get(id(backend))
        if state is None:
            backend._current()
            handle = ctypes.c_void_p()
            code = self.lib.cublasCreate_v2(ctypes.byref(handle))
            if code != _OK:
                raise BackendError(f"cublasCreate failed: {self.status(code)}")
            state = states[id(backend)] = _State(int(handle.value or 0))
        return state


class GemmLaunch:
    """One strided-batched GEMM call with its pointer slots, shaped as a PreparedLaunch
    (`values`, `slots`, `set`, a call per stream) so that invokers and plans run it as they
    run a kernel. `gemm` is (transa, transb, m, n, k, a, lda, stride_a, b, ldb, stride_b, c,
    ldc, stride_c, batch) in cuBLAS's column-major terms, a, b and c naming slots; C of
    `c_type` where given (FP32 sums of 16-bit operands), else of `data_type`."""

    library = True  # plans call it directly (no kernel launcher of the backend's)

    def __init__(self, backend: Any, blas: Cublas, gemm: tuple[Any, ...], data_type: str,
                 math: str, c_type: str = "") -> None:
        (transa, transb, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, batch) = gemm
        self.backend = backend
        self.blas = blas
        names = list(dict.fromkeys((a, b, c)))
        self.slots = {name: i for i, name in enumerate(names)}
        self.values = [ctypes.c_uint64(0) for _ in names]
        self.kinds = [f"ptr:{name}" for name in names]
        self.name = f"cublasGemmStridedBatchedEx({'NT'[transa]}{'NT'[transb]})"
        dt = DATA_TYPES[data_type]
        self._ab = (self.slots[a], self.slots[b], self.slots[c])
        self._head = (int(transa), int(transb), m, n, k, ctypes.addressof(blas.one))
        self._mid = (dt, lda, sa)
        self._b = (dt, ldb, sb, ctypes.addressof(blas.zero))
        self._tail = (DATA_TYPES[c_type or data_type], ldc, sc, batch, COMPUTE_TYPES[math],
                      -1)  # -1: CUBLAS_GEMM_DEFAULT

    def set(self, name: str, value: int) -> None:
        self.values[self.slots[name]].value = value

    def __call__(self, stream: Any = None) -> None:
        s = int(stream or 0)
        blas, backend = self.blas, self.backend
        state = blas.state(backend)
        lib = blas.lib
        if state.stream != s:
            code = lib.cublasSetStream_v2(state.handle, s)
            if code != _OK:
                raise BackendError(f"cublasSetStream failed: {blas.status(code)}")
            state.stream, state.workspace = s, None
        try:
            ws = backend.workspace(s, WORKSPACE_BYTES, pool="library")
        except BackendError:  # inside a capture that has none yet: cuBLAS's kernels without
            ws = 0
        if state.workspace != ws:
            code = lib.cublasSetWorkspace_v2(state.handle, ws or None,
                                             WORKSPACE_BYTES if ws else 0)
            if code != _OK:
                raise BackendError(f"cublasSetWorkspace failed: {blas.status(code)}")
            state.workspace = ws
        v = self.values
        ia, ib, ic = self._ab
        code = blas.gemm(state.handle, *self._head, v[ia].value, *self._mid, v[ib].value,
                         *self._b, v[ic].value, *self._tail)
        if code != _OK:
            raise BackendError(f"{self.name} failed: {blas.status(code)}")
        backend.launches += 1

    def args(self) -> list[tuple[str, int]]:
        return [(k, v.value) for k, v in zip(self.kinds, self.values, strict=True)]
