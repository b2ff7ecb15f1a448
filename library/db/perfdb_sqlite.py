"""The SQLite PerfDb (`<base>.db` system, `<base>_1.1.0.udb` user): MIOpen's schema 1.1.0 (and
1.0.0, read only), queried per problem through an index on perf_db.config."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .._fsutil import atomic_path
from .._log import get_logger
from ..errors import DamagedDbError, DbError
from ._files import check_sqlite_file, check_tables, immutable_read, sqlite_errors
from ._index import file_stamp, index_path
from ._lock import attach, connect, create_sqlite, retry_busy, write_transaction
from .perfdb_config import (
    CONFIG_COLUMNS,
    ConfigKey,
    check_config,
    check_entry,
    config_key,
    text_key,
)

log = get_logger(__name__)

__all__ = ["SCHEMA_SQL", "CONFIG_INDEX_SQL", "SqlitePerfDb", "sqlite_schema_version"]

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
# Not MIOpen's: a lookup by config must not scan perf_db (MIOpen's UNIQUE index starts with
# solver). Files written here carry it; MIOpen ignores an index it did not create.
CONFIG_INDEX_SQL = "CREATE INDEX IF NOT EXISTS `idx_perf_db_config` ON perf_db(config)"
_WHERE = " AND ".join(f"c.{c} = ?" for c in CONFIG_COLUMNS)
# The text key of a config row, computed by SQLite (for the kept index of a foreign file).
_KEY_SQL = " || 'x' || ".join([*CONFIG_COLUMNS[3:], "layout", "data_type", "direction"])
_BAD_TYPES = " OR ".join([*(f"typeof({c}) != 'text'" for c in CONFIG_COLUMNS[:3]),
                          *(f"typeof({c}) != 'integer'" for c in CONFIG_COLUMNS[3:])])
_COLS = ", ".join(f"c.{c}" for c in CONFIG_COLUMNS)


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


def _has_config_index(conn: sqlite3.Connection, schema: str = "main") -> bool:
    """Whether some index of perf_db starts with its config column."""
    for row in conn.execute(f"PRAGMA {schema}.index_list(perf_db)"):
        cols = [r[2] for r in conn.execute(f"PRAGMA {schema}.index_info(`{row[1]}`)")]
        if cols and cols[0] == "config":
            return True
    return False


def _check_row(path: Path, cid: Any, cfg: ConfigKey | None, solver: Any, params: Any) -> None:
    try:
        if cfg is not None:
            check_config(cfg, f"config row {cid}")
        if solver is not None or params is not None:
            check_entry(solver, params, f"config row {cid}")
    except ValueError as exc:
        raise DbError(f"{path}: {exc}; MIOpen stores TEXT names and integer fields, so this is "
                      "not a PerfDb MIOpen wrote: rebuild or reinstall it") from None


class SqlitePerfDb:
    """One SQLite PerfDb file, queried per problem (the run-time path: plain sqlite3).

    Opening read-only never creates or changes the file; opening for writing creates MIOpen's
    schema if the file is new and uses WAL journaling, as MIOpen's user dbs do. A lookup goes
    through an index on perf_db.config: the file's own (files written here carry one), else,
    for a read-only file, one kept in `index_dir` (built once per version of the file).
    """

    def __init__(self, path: Path | str, *, readonly: bool = True,
                 index_dir: Path | None = None) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.index_dir = index_dir
        self._side: str | None = None
        with sqlite_errors(self.path, "PerfDb"):
            if not readonly:
                create_sqlite(self.path, [*_statements(SCHEMA_SQL), CONFIG_INDEX_SQL], wal=True)
        # An empty file is one that an older writer created but had not filled yet: SQLite
        # initialises it inside the transaction below.
        if readonly or (self.path.exists() and self.path.stat().st_size > 0):
            check_sqlite_file(self.path, "PerfDb")
        with sqlite_errors(self.path, "PerfDb"):
            self._conn = connect(self.path, readonly=readonly, wal=not readonly,
                                 immutable=readonly and immutable_read(self.path))
            if not readonly and not retry_busy(lambda: _tables(self._conn), self.path):
                with write_transaction(self._conn, self.path):
                    if not _tables(self._conn):
                        # Statement by statement: executescript would commit the transaction.
                        for statement in [*_statements(SCHEMA_SQL), CONFIG_INDEX_SQL]:
                            self._conn.execute(statement)
            self.schema = retry_busy(self._check_schema, self.path)
            self._indexed = _has_config_index(self._conn)

    def _check_schema(self) -> str:
        check_tables(self._conn, self.path, ("config", "perf_db"), "PerfDb")
        version = sqlite_schema_version(self._conn)
        tables = _tables(self._conn)
        if version is None:
            if "kern_db" in tables:
                raise DamagedDbError(f"{self.path} is a KernelDb (table kern_db), not a PerfDb; "
                              "give a .db/.udb perf database")
            raise DamagedDbError(f"{self.path} is a SQLite file but not a MIOpen PerfDb (tables: "
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

    # ------------------------------------------------------------------ side index
    def _side_index(self) -> bool:
        """Attach (building it once if needed) the index kept for a read-only file: text key
        -> config id -> perf_db ids. False when there is nowhere to keep it (then the file's
        own indexes serve)."""
        if self._side is not None:
            return True
        if not self.readonly or self.index_dir is None:
            return False
        stamp = file_stamp(self.path)
        side = index_path(self.path, self.index_dir, ".perfidx.db")
        if not self._side_matches(side, stamp):
            try:
                self._build_side(side, stamp)
            except (OSError, sqlite3.Error, DbError) as exc:
                log.debug("could not keep a config index of %s at %s: %s", self.path, side, exc)
                return False
            if not self._side_matches(side, stamp):
                return False
        attach(self._conn, side, "side", readonly=True)
        # Neither file changes under a reader (a new version is a new file): keep the shared
        # locks and the page cache between lookups instead of taking them again per query.
        self._conn.execute("PRAGMA main.locking_mode=EXCLUSIVE")
        self._conn.execute("PRAGMA side.locking_mode=EXCLUSIVE")
        self._side = str(side)
        return True

    def _side_matches(self, side: Path, stamp: tuple[int, int, bytes]) -> bool:
        if not side.is_file():
            return False
        try:
            conn = connect(side, readonly=True)
            try:
                row = conn.execute("SELECT size, mtime_ns, digest FROM stamp").fetchone()
            finally:
                conn.close()
        except sqlite3.Error:
            return False
        return row is not None and tuple(row) == stamp

    def _build_side(self, side: Path, stamp: tuple[int, int, bytes]) -> None:
        with atomic_path(side) as tmp:
            conn = connect(tmp, readonly=False)
            try:
                attach(conn, self.path, "src", readonly=True,
                       immutable=immutable_read(self.path))
                conn.execute("BEGIN")
                conn.execute("CREATE TABLE stamp (size INTEGER, mtime_ns INTEGER, digest BLOB)")
                conn.execute("INSERT INTO stamp VALUES (?, ?, ?)", stamp)
                bad = conn.execute(
                    f"SELECT id FROM src.config WHERE {_BAD_TYPES} LIMIT 1").fetchone()
                if bad is not None:
                    raise DbError(f"{self.path}: config row {bad[0]} holds a value of the wrong "
                                  "type (TEXT names and integer fields are MIOpen's); this is "
                                  "not a PerfDb MIOpen wrote: rebuild or reinstall it")
                conn.execute("CREATE TABLE cfg_key (key TEXT PRIMARY KEY, config INTEGER) "
                             "WITHOUT ROWID")
                conn.execute(f"INSERT OR IGNORE INTO cfg_key SELECT {_KEY_SQL}, id "
                             "FROM src.config ORDER BY id")
                conn.execute("CREATE TABLE perf_config (config INTEGER, pid INTEGER, "
                             "PRIMARY KEY (config, pid)) WITHOUT ROWID")
                conn.execute("INSERT OR IGNORE INTO perf_config SELECT config, id "
                             "FROM src.perf_db")
                conn.execute("COMMIT")
                conn.execute("DETACH DATABASE src")
            finally:
                conn.close()

    # ------------------------------------------------------------------ reading
    def load(self, problem: Any) -> dict[str, str]:
        """{solver: params} of one problem (ConvProblem, config dict or config tuple)."""
        cfg = problem if isinstance(problem, tuple) else config_key(problem)
        out: dict[str, str] = {}
        try:
            if self._side_index():
                # One seek by text key, then perf_db rows by id: no 24-column probe.
                order = "p.arch, p.num_cu, x.pid" if self.schema == "1.0.0" else "x.pid"
                rows = self._conn.execute(
                    "SELECT p.solver, p.params FROM side.cfg_key k JOIN side.perf_config x "
                    "ON x.config = k.config JOIN perf_db p ON p.id = x.pid WHERE k.key = ? "
                    f"ORDER BY {order}", (text_key(cfg),)).fetchall()  # no writer: no retry
            else:
                rows = retry_busy(lambda: self._conn.execute(
                    f"SELECT p.solver, p.params FROM perf_db p JOIN config c "
                    f"ON p.config = c.id WHERE {_WHERE} ORDER BY {self._order()}",
                    cfg).fetchall(), self.path)
        except sqlite3.DatabaseError:
            with sqlite_errors(self.path, "PerfDb"):
                raise
        for solver, params in rows:
            if type(solver) is not str or type(params) is not str:
                _check_row(self.path, "of this problem", None, solver, params)
            out.setdefault(solver, params)
        return out

    def items(self) -> Iterator[tuple[ConfigKey, dict[str, str]]]:
        """Every (config, {solver: params}) in config id order, configs without entries too;
        entries in perf_db id order. Every value is type-checked."""
        with sqlite_errors(self.path, "PerfDb"):
            rows = retry_busy(lambda: self._conn.execute(
                f"SELECT c.id, {_COLS}, p.solver, p.params, p.id FROM config c LEFT JOIN "
                f"perf_db p ON p.config = c.id ORDER BY c.id, {self._order()}").fetchall(),
                self.path)
        current: ConfigKey | None = None
        current_id = None
        entries: dict[str, str] = {}
        for row in rows:
            cid, cfg, solver, params, pid = row[0], tuple(row[1:-3]), row[-3], row[-2], row[-1]
            if cid != current_id:
                if current is not None:
                    yield current, entries
                _check_row(self.path, cid, cfg, None, None)
                current, current_id, entries = cfg, cid, {}
            if pid is None:
                continue  # a config without entries
            _check_row(self.path, cid, None, solver, params)
            entries.setdefault(solver, params)
        if current is not None:
            yield current, entries
        with sqlite_errors(self.path, "PerfDb"):
            orphans = self._conn.execute(
                "SELECT count(*) FROM perf_db WHERE config NOT IN (SELECT id FROM config)"
            ).fetchone()[0]
        if orphans:
            log.warning("%s: %d perf_db row(s) name no config row; MIOpen never reads them, "
                        "and they are left out", self.path, orphans)

    def store(self, problem: Any, solver: str, params: str) -> None:
        """Insert or replace one (problem, solver) entry in one transaction."""
        self.store_many([(problem if isinstance(problem, tuple) else config_key(problem),
                          {solver: params})])

    def store_many(self, records: Iterable[tuple[ConfigKey, dict[str, str]]]) -> None:
        """Insert or replace many entries in one transaction (as MIOpen: config OR IGNORE,
        perf_db OR REPLACE)."""
        if self.readonly:
            raise DbError(f"{self.path} is open read-only")
        records = list(records)
        try:
            for cfg, entries in records:
                check_config(cfg, "config")
                for solver, params in entries.items():
                    check_entry(solver, params, text_key(cfg))
        except ValueError as exc:
            raise DbError(f"{self.path}: refusing to store {exc}") from None
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
