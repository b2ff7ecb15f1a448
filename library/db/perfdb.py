"""PerfDb: the tuned parameters of each (problem, solver), in MIOpen's SQLite and text formats.

SQLite `<base>.db` (system) and `<base>_1.1.0.udb` (user) carry MIOpen's schema exactly: a `config`
table (one row per problem, UNIQUE over every column but id) and `perf_db(solver, config, params)`
UNIQUE on (solver, config). The text format `<base>.db.txt` (user `<base>.HIP.<ver>.udb.txt`) has
one line per problem: the `x`-joined config key, then `solver:params;...`. Also read: the old 1.0.0
SQLite schema (perf_db rows per arch and CU count) and the pre-SQLite `.cd.pdb.txt` text format,
whose key is the FindDb key. User and system entries merge; the user's wins per solver.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import DamagedDbError, DbError, MIOpenKernelsError
from ._files import check_sqlite_file, sqlite_errors
from ._lock import connect, create_sqlite, locked_update, retry_busy, write_transaction
from ._text import CachedFile, iter_lines, malformed, read_text

__all__ = [
    "CONFIG_COLUMNS",
    "ConfigKey",
    "SCHEMA_SQL",
    "PerfDbFile",
    "SqlitePerfDb",
    "PerfDb",
    "config_key",
    "config_from_text_key",
    "text_key",
    "sqlite_schema_version",
]

CONFIG_COLUMNS = (
    "layout", "data_type", "direction", "spatial_dim", "in_channels", "in_h", "in_w", "in_d",
    "fil_h", "fil_w", "fil_d", "out_channels", "batchsize", "pad_h", "pad_w", "pad_d",
    "conv_stride_h", "conv_stride_w", "conv_stride_d", "dilation_h", "dilation_w", "dilation_d",
    "bias", "group_count",
)
_TEXT_COLUMNS = CONFIG_COLUMNS[3:]  # the int fields, in text-key order
# A problem's config row as a tuple in CONFIG_COLUMNS order.
ConfigKey = tuple[Any, ...]

# MIOpen's own statements (schema 1.1.0), so that sqlite_master reads as in MIOpen's files.
SCHEMA_SQL = (
    "CREATE TABLE IF NOT EXISTS `config` (`id` INTEGER PRIMARY KEY ASC,`layout` TEXT NOT NULL,"
    "`data_type` TEXT NOT NULL,`direction` TEXT NOT NULL,`spatial_dim` INT NOT NULL,"
    "`in_channels` INT NOT NULL,`in_h` INT NOT NULL,`in_w` INT NOT NULL,`in_d` INT NOT NULL,"
    "`fil_h` INT NOT NULL,`fil_w` INT NOT NULL,`fil_d` INT NOT NULL,`out_channels` INT NOT NULL,"
    "`batchsize` INT NOT NULL,`pad_h` INT NOT NULL,`pad_w` INT NOT NULL,`pad_d` INT NOT NULL,"
    "`conv_stride_h` INT NOT NULL,`conv_stride_w` INT NOT NULL,`conv_stride_d` INT NOT NULL,"
    "`dilation_h` INT NOT NULL,`dilation_w` INT NOT NULL,`dilation_d` INT NOT NULL,"
    "`bias` INT NOT NULL,`group_count` INT NOT NULL);"
    "CREATE UNIQUE INDEX IF NOT EXISTS `idx_config` ON config( layout,data_type,direction, "
    "spatial_dim,in_channels,in_h,in_w,in_d,fil_h,fil_w,fil_d,out_channels,batchsize,pad_h,"
    "pad_w,pad_d,conv_stride_h,conv_stride_w,conv_stride_d,dilation_h,dilation_w,dilation_d,"
    "bias,group_count );"
    "CREATE TABLE IF NOT EXISTS `perf_db` (`id` INTEGER PRIMARY KEY ASC,`solver` TEXT NOT NULL,"
    "`config` INTEGER NOT NULL,`params` TEXT NOT NULL);"
    "CREATE UNIQUE INDEX IF NOT EXISTS `idx_perf_db` ON perf_db(solver, config);"
)
_WHERE = " AND ".join(f"c.{c} = ?" for c in CONFIG_COLUMNS)
_COLS = ", ".join(f"c.{c}" for c in CONFIG_COLUMNS)


def config_key(problem: Any) -> ConfigKey:
    """The config tuple of a ConvProblem (or of a config dict)."""
    cfg = problem if isinstance(problem, dict) else problem.perfdb_config()
    return tuple(cfg[c] for c in CONFIG_COLUMNS)


def text_key(cfg: ConfigKey) -> str:
    """The text PerfDb key: int fields, then layout, data type, direction, joined by `x`."""
    row = dict(zip(CONFIG_COLUMNS, cfg, strict=True))
    return "x".join([*(str(row[c]) for c in _TEXT_COLUMNS), row["layout"], row["data_type"],
                     row["direction"]])


def config_from_text_key(key: str) -> ConfigKey:
    """Inverse of `text_key`; ValueError says what is wrong."""
    parts = key.split("x")
    if len(parts) != len(CONFIG_COLUMNS):
        raise ValueError(f"key has {len(parts)} 'x'-separated fields, expected "
                         f"{len(CONFIG_COLUMNS)}")
    ints, (layout, dtype, direction) = parts[:-3], parts[-3:]
    if not all(p.isdigit() for p in ints):
        raise ValueError("the first 21 key fields must be integers")
    if direction not in ("F", "B", "W"):
        raise ValueError(f"direction {direction!r} is not F, B or W")
    row: dict[str, Any] = dict(zip(_TEXT_COLUMNS, (int(p) for p in ints), strict=True))
    row.update(layout=layout, data_type=dtype, direction=direction)
    return tuple(row[c] for c in CONFIG_COLUMNS)


def _config_from_finddb_key(key: str) -> ConfigKey:
    from ..problem import ConvProblem

    try:
        return config_key(ConvProblem.from_key(key))
    except MIOpenKernelsError as exc:
        raise ValueError(str(exc)) from None


def _statements(script: str) -> list[str]:
    return [s for s in script.split(";") if s.strip()]


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info(`{table}`)")]


def sqlite_schema_version(conn: sqlite3.Connection) -> str | None:
    """'1.1.0', '1.0.0' or 'pre-1.0.0' for a PerfDb; None when the tables are not a PerfDb's."""
    perf = set(_columns(conn, "perf_db"))
    config = set(_columns(conn, "config"))
    if not perf or not config or not {"solver", "config", "params"} <= perf:
        return None
    if "filter_h" in config:
        return "pre-1.0.0"
    if not set(CONFIG_COLUMNS) <= config:
        return None
    return "1.0.0" if {"arch", "num_cu"} <= perf else "1.1.0"


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


