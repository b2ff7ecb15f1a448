"""Summaries of database files for people and scripts: kind, target, counts, integrity.

Tooling, not the run-time path: SQLite files are summarised through sqlite-utils.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import DbError
from ._files import sqlite_errors
from ._lock import connect
from .finddb import FindDbFile
from .kerneldb import KernelDb
from .perfdb import PerfDbFile
from .sniff import Sniffed, sniff

__all__ = ["inspect_file", "lookup_file"]


def _sqlite_summary(path: Path) -> tuple[dict[str, int], list[str]]:
    """({table: rows}, integrity problems) through sqlite-utils on a read-only connection."""
    import sqlite_utils

    with sqlite_errors(path, "database"):
        conn = connect(path, readonly=True)
        try:
            db = sqlite_utils.Database(conn)
            tables = {name: db.table(name).count for name in db.table_names()}
            result = [row[0] for row in db.execute("PRAGMA integrity_check").fetchall()]
        finally:
            conn.close()
    return tables, [] if result == ["ok"] else result


def _finddb(found: Sniffed) -> dict[str, Any]:
    db = FindDbFile.read(found.path)
    solutions = [s for r in db for s in r.solutions]
    return {
        "version": db.version,
        "counts": {
            "records": len(db),
            "solutions": len(solutions),
            "solvers": len({s.solver for s in solutions}),
            "algorithms": dict(sorted(Counter(s.algorithm for s in solutions).items())),
        },
        "integrity": {"checked": "every line parsed", "problems": []},
    }


def _perfdb(found: Sniffed) -> dict[str, Any]:
    db = PerfDbFile.read(found.path)
    counts: dict[str, Any] = {
        "configs": len(db),
        "entries": db.entry_count,
        "solvers": len({s for e in db.records.values() for s in e}),
    }
    problems: list[str] = []
    checked = "every line parsed"
    if db.kind == "sqlite":
        tables, problems = _sqlite_summary(found.path)
        counts["tables"] = tables
        checked = "PRAGMA integrity_check"
    return {"version": db.schema or found.version, "counts": counts,
            "integrity": {"checked": checked, "problems": problems}}


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


def inspect_file(path: Path | str) -> dict[str, Any]:
    """Kind, target, counts and integrity of one database file.

    `integrity.ok` is False when SQLite or a blob's md5 reports a problem; malformed text or an
    unreadable file raises DbError instead.
    """
    found = sniff(path)
    if found.kind == "finddb":
        body = _finddb(found)
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
        "integrity": body["integrity"],
    }


def lookup_file(path: Path | str, query: str) -> dict[str, Any]:
    """Records of one file for a query: for a FindDb or PerfDb, an MIOpenDriver line or FindDb
    key (a driver line may name several directions); for a KernelDb, a kernel name or glob."""
    import fnmatch

    from ..problem import ConvProblem

    found = sniff(path)
    results: list[dict[str, Any]] = []
    if found.kind in ("kdb", "ukdb"):
        with KernelDb(found.path) as kdb:
            for entry in kdb.entries():
                if fnmatch.fnmatchcase(entry.kernel_name, query) or entry.kernel_name == query:
                    results.append(entry.to_dict())
        return {"path": str(found.path), "kind": found.kind, "query": query,
                "results": results}
    problems = ConvProblem.parse(query)
    if found.kind == "finddb":
        fdb = FindDbFile.read(found.path)
        for p in problems:
            record = fdb.get(p)
            results.append({"key": p.key(), "found": record is not None,
                            "solutions": [s.to_dict() for s in record.solutions]
                            if record else []})
    elif found.kind.startswith("perfdb"):
        pdb = PerfDbFile.read(found.path)
        for p in problems:
            entries = pdb.load(p)
            results.append({"key": p.key(), "perfdb_key": p.perfdb_text_key(),
                            "found": bool(entries), "entries": entries})
    else:
        raise DbError(f"{found.path} is not a MIOpen database ({found.detail})")
    return {"path": str(found.path), "kind": found.kind, "query": query, "results": results}
