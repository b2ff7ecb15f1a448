"""Summaries of database files for people and scripts: kind, target, counts, integrity; and the
records of one problem. Runs with the runtime's dependencies alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..errors import DbError, MIOpenKernelsError
from ._files import immutable_read, sqlite_errors
from ._lock import connect
from ._text import Skipped, read_lines
from .finddb import FindDbReader, iter_records
from .kerneldb import KernelDb
from .perfdb import PerfDbFile, PerfDbTextReader, SqlitePerfDb, config_from_finddb_key
from .sniff import Sniffed, sniff

__all__ = ["inspect_file", "lookup_file"]


def _sqlite_summary(path: Path) -> tuple[dict[str, int], list[str]]:
    """({table: rows}, integrity problems) on a read-only connection."""
    with sqlite_errors(path, "database"):
        conn = connect(path, readonly=True, immutable=immutable_read(path))
        try:
            # Plain tables only: a virtual table's rows come from its module, not the file.
            names = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                "upper(substr(ltrim(sql), 1, 12)) = 'CREATE TABLE' ORDER BY name")]
            tables = {n: int(conn.execute(f"SELECT count(*) FROM `{n}`").fetchone()[0])
                      for n in names}
            result = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
        finally:
            conn.close()
    return tables, [] if result == ["ok"] else result


def _skipped(skipped: Any) -> dict[str, Any]:
    return {"count": skipped.count, "first": list(skipped.first)}


def _finddb(found: Sniffed, known: Collection[str]) -> dict[str, Any]:
    # Counted as the lines stream by: only the keys are held (for duplicates), not the records.
    skipped = Skipped(str(found.path))
    keys: set[str] = set()
    versions: set[str] = set()
    per_solver: Counter[str] = Counter()
    algorithms: Counter[str] = Counter()
    duplicates = 0
    served = 0
    for record, version in iter_records(read_lines(found.path, "FindDb"), str(found.path),
                                        skipped):
        versions.add(version)
        if record.key in keys:
            duplicates += 1
            continue
        keys.add(record.key)
        per_solver.update(s.solver for s in record.solutions)
        algorithms.update(s.algorithm for s in record.solutions)
        # A record is served when one of its solutions names a solver this runtime has: AMD's
        # files name MIOpen's solvers, so none of theirs is.
        served += any(s.solver in known for s in record.solutions)
    unknown = sorted(name for name in per_solver if name not in known)
    return {
        "version": "1.0" if "1.0" in versions else ("2.0" if versions else ""),
        "counts": {
            "records": len(keys),
            "solutions": sum(per_solver.values()),
            "solvers": len(per_solver),
            "skipped_lines": skipped.count,
            "duplicate_keys": duplicates,
            "algorithms": dict(sorted(algorithms.items())),
            "per_solver": dict(sorted(per_solver.items())),
            "solvers_not_in_this_runtime": len(unknown),
            "records_this_runtime_serves": served,
        },
        "solvers_not_in_this_runtime": unknown,
        "integrity": {"checked": "every line parsed (malformed lines are skipped, as MIOpen "
                                 "skips them)", "problems": [], "skipped": _skipped(skipped)},
    }


def _perfdb(found: Sniffed) -> dict[str, Any]:
    db = PerfDbFile.read(found.path)
    per_solver = Counter(s for e in db.records.values() for s in e)
    counts: dict[str, Any] = {
        "configs": len(db),
        "configs_without_entries": sum(1 for e in db.records.values() if not e),
        "entries": db.entry_count,
        "solvers": len(per_solver),
        "skipped_lines": db.skipped.count,
        "per_solver": dict(sorted(per_solver.items())),
    }
    problems: list[str] = []
    checked = "every line parsed (malformed lines are skipped, as MIOpen skips them)"
    if db.kind == "sqlite":
        tables, problems = _sqlite_summary(found.path)
        counts["tables"] = tables
        checked = "PRAGMA integrity_check and the type of every value"
    return {"version": db.schema or found.version, "counts": counts,
            "integrity": {"checked": checked, "problems": problems,
                          "skipped": _skipped(db.skipped)}}


def _kerneldb(found: Sniffed) -> dict[str, Any]:
    tables, problems = _sqlite_summary(found.path)
    with KernelDb(found.path) as db:
        entries = db.entries()
        problems += list(db.verify())
    return {
        "version": "",
        "counts": {
            "entries": len(entries),
            "kernels": len({e.kernel_name for e in entries}),
            "compressed": sum(e.compressed for e in entries),
            "stored_bytes": sum(e.stored_size for e in entries),
            "code_object_bytes": sum(e.size for e in entries),
            "tables": tables,
        },
        "integrity": {"checked": "PRAGMA integrity_check and md5 of every blob",
                      "problems": problems},
    }


def inspect_file(path: Path | str, known_solvers: Collection[str]) -> dict[str, Any]:
    """Kind, target, counts and integrity of one database file; a FindDb's solvers not in
    `known_solvers` (the runtime's registry) are counted apart.

    `integrity.ok` is False when SQLite or a blob's md5 reports a problem; an unreadable file
    raises DbError instead. Malformed text lines are skipped and counted, as MIOpen skips them.
    """
    found = sniff(path)
    if found.kind == "finddb":
        body = _finddb(found, known_solvers)
    elif found.kind.startswith("perfdb"):
        body = _perfdb(found)
    elif found.kind in ("kdb", "ukdb"):
        body = _kerneldb(found)
    else:
        raise DbError(f"{found.path} is not a MIOpen database ({found.detail}); give a FindDb, "
                      "PerfDb or KernelDb file")
    body["integrity"]["ok"] = not body["integrity"]["problems"]
    return {
        "path": str(found.path),
        "kind": found.kind,
        "version": body["version"],
        "target": found.target.to_dict() if found.target else None,
        "counts": body["counts"],
        **({"solvers_not_in_this_runtime": body["solvers_not_in_this_runtime"]}
           if "solvers_not_in_this_runtime" in body else {}),
        "integrity": body["integrity"],
    }


def _keys(query: str) -> list[tuple[str, Any]]:
    """(FindDb key, problem or None) of a query: a key is taken as written (every key MIOpen
    wrote, also those `ConvProblem` cannot rebuild); a driver line may name several."""
    from ..driver import parse_problems
    from ..problem import ConvProblem
    from ..problem_key import looks_like_key

    text = query.strip()
    if looks_like_key(text):
        try:
            return [(text, ConvProblem.from_key(text))]
        except MIOpenKernelsError:
            return [(text, None)]
    return [(p.key(), p) for p in parse_problems(text)]


def lookup_file(path: Path | str, query: str, index_dir: Path) -> dict[str, Any]:
    """Records of one file for a query: for a FindDb or PerfDb, an MIOpenDriver line or FindDb
    key (a driver line may name several directions); for a KernelDb, a kernel name or glob.
    Large files are read through their index kept in `index_dir` (the user db folder's),
    never whole."""
    import fnmatch

    from .perfdb import config_key, text_key

    found = sniff(path)
    results: list[dict[str, Any]] = []
    if found.kind in ("kdb", "ukdb"):
        with KernelDb(found.path) as kdb:
            for entry in kdb.entries():
                if fnmatch.fnmatchcase(entry.kernel_name, query) or entry.kernel_name == query:
                    results.append(entry.to_dict())
        return {"path": str(found.path), "kind": found.kind, "query": query,
                "results": results}
    keys = _keys(query)
    if found.kind == "finddb":
        # One process, a few keys: each a search of the file (or the kept index), none built.
        fdb = FindDbReader(found.path, index_dir, build_index=False)
        try:
            for key, _ in keys:
                record = fdb.get(key)
                results.append({"key": key, "found": record is not None,
                                "solutions": [s.to_dict() for s in record.solutions]
                                if record else []})
        finally:
            fdb.close()
    elif found.kind in ("perfdb-text", "perfdb-sqlite"):
        pdb: Any = (PerfDbTextReader(found.path, index_dir, build_index=False)
                    if found.kind == "perfdb-text"
                    else SqlitePerfDb(found.path, index_dir=index_dir))
        try:
            for key, problem in keys:
                cfg = config_key(problem) if problem is not None else config_from_finddb_key(key)
                entries = pdb.load(cfg)
                results.append({"key": key, "perfdb_key": text_key(cfg),
                                "found": bool(entries), "entries": entries})
        finally:
            pdb.close()
    elif found.kind == "perfdb-legacy-text":
        legacy = PerfDbFile.read(found.path)
        for key, problem in keys:
            cfg = config_key(problem) if problem is not None else config_from_finddb_key(key)
            entries = legacy.load(cfg)
            results.append({"key": key, "perfdb_key": text_key(cfg), "found": bool(entries),
                            "entries": entries})
    else:
        raise DbError(f"{found.path} is not a MIOpen database ({found.detail})")
    return {"path": str(found.path), "kind": found.kind, "query": query, "results": results}
