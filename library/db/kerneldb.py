"""KernelDb: compiled code objects keyed by (kernel_name, kernel_args), MIOpen's `.kdb`/`.ukdb`.

One SQLite table, `kern_db`, UNIQUE on (kernel_name, kernel_args), no metadata table. A blob is
stored as a bzip2 stream (level 9) with `uncompressed_size` set to its length, or raw with
`uncompressed_size = 0` when compression would not shrink it. `kernel_hash` is the lowercase
MD5 of the uncompressed blob and is checked on every read. The system `.kdb` is opened read-only;
the user cache `.ukdb` uses WAL journaling so readers never wait for a writer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .._record import dataclass
from ..errors import DamagedDbError, DbError, IntegrityError
from ._files import check_sqlite_file, check_tables, immutable_read, sqlite_errors
from ._lock import connect, create_sqlite, retry_busy, write_transaction

__all__ = ["KDB_SCHEMA_SQL", "KernelEntry", "KernelDb", "MAX_CODE_OBJECT_BYTES", "pack_blob",
           "unpack_blob"]

# MIOpen's KernDb statements, so that sqlite_master reads as in MIOpen's files.
KDB_SCHEMA_SQL = (
    "CREATE TABLE IF NOT EXISTS `kern_db` (`id` INTEGER PRIMARY KEY ASC,"
    "`kernel_name` TEXT NOT NULL,`kernel_args` TEXT NOT NULL,`kernel_blob` BLOB NOT NULL,"
    "`kernel_hash` TEXT NOT NULL,`uncompressed_size` INT NOT NULL);"
    "CREATE UNIQUE INDEX IF NOT EXISTS `idx_kern_db` ON kern_db(kernel_name, kernel_args);"
)
_COLUMNS = ["id", "kernel_name", "kernel_args", "kernel_blob", "kernel_hash", "uncompressed_size"]


def _md5(data: bytes) -> Any:
    """MD5 of a blob: the interpreter's own module where it has one (no OpenSSL to load on a
    runtime's first kernel), else hashlib's."""
    try:
        from _md5 import md5
    except ImportError:  # pragma: no cover - builds without it
        from hashlib import md5
    return md5(data)


def pack_blob(blob: bytes) -> tuple[bytes, int, str]:
    """(stored bytes, uncompressed_size, md5) as MIOpen stores a code object."""
    digest = _md5(blob).hexdigest()
    import bz2

    packed = bz2.compress(blob, 9)
    if len(packed) < len(blob):
        return packed, len(blob), digest
    return blob, 0, digest


# The largest code object a row may inflate to: MIOpen's largest are a few MiB, a Triton one
# well under that; a row that promises or inflates past this is corrupt, never inflated whole.
# Inflating to it costs twice its size at the peak (the chunks, then the object): 256 MiB.
MAX_CODE_OBJECT_BYTES = 128 << 20
_CHUNK = 1 << 20


def _inflate(stored: bytes, ceiling: int, what: str) -> bytes:
    """The bzip2 stream(s) of `stored` inflated a chunk at a time, stopped as soon as the
    output passes `ceiling` bytes (a bomb of a few KiB that would inflate to GiBs)."""
    import bz2

    out: list[bytes] = []
    size = 0
    data = stored
    try:
        while True:
            dec = bz2.BZ2Decompressor()
            chunk = dec.decompress(data, max_length=_CHUNK)
            while True:
                out.append(chunk)
                size += len(chunk)
                if size > ceiling:
                    raise IntegrityError(f"{what}: the stored bzip2 stream inflates past the "
                                         f"{ceiling} bytes the row declares; the kernel "
                                         "database is corrupt, reinstall it")
                if dec.eof or not chunk:
                    break
                chunk = dec.decompress(b"", max_length=_CHUNK)
            if not dec.eof:
                raise IntegrityError(f"{what}: the stored bzip2 stream is truncated")
            data = dec.unused_data  # bz2.decompress reads concatenated streams too
            if not data:
                return b"".join(out)
    except (OSError, ValueError, EOFError) as exc:
        raise IntegrityError(f"{what}: the stored bzip2 stream is corrupt ({exc})") from None


def unpack_blob(stored: bytes, uncompressed_size: int, digest: str, what: str) -> bytes:
    """The code object of a row; IntegrityError (naming `what`) if it is not what was stored.
    A compressed blob inflates to at most its declared size, and never past
    MAX_CODE_OBJECT_BYTES."""
    blob = stored
    if uncompressed_size:
        if not 0 < uncompressed_size <= MAX_CODE_OBJECT_BYTES:
            raise IntegrityError(f"{what}: the row declares {uncompressed_size} bytes, not a "
                                 f"code object size (at most {MAX_CODE_OBJECT_BYTES >> 20} "
                                 "MiB); the kernel database is corrupt, reinstall it")
        blob = _inflate(stored, uncompressed_size, what)
        if len(blob) != uncompressed_size:
            raise IntegrityError(f"{what}: decompressed to {len(blob)} bytes, the row says "
                                 f"{uncompressed_size}")
    actual = _md5(blob).hexdigest()
    if actual != digest.lower():
        raise IntegrityError(f"{what}: md5 of the code object is {actual}, the row says {digest}; "
                             "the kernel database is corrupt, reinstall it")
    return blob


@dataclass(frozen=True)
class KernelEntry:
    """One row of kern_db, without its blob."""

    kernel_name: str
    kernel_args: str
    stored_size: int
    uncompressed_size: int  # 0: stored raw
    kernel_hash: str

    @property
    def size(self) -> int:
        """Size of the code object itself."""
        return self.uncompressed_size or self.stored_size

    @property
    def compressed(self) -> bool:
        return self.uncompressed_size != 0

    def to_dict(self) -> dict[str, Any]:
        return {"kernel_name": self.kernel_name, "kernel_args": self.kernel_args,
                "stored_size": self.stored_size, "uncompressed_size": self.uncompressed_size,
                "kernel_hash": self.kernel_hash}


class KernelDb:
    """A `.kdb` or `.ukdb` file.

    `readonly=True` (the default) opens with a `mode=ro` URI and never creates the file; a
    system `.kdb` also as immutable, so that nothing is written beside it.
    Writable opens create MIOpen's schema when the file is new; `wal` defaults to True for a
    `.ukdb` (a cache many processes share) and False otherwise, so that a system `.kdb` built
    here is one self-contained file.
    """

    def __init__(self, path: Path | str, *, readonly: bool = True,
                 wal: bool | None = None) -> None:
        self.path = Path(path)
        self.readonly = readonly
        use_wal = self.path.suffix == ".ukdb" if wal is None else wal
        statements = [s for s in KDB_SCHEMA_SQL.split(";") if s.strip()]
        with sqlite_errors(self.path, "KernelDb"):
            if not readonly:
                create_sqlite(self.path, statements, wal=use_wal)
        # An empty file is one that an older writer created but had not filled yet: SQLite
        # initialises it inside the transaction below.
        if readonly or (self.path.exists() and self.path.stat().st_size > 0):
            check_sqlite_file(self.path, "KernelDb")
        with sqlite_errors(self.path, "KernelDb"):
            self._conn = connect(self.path, readonly=readonly, wal=use_wal and not readonly,
                                 immutable=readonly and immutable_read(self.path))
            if not readonly and not retry_busy(lambda: self._conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = 'kern_db'").fetchone(), self.path):
                with write_transaction(self._conn, self.path):
                    for statement in statements:
                        self._conn.execute(statement)
            retry_busy(self._check_schema, self.path)

    def _check_schema(self) -> None:
        check_tables(self._conn, self.path, ("kern_db",), "KernelDb")
        tables = [r[0] for r in self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        columns = [r[1] for r in self._conn.execute("PRAGMA table_info(kern_db)")]
        if columns == _COLUMNS:
            return
        if "perf_db" in tables:
            raise DamagedDbError(f"{self.path} is a PerfDb (tables {', '.join(tables)}), "
                                 "not a KernelDb; give a .kdb/.ukdb kernel database")
        if columns:
            raise DamagedDbError(f"{self.path}: table kern_db has columns "
                                 f"{', '.join(columns)}, not MIOpen's {', '.join(_COLUMNS)}; "
                                 "rebuild the kernel database")
        raise DamagedDbError(f"{self.path} is a SQLite file but not a KernelDb (tables: "
                             f"{', '.join(tables) or 'none'}); give a .kdb/.ukdb kernel "
                             "database")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> KernelDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _what(self, name: str, args: str) -> str:
        return f"{self.path}: kernel {name!r} (args {args!r})"

    def load(self, kernel_name: str, kernel_args: str) -> bytes | None:
        """The code object, checked against its md5; None when there is no such entry."""
        with sqlite_errors(self.path, "KernelDb"):
            row = retry_busy(lambda: self._conn.execute(
                "SELECT kernel_blob, uncompressed_size, kernel_hash FROM kern_db "
                "WHERE kernel_name = ? AND kernel_args = ?", (kernel_name, kernel_args)
            ).fetchone(), self.path)
        if row is None:
            return None
        self._check_types(kernel_name, kernel_args, row[0], row[1], row[2])
        return unpack_blob(row[0], row[1], row[2], self._what(kernel_name, kernel_args))

    def contains(self, kernel_name: str, kernel_args: str) -> bool:
        """Whether the entry exists, without reading its code object."""
        with sqlite_errors(self.path, "KernelDb"):
            row = self._conn.execute(
                "SELECT 1 FROM kern_db WHERE kernel_name = ? AND kernel_args = ?",
                (kernel_name, kernel_args)).fetchone()
        return row is not None

    def remove(self, kernel_name: str, kernel_args: str) -> None:
        """Delete one entry (a damaged one, before it is compiled again)."""
        if self.readonly:
            raise DbError(f"{self.path} is open read-only")
        with sqlite_errors(self.path, "KernelDb"), write_transaction(self._conn, self.path):
            self._conn.execute("DELETE FROM kern_db WHERE kernel_name = ? AND kernel_args = ?",
                               (kernel_name, kernel_args))

    def store(self, kernel_name: str, kernel_args: str, blob: bytes) -> None:
        """Insert or replace one code object."""
        self.store_many([(kernel_name, kernel_args, blob)])

    def store_many(self, entries: Iterable[tuple[str, str, bytes]]) -> int:
        """Insert or replace many code objects in one transaction, in (name, args) order so that
        the same entries written to a new file give the same bytes. Returns the count."""
        if self.readonly:
            raise DbError(f"{self.path} is open read-only")
        rows = []
        for name, args, blob in sorted(entries, key=lambda e: (e[0], e[1])):
            stored, usize, digest = pack_blob(blob)
            rows.append((name, args, stored, digest, usize))
        with sqlite_errors(self.path, "KernelDb"), write_transaction(self._conn, self.path):
            self._conn.executemany(
                "INSERT OR REPLACE INTO kern_db (kernel_name, kernel_args, kernel_blob, "
                "kernel_hash, uncompressed_size) VALUES (?, ?, ?, ?, ?)", rows)
        return len(rows)

    def entries(self) -> list[KernelEntry]:
        """Every entry's name, args, sizes and hash, without reading or unpacking blobs."""
        return list(self.iter_entries())

    def iter_entries(self) -> Iterator[KernelEntry]:
        """The entries as `entries` gives them, one row at a time from SQLite (a kdb of
        hundreds of thousands of rows is listed in constant memory)."""
        with sqlite_errors(self.path, "KernelDb"):
            # A scan and SQLite's sorter (bounded memory, spills to a temporary file): a walk
            # of the UNIQUE index would seek to every row's table page in index order.
            cursor = self._conn.execute(
                "SELECT kernel_name, kernel_args, length(kernel_blob), uncompressed_size, "
                "kernel_hash, typeof(kernel_blob) FROM kern_db NOT INDEXED "
                "ORDER BY kernel_name, kernel_args")
            new = object.__new__
            for name, args, stored, usize, digest, kind in cursor:
                if kind != "blob" or type(name) is not str or type(args) is not str or \
                        type(digest) is not str or type(usize) is not int:
                    self._check_types(name, args, kind if kind != "blob" else b"", usize,
                                      digest)
                # Fields checked above: made as FindDb's records are, without the frozen
                # dataclass's per-field setattr (the cost of a listing of 300k rows).
                entry = new(KernelEntry)
                entry.__dict__.update(kernel_name=name, kernel_args=args, stored_size=stored,
                                      uncompressed_size=usize, kernel_hash=digest)
                yield entry

    def widths(self) -> tuple[int, int, int, int]:
        """(entries, longest kernel name, longest kernel args, most digits of a size): what a
        table of every entry needs, from one SQL query and no row held."""
        with sqlite_errors(self.path, "KernelDb"):
            row = self._conn.execute(
                "SELECT count(*), max(length(kernel_name)), max(length(kernel_args)), "
                "max(max(length(kernel_blob)), max(uncompressed_size)) FROM kern_db"
            ).fetchone()
        count, name, args, size = (int(v) if type(v) is int else 0 for v in row)
        return count, name, args, len(str(max(size, 0)))

    def stored(self) -> Iterator[tuple[KernelEntry, bytes]]:
        """Every row with its stored blob as it is in the file (compressed or raw), in
        (name, args) order (a walk of the UNIQUE index: no sort copies the blobs); the types of
        every value checked."""
        with sqlite_errors(self.path, "KernelDb"):
            cursor = self._conn.execute(
                "SELECT kernel_name, kernel_args, kernel_blob, uncompressed_size, kernel_hash "
                "FROM kern_db ORDER BY kernel_name, kernel_args")
            for name, args, stored, usize, digest in cursor:
                self._check_types(name, args, stored, usize, digest)
                yield KernelEntry(name, args, len(stored), usize, digest), bytes(stored)

    def _check_types(self, name: Any, args: Any, stored: Any, usize: Any, digest: Any) -> None:
        if not (isinstance(name, str) and isinstance(args, str) and isinstance(digest, str)
                and isinstance(stored, bytes) and type(usize) is int):
            raise DbError(
                f"{self.path}: kern_db row {name!r} holds values of the wrong type (kernel_blob "
                f"{type(stored).__name__}, uncompressed_size {type(usize).__name__}); MIOpen "
                "stores a BLOB and an integer there: rebuild or reinstall the kernel database")

    def __len__(self) -> int:
        with sqlite_errors(self.path, "KernelDb"):
            return int(self._conn.execute("SELECT count(*) FROM kern_db").fetchone()[0])

    def verify(self) -> Iterator[str]:
        """One message per entry whose blob does not unpack to its md5 (re-hashes every blob)."""
        with sqlite_errors(self.path, "KernelDb"):
            cursor = self._conn.execute(
                "SELECT kernel_name, kernel_args, kernel_blob, uncompressed_size, kernel_hash "
                "FROM kern_db ORDER BY kernel_name, kernel_args")
            for name, args, stored, usize, digest in cursor:
                try:
                    self._check_types(name, args, stored, usize, digest)
                    unpack_blob(stored, usize, digest, self._what(name, args))
                except (IntegrityError, DbError) as exc:
                    yield str(exc)
