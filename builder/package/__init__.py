"""Packaging: staged files -> data wheels + PEP 503 index, conda packages + channel.

Layout of an output folder:
    <out>/stage/<arch>-<cu>/share/...   the files as they install (wheels and conda use them)
    <out>/*.whl                         data wheels (so `pip install --find-links <out>` works)
    <out>/simple/                       PEP 503 index of the wheels (pip/uv --index-url)
    <out>/channel/noarch/*.conda        conda packages, indexed (repodata.json)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miopenkernels import __version__
from miopenkernels.errors import MIOpenKernelsError, PackageBuildError, TargetError
from miopenkernels.target import Target
from miopenkernels.versions import normalize_version

from .manifest import TargetFiles, collect_build_files, lacking, stage_target

__all__ = ["PackageResult", "package_targets", "package_from_build", "package_from_dir", "KINDS"]

KINDS = ("wheel", "conda", "both")


@dataclass
class PackageResult:
    target: Target
    staged: Path
    wheel: Path | None = None
    conda: Path | None = None
    lacks: list[str] = field(default_factory=list)  # what the package does not carry

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.name,
            "package": self.target.package,
            "staged": str(self.staged),
            "wheel": str(self.wheel) if self.wheel else None,
            "conda": str(self.conda) if self.conda else None,
            "lacks": self.lacks,
        }


def package_targets(
    files: list[TargetFiles],
    out: Path,
    kind: str = "both",
    version: str | None = None,
    selector: bool = True,
) -> list[PackageResult]:
    """Stage each target, then build and index the wheels and/or conda packages."""
    if kind not in KINDS:
        raise MIOpenKernelsError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    from ..codeobject import check_kdb_target

    version = normalize_version(version or __version__, PackageBuildError)
    for tf in files:  # a package never ships code for another GPU, and is closed
        if tf.kdb is not None:
            check_kdb_target(tf.kdb, tf.target)
        _check_closed(tf)
    out.mkdir(parents=True, exist_ok=True)
    results = [PackageResult(tf.target, stage_target(tf, out / "stage", version),
                             lacks=lacking(tf)) for tf in files]
    if kind in ("wheel", "both"):
        from .index import write_simple_index
        from .wheel import build_wheel

        for r, tf in zip(results, files, strict=True):
            r.wheel = build_wheel(r.staged, r.target, version, out,
                                  databases_only=tf.kdb is None)
        write_simple_index([r.wheel for r in results if r.wheel], out / "simple")
    if kind in ("conda", "both"):
        from .conda import build_conda_packages, build_selector_package, package_name
        from .index import index_channel

        targets = [r.target for r in results]
        channel = out / "channel"
        built = {package_name(p): p for p in build_conda_packages(
            out / "stage", targets, version, channel,
            databases_only=[tf.target for tf in files if tf.kdb is None])}
        for r in results:
            r.conda = built.get(r.target.package)
            if r.conda is None:
                raise PackageBuildError(f"rattler-build made no {r.target.package} package "
                                        f"(it made: {', '.join(p.name for p in built.values())})")
        if selector:
            build_selector_package(_channel_targets(channel, targets, version), version,
                                   channel)
        index_channel(channel)
    return results


def _check_closed(tf: TargetFiles) -> None:
    """DbError when a built package's databases name a kernel its kdb lacks (builder/closure.py).

    Packages made `--from-dir` carry an existing installation's files as they are: there is
    no build to complete them, so they are not held to it.
    """
    from ..closure import check_closed

    if tf.origin != "build":
        return

    base = tf.target.basename
    fdb = tf.files.get(f"{base}.HIP.fdb.txt")
    perf = tf.files.get(f"{base}.db") or tf.files.get(f"{base}.db.txt")
    if tf.kdb is not None and fdb is not None:
        check_closed(tf.target, tf.kdb, fdb, perf)


def _channel_targets(channel: Path, targets: list[Target], version: str) -> list[Target]:
    """Targets of every kernel package in the channel, so the selector covers all of them."""
    found = list(targets)
    from .conda import package_name, package_version

    for pkg in sorted((channel / "noarch").glob("miopenkernels-*.conda")):
        try:
            t = Target.from_package(package_name(pkg))
        except TargetError:
            continue  # the selector package
        if package_version(pkg) == version and t not in found:
            found.append(t)
    return found


def package_from_build(
    targets: list[Target], build_dir: Path, out: Path, kind: str = "both",
    version: str | None = None, manifests: list[str] | None = None,
    dbs_dir: Path | None = None,
) -> list[PackageResult]:
    """Package the builder's `<build_dir>/<basename>.kdb` (+ dbs/<basename>/) per target."""
    files = [collect_build_files(t, build_dir, dbs_dir, manifests) for t in targets]
    return package_targets(files, out, kind, version)


def package_from_dir(
    directory: Path, target: Target, out: Path, kind: str = "both", version: str | None = None,
) -> list[PackageResult]:
    """Package existing MIOpen databases of `target` found in `directory`."""
    from .fromdir import collect_dir_files

    return package_targets([collect_dir_files(directory, target)], out, kind, version)
