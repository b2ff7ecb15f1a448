"""Is this blob a code object for this GPU, and does it define this kernel?

AMDGPU code objects are ELF files with e_machine EM_AMDGPU (224). The arch is read from the
`amdhsa.target` field of the NT_AMDGPU_METADATA note (msgpack) when msgpack is installed, and is
always cross-checked against the EF_AMDGPU_MACH byte of e_flags. A kernel defines its symbol and
its kernel descriptor `<name>.kd`.

Cubins are ELF files with e_machine EM_CUDA (190). The SM number sits in e_flags; where depends on
the ELF ABI version NVIDIA writes (checked on cubins from NVRTC 13.5 and nvcc 13.0):
ABI version >= 8 (CUDA 12.8 and later, OS/ABI 0x41) keeps it in bits 8-15 (sm_90 -> 0x6005A04);
older cubins (OS/ABI 0x33, ABI version 7) keep it in bits 0-7 (sm_80 -> 0x500550).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CodeObjectError
from ._elf import ElfFile, read_elf

__all__ = ["CodeObjectInfo", "inspect_code_object", "check_code_object", "EM_AMDGPU", "EM_CUDA"]

EM_AMDGPU = 224
EM_CUDA = 190
_NT_AMDGPU_METADATA = 32
_EF_AMDGPU_MACH = 0xFF

# EF_AMDGPU_MACH values, each read from an object compiled here (hipcc/clang-15, clang-19).
AMDGPU_MACH = {
    0x2C: "gfx900", 0x2F: "gfx906", 0x30: "gfx908", 0x3F: "gfx90a", 0x4C: "gfx942",
    0x36: "gfx1030", 0x41: "gfx1100", 0x46: "gfx1101", 0x47: "gfx1102", 0x48: "gfx1200",
    0x4E: "gfx1201",
}


@dataclass(frozen=True)
class CodeObjectInfo:
    """What a code object says about itself."""

    vendor: str  # 'amd' | 'nvidia'
    arch: str  # 'gfx90a' or 'sm90' (DbId form, no target features)
    target_id: str  # 'gfx90a:xnack-' when the note says so; the arch otherwise
    kernels: tuple[str, ...]  # kernel symbols (AMD: those with a `.kd` descriptor)
    symbols: frozenset[str]

    def to_dict(self) -> dict[str, object]:
        return {
            "vendor": self.vendor, "arch": self.arch, "target_id": self.target_id,
            "kernels": list(self.kernels),
        }


def _amdgpu_note_target(elf: ElfFile) -> str | None:
    """`amdhsa.target` without the `amdgcn-amd-amdhsa--` prefix, or None if unreadable."""
    try:
        import msgpack
    except ImportError:  # the runtime may lack msgpack; e_flags still names the arch
        return None
    for owner, ntype, desc in elf.notes:
        if owner == "AMDGPU" and ntype == _NT_AMDGPU_METADATA:
            try:
                meta = msgpack.unpackb(desc, raw=False, strict_map_key=False)
            except Exception:  # noqa: BLE001 - any decoding failure means "no usable note"
                return None
            target = meta.get("amdhsa.target") if isinstance(meta, dict) else None
            if isinstance(target, str):
                return target.removeprefix("amdgcn-amd-amdhsa--")
    return None


def _cubin_sm(elf: ElfFile) -> int:
    if elf.abi_version >= 8:
        return (elf.flags >> 8) & 0xFF
    return elf.flags & 0xFF


def inspect_code_object(blob: bytes, what: str = "code object") -> CodeObjectInfo:
    """Vendor, arch and kernels of an AMDGPU code object or cubin; CodeObjectError otherwise."""
    elf = read_elf(blob, what)
    if elf.machine == EM_AMDGPU:
        mach = AMDGPU_MACH.get(elf.flags & _EF_AMDGPU_MACH)
        target_id = _amdgpu_note_target(elf)
        arch = target_id.split(":", 1)[0] if target_id else mach
        if arch is None:
            raise CodeObjectError(
                f"{what}: unknown EF_AMDGPU_MACH 0x{elf.flags & 0xFF:x} and no readable "
                "amdhsa.target note"
            )
        if mach is not None and target_id is not None and mach != arch:
            raise CodeObjectError(
                f"{what}: metadata note says {arch} but e_flags say {mach}"
            )
        kernels = tuple(sorted(s[:-3] for s in elf.symbols if s.endswith(".kd")))
        return CodeObjectInfo("amd", arch, target_id or arch, kernels, elf.symbols)
    if elf.machine == EM_CUDA:
        arch = f"sm{_cubin_sm(elf)}"
        kernels = tuple(sorted(s for s in elf.symbols if not s.startswith((".", "$", "__nv"))))
        return CodeObjectInfo("nvidia", arch, arch, kernels, elf.symbols)
    raise CodeObjectError(
        f"{what} has e_machine {elf.machine}, neither AMDGPU ({EM_AMDGPU}) nor CUDA ({EM_CUDA})"
    )


def check_code_object(
    blob: bytes, arch: str, kernel_name: str, what: str = "code object"
) -> CodeObjectInfo:
    """Raise CodeObjectError unless `blob` is a code object for `arch` defining `kernel_name`.

    `arch` is a DbId (`gfx90a`, `sm90`); target features are ignored on both sides.
    """
    info = inspect_code_object(blob, what)
    want = arch.split(":", 1)[0].lower().replace("sm_", "sm")
    if info.arch != want:
        raise CodeObjectError(f"{what} is for {info.arch}, expected {want}")
    missing = [kernel_name] if kernel_name not in info.symbols else []
    if info.vendor == "amd" and f"{kernel_name}.kd" not in info.symbols:
        missing.append(f"{kernel_name}.kd")
    if missing:
        have = ", ".join(info.kernels) or "none"
        raise CodeObjectError(
            f"{what} for {info.arch} lacks symbol {' and '.join(missing)} (kernels: {have})"
        )
    return info
