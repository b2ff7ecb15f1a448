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
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .._log import get_logger
from .._record import dataclass, field
from ..errors import DbError
from ._files import open_regular, set_aside
from ._index import LineIndex
from ._lock import atomic_write, locked_update
from ._text import CachedFile, Skipped, iter_lines, malformed, raw_lines, read_lines, split_line

log = get_logger(__name__)

__all__ = [
    "Solution",
    "FindDbRecord",
    "FindDbFile",
    "FindDbReader",
    "FindDb",
    "parse_entry",
    "parse_value",
    "iter_records",
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


def _time(solution: Solution) -> float:
    return solution.time


def _sorted(solutions: Iterable[Solution]) -> tuple[Solution, ...]:
    # Stable: equal times keep the order they were measured or read in.
    sols = tuple(solutions)
    if all(a.time <= b.time for a, b in zip(sols, sols[1:], strict=False)):
        return sols
    return tuple(sorted(sols, key=_time))


@dataclass(frozen=True)
class FindDbRecord:
    """The solutions of one problem key, fastest first; `written` keeps the order they were
    given in (a line read from a file is written back byte for byte)."""

    key: str
    solutions: tuple[Solution, ...]
    written: tuple[Solution, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.written:
            object.__setattr__(self, "written", tuple(self.solutions))
        object.__setattr__(self, "solutions", _sorted(self.solutions))

    @property
    def best(self) -> Solution:
        return self.solutions[0]

    def solution(self, solver: str) -> Solution | None:
        return next((s for s in self.solutions if s.solver == solver), None)

    def to_line(self) -> str:
        return f"{self.key}=" + ";".join(s.to_text() for s in self.written)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "solutions": [s.to_dict() for s in self.solutions]}


def _number(text: str, what: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} {text!r} is not a non-negative number")
    return value


def parse_entry(entry: str) -> tuple[Solution, str]:
    """(solution, format version) of one `id:values` entry; ValueError says what is wrong.

    Any solver name MIOpen writes is accepted (`ConvWinograd3x3MultipassWrW<3-2>`, ...): the
    name is everything before the first `:`."""
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
    return _solution(solver, time, int(ws), algo, time_text), version


def _solution(solver: str, time: float, workspace: int, algorithm: str,
              time_text: str) -> Solution:
    """A Solution of checked fields, made without the frozen dataclass's per-field setattr."""
    sol = object.__new__(Solution)
    d = sol.__dict__
    d["solver"], d["time"], d["workspace"] = solver, time, workspace
    d["algorithm"], d["time_text"] = algorithm, time_text
    return sol


def parse_value(key: str, value: str) -> tuple[FindDbRecord, str]:
    """The record of one line's key and value -> (record, '2.0' | '1.0'); ValueError."""
    solutions = []
    version = ""
    ranked = True
    new = object.__new__
    last = 0.0
    for entry in value.split(";"):
        # Every lookup parses a line: a well-formed 2.0 entry, the common case, is taken here
        # in one go; anything else goes to parse_entry, which checks it and says what is wrong.
        solver, _, values = entry.partition(":")
        fields = values.split(",")
        if len(fields) == 3 and solver and not solver.startswith(_ALGO_PREFIX) and \
                fields[2].startswith(_ALGO_PREFIX) and fields[1].isdigit():
            try:
                time = float(fields[0])
            except ValueError:
                time = -1.0
            if 0.0 <= time < math.inf:
                sol = new(Solution)  # as _solution does, without the call
                d = sol.__dict__
                d["solver"], d["time"], d["workspace"] = solver, time, int(fields[1])
                d["algorithm"], d["time_text"] = fields[2], fields[0]
                v = "2.0"
            else:
                sol, v = parse_entry(entry)
                time = sol.time
        else:
            sol, v = parse_entry(entry)
            time = sol.time
        if v != version:
            if version:
                raise ValueError("mixes 1.0 and 2.0 entries")
            version = v
        if time < last:
            ranked = False
        last = time
        solutions.append(sol)
    written = tuple(solutions)
    fastest = written if ranked else tuple(sorted(written, key=_time))  # stable, as _sorted
    record = object.__new__(FindDbRecord)  # fields checked above: no __post_init__ pass
    d = record.__dict__
    d["key"], d["solutions"] = key, fastest
    # A 2.0 line is written back as it was; a 1.0 line converts to 2.0 fastest first.
    d["written"] = written if version == "2.0" else fastest
    return record, version


def parse_line(line: str, source: str = "<text>", number: int = 1) -> tuple[FindDbRecord, str]:
    """One FindDb line -> (record, '2.0' | '1.0'); DbError naming the file and line."""
    try:
        kv = split_line(line)
        if kv is None:
            raise ValueError("not a '<key>=<value>' line")
        return parse_value(*kv)
    except ValueError as exc:
        raise malformed(source, number, str(exc), line) from None


def iter_records(text: str | Iterable[str | None], source: str,
                 skipped: Skipped) -> Iterator[tuple[FindDbRecord, str]]:
    """(record, '2.0' | '1.0') of every well-formed line in file order, duplicates of a key
    too; malformed lines are counted in `skipped`. Nothing is held: a reader that only counts
    (`db inspect`) reads a file of any size in constant memory."""
    for line in iter_lines(text, source, skipped):
        try:
            yield parse_value(line.key, line.value)
        except ValueError as exc:
            skipped.add(line.number, str(exc), line.raw)


class FindDbFile:
    """One FindDb text file in memory: records in file order, keyed by problem key.

    Malformed lines are skipped and counted in `skipped`, as MIOpen skips them; for MIOpen's
    text lookup the first line of a key wins, so later duplicates are counted in `duplicates`.
    """

    def __init__(self, path: Path | None = None,
                 records: dict[str, FindDbRecord] | None = None,
                 versions: Iterable[str] = ()) -> None:
        self.path = path
        self.records: dict[str, FindDbRecord] = dict(records or {})
        self.versions: set[str] = set(versions)
        self.skipped = Skipped(str(path) if path else "<text>")
        self.duplicates = 0

    @classmethod
    def parse(cls, text: str | Iterable[str | None], source: str = "<text>",
              path: Path | None = None) -> FindDbFile:
        """Records of a FindDb's text, or of its lines as `_text.read_lines` gives them."""
        db = cls(path)
        db.skipped = Skipped(source)
        for record, version in iter_records(text, source, db.skipped):
            db.versions.add(version)
            if record.key in db.records:
                db.duplicates += 1
                continue
            db.records[record.key] = record
        return db

    @classmethod
    def read(cls, path: Path | str) -> FindDbFile:
        """Read a FindDb text file (2.0 or 1.0); DbError for a missing or non-text file."""
        p = Path(path)
        return cls.parse(read_lines(p, "FindDb"), str(p), p)

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


class FindDbReader:
    """A read-only FindDb of any size, answered per key through a `LineIndex` (the system
    FindDb at run time, `db lookup`): the file is never parsed whole. A line that does not
    parse is skipped, as MIOpen skips it, and counted in `skipped`."""

    def __init__(self, path: Path, index_dir: Path | None = None, *,
                 build_index: bool = True) -> None:
        self.path = path
        self._index = LineIndex(path, index_dir, build=build_index)
        self._cache: dict[str, FindDbRecord | None] = {}
        self.skipped = self._index.skipped

    def get(self, problem: Any) -> FindDbRecord | None:
        key = problem_key(problem)
        if key in self._cache:
            return self._cache[key]
        record = None
        for offset, line in self._index.lines(key):
            try:
                record = parse_value(key, line[len(key) + 1:])[0]
                break
            except ValueError as exc:
                number = self._index.line_number(offset)
                if self.skipped.count == 0:
                    log.warning("%s:%d: %s; the line is skipped, as MIOpen skips it",
                                self.path, number, exc)
                self.skipped.add(number, str(exc), line)
        self._cache[key] = record
        return record

    def __len__(self) -> int:
        return len(self._index)

    def close(self) -> None:
        self._index.close()


def _read_or_empty(path: Path) -> FindDbFile:
    return FindDbFile.read(path)


class FindDb:
    """The system FindDb and the user FindDb of one target, as MIOpen layers them.

    `lookup` returns the user's record if the user file has one, else the system's. `store`
    writes only the user file, under its lock. The system file, of any size, is read per key
    through an index kept in `index_dir` (default: `index/` beside the user FindDb); the user
    file is read again whenever another process changed it.
    """

    def __init__(self, system: Path | str | None = None, user: Path | str | None = None,
                 index_dir: Path | str | None = None) -> None:
        self.system_path = Path(system) if system is not None else None
        self.user_path = Path(user) if user is not None else None
        if index_dir is None and self.user_path is not None:
            index_dir = self.user_path.parent / "index"
        self.index_dir = Path(index_dir) if index_dir is not None else None
        self._system: FindDbReader | None = None
        self._user = (CachedFile(self.user_path, _read_or_empty, FindDbFile)
                      if self.user_path is not None else None)
        self._unknown_said = False

    @classmethod
    def for_paths(cls, paths: Any) -> FindDb:
        """From a `config.Paths`: its system and user FindDb files."""
        return cls(paths.system_finddb, paths.user_finddb)

    @property
    def system(self) -> FindDbReader | None:
        """The system FindDb, opened on first use; None when there is none."""
        if self._system is None and self.system_path is not None and \
                self.system_path.exists():
            self._system = FindDbReader(self.system_path, self.index_dir)
        return self._system

    def keys(self, max_system_bytes: int) -> list[str] | None:
        """Every key of the user and the system file, or None when the system file is larger
        than `max_system_bytes` (it is never read whole at run time beyond that size)."""
        out = [record.key for record in self.user]
        if self.system_path is not None and self.system_path.exists():
            if self.system_path.stat().st_size > max_system_bytes:
                return None
            with open_regular(self.system_path, "FindDb") as fh:
                for line in raw_lines(fh):
                    if line is None:
                        continue  # over the maximum line length: no record
                    key, sep, _ = line.partition(b"=")
                    if sep and key and not key.startswith(b"#"):
                        out.append(key.decode("utf-8", "replace").strip())
        return out

    @property
    def user(self) -> FindDbFile:
        """The user FindDb; one that cannot be read as text (garbage bytes, a Git LFS pointer)
        is set aside with one warning and reads as empty, so finds measure again."""
        if self._user is None:
            return FindDbFile()
        try:
            return self._user.get()
        except DbError as exc:
            self._set_aside(str(exc))
        try:
            return self._user.get() if self._user is not None else FindDbFile()
        except DbError:
            return FindDbFile()

    def _set_aside(self, why: str) -> None:
        """Rename the damaged user FindDb out of the way (kept for a look, never read again)."""
        assert self.user_path is not None
        try:
            dest = set_aside(self.user_path)
        except OSError as exc:
            warnings.warn(f"{why}; it could not be set aside ({exc.strerror or exc}): finds "
                          "are measured again and not recorded", stacklevel=4)
            self.user_path, self._user = None, None
            return
        if dest is not None:  # else another process set it aside first
            warnings.warn(f"{why}; set aside as {dest.name}, finds will be measured again",
                          stacklevel=4)

    def lookup(self, problem: Any) -> FindDbRecord | None:
        """The record of a problem (ConvProblem or key string): user first, else system."""
        key = problem_key(problem)
        record = self.user.records.get(key)
        if record is None and self.system is not None:
            record = self.system.get(key)
        return record

    def note_unknown_solvers(self, record: FindDbRecord, names: Iterable[str]) -> None:
        """Say once per database that it names solvers this runtime lacks (their entries stay
        in the file for MIOpen; `db inspect` counts them per solver)."""
        names = sorted(set(names))
        if not names or self._unknown_said:
            return
        self._unknown_said = True
        where = self.system_path if record.key not in self.user.records else self.user_path
        log.warning("%s names solvers this runtime does not implement (first: %s); their "
                    "entries are skipped here, `miopenkernels db inspect %s` counts them",
                    where, ", ".join(names), where)

    def store(self, problem: Any, solutions: Iterable[Solution]) -> FindDbRecord:
        """Replace the user record of `problem` with `solutions` (sorted fastest first)."""
        if self.user_path is None:
            raise DbError("no user FindDb path: the system FindDb is never written at run time")
        ranked = _sorted(solutions)
        record = FindDbRecord(problem_key(problem), ranked, ranked)
        if not record.solutions:
            raise DbError(f"refusing to store an empty FindDb record for {record.key}")
        self.user  # noqa: B018  (sets a damaged file aside first)
        path = self.user_path
        if path is None:
            raise DbError("the user FindDb is unusable (see the warning): nothing recorded")

        def update(old: bytes | None) -> bytes:
            db = (FindDbFile.parse(old.decode(errors="replace"), str(path)) if old
                  else FindDbFile())
            db.put(record)
            return db.to_text().encode()

        locked_update(path, update)
        return record

    def remove(self, problem: Any) -> None:
        """Delete the user record of `problem` (MIOPEN_FIND_ENFORCE=DB_CLEAN)."""
        if self.user_path is None or not self.user_path.exists():
            return
        key = problem_key(problem)
        path = self.user_path

        def update(old: bytes | None) -> bytes:
            db = (FindDbFile.parse(old.decode(errors="replace"), str(path)) if old
                  else FindDbFile())
            db.records.pop(key, None)
            return db.to_text().encode()

        locked_update(path, update)

    def close(self) -> None:
        if self._system is not None:
            self._system.close()
            self._system = None
