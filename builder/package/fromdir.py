"""Package existing MIOpen databases: a ROCm `share/miopen/db` or a user cache.

Files are picked by the target's basename; user-side names are mapped onto the system names a
package installs (`<b>.ukdb` -> `<b>.kdb`, `<b>.HIP.<ver>.ufdb.txt` -> `<b>.HIP.fdb.txt`,
`<b>_1.1.0.udb` -> `<b>.db`, `<b>.HIP.<ver>.udb.txt` -> `<b>.db.txt`). Every file's format is
checked, and a KernelDb whose code objects are for another arch is refused.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from miopenkernels.db.sniff import target_from_name
from miopenkernels.errors import DbError, TargetError
from miopenkernels.target import Target

from .manifest import TargetFiles, read_provenance

__all__ = ["collect_dir_files", "check_format", "db_kind"]

_KERN_COLUMNS = {"id", "kernel_name", "kernel_args", "kernel_blob", "kernel_hash",
                 "uncompressed_size"}


def db_kind(name: str, basename: str) -> str | None:
    """The system file name (`<basename><suffix>`) a file of `basename` is packaged as."""
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


def _sqlite_tables(path: Path) -> dict[str, set[str]]:
    if path.stat().st_size < 512:
        raise DbError(f"{path} is under 512 bytes: not a database (a Git LFS pointer?)")
    with open(path, "rb") as f:
        if f.read(16) != b"SQLite format 3\x00":
            raise DbError(f"{path} is not an SQLite file")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: {r[1] for r in con.execute(f"PRAGMA table_info('{n}')")} for n in names}
    except sqlite3.DatabaseError as exc:
        raise DbError(f"{path} is not a readable SQLite database: {exc}") from None
    finally:
        con.close()


def _kdb_archs(path: Path) -> set[str]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        args = [r[0] for r in con.execute("SELECT DISTINCT kernel_args FROM kern_db")]
    finally:
        con.close()
    archs = set()
    for a in args:
        m = re.search(r"-mcpu=([\w]+)", a) or re.search(r"--gpu-architecture=(?:sm_|compute_)?"
                                                         r"(\d+)", a)
        if m:
            archs.add(m.group(1) if m.group(1).startswith("gfx") else f"sm{m.group(1)}")
    return archs


def _check_text(path: Path, value_re: str) -> None:
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise DbError(f"{path}:{n}: not a '<key>=<values>' database line")
        values = line.split("=", 1)[1]
        for entry in values.split(";"):
            if not re.fullmatch(value_re, entry):
                raise DbError(f"{path}:{n}: entry {entry[:60]!r} is not '<id>:<values>'")


def check_format(path: Path, system_name: str, target: Target) -> None:
    """Raise DbError when `path` is not the kind of database its name says, TargetError when a
    KernelDb holds code objects for another arch."""
    if system_name.endswith(".kdb"):
        tables = _sqlite_tables(path)
        if not tables.get("kern_db", set()) >= _KERN_COLUMNS:
            raise DbError(f"{path} is not a KernelDb: no kern_db table with MIOpen's columns")
        archs = _kdb_archs(path)
        foreign = archs - {target.arch}
        if foreign:
            raise TargetError(f"{path} holds kernels for {', '.join(sorted(foreign))}, "
                              f"not {target.arch}: refused")
    elif system_name.endswith(".db.txt"):
        _check_text(path, r"[\w.-]+:[^;]*")
    elif system_name.endswith(".db"):
        tables = _sqlite_tables(path)
        if "perf_db" not in tables or "config" not in tables:
            raise DbError(f"{path} is not a PerfDb: needs the config and perf_db tables")
    elif system_name.endswith(".fdb.txt"):
        _check_text(path, r"[\w.-]+:[^;]*")
    _sniff_agrees(path, system_name, target)


_EXPECTED_KINDS = {
    ".kdb": ("kdb", "ukdb"),
    ".HIP.fdb.txt": ("finddb",),
    ".db.txt": ("perfdb-text",),
    ".db": ("perfdb-sqlite",),
}


def _sniff_agrees(path: Path, system_name: str, target: Target) -> None:
    """library/db/sniff.py must see the kind of file the name says, for this target."""
    from miopenkernels.db.sniff import sniff

    found = sniff(path)
    suffix = next(s for s in _EXPECTED_KINDS if system_name == target.basename + s)
    if found.kind not in _EXPECTED_KINDS[suffix]:
        raise DbError(f"{path} is a {found.kind} file ({found.detail}), not the "
                      f"{' or '.join(_EXPECTED_KINDS[suffix])} its name says")
    if found.target is not None and found.target.basename != target.basename:
        raise TargetError(f"{path} is for {found.target.name}, not {target.name}: refused")


def collect_dir_files(directory: Path, target: Target) -> TargetFiles:
    """The database files of `target` found in `directory`, format-checked."""
    if not directory.is_dir():
        raise DbError(f"{directory} is not a folder")
    base = target.basename
    chosen: dict[str, Path] = {}
    others: set[str] = set()
    for path in sorted(directory.iterdir()):
        if not path.is_file():
            continue
        name = db_kind(path.name, base)
        if name is None:
            if (other := target_from_name(path.name)) is not None:
                others.add(other.basename)
            continue
        if name in chosen:
            # A system file wins over a user file of the same kind.
            if path.name == name:
                chosen[name] = path
            continue
        chosen[name] = path
    if not chosen:
        found = ", ".join(sorted(others)) or "none"
        raise TargetError(f"{directory} has no database for {target.name} (basename {base}); "
                          f"basenames found: {found}")
    if f"{base}.kdb" not in chosen:
        raise DbError(f"{directory} has no {base}.kdb (or .ukdb): a package needs the kernels")
    for name, path in chosen.items():
        check_format(path, name, target)
    tf = TargetFiles(target, chosen, origin="from-dir")
    tf.provenance = read_provenance(directory) or {"source_dir": str(directory.resolve())}
    return tf
