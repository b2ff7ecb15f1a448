"""AMD GPUs through HIP (hip-python's `hip.hip`), on the same base as the CUDA backend.

hip-python is imported on first use, so the library imports without it; a missing package or
ROCm runtime is a NoDeviceError that says what to install.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import BackendError, NoDeviceError
from ..target import Target
from .base import Backend, Buffer, Module, PreparedLaunch

if TYPE_CHECKING:  # numpy is imported where memory is copied, not on `import`
    import numpy as np

__all__ = ["HipBackend", "check", "device_count"]

_hip: Any = None


def _runtime() -> Any:
    global _hip
    if _hip is None:
        try:
            from hip import hip
        except ImportError as exc:
            raise NoDeviceError(
                f"the HIP backend needs hip-python (pip install hip-python) and ROCm: {exc}"
            ) from None
        _hip = hip
    return _hip


def check(result: Any, what: str = "") -> Any:
    """Unpack a HIP call's (status, values...) tuple; raise BackendError on failure."""
    hip = _runtime()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != hip.hipError_t.hipSuccess:
        name = hip.hipGetErrorName(err)
        text = hip.hipGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else str(name)
        text = text.decode() if isinstance(text, bytes) else str(text)
        raise BackendError(f"{what or 'HIP call'} failed: {name}: {text}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def device_count() -> int:
    try:
        return int(check(_runtime().hipGetDeviceCount(), "hipGetDeviceCount"))
    except Exception:  # noqa: BLE001 - absence of a GPU is an answer here
        return 0


class HipBackend(Backend):
    """One HIP device and its null stream."""

    name = "hip"
    vendor = "amd"

    def __init__(self, device: int = 0) -> None:
        super().__init__()
        hip = _runtime()
        self.h = hip
        count = device_count()
        if device >= count:
            raise NoDeviceError(f"HIP device {device} requested, {count} present")
        self.device = device
        check(hip.hipSetDevice(device), "hipSetDevice")
        props = hip.hipDeviceProp_t()
        check(hip.hipGetDeviceProperties(props, device), "hipGetDeviceProperties")
        arch = props.gcnArchName
        arch = arch.decode() if isinstance(arch, bytes) else str(arch)
        self.target = Target(arch.split(":", 1)[0], int(props.multiProcessorCount))
        name = props.name
        self.device_name = name.decode() if isinstance(name, bytes) else str(name)
        self._events = (check(hip.hipEventCreate(), "hipEventCreate"),
                        check(hip.hipEventCreate(), "hipEventCreate"))

    def _load(self, blob: bytes) -> Any:
        return check(self.h.hipModuleLoadData(blob), "hipModuleLoadData")

    def _get_function(self, module: Module, name: str) -> Any:
        return check(self.h.hipModuleGetFunction(module.handle, name.encode()),
                     f"hipModuleGetFunction({name})")

    def _launch(self, launch: PreparedLaunch, stream: Any) -> None:
        g, b = launch.grid, launch.block
        check(self.h.hipModuleLaunchKernel(launch.fn.handle, g[0], g[1], g[2], b[0], b[1], b[2],
                                           launch.shared, stream, launch.params_address, None),
              f"hipModuleLaunchKernel({launch.fn.name})")
        self.launches += 1

    def alloc(self, nbytes: int) -> Buffer:
        ptr = check(self.h.hipMalloc(max(1, nbytes)), f"hipMalloc({nbytes})")
        return Buffer(int(ptr), nbytes, self)

    def free(self, buf: Buffer) -> None:
        if buf.ptr:
            check(self.h.hipFree(buf.ptr), "hipFree")

    def copy_in(self, buf: Buffer, host: np.ndarray) -> None:
        import numpy as np

        data = np.ascontiguousarray(host)
        if data.nbytes > buf.nbytes:
            raise BackendError(f"copy of {data.nbytes} bytes into a {buf.nbytes}-byte buffer")
        check(self.h.hipMemcpyHtoD(buf.ptr, data.ctypes.data, data.nbytes), "hipMemcpyHtoD")

    def copy_out(self, host: np.ndarray, buf: Buffer) -> None:
        if not host.flags.c_contiguous:
            raise BackendError("copy_out needs a C-contiguous host array")
        check(self.h.hipMemcpyDtoH(host.ctypes.data, buf.ptr, host.nbytes), "hipMemcpyDtoH")

    def memset_ptr(self, ptr: int, byte: int, nbytes: int, stream: Any = None) -> None:
        check(self.h.hipMemsetAsync(ptr, byte, nbytes, stream or 0), "hipMemsetAsync")

    def synchronize(self) -> None:
        check(self.h.hipDeviceSynchronize(), "hipDeviceSynchronize")

    def time_ms(self, fn: Callable[[], None], repeats: int = 1) -> list[float]:
        start, end = self._events
        out = []
        for _ in range(repeats):
            check(self.h.hipEventRecord(start, None), "hipEventRecord")
            fn()
            check(self.h.hipEventRecord(end, None), "hipEventRecord")
            check(self.h.hipEventSynchronize(end), "hipEventSynchronize")
            out.append(float(check(self.h.hipEventElapsedTime(start, end),
                                   "hipEventElapsedTime")))
        return out
