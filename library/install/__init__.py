"""The installer: detect the GPUs, choose one package per (arch, CU), stage it with pip or
py-rattler, verify every file's sha256 against the package manifest, then move it into place.

Nothing is half-installed: all packages are staged and verified in a folder inside the prefix
before the first file moves, and the move is undone if it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._fsutil import replace
from ..errors import InstallError, IntegrityError, MIOpenKernelsError, TargetError
from ..target import Target
from ..versions import same_version
from .choose import Choice, choose_packages
from .commit import commit_files
from .contain import check_contained
from .manifest import DB_DIR, MANIFEST_DIR, manifest_relpath, read_manifest
from .sources import Available, Source, list_available
from .verify import PackageCheck, check_package, manifest_contents, verify_prefix

__all__ = [
    "Source",
    "Available",
    "Choice",
    "InstallReport",
    "install",
    "choose_method",
    "is_conda_prefix",
    "list_available",
    "verify_prefix",
    "PackageCheck",
]


@dataclass
class InstallReport:
    prefix: Path
    method: str
    source: Source
    dry_run: bool
    items: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # which package of a target, and why

    def to_dict(self) -> dict[str, Any]:
        return {"prefix": str(self.prefix), "method": self.method, "source": str(self.source),
                "dry_run": self.dry_run, "packages": self.items, "warnings": self.warnings,
                "notes": self.notes}


def is_conda_prefix(prefix: Path) -> bool:
    return (prefix / "conda-meta").is_dir()


def choose_method(prefix: Path, sources: list[Source], explicit: str | None) -> Source:
    """conda into a conda prefix (conda-meta, or the active CONDA_PREFIX), else pip; an explicit
    --conda/--pip wins. Returns the source that method uses."""
    by_method = {s.method: s for s in sources}
    if explicit:
        if explicit not in by_method:
            need = "--channel" if explicit == "conda" else "--index-url or --find-links"
            raise MIOpenKernelsError(f"--{explicit} needs {need}")
        return by_method[explicit]
    conda_env = os.environ.get("CONDA_PREFIX")
    conda = is_conda_prefix(prefix) or bool(conda_env and Path(conda_env) == prefix)
    if conda and "conda" in by_method:
        return by_method["conda"]
    if "pip" in by_method:
        return by_method["pip"]
    return sources[0]


def _wanted(rocminfo_file: Path | None, targets: list[Target] | None, force: bool
            ) -> dict[Target, list[str]]:
    """(arch, CU) -> who wants it: the detected GPUs, or the requested targets.

    Requested targets need no GPU (preparing an image on a build machine); only a detected GPU
    of another arch stops them, unless `force`.
    """
    from ..detect import detect_devices
    from ..errors import NoDeviceError

    wanted: dict[Target, list[str]] = {}
    if targets and force:
        for t in targets:
            wanted.setdefault(Target(t.arch, t.cu), []).append("requested")
        return wanted
    try:
        devices = detect_devices(rocminfo_file)
    except NoDeviceError as exc:
        if not targets:
            raise NoDeviceError(f"{exc}; or name the packages to install: --targets "
                                "<arch>-<cu> (e.g. --targets gfx90a-110)") from None
        devices = []
    for d in devices:
        t = d.target
        wanted.setdefault(Target(t.arch, t.cu), []).append(f"{d.index}: {d.name}")
    if targets:
        archs = {t.arch for t in wanted}
        for t in targets:
            if archs and t.arch not in archs:
                raise TargetError(f"{t.package} is for {t.arch}, but this machine has "
                                  f"{', '.join(sorted(archs))}; add --force to install it "
                                  "anyway")
        wanted = {Target(t.arch, t.cu): wanted.get(Target(t.arch, t.cu), ["requested"])
                  for t in targets}
    return wanted


def _installed_same(prefix: Path, c: Choice, method: str) -> bool:
    """The chosen package, same version, is installed with every file intact."""
    mpath = prefix / manifest_relpath(c.available.target.basename)
    if not mpath.is_file():
        return False
    try:
        data = read_manifest(mpath)
    except IntegrityError:
        return False
    if not same_version(str(data.get("version")), c.available.version):
        return False
    if (manifest_contents(data) == "databases-only") != c.available.databases_only:
        return False  # the same version with kernels replaces a databases-only one
    if method == "conda":
        from .conda import conda_meta_records

        if not conda_meta_records(prefix, [c.available.package]):
            return False
    return check_package(mpath, prefix).ok


def _check_staged(stage: Path, chosen: list[Choice], force: bool) -> None:
    for c in chosen:
        mpath = stage / manifest_relpath(c.available.target.basename)
        if not mpath.is_file():
            raise IntegrityError(f"{c.available.package} installed no manifest "
                                 f"({manifest_relpath(c.available.target.basename)})")
        data = read_manifest(mpath)
        t = data["target"]
        if (t.get("arch"), t.get("cu")) != (c.available.target.arch, c.available.target.cu):
            raise IntegrityError(f"{c.available.package}: its manifest says it is for "
                                 f"{t.get('arch')}-{t.get('cu')}")
        if t.get("arch") != c.wanted.arch and not force:
            raise TargetError(f"{c.available.package} is for {t.get('arch')}, not "
                              f"{c.wanted.arch}; add --force to install it anyway")
        check = check_package(mpath, stage)
        if not check.ok:
            p = check.problems[0]
            raise IntegrityError(f"{c.available.package} {c.available.version}: {p.path} "
                                 f"{p.problem}; nothing was installed")


def _staged_files(stage: Path, method: str, chosen: list[Choice]) -> list[str]:
    if method == "conda":
        from .conda import conda_meta_records

        files = []
        for c in chosen:
            data = read_manifest(stage / manifest_relpath(c.available.target.basename))
            files += list(data["files"]) + [manifest_relpath(c.available.target.basename)]
        files += [str(p.relative_to(stage))
                  for p in conda_meta_records(stage, [c.available.package for c in chosen])]
        return files
    return sorted(str(p.relative_to(stage)) for p in stage.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def _package_files(stage: Path, method: str, chosen: list[Choice]) -> list[str]:
    """Every file the packages put into the stage: for conda what their conda-meta records
    list (py-rattler's own bookkeeping is not theirs), for pip every staged file."""
    if method != "conda":
        return sorted(str(p.relative_to(stage)) for p in stage.rglob("*")
                      if (p.is_file() or p.is_symlink()) and "__pycache__" not in p.parts)
    from .conda import conda_meta_records
    from .contain import conda_record_files

    files: list[str] = []
    for record in conda_meta_records(stage, [c.available.package for c in chosen]):
        files += [*conda_record_files(record), str(record.relative_to(stage))]
    return files


def _relocate_site_packages(stage: Path, prefix: Path) -> None:
    """pip staged into lib/python<this>/site-packages; a venv prefix of another Python has its
    own: move the staged folder there."""
    from .pip import site_packages_of

    staged = site_packages_of(stage)
    target = site_packages_of(prefix)
    if len(staged) == 1 and len(target) == 1:
        rel_s, rel_t = staged[0].relative_to(stage), target[0].relative_to(prefix)
        if rel_s != rel_t:
            (stage / rel_t).parent.mkdir(parents=True, exist_ok=True)
            replace(stage / rel_s, stage / rel_t)


def _obsolete(prefix: Path, method: str, chosen: list[Choice]) -> list[Path]:
    """Records of other versions of the chosen packages (replaced by this install)."""
    old: list[Path] = []
    for c in chosen:
        a = c.available
        if method == "conda":
            from .conda import conda_meta_records

            old += [p for p in conda_meta_records(prefix, [a.package])
                    if p.name != f"{a.package}-{a.version}-{a.build}.json"]
        else:
            from .pip import site_packages_of

            for sp in site_packages_of(prefix):
                old += [p for p in sp.glob(f"{a.target.wheel_name}-*.dist-info")
                        if not p.name.startswith(f"{a.target.wheel_name}-{a.version}.")]
    return old


_STAGE_PREFIX = ".miopenkernels-stage-"


def _remove_stale_stages(prefix: Path) -> None:
    """Remove stage folders of installers that were killed (their process is gone)."""
    for old in prefix.glob(_STAGE_PREFIX + "*"):
        pid = old.name[len(_STAGE_PREFIX):].split("-", 1)[0]
        if pid.isascii() and pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 0)
                continue  # another installer is at work
            except ProcessLookupError:
                pass
            except OSError:
                continue
        shutil.rmtree(old, ignore_errors=True)


