"""The one code path for database writes that many processes may do at once.

Text user dbs: take `<file>.lock` (an OS file lock, released by the kernel if the holder dies),
read the file, change it, write a temporary file in the same folder, fsync it and `os.replace`
it over the old one. Readers never take the lock: they see the old file or the new one, never a
half-written one. SQLite user dbs: one `BEGIN IMMEDIATE` transaction with a busy timeout and a
retry when SQLite still reports the database locked. System dbs are never written at run time.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.request import pathname2url

from filelock import FileLock, Timeout

from ..errors import DbError

__all__ = [
    "LOCK_TIMEOUT_S",
    "atomic_write",
    "locked_update",
    "connect",
    "write_transaction",
]

# Long enough for a slow disk under 16 writers, short enough that a stuck holder is reported.
LOCK_TIMEOUT_S = 120.0
_BUSY_TIMEOUT_MS = 30_000


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that a reader or a crash sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # The rename itself must reach the disk too, or a power cut can bring the old file back.
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def locked_update(path: Path, update: Callable[[bytes | None], bytes]) -> None:
    """Read-modify-write `path` under its lock: `update(old bytes or None) -> new bytes`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)
    try:
        with lock:
            old = path.read_bytes() if path.exists() else None
            atomic_write(path, update(old))
    except Timeout:
        raise DbError(
            f"{path}: could not take {path}.lock within {LOCK_TIMEOUT_S:.0f} s; another process "
            "holds it — wait for it or remove a stale lock file"
        ) from None


def connect(path: Path, *, readonly: bool, wal: bool = False) -> sqlite3.Connection:
    """Open a SQLite database; read-only opens use a `mode=ro` URI so nothing is ever created.

    `isolation_level=None` leaves transactions to `write_transaction`, which starts them with
    BEGIN IMMEDIATE so that a writer waits for the lock up front instead of failing mid-way.
    """
    if readonly:
        uri = f"file:{pathname2url(str(path))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None,
                               timeout=_BUSY_TIMEOUT_MS / 1000)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=_BUSY_TIMEOUT_MS / 1000)
        if wal:
            _retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"), path)
    conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
    return conn


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def _retry_busy(fn: Callable[[], object], path: Path, attempts: int = 50) -> None:
    for attempt in range(attempts):
        try:
            fn()
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or attempt == attempts - 1:
                raise DbError(f"{path}: {exc}; another process holds the database") from None
            time.sleep(0.01 + random.random() * 0.05)


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection, path: Path) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, retrying BEGIN while another writer holds the database."""
    _retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"), path)
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    _retry_busy(lambda: conn.execute("COMMIT"), path)
