"""Code objects: what a blob is, which GPU it is for, and how its kernels are launched.

The one place that reads a GPU code object. The builder checks each compiled object here, the
JIT path checks what it compiled, `kdb verify` checks every stored row, the packager checks a kdb
before shipping it, and a backend checks a blob before handing it to the driver.

AMDGPU code objects are ELF files with e_machine EM_AMDGPU (224). The arch is read from the
`amdhsa.target` field of the NT_AMDGPU_METADATA note (msgpack) when msgpack is installed, and is
always cross-checked against the EF_AMDGPU_MACH byte of e_flags (`target.AMDGPU_MACH`, LLVM's
AMDGPUUsage values; each but gfx950 read back from an object clang-19 wrote). A kernel defines its
symbol and its kernel descriptor `<name>.kd`.

Cubins are ELF files with e_machine EM_CUDA (190). The SM number sits in e_flags; where depends on
the ELF ABI version NVIDIA writes (checked on cubins from NVRTC 13.5 and nvcc 13.0):
ABI version >= 8 (CUDA 12.8 and later, OS/ABI 0x41) keeps it in bits 8-15 (sm_90 -> 0x6005A04);
older cubins (OS/ABI 0x33, ABI version 7) keep it in bits 0-7 (sm_80 -> 0x500550).

A loader also takes a clang offload bundle (one entry per target) and, on NVIDIA, PTX text; the
builder and the databases hold bare ELF objects only.

The launch metadata a Triton kernel needs, and its trailer in a kdb blob, are
launch_metadata.py's (its names are importable from here too).

Everything here is untrusted input: an offset, size or count that points outside the blob is a
CodeObjectError, never another exception.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from ._lazy_re import lazy
from ._record import dataclass, field
from .errors import CodeObjectError
from .launch_metadata import (
    KDB_META_MAGIC,
    LaunchMetadata,
    assumed_divisors,
    attach_launch_metadata,
    split_kdb_blob,
)
from .target import AMDGPU_MACH, Target, vendor_of

__all__ = [
    "AMDGPU_MACH",
    "EM_AMDGPU",
    "EM_CUDA",
    "CodeObject",
    "CodeObjectInfo",
    "LaunchMetadata",
    "KDB_META_MAGIC",
    "attach_launch_metadata",
    "split_kdb_blob",
    "assumed_divisors",
    "KernelResources",
    "amdgpu_resources",
    "check_code_object",
    "runs_on",
    "inspect_code_object",
    "read_code_object",
]

EM_AMDGPU = 224
EM_CUDA = 190

_ARCH_OF_MACH = {mach: arch for arch, mach in AMDGPU_MACH.items()}

_ELF_MAGIC = b"\x7fELF"
_BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
_NT_AMDGPU_METADATA = 32
_SHT_SYMTAB, _SHT_NOTE, _SHT_NOBITS, _SHT_DYNSYM = 2, 7, 8, 11
_SHDR_SIZE = 64  # Elf64_Shdr
_SYM_SIZE = 24  # Elf64_Sym
_MAX_SYMBOLS = 1 << 20


# ------------------------------------------------------------------ what a blob says
@dataclass(frozen=True)
class CodeObjectInfo:
    """What a code object says about itself."""

    vendor: str  # 'amd' | 'nvidia'
    arch: str  # 'gfx90a' or 'sm90' (DbId form, no target features)
    target_id: str  # 'gfx90a:xnack-' when the note says so; the arch otherwise
    kernels: tuple[str, ...]  # kernel symbols (AMD: those with a `.kd` descriptor)
    symbols: frozenset[str]
    kind: str = "elf"  # 'hsaco' | 'cubin' | 'bundle' | 'ptx'

    @property
    def shown_arch(self) -> str:
        """The arch as its vendor's tools print it: `gfx90a`, `sm_90`."""
        return f"sm_{self.arch[2:]}" if self.vendor == "nvidia" else self.arch

    def to_dict(self) -> dict[str, object]:
        return {
            "vendor": self.vendor, "arch": self.arch, "target_id": self.target_id,
            "kernels": list(self.kernels),
        }