def _checked_prefix(prefix: Path) -> Path:
    """The prefix, resolved; InstallError before any work when it is a file, under a file or
    too long for the file system."""
    try:
        resolved = prefix.resolve()
    except OSError as exc:  # ENAMETOOLONG, a loop of links
        raise InstallError(f"--prefix {str(prefix)[:80]}: {exc.strerror or exc}; give a "
                           "shorter path") from None
    if len(os.fsencode(resolved)) > 3072:  # leaves room for the files a package installs
        raise InstallError(f"--prefix {str(prefix)[:80]}... is too long for the files it "
                           "would hold; give a shorter path")
    if resolved.exists() and not resolved.is_dir():
        raise InstallError(f"--prefix {prefix} is a file, not a folder; give an environment's "
                           "folder")
    for parent in resolved.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InstallError(f"--prefix {prefix} is under {parent}, a file, not a "
                                   "folder; give an environment's folder")
            break
    return resolved


def _make_stage(prefix: Path) -> Path:
    """A fresh stage folder inside `prefix` (same file system: renames, not copies)."""
    if prefix.exists() and not prefix.is_dir():
        raise InstallError(f"--prefix {prefix} is a file, not a folder; give an environment's "
                           "folder")
    try:
        prefix.mkdir(parents=True, exist_ok=True)
        _remove_stale_stages(prefix)
        return Path(tempfile.mkdtemp(prefix=f"{_STAGE_PREFIX}{os.getpid()}-", dir=prefix))
    except OSError as exc:
        raise InstallError(f"cannot write into --prefix {prefix} ({exc.strerror or exc}); give "
                           "a writable folder or run with the rights to write it") from None


