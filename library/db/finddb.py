"""FindDb: the measured solutions of each problem, in MIOpen's text format.

Files: `<base>.HIP.fdb.txt` (system) and `<base>.HIP.<ver>.ufdb.txt` (user). One line per
problem, `<key>=<entry>;<entry>...`. Format 2.0 (written here) has `solver:time,workspace,algorithm`
entries; the legacy 1.0 format, still read, has `algorithm:solver,time,workspace,kcache_algo,
kcache_config`. Lookup takes the user record when there is one, else the system record (no merge),
as MIOpen does. Times keep the text they were read with, so unchanged lines round-trip byte for
byte; new times are written like MIOpen's stream output (6 significant digits).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DbError
from ._lock import atomic_write, locked_update
from ._text import CachedFile, iter_lines, malformed, read_text

__all__ = [
    "Solution",
    "FindDbRecord",
    "FindDbFile",
    "FindDb",
    "format_time",
    "problem_key",
]

_ALGO_PREFIX = "miopenConvolution"


def format_time(ms: float) -> str:
    """A time as MIOpen writes it (C++ stream default: 6 significant digits), e.g. `0.0391`."""
    return f"{ms:.6g}"


def problem_key(problem: Any) -> str:
    """The FindDb key of a problem object (anything with `.key()`) or of a key string."""
    if isinstance(problem, str):
        return problem.strip()
    return str(problem.key())


@dataclass(frozen=True)
class Solution:
    """One measured solver for one problem."""

    solver: str
    time: float  # milliseconds
    workspace: int  # bytes
    algorithm: str
    time_text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.time_text:
            object.__setattr__(self, "time_text", format_time(self.time))

    def to_text(self) -> str:
        """The 2.0 entry: `solver:time,workspace,algorithm`."""
        return f"{self.solver}:{self.time_text},{self.workspace},{self.algorithm}"

    def to_dict(self) -> dict[str, Any]:
        return {"solver": self.solver, "time_ms": self.time, "workspace": self.workspace,
                "algorithm": self.algorithm}


def _sorted(solutions: Iterable[Solution]) -> tuple[Solution, ...]:
    # Stable: equal times keep the order they were measured or read in.
    return tuple(sorted(solutions, key=lambda s: s.time))


@dataclass(frozen=True)
class FindDbRecord:
    """The solutions of one problem key, fastest first."""

    key: str
    solutions: tuple[Solution, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "solutions", _sorted(self.solutions))

    @property
    def best(self) -> Solution:
        return self.solutions[0]

    def solution(self, solver: str) -> Solution | None:
        return next((s for s in self.solutions if s.solver == solver), None)

    def to_line(self) -> str:
        return f"{self.key}=" + ";".join(s.to_text() for s in self.solutions)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "solutions": [s.to_dict() for s in self.solutions]}


def _number(text: str, what: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} {text!r} is not a non-negative number")
    return value


def _parse_entry(entry: str) -> tuple[Solution, str]:
    """(solution, format version) of one `id:values` entry; ValueError says what is wrong."""
    ident, sep, values = entry.partition(":")
    if not sep or not ident:
        raise ValueError(f"entry {entry!r} is not '<id>:<values>'")
    fields = values.split(",")
    if len(fields) == 3 and not ident.startswith(_ALGO_PREFIX):
        time_text, ws, algo = fields
        version = "2.0"
        solver = ident
    elif ident.startswith(_ALGO_PREFIX) and len(fields) >= 5:
        # 1.0: algorithm:solver,time,workspace,kcache_algo,kcache_network_config
        solver, time_text, ws = fields[0], fields[1], fields[2]
        algo = ident
        version = "1.0"
    else:
        raise ValueError(
            f"entry {entry!r} is neither 'solver:time,workspace,algorithm' (2.0) nor "
            "'algorithm:solver,time,workspace,kcache_algo,kcache_config' (1.0)"
        )
    if not solver or not algo.startswith(_ALGO_PREFIX):
        raise ValueError(f"entry {entry!r} has no solver or no miopenConvolution* algorithm")
    time = _number(time_text, "time")
    if not ws.isdigit():
        raise ValueError(f"workspace {ws!r} is not a byte count")
    return Solution(solver, time, int(ws), algo, time_text), version


def parse_line(line: str, source: str = "<text>", number: int = 1) -> tuple[FindDbRecord, str]:
    """One FindDb line -> (record, '2.0' | '1.0')."""
    key, _, value = line.partition("=")
    versions = set()
    solutions = []
    for entry in value.split(";"):
        try:
            sol, version = _parse_entry(entry)
        except ValueError as exc:
            raise malformed(source, number, str(exc), line) from None
        solutions.append(sol)
        versions.add(version)
    if len(versions) > 1:
        raise malformed(source, number, "mixes 1.0 and 2.0 entries", line)
    return FindDbRecord(key, tuple(solutions)), versions.pop()


class FindDbFile:
    """One FindDb text file in memory: records in file order, keyed by problem key."""

    def __init__(self, path: Path | None = None,
                 records: dict[str, FindDbRecord] | None = None,
                 versions: Iterable[str] = ()) -> None:
        self.path = path
        self.records: dict[str, FindDbRecord] = dict(records or {})
        self.versions: set[str] = set(versions)

    @classmethod
    def parse(cls, text: str, source: str = "<text>", path: Path | None = None) -> FindDbFile:
        db = cls(path)
        for line in iter_lines(text, source):
            record, version = parse_line(line.raw, source, line.number)
            db.versions.add(version)
            # MIOpen's text lookup returns the first line with the key; later duplicates are dead.
            db.records.setdefault(record.key, record)
        return db

    @classmethod
    def read(cls, path: Path | str) -> FindDbFile:
        """Read a FindDb text file (2.0 or 1.0); DbError for a missing or malformed file."""
        p = Path(path)
        return cls.parse(read_text(p, "FindDb"), str(p), p)

    @property
    def version(self) -> str:
        """'2.0', '1.0', or '' for an empty file."""
        return "1.0" if "1.0" in self.versions else ("2.0" if self.versions else "")

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.records.values())

    def get(self, problem: Any) -> FindDbRecord | None:
        return self.records.get(problem_key(problem))

    def put(self, record: FindDbRecord) -> None:
        """Replace the record of its key (keeping the line's place) or append it."""
        self.records[record.key] = record

    def to_text(self) -> str:
        """The 2.0 text of every record, one line each, in file order."""
        return "".join(r.to_line() + "\n" for r in self.records.values())

    def write(self, path: Path | str | None = None) -> Path:
        """Write the 2.0 text atomically (for build tools; run-time writes use FindDb.store)."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise DbError("FindDb has no path to write to")
        atomic_write(target, self.to_text().encode())
        return target


def _read_or_empty(path: Path) -> FindDbFile:
    return FindDbFile.read(path)


class FindDb:
    """The system FindDb and the user FindDb of one target, as MIOpen layers them.

    `lookup` returns the user's record if the user file has one, else the system's. `store`
    writes only the user file, under its lock. The system file is read once; the user file is
    read again whenever another process changed it.
    """

    def __init__(self, system: Path | str | None = None, user: Path | str | None = None) -> None:
        self.system_path = Path(system) if system is not None else None
        self.user_path = Path(user) if user is not None else None
        self._system: FindDbFile | None = None
        self._user = (CachedFile(self.user_path, _read_or_empty, FindDbFile)
                      if self.user_path is not None else None)

    @classmethod
    def for_paths(cls, paths: Any) -> FindDb:
        """From a `config.Paths`: its system and user FindDb files."""
        return cls(paths.system_finddb, paths.user_finddb)

    @property
    def system(self) -> FindDbFile:
        if self._system is None:
            if self.system_path is None or not self.system_path.exists():
                self._system = FindDbFile(self.system_path)
            else:
                self._system = FindDbFile.read(self.system_path)
        return self._system

    @property
    def user(self) -> FindDbFile:
        return self._user.get() if self._user is not None else FindDbFile()

    def lookup(self, problem: Any) -> FindDbRecord | None:
        """The record of a problem (ConvProblem or key string): user first, else system."""
        key = problem_key(problem)
        return self.user.records.get(key) or self.system.records.get(key)

    def store(self, problem: Any, solutions: Iterable[Solution]) -> FindDbRecord:
        """Replace the user record of `problem` with `solutions` (sorted fastest first)."""
        if self.user_path is None:
            raise DbError("no user FindDb path: the system FindDb is never written at run time")
        record = FindDbRecord(problem_key(problem), tuple(solutions))
        if not record.solutions:
            raise DbError(f"refusing to store an empty FindDb record for {record.key}")
        path = self.user_path

        def update(old: bytes | None) -> bytes:
            db = FindDbFile.parse(old.decode(), str(path)) if old else FindDbFile()
            db.put(record)
            return db.to_text().encode()

        locked_update(path, update)
        return record