@dataclass(frozen=True)
class CodeObject:
    """One compiled object as it passes from a compiler to a loader: the bytes, what they say
    about themselves, and the launch metadata of the kernels that need some."""

    blob: bytes
    info: CodeObjectInfo
    launch: Mapping[str, LaunchMetadata] = field(default_factory=dict)

    @classmethod
    def parse(cls, blob: bytes, launch: tuple[LaunchMetadata, ...] = (),
              what: str = "code object") -> CodeObject:
        """Read `blob` (any loadable kind) and attach `launch`; each entry must name one of the
        object's kernels."""
        info = read_code_object(blob, what)
        for meta in launch:
            if info.kernels and meta.kernel not in info.kernels:
                raise CodeObjectError(f"{what}: launch metadata for {meta.kernel}, which the "
                                      f"object does not define (kernels: "
                                      f"{', '.join(info.kernels)})")
        return cls(bytes(blob), info, {m.kernel: m for m in launch})

    def launch_of(self, kernel: str) -> LaunchMetadata:
        return self.launch.get(kernel) or LaunchMetadata(kernel)


# ------------------------------------------------------------------ ELF reading
@dataclass(frozen=True)
class _Elf:
    machine: int
    flags: int
    os_abi: int
    abi_version: int
    symbols: frozenset[str]
    notes: tuple[tuple[str, int, bytes], ...]  # (owner name, type, descriptor)


def _span(blob: bytes, offset: int, size: int, what: str, part: str) -> bytes:
    if offset < 0 or size < 0 or offset + size > len(blob):
        raise CodeObjectError(f"{what} is a truncated or malformed ELF file ({part} at offset "
                              f"{offset:#x}, {size} bytes, lies outside its {len(blob)} bytes)")
    return blob[offset : offset + size]