class SqlitePerfDb:
    """One SQLite PerfDb file, queried per problem (the run-time path: plain sqlite3).

    Opening read-only never creates or changes the file; opening for writing creates MIOpen's
    schema if the file is new and uses WAL journaling, as MIOpen's user dbs do.
    """

    def __init__(self, path: Path | str, *, readonly: bool = True) -> None:
        self.path = Path(path)
        self.readonly = readonly
        with sqlite_errors(self.path, "PerfDb"):
            if not readonly:
                create_sqlite(self.path, _statements(SCHEMA_SQL), wal=True)
        # An empty file is one that an older writer created but had not filled yet: SQLite
        # initialises it inside the transaction below.
        if readonly or (self.path.exists() and self.path.stat().st_size > 0):
            check_sqlite_file(self.path, "PerfDb")
        with sqlite_errors(self.path, "PerfDb"):
            self._conn = connect(self.path, readonly=readonly, wal=not readonly)
            if not readonly and not retry_busy(lambda: _tables(self._conn), self.path):
                with write_transaction(self._conn, self.path):
                    if not _tables(self._conn):
                        # Statement by statement: executescript would commit the transaction.
                        for statement in _statements(SCHEMA_SQL):
                            self._conn.execute(statement)
            self.schema = retry_busy(self._check_schema, self.path)

    def _check_schema(self) -> str:
        version = sqlite_schema_version(self._conn)
        tables = _tables(self._conn)
        if version is None:
            if "kern_db" in tables:
                raise DbError(f"{self.path} is a KernelDb (table kern_db), not a PerfDb; "
                              "give a .db/.udb perf database")
            raise DbError(f"{self.path} is a SQLite file but not a MIOpen PerfDb (tables: "
                          f"{', '.join(tables) or 'none'}); give a .db/.udb perf database")
        if version == "pre-1.0.0":
            raise DbError(
                f"{self.path} uses the pre-1.0.0 PerfDb schema (TEXT config columns such as "
                "filter_h, conv_stride_0), which MIOpen no longer reads; delete it and let MIOpen "
                "tune again"
            )
        if version == "1.0.0" and not self.readonly:
            raise DbError(f"{self.path} uses the old PerfDb schema 1.0.0 (perf_db with arch and "
                          "num_cu); it can be read or converted, not written")
        return version

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SqlitePerfDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _order(self) -> str:
        # Schema 1.0.0 keeps one row per (arch, CU): the first in a fixed order wins.
        return "p.arch, p.num_cu, p.id" if self.schema == "1.0.0" else "p.id"

    def load(self, problem: Any) -> dict[str, str]:
        """{solver: params} of one problem (ConvProblem, config dict or config tuple)."""
        cfg = problem if isinstance(problem, tuple) else config_key(problem)
        out: dict[str, str] = {}
        with sqlite_errors(self.path, "PerfDb"):
            rows = retry_busy(lambda: self._conn.execute(
                f"SELECT p.solver, p.params FROM perf_db p JOIN config c ON p.config = c.id "
                f"WHERE {_WHERE} ORDER BY {self._order()}", cfg).fetchall(), self.path)
        for solver, params in rows:
            out.setdefault(solver, params)
        return out

    def items(self) -> Iterator[tuple[ConfigKey, dict[str, str]]]:
        """Every (config, {solver: params}), in config id order."""
        with sqlite_errors(self.path, "PerfDb"):
            rows = retry_busy(lambda: self._conn.execute(
                f"SELECT c.id, {_COLS}, p.solver, p.params FROM config c JOIN perf_db p "
                f"ON p.config = c.id ORDER BY c.id, {self._order()}").fetchall(), self.path)
        current: ConfigKey | None = None
        current_id = None
        entries: dict[str, str] = {}
        for row in rows:
            cid, cfg, solver, params = row[0], tuple(row[1:-2]), row[-2], row[-1]
            if cid != current_id:
                if current is not None:
                    yield current, entries
                current, current_id, entries = cfg, cid, {}
            entries.setdefault(solver, params)
        if current is not None:
            yield current, entries

    def store(self, problem: Any, solver: str, params: str) -> None:
        """Insert or replace one (problem, solver) entry in one transaction."""
        self.store_many([(problem if isinstance(problem, tuple) else config_key(problem),
                          {solver: params})])

    def store_many(self, records: Iterable[tuple[ConfigKey, dict[str, str]]]) -> None:
        """Insert or replace many entries in one transaction (as MIOpen: config OR IGNORE,
        perf_db OR REPLACE)."""
        if self.readonly:
            raise DbError(f"{self.path} is open read-only")
        marks = ", ".join("?" * len(CONFIG_COLUMNS))
        with sqlite_errors(self.path, "PerfDb"), write_transaction(self._conn, self.path):
            for cfg, entries in records:
                self._conn.execute(
                    f"INSERT OR IGNORE INTO config ({', '.join(CONFIG_COLUMNS)}) "
                    f"VALUES ({marks})", cfg)
                where = " AND ".join(f"{c} = ?" for c in CONFIG_COLUMNS)
                (cid,) = self._conn.execute(f"SELECT id FROM config WHERE {where}",
                                            cfg).fetchone()
                for solver, params in entries.items():
                    self._conn.execute(
                        "INSERT OR REPLACE INTO perf_db (config, solver, params) "
                        "VALUES (?, ?, ?)", (cid, solver, params))


