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
_POLL_S = 0.002


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
        # A short poll: a write holds the lock for milliseconds, the default 50 ms poll would
        # make 16 queued writers wait far longer than they work.
        with lock.acquire(poll_interval=_POLL_S):
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
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), isolation_level=None)
        if wal and conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            _retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"), path)
    # SQLite's own busy handler backs off up to 100 ms per try; `_retry_busy` polls faster.
    conn.execute("PRAGMA busy_timeout=5")
    return conn


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def _retry_busy(fn: Callable[[], object], path: Path) -> None:
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            fn()
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise DbError(f"{path}: {exc}; another process holds the database") from None
            # Jitter so that waiting writers do not retry in lockstep.
            time.sleep(_POLL_S * (0.5 + random.random()))


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