def _cstr(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def _notes(data: bytes) -> list[tuple[str, int, bytes]]:
    out = []
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        pos += 12
        name = data[pos : pos + namesz].rstrip(b"\0").decode("ascii", "replace")
        pos += (namesz + 3) & ~3  # name and descriptor are padded to 4 bytes
        desc = data[pos : pos + descsz]
        pos += (descsz + 3) & ~3
        out.append((name, ntype, desc))
    return out


def _read_elf(blob: bytes, what: str) -> _Elf:
    """Parse `blob`; anything that is not a well-formed ELF64 LE file is a CodeObjectError."""
    if len(blob) < 64 or blob[:4] != _ELF_MAGIC:
        raise CodeObjectError(f"{what} is not an ELF file (starts with {bytes(blob[:8])!r})")
    if blob[4] != 2 or blob[5] != 1:
        raise CodeObjectError(f"{what} is not a 64-bit little-endian ELF file")
    machine, = struct.unpack_from("<H", blob, 18)
    shoff, = struct.unpack_from("<Q", blob, 40)
    flags, = struct.unpack_from("<I", blob, 48)
    shentsize, shnum = struct.unpack_from("<HH", blob, 58)
    sections = []
    if shnum:
        if shentsize < _SHDR_SIZE:
            raise CodeObjectError(f"{what} is a truncated or malformed ELF file (section header "
                                  f"size {shentsize} < {_SHDR_SIZE})")
        _span(blob, shoff, shnum * shentsize, what, "section header table")
    for i in range(shnum):
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, ...
        _, stype, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", blob, shoff + i * shentsize)
        sections.append((stype, offset, size, link, entsize))
    symbols: set[str] = set()
    notes: list[tuple[str, int, bytes]] = []
    for i, (stype, offset, size, link, entsize) in enumerate(sections):
        if stype in (_SHT_SYMTAB, _SHT_DYNSYM):
            data = _span(blob, offset, size, what, f"symbol table (section {i})")
            if entsize < _SYM_SIZE or size // entsize > _MAX_SYMBOLS:
                raise CodeObjectError(f"{what} is a truncated or malformed ELF file (symbol "
                                      f"table entry size {entsize}, {size} bytes)")
            if link >= len(sections):
                raise CodeObjectError(f"{what} is a truncated or malformed ELF file (symbol "
                                      f"table links to section {link} of {len(sections)})")
            _, stroff, strsize, _, _ = sections[link]
            strtab = _span(blob, stroff, strsize, what, f"string table (section {link})")
            for pos in range(0, len(data) - entsize + 1, entsize):
                st_name, = struct.unpack_from("<I", data, pos)
                if st_name:
                    symbols.add(_cstr(strtab, st_name))
        elif stype == _SHT_NOTE:
            notes += _notes(_span(blob, offset, size, what, f"note (section {i})"))
    return _Elf(machine, flags, blob[7], blob[8], frozenset(symbols), tuple(notes))


def _amdgpu_metadata(elf: _Elf) -> bytes | None:
    """The msgpack bytes of the NT_AMDGPU_METADATA note, or None where there is none."""
    return next((desc for owner, ntype, desc in elf.notes
                 if owner == "AMDGPU" and ntype == _NT_AMDGPU_METADATA), None)


def _amdgpu_note_target(elf: _Elf) -> str | None:
    """`amdhsa.target` without the `amdgcn-amd-amdhsa--` prefix, or None if unreadable."""
    try:
        import msgpack
    except ImportError:  # the runtime may lack msgpack; e_flags still names the arch
        return None
    desc = _amdgpu_metadata(elf)
    if desc is None:
        return None
    try:
        meta = msgpack.unpackb(desc, raw=False, strict_map_key=False)
    except Exception:  # noqa: BLE001 - any decoding failure means "no usable note"
        return None
    target = meta.get("amdhsa.target") if isinstance(meta, dict) else None
    return target.removeprefix("amdgcn-amd-amdhsa--") if isinstance(target, str) else None


@dataclass(frozen=True)
class KernelResources:
    """What one AMDGPU kernel's descriptor asks of a compute unit (its metadata note)."""

    name: str
    vgprs: int
    agprs: int
    sgprs: int
    lds_bytes: int  # static LDS (group segment); a Triton kernel's dynamic LDS is in its meta
    scratch_bytes: int  # private segment per work-item: spilled or stack memory
    vgpr_spills: int
    sgpr_spills: int

    @property
    def spills(self) -> bool:
        return bool(self.vgpr_spills or self.sgpr_spills or self.scratch_bytes)


def amdgpu_resources(blob: bytes, what: str = "code object") -> tuple[KernelResources, ...]:
    """The resources of each kernel of a bare AMDGPU code object, from its NT_AMDGPU_METADATA
    note (`amdhsa.kernels`); CodeObjectError where the object or the note is unreadable."""
    import msgpack

    elf = _read_elf(bytes(blob), what)
    if elf.machine != EM_AMDGPU:
        raise CodeObjectError(f"{what} is not an AMDGPU code object")
    desc = _amdgpu_metadata(elf)
    if desc is None:
        raise CodeObjectError(f"{what} has no AMDGPU metadata note")
    try:
        meta = msgpack.unpackb(desc, raw=False, strict_map_key=False)
        out = []
        for k in meta["amdhsa.kernels"]:
            def num(key: str, k: dict[str, object] = k) -> int:
                value = k.get(key, 0)
                if not isinstance(value, int) or not 0 <= value < 1 << 32:
                    raise ValueError(f"{key} = {value!r}")
                return value

            out.append(KernelResources(
                str(k[".name"]), num(".vgpr_count"), num(".agpr_count"), num(".sgpr_count"),
                num(".group_segment_fixed_size"), num(".private_segment_fixed_size"),
                num(".vgpr_spill_count"), num(".sgpr_spill_count")))
        return tuple(out)
    except Exception as exc:  # noqa: BLE001 - any malformed note is the same error
        raise CodeObjectError(f"{what}: unreadable AMDGPU metadata note ({exc})") from None


def _cubin_sm(elf: _Elf) -> int:
    if elf.abi_version >= 8:  # ABI version 8 (CUDA 12.8+) moved the SM number to bits 8..15
        return (elf.flags >> 8) & 0xFF
    return elf.flags & 0xFF


def inspect_code_object(blob: bytes, what: str = "code object") -> CodeObjectInfo:
    """Vendor, arch and kernels of a bare AMDGPU code object or cubin; CodeObjectError
    otherwise (an offload bundle or PTX is not a bare object)."""
    if bytes(blob[: len(_BUNDLE_MAGIC)]) == _BUNDLE_MAGIC:
        raise CodeObjectError(f"{what} is a clang offload bundle, not an ELF code object "
                              "(compile with --no-gpu-bundle-output)")
    elf = _read_elf(bytes(blob), what)
    if elf.machine == EM_AMDGPU:
        mach = _ARCH_OF_MACH.get(elf.flags & 0xFF)
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
        return CodeObjectInfo("amd", arch, target_id or arch, kernels, elf.symbols, "hsaco")
    if elf.machine == EM_CUDA:
        arch = f"sm{_cubin_sm(elf)}"
        kernels = tuple(sorted(s for s in elf.symbols if not s.startswith((".", "$", "__nv"))))
        return CodeObjectInfo("nvidia", arch, arch, kernels, elf.symbols, "cubin")
    raise CodeObjectError(
        f"{what} has e_machine {elf.machine}, neither AMDGPU ({EM_AMDGPU}) nor CUDA ({EM_CUDA})"
    )


# ------------------------------------------------------------------ loadable containers
def _bundle_entries(blob: bytes, what: str) -> list[tuple[str, bytes]]:
    """(triple, object) of each entry of a clang offload bundle."""
    def fail(why: str) -> CodeObjectError:
        return CodeObjectError(f"{what} is a malformed clang offload bundle ({why})")

    pos = len(_BUNDLE_MAGIC)
    if len(blob) < pos + 8:
        raise fail("no entry count")
    count, = struct.unpack_from("<Q", blob, pos)
    pos += 8
    if count > 4096:
        raise fail(f"{count} entries")
    out = []
    for _ in range(count):
        if len(blob) < pos + 24:
            raise fail("truncated entry table")
        offset, size, tlen = struct.unpack_from("<QQQ", blob, pos)
        pos += 24
        if tlen > 1024 or len(blob) < pos + tlen:
            raise fail("truncated entry triple")
        triple = blob[pos : pos + tlen].decode("ascii", "replace")
        pos += tlen
        if offset + size > len(blob):
            raise fail(f"entry {triple!r} lies outside the file")
        out.append((triple, blob[offset : offset + size]))
    return out


_PTX_TARGET_RE = lazy(rb"(?m)^\s*\.target\s+sm_(\d+)[af]?\b")
_PTX_ENTRY_RE = lazy(rb"\.entry\s+([A-Za-z_$][\w$]*)")


def read_code_object(blob: bytes, what: str = "code object", arch: str | None = None
                     ) -> CodeObjectInfo:
    """Anything a loader takes: a bare object, an offload bundle (the entry for `arch`, else
    the first code object entry) or PTX text."""
    blob = bytes(blob)
    if not blob:
        raise CodeObjectError(f"{what} is empty")
    if blob.startswith(_ELF_MAGIC):
        return inspect_code_object(blob, what)
    if blob.startswith(_BUNDLE_MAGIC):
        entries = [(t, b) for t, b in _bundle_entries(blob, what) if b.startswith(_ELF_MAGIC)]
        pick = [b for t, b in entries if arch and t.split("--", 1)[-1].split(":", 1)[0] == arch]
        chosen = pick or [b for _, b in entries]
        if not chosen:
            raise CodeObjectError(f"{what}: offload bundle has no code object"
                                  + (f" for {arch}" if arch else ""))
        info = inspect_code_object(chosen[0], f"{what} (bundle entry)")
        return CodeObjectInfo(info.vendor, info.arch, info.target_id, info.kernels,
                              info.symbols, "bundle")
    m = _PTX_TARGET_RE.search(blob[:65536])
    if m and b".version" in blob[:65536]:
        arch_ = f"sm{int(m.group(1))}"
        kernels = tuple(sorted({k.decode() for k in _PTX_ENTRY_RE.findall(blob)}))
        return CodeObjectInfo("nvidia", arch_, arch_, kernels, frozenset(kernels), "ptx")
    raise CodeObjectError(f"{what} is not a code object (starts with {blob[:8]!r}): expected "
                          "an AMDGPU ELF, a cubin, an offload bundle or PTX")


# ------------------------------------------------------------------ checks
def runs_on(have: str, want: str) -> bool:
    """Whether a code object for DbId `have` runs on DbId `want`: the same arch, or a cubin
    of the same major version and no higher minor one (CUDA's binary compatibility: `sm80`
    code runs on `sm86` and `sm89`, not on `sm90`, and `sm86` code not on `sm80`)."""
    if have == want:
        return True
    if not (have.startswith("sm") and want.startswith("sm")):
        return False
    try:
        h, w = int(have[2:]), int(want[2:])
    except ValueError:
        return False
    return h // 10 == w // 10 and h % 10 <= w % 10


def check_code_object(blob: bytes, target: Target | str, kernel_name: str | None = None,
                      what: str = "code object", *, bare: bool = True) -> CodeObjectInfo:
    """Raise CodeObjectError unless `blob` is a code object for `target` (defining
    `kernel_name` when given).

    `target` is a Target or a DbId (`gfx90a`, `sm90`); target features are ignored on both
    sides. `bare=False` also accepts what a loader takes (offload bundle, PTX no newer than the
    target's SM).
    """
    if isinstance(target, str):
        want = target.split(":", 1)[0].lower().replace("sm_", "sm")
        shown = want
    else:
        want, shown = target.arch, target.name
    vendor = vendor_of(want)
    machine = struct.unpack_from("<H", blob, 18)[0] if len(blob) >= 64 and \
        bytes(blob[:4]) == _ELF_MAGIC else None
    if machine in (EM_AMDGPU, EM_CUDA) and (machine == EM_AMDGPU) != (vendor == "amd"):
        try:
            have = inspect_code_object(blob, what).shown_arch
        except CodeObjectError:
            have = "AMD GPUs" if machine == EM_AMDGPU else "NVIDIA GPUs"
        kinds = ("an AMDGPU code object, not a cubin" if machine == EM_AMDGPU
                 else "a cubin, not an AMDGPU code object")
        raise CodeObjectError(f"{what} is for {have} ({kinds}); the target is {shown} "
                              f"(expected {want} code)")
    info = inspect_code_object(blob, what) if bare else read_code_object(blob, what, want)
    if info.kind == "ptx":
        if vendor != "nvidia":
            raise CodeObjectError(f"{what} is PTX, the target {shown} is an AMD GPU")
        if int(info.arch[2:]) > int(want[2:]):
            raise CodeObjectError(f"{what} is PTX for {info.shown_arch}, which cannot run on "
                                  f"{shown}")
    elif not runs_on(info.arch, want):
        raise CodeObjectError(f"{what} is for {info.shown_arch}, the target is {shown} "
                              f"(expected {want} code)")
    if kernel_name is not None:
        missing = [kernel_name] if kernel_name not in info.symbols else []
        if info.vendor == "amd" and f"{kernel_name}.kd" not in info.symbols:
            missing.append(f"{kernel_name}.kd")
        if missing:
            have = ", ".join(info.kernels) or "none"
            raise CodeObjectError(f"{what} for {info.arch} lacks symbol "
                                  f"{' and '.join(missing)} (kernels: {have})")
    return info
