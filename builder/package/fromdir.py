"""Package existing MIOpen databases: a ROCm `share/miopen/db` or a user cache.

Files are picked by the target's basename; user-side names are mapped onto the system names a
package installs (`<b>.ukdb` -> `<b>.kdb`, `<b>.HIP.<ver>.ufdb.txt` -> `<b>.HIP.fdb.txt`,
`<b>_1.1.0.udb` -> `<b>.db`, `<b>.HIP.<ver>.udb.txt` -> `<b>.db.txt`), and AMD's per-arch kdb
(`<arch>.kdb`, used by MIOpen when there is no `<basename>.kdb`) onto `<b>.kdb`. A folder with
databases but no kdb gives a databases-only package. Every file is read through
`miopenkernels.db`, as the runtime reads it: its kind must match its name, every value is
checked, and a KernelDb whose code objects are for another arch is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

from miopenkernels.db import FindDbFile, KernelDb, PerfDbFile, sniff, target_from_name
from miopenkernels.errors import DbError, PackageBuildError, TargetError
from miopenkernels.target import Target

from ..codeobject import arch_of_args
from .manifest import TargetFiles, read_provenance
from .snapshot import check_regular_files, is_sqlite_name

__all__ = ["collect_dir_files", "check_format", "db_kind", "check_manifest_budget"]


def db_kind(name: str, basename: str, arch: str | None = None) -> str | None:
    """The system file name (`<basename><suffix>`) a file of `basename` is packaged as."""
    if arch is not None and name == f"{arch}.kdb":
        return basename + ".kdb"
    if not name.startswith(basename):
        return None
    rest = name[len(basename):]
    patterns = [
        (r"\.kdb", ".kdb"),
        (r"\.ukdb", ".kdb"),
        (r"\.HIP\.fdb\.txt", ".HIP.fdb.txt"),
        (r"\.HIP\.[\w.]+\.ufdb\.txt", ".HIP.fdb.txt"),
        (r"\.db", ".db"),
        (r"_\d+\.\d+\.\d+\.udb", ".db"),
        (r"\.db\.txt", ".db.txt"),
        (r"\.HIP\.[\w.]+\.udb\.txt", ".db.txt"),
    ]
    for pattern, suffix in patterns:
        if re.fullmatch(pattern, rest):
            return basename + suffix
    return None


_EXPECTED_KINDS = {
    ".kdb": ("kdb", "ukdb"),
    ".HIP.fdb.txt": ("finddb",),
    ".db.txt": ("perfdb-text",),
    ".db": ("perfdb-sqlite",),
}


def check_format(path: Path, system_name: str, target: Target) -> list[str]:
    """Read `path` as the database its name says, through the runtime's readers. Returns the
    FindDb keys it holds (for the manifest); DbError when it is not that kind of database or
    holds a value MIOpen never writes, TargetError when it is for another target."""
    suffix = next(s for s in _EXPECTED_KINDS if system_name == target.basename + s)
    found = sniff(path)
    if found.kind not in _EXPECTED_KINDS[suffix]:
        raise DbError(f"{path} is a {found.kind} file ({found.detail}), not the "
                      f"{' or '.join(_EXPECTED_KINDS[suffix])} its name says")
    if found.target is not None and found.target.basename != target.basename and not (
            suffix == ".kdb" and path.name == f"{target.arch}.kdb"):
        raise TargetError(f"{path} is for {found.target.name}, not {target.name}: refused")
    if suffix == ".kdb":
        with KernelDb(path) as kdb:
            archs = {arch_of_args(e.kernel_args) or "?" for e in kdb.entries()}
        foreign = archs - {target.arch}
        if foreign:
            raise TargetError(f"{path} holds kernels for {', '.join(sorted(foreign))}, "
                              f"not {target.arch}: refused")
        return []
    if suffix == ".HIP.fdb.txt":
        fdb = FindDbFile.read(path)
        return list(fdb.records)
    PerfDbFile.read(path)  # every value type-checked; malformed text lines are skipped
    return []


# The manifest lists a FindDb's keys, one a line (`    "<key>",`): at least this many bytes each.
_MANIFEST_BYTES_PER_KEY = 8


def check_manifest_budget(fdb: Path) -> None:
    """Refuse, before the FindDb is parsed, one whose keys alone would make the package's
    manifest bigger than the installers accept (PackageBuildError): a package that every
    installer would refuse is not built. One pass over the file's bytes, a line at a time."""
    from miopenkernels.install.manifest import MAX_MANIFEST_BYTES

    keys: set[bytes] = set()
    total = 0
    with open(fdb, "rb") as fh:
        while line := fh.readline(1 << 16):
            key = line.split(b"=", 1)[0].strip() if b"=" in line else b""
            while not line.endswith(b"\n") and (line := fh.readline(1 << 16)):
                pass  # the rest of a long line: its key was in the first part
            if key and not key.startswith(b"#") and key not in keys:
                keys.add(key)
                total += len(key) + _MANIFEST_BYTES_PER_KEY
                if total > MAX_MANIFEST_BYTES:
                    raise PackageBuildError(
                        f"{fdb} holds more problems than a package manifest can list (over "
                        f"{MAX_MANIFEST_BYTES >> 20} MiB of keys by line {len(keys)}; the "
                        "installers refuse bigger manifests): package a FindDb of the "
                        "problems that matter")


def collect_dir_files(directory: Path, target: Target) -> TargetFiles:
    """The database files of `target` found in `directory`, read and checked. Without a kdb
    the package holds the databases only (the manifest says so)."""
    if not directory.is_dir():
        raise DbError(f"{directory} is not a folder")
    base = target.basename
    chosen: dict[str, Path] = {}
    others: set[str] = set()
    for path in sorted(directory.iterdir()):
        if not path.is_file():
            continue
        name = db_kind(path.name, base, target.arch)
        if name is None:
            other = target_from_name(path.name)
            if other is not None:
                others.add(other.basename)
            continue
        if name in chosen:
            # A system file wins over a user file, and <basename>.kdb over <arch>.kdb.
            if path.name == name:
                chosen[name] = path
            continue
        chosen[name] = path
    if not chosen:
        found = ", ".join(sorted(others)) or "none"
        raise TargetError(f"{directory} has no database for {target.name} (basename {base}, "
                          f"or {target.arch}.kdb); basenames found: {found}")
    fdb = chosen.get(f"{base}.HIP.fdb.txt")
    if fdb is not None:
        check_manifest_budget(fdb)
    for name, path in chosen.items():  # before any reader opens them
        if is_sqlite_name(name):
            check_regular_files(path)
    problems: list[str] = []
    for name, path in chosen.items():
        problems += check_format(path, name, target)
    tf = TargetFiles(target, chosen, origin="from-dir", problems=problems)
    tf.provenance = read_provenance(directory) or {"source_dir": str(directory.resolve())}
    return tf
