"""GPU nodes from the KFD topology in sysfs (what ROCr itself reads; no ROCm install needed).

`<sysfs>/class/kfd/kfd/topology/nodes/<n>/properties` holds `key value` lines. A GPU node has
`simd_count` > 0 and `gfx_target_version` = major*10000 + minor*100 + stepping in decimal
(90010 -> gfx90a, 100300 -> gfx1030); its CU count is `simd_count / simd_per_cu`, the number
rocminfo prints as `Compute Unit`. CPU nodes have `simd_count 0` and `cpu_cores_count` > 0.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._numbers import INT64, parse_int
from ..errors import DetectError, TargetError
from ..target import Target
from .device import Device, SourceUnavailable, hip_cu_count

__all__ = ["read_kfd_topology", "arch_from_gfx_target_version", "topology_dir"]

# Set by the driver when the GPU's SRAM ECC is on (kfd_topology.h). The old 0x00080000 bit is
# reserved and always 0.
_HSA_CAP_SRAM_EDCSUPPORTED = 0x04000000
# Archs whose target ID carries sramecc (LLVM AMDGPUUsage, "Target Features").
_SRAMECC_ARCHS = frozenset({"gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})


def topology_dir(sysfs_root: str | os.PathLike[str] = "/sys") -> Path:
    """The KFD topology directory under a sysfs root."""
    return Path(sysfs_root) / "class" / "kfd" / "kfd" / "topology"


def arch_from_gfx_target_version(version: int) -> str:
    """90010 -> 'gfx90a', 100300 -> 'gfx1030', 90402 -> 'gfx942' (minor and stepping in hex)."""
    major, minor, step = version // 10000, (version // 100) % 100, version % 100
    if major < 1 or minor > 15 or step > 15:
        raise DetectError(f"gfx_target_version {version} is not a known encoding")
    return f"gfx{major}{minor:x}{step:x}"


def _properties(file: Path) -> dict[str, int]:
    props: dict[str, int] = {}
    try:
        text = file.read_text()
    except OSError as exc:
        raise DetectError(f"cannot read {file}: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise DetectError(f"{file}:{number}: expected '<key> <integer>', got {line[:80]!r}")
        props[parts[0]] = parse_int(parts[1], f"{file}:{number}: {parts[0][:40]}", INT64[0],
                                    2**64 - 1, DetectError, signed=True)
    return props


def _node_device(node: Path, props: dict[str, int], index: int) -> Device:
    where = node / "properties"
    version = props.get("gfx_target_version", 0)
    if version <= 0:
        raise DetectError(
            f"{where}: GPU node without gfx_target_version (kernel too old?); install rocminfo "
            "or set MIOPEN_DEVICE_ARCH"
        )
    simd_per_cu = props.get("simd_per_cu", 0)
    if simd_per_cu <= 0:
        raise DetectError(f"{where}: GPU node without simd_per_cu")
    arch = arch_from_gfx_target_version(version)
    rocminfo_cu = props["simd_count"] // simd_per_cu
    features: tuple[str, ...] = ()
    if arch in _SRAMECC_ARCHS:
        on = bool(props.get("capability", 0) & _HSA_CAP_SRAM_EDCSUPPORTED)
        features = ("sramecc+" if on else "sramecc-",)
    cu = hip_cu_count(arch, rocminfo_cu)
    try:
        target = Target(arch, cu, features)
    except TargetError as exc:
        raise DetectError(f"{where}: {exc}") from None
    try:
        name = (node / "name").read_text().strip()
    except OSError:
        name = ""
    # xnack is a run-time mode that the topology does not show; leaving it out means "any".
    return Device("amd", name or f"AMD GPU {arch}", arch, target.target_id, cu, rocminfo_cu,
                  index)


def read_kfd_topology(sysfs_root: str | os.PathLike[str] = "/sys") -> list[Device]:
    """Every GPU node of the KFD topology under `sysfs_root`, in node order.

    `SourceUnavailable` when there is no topology (amdgpu not loaded, or not Linux);
    `DetectError` when a GPU node cannot be read.
    """
    nodes_dir = topology_dir(sysfs_root) / "nodes"
    if not nodes_dir.is_dir():
        raise SourceUnavailable(f"KFD topology: {nodes_dir} not present")
    nodes = sorted(
        (p for p in nodes_dir.iterdir() if p.name.isascii() and p.name.isdigit()
         and len(p.name) < 10 and (p / "properties").is_file()),
        key=lambda p: int(p.name),
    )
    devices: list[Device] = []
    for node in nodes:
        props = _properties(node / "properties")
        if props.get("simd_count", 0) > 0:
            devices.append(_node_device(node, props, len(devices)))
    return devices
