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

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._fsutil import atomic_path
from .._lazy_re import lazy
from .._log import get_logger
from ..errors import DamagedDbError, DbError
from ._files import set_aside, sqlite_errors
from ._index import LineIndex
from ._lock import connect, locked_update
from ._text import CachedFile, Skipped, iter_lines, read_lines
from .perfdb_config import (
    CONFIG_COLUMNS,
    ConfigKey,
    check_config,
    check_entry,
    config_from_finddb_key,
    config_from_text_key,
    config_key,
    parse_entries,
    text_key,
)
from .perfdb_config import _finddb_key_fields as _finddb_key_fields  # tests read it here
from .perfdb_sqlite import (
    _COLS,
    CONFIG_INDEX_SQL,
    SCHEMA_SQL,
    SqlitePerfDb,
    _statements,
    sqlite_schema_version,
)

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
    "parse_entries",
    "config_from_finddb_key",
]

_LEGACY_KEY = lazy(r"^[0-9]+-[0-9]+-")


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
        return cls.parse(read_lines(p, "PerfDb"), str(p), p, legacy=legacy)

    @classmethod
    def parse(cls, text: str | Iterable[str | None], source: str = "<text>",
              path: Path | None = None,
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
        for attempt in range(2):
            try:
                self._store_user(cfg, solver, params)
                return
            except DamagedDbError as exc:
                # A folder, a link out of the folder or a damaged file in the user PerfDb's
                # place: set aside and started again, as the FindDb side does (once).
                if attempt or not self._set_aside(exc):
                    raise

    def _store_user(self, cfg: ConfigKey, solver: str, params: str) -> None:
        path = self.user_path
        assert path is not None
        if self._user_text is None:
            with SqlitePerfDb(path, readonly=False) as db:
                db.store(cfg, solver, params)
            return

        def update(old: bytes | None) -> bytes:
            db = PerfDbFile.parse(old.decode(errors="replace"), str(path)) if old \
                else PerfDbFile()
            db.put(cfg, solver, params)
            return db.to_text().encode()

        locked_update(path, update)

    def _set_aside(self, exc: DbError) -> bool:
        """Rename the damaged user PerfDb out of the way (one warning); False when it cannot
        be."""
        assert self.user_path is not None
        try:
            dest = set_aside(self.user_path)
        except OSError as err:
            warnings.warn(f"{exc}; it could not be set aside ({err.strerror or err})",
                          stacklevel=4)
            return False
        self._warned = True
        if dest is not None:
            warnings.warn(f"{exc}; set aside as {dest.name}, a new user PerfDb is started",
                          stacklevel=4)
        return True

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
