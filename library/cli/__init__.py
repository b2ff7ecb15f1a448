"""The `miopenkernels` command: a thin layer over the library and the builder.

Each sub-command lives in its own module with a `register(app)` function. Errors of the library
(`MIOpenKernelsError`) are caught once here: one line on stderr, the error's exit code.
"""

from __future__ import annotations

import importlib
import sys

import typer

from ..errors import MIOpenKernelsError

__all__ = ["app", "main"]

app = typer.Typer(
    name="miopenkernels",
    help="Build, package, install and use precompiled GPU kernels and MIOpen databases.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Order is the order of `--help`.
_COMMAND_MODULES = (
    "problem", "detect", "db", "build", "kdb", "package", "install", "matrix", "tune",
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        from .. import __version__

        typer.echo(__version__)
        raise typer.Exit()


for _name in _COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}").register(app)


def main(argv: list[str] | None = None) -> None:
    """Console entry point."""
    try:
        app(args=argv, standalone_mode=True)
    except MIOpenKernelsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)

