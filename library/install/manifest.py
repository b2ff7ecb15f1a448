"""Package manifests on disk: where they live, how to read them, sha256 of files.

Kept in the library (not the builder) because the installer and `miopenkernels verify` need it
on machines without build tools.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..errors import IntegrityError

__all__ = [
    "DB_DIR",
    "DB_SUFFIXES",
    "MANIFEST_DIR",
    "MANIFEST_SCHEMA",
    "manifest_relpath",
    "sha256_file",
    "check_relpath",
    "inside",
    "check_manifest",
    "read_manifest",
    "installed_manifests",
    "DATABASES_ONLY_MARK",
    "DATABASES_ONLY_WHEEL_TAG",
    "is_databases_only",
]

DB_DIR = "share/miopen/db"
# Suffixes of the system databases a package may carry, after the basename.
DB_SUFFIXES = (".kdb", ".HIP.fdb.txt", ".db", ".db.txt")
MANIFEST_DIR = "share/miopenkernels"
MANIFEST_SCHEMA = 1

# A databases-only package (no KernelDb: `package --from-dir` on a folder without one) keeps its
# target's package name and is marked where an index lists each file, so that an installer tells
# it from a package with kernels without fetching it: its conda build string is
# `<arch>_<cu>_databases_only_<number>` (with kernels: `<arch>_<cu>_<number>`), its wheel's build
# tag `0_databases_only` (with kernels: none).
DATABASES_ONLY_MARK = "databases_only"
DATABASES_ONLY_WHEEL_TAG = "0_" + DATABASES_ONLY_MARK


def is_databases_only(build: str) -> bool:
    """Whether a conda build string or a wheel build tag marks a databases-only package."""
    return DATABASES_ONLY_MARK in build


def manifest_relpath(basename: str) -> str:
    return f"{MANIFEST_DIR}/{basename}.manifest.json"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# A manifest is a few KiB; anything far bigger is not one.
MAX_MANIFEST_BYTES = 16 << 20


def check_relpath(rel: object, what: str) -> str:
    """`rel` if it is a relative POSIX path that stays inside its root; IntegrityError if not.

    Paths a package names are data: no absolute path, no `..`, no empty, `.` or NUL part, no
    backslash (a Windows separator that POSIX would keep in one name).
    """
    if not isinstance(rel, str) or not rel:
        raise IntegrityError(f"{what} names a path that is not a string: {rel!r}")
    parts = rel.split("/")
    if len(rel) > 1024 or any(len(p.encode("utf-8", "surrogatepass")) > 255 for p in parts):
        raise IntegrityError(f"{what} names a path too long for a file system: {rel[:80]!r}...")
    if (rel.startswith(("/", "~")) or "\\" in rel or "\0" in rel or ":" in parts[0]
            or any(p in ("..", ".", "") for p in parts)):
        raise IntegrityError(f"{what} names {rel!r}, a path outside the install prefix; the "
                             "package is not to be trusted: nothing was installed from it")
    return rel


def inside(root: Path, rel: str) -> bool:
    """Whether `root/rel`, following every symlink on the way that exists, stays in `root`."""
    base = os.path.realpath(root)
    real = os.path.realpath(os.path.join(base, rel))
    return real == base or real.startswith(base + os.sep)


def check_manifest(data: object, source: str) -> dict[str, Any]:
    """A manifest's shape and paths; IntegrityError (naming `source`) on the first problem."""
    if not isinstance(data, dict) or "files" not in data or "target" not in data:
        raise IntegrityError(f"package manifest {source} lacks 'files' or 'target'")
    if not isinstance(data["files"], dict) or not isinstance(data["target"], dict):
        raise IntegrityError(f"package manifest {source}: 'files' and 'target' must be objects")
    for rel, info in data["files"].items():
        check_relpath(rel, f"package manifest {source}")
        if not isinstance(info, dict) or not isinstance(info.get("sha256"), str):
            raise IntegrityError(f"package manifest {source}: entry {rel!r} has no sha256")
    return data


def read_manifest(path: Path) -> dict[str, Any]:
    """Read one manifest; a malformed one is an integrity failure of its package."""
    try:
        if Path(path).stat().st_size > MAX_MANIFEST_BYTES:
            raise IntegrityError(f"package manifest {path} is over {MAX_MANIFEST_BYTES >> 20} "
                                 "MiB: not a manifest")
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise IntegrityError(f"package manifest {path} is unreadable: {exc}") from None
    return check_manifest(data, str(path))


def installed_manifests(prefix: Path) -> list[Path]:
    """Manifests of the kernel packages installed under `prefix`."""
    folder = Path(prefix) / MANIFEST_DIR
    return sorted(folder.glob("*.manifest.json")) if folder.is_dir() else []
