"""Shared output helpers: JSON for scripts, rich tables for people."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.console import Console

from ..errors import MIOpenKernelsError

__all__ = ["console", "err_console", "print_json", "run_guarded"]

console = Console()
err_console = Console(stderr=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def run_guarded(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call `fn`; a library error becomes `error: <message>` on stderr and its exit code.

    Commands use this so that the same happens under `main()` and under typer's test runner.
    """
    try:
        return fn(*args, **kwargs)
    except MIOpenKernelsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
