"""The one place that replaces files: every write that a reader or a crash must see whole (a
temporary file in the same folder, fsync, rename, fsync of the folder) and every rename of a
transaction of moves; and where the project's data packages are."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from .errors import MIOpenKernelsError

__all__ = ["atomic_copy", "atomic_path", "atomic_write", "fsync_dir", "new_file_mode",
           "package_dir", "replace", "tmp_prefix"]


def package_dir(package: str) -> Path:
    """The folder of one of the project's data packages (`miopenkernels.dbs`,
    `miopenkernels.kernels`), from its module's location: importlib.resources would import
    zipfile and tempfile on the runtime's first call for the same answer."""
    import importlib

    file = importlib.import_module(package).__file__
    if file is None:
        raise MIOpenKernelsError(f"{package} is not installed as a folder; reinstall "
                                 "miopenkernels")
    return Path(file).parent


def tmp_prefix(path: Path) -> str:
    """Temporary files of `path` are `.<name>.<pid>.*.tmp`: a cleaner can tell whose they are."""
    return f".{path.name}.{os.getpid()}."


def new_file_mode() -> int:
    """The mode `open()` gives a new file under the current umask (0o644 under umask 022).

    Temporary files are created 0o600; the file they become must read like any other."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` reach the disk (or a power cut can bring the old file back)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def replace(src: str | Path, dest: str | Path, *, durable: bool = False) -> None:
    """Rename `src` over `dest` (same file system); `durable` also syncs `dest`'s folder."""
    os.replace(src, dest)
    if durable:
        fsync_dir(Path(dest).parent)


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


@contextlib.contextmanager
def atomic_path(path: Path, *, create: bool = True) -> Iterator[Path]:
    """A temporary path beside `path` to write; when the block ends without an error the file
    is synced and renamed over `path`, otherwise removed. `create=False` yields a name that does
    not exist yet (for writers that must create the file themselves, like SQLite)."""
    import tempfile  # here, not on the runtime's start-up path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=tmp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, new_file_mode())
    finally:
        os.close(fd)
    tmp = Path(name)
    try:
        if not create:
            tmp.unlink()
        yield tmp
        _fsync_file(tmp)
        replace(tmp, path, durable=True)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write `data` to `path` so that a reader or a crash sees the old file or the new one."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)


def atomic_copy(src: Path, dest: Path) -> None:
    """Copy `src` to `dest` with the same guarantee as `atomic_write`."""
    import shutil

    with atomic_path(dest) as tmp:
        shutil.copyfile(src, tmp)
