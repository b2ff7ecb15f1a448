"""The CI build matrix: one entry per target of dbs/targets.toml, selected by glob.

The workflow (.github/workflows/kernels.yml) reads this through `miopenkernels matrix --json`
and `fromJSON`, so the matrix is data kept in one place, like cibuildwheel's identifiers.

Runners: a target builds on an ordinary runner (cross-compilation needs no GPU) and tunes on a
self-hosted runner labelled with its arch. A [[target]] in targets.toml may override either with
`runner = "..."` or `tune_runner = ["self-hosted", "linux", "..."]`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from miopenkernels.errors import TargetError
from miopenkernels.target import Target, TargetSpec, load_targets, select_targets, spec_for

__all__ = ["BUILD_RUNNER", "NVRTC_ARCHS", "MatrixEntry", "build_matrix", "matrix_json",
           "tune_labels", "check_compilable", "unlisted_notes"]

BUILD_RUNNER = "ubuntu-latest"
_TUNE_BASE = ("self-hosted", "linux")
# Compute capabilities NVRTC 13 (the nvidia-cuda-nvrtc wheel) compiles for: `nvrtc
# --list-gpu-arch`. AMD archs are those of the code-object table (codeobject.AMDGPU_MACH),
# which clang-19 and hipcc also know.
NVRTC_ARCHS = frozenset(f"sm{cc}" for cc in (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120,
                                              121))
# Matrix instructions by arch family, for the hint to an arch not in targets.toml: what its
# [[target]] would say (the entries of targets.toml are the source; this only suggests).
_MATRIX_HINT = (("gfx908", "mfma"), ("gfx90a", "mfma"), ("gfx94", "mfma"), ("gfx95", "mfma"),
                ("gfx11", "wmma"), ("gfx12", "wmma"), ("sm90", "wgmma"), ("sm10", "tcgen05"),
                ("sm8", "mma"), ("sm12", "mma"))


def tune_labels(arch: str) -> list[str]:
    """Labels of the self-hosted runner that tunes `arch`: `[self-hosted, linux, gfx90a]`."""
    return [*_TUNE_BASE, arch]


@dataclass(frozen=True)
class MatrixEntry:
    """One job of the build matrix; field names are the keys of the JSON `include` entries."""

    target: str  # `gfx90a-110`: what `miopenkernels build --targets` takes
    arch: str
    cu: int
    basename: str
    package: str
    vendor: str
    compiler: str
    compile_arch: str
    matrix: str  # matrix-core instructions of the tensor-core solvers; '' for portable only
    listed: bool  # in targets.toml (else: portable kernels only, no measured databases)
    runner: str
    tune_runner: list[str]

    @classmethod
    def for_target(cls, target: Target) -> MatrixEntry:
        spec = spec_for(target.arch)
        return cls(
            target=target.name,
            arch=target.arch,
            cu=target.cu,
            basename=target.basename,
            package=target.package,
            vendor=target.vendor,
            compiler=spec.compiler,
            compile_arch=spec.compile_arch,
            matrix=spec.matrix,
            listed=_listed(target.arch),
            runner=_runner(spec),
            tune_runner=_tune_runner(spec),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _runner(spec: TargetSpec) -> str:
    runner = spec.extra.get("runner", BUILD_RUNNER)
    if not isinstance(runner, str) or not runner:
        raise TargetError(f"targets.toml: runner of {spec.arch} must be a runner label")
    return runner


def _tune_runner(spec: TargetSpec) -> list[str]:
    labels = spec.extra.get("tune_runner", tune_labels(spec.arch))
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        raise TargetError(f"targets.toml: tune_runner of {spec.arch} must be a list of labels")
    return list(labels)


def _listed(arch: str) -> bool:
    return any(spec.arch == arch for spec in load_targets())


def check_compilable(targets: list[Target]) -> None:
    """TargetError naming the first target whose arch no compiler here knows (a typo such
    as gfx9999 would otherwise fail every compile job, one clang error each)."""
    from miopenkernels.codeobject import AMDGPU_MACH

    for t in targets:
        if _listed(t.arch) or t.arch in AMDGPU_MACH or t.arch in NVRTC_ARCHS:
            continue
        known = (sorted(AMDGPU_MACH) if t.vendor == "amd"
                 else sorted(NVRTC_ARCHS, key=lambda a: int(a[2:])))
        raise TargetError(f"no compiler here knows the arch of {t.name} ({t.arch}); "
                          f"{'clang-19' if t.vendor == 'amd' else 'NVRTC'} knows "
                          f"{', '.join(known)}")


def unlisted_notes(targets: list[Target]) -> list[str]:
    """One line per arch not in targets.toml: what its kernels will lack and how to add it."""
    notes = []
    for arch in dict.fromkeys(t.arch for t in targets if not _listed(t.arch)):
        matrix = next((m for prefix, m in _MATRIX_HINT if arch.startswith(prefix)), "")
        how = (f'a [[target]] with matrix = "{matrix}" in dbs/targets.toml gives it the '
               "tensor-core solvers" if matrix else "a [[target]] in dbs/targets.toml lists it")
        notes.append(f"note: {arch} is not in dbs/targets.toml: portable kernels only (no "
                     f"matrix-core solvers, no measured databases); {how} (README: Targets)")
    return notes


def build_matrix(patterns: str | None = None) -> list[MatrixEntry]:
    """Entries for the targets matching `patterns` (comma-separated globs; None: all); an arch
    no compiler knows is refused (TargetError)."""
    targets = select_targets(patterns)
    check_compilable(targets)
    return [MatrixEntry.for_target(t) for t in targets]


def matrix_json(patterns: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """`{"include": [...]}`: the shape `strategy.matrix: ${{ fromJSON(...) }}` takes."""
    return {"include": [e.to_dict() for e in build_matrix(patterns)]}
