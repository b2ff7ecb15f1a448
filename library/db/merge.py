"""Merge database shards (from tuning runs on several machines) into one file, deterministically:
the same shards in any order give the same bytes.

FindDb: the union of solutions per problem key; where shards measured the same solver, the
fastest measurement is kept; solutions are written fastest first (ties by solver name) and lines
by key. PerfDb: per (config, solver), the shard that sorts last by file name (then by full path)
wins, so a re-tuned shard named later overrides an earlier one; lines are written by key and
solvers by name. An output file that already exists is merged in as the first shard (so nothing
it holds is lost, and a shard overrides it), unless `replace` says to overwrite it; merges into
the same folder at once take the output's lock (`<output>.lock`, that of every database writer)
in turn, so each keeps what the others wrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import DbError
from ._lock import file_lock
from .finddb import FindDbFile, FindDbRecord, Solution
from .perfdb import PerfDbFile, text_key
from .sniff import sniff

__all__ = ["merge_finddb", "merge_perfdb", "merge_shards", "shard_order"]


def shard_order(paths: Iterable[Path | str]) -> list[Path]:
    """Shards in the order merges apply them: by file name, then by resolved path."""
    return sorted((Path(p) for p in paths), key=lambda p: (p.name, str(p.resolve())))


def _better(a: Solution, b: Solution) -> bool:
    return (a.time, a.workspace, a.algorithm, a.time_text) < \
        (b.time, b.workspace, b.algorithm, b.time_text)


def merge_finddb(shards: Iterable[FindDbFile]) -> FindDbFile:
    """One FindDb: fastest measurement per (key, solver), records by key."""
    best: dict[str, dict[str, Solution]] = {}
    for shard in shards:
        for record in shard:
            per_solver = best.setdefault(record.key, {})
            for sol in record.solutions:
                old = per_solver.get(sol.solver)
                if old is None or _better(sol, old):
                    per_solver[sol.solver] = sol
    out = FindDbFile()
    for key in sorted(best):
        sols = sorted(best[key].values(), key=lambda s: (s.time, s.solver))
        out.put(FindDbRecord(key, tuple(sols)))
    return out


def merge_perfdb(shards: Iterable[PerfDbFile]) -> PerfDbFile:
    """One PerfDb: later shards win per (config, solver); give shards in `shard_order`."""
    merged: dict[Any, dict[str, str]] = {}
    for shard in shards:
        for cfg, entries in shard.records.items():
            merged.setdefault(cfg, {}).update(entries)
    out = PerfDbFile()
    for cfg in sorted(merged, key=text_key):
        out.records[cfg] = dict(sorted(merged[cfg].items()))
    return out


def merge_shards(paths: Iterable[Path | str], out_dir: Path | str, *,
                 basename: str | None = None, perfdb_format: str = "text",
                 replace: bool = False) -> dict[str, Any]:
    """Merge FindDb and PerfDb shards into `out_dir/<basename>.HIP.fdb.txt` and
    `<basename>.db.txt` (or `.db` with perfdb_format='sqlite'). An existing output is merged
    with (its records kept unless a shard overrides them) unless `replace`. Returns a report."""
    if perfdb_format not in ("text", "sqlite"):
        raise DbError(f"PerfDb output format {perfdb_format!r} is not 'text' or 'sqlite'")
    ordered = shard_order(paths)
    if not ordered:
        raise DbError("no shards to merge")
    finds: list[FindDbFile] = []
    perfs: list[PerfDbFile] = []
    bases = set()
    for path in ordered:
        found = sniff(path)
        if found.kind == "finddb":
            finds.append(FindDbFile.read(path))
        elif found.kind.startswith("perfdb"):
            perfs.append(PerfDbFile.read(path))
        else:
            raise DbError(f"{path} is a {found.kind} file ({found.detail}); only FindDb and "
                          "PerfDb shards can be merged")
        if found.basename:
            bases.add(found.basename)
    if basename is None:
        if len(bases) != 1:
            said = ", ".join(sorted(bases)) or "none"
            raise DbError(f"cannot tell one target from the shard names (found: {said}); "
                          "pass --basename, e.g. gfx90a6e")
        basename = bases.pop()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"basename": basename, "shards": [str(p) for p in ordered],
                              "outputs": []}
    resolved = {p.resolve() for p in ordered}
    # Each output is read, merged and replaced under its lock, so that merges into the same
    # folder at once each merge with what the one before wrote: no record is lost.
    if finds:
        dest = out / f"{basename}.HIP.fdb.txt"
        with file_lock(dest):
            kept = _existing(dest, replace, resolved, "finddb")
            merged = merge_finddb(([FindDbFile.read(dest)] if kept else []) + finds)
            merged.write(dest)
        report["outputs"].append({"path": str(dest), "kind": "finddb", "records": len(merged),
                                  "shards": len(finds), "merged_with_existing": kept})
    if perfs:
        suffix = ".db.txt" if perfdb_format == "text" else ".db"
        dest = out / f"{basename}{suffix}"
        with file_lock(dest):
            kept = _existing(dest, replace, resolved, "perfdb")
            pmerged = merge_perfdb(([PerfDbFile.read(dest)] if kept else []) + perfs)
            pmerged.write(dest)
        report["outputs"].append({"path": str(dest), "kind": "perfdb", "configs": len(pmerged),
                                  "entries": pmerged.entry_count, "shards": len(perfs),
                                  "merged_with_existing": kept})
    return report


def _existing(dest: Path, replace: bool, shards: set[Path], kind: str) -> bool:
    """Whether `dest` exists and is merged with (not when `replace`, or when it is a shard)."""
    if replace or not dest.exists() or dest.resolve() in shards:
        return False
    found = sniff(dest)
    if not found.kind.startswith(kind):
        raise DbError(f"{dest} exists and is a {found.kind} file ({found.detail}), not a "
                      f"{kind}; move it away or pass --replace to overwrite it")
    return True
