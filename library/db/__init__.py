"""MIOpen's three databases: FindDb (text), PerfDb (SQLite and text), KernelDb (SQLite).

Formats follow MIOpen byte for byte (FORMATS.md). Every reader rejects a bad file with one
DbError naming it; user-side writes go through `_lock` (file lock + atomic replace, or one SQLite
transaction); system files are never written at run time.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# `sniff` is both a submodule and a function: importing the submodule binds the package
# attribute to the module, so the function is bound here, after it.
from .sniff import Sniffed, sniff, target_from_name

if TYPE_CHECKING:
    from .finddb import FindDb, FindDbFile, FindDbRecord, Solution, format_time
    from .kerneldb import KernelDb, KernelEntry
    from .perfdb import PerfDb, PerfDbFile, SqlitePerfDb

# Each other name is imported from its module on first use, so that reading a FindDb does not
# import the KernelDb and PerfDb code (the runtime's start-up).
_MODULES = {"FindDb": "finddb", "FindDbFile": "finddb", "FindDbRecord": "finddb",
            "Solution": "finddb", "format_time": "finddb", "PerfDb": "perfdb",
            "PerfDbFile": "perfdb", "SqlitePerfDb": "perfdb", "KernelDb": "kerneldb",
            "KernelEntry": "kerneldb"}


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
