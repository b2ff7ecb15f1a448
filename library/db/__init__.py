"""MIOpen's three databases: FindDb (text), PerfDb (SQLite and text), KernelDb (SQLite).

Formats follow MIOpen byte for byte (FORMATS.md). Every reader rejects a bad file with one
DbError naming it; user-side writes go through `_lock` (file lock + atomic replace, or one SQLite
transaction); system files are never written at run time.
"""

from __future__ import annotations

from .finddb import FindDb, FindDbFile, FindDbRecord, Solution, format_time
from .kerneldb import KernelDb, KernelEntry
from .perfdb import PerfDb, PerfDbFile, SqlitePerfDb
from .sniff import Sniffed, sniff, target_from_name

__all__ = [
    "FindDb",
    "FindDbFile",
    "FindDbRecord",
    "Solution",
    "format_time",
    "PerfDb",
    "PerfDbFile",
    "SqlitePerfDb",
    "KernelDb",
    "KernelEntry",
    "Sniffed",
    "sniff",
    "target_from_name",
]
