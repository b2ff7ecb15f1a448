"""Files as a package holds them: SQLite databases read through SQLite, text databases copied
from regular files only.

A user cache is a WAL database: its newest records may sit in `<file>-wal` (all of them, when
the writer was killed before a checkpoint). Copying the main file's bytes loses them; the
SQLite backup API reads the database as a reader sees it, WAL included, and the copy is
written as one self-contained file (journal mode DELETE), as a system kdb is.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path

from miopenkernels.errors import DbError, PackageBuildError

__all__ = ["SQLITE_SUFFIXES", "is_sqlite_name", "snapshot_sqlite", "copy_regular",
           "check_regular_files", "check_same_kernels"]

# The system names of the SQLite databases a package holds (KernelDb, SQLite PerfDb).
SQLITE_SUFFIXES = (".kdb", ".db")


def is_sqlite_name(name: str) -> bool:
    return name.endswith(SQLITE_SUFFIXES)


def _regular(path: Path) -> None:
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise DbError(f"{path} cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise DbError(f"{path} is not a regular file (a FIFO, device or socket); give the "
                      "database file itself")


def check_regular_files(src: Path) -> None:
    """`src` and the files SQLite opens beside it (`-wal`, `-shm`, `-journal`), where they
    exist, are regular files: SQLite would open a FIFO there and wait on it forever."""
    _regular(src)
    for side in ("-wal", "-shm", "-journal"):
        if os.path.lexists(f"{src}{side}"):
            _regular(Path(f"{src}{side}"))


def copy_regular(src: Path, dest: Path) -> None:
    """Copy a text database; a FIFO or a device is refused, not read forever."""
    _regular(src)
    shutil.copyfile(src, dest)


def _backup(src_uri: str, dest: Path) -> None:
    from miopenkernels.db._lock import connect

    source = sqlite3.connect(src_uri, uri=True)
    try:
        target = connect(dest, readonly=False)
        try:
            source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
        finally:
            target.close()
    finally:
        source.close()


def snapshot_sqlite(src: Path, dest: Path) -> None:
    """Write at `dest` the database `src` holds as SQLite reads it (WAL content included),
    never writing beside `src`: where reading in place would make SQLite create a `-shm`
    there (a `-wal` without one), the main file and its `-wal` are read from a private
    copy."""
    from miopenkernels.db._lock import sqlite_uri

    check_regular_files(src)
    wal, shm = Path(f"{src}-wal"), Path(f"{src}-shm")
    dest.unlink(missing_ok=True)
    try:
        if not wal.exists() or shm.exists():
            _backup(sqlite_uri(src, readonly=True), dest)
            return
        with tempfile.TemporaryDirectory(prefix="mk-snapshot-") as tmp:
            copy = Path(tmp) / "db"
            shutil.copyfile(src, copy)
            shutil.copyfile(wal, f"{copy}-wal")
            _backup(sqlite_uri(copy, readonly=False), dest)
    except sqlite3.Error as exc:
        with contextlib.suppress(OSError):
            dest.unlink()
        raise DbError(f"{src} cannot be read through SQLite ({exc}); it is not a database "
                      "that can be packaged") from None


def check_same_kernels(src: Path, staged: Path) -> int:
    """The staged kdb holds exactly the kernels `src` holds, as the runtime reads them
    (name, args, MD5); PackageBuildError otherwise. Returns the number of kernels."""
    from miopenkernels.db import KernelDb

    def rows(path: Path) -> dict[tuple[str, str], str]:
        with KernelDb(path) as db:
            return {(e.kernel_name, e.kernel_args): e.kernel_hash for e in db.entries()}

    want, have = rows(src), rows(staged)
    if want != have:
        raise PackageBuildError(f"the packaged copy of {src} holds {len(have)} kernel(s), "
                                f"the file {len(want)}: refusing to ship a kdb that lost "
                                "records")
    return len(have)
