"""GPU targets: arch (with optional target-ID features), compute-unit count, vendor.

Names follow MIOpen (FORMATS.md): the DbId is the arch without features; the database basename
appends the CU count in decimal when it is at most 64 (`gfx906_60`), else in hex with no separator
(`gfx90a6e` for 110 CUs). NVIDIA targets are `sm<NN>` with the SM count as CU count and follow the
same rules. Package names always use decimal CUs: `miopenkernels-gfx90a-110`.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from ._lazy_re import lazy
from ._numbers import parse_int
from ._record import dataclass, field
from .errors import TargetError

CU_RANGE = (1, 65535)  # compute units (SMs) of one device, as a package name or override gives it

__all__ = [
    "Target",
    "TargetSpec",
    "load_targets",
    "default_targets",
    "select_targets",
    "basename_for",
    "known_archs",
    "vendor_of",
    "target_from_name",
    "AMDGPU_MACH",
    "amdgpu_limits",
]

_AMD_RE = lazy(r"^gfx[0-9a-f]{3,4}$")
_NV_RE = lazy(r"^sm_?(\d{2,3})[af]?$")
_NV_BASE_RE = lazy(r"^sm\d{2,3}$")
_FEATURE_RE = lazy(r"^(sramecc|xnack)[+-]$")
PACKAGE_PREFIX = "miopenkernels"

# EF_AMDGPU_MACH (e_flags & 0xFF) of every AMD arch the project knows, from LLVM's AMDGPUUsage:
# the arch an AMDGPU code object is for (codeobject.py), and archs a basename may start with.
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


# Per-wave and per-workgroup resources of the AMD archs, from LLVM's AMDGPUUsage: VGPRs a wave
# may hold (gfx90a, gfx94x and gfx950 share one 512-register file between VGPRs and AGPRs;
# elsewhere 256 of each kind), SGPRs (VCC and the other special registers included) and LDS
# bytes a workgroup may allocate. The builder refuses an object beyond them (builder/resources.py).
AMDGPU_UNIFIED_VGPRS = frozenset({"gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})
AMDGPU_LDS_BYTES = {"gfx950": 160 * 1024}  # every other arch: 64 KiB
AMDGPU_MAX_SGPRS = 112


def amdgpu_limits(arch: str) -> tuple[int, int, int]:
    """(VGPRs, SGPRs, LDS bytes) one wave / workgroup of `arch` may use; VGPRs count AGPRs
    too where the register file is unified."""
    base = arch.split(":", 1)[0]
    vgprs = 512 if base in AMDGPU_UNIFIED_VGPRS else 256
    return vgprs, AMDGPU_MAX_SGPRS, AMDGPU_LDS_BYTES.get(base, 64 * 1024)


def vendor_of(arch: str) -> str:
    """'amd' for gfx archs, 'nvidia' for sm archs."""
    base = arch.split(":", 1)[0].lower()
    if _AMD_RE.match(base):
        return "amd"
    if _NV_RE.match(base):
        return "nvidia"
    raise TargetError(
        f"unknown GPU arch {arch!r}: expected an AMD arch like 'gfx90a' or an NVIDIA one like "
        "'sm90'"
    )


def _normalise_arch(arch: str) -> tuple[str, tuple[str, ...]]:
    """('gfx90a', ('sramecc+', 'xnack-')) from 'gfx90a:sramecc+:xnack-'; 'sm_90' -> 'sm90'."""
    text = arch.strip()
    if text.startswith("amdgcn-amd-amdhsa--"):
        text = text[len("amdgcn-amd-amdhsa--"):]
    base, *features = text.split(":")
    base = base.lower()
    vendor = vendor_of(base)
    if vendor == "nvidia":
        m = _NV_RE.match(base)
        assert m
        if features:
            raise TargetError(f"NVIDIA arch {arch!r} takes no target features")
        return f"sm{m.group(1)}", ()
    for feat in features:
        if not _FEATURE_RE.match(feat):
            raise TargetError(
                f"target feature {feat!r} in {arch!r} is not sramecc+/- or xnack+/-"
            )
    return base, tuple(features)


def known_archs() -> frozenset[str]:
    """Every arch the project knows: targets.toml's and the code-object table's."""
    return frozenset(s.arch for s in load_targets()) | frozenset(AMDGPU_MACH)


def basename_for(db_id: str, cu: int) -> str:
    """MIOpen's database basename: `gfx906_60`, `gfx90a6e`."""
    return f"{db_id}_{cu}" if cu <= 64 else f"{db_id}{cu:x}"


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:24] + "...")


