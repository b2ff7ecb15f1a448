"""The one error boundary of the command line, and the settings every command group shares.

A `MIOpenKernelsError` raised anywhere below a command becomes one `error: <message>` line on
stderr and the exit code of its class (`library/errors.py`). This happens here and nowhere else,
so that `main()`, `python -m miopenkernels` and typer's test runner behave the same.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from ..errors import MIOpenKernelsError

__all__ = ["new_app"]


class _Group(TyperGroup):
    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except MIOpenKernelsError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None


def new_app(name: str, help: str) -> typer.Typer:
    """A command group: plain help (paragraphs re-flowed, flags shown as flags), the boundary."""
    return typer.Typer(
        name=name,
        help=help,
        cls=_Group,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
