"""PerfDb: the tuned parameters of each (problem, solver), in MIOpen's SQLite and text formats.

SQLite `<base>.db` (system) and `<base>_1.1.0.udb` (user) carry MIOpen's schema exactly: a `config`
table (one row per problem, UNIQUE over every column but id) and `perf_db(solver, config, params)`
UNIQUE on (solver, config). The text format `<base>.db.txt` (user `<base>.HIP.<ver>.udb.txt`) has
one line per problem: the `x`-joined config key, then `solver:params;...`. Also read: the old 1.0.0
SQLite schema (perf_db rows per arch and CU count) and the pre-SQLite `.cd.pdb.txt` text format,
whose key is the FindDb key. User and system entries merge; the user's wins per solver.

Every value is type-checked where it is read (TEXT where MIOpen stores text, integers where it
stores numbers) and where it is written (nothing SQLite cannot hold, nothing the text format
cannot carry). A system file of any size is read per problem: SQLite through an index on
`perf_db.config` (files written here carry one; a foreign read-only file gets one of its own,
kept beside the user databases), text through a `LineIndex`.
"""

from __future__ import annotations

import re
import sqlite3
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .._fsutil import atomic_path
from .._lazy_re import lazy
from .._log import get_logger
from ..errors import DamagedDbError, DbError, MIOpenKernelsError
from ._files import check_sqlite_file, sqlite_errors
from ._index import LineIndex, file_stamp, index_path
from ._lock import (
    attach,
    connect,
    create_sqlite,
    locked_update,
    retry_busy,
    write_transaction,
)
from ._text import CachedFile, Skipped, iter_lines, read_text

log = get_logger(__name__)

