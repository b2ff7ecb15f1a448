"""Options that mean the same thing in every command: one name, one short form, one help text.

`--targets/-t` (globs over target names; `--target` is accepted too), `--out/-o`,
`--manifest/-m`, `--json`, `--wide`. Commands take them as `Annotated` types so the definition
lives here once.
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import ArgumentError

__all__ = [
    "JsonFlag",
    "WideFlag",
    "ManifestsOption",
    "targets_option",
    "globs",
    "out_option",
    "check_path",
    "check_out_folder",
    "check_out_file",
    "path_option",
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


def check_path(path: Path | None, option: str) -> Path | None:
    """`path` unless it is over the system's length limits (the whole path, or one name in
    it): ArgumentError, before any work opens it."""
    if path is None:
        return None
    full = os.fsencode(os.path.abspath(path))
    try:
        path_max = os.pathconf("/", "PC_PATH_MAX")
        name_max = os.pathconf("/", "PC_NAME_MAX")
    except (OSError, ValueError):
        path_max, name_max = 4096, 255
    if len(full) >= path_max or any(len(part) > name_max for part in full.split(b"/")):
        raise ArgumentError(f"{option} {str(path)[:60]}... is over the system's path length "
                            f"limit ({path_max} bytes, {name_max} per name); give a shorter path")
    return path


def _file_above(path: Path) -> Path | None:
    """The nearest existing folder-to-be above `path` when it is a file (so `path` cannot be
    made), else None."""
    for parent in Path(os.path.abspath(path)).parents:
        _check_link(parent, "a folder above the output")
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def _check_link(path: Path, what: str) -> None:
    """ArgumentError where `path` is a symbolic link that leads nowhere (dangling, or a loop):
    nothing could be made there, and a write through it would land where the link points."""
    if not path.exists() and os.path.lexists(path):
        raise ArgumentError(f"{what} {path} is a symbolic link that leads nowhere (dangling, "
                            "or a loop); remove it or give another path")


def check_out_folder(path: Path | None, option: str = "--out") -> Path | None:
    """`path` as a folder to write into: not a file, not under a file, not a link that leads
    nowhere, not too long. ArgumentError up front, so that no work is done for output that
    cannot be written."""
    if check_path(path, option) is None:
        return None
    assert path is not None
    _check_link(path, option)
    if path.exists() and not path.is_dir():
        raise ArgumentError(f"{option} {path} is a file, not a folder; give a folder")
    above = _file_above(path)
    if above is not None:
        raise ArgumentError(f"{option} {path} is under {above}, which is a file, not a "
                            "folder; give a folder")
    return path


def check_out_file(path: Path | None, option: str = "the output") -> Path | None:
    """`path` as a file to write: not a folder, not under a file, not a link that leads
    nowhere, not too long."""
    if check_path(path, option) is None:
        return None
    assert path is not None
    _check_link(path, option)
    if path.is_dir():
        raise ArgumentError(f"{option} {path} is a folder; give a file name")
    above = _file_above(path)
    if above is not None:
        raise ArgumentError(f"{option} {path} is under {above}, which is a file, not a "
                            "folder; give a path in a folder")
    return path


def out_option(help: str, default: Any = ...) -> Any:
    """`--out/-o DIR`; required unless a default is given. Checked up front
    (`check_out_folder`)."""
    return typer.Option(default, "--out", "-o", metavar="DIR", help=help,
                        callback=lambda value: check_out_folder(value))


def path_option(*names: str, default: Any = None, help: str = "", metavar: str | None = None
                ) -> Any:
    """An option naming an existing input path, checked for length up front (`check_path`)."""
    return typer.Option(default, *names, help=help, metavar=metavar,
                        callback=lambda value: check_path(value, names[0]))


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
