"""GPU detection: which GPUs this machine has, as package targets.

AMD GPUs come from `rocminfo` (full target ID, marketing name), else from the KFD topology in
sysfs; NVIDIA GPUs from NVML or the CUDA driver. MIOPEN_DEVICE_ARCH / MIOPEN_DEVICE_CU override
what is found, and both together name a device on a machine with none.
"""

from __future__ import annotations

import os

from ..config import device_overrides
from ..errors import DetectError, NoDeviceError
from . import kfd, nvidia, rocminfo
from .device import Device, SourceUnavailable, hip_cu_count
from .overrides import apply_overrides, virtual_device

__all__ = ["Device", "detect_devices", "detect_amd", "hip_cu_count", "apply_overrides"]

_HOW_TO_OVERRIDE = (
    "set MIOPEN_DEVICE_ARCH and MIOPEN_DEVICE_CU to name the GPU (e.g. MIOPEN_DEVICE_ARCH=gfx90a "
    "MIOPEN_DEVICE_CU=104), or pass a saved rocminfo output with --rocminfo-file"
)


def detect_amd(sysfs_root: str | os.PathLike[str] = "/sys", tried: list[str] | None = None
               ) -> list[Device]:
    """AMD GPUs from running rocminfo, else from the KFD topology under `sysfs_root`.

    Why a source gave nothing is appended to `tried`. rocminfo output that cannot be read is a
    `DetectError` unless the KFD topology answers instead.
    """
    tried = tried if tried is not None else []
    unreadable: DetectError | None = None
    try:
        devices = rocminfo.parse_rocminfo(rocminfo.run_rocminfo())
        if devices:
            return devices
        tried.append("rocminfo: no GPU agent")
    except (SourceUnavailable, NoDeviceError) as exc:
        tried.append(str(exc))
    except DetectError as exc:  # kept: raised only if the KFD topology cannot answer either
        unreadable = exc
        tried.append(str(exc))
    try:
        devices = kfd.read_kfd_topology(sysfs_root)
        if devices:
            return devices
        tried.append(f"KFD topology: no GPU node under {kfd.topology_dir(sysfs_root)}")
    except SourceUnavailable as exc:
        tried.append(str(exc))
    if unreadable is not None:
        raise unreadable
    return []


def detect_devices(
    rocminfo_file: str | os.PathLike[str] | None = None,
    *,
    sysfs_root: str | os.PathLike[str] = "/sys",
) -> list[Device]:
    """The GPUs of this machine (AMD, then NVIDIA), with the MIOpen overrides applied.

    With `rocminfo_file`, only that saved rocminfo output is read: it describes the machine.
    Raises `NoDeviceError` (exit 6) when there is no GPU, saying what was tried, and
    `DetectError` (exit 7) when detection output cannot be read.
    """
    arch, cu = device_overrides()
    tried: list[str] = []
    devices: list[Device] = []
    if rocminfo_file is not None:
        try:
            devices = rocminfo.read_rocminfo_file(rocminfo_file)
            if not devices:
                tried.append(f"{rocminfo_file}: no GPU agent")
        except NoDeviceError as exc:
            tried.append(str(exc))
    else:
        devices = detect_amd(sysfs_root, tried)
        try:
            devices += nvidia.detect_nvidia()
        except SourceUnavailable as exc:
            tried.append(str(exc))
    if not devices:
        if arch is not None and cu is not None:
            return [virtual_device(arch, cu)]
        given = (
            " (MIOPEN_DEVICE_ARCH alone cannot define a device: set MIOPEN_DEVICE_CU too)"
            if arch is not None else
            " (MIOPEN_DEVICE_CU alone cannot define a device: set MIOPEN_DEVICE_ARCH too)"
            if cu is not None else ""
        )
        raise NoDeviceError(f"no GPU found{given}; tried {'; '.join(tried)}; {_HOW_TO_OVERRIDE}")
    return apply_overrides(devices, arch, cu)
