"""Shared output helpers: JSON for scripts, rich tables for people, progress for both."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["console", "err_console", "print_json", "print_table", "human_bytes", "Progress",
           "note"]

console = Console()
err_console = Console(stderr=True)

# `--wide` prints at this width: every column whole, one line a row.
_WIDE = 10_000
# Without a terminal, a progress line at every this many percent of the work, and at least
# every _LOG_SECONDS: a CI log then tells progress from a hang.
_LOG_STEP = 10
_LOG_SECONDS = 60.0


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


def note(text: str) -> None:
    """One line on stderr, printed as written (no markup: `[build]` stays), flushed."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class Progress:
    """Progress of a long command on stderr (stdout stays for the table or `--json`).

    On a terminal: a transient bar. Otherwise (a CI log, `> log 2>&1`): one flushed line at
    each `_LOG_STEP` percent and at least every `_LOG_SECONDS`, with counts and elapsed time,
    and `step` lines (one per target) as they come.
    """

    def __init__(self, command: str, unit: str, *, terminal: bool | None = None) -> None:
        self.command = command
        self.unit = unit
        self.start = time.monotonic()
        self.terminal = err_console.is_terminal if terminal is None else terminal
        self._bar: Any = None
        self._task: Any = None
        self._logged_step = -1
        self._logged_at = self.start

    def elapsed(self) -> str:
        return f"{time.monotonic() - self.start:.1f} s"

    def __enter__(self) -> Progress:
        if self.terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn(self.unit), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=err_console, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.unit, total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    def update(self, done: int, total: int) -> None:
        """`done` of `total` units."""
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total)
            return
        now = time.monotonic()
        step = done * 100 // total // _LOG_STEP if total else 100 // _LOG_STEP
        if step > self._logged_step or now - self._logged_at >= _LOG_SECONDS:
            self._logged_step = max(step, self._logged_step)
            self._logged_at = now
            pct = f" ({done * 100 // total}%)" if total else ""
            note(f"{self.command}: {done}/{total} {self.unit}{pct}, {self.elapsed()}")

    def step(self, text: str) -> None:
        """One line of finished work (a target): kept above the bar, or a log line."""
        line = f"{self.command}: {text}, {self.elapsed()}"
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False)
        else:
            note(line)

