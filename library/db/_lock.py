"""The one code path for database writes that many processes may do at once.

Text user dbs: take `<file>.lock` (an OS file lock, released by the kernel if the holder dies),
read the file, change it, write a temporary file in the same folder, fsync it and rename
it over the old one. Readers never take the lock: they see the old file or the new one, never a
half-written one. SQLite user dbs: one `BEGIN IMMEDIATE` transaction with a busy timeout and a
retry when SQLite still reports the database locked; readers wait and retry the same way. A new
SQLite file appears whole: its schema is written to a temporary file that is then linked into
place, so no reader ever sees a database without tables. System dbs are never written at run time.

Temporary files carry the writing process's id (`.<name>.<pid>.<random>.tmp`); the next write
removes those whose process is gone, so a writer killed mid-write leaves nothing for long.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .. import _fsutil
from ..errors import DamagedDbError, DbError
from ._files import check_write_place

__all__ = [
    "LOCK_TIMEOUT_S",
    "atomic_write",
    "new_file_mode",
    "locked_update",
    "file_lock",
    "read_old",
    "connect",
    "create_sqlite",
    "remove_orphans",
    "retry_busy",
    "attach",
    "sqlite_uri",
    "write_transaction",
]

T = TypeVar("T")

# Long enough for a slow disk under 16 writers, short enough that a stuck holder is reported.
LOCK_TIMEOUT_S = 120.0
_BUSY_TIMEOUT_MS = 30_000
_POLL_S = 0.002


_tmp_prefix = _fsutil.tmp_prefix


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, another user's
        return True
    return True


def remove_orphans(path: Path, *, locked: bool = False) -> None:
    """Remove temporary files of `path` left by killed writers.

    `locked`: the caller holds `path`'s lock, so every temporary file of it is an orphan;
    otherwise only those whose writing process is gone are.
    """
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.([0-9]{{1,10}})\.[^/]*\.tmp$")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if m is None or int(m.group(1)) == os.getpid():
            continue
        if locked or not _pid_alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(path.parent / name)


new_file_mode = _fsutil.new_file_mode


def atomic_write(path: Path, data: bytes, *, locked: bool = False) -> None:
    """Write `data` to `path` so that a reader or a crash sees the old file or the new one."""
    _fsutil.atomic_write(path, data)
    remove_orphans(path, locked=locked)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold `<path>.lock`, the lock every writer of `path` takes (an OS lock: the kernel
    releases it when its holder dies); DbError when it stays taken past LOCK_TIMEOUT_S."""
    path.parent.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock, Timeout  # a writer's need; readers never import it

    lock = FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)
    try:
        # A short poll: a write holds the lock for milliseconds, the default 50 ms poll would
        # make 16 queued writers wait far longer than they work.
        lock.acquire(poll_interval=_POLL_S)
    except Timeout:
        raise DbError(
            f"{path}: could not take {path}.lock within {LOCK_TIMEOUT_S:.0f} s; another process "
            "holds it — wait for it or remove a stale lock file"
        ) from None
    try:
        yield
    finally:
        lock.release()


def read_old(path: Path, limit: int) -> bytes | None:
    """The bytes of a user text db before a locked write, None when there is none; a path that
    is not a regular file (a link to a device, a FIFO, a folder) or is over `limit` bytes is a
    DamagedDbError, never read (the write that follows replaces a link, never writes through)."""
    from ._files import open_regular

    try:
        fh = open_regular(path, "database")
    except DamagedDbError:
        raise
    except DbError:
        if not os.path.lexists(path):
            return None
        raise
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise DamagedDbError(f"{path} is {size >> 20} MiB, over the {limit >> 20} MiB a "
                                 "text database can be; move it away")
        return fh.read()


def locked_update(path: Path, update: Callable[[bytes | None], bytes], *,
                  limit: int = 1 << 30) -> None:
    """Read-modify-write `path` under its lock: `update(old bytes or None) -> new bytes`."""
    with file_lock(path):
        atomic_write(path, update(read_old(path, limit)), locked=True)


def sqlite_uri(path: Path, *, readonly: bool, immutable: bool = False) -> str:
    """The `file:` URI of a database path, escaped so that `#`, `?` and `%` in folder names
    stay part of the path; read-only (`mode=ro`) never creates the file, `immutable` (read-only
    only) also never looks for or makes a `-wal`, `-shm` or `-journal` beside it."""
    from urllib.parse import quote  # what pathname2url does on POSIX, without urllib.request

    mode = "ro" if readonly else "rwc"
    return f"file:{quote(str(path))}?mode={mode}" + ("&immutable=1" if immutable and readonly
                                                     else "")


