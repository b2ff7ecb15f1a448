"""The one error boundary of the command line, and the settings every command group shares.

A `MIOpenKernelsError` raised anywhere below a command becomes one `error: <message>` line on
stderr and the exit code of its class (`library/errors.py`). This happens here and nowhere else,
so that `main()`, `python -m miopenkernels` and typer's test runner behave the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import typer
from typer.core import TyperGroup

from ..errors import MIOpenKernelsError, MissingDependencyError

__all__ = ["new_app", "require_extra"]

# What the builder's commands import from the `[build]` extra (pyproject.toml), by the work
# that needs it: a runtime-only install lacks them all.
BUILD_MODULES = {
    "compile": ("triton", "msgpack"),  # Triton objects of the tensor-core targets, metadata
    "wheel": ("build", "hatchling", "wheel"),  # PEP 517 build of the data wheels, `wheel tags`
    "conda": ("rattler", "rattler_build"),  # conda packages and the channel index
    "nvrtc": ("cuda.bindings",),  # NVIDIA targets' kernels (NVRTC)
}


def _missing(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent package that fails, a broken __spec__
        return True


def require_extra(command: str, needs: Iterable[str], extra: str = "build") -> None:
    """MissingDependencyError, before any work, when `command` needs modules of `extra` that
    are not installed (keys of BUILD_MODULES); the message names the pip line to run."""
    missing = [m for need in needs for m in BUILD_MODULES[need] if _missing(m)]
    if missing:
        raise MissingDependencyError(
            f"'miopenkernels {command}' needs the [{extra}] extra ({', '.join(missing)} not "
            f"installed): pip install 'miopenkernels[{extra}]'")


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
