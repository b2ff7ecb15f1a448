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
from miopenkernels.target import Target, TargetSpec, select_targets, spec_for

__all__ = ["BUILD_RUNNER", "MatrixEntry", "build_matrix", "matrix_json", "tune_labels"]

BUILD_RUNNER = "ubuntu-latest"
_TUNE_BASE = ("self-hosted", "linux")


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


def build_matrix(patterns: str | None = None) -> list[MatrixEntry]:
    """Entries for the targets matching `patterns` (comma-separated globs; None: all)."""
    return [MatrixEntry.for_target(t) for t in select_targets(patterns)]


def matrix_json(patterns: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """`{"include": [...]}`: the shape `strategy.matrix: ${{ fromJSON(...) }}` takes."""
    return {"include": [e.to_dict() for e in build_matrix(patterns)]}
