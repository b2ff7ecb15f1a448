"""GPU backends: CUDA (cuda-bindings), HIP (hip-python) and a null backend for CPU machines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import config
from ..errors import MIOpenKernelsError, NoDeviceError
from ..target import Target
from .base import Arg, Backend, Buffer, Function, Module, PreparedLaunch
from .null import NullBackend

if TYPE_CHECKING:
    from ..detect.device import Device

__all__ = ["Arg", "Backend", "Buffer", "Function", "Module", "PreparedLaunch", "NullBackend",
           "open_backend", "open_for"]


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


def open_for(device: Device | int | None, target: Target | str | None,
             backend: Backend | None = None) -> tuple[Backend, Target]:
    """(backend, target) of a Handle: the named backend, else the GPU `device` or `target`
    names (the null backend for a target without its GPU); the target is the named one, else
    the backend's, overridden by MIOPEN_DEVICE_ARCH / MIOPEN_DEVICE_CU."""
    if isinstance(target, str):
        target = Target.parse(target)
    if backend is None:
        index = device if device is None or isinstance(device, int) else device.index
        named = target or (None if device is None or isinstance(device, int)
                           else device.target)
        if named is None and device is None:
            arch, cu = config.device_overrides()
            if arch is not None and cu is not None:
                named = Target(arch, cu)  # a GPU of its vendor if present, else null
        backend = open_backend(index, named)
    base = target or backend.target
    if base is None:
        raise MIOpenKernelsError("the backend names no target; name it: "
                                 "Handle(backend=..., target=\"gfx90a-110\")")
    arch, cu = config.device_overrides()
    if arch is not None or cu is not None:
        base = Target(arch or base.target_id, cu or base.cu)
    if backend.target is None:
        backend.target = base
    return backend, base