__all__ = [
    "CONFIG_COLUMNS",
    "ConfigKey",
    "SCHEMA_SQL",
    "PerfDbFile",
    "PerfDbTextReader",
    "SqlitePerfDb",
    "CONFIG_INDEX_SQL",
    "check_config",
    "check_entry",
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
# Not MIOpen's: a lookup by config must not scan perf_db (MIOpen's UNIQUE index starts with
# solver). Files written here carry it; MIOpen ignores an index it did not create.
CONFIG_INDEX_SQL = "CREATE INDEX IF NOT EXISTS `idx_perf_db_config` ON perf_db(config)"
_TEXT_FIELDS = ("layout", "data_type", "direction")
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1
_INT_TEXT = lazy(r"-?[0-9]+")
_WHERE = " AND ".join(f"c.{c} = ?" for c in CONFIG_COLUMNS)
# The text key of a config row, computed by SQLite (for the kept index of a foreign file).
_KEY_SQL = " || 'x' || ".join([*CONFIG_COLUMNS[3:], "layout", "data_type", "direction"])
_BAD_TYPES = " OR ".join([*(f"typeof({c}) != 'text'" for c in CONFIG_COLUMNS[:3]),
                          *(f"typeof({c}) != 'integer'" for c in CONFIG_COLUMNS[3:])])
_COLS = ", ".join(f"c.{c}" for c in CONFIG_COLUMNS)


def config_key(problem: Any) -> ConfigKey:
    """The config tuple of a ConvProblem (or of a config dict)."""
    cfg = problem if isinstance(problem, dict) else problem.perfdb_config()
    return tuple(cfg[c] for c in CONFIG_COLUMNS)


def text_key(cfg: ConfigKey) -> str:
    """The text PerfDb key: int fields, then layout, data type, direction, joined by `x`."""
    # CONFIG_COLUMNS is layout, data_type, direction, then the int fields in text-key order.
    return "x".join([*map(str, cfg[3:]), cfg[0], cfg[1], cfg[2]])


def config_from_text_key(key: str) -> ConfigKey:
    """Inverse of `text_key`; ValueError says what is wrong. Integers may be negative (MIOpen
    wrote keys holding `-5`)."""
    parts = key.split("x")
    if len(parts) != len(CONFIG_COLUMNS):
        raise ValueError(f"key has {len(parts)} 'x'-separated fields, expected "
                         f"{len(CONFIG_COLUMNS)}")
    ints, (layout, dtype, direction) = parts[:-3], parts[-3:]
    if not all(_INT_TEXT.fullmatch(p) for p in ints):
        raise ValueError("the first 21 key fields must be integers")
    if direction not in ("F", "B", "W"):
        raise ValueError(f"direction {direction!r} is not F, B or W")
    row: dict[str, Any] = dict(zip(_TEXT_COLUMNS, (int(p) for p in ints), strict=True))
    row.update(layout=layout, data_type=dtype, direction=direction)
    cfg = tuple(row[c] for c in CONFIG_COLUMNS)
    check_config(cfg, "key")
    return cfg


def check_config(cfg: ConfigKey, where: str) -> ConfigKey:
    """`cfg` itself when every field has MIOpen's type and fits SQLite and the text key;
    ValueError naming `where` and the field otherwise."""
    if len(cfg) != len(CONFIG_COLUMNS):
        raise ValueError(f"{where}: {len(cfg)} config fields, expected {len(CONFIG_COLUMNS)}")
    for name, value in zip(CONFIG_COLUMNS, cfg, strict=True):
        if name in _TEXT_FIELDS:
            if not isinstance(value, str) or not value or \
                    any(ch in value for ch in "x=;:\r\n"):
                raise ValueError(f"{where}: config {name} is {value!r}, not a MIOpen name "
                                 "(TEXT without 'x', '=', ';', ':' or line breaks)")
        elif type(value) is not int:
            raise ValueError(f"{where}: config {name} is {value!r} "
                             f"({'NULL' if value is None else type(value).__name__}), not an "
                             "integer")
        elif not _INT_MIN <= value <= _INT_MAX:
            raise ValueError(f"{where}: config {name} = {value} does not fit SQLite's 64-bit "
                             "integers")
    return cfg


def check_entry(solver: Any, params: Any, where: str) -> None:
    """ValueError unless (solver, params) is TEXT that the text format can carry."""
    if not isinstance(solver, str) or not solver or any(c in solver for c in ":;=\r\n"):
        raise ValueError(f"{where}: solver {solver!r} is not a solver name (TEXT without ':', "
                         "';', '=' or line breaks)")
    if not isinstance(params, str) or any(c in params for c in ";\r\n"):
        shown = "NULL" if params is None else f"{type(params).__name__} {params!r}"[:80]
        raise ValueError(f"{where}: params of {solver} is {shown}, not TEXT without ';' or "
                         "line breaks")


def config_from_finddb_key(key: str) -> ConfigKey:
    """The config of a FindDb-style key (legacy `.pdb.txt`), read field by field: every key
    MIOpen wrote is accepted, also 'same' padding, clamped outputs and legacy 3-D layouts
    that `ConvProblem` rejects as inconsistent."""
    from ..problem import ConvProblem

    try:
        return config_key(ConvProblem.from_key(key))
    except MIOpenKernelsError:
        pass
    return _finddb_key_fields(key)


def _finddb_key_fields(key: str) -> ConfigKey:
    text, groups = key, 1
    m = re.search(r"_g([0-9]{1,10})$", text)
    if m:
        groups, text = int(m.group(1)), text[: m.start()]
    fields = text.split("-")
    direction = fields[-1]
    if direction not in ("F", "B", "W") or len(fields) < 15:
        raise ValueError(f"{key!r} is not a MIOpen problem key")
    dtype = fields[-2]
    filt = next((i for i, f in enumerate(fields) if "x" in f), None)
    if filt is None:
        raise ValueError(f"{key!r} is not a MIOpen problem key (no filter field)")
    dims = fields[filt].count("x") + 1
    try:
        nums = [int(f) for f in fields[:filt]]
        fil = [int(v) for v in fields[filt].split("x")]
        rest = fields[filt + 1:]
        k = int(rest[0])
        n = int(rest[1 + dims])
        pad, stride, dil = ([int(v) for v in f.split("x")] for f in rest[2 + dims: 5 + dims])
        bias = int(rest[5 + dims])
        layouts = rest[6 + dims:-2]
    except (ValueError, IndexError):
        raise ValueError(f"{key!r} is not a MIOpen problem key") from None
    if len(nums) != dims + 1 or not (len(pad) == len(stride) == len(dil) == dims) or \
            len(layouts) not in (1, 3):
        raise ValueError(f"{key!r} is not a MIOpen problem key")
    c, spatial = nums[0], nums[1:]
    d, h, w = spatial if dims == 3 else (1, *spatial)
    fd, fh, fw = fil if dims == 3 else (1, *fil)
    pd, ph, pw = pad if dims == 3 else (0, *pad)
    sd, sh, sw = stride if dims == 3 else (0, *stride)
    dd, dh, dw = dil if dims == 3 else (0, *dil)
    row = {"layout": layouts[0], "data_type": dtype, "direction": direction,
           "spatial_dim": dims, "in_channels": c, "in_h": h, "in_w": w, "in_d": d,
           "fil_h": fh, "fil_w": fw, "fil_d": fd, "out_channels": k, "batchsize": n,
           "pad_h": ph, "pad_w": pw, "pad_d": pd, "conv_stride_h": sh, "conv_stride_w": sw,
           "conv_stride_d": sd, "dilation_h": dh, "dilation_w": dw, "dilation_d": dd,
           "bias": bias, "group_count": groups}
    return check_config(tuple(row[c] for c in CONFIG_COLUMNS), key)


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
            self._conn = connect(self.path, readonly=readonly, wal=not readonly)
            if not readonly and not retry_busy(lambda: _tables(self._conn), self.path):
                with write_transaction(self._conn, self.path):
                    if not _tables(self._conn):
                        # Statement by statement: executescript would commit the transaction.
                        for statement in [*_statements(SCHEMA_SQL), CONFIG_INDEX_SQL]:
                            self._conn.execute(statement)
            self.schema = retry_busy(self._check_schema, self.path)
            self._indexed = _has_config_index(self._conn)

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
                attach(conn, self.path, "src", readonly=True)
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


_LEGACY_KEY = lazy(r"^[0-9]+-[0-9]+-")


def parse_entries(value: str) -> dict[str, str]:
    """{solver: params} of a text PerfDb value (`solver:params;...`; empty: no entries). The
    first entry of a solver wins, as in MIOpen's reader. ValueError says what is wrong."""
    entries: dict[str, str] = {}
    if not value:
        return entries
    for entry in value.split(";"):
        solver, sep, params = entry.partition(":")
        if not sep or not solver:
            raise ValueError(f"entry {entry!r} is not '<solver>:<params>'")
        entries.setdefault(solver, params)
    return entries


class PerfDbFile:
    """A whole PerfDb in memory, read from any format MIOpen used and written to SQLite or text.

    `kind` is 'sqlite', 'text' or 'legacy-text' (`.cd.pdb.txt`); `schema` is the SQLite schema
    version for SQLite files. Configs without entries are kept (text: a `key=` line); config
    ids read from SQLite are written back; malformed text lines are skipped and counted in
    `skipped`, never the whole file.
    """

    def __init__(self, path: Path | None = None, kind: str = "text", schema: str = "") -> None:
        self.path = path
        self.kind = kind
        self.schema = schema
        self.records: dict[ConfigKey, dict[str, str]] = {}
        self.ids: dict[ConfigKey, int] = {}
        self.skipped = Skipped(str(path) if path else "<text>")

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
                with sqlite_errors(p, "PerfDb"):
                    ids = db._conn.execute(f"SELECT id, {_COLS} FROM config c ORDER BY id")
                    for row in ids:
                        out.ids.setdefault(tuple(row[1:]), row[0])
                out.records.update(db.items())
            return out
        legacy = None
        if p.name.endswith(".pdb.txt"):
            legacy = True
        elif p.name.endswith((".db.txt", ".udb.txt")):
            legacy = False
        return cls.parse(read_text(p, "PerfDb"), str(p), p, legacy=legacy)

    @classmethod
    def parse(cls, text: str, source: str = "<text>", path: Path | None = None,
              legacy: bool | None = None) -> PerfDbFile:
        """Text PerfDb lines. FindDb-style keys (`C-H-W-...`) mark the legacy `.pdb.txt`
        format; `legacy` (from the file name) decides, else the first well-formed line does.
        A line of the other format is skipped and counted."""
        out = cls(path, "text")
        out.skipped = Skipped(source)
        for line in iter_lines(text, source, out.skipped):
            is_legacy = bool(_LEGACY_KEY.match(line.key))
            if legacy is None:
                legacy = is_legacy
            try:
                if is_legacy != legacy:
                    raise ValueError("a FindDb-style key in a text PerfDb" if is_legacy else
                                     "a text PerfDb key in a legacy .pdb.txt")
                cfg = config_from_finddb_key(line.key) if legacy else \
                    config_from_text_key(line.key)
                entries = parse_entries(line.value)
            except ValueError as exc:
                out.skipped.add(line.number, f"bad PerfDb line ({exc})", line.raw)
                continue
            out.records.setdefault(cfg, entries)
        if legacy:
            out.kind = "legacy-text"
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

    def check(self) -> None:
        """DbError unless every config and entry can be written to SQLite and to text and read
        back the same (no NULL, no integer SQLite cannot hold, no `;` or line break)."""
        where = str(self.path) if self.path else "PerfDb"
        try:
            for cfg, entries in self.records.items():
                check_config(cfg, "config")
                for solver, params in entries.items():
                    check_entry(solver, params, text_key(cfg))
        except ValueError as exc:
            raise DbError(f"{where}: cannot convert: {exc}; fix the source database") from None

    # ------------------------------------------------------------------ writing
    def to_text(self) -> str:
        """The text PerfDb (`<base>.db.txt`), one line per config in this file's order; a
        config without entries is a `key=` line."""
        self.check()
        return "".join(
            text_key(cfg) + "=" + ";".join(f"{s}:{p}" for s, p in entries.items()) + "\n"
            for cfg, entries in self.records.items()
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

    def _config_ids(self) -> list[int]:
        """The config ids to write: the ones read from SQLite when they are all there and
        distinct, else 1..N in this file's order."""
        ids = [self.ids.get(cfg) for cfg in self.records]
        if all(i is not None for i in ids) and len(set(ids)) == len(ids):
            return [int(i) for i in ids if i is not None]
        return list(range(1, len(self.records) + 1))

    def write_sqlite(self, path: Path) -> None:
        """A fresh SQLite file with MIOpen's schema and an index on perf_db.config; same
        records give the same bytes."""
        self.check()
        with atomic_path(path) as tmp:
            conn = connect(tmp, readonly=False)
            try:
                conn.execute("PRAGMA journal_mode=DELETE")
                conn.execute("BEGIN")
                for statement in [*_statements(SCHEMA_SQL), CONFIG_INDEX_SQL]:
                    conn.execute(statement)
                marks = ", ".join("?" * len(CONFIG_COLUMNS))
                for cid, (cfg, entries) in zip(self._config_ids(), self.records.items(),
                                               strict=True):
                    conn.execute(f"INSERT INTO config (id, {', '.join(CONFIG_COLUMNS)}) "
                                 f"VALUES (?, {marks})", (cid, *cfg))
                    conn.executemany(
                        "INSERT INTO perf_db (solver, config, params) VALUES (?, ?, ?)",
                        [(s, cid, p) for s, p in entries.items()])
                conn.execute("COMMIT")
            finally:
                conn.close()


class PerfDbTextReader:
    """A read-only text PerfDb (`<base>.db.txt`) of any size, answered per problem through a
    `LineIndex`; a malformed line is skipped, as MIOpen skips it."""

    def __init__(self, path: Path, index_dir: Path | None = None, *,
                 build_index: bool = True) -> None:
        self.path = path
        self._index = LineIndex(path, index_dir, build=build_index)
        self.skipped = self._index.skipped

    def load(self, problem: Any) -> dict[str, str]:
        cfg = problem if isinstance(problem, tuple) else config_key(problem)
        for offset, line in self._index.lines(text_key(cfg)):
            try:
                return parse_entries(line.split("=", 1)[1])
            except ValueError as exc:
                self.skipped.add(self._index.line_number(offset), str(exc), line)
        return {}

    def close(self) -> None:
        self._index.close()


def _read_text_or_empty(path: Path) -> PerfDbFile:
    return PerfDbFile.read(path)


class PerfDb:
    """The system PerfDb and the user PerfDb of one target, merged per solver (user wins).

    Either side may be SQLite (`.db`, `.udb`) or text (`.db.txt`, `.udb.txt`). `store` writes
    the user side only: one SQLite transaction, or lock + atomic replace for text. The system
    file is read per problem through an index (kept in `index_dir`, default `index/` beside
    the user PerfDb, where the file has none of its own).
    """

    def __init__(self, system: Path | str | None = None, user: Path | str | None = None,
                 index_dir: Path | str | None = None) -> None:
        self.system_path = Path(system) if system is not None else None
        self.user_path = Path(user) if user is not None else None
        if index_dir is None and self.user_path is not None:
            index_dir = self.user_path.parent / "index"
        self.index_dir = Path(index_dir) if index_dir is not None else None
        self._system: SqlitePerfDb | PerfDbTextReader | None = None
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

    def _system_db(self) -> SqlitePerfDb | PerfDbTextReader | None:
        if self._system is None and self.system_path is not None and self.system_path.exists():
            self._system = (PerfDbTextReader(self.system_path, self.index_dir)
                            if _is_text(self.system_path)
                            else SqlitePerfDb(self.system_path, index_dir=self.index_dir))
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
        try:
            check_config(cfg, "config")
            check_entry(solver, params, text_key(cfg))
        except ValueError as exc:
            raise DbError(f"{self.user_path}: refusing to store {exc}") from None
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
        if self._system is not None:
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
