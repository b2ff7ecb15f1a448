"""Say what a database file is from its bytes, and which target its name is for."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from .._record import dataclass
from ..errors import DbError, TargetError
from ..target import Target, target_from_name
from ._files import (
    SQLITE_MAGIC,
    check_exists,
    check_sqlite_file,
    check_tables,
    immutable_read,
    sqlite_errors,
)
from ._lock import connect

__all__ = ["Sniffed", "sniff", "target_from_name", "KINDS"]

KINDS = (
    "finddb",  # text FindDb, version 2.0 or 1.0
    "perfdb-sqlite",  # version = schema 1.1.0 / 1.0.0 / pre-1.0.0
    "perfdb-text",  # <base>.db.txt
    "perfdb-legacy-text",  # pre-SQLite <base>.cd.pdb.txt, FindDb-style keys
    "kdb",
    "ukdb",
    "unknown",
)
_HEAD_BYTES = 1 << 16


@dataclass(frozen=True)
class Sniffed:
    """What a file is: `kind` (one of KINDS), format `version`, a `detail` line, the target."""

    path: Path
    kind: str
    version: str = ""
    detail: str = ""
    target: Target | None = None

    @property
    def basename(self) -> str | None:
        return self.target.basename if self.target else None

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "kind": self.kind, "version": self.version,
                "detail": self.detail,
                "target": self.target.to_dict() if self.target else None}


def _sniff_sqlite(path: Path) -> tuple[str, str, str]:
    from .perfdb import sqlite_schema_version

    check_sqlite_file(path, "SQLite database")
    with sqlite_errors(path, "database"):
        conn = connect(path, readonly=True, immutable=immutable_read(path))
        try:
            check_tables(conn, path, ("kern_db", "config", "perf_db"), "database")
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            if "kern_db" in tables:
                kind = "ukdb" if path.suffix == ".ukdb" else "kdb"
                return kind, "", "SQLite kernel database (table kern_db)"
            version = sqlite_schema_version(conn)
        finally:
            conn.close()
    if version is not None:
        return "perfdb-sqlite", version, f"SQLite PerfDb, schema {version}"
    return "unknown", "", f"SQLite database with tables: {', '.join(tables) or 'none'}"


_NAME_KINDS = (
    ((".fdb.txt", ".ufdb.txt"), "finddb"),
    ((".pdb.txt",), "perfdb-legacy-text"),
    ((".db.txt", ".udb.txt"), "perfdb-text"),
)
_DETAILS = {
    "finddb": "FindDb text",
    "perfdb-text": "text PerfDb (.db.txt)",
    "perfdb-legacy-text": "legacy text PerfDb (.pdb.txt, FindDb-style keys)",
}
_LINES_SEEN = 64


def _line_kind(key: str, value: str) -> tuple[str, str] | None:
    """(kind, FindDb version) one data line reads as; None for a malformed line."""
    from .finddb import parse_value
    from .perfdb import config_from_text_key, parse_entries

    if re.match(r"^\d+-\d+-", key):
        try:
            return "finddb", parse_value(key, value)[1]
        except ValueError:
            pass
        try:
            if parse_entries(value):
                return "perfdb-legacy-text", ""
        except ValueError:
            pass
        return None
    try:
        config_from_text_key(key)
        parse_entries(value)
    except ValueError:
        return None
    return "perfdb-text", ""


def _sniff_text(path: Path, head: bytes) -> tuple[str, str, str]:
    """The kind of a text file from its name and its first lines together: a malformed line
    (MIOpen skips it) never decides, and a name that says FindDb or PerfDb wins whenever the
    content has such lines."""
    from ._text import split_line

    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut in the middle of a multi-byte character at the end of the head is fine.
        if exc.start < len(head) - 4:
            return "unknown", "", "binary file, neither SQLite nor text"
        text = head[: exc.start].decode("utf-8")
    named = next((kind for ends, kind in _NAME_KINDS if path.name.endswith(ends)), None)
    seen: dict[str, int] = {}
    versions: set[str] = set()
    lines = text.splitlines()
    if len(head) == _HEAD_BYTES and lines:
        lines = lines[:-1]  # the last line may be cut
    data_lines = 0
    for raw in lines:
        try:
            kv = split_line(raw)
        except ValueError:
            data_lines += 1
            continue
        if kv is None:
            continue
        data_lines += 1
        found = _line_kind(*kv)
        if found is not None:
            seen[found[0]] = seen.get(found[0], 0) + 1
            if found[1]:
                versions.add(found[1])
        if sum(seen.values()) >= _LINES_SEEN:
            break
    kind = named if named in seen else (max(seen, key=lambda k: seen[k]) if seen else None)
    if kind is None:
        if named is not None and not data_lines:
            return named, "", f"empty {_DETAILS[named]}"
        if named is not None:
            return "unknown", "", f"{_DETAILS[named]} by its name, but no line reads as one"
        if data_lines:
            return "unknown", "", "text whose lines are not MIOpen database lines"
        return "unknown", "", "empty text file"
    if kind == "finddb":
        version = "1.0" if "1.0" in versions else "2.0"
        return kind, version, f"FindDb text, format {version}"
    return kind, "", _DETAILS[kind]


def sniff(path: Path | str) -> Sniffed:
    """What `path` is. DbError for a missing file, a Git LFS pointer or a broken SQLite file;
    kind 'unknown' for a readable file that is none of MIOpen's databases."""
    p = Path(path)
    check_exists(p, "database")
    with p.open("rb") as fh:
        head = fh.read(_HEAD_BYTES)
    if head.startswith(SQLITE_MAGIC):
        kind, version, detail = _sniff_sqlite(p)
    else:
        kind, version, detail = _sniff_text(p, head)
    try:
        target = target_from_name(p.name)
    except (TargetError, sqlite3.Error, DbError):
        target = None
    return Sniffed(p, kind, version, detail, target)
