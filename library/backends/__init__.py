"""GPU backends: CUDA (cuda-bindings), HIP (hip-python) and a null backend for CPU machines."""

from __future__ import annotations

from typing import Any

from ..errors import NoDeviceError
from ..target import Target
from .base import Arg, Backend, Buffer, Function, Module, PreparedLaunch
from .null import NullBackend

__all__ = ["Arg", "Backend", "Buffer", "Function", "Module", "PreparedLaunch", "NullBackend",
           "open_backend"]


def open_backend(device: int | None = None, target: Target | None = None) -> Backend:
    """The backend for a real GPU (CUDA first, then HIP), or the null one for `target`.

    With `target` given and no GPU of that vendor present, the null backend stands in.
    """
    import importlib

    errors: list[str] = []
    for vendor, module in (("nvidia", "cuda"), ("amd", "hip")):
        if target is not None and target.vendor != vendor:
            continue  # the other vendor's backend is not even imported
        mod: Any = importlib.import_module(f".{module}", __name__)
        if mod.device_count() > 0:
            cls: Any = mod.CudaBackend if vendor == "nvidia" else mod.HipBackend
            return cls(device or 0)  # type: ignore[no-any-return]
        errors.append(f"no {vendor} GPU")
    if target is not None:
        return NullBackend(target)
    raise NoDeviceError("no GPU found (" + ", ".join(errors) + "); to run without one on the "
                        "null backend, name the GPU it stands in for: "
                        "Handle(target=\"gfx90a-110\") or MIOPEN_DEVICE_ARCH=gfx90a "
                        "MIOPEN_DEVICE_CU=110")
