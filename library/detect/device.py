"""The `Device` record that every detection source produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..target import Target

__all__ = ["Device", "SourceUnavailable", "hip_cu_count"]

# RDNA archs run in WGP mode: HIP reports one "multiprocessor" per work-group processor (two CUs),
# and MIOpen names its databases after the HIP count (RX 6900 XT: rocminfo 80 -> gfx1030_40).
_WGP_ARCH_PREFIXES = ("gfx10", "gfx11", "gfx12")


def hip_cu_count(arch: str, rocminfo_cu: int) -> int:
    """The CU count HIP reports (and MIOpen uses) for an agent with `rocminfo_cu` CUs."""
    if arch.startswith(_WGP_ARCH_PREFIXES):
        return max(rocminfo_cu // 2, 1)
    return rocminfo_cu


class SourceUnavailable(Exception):
    """A detection source cannot be used here (tool or library absent, driver not loaded).

    Not a `MIOpenKernelsError`: it only feeds the "what was tried" part of `NoDeviceError`.
    """


@dataclass(frozen=True)
class Device:
    """One GPU as detection sees it.

    `cu` is the count HIP/CUDA reports (multiprocessors), the one database and package names use;
    `rocminfo_cu` is rocminfo's (and KFD's) `Compute Unit` count, None where there is none.
    `index` is the device's ordinal for its own runtime (HIP or CUDA).
    """

    vendor: str
    name: str
    arch: str
    target_id: str
    cu: int
    rocminfo_cu: int | None = None
    index: int = 0

    @property
    def target(self) -> Target:
        """The package target of this device (arch with target features, HIP CU count)."""
        return Target(self.target_id, self.cu)

    def to_dict(self) -> dict[str, Any]:
        """What `miopenkernels detect --json` prints for this device, in this key order."""
        target = self.target
        return {
            "vendor": self.vendor,
            "name": self.name,
            "arch": self.arch,
            "target_id": self.target_id,
            "cu": self.cu,
            "basename": target.basename,
            "package": target.package,
        }
