"""NVIDIA GPUs through the CUDA driver API (cuda-bindings' `cuda.bindings.driver`).

The backend uses the device's primary context, the one PyTorch and CuPy use, so their device
pointers are valid here without copies. Every driver call goes through `check()`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._cuda_status import describe, is_success, unpack
from ..errors import BackendError, NoDeviceError
from ..target import Target
from .base import Backend, Buffer, Graph, Module, PreparedLaunch

if TYPE_CHECKING:  # numpy is imported where memory is copied, not on `import`
    import numpy as np

__all__ = ["CudaBackend", "check", "device_count"]

_driver: Any = None


def _cuda() -> Any:
    """`cuda.bindings.driver`, imported on first use; cuInit done once."""
    global _driver
    if _driver is None:
        try:
            from cuda.bindings import driver
        except ImportError as exc:
            raise NoDeviceError(
                f"the CUDA backend needs cuda-bindings (pip install cuda-bindings): {exc}"
            ) from None
        try:
            (err,) = driver.cuInit(0)
        except Exception as exc:  # the driver library itself is missing
            raise NoDeviceError(f"no NVIDIA driver: {exc}") from None
        if not is_success(driver, err):
            raise NoDeviceError(f"cuInit failed: {describe(driver, err)}")
        _driver = driver
    return _driver


_libcuda: Any = None

# A one-thread kernel that spins until `ns` nanoseconds of the GPU's global timer have passed:
# launches queued behind it reach the GPU back to back, so the events between them time the
# kernels alone and not the host's gap between two launches. PTX, so that the driver compiles
# it for whatever GPU is present (no compiler needed at run time).
SPIN_PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry mk_spin(.param .u64 ns)
{
    .reg .pred %p;
    .reg .b64 %t0, %t1, %dt, %lim;
    ld.param.u64 %lim, [ns];
    mov.u64 %t0, %globaltimer;
SPIN:
    mov.u64 %t1, %globaltimer;
    sub.u64 %dt, %t1, %t0;
    setp.lt.u64 %p, %dt, %lim;
    @%p bra SPIN;
    ret;
}
"""
SPIN_MAX_S = 0.25  # the longest spin a timing asks for (a host slower than this is timed as is)


def _launch_kernel() -> Any:
    """The driver's own cuLaunchKernel through ctypes: the hot path passes plain integers
    and the kernelParams array packed once, where the bindings' wrapper converts every
    argument per call (about 8 us)."""
    global _libcuda
    if _libcuda is None:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1" if sys.platform != "win32" else "nvcuda.dll")
        fn = lib.cuLaunchKernel
        u = ctypes.c_uint
        fn.argtypes = [ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.c_void_p]
        fn.restype = ctypes.c_int
        _libcuda = fn
    return _libcuda


def check(result: Any, what: str = "") -> Any:
    """Unpack a driver call's (status, values...) tuple; raise BackendError on failure."""
    return unpack(_cuda(), result, what or "CUDA driver call", BackendError)