# A statement on a file of this project's formats costs a few dozen VM steps per row; these
# bound one statement (its execute and the fetches of its rows) on a read-only file at far
# above that: a base for small files, plus a share per byte of the file and its -wal.
_BUDGET_BASE_STEPS = 50_000_000
_BUDGET_STEPS_PER_BYTE = 64
_PROGRESS_EVERY = 10_000


class _BudgetedConnection(sqlite3.Connection):
    """A connection whose every statement runs within a budget of SQLite VM steps: a file that
    is not what it claims (a view over an endless query, say) ends in an 'interrupted' error,
    which `_files.sqlite_errors` reports, instead of a hang."""

    budget_ticks = 0
    used_ticks = 0

    def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        self.used_ticks = 0
        return super().execute(*args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        self.used_ticks = 0
        return super().executemany(*args, **kwargs)


def _install_budget(conn: _BudgetedConnection, path: Path) -> None:
    size = 0
    for side in ("", "-wal"):
        with contextlib.suppress(OSError):
            size += os.stat(f"{path}{side}").st_size
    conn.budget_ticks = (_BUDGET_BASE_STEPS + _BUDGET_STEPS_PER_BYTE * size) // _PROGRESS_EVERY

    def tick() -> int:
        conn.used_ticks += 1
        return conn.used_ticks > conn.budget_ticks

    conn.set_progress_handler(tick, _PROGRESS_EVERY)


def connect(path: Path, *, readonly: bool, wal: bool = False,
            immutable: bool = False) -> sqlite3.Connection:
    """Open a SQLite database through its URI; read-only opens never create anything.

    `isolation_level=None` leaves transactions to `write_transaction`, which starts them with
    BEGIN IMMEDIATE so that a writer waits for the lock up front instead of failing mid-way.
    A read-only open runs every statement within a budget of steps (`_BudgetedConnection`) and
    with `immutable` writes nothing beside the file; a writable one refuses a path that is a
    link leaving its folder or not a regular file (`_files.check_write_place`). Every database
    this project reads or writes is opened here.
    """
    if not readonly:
        check_write_place(path, "database")
        path.parent.mkdir(parents=True, exist_ok=True)
    # check_same_thread off: a Handle's databases serve the thread that made them and others
    # (torch runs autograd's backward in a thread of its own); SQLite itself is serialised.
    conn = sqlite3.connect(sqlite_uri(path, readonly=readonly, immutable=immutable), uri=True,
                           isolation_level=None, check_same_thread=False,
                           factory=_BudgetedConnection if readonly else sqlite3.Connection)
    if readonly:
        _install_budget(conn, path)  # type: ignore[arg-type]
    if not readonly and wal and conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"), path)
    # SQLite's own busy handler backs off up to 100 ms per try; `retry_busy` polls faster.
    conn.execute("PRAGMA busy_timeout=5")
    # Text values decode with the default factory (no Python call per value); one that is not
    # UTF-8 is an OperationalError that `_files.sqlite_errors` reports as a damaged file.
    return conn


def create_sqlite(path: Path, statements: Iterable[str], *, wal: bool) -> None:
    """Create `path` with its schema in one step, unless it exists.

    The schema goes into a temporary file in the same folder, which is then hard-linked to
    `path`: the link fails if another process created `path` first, and a reader never sees a
    file without tables. Where the file system has no hard links, the same runs under
    `path`'s lock with a rename.
    """
    check_write_place(path, "database")
    if path.exists():
        remove_orphans(path)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # here, not on the runtime's start-up path

    fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(path), suffix=".tmp", dir=path.parent)
    os.fchmod(fd, new_file_mode())
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            if wal:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN")
            for statement in statements:
                conn.execute(statement)
            conn.execute("COMMIT")
        finally:
            conn.close()
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:
            from filelock import FileLock

            with FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S):
                if not path.exists():
                    _fsutil.replace(tmp, path, durable=True)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    remove_orphans(path)


def attach(conn: sqlite3.Connection, path: Path, alias: str, *, readonly: bool,
           immutable: bool = False) -> None:
    """ATTACH another database file to `conn` as `alias` (through its escaped URI)."""
    conn.execute(f"ATTACH DATABASE ? AS {alias}",
                 (sqlite_uri(path, readonly=readonly, immutable=immutable),))


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def retry_busy(fn: Callable[[], T], path: Path) -> T:
    """`fn()`, retried while SQLite reports the database locked or busy (readers and writers)."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise  # not a lock: `_files.sqlite_errors` around the caller says what it is
            if time.monotonic() > deadline:
                raise DbError(f"{path}: {exc}; another process holds the database") from None
            # Jitter so that waiting writers do not retry in lockstep.
            import random

            time.sleep(_POLL_S * (0.5 + random.random()))


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection, path: Path) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, retrying BEGIN while another writer holds the database."""
    retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"), path)
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    retry_busy(lambda: conn.execute("COMMIT"), path)
