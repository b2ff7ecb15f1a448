"""The `miopenkernels` command: a thin layer over the library and the builder.

Each sub-command lives in its own module with a `register(app)` function; options shared between
commands are defined once in `_options.py`, and library errors become `error: ...` and their exit
code in one place, `_app.py`.
"""

from __future__ import annotations

import importlib
import sys

import typer

from ._app import new_app

__all__ = ["app", "main"]

app = new_app(
    "miopenkernels",
    "Build, package, install and use precompiled GPU kernels and MIOpen databases.",
)

# Order is the order of `--help`.
_COMMAND_MODULES = (
    "problem", "detect", "db", "build", "kdb", "package", "install", "matrix", "tune",
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"miopenkernels {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, expose_value=True, callback=_print_version,
        help="Print the version and exit.",
    ),
) -> None:
    """Build, package, install and use precompiled GPU kernels and MIOpen databases."""


for _name in _COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}").register(app)


def main(argv: list[str] | None = None) -> None:
    """Console entry point."""
    try:
        app(args=argv, standalone_mode=True)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
