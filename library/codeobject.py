"""Code objects: what a blob is, which GPU it is for, and how its kernels are launched.

The one place that reads a GPU code object. The builder checks each compiled object here, the
JIT path checks what it compiled, `kdb verify` checks every stored row, the packager checks a kdb
before shipping it, and a backend checks a blob before handing it to the driver.

AMDGPU code objects are ELF files with e_machine EM_AMDGPU (224). The arch is read from the
`amdhsa.target` field of the NT_AMDGPU_METADATA note (msgpack) when msgpack is installed, and is
always cross-checked against the EF_AMDGPU_MACH byte of e_flags (`AMDGPU_MACH`, LLVM's
AMDGPUUsage values; each but gfx950 read back from an object clang-19 wrote). A kernel defines its
symbol and its kernel descriptor `<name>.kd`.

Cubins are ELF files with e_machine EM_CUDA (190). The SM number sits in e_flags; where depends on
the ELF ABI version NVIDIA writes (checked on cubins from NVRTC 13.5 and nvcc 13.0):
ABI version >= 8 (CUDA 12.8 and later, OS/ABI 0x41) keeps it in bits 8-15 (sm_90 -> 0x6005A04);
older cubins (OS/ABI 0x33, ABI version 7) keep it in bits 0-7 (sm_80 -> 0x500550).

A loader also takes a clang offload bundle (one entry per target) and, on NVIDIA, PTX text; the
builder and the databases hold bare ELF objects only.

Everything here is untrusted input: an offset, size or count that points outside the blob is a
CodeObjectError, never another exception.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ._lazy_re import lazy
from ._record import dataclass, field
from .errors import CodeObjectError

if TYPE_CHECKING:
    from .target import Target

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
    "check_code_object",
    "inspect_code_object",
    "read_code_object",
]

EM_AMDGPU = 224
EM_CUDA = 190

# EF_AMDGPU_MACH (e_flags & 0xFF) of every AMD arch the project knows, from LLVM's AMDGPUUsage.
AMDGPU_MACH: dict[str, int] = {
    "gfx900": 0x2C, "gfx902": 0x2D, "gfx904": 0x2E, "gfx906": 0x2F, "gfx908": 0x30,
    "gfx909": 0x31, "gfx90c": 0x32, "gfx90a": 0x3F, "gfx940": 0x40, "gfx941": 0x4B,
    "gfx942": 0x4C, "gfx950": 0x4F,
    "gfx1010": 0x33, "gfx1011": 0x34, "gfx1012": 0x35, "gfx1013": 0x42,
    "gfx1030": 0x36, "gfx1031": 0x37, "gfx1032": 0x38, "gfx1033": 0x39, "gfx1034": 0x3E,
    "gfx1035": 0x3D, "gfx1036": 0x45,
    "gfx1100": 0x41, "gfx1101": 0x46, "gfx1102": 0x47, "gfx1103": 0x44,
    "gfx1150": 0x43, "gfx1151": 0x4A, "gfx1152": 0x55,
    "gfx1200": 0x48, "gfx1201": 0x4E,
}
_ARCH_OF_MACH = {mach: arch for arch, mach in AMDGPU_MACH.items()}

_ELF_MAGIC = b"\x7fELF"
_BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
_NT_AMDGPU_METADATA = 32
_SHT_SYMTAB, _SHT_NOTE, _SHT_NOBITS, _SHT_DYNSYM = 2, 7, 8, 11
_SHDR_SIZE = 64  # Elf64_Shdr
_SYM_SIZE = 24  # Elf64_Sym
_MAX_SYMBOLS = 1 << 20


# ------------------------------------------------------------------ launch metadata
@dataclass(frozen=True)
class LaunchMetadata:
    """How one kernel of a code object is launched, beyond its own argument list.

    A hand-written kernel needs none of it (the solver's Launch says grid, block and arguments).
    A Triton kernel fixes its block (`threads_per_block` = num_warps x warp size), may ask for
    dynamic shared memory, takes scratch pointers after its own arguments (`scratch_args`, each
    `(name, bytes, alignment)`), and was specialised on assumptions about its arguments
    (`assumptions`, e.g. `x % 16 == 0`) that a caller must meet.
    """

    kernel: str
    threads_per_block: int | None = None
    shared_bytes: int = 0
    scratch_args: tuple[tuple[str, int, int], ...] = ()
    assumptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.kernel:
            raise CodeObjectError("launch metadata names no kernel")
        tpb = self.threads_per_block
        if tpb is not None and not 1 <= tpb <= 1024:
            raise CodeObjectError(f"launch metadata of {self.kernel}: {tpb} threads per block "
                                  "is outside 1..1024")
        if not 0 <= self.shared_bytes <= 1 << 20:
            raise CodeObjectError(f"launch metadata of {self.kernel}: {self.shared_bytes} bytes "
                                  "of shared memory is outside 0..1 MiB")
        for name, size, align in self.scratch_args:
            if not name or not 0 <= size <= 1 << 40 or align < 1 or align & (align - 1):
                raise CodeObjectError(f"launch metadata of {self.kernel}: scratch argument "
                                      f"{(name, size, align)!r} is malformed")

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "threads_per_block": self.threads_per_block,
                "shared_bytes": self.shared_bytes,
                "scratch_args": [list(s) for s in self.scratch_args],
                "assumptions": list(self.assumptions)}

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LaunchMetadata:
        """The inverse of `to_dict`; anything malformed is a CodeObjectError."""
        try:
            tpb = data.get("threads_per_block")
            return cls(
                kernel=str(data["kernel"]),
                threads_per_block=None if tpb is None else int(tpb),
                shared_bytes=int(data.get("shared_bytes", 0)),
                scratch_args=tuple((str(n), int(s), int(a))
                                   for n, s, a in data.get("scratch_args", ())),
                assumptions=tuple(str(a) for a in data.get("assumptions", ())),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CodeObjectError(f"malformed launch metadata ({exc!r})") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> LaunchMetadata:
        import json

        try:
            data = json.loads(text)
        except ValueError as exc:
            raise CodeObjectError(f"launch metadata is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise CodeObjectError("launch metadata is not a JSON object")
        return cls.from_dict(data)

    @classmethod
    def from_triton(cls, meta: Mapping[str, Any]) -> LaunchMetadata:
        """From the metadata Triton writes beside a compiled kernel (`kernel.metadata`)."""
        try:
            target = meta.get("target") or {}
            warp = int(target.get("warp_size", meta.get("warp_size", 32)))
            scratch = []
            for kind in ("global", "profile"):
                size = int(meta.get(f"{kind}_scratch_size", 0) or 0)
                # Triton passes both pointers whenever its launcher does; a zero size means null.
                if f"{kind}_scratch_size" in meta:
                    align = int(meta.get(f"{kind}_scratch_align", 1) or 1)
                    scratch.append((f"{kind}_scratch", size, align))
            return cls(
                kernel=str(meta["name"]),
                threads_per_block=int(meta["num_warps"]) * warp,
                shared_bytes=int(meta.get("shared", 0) or 0),
                scratch_args=tuple(scratch),
                assumptions=tuple(str(a) for a in meta.get("assumptions", ()) or ()),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CodeObjectError(f"malformed Triton metadata ({exc!r})") from None


# ------------------------------------------------------------------ metadata in a kdb blob
# A kdb row holds one blob under MIOpen's kern_db schema. An object that needs launch metadata
# (a Triton kernel's) carries it as a trailer behind the ELF image:
#     <code object><LaunchMetadata JSON, UTF-8><u64 LE: JSON length>b"MKLAUNCH"
# Loaders read an ELF image by its own headers (cuModuleLoadData and hipModuleLoadData take no
# size), so the trailer changes nothing for them; the row's md5 covers code and metadata
# together. Backends split it off before loading anyway. No trailer: no metadata.
KDB_META_MAGIC = b"MKLAUNCH"
_MAX_KDB_META = 1 << 16


def attach_launch_metadata(code_object: bytes, meta: LaunchMetadata) -> bytes:
    """The kdb blob of a code object whose kernel needs `meta` to be launched."""
    text = meta.to_json().encode()
    return bytes(code_object) + text + struct.pack("<Q", len(text)) + KDB_META_MAGIC


def split_kdb_blob(blob: bytes, what: str = "kdb blob"
                   ) -> tuple[bytes, LaunchMetadata | None]:
    """(code object, launch metadata or None) of a kdb blob; a malformed trailer is a
    CodeObjectError."""
    blob = bytes(blob)
    if len(blob) < 16 or blob[-8:] != KDB_META_MAGIC:
        return blob, None
    (size,) = struct.unpack_from("<Q", blob, len(blob) - 16)
    end = len(blob) - 16
    if size > _MAX_KDB_META or size > end:
        raise CodeObjectError(f"{what}: launch metadata trailer claims {size} bytes")
    try:
        meta = LaunchMetadata.from_json(blob[end - size : end])
    except CodeObjectError as exc:
        raise CodeObjectError(f"{what}: {exc}") from None
    return blob[: end - size], meta


_ASSUMPTION_RE = lazy(r"^\s*([A-Za-z_]\w*)\s*%\s*(\d+)\s*==\s*0\s*$")


def assumed_divisors(meta: LaunchMetadata | None) -> dict[str, int]:
    """{argument: divisor} of assumptions written `name % D == 0` (a pointer aligned to D
    bytes, an integer a multiple of D); others are not of this kind and are left out. The dict
    is shared between callers (each launch asks): read it, never change it."""
    return _divisors(meta.assumptions) if meta is not None else {}


@lru_cache(maxsize=1024)
def _divisors(assumptions: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for text in assumptions:
        m = _ASSUMPTION_RE.match(text)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


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


def _amdgpu_note_target(elf: _Elf) -> str | None:
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
def check_code_object(blob: bytes, target: Target | str, kernel_name: str | None = None,
                      what: str = "code object", *, bare: bool = True) -> CodeObjectInfo:
    """Raise CodeObjectError unless `blob` is a code object for `target` (defining
    `kernel_name` when given).

    `target` is a Target or a DbId (`gfx90a`, `sm90`); target features are ignored on both
    sides. `bare=False` also accepts what a loader takes (offload bundle, PTX no newer than the
    target's SM).
    """
    from .target import vendor_of

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
    elif info.arch != want:
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
