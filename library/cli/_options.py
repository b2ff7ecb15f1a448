"""Options that mean the same thing in every command: one name, one short form, one help text.

`--targets/-t` (globs over target names; `--target` is accepted too), `--out/-o`,
`--manifest/-m`, `--json`, `--wide`. Commands take them as `Annotated` types so the definition
lives here once.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import typer

__all__ = [
    "JsonFlag",
    "WideFlag",
    "ManifestsOption",
    "targets_option",
    "globs",
    "out_option",
    "PackageKind",
    "PerfDbFormat",
    "PerfDbFormats",
]

JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print JSON (for scripts) instead of text.")
]
WideFlag = Annotated[
    bool,
    typer.Option("--wide", help="Print every column in full, however wide the terminal."),
]
ManifestsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--manifest", "-m", metavar="NAME|FILE",
        help="Problem manifest: a name under dbs/manifests or a file; repeatable. "
             "Default: all of them.",
    ),
]


def targets_option(help: str, default: Any = None) -> Any:
    """`--targets/-t GLOBS`: comma-separated globs over target names ('gfx9*,sm90-132');
    repeatable. Commands take it as `list[str] | None` and read it with `globs()`."""
    return typer.Option(default, "--targets", "-t", "--target", metavar="GLOBS", help=help)


def globs(values: list[str] | None) -> str | None:
    """The values of a repeated `--targets` as one comma-separated pattern (None: not given)."""
    return ",".join(values) if values else None


def out_option(help: str, default: Any = ...) -> Any:
    """`--out/-o DIR`; required unless a default is given."""
    return typer.Option(default, "--out", "-o", metavar="DIR", help=help)


class PackageKind(str, Enum):
    """What `package` builds."""

    wheel = "wheel"
    conda = "conda"
    both = "both"


class PerfDbFormat(str, Enum):
    """On-disk format of a written PerfDb: MIOpen's text (`.db.txt`) or SQLite (`.db`)."""

    text = "text"
    sqlite = "sqlite"


class PerfDbFormats(str, Enum):
    """`PerfDbFormat`, or both side by side."""

    text = "text"
    sqlite = "sqlite"
    both = "both"
