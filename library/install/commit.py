"""Move verified, staged files into a prefix as one step that is undone on any failure."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from .._fsutil import replace
from ..errors import InstallError, IntegrityError
from .manifest import check_relpath, inside

__all__ = ["commit_files"]


def _check_paths(stage: Path, prefix: Path, files: list[str]) -> None:
    """Before anything moves: every path stays inside the stage and the prefix, symlinks
    included, and every staged file is a regular file."""
    for rel in files:
        check_relpath(rel, "the package")
        src = stage / rel
        if src.is_symlink() or not src.is_file():
            raise IntegrityError(f"the package's {rel!r} is not a regular file in the stage "
                                 "(a link or a folder); nothing was installed")
        if not inside(stage, rel) or not inside(prefix, rel):
            raise IntegrityError(f"the package's {rel!r} leads outside {prefix} through a "
                                 "symbolic link; nothing was installed")


def commit_files(stage: Path, prefix: Path, files: list[str], obsolete: list[Path],
                 backup: Path) -> list[Path]:
    """Move `files` (relative to `stage`) into `prefix`, first moving `obsolete` paths (older
    versions' records) and any file about to be replaced into `backup`.

    `stage` and `backup` must be on the prefix's file system (renames, not copies). On failure
    every move is undone and InstallError is raised.
    """
    _check_paths(stage, prefix, files)
    done: list[tuple[Path, Path | None]] = []  # (installed path, its backup or None)
    moved_away: list[tuple[Path, Path]] = []
    try:
        for i, old in enumerate(obsolete):
            if old.exists():
                keep = backup / f"obsolete-{i}"
                keep.parent.mkdir(parents=True, exist_ok=True)
                replace(old, keep)
                moved_away.append((old, keep))
        for n, rel in enumerate(files):
            src, dest = stage / rel, prefix / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            saved = None
            if dest.exists():
                saved = backup / f"replaced-{n}"
                saved.parent.mkdir(parents=True, exist_ok=True)
                replace(dest, saved)
            done.append((dest, saved))
            replace(src, dest)
    except OSError as exc:
        for dest, saved in reversed(done):
            try:
                if dest.exists():
                    dest.unlink()
                if saved is not None:
                    replace(saved, dest)
            except OSError:
                pass
        for old, keep in reversed(moved_away):
            with contextlib.suppress(OSError):
                replace(keep, old)
        raise InstallError(f"moving files into {prefix} failed ({exc}); nothing was changed") \
            from None
    for _, keep in moved_away:
        if keep.is_dir():
            shutil.rmtree(keep, ignore_errors=True)
    return [prefix / rel for rel in files]
