"""Check installed (or staged) package files against their manifests' sha256."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import IntegrityError, PackageNotFoundError
from ..target import Target
from .conda import conda_meta_records
from .contain import allowed, canonical, conda_record_files, owners, record_files, shown
from .manifest import inside, installed_manifests, read_manifest, sha256_file
from .pip import site_packages_of

__all__ = ["FileProblem", "PackageCheck", "check_package", "verify_prefix"]


@dataclass(frozen=True)
class FileProblem:
    path: str
    problem: str  # 'missing' | 'sha256 mismatch'


@dataclass
class PackageCheck:
    """The result of checking one package's files under one prefix."""

    manifest: Path
    package: str
    version: str
    target: str
    files: int
    problems: list[FileProblem] = field(default_factory=list)
    contents: str = "kernels+databases"  # or kernels-only, databases-only (the manifest says)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "version": self.version,
            "target": self.target,
            "manifest": str(self.manifest),
            "files": self.files,
            "contents": self.contents,
            "ok": self.ok,
            "problems": [{"path": p.path, "problem": p.problem} for p in self.problems],
        }


def _target_of(data: dict[str, Any]) -> Target | None:
    t = data["target"]
    try:
        return Target(str(t.get("arch")), int(t.get("cu")))
    except (TypeError, ValueError):
        return None


def _metadata_files(prefix: Path, target: Target) -> list[str]:
    """What the package's pip RECORD or conda-meta record says it installed."""
    files: list[str] = []
    for sp in site_packages_of(prefix):
        for dist_info in sp.glob(f"{target.wheel_name}-*.dist-info"):
            files += record_files(dist_info, prefix)
    for record in conda_meta_records(prefix, [target.package]):
        files += conda_record_files(record)
    return files


def check_package(manifest_path: Path, prefix: Path,
                  owned: dict[str, set[str]] | None = None) -> PackageCheck:
    """Compare every file the manifest lists (relative to `prefix`) with its sha256; and check
    that the package holds only what a kernel package may (its manifest, its pip RECORD or
    conda-meta record), and, given `owned` (`contain.owners`), no file another package owns."""
    data = read_manifest(manifest_path)
    target = data["target"]
    check = PackageCheck(
        manifest=manifest_path,
        package=str(data.get("package", "?")),
        version=str(data.get("version", "?")),
        target=f"{target.get('arch')}-{target.get('cu')}",
        files=len(data["files"]),
        contents=manifest_contents(data),
    )
    _check_contained(check, data, Path(prefix), owned)
    for rel, info in sorted(data["files"].items()):
        path = Path(prefix) / rel
        try:
            if not inside(prefix, rel):
                check.problems.append(FileProblem(rel, "outside the prefix (a symbolic link)"))
            elif not path.is_file():
                check.problems.append(FileProblem(rel, "missing"))
            elif sha256_file(path) != info["sha256"]:
                check.problems.append(FileProblem(rel, "sha256 mismatch"))
        except OSError as exc:
            check.problems.append(FileProblem(rel, f"unreadable ({exc.strerror or exc})"))
    return check


def _check_contained(check: PackageCheck, data: dict[str, Any], prefix: Path,
                     owned: dict[str, set[str]] | None) -> None:
    target = _target_of(data)
    if target is None:
        check.problems.append(FileProblem("target", "not a target (arch, CU) in the manifest"))
        return
    listed = set(data["files"])
    for rel in sorted(listed | set(_metadata_files(prefix, target))):
        if not allowed(rel, target):
            check.problems.append(FileProblem(rel, "not a file a kernel package may hold"))
    if owned is None:
        return
    ours = {canonical(target.package), canonical(target.wheel_name),
            canonical(check.package)}
    for rel in sorted(listed):
        others = sorted(o for o in owned.get(rel, ()) if canonical(o) not in ours)
        if others:
            check.problems.append(FileProblem(rel, f"also installed by {', '.join(others)}"))


def manifest_contents(manifest: dict[str, Any]) -> str:
    """What the package holds, from its manifest (older manifests: from its files)."""
    said = manifest.get("contents")
    if said in ("kernels+databases", "kernels-only", "databases-only"):
        return str(said)
    names = [str(rel) for rel in manifest.get("files", {})]
    kdb = any(n.endswith(".kdb") for n in names)
    dbs = any(not n.endswith(".kdb") for n in names)
    return "kernels+databases" if kdb and dbs else "kernels-only" if kdb else "databases-only"


def verify_prefix(prefix: Path, *, raise_on_error: bool = True) -> list[PackageCheck]:
    """Check every kernel package installed under `prefix`.

    Raises PackageNotFoundError when none is installed and IntegrityError on the first
    package with a missing or altered file (when `raise_on_error`).
    """
    manifests = installed_manifests(prefix)
    if not manifests:
        raise PackageNotFoundError(f"no miopenkernels package is installed under {prefix}")
    owned = owners(prefix)
    checks = [check_package(m, prefix, owned) for m in manifests]
    if raise_on_error:
        bad = [c for c in checks if not c.ok]
        if bad:
            c = bad[0]
            p = c.problems[0]
            raise IntegrityError(
                f"{c.package} {c.version}: {shown(p.path)} {p.problem} "
                f"({sum(len(b.problems) for b in bad)} problem(s) in {len(bad)} package(s)); "
                f"reinstall with 'miopenkernels install --force'"
            )
    return checks