def _no_driver() -> bool:
    """Whether no NVIDIA device can be present: CUDA_VISIBLE_DEVICES set empty, or (Linux) no
    NVIDIA device node and no driver entry in /proc. Spares a machine without a GPU the import
    of the bindings (the longest part of a null-backend start)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return True
    return sys.platform.startswith("linux") and not (
        os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia"))


def device_count() -> int:
    """Number of CUDA devices; 0 when there is no driver (never raises)."""
    if _no_driver():
        return 0
    try:
        return int(check(_cuda().cuDeviceGetCount(), "cuDeviceGetCount"))
    except Exception:  # noqa: BLE001 - absence of a GPU is an answer here
        return 0


class CudaGraph(Graph):
    """An instantiated CUDA graph: `replay()` is one cuGraphLaunch on its stream."""

    def __init__(self, backend: CudaBackend, graph: Any, exec_: Any, stream: int) -> None:
        super().__init__()
        self.backend, self.graph, self.exec, self.stream = backend, graph, exec_, stream

    def replay(self, stream: Any = None) -> None:
        d = self.backend.d
        check(d.cuGraphLaunch(self.exec, self.stream if stream is None else int(stream)),
              "cuGraphLaunch")

    def close(self) -> None:
        if self.exec is not None:
            self.backend.d.cuGraphExecDestroy(self.exec)
            self.backend.d.cuGraphDestroy(self.graph)
            self.exec = None


class CudaBackend(Backend):
    """One CUDA device, its primary context; launches on the stream each call names."""

    name = "cuda"
    vendor = "nvidia"

    def __init__(self, device: int = 0) -> None:
        super().__init__()
        d = _cuda()
        self.d = d
        count = device_count()
        if device >= count:
            raise NoDeviceError(f"CUDA device {device} requested, {count} present")
        self.device = check(d.cuDeviceGet(device), "cuDeviceGet")
        self.context = check(d.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        check(d.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        attr = d.CUdevice_attribute
        major = self._attr(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self._attr(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        sms = self._attr(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.max_shared_optin = self._attr(
            attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.target = Target(f"sm{major}{minor}", sms)
        raw = check(d.cuDeviceGetName(256, self.device), "cuDeviceGetName")
        self.device_name = raw.split(b"\0", 1)[0].decode()
        version = check(d.cuDriverGetVersion(), "cuDriverGetVersion")
        self.driver_version = f"{version // 1000}.{version % 1000 // 10}"
        self._events: list[Any] = []
        self._spin: Any = None  # (function, argument, kernelParams, module), loaded on first use
        self._issue_s = 50e-6  # the host's time to queue one timed call, learnt as it times
        self._own_streams: list[Any] = []

    def _attr(self, attr: Any) -> int:
        return int(check(self.d.cuDeviceGetAttribute(attr, self.device), "cuDeviceGetAttribute"))

    def _event(self) -> Any:
        return check(self.d.cuEventCreate(0), "cuEventCreate")

    def _current(self) -> None:
        check(self.d.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    # ---- code objects
    def _load(self, blob: bytes) -> Any:
        self._current()
        return check(self.d.cuModuleLoadData(blob), "cuModuleLoadData")

    def _get_function(self, module: Module, name: str) -> Any:
        return check(self.d.cuModuleGetFunction(module.handle, name.encode()),
                     f"cuModuleGetFunction({name})")

    # ---- launches
    def _optin(self, launch: PreparedLaunch) -> None:
        """Allow the function the dynamic shared memory the launch asks beyond 48 KiB (once)."""
        fn = launch.fn.handle
        if launch.shared > 48 * 1024 and launch.shared > launch.fn.shared_optin:
            if launch.shared > self.max_shared_optin:
                raise BackendError(f"{launch.fn.name} needs {launch.shared} bytes of shared "
                                   f"memory per block; {self.device_name} allows "
                                   f"{self.max_shared_optin}: use smaller tiles or stages")
            check(self.d.cuFuncSetAttribute(
                fn, self.d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                launch.shared), "cuFuncSetAttribute")
            launch.fn.shared_optin = launch.shared

    def _launch(self, launch: PreparedLaunch, stream: Any) -> None:
        self._optin(launch)
        g, b = launch.grid, launch.block
        check(self.d.cuLaunchKernel(launch.fn.handle, g[0], g[1], g[2], b[0], b[1], b[2],
                                    launch.shared, stream or 0, launch.params_address, 0),
              f"cuLaunchKernel({launch.fn.name})")
        self.launches += 1

    def launcher(self, launch: PreparedLaunch) -> Any:
        if getattr(launch, "library", False):  # a library's call (cublas.GemmLaunch) is its own
            return launch
        self._optin(launch)
        call = _launch_kernel()
        head = (int(launch.fn.handle), *launch.grid, *launch.block, launch.shared)
        params = launch.params_address
        d = self.d

        def go(stream: int) -> None:
            status = call(*head, stream, params, None)
            if status:
                check((d.CUresult(status),), f"cuLaunchKernel({launch.fn.name})")
            self.launches += 1

        return go

    # ---- streams and capture
    def is_capturing(self, stream: int) -> bool:
        status = check(self.d.cuStreamIsCapturing(stream), "cuStreamIsCapturing")
        return bool(status != self.d.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE)

    def begin_capture(self, stream: Any = None) -> int:
        if self.capture_stream is not None:
            raise BackendError("a capture is already under way on this backend")
        self._current()
        if stream is None:  # a stream of its own: the legacy default stream cannot capture
            stream = check(self.d.cuStreamCreate(1), "cuStreamCreate")
            self._own_streams.append(stream)
        raw = int(stream)
        if raw == 0:
            raise BackendError("the default stream cannot be captured: pass another stream, "
                               "or none to have one made")
        mode = self.d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        check(self.d.cuStreamBeginCapture(raw, mode), "cuStreamBeginCapture")
        self.capture_stream = raw
        return raw

    def end_capture(self) -> Graph:
        raw, self.capture_stream = self.capture_stream, None
        if raw is None:
            raise BackendError("no capture is under way")
        graph = check(self.d.cuStreamEndCapture(raw), "cuStreamEndCapture")
        exec_ = check(self.d.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        return CudaGraph(self, graph, exec_, raw)

    # ---- memory
    def alloc(self, nbytes: int) -> Buffer:
        self._current()
        ptr = check(self.d.cuMemAlloc(max(1, nbytes)), f"cuMemAlloc({nbytes})")
        return Buffer(int(ptr), nbytes, self)

    def free(self, buf: Buffer) -> None:
        if buf.ptr:
            check(self.d.cuMemFree(buf.ptr), "cuMemFree")

    def copy_in(self, buf: Buffer, host: np.ndarray) -> None:
        import numpy as np

        data = np.ascontiguousarray(host)
        if data.nbytes > buf.nbytes:
            raise BackendError(f"copy of {data.nbytes} bytes into a {buf.nbytes}-byte buffer")
        check(self.d.cuMemcpyHtoD(buf.ptr, data.ctypes.data, data.nbytes), "cuMemcpyHtoD")

    def copy_out(self, host: np.ndarray, buf: Buffer) -> None:
        if not host.flags.c_contiguous:
            raise BackendError("copy_out needs a C-contiguous host array")
        if host.nbytes > buf.nbytes:
            raise BackendError(f"copy of {host.nbytes} bytes out of a {buf.nbytes}-byte buffer")
        check(self.d.cuMemcpyDtoH(host.ctypes.data, buf.ptr, host.nbytes), "cuMemcpyDtoH")

    def memset_ptr(self, ptr: int, byte: int, nbytes: int, stream: Any = None) -> None:
        check(self.d.cuMemsetD8Async(ptr, byte, nbytes, int(stream or 0)), "cuMemsetD8Async")

    def memset(self, buf: Buffer, byte: int, nbytes: int | None = None) -> None:
        self.memset_ptr(buf.ptr, byte, buf.nbytes if nbytes is None else nbytes)

    # ---- sync and timing
    def synchronize(self) -> None:
        check(self.d.cuCtxSynchronize(), "cuCtxSynchronize")

    def time_ms(self, fn: Callable[[], None], repeats: int = 1) -> list[float]:
        """`repeats` runs of `fn` queued behind a spin kernel on the default stream, an event
        between each two: the GPU runs them back to back, so each time is the device's alone,
        as in a CUDA graph, without the host's launch gap that floors a small kernel's time.
        The spin lasts twice the host's time to queue the runs; where the host was slower than
        that (the GPU had reached the first event before the last run was queued), the runs
        are timed again behind a longer spin, up to SPIN_MAX_S."""
        d = self.d
        self._current()
        while len(self._events) < repeats + 1:
            self._events.append(self._event())
        events = self._events[:repeats + 1]
        for _ in range(4):
            spin_s = min(2.0 * self._issue_s * repeats + 50e-6, SPIN_MAX_S)
            self._spin_for(spin_s)
            t0 = time.perf_counter()
            check(d.cuEventRecord(events[0], 0), "cuEventRecord")
            for ev in events[1:]:
                fn()
                check(d.cuEventRecord(ev, 0), "cuEventRecord")
            self._issue_s = max((time.perf_counter() - t0) / repeats, 1e-6)
            (status,) = d.cuEventQuery(events[0])
            covered = status == d.CUresult.CUDA_ERROR_NOT_READY
            check(d.cuEventSynchronize(events[-1]), "cuEventSynchronize")
            if covered or spin_s >= SPIN_MAX_S:
                break
        return [float(check(d.cuEventElapsedTime(a, b), "cuEventElapsedTime"))
                for a, b in zip(events[:-1], events[1:], strict=True)]

    def _spin_for(self, seconds: float) -> None:
        """Keep the default stream busy for `seconds` (the spin kernel, loaded once)."""
        import ctypes

        if self._spin is None:
            module = check(self.d.cuModuleLoadData(SPIN_PTX), "cuModuleLoadData(mk_spin)")
            fn = check(self.d.cuModuleGetFunction(module, b"mk_spin"), "cuModuleGetFunction")
            arg = ctypes.c_uint64(0)
            params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
            self._spin = (int(fn), arg, params, module)
        fn, arg, params, _ = self._spin
        arg.value = int(seconds * 1e9)
        status = _launch_kernel()(fn, 1, 1, 1, 1, 1, 1, 0, 0, params, None)
        if status:
            check((self.d.CUresult(status),), "cuLaunchKernel(mk_spin)")

    def close(self) -> None:
        self.free_workspaces()
        for ev in self._events:
            self.d.cuEventDestroy(ev)
        if self._spin is not None:
            self.d.cuModuleUnload(self._spin[3])
        for stream in self._own_streams:
            self.d.cuStreamDestroy(stream)
        self.d.cuDevicePrimaryCtxRelease(self.device)
