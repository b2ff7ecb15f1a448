"""MIOpen's three databases: FindDb (text), PerfDb (SQLite and text), KernelDb (SQLite).

Formats follow MIOpen byte for byte (FORMATS.md). Every reader rejects a bad file with one
DbError naming it; user-side writes go through `_lock` (file lock + atomic replace, or one SQLite
transaction); system files are never written at run time.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .finddb import FindDb, FindDbFile, FindDbRecord, Solution, format_time
    from .kerneldb import KernelDb, KernelEntry
    from .perfdb import PerfDb, PerfDbFile, SqlitePerfDb
    from .sniff import Sniffed, sniff, target_from_name

# Each name is imported from its module on first use, so that reading a FindDb does not import
# the KernelDb, PerfDb and sniffing code (the runtime's start-up).
_MODULES = {"FindDb": "finddb", "FindDbFile": "finddb", "FindDbRecord": "finddb",
            "Solution": "finddb", "format_time": "finddb", "PerfDb": "perfdb",
            "PerfDbFile": "perfdb", "SqlitePerfDb": "perfdb", "KernelDb": "kerneldb",
            "KernelEntry": "kerneldb", "Sniffed": "sniff", "sniff": "sniff",
            "target_from_name": "sniff"}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)

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
