"""Say what a database file is from its bytes, and which target its name is for."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DbError, TargetError
from ..target import Target
from ._files import SQLITE_MAGIC, check_exists, check_sqlite_file, sqlite_errors
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


_ARCH_RE = re.compile(r"(gfx[0-9a-f]{3,}|sm_?\d{2,3}[0-9a-f]*)(?:_(\d+))?")
_AMD_ARCH = re.compile(r"^gfx[0-9a-f]{3,4}$")
_NV_ARCH = re.compile(r"^sm\d{2,3}$")


def target_from_name(name: str) -> Target | None:
    """The target a database file name is for: `gfx906_60.kdb`, `gfx90a6e.HIP.fdb.txt`,
    `fdb_gfx942130_HIP_sample.txt`; None when the name does not say."""
    for m in _ARCH_RE.finditer(Path(name).name.lower()):
        token, cu = m.group(1), m.group(2)
        try:
            if cu is not None and (_AMD_ARCH.match(token) or _NV_ARCH.match(token)):
                return Target(token, int(cu))
            return Target.from_basename(token.replace("_", ""))
        except TargetError:
            continue
    return None


def _sniff_sqlite(path: Path) -> tuple[str, str, str]:
    from .perfdb import sqlite_schema_version

    check_sqlite_file(path, "SQLite database")
    with sqlite_errors(path, "database"):
        conn = connect(path, readonly=True)
        try:
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


def _sniff_text(path: Path, head: bytes) -> tuple[str, str, str]:
    from .finddb import _parse_entry
    from .perfdb import config_from_text_key

    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut in the middle of a multi-byte character at the end of the head is fine.
        if exc.start < len(head) - 4:
            return "unknown", "", "binary file, neither SQLite nor text"
        text = head[: exc.start].decode("utf-8")
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            return "unknown", "", "text without '<key>=<value>' lines"
        first = value.split(";", 1)[0]
        if re.match(r"^\d+-\d+-", key):
            try:
                _, version = _parse_entry(first)
                return "finddb", version, f"FindDb text, format {version}"
            except ValueError:
                if ":" in first:
                    return ("perfdb-legacy-text", "",
                            "legacy text PerfDb (.pdb.txt, FindDb-style keys)")
                return "unknown", "", "text with problem keys but unreadable values"
        try:
            config_from_text_key(key)
        except ValueError:
            return "unknown", "", "text whose keys are not MIOpen problem keys"
        return "perfdb-text", "", "text PerfDb (.db.txt)"
    name = path.name
    if name.endswith((".fdb.txt", ".ufdb.txt")):
        return "finddb", "", "empty FindDb text"
    if name.endswith((".db.txt", ".udb.txt", ".pdb.txt")):
        return "perfdb-text", "", "empty text PerfDb"
    return "unknown", "", "empty text file"


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