def _cu(text: str, field: str) -> int:
    return parse_int(text, field, CU_RANGE[0], CU_RANGE[1], TargetError)


@dataclass(frozen=True)
class Target:
    """One GPU kind that a package is built for."""

    arch: str  # DbId: arch without features ('gfx90a', 'sm90')
    cu: int
    features: tuple[str, ...] = ()
    vendor: str = ""

    def __post_init__(self) -> None:
        arch, feats = _normalise_arch(self.arch)
        object.__setattr__(self, "arch", arch)
        object.__setattr__(self, "features", tuple(self.features) or feats)
        object.__setattr__(self, "vendor", vendor_of(arch))
        if (not isinstance(self.cu, int) or isinstance(self.cu, bool)
                or not CU_RANGE[0] <= self.cu <= CU_RANGE[1]):
            raise TargetError(f"CU count must be an integer in {CU_RANGE[0]}..{CU_RANGE[1]}, "
                              f"got {self.cu!r}")

    @property
    def db_id(self) -> str:
        return self.arch

    @property
    def target_id(self) -> str:
        """Full target ID: arch plus features (`gfx90a:sramecc+:xnack-`)."""
        return ":".join((self.arch, *self.features))

    @property
    def basename(self) -> str:
        return basename_for(self.arch, self.cu)

    @property
    def name(self) -> str:
        """`<arch>-<cu>`: how targets are named on command lines and in the build matrix."""
        return f"{self.arch}-{self.cu}"

    @property
    def package(self) -> str:
        return f"{PACKAGE_PREFIX}-{self.arch}-{self.cu}"

    @property
    def wheel_name(self) -> str:
        """Distribution name of the data wheel (normalised: `miopenkernels_gfx906_60`)."""
        return self.package.replace("-", "_")

    @property
    def sm(self) -> int:
        """Compute capability as an integer (NVIDIA only): sm90 -> 90."""
        if self.vendor != "nvidia":
            raise TargetError(f"{self.arch} is not an NVIDIA target")
        return int(self.arch[2:])

    @classmethod
    def parse(cls, text: str) -> Target:
        """`gfx90a-104`, `gfx90a:sramecc+:xnack--110`, `sm90-132`, or a basename `gfx90a6e`."""
        s = text.strip()
        m = re.match(r"^(.*?)[-_](\d+)$", s)
        if m and not s.startswith("amdgcn"):
            return cls(arch=m.group(1), cu=_cu(m.group(2), f"CU count of target {_short(text)}"))
        try:
            return cls.from_basename(s)
        except TargetError:
            raise TargetError(
                f"cannot read target {text!r}: expected '<arch>-<cu>' such as 'gfx90a-104' or "
                "'sm90-132', or a database basename such as 'gfx90a6e'"
            ) from None

    @classmethod
    def from_basename(cls, basename: str) -> Target:
        """MIOpen's database basename back to a Target (the inverse of `basename_for`):
        `gfx906_60`, `gfx90a6e` (110 CUs), `gfx950100` (256), `sm9084` (132).

        Above 64 CUs the count is hex with no separator, so `<arch><hex>` can split more than
        one way; an arch the project knows (targets.toml, the code-object table) wins, and an
        unknown arch is trusted only when it is the one way to read the name.
        """
        s = basename.strip().lower()
        m = re.fullmatch(r"(.+)_(\d+)", s)
        if m and (_AMD_RE.match(m.group(1)) or _NV_BASE_RE.match(m.group(1))):
            return cls(m.group(1), _cu(m.group(2), f"CU count of basename {_short(basename)}"))
        splits: list[tuple[str, int]] = []
        for i in range(4, len(s)):  # the shortest arch is sm<NN>
            arch, tail = s[:i], s[i:]
            if not (_AMD_RE.match(arch) or _NV_BASE_RE.match(arch)):
                continue
            if len(tail) <= 8 and re.fullmatch(r"[0-9a-f]+", tail) and int(tail, 16) > 64:
                splits.append((arch, int(tail, 16)))
        # targets.toml is read only when the name splits more than one way (`sm9084` does not).
        known = known_archs() if len(splits) > 1 else frozenset(a for a, _ in splits)
        found = sorted((arch not in known, arch, cu) for arch, cu in splits)
        if not found or (found[0][0] and len(found) > 1):
            raise TargetError(f"{basename!r} is not a database basename such as 'gfx906_60' or "
                              "'gfx90a6e' (<arch>_<cu> up to 64 CUs, <arch><hex cu> above)")
        return cls(found[0][1], found[0][2])

    @classmethod
    def from_package(cls, name: str) -> Target:
        """A kernel package's name back to its Target: `miopenkernels-gfx90a-110`, also in
        its normalised wheel form `miopenkernels_gfx90a_110`."""
        m = re.fullmatch(rf"{PACKAGE_PREFIX}[-_.]+([a-z0-9]+)[-_.]+(\d+)", name.strip().lower())
        if not m:
            raise TargetError(f"{name!r} is not a kernel package name such as "
                              f"'{PACKAGE_PREFIX}-gfx90a-110'")
        return cls(m.group(1), _cu(m.group(2), f"CU count of package {_short(name)}"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "vendor": self.vendor,
            "arch": self.arch,
            "target_id": self.target_id,
            "cu": self.cu,
            "basename": self.basename,
            "package": self.package,
        }

    def __str__(self) -> str:
        return self.name


_NAME_ARCH_RE = lazy(r"(gfx[0-9a-f]{3,}|sm_?\d{2,3}[0-9a-f]*)(?:_(\d+))?")


def target_from_name(name: str) -> Target | None:
    """The target a database file name is for: `gfx906_60.kdb`, `gfx90a6e.HIP.fdb.txt`,
    `fdb_gfx942130_HIP_sample.txt`; None when the name does not say."""
    for m in _NAME_ARCH_RE.finditer(Path(name).name.lower()):
        token, cu = m.group(1), m.group(2)
        try:
            if cu is not None and (_AMD_RE.match(token) or _NV_BASE_RE.match(token)):
                return Target(token, int(cu))
            return Target.from_basename(token.replace("_", ""))
        except TargetError:
            continue
    return None


@dataclass(frozen=True)
class TargetSpec:
    """One arch of dbs/targets.toml: how to compile for it and the CU counts seen in the field."""

    arch: str
    vendor: str
    compiler: str  # 'hipcc' | 'clang-19' | 'nvrtc'
    compile_arch: str  # --offload-arch for AMD, 'sm_90' style for NVIDIA
    cus: tuple[int, ...]
    has_bf16: bool = True
    description: str = ""
    matrix: str = ""  # matrix instructions ('mfma', 'wmma', 'mma', ...); '' where none
    extra: dict[str, Any] = field(default_factory=dict)

    def targets(self) -> list[Target]:
        return [Target(self.arch, cu) for cu in self.cus]


def _targets_file() -> Path:
    from ._fsutil import package_dir

    return package_dir("miopenkernels.dbs") / "targets.toml"


def _parse_toml(file: Path, text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TargetError(f"targets file {file} is not valid TOML: {exc}") from None
    return data


def _mirror(file: Path, text: str) -> dict[str, Any] | None:
    """The content of targets.toml from its JSON mirror beside it (`targets.json`, written by
    `python -m miopenkernels.target`), if the mirror was made from exactly this text: the
    runtime then needs no TOML parser (tomllib imports typing, datetime and re: about 5 ms of
    a first call). A missing or stale mirror is ignored: the TOML is the source."""
    mirror = file.with_suffix(".json")
    try:
        raw = mirror.read_bytes()
    except OSError:
        return None
    import json
    import zlib

    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("source_crc32") != zlib.crc32(text.encode()):
        return None
    content = data.get("content")
    return content if isinstance(content, dict) else None


def write_mirror(path: str | None = None) -> Path:
    """Write targets.json beside targets.toml (or `path`): its parsed content and the CRC-32
    of the text it came from."""
    import json
    import zlib

    from ._fsutil import atomic_write

    file = Path(path) if path else _targets_file()
    text = file.read_text()
    data = {"source": file.name, "source_crc32": zlib.crc32(text.encode()),
            "content": _parse_toml(file, text)}
    out = file.with_suffix(".json")
    atomic_write(out, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return out


@lru_cache(maxsize=4)
def load_targets(path: str | None = None) -> tuple[TargetSpec, ...]:
    """Read dbs/targets.toml (or `path`), through its JSON mirror when that is current."""
    file = Path(path) if path else _targets_file()
    try:
        text = file.read_text()
    except FileNotFoundError:
        raise TargetError(f"targets file {file} not found") from None
    data = _mirror(file, text)
    if data is None:
        data = _parse_toml(file, text)
    specs = []
    for entry in data.get("target", []):
        try:
            arch = entry["arch"]
            known = {"arch", "vendor", "compiler", "compile_arch", "cus", "bf16", "description",
                     "matrix"}
            specs.append(
                TargetSpec(
                    arch=arch,
                    vendor=entry.get("vendor", vendor_of(arch)),
                    compiler=entry["compiler"],
                    compile_arch=entry.get("compile_arch", arch),
                    cus=tuple(int(c) for c in entry["cus"]),
                    has_bf16=bool(entry.get("bf16", True)),
                    description=entry.get("description", ""),
                    matrix=str(entry.get("matrix", "")),
                    extra={k: v for k, v in entry.items() if k not in known},
                )
            )
        except KeyError as exc:
            raise TargetError(f"targets file {file}: a [[target]] lacks {exc}") from None
    return tuple(specs)


@lru_cache(maxsize=64)
def spec_for(arch: str) -> TargetSpec:
    """The targets.toml entry of `arch`; unknown archs get a spec derived from their vendor
    (kept: solvers ask on every applicability check)."""
    base, _ = _normalise_arch(arch)
    for spec in load_targets():
        if spec.arch == base:
            return spec
    vendor = vendor_of(base)
    if vendor == "nvidia":
        return TargetSpec(base, vendor, "nvrtc", f"sm_{base[2:]}", ())
    return TargetSpec(base, vendor, "clang-19", base, ())


def default_targets() -> list[Target]:
    return [t for spec in load_targets() for t in spec.targets()]


def select_targets(patterns: str | list[str] | None) -> list[Target]:
    """Default targets matching any glob (comma-separated) against name, arch or basename.

    A pattern that names an exact `<arch>-<cu>` not in the defaults is accepted as a new target.
    """
    if not patterns:
        return default_targets()
    pats = patterns.split(",") if isinstance(patterns, str) else list(patterns)
    # A repeated pattern adds nothing: each distinct one is matched once, and each default
    # target's names are computed once, so that the work is linear in the patterns.
    pats = list(dict.fromkeys(p.strip() for p in pats if p.strip()))
    defaults = [(t, (t.name, t.arch, t.basename)) for t in default_targets()]
    by_name: dict[str, list[Target]] = {}
    for t, names in defaults:
        for n in dict.fromkeys(names):
            by_name.setdefault(n, []).append(t)
    chosen: dict[Target, None] = {}  # ordered
    for pat in pats:
        if any(ch in pat for ch in "*?["):
            hits = [t for t, names in defaults
                    if any(fnmatch.fnmatchcase(x, pat) for x in names)]
        else:
            hits = by_name.get(pat) or [Target.parse(pat)]
        if not hits:
            listing = ", ".join(t.name for t, _ in defaults)
            raise TargetError(f"no target matches {pat!r}; the defaults are: {listing}")
        chosen.update(dict.fromkeys(hits))
    return list(chosen)


if __name__ == "__main__":  # python -m miopenkernels.target: refresh dbs/targets.json
    print(write_mirror())
