"""What each AMD code object of a build asks of its compute unit, checked against the arch.

No AMD GPU runs here, so reading an object's resource notes is what stands in for launching it:
an object whose VGPRs, SGPRs or LDS exceed what its arch gives one wave or workgroup
(target.amdgpu_limits) could never launch, and the build refuses it; spills (scratch memory,
spilled registers) are legal but slow, and the build reports them per kernel family (the
kernel source file a job compiles).
"""

from __future__ import annotations

from typing import Any

from miopenkernels._record import dataclass, field
from miopenkernels.codeobject import KernelResources, amdgpu_resources
from miopenkernels.launch_metadata import LaunchMetadata
from miopenkernels.target import Target, amdgpu_limits

__all__ = ["FamilyResources", "ResourceReport", "family_of", "over_limits"]


def family_of(job: Any) -> str:
    """A job's kernel family: its kernel source file without the suffix."""
    name = str(getattr(job, "kernel_file", "") or "?").rsplit("/", 1)[-1]
    return name.split(".", 1)[0] or "?"


def over_limits(arch: str, kernel: KernelResources, dynamic_lds: int = 0) -> list[str]:
    """What of `kernel` exceeds `arch`'s limits, in words; empty where it fits."""
    vgprs, sgprs, lds = amdgpu_limits(arch)
    out = []
    unified = vgprs == 512
    if (kernel.vgprs if unified else max(kernel.vgprs, kernel.agprs)) > vgprs:
        out.append(f"{max(kernel.vgprs, kernel.agprs)} VGPRs (at most {vgprs})")
    if kernel.sgprs > sgprs:
        out.append(f"{kernel.sgprs} SGPRs (at most {sgprs})")
    if kernel.lds_bytes + dynamic_lds > lds:
        out.append(f"{kernel.lds_bytes + dynamic_lds} bytes of LDS (at most {lds})")
    return out


@dataclass
class FamilyResources:
    """One family's objects on one target: counts and the largest of each resource."""

    objects: int = 0
    spilling: int = 0  # objects with scratch memory or VGPRs spilled to it (slow)
    sgpr_spilling: int = 0  # objects that spill SGPRs (into VGPR lanes: cheap)
    max_vgprs: int = 0
    max_sgprs: int = 0
    max_lds_bytes: int = 0
    max_scratch_bytes: int = 0

    def add(self, kernels: tuple[KernelResources, ...], dynamic_lds: int) -> None:
        self.objects += 1
        self.spilling += any(k.scratch_bytes or k.vgpr_spills for k in kernels)
        self.sgpr_spilling += any(k.sgpr_spills for k in kernels)
        for k in kernels:
            self.max_vgprs = max(self.max_vgprs, k.vgprs)
            self.max_sgprs = max(self.max_sgprs, k.sgprs)
            self.max_lds_bytes = max(self.max_lds_bytes, k.lds_bytes + dynamic_lds)
            self.max_scratch_bytes = max(self.max_scratch_bytes, k.scratch_bytes)

    def to_dict(self) -> dict[str, int]:
        return {"objects": self.objects, "spilling": self.spilling,
                "sgpr_spilling": self.sgpr_spilling,
                "max_vgprs": self.max_vgprs, "max_sgprs": self.max_sgprs,
                "max_lds_bytes": self.max_lds_bytes, "max_scratch_bytes": self.max_scratch_bytes}


@dataclass
class ResourceReport:
    """A target's AMD objects by family; `check` returns why an object cannot launch."""

    families: dict[str, FamilyResources] = field(default_factory=dict)

    def check(self, target: Target, job: Any, code: bytes, meta: LaunchMetadata | None,
              what: str) -> str | None:
        """Read the resources of `code` (the object of `job` for AMD `target`, launched with
        `meta`, both as split_kdb_blob gives them); None where it fits the arch (and count it
        in), else one line saying what exceeds which limit."""
        kernels = amdgpu_resources(code, what)
        dynamic = int(meta.shared_bytes) if meta is not None else 0
        problems = [p for k in kernels for p in over_limits(target.arch, k, dynamic)]
        if problems:
            return (f"{what} cannot launch on {target.arch}: {', '.join(problems)}; change the "
                    "kernel's tile or launch bounds")
        self.families.setdefault(family_of(job), FamilyResources()).add(kernels, dynamic)
        return None

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {name: fam.to_dict() for name, fam in sorted(self.families.items())}
