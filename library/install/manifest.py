"""Package manifests on disk: where they live, how to read them, sha256 of files.

Kept in the library (not the builder) because the installer and `miopenkernels verify` need it
on machines without build tools.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import IntegrityError

__all__ = [
    "DB_DIR",
    "MANIFEST_DIR",
    "MANIFEST_SCHEMA",
    "manifest_relpath",
    "sha256_file",
    "read_manifest",
    "installed_manifests",
]

DB_DIR = "share/miopen/db"
MANIFEST_DIR = "share/miopenkernels"
MANIFEST_SCHEMA = 1


def manifest_relpath(basename: str) -> str:
    return f"{MANIFEST_DIR}/{basename}.manifest.json"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest(path: Path) -> dict[str, Any]:
    """Read one manifest; a malformed one is an integrity failure of its package."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise IntegrityError(f"package manifest {path} is unreadable: {exc}") from None
    if not isinstance(data, dict) or "files" not in data or "target" not in data:
        raise IntegrityError(f"package manifest {path} lacks 'files' or 'target'")
    return data


def installed_manifests(prefix: Path) -> list[Path]:
    """Manifests of the kernel packages installed under `prefix`."""
    folder = Path(prefix) / MANIFEST_DIR
    return sorted(folder.glob("*.manifest.json")) if folder.is_dir() else []
