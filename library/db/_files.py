"""Checks every database reader runs before trusting a file: present, a regular file (never a
device or a FIFO, which would hang a read), big enough, of the kind expected, not a Git LFS
pointer, a SQLite file that is whole, whose MIOpen tables are plain tables (a view of the same
columns could run an endless query); and before a user database is written: no write through a
link that leaves its folder. Each failure is one DbError line that names the file and says what
to do."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..errors import DamagedDbError, DbError

__all__ = [
    "LFS_POINTER_PREFIX",
    "SQLITE_MAGIC",
    "MIN_SQLITE_BYTES",
    "check_exists",
    "check_sqlite_file",
    "check_tables",
    "check_write_place",
    "immutable_read",
    "open_regular",
    "set_aside",
    "is_lfs_pointer",
    "sqlite_errors",
]

LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1"
SQLITE_MAGIC = b"SQLite format 3\x00"
# MIOpen treats database files under 512 bytes as invalid: a SQLite file is at least one page,
# and a smaller file is most often a Git LFS pointer checked out without `git lfs pull`.
MIN_SQLITE_BYTES = 512


def is_lfs_pointer(head: bytes) -> bool:
    return head.startswith(LFS_POINTER_PREFIX)


def _lfs_error(path: Path) -> DbError:
    return DamagedDbError(
        f"{path} is a Git LFS pointer, not the database: run `git lfs pull` in its repository "
        "(or reinstall the package) to fetch the real file"
    )


def _not_regular(path: Path, what: str) -> DbError:
    return DamagedDbError(f"{path} is not a regular file (a folder, device or pipe); give the "
                          f"path of the {what} file")


def open_regular(path: Path, what: str) -> BinaryIO:
    """`path` opened for reading, refused (DbError) unless it is a regular file: opened without
    blocking, so a FIFO named as a database cannot hang the open, and checked on the open file,
    so a file swapped after a check is caught too."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise DbError(f"{path}: no such {what} file; check the path or install the "
                      "package") from None
    except IsADirectoryError:
        raise _not_regular(path, what) from None
    except OSError as exc:
        raise DbError(f"{path}: cannot open the {what} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_regular(path, what)
    return os.fdopen(fd, "rb")


def check_exists(path: Path, what: str) -> None:
    """Raise DbError unless `path` is an existing regular file that is not an LFS pointer."""
    with open_regular(path, what) as fh:
        head = fh.read(len(LFS_POINTER_PREFIX))
    if is_lfs_pointer(head):
        raise _lfs_error(path)


def immutable_read(path: Path) -> bool:
    """Whether a read-only open of `path` treats it as immutable (SQLite's `immutable=1`: no
    `-shm` or `-wal` is looked for or made beside it). Every file but the user caches (`.ukdb`,
    `.udb`, shared with live writers): system files never change under a reader, and their
    folder may be read-only or another package's."""
    return path.suffix not in (".ukdb", ".udb")


def check_write_place(path: Path, what: str) -> None:
    """DamagedDbError unless `path` is absent or a regular file that a write stays inside its
    folder with: a link that leaves the folder (to another program's file, to a device) is
    never written through. A caller heals by setting the link aside (`set_aside`)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise DbError(f"{path}: cannot use the {what} ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        target = Path(os.path.realpath(path))
        inside = target.parent == Path(os.path.realpath(path.parent))
        try:
            regular = stat.S_ISREG(os.stat(target).st_mode)
        except OSError:
            regular = False
        if not inside or not regular:
            raise DamagedDbError(f"{path} is a symbolic link to {target}, outside its folder "
                                 f"or not a regular file; a {what} is never written through "
                                 "such a link")
    elif not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, what)


def set_aside(path: Path) -> Path | None:
    """Rename a damaged user database (or the link or folder in its place) out of the way, kept
    for a look and never read again, with its SQLite side files removed; the new name, or None
    when another process set it aside first. OSError when it cannot be renamed."""
    from .. import _fsutil

    dest = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}")
    try:
        _fsutil.replace(path, dest)
    except FileNotFoundError:
        return None
    for side in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            os.unlink(f"{path}{side}")
    return dest


def check_sqlite_file(path: Path, what: str) -> None:
    """Raise DbError unless `path` looks like a whole SQLite file.

    Catches what SQLite itself reports late or vaguely: small files, foreign bytes, and a
    truncated file (shorter than the page count its header promises).
    """
    with open_regular(path, what) as fh:
        size = os.fstat(fh.fileno()).st_size
        header = fh.read(100)
    if is_lfs_pointer(header):
        raise _lfs_error(path)
    live_wal = Path(f"{path}-wal").exists()
    if size == 0 and live_wal:
        return  # a new WAL database whose pages still live in its -wal file
    if size < MIN_SQLITE_BYTES:
        raise DamagedDbError(
            f"{path} is {size} bytes, too small to be a {what} (MIOpen rejects files under "
            f"{MIN_SQLITE_BYTES} bytes); rebuild it or reinstall the package"
        )
    if not header.startswith(SQLITE_MAGIC):
        raise DamagedDbError(
            f"{path} is not a SQLite database (no 'SQLite format 3' header), so it cannot be a "
            f"{what}; check that the right file was given"
        )
    if live_wal:
        return  # mid-checkpoint, page 1 may already promise pages not yet copied from the WAL
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    change_counter, pages = struct.unpack(">II", header[24:32])
    valid_for = struct.unpack(">I", header[92:96])[0]
    # The header's page count is only authoritative when its change counter matches
    # version-valid-for (SQLite file format, section 1.3.7).
    if pages and change_counter == valid_for and size < pages * page_size:
        raise DamagedDbError(
            f"{path} is truncated: its header promises {pages * page_size} bytes but the file "
            f"has {size}; copy or download it again"
        )


def check_tables(conn: sqlite3.Connection, path: Path, names: tuple[str, ...],
                 what: str) -> None:
    """DamagedDbError unless each of MIOpen's tables `names` that the file has is a plain table:
    not a view (whose query may never end while its columns read as MIOpen's), not a virtual
    table, without generated columns and without triggers (which run on a write)."""
    marks = ", ".join("?" * len(names))
    rows = conn.execute(f"SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name IN "
                        f"({marks}) OR (type = 'trigger' AND tbl_name IN ({marks}))",
                        (*names, *names)).fetchall()
    for kind, name, table, sql in rows:
        if kind == "trigger":
            raise DamagedDbError(f"{path}: trigger {name!r} on {table}; MIOpen's {what} has no "
                                 "triggers, so this file is not one MIOpen wrote")
        plain = kind == "table" and isinstance(sql, str) and \
            sql.lstrip().upper().startswith("CREATE TABLE")
        if plain:
            plain = all(row[6] == 0 for row in conn.execute(f"PRAGMA table_xinfo(`{name}`)"))
        if not plain:
            raise DamagedDbError(f"{path}: {name} is a {kind} ({str(sql)[:60]!r}...), not a "
                                 f"plain table as in MIOpen's {what}; the file is not one "
                                 "MIOpen wrote, rebuild or reinstall it")


@contextmanager
def sqlite_errors(path: Path, what: str) -> Iterator[None]:
    """Turn sqlite3 errors raised inside the block into one DbError line naming the file."""
    try:
        yield
    except UnicodeDecodeError as exc:  # a table or column name that is not UTF-8
        raise DamagedDbError(f"{path} holds text that is not UTF-8 ({exc.object[:40]!r}); it "
                             f"is a damaged {what}, copy or download it again") from None
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if text.startswith("Could not decode to UTF-8"):
            raise DamagedDbError(f"{path} holds a text value that is not UTF-8 ({text[:120]}); "
                                 f"the {what} is damaged, rebuild or download it again") from None
        if text == "interrupted":  # the statement budget of `_lock.connect` ran out
            raise DamagedDbError(
                f"{path}: a query ran past its budget for a file of this size, which a {what} "
                "MIOpen wrote never needs; rebuild or reinstall it") from None
        if "malformed" in text or "not a database" in text or "disk image" in text:
            raise DamagedDbError(
                f"{path} is a corrupt SQLite file ({text}); copy or download it again"
            ) from None
        raise DbError(f"{path}: SQLite error reading the {what}: {text}") from None
