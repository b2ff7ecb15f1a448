"""Install conda packages with py-rattler into a staging prefix (solve, download, link)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ..errors import IndexUnreachableError, InstallError, IntegrityError, MIOpenKernelsError
from .conda_archive import check_conda_archive
from .sources import Available

__all__ = ["stage_conda", "conda_meta_records"]


def stage_conda(channel: str, chosen: list[Available], stage: Path, cache: Path) -> list[Path]:
    """Solve `name ==version` of each chosen package from `channel` and install the result into
    `stage`; returns the conda-meta records written."""
    try:
        from rattler import Channel, install, solve
    except ImportError:
        raise InstallError("py-rattler is needed to install conda packages "
                           "(pip install py-rattler)") from None
    specs = [f"{a.package} =={a.version} {a.build}".strip() for a in chosen]
    url = channel if "://" in channel else Path(channel).resolve().as_uri()

    async def _run() -> None:
        records = await solve([Channel(url)], specs, platforms=["noarch"], virtual_packages=[])
        _check_local_hashes(records)
        await install(records, target_prefix=stage, cache_dir=cache, show_progress=False,
                      installed_packages=[])

    try:
        asyncio.run(_run())
    except MIOpenKernelsError:  # ours, from the checks before py-rattler reads a file
        raise
    except Exception as exc:  # rattler raises its own exception types
        text = str(exc).strip().splitlines()
        msg = text[0] if text else type(exc).__name__
        if "sha256" in str(exc).lower() or "hash" in str(exc).lower():
            raise IntegrityError(f"conda package from {channel}: {msg}") from None
        if "fetch" in str(exc).lower() or "repodata" in str(exc).lower():
            raise IndexUnreachableError(f"conda channel {channel}: {msg}") from None
        raise InstallError(f"conda install from {channel} failed: {msg}") from None
    return conda_meta_records(stage, [a.package for a in chosen])


def _check_local_hashes(records: list[Any]) -> None:
    """A package file in a local channel must match its repodata sha256 before it is read.

    py-rattler checks downloads; a file:// package it extracts as it stands, so a damaged one
    would fail later as an unreadable archive instead of as the hash mismatch it is.
    """
    import hashlib

    from .sources import MAX_PACKAGE_BYTES, open_regular

    for record in records:
        parsed = urlparse(str(record.url))
        if parsed.scheme != "file":
            continue
        path = Path(unquote(parsed.path))
        # A FIFO or a device named as a package is refused here, before py-rattler reads it.
        h, size = hashlib.sha256(), 0
        try:
            with open_regular(path, "conda package") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    size += len(chunk)
                    if size > MAX_PACKAGE_BYTES:
                        raise IntegrityError(f"conda package {path.name} is over "
                                             f"{MAX_PACKAGE_BYTES >> 30} GiB: not a kernel "
                                             "package")
                    h.update(chunk)
        except OSError as exc:
            raise IndexUnreachableError(f"conda package {path}: {exc.strerror or exc}") \
                from None
        check_conda_archive(path, record.name.normalized)
        if not record.sha256:
            continue
        want = bytes(record.sha256).hex()
        have = h.hexdigest()
        if have != want:
            raise IntegrityError(f"conda package {path.name}: sha256 {have} differs from the "
                                 f"channel's {want}; download it again or re-index the channel")


def conda_meta_records(prefix: Path, names: list[str]) -> list[Path]:
    """conda-meta/<name>-<version>-<build>.json of the named packages in `prefix`."""
    meta = prefix / "conda-meta"
    found = []
    for name in names:
        found += [p for p in sorted(meta.glob(f"{name}-*.json"))
                  if p.name[len(name) + 1:].count("-") == 1]
    return found
