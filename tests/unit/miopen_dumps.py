"""Rebuild real SQLite files from the sqlite3 dumps in testdata/miopen (only dumps are stored).

A dump holds sections: CREATE statements, then a `-header` row naming the columns of a
`config JOIN perf_db` listing, then `|`-separated rows. Each section becomes one database with
the dump's own schema and rows, so readers are tested against MIOpen's statements, not ours.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from testdata import MIOPEN as TESTDATA  # noqa: E402


@dataclass
class Section:
    schema: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    text_lines: list[str] = field(default_factory=list)  # derived text PerfDb lines, if any


def sections(name: str) -> list[Section]:
    out = [Section()]
    derived = False
    for line in (TESTDATA / name).read_text().splitlines():
        cur = out[-1]
        if line.startswith("# ----") or line.startswith("# ---- "):
            out.append(Section())
        elif line.startswith("# --- DERIVED"):
            derived = True
        elif line.startswith("#") or not line.strip():
            continue
        elif line.startswith("CREATE "):
            if cur.rows:
                out.append(Section())
            out[-1].schema.append(line)
        elif derived:
            cur.text_lines.append(line)
        elif line.startswith("id|"):
            cur.header = line.split("|")
        elif cur.header and line.count("|") == len(cur.header) - 1:
            cur.rows.append(line.split("|"))
    return [s for s in out if s.schema]


def build_sqlite(section: Section, dest: Path) -> Path:
    """A SQLite file with the section's schema; config rows deduplicated by id."""
    conn = sqlite3.connect(dest)
    for statement in section.schema:
        conn.execute(statement)
    config_cols = [r[1] for r in conn.execute("PRAGMA table_info(config)")]
    perf_cols = [r[1] for r in conn.execute("PRAGMA table_info(perf_db)")]
    seen = set()
    for row in section.rows:
        values = dict(zip(section.header, row, strict=True))
        if values["id"] not in seen:
            seen.add(values["id"])
            conn.execute(f"INSERT INTO config ({','.join(config_cols)}) VALUES "
                         f"({','.join('?' * len(config_cols))})",
                         [values[c] for c in config_cols])
        extra = [c for c in perf_cols if c not in ("id", "config")]
        conn.execute(f"INSERT OR IGNORE INTO perf_db (config, {','.join(extra)}) VALUES "
                     f"(?, {','.join('?' * len(extra))})",
                     [values["id"], *(values[c] for c in extra)])
    conn.commit()
    conn.close()
    return dest
