"""NVIDIA GPUs through NVML (nvidia-ml-py) or the CUDA driver (cuda-bindings).

Both libraries are imported only when detection runs; a missing library, a missing driver or no
device all mean "no NVIDIA GPU here" (`SourceUnavailable`), never a crash. NVML reports a GPU's
SM count only for MIG instances, so for whole GPUs it comes from the CUDA driver (matched by PCI
bus ID), else from NVML's core count divided by the cores per SM of the architecture.
"""

from __future__ import annotations

import contextlib
import importlib
from types import ModuleType
from typing import Any

from .._cuda_status import describe, is_success, unpack
from ..errors import DetectError
from .device import Device, SourceUnavailable

__all__ = ["detect_nvidia", "nvml_devices", "cuda_devices"]

# FP32 cores per SM by compute capability (CUDA samples, helper_cuda.h _ConvertSMVer2Cores).
_CORES_PER_SM = {
    (6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128,
    (8, 7): 128, (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128,
}


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _bus_key(bus_id: str) -> tuple[int, int, int, int] | None:
    """'00000000:17:00.0' (NVML) and '0000:17:00.0' (CUDA) -> (0, 0x17, 0, 0)."""
    try:
        domain, bus, rest = bus_id.strip().rstrip("\x00").split(":")
        dev, fn = rest.split(".")
        return int(domain, 16), int(bus, 16), int(dev, 16), int(fn, 16)
    except ValueError:
        return None


# ----------------------------------------------------------------------------- CUDA driver
def _driver() -> ModuleType:
    drv = _import("cuda.bindings.driver") or _import("cuda.cuda")  # older cuda-python
    if drv is None:
        raise SourceUnavailable("CUDA driver: cuda-bindings is not installed")
    return drv


def _call(drv: ModuleType, fn: str, *args: Any) -> Any:
    """Call a driver function; a CUresult other than success becomes a DetectError."""
    return unpack(drv, getattr(drv, fn)(*args), f"CUDA driver: {fn}", DetectError)


def _cuda_init(drv: ModuleType) -> bool:
    """True when the driver started; False when it reports no device."""
    try:
        (err,) = drv.cuInit(0)
    except Exception as exc:  # cuda-bindings raises when libcuda.so cannot be loaded
        first = str(exc).split(". ", 1)[0]
        raise SourceUnavailable(f"CUDA driver: {type(exc).__name__}: {first}") from None
    if err == drv.CUresult.CUDA_ERROR_NO_DEVICE:
        return False
    if not is_success(drv, err):
        raise SourceUnavailable(f"CUDA driver: cuInit failed: {describe(drv, err)}")
    return True


def cuda_devices() -> list[Device]:
    """Every CUDA device in CUDA's order, with name, compute capability and SM count."""
    drv = _driver()
    if not _cuda_init(drv):
        return []
    attr = drv.CUdevice_attribute
    devices = []
    for index in range(_call(drv, "cuDeviceGetCount")):
        dev = _call(drv, "cuDeviceGet", index)
        name = _text(_call(drv, "cuDeviceGetName", 256, dev)).rstrip("\x00").strip()
        major = _call(drv, "cuDeviceGetAttribute",
                      attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        minor = _call(drv, "cuDeviceGetAttribute",
                      attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
        sms = _call(drv, "cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                    dev)
        arch = f"sm{major}{minor}"
        devices.append(Device("nvidia", name, arch, arch, int(sms), None, index))
    return devices


def _cuda_sm_counts() -> dict[tuple[int, int, int, int], int]:
    """SM count per PCI bus ID from the CUDA driver; {} when it cannot be asked."""
    try:
        drv = _driver()
        if not _cuda_init(drv):
            return {}
        counts = {}
        attr = drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        for index in range(_call(drv, "cuDeviceGetCount")):
            dev = _call(drv, "cuDeviceGet", index)
            key = _bus_key(_text(_call(drv, "cuDeviceGetPCIBusId", 64, dev)))
            if key is not None:
                counts[key] = int(_call(drv, "cuDeviceGetAttribute", attr, dev))
        return counts
    except (SourceUnavailable, DetectError):
        return {}


# ----------------------------------------------------------------------------- NVML
def _nvml_sm_count(nvml: Any, handle: Any, cc: tuple[int, int],
                   by_bus: dict[tuple[int, int, int, int], int]) -> int | None:
    try:
        count = int(nvml.nvmlDeviceGetAttributes_v2(handle).multiprocessorCount)
        if count > 0:
            return count
    except (nvml.NVMLError, AttributeError):
        pass  # whole GPUs (not MIG instances) answer NOT_SUPPORTED
    key = _bus_key(_text(nvml.nvmlDeviceGetPciInfo(handle).busId))
    if key is not None and key in by_bus:
        return by_bus[key]
    try:
        cores = int(nvml.nvmlDeviceGetNumGpuCores(handle))
    except (nvml.NVMLError, AttributeError):
        return None
    per_sm = _CORES_PER_SM.get(cc)
    return cores // per_sm if per_sm and cores else None


def nvml_devices() -> list[Device]:
    """Every GPU NVML sees, in NVML's order (by PCI bus ID)."""
    nvml: Any = _import("pynvml")
    if nvml is None:
        raise SourceUnavailable("NVML: nvidia-ml-py is not installed")
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise SourceUnavailable(f"NVML: {exc}") from None
    try:
        count = nvml.nvmlDeviceGetCount()
        by_bus: dict[tuple[int, int, int, int], int] | None = None
        devices = []
        for index in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = _text(nvml.nvmlDeviceGetName(handle))
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            if by_bus is None:
                by_bus = _cuda_sm_counts()
            sms = _nvml_sm_count(nvml, handle, (major, minor), by_bus)
            if sms is None:
                raise DetectError(
                    f"NVML: cannot tell the SM count of GPU {index} ({name}); install "
                    "cuda-bindings or set MIOPEN_DEVICE_CU"
                )
            arch = f"sm{major}{minor}"
            devices.append(Device("nvidia", name, arch, arch, sms, None, index))
        return devices
    except nvml.NVMLError as exc:
        raise DetectError(f"NVML: {exc}") from None
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def detect_nvidia() -> list[Device]:
    """NVIDIA GPUs from NVML, else from the CUDA driver; `SourceUnavailable` when neither works."""
    reasons = []
    for source in (nvml_devices, cuda_devices):
        try:
            return source()
        except SourceUnavailable as exc:
            reasons.append(str(exc))
    raise SourceUnavailable("; ".join(reasons))
