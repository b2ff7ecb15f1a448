"""Shared output helpers: JSON for scripts, rich tables for people."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["console", "err_console", "print_json", "print_table", "human_bytes"]

console = Console()
err_console = Console(stderr=True)

# `--wide` prints at this width: every column whole, one line a row.
_WIDE = 10_000


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def print_table(table: Table, *, wide: bool = False) -> None:
    """Print a table at the terminal's width, or (`wide`) with nothing folded or cut."""
    if wide:
        Console(width=_WIDE, soft_wrap=True).print(table, crop=False)
    else:
        console.print(table)


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
