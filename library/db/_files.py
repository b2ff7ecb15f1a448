"""Checks every database reader runs before trusting a file: present, big enough, of the kind
expected, not a Git LFS pointer, a SQLite file that is whole. Each failure is one DbError line
that names the file and says what to do."""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import DamagedDbError, DbError

__all__ = [
    "LFS_POINTER_PREFIX",
    "SQLITE_MAGIC",
    "MIN_SQLITE_BYTES",
    "check_exists",
    "check_sqlite_file",
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


def check_exists(path: Path, what: str) -> None:
    """Raise DbError unless `path` is an existing regular file that is not an LFS pointer."""
    if not path.exists():
        raise DbError(f"{path}: no such {what} file; check the path or install the package")
    if not path.is_file():
        raise DbError(f"{path} is not a regular file; give the path of the {what} file")
    with path.open("rb") as fh:
        head = fh.read(len(LFS_POINTER_PREFIX))
    if is_lfs_pointer(head):
        raise _lfs_error(path)


def check_sqlite_file(path: Path, what: str) -> None:
    """Raise DbError unless `path` looks like a whole SQLite file.

    Catches what SQLite itself reports late or vaguely: small files, foreign bytes, and a
    truncated file (shorter than the page count its header promises).
    """
    check_exists(path, what)
    size = path.stat().st_size
    with path.open("rb") as fh:
        header = fh.read(100)
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
        if "malformed" in text or "not a database" in text or "disk image" in text:
            raise DamagedDbError(
                f"{path} is a corrupt SQLite file ({text}); copy or download it again"
            ) from None
        raise DbError(f"{path}: SQLite error reading the {what}: {text}") from None
