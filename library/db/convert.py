"""Convert between database formats: PerfDb SQLite <-> text (and legacy `.pdb.txt` -> either),
FindDb 1.0 -> 2.0. The destination's extension picks the output format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DbError
from .finddb import FindDbFile
from .perfdb import PerfDbFile
from .sniff import sniff

__all__ = ["convert"]


def convert(src: Path | str, dst: Path | str) -> dict[str, Any]:
    """Read `src` (any FindDb or PerfDb format) and write `dst`.

    PerfDb: `dst` ending in `.txt` gives the text format, `.db`/`.udb` SQLite with MIOpen's
    schema. FindDb: always the 2.0 text format. Malformed source lines are skipped, as MIOpen
    skips them, and counted in the report; a value the output cannot carry is a DbError and
    nothing is written. Returns a short report.
    """
    s, d = Path(src), Path(dst)
    if d.exists() and d.resolve() == s.resolve():
        raise DbError(f"{d} is the source file; write the conversion to another path")
    found = sniff(s)
    if found.kind == "finddb":
        if not d.name.endswith(".txt"):
            raise DbError(f"{d}: a FindDb converts to text only; name the output *.fdb.txt")
        fdb = FindDbFile.read(s)
        fdb.write(d)
        return {"source": str(s), "source_kind": f"finddb {fdb.version}", "dest": str(d),
                "dest_kind": "finddb 2.0", "records": len(fdb),
                "skipped_lines": fdb.skipped.count, "skipped": list(fdb.skipped.first)}
    if found.kind.startswith("perfdb"):
        if not (d.name.endswith(".txt") or d.suffix in (".db", ".udb")):
            raise DbError(f"{d}: name the output *.db / *.udb (SQLite) or *.db.txt (text)")
        pdb = PerfDbFile.read(s)
        pdb.write(d)
        kind = "perfdb-text" if d.name.endswith(".txt") else "perfdb-sqlite 1.1.0"
        return {"source": str(s), "source_kind": f"{found.kind} {found.version}".strip(),
                "dest": str(d), "dest_kind": kind, "configs": len(pdb),
                "entries": pdb.entry_count, "skipped_lines": pdb.skipped.count,
                "skipped": list(pdb.skipped.first)}
    raise DbError(f"{s} is a {found.kind} file ({found.detail}); only FindDb and PerfDb files "
                  "convert")