class PerfDbFile:
    """A whole PerfDb in memory, read from any format MIOpen used and written to SQLite or text.

    `kind` is 'sqlite', 'text' or 'legacy-text' (`.cd.pdb.txt`); `schema` is the SQLite schema
    version for SQLite files.
    """

    def __init__(self, path: Path | None = None, kind: str = "text", schema: str = "") -> None:
        self.path = path
        self.kind = kind
        self.schema = schema
        self.records: dict[ConfigKey, dict[str, str]] = {}

    # ------------------------------------------------------------------ reading
    @classmethod
    def read(cls, path: Path | str) -> PerfDbFile:
        """Read a SQLite PerfDb (1.1.0 or 1.0.0), a text PerfDb or a legacy `.pdb.txt`."""
        p = Path(path)
        from ._files import SQLITE_MAGIC, check_exists

        check_exists(p, "PerfDb")
        with p.open("rb") as fh:
            is_sqlite = fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
        if is_sqlite or p.suffix in (".db", ".udb"):
            with SqlitePerfDb(p) as db:
                out = cls(p, "sqlite", db.schema)
                out.records.update(db.items())
            return out
        return cls.parse(read_text(p, "PerfDb"), str(p), p)

    @classmethod
    def parse(cls, text: str, source: str = "<text>", path: Path | None = None) -> PerfDbFile:
        """Text PerfDb lines; a `-` key (FindDb style) marks the legacy `.pdb.txt` format."""
        out = cls(path, "text")
        kinds = set()
        for line in iter_lines(text, source):
            legacy = "-" in line.key
            kinds.add(legacy)
            try:
                cfg = _config_from_finddb_key(line.key) if legacy else \
                    config_from_text_key(line.key)
            except ValueError as exc:
                raise malformed(source, line.number, f"bad PerfDb key ({exc})", line.raw) \
                    from None
            entries: dict[str, str] = {}
            for entry in line.value.split(";"):
                solver, sep, params = entry.partition(":")
                if not sep or not solver:
                    raise malformed(source, line.number,
                                    f"entry {entry!r} is not '<solver>:<params>'", line.raw)
                entries.setdefault(solver, params)
            out.records.setdefault(cfg, entries)
        if kinds == {True}:
            out.kind = "legacy-text"
        elif len(kinds) > 1:
            raise DbError(f"{source} mixes text PerfDb keys and FindDb-style keys; "
                          "split the file by format")
        return out

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.records)

    def load(self, problem: Any) -> dict[str, str]:
        cfg = problem if isinstance(problem, tuple) else config_key(problem)
        return dict(self.records.get(cfg, {}))

    def put(self, problem: Any, solver: str, params: str) -> None:
        cfg = problem if isinstance(problem, tuple) else config_key(problem)
        self.records.setdefault(cfg, {})[solver] = params

    @property
    def entry_count(self) -> int:
        return sum(len(e) for e in self.records.values())

    # ------------------------------------------------------------------ writing
    def to_text(self) -> str:
        """The text PerfDb (`<base>.db.txt`), one line per config in this file's order."""
        return "".join(
            text_key(cfg) + "=" + ";".join(f"{s}:{p}" for s, p in entries.items()) + "\n"
            for cfg, entries in self.records.items() if entries
        )

    def write(self, path: Path | str) -> Path:
        """Write to `path`: `.txt` gives text, anything else (`.db`, `.udb`) SQLite."""
        p = Path(path)
        if p.name.endswith(".txt"):
            from ._lock import atomic_write

            atomic_write(p, self.to_text().encode())
        else:
            self.write_sqlite(p)
        return p

    def write_sqlite(self, path: Path) -> None:
        """A fresh SQLite file with MIOpen's schema; same records give the same bytes."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=DELETE")
                conn.executescript(SCHEMA_SQL)
                conn.execute("BEGIN")
                marks = ", ".join("?" * len(CONFIG_COLUMNS))
                for cid, (cfg, entries) in enumerate(self.records.items(), 1):
                    conn.execute(f"INSERT INTO config (id, {', '.join(CONFIG_COLUMNS)}) "
                                 f"VALUES (?, {marks})", (cid, *cfg))
                    conn.executemany(
                        "INSERT INTO perf_db (solver, config, params) VALUES (?, ?, ?)",
                        [(s, cid, p) for s, p in entries.items()])
                conn.execute("COMMIT")
            finally:
                conn.close()
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _read_text_or_empty(path: Path) -> PerfDbFile:
    return PerfDbFile.read(path)


class PerfDb:
    """The system PerfDb and the user PerfDb of one target, merged per solver (user wins).

    Either side may be SQLite (`.db`, `.udb`) or text (`.db.txt`, `.udb.txt`). `store` writes
    the user side only: one SQLite transaction, or lock + atomic replace for text.
    """

    def __init__(self, system: Path | str | None = None, user: Path | str | None = None) -> None:
        self.system_path = Path(system) if system is not None else None
        self.user_path = Path(user) if user is not None else None
        self._system: SqlitePerfDb | PerfDbFile | None = None
        self._warned = False
        self._user_text = (CachedFile(self.user_path, _read_text_or_empty, PerfDbFile)
                           if self.user_path is not None and _is_text(self.user_path) else None)

    @classmethod
    def for_paths(cls, paths: Any) -> PerfDb:
        """From a `config.Paths`: the system `.db` (else `.db.txt`) and the user `.udb`."""
        system = paths.system_perfdb
        if system is not None and not system.exists() and paths.system_perfdb_text is not None \
                and paths.system_perfdb_text.exists():
            system = paths.system_perfdb_text
        return cls(system, paths.user_perfdb)

    def _system_db(self) -> SqlitePerfDb | PerfDbFile | None:
        if self._system is None and self.system_path is not None and self.system_path.exists():
            self._system = (PerfDbFile.read(self.system_path) if _is_text(self.system_path)
                            else SqlitePerfDb(self.system_path))
        return self._system

    def _user_entries(self, cfg: ConfigKey) -> dict[str, str]:
        """The user's entries; a damaged user PerfDb counts as empty (one warning), so that
        the system's tuned parameters or the defaults still serve."""
        if self.user_path is None or not _has_content(self.user_path):
            return {}
        try:
            if self._user_text is not None:
                return self._user_text.get().load(cfg)
            with SqlitePerfDb(self.user_path) as db:
                return db.load(cfg)
        except DamagedDbError as exc:
            self._damaged(exc)
        except DbError as exc:
            if self._user_text is None:
                raise  # busy past the timeout: the caller may try again
            self._damaged(exc)  # a text file that does not parse
        return {}

    def _damaged(self, exc: DbError) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(f"{exc}; the user PerfDb is ignored until it is repaired or "
                          "removed", stacklevel=4)

    def load(self, problem: Any) -> dict[str, str]:
        """{solver: params} for a problem: system entries, overridden per solver by the user's."""
        cfg = problem if isinstance(problem, tuple) else config_key(problem)
        system = self._system_db()
        out = system.load(cfg) if system is not None else {}
        out.update(self._user_entries(cfg))
        return out

    def store(self, problem: Any, solver: str, params: str) -> None:
        """Record tuned `params` of `solver` for `problem` in the user PerfDb."""
        if self.user_path is None:
            raise DbError("no user PerfDb path: the system PerfDb is never written at run time")
        cfg = problem if isinstance(problem, tuple) else config_key(problem)
        if self._user_text is None:
            with SqlitePerfDb(self.user_path, readonly=False) as db:
                db.store(cfg, solver, params)
            return
        path = self.user_path

        def update(old: bytes | None) -> bytes:
            db = PerfDbFile.parse(old.decode(), str(path)) if old else PerfDbFile()
            db.put(cfg, solver, params)
            return db.to_text().encode()

        locked_update(path, update)

    def close(self) -> None:
        if isinstance(self._system, SqlitePerfDb):
            self._system.close()
        self._system = None


def _has_content(path: Path) -> bool:
    """False for a missing file, or one that a first writer has created but not yet filled."""
    try:
        return path.stat().st_size > 0 or Path(f"{path}-wal").exists()
    except FileNotFoundError:
        return False


def _is_text(path: Path) -> bool:
    return path.name.endswith(".txt")