def install(
    sources: list[Source],
    prefix: Path | None = None,
    method: str | None = None,
    *,
    dry_run: bool = False,
    force: bool = False,
    rocminfo_file: Path | None = None,
    targets: list[Target] | None = None,
    version: str | None = None,
) -> InstallReport:
    """Install the packages for this machine's GPUs (or `targets`) from one of `sources`."""
    if not sources:
        raise MIOpenKernelsError("give --channel, --index-url or --find-links")
    conda_env = os.environ.get("CONDA_PREFIX")
    if prefix is None:
        prefix = Path(conda_env) if conda_env and method != "pip" else Path(sys.prefix)
    prefix = _checked_prefix(prefix)
    source = choose_method(prefix, sources, method)
    wanted = _wanted(rocminfo_file, targets, force)
    available = [a for a in list_available(source)
                 if a.kind == ("conda" if source.method == "conda" else "wheel")]
    chosen = choose_packages(wanted, available, version, where=str(source))
    report = InstallReport(prefix, source.method, source, dry_run,
                           warnings=[c.warning for c in chosen if c.warning],
                           notes=[c.why for c in chosen if c.why])
    todo = [c for c in chosen if force or not _installed_same(prefix, c, source.method)]
    for c in chosen:
        status = ("would install" if dry_run else "installed") if c in todo else \
            "already installed"
        report.items.append({**c.to_dict(), "status": status,
                             "location": str(prefix / DB_DIR), "files": []})
    if dry_run or not todo:
        return report
    work = _make_stage(prefix)
    try:
        stage, backup = work / "prefix", work / "backup"
        stage.mkdir()
        if source.method == "conda":
            from .conda import stage_conda

            stage_conda(source.location, [c.available for c in todo], stage, work / "cache")
        else:
            from .pip import check_wheel, fetch_wheel, stage_wheels

            (work / "wheels").mkdir()
            wheels = []
            for c in todo:
                whl = fetch_wheel(c.available, work / "wheels")
                check_wheel(whl, c.available)
                wheels.append(whl)
            stage_wheels(wheels, stage)
            _relocate_site_packages(stage, prefix)
        _check_staged(stage, todo, force)
        files = _staged_files(stage, source.method, todo)
        # Everything the packages put into the stage, not only what moves: a package holds
        # what its kind holds, or it is refused, before the first file moves.
        staged = _package_files(stage, source.method, todo)
        replaced = check_contained(staged, [c.available.target for c in todo], prefix,
                                   force=force, what=", ".join(c.available.package for c in todo))
        report.warnings += [f"replaced {r}, as --force asked" for r in replaced]
        commit_files(stage, prefix, files, _obsolete(prefix, source.method, todo), backup)
    except OSError as exc:  # a full disk or a folder that turned read-only while staging
        raise InstallError(f"installing into {prefix} failed ({exc}); nothing was "
                           "changed") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for item, c in zip(report.items, chosen, strict=False):
        if c in todo:
            data = json.loads((prefix / manifest_relpath(c.available.target.basename))
                              .read_text())
            # The files the package's manifest lists, as `verify` counts them; the manifest
            # itself is named apart.
            item["files"] = sorted(data["files"])
            item["manifest"] = f"{MANIFEST_DIR}/{c.available.target.basename}.manifest.json"
    # The installed files are checked once more where they now lie.
    for c in todo:
        check = check_package(prefix / manifest_relpath(c.available.target.basename), prefix)
        if not check.ok:
            p = check.problems[0]
            raise IntegrityError(f"{check.package}: {p.path} {p.problem} after installing")
    return report
