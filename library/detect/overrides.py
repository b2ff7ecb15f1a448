"""MIOPEN_DEVICE_ARCH / MIOPEN_DEVICE_CU: name the device instead of (or on top of) detection."""

from __future__ import annotations

from dataclasses import replace

from ..target import Target
from .device import Device

__all__ = ["apply_overrides", "virtual_device"]


def virtual_device(arch: str, cu: int) -> Device:
    """The one device that both overrides define on a machine without a GPU."""
    target = Target(arch, cu)
    return Device(target.vendor, f"{target.target_id} (MIOPEN_DEVICE_ARCH)", target.arch,
                  target.target_id, cu, None, 0)


def apply_overrides(devices: list[Device], arch: str | None, cu: int | None) -> list[Device]:
    """Every device with its arch and/or CU count replaced, as MIOpen does for its handle.

    The arch override replaces the whole target ID (`gfx90a` drops detected features, as the
    variable names the device exactly); the CU override is the HIP-reported count.
    """
    if arch is None and cu is None:
        return list(devices)
    out = []
    for dev in devices:
        if arch is not None:
            target = Target(arch, cu or dev.cu)
            dev = replace(dev, vendor=target.vendor, arch=target.arch,
                          target_id=target.target_id)
        if cu is not None:
            dev = replace(dev, cu=cu)
        out.append(dev)
    return out
