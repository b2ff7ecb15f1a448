"""Content-addressed cache of compiled code objects.

The key of a job is the sha256 of everything that shapes its code object: the kernel source and
every include it reaches (for a Triton kernel: the kernels-package modules it imports and the
data files they name, `kernel_sources.source_files`), the compile options, the compiler's
identity and version (with its fixed flags; `triton <version>` for Triton kernels) and the arch
it compiles for. The CU count is not part of it, so targets that share an arch share objects,
and a kdb row's (name, args) maps onto exactly one key. Only checked code objects enter the
cache; an entry is written to a temporary file and renamed, so a crash never leaves a
half-written object under a valid key.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from miopenkernels._fsutil import atomic_write
from miopenkernels.compiler import (
    compile_arch,
    is_triton_job,
    job_compiler,
    source_digest,
    triton_arch,
)

__all__ = ["CACHE_ENV", "default_cache_dir", "CacheKeys", "ObjectCache"]

CACHE_ENV = "MIOPENKERNELS_CACHE"
# Bump when the meaning of a cached entry changes (what is hashed, what is stored).
_CACHE_FORMAT = "miopenkernels-object-cache-1"


def default_cache_dir() -> Path:
    """`$MIOPENKERNELS_CACHE`, else `$XDG_CACHE_HOME/miopenkernels/objects` (XDG_CACHE_HOME
    defaulting to `~/.cache`)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return root / "miopenkernels" / "objects"


class CacheKeys:
    """Cache keys for one build: reads each source once and asks each compiler its version once."""

    def __init__(self, kernels: str | Path | None = None) -> None:
        self.kernels = kernels
        self._sources: dict[str, str] = {}
        self._compilers: dict[str, str] = {}

    def source(self, kernel_file: str) -> str:
        if kernel_file not in self._sources:
            self._sources[kernel_file] = source_digest(kernel_file, self.kernels)
        return self._sources[kernel_file]

    def compiler(self, job: Any) -> str:
        compiler = job_compiler(job)
        if compiler.name not in self._compilers:
            self._compilers[compiler.name] = compiler.identity()
        return self._compilers[compiler.name]

    def key(self, job: Any) -> str:
        """The job's key: sha256 hex of source digest, options, compiler identity and arch."""
        parts = [
            _CACHE_FORMAT,
            f"source={self.source(job.kernel_file)}",
            f"kernel={job.kernel_file}:{job.kernel_name}",
            "options=" + "\0".join(job.options),
            f"compiler={self.compiler(job)}",
            # Triton takes a DbId (the compile arch's on NVIDIA), the C++ compilers the
            # targets.toml compile arch: targets that share one share their objects.
            f"arch={triton_arch(job.target) if is_triton_job(job) else compile_arch(job.target)}",
        ]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class ObjectCache:
    """A directory of code objects named by key: `<root>/<key[:2]>/<key>.co`."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser() if root else default_cache_dir()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.co"

    @property
    def triton_ir(self) -> Path:
        """The folder where Triton jobs share their IR between targets
        (compiler/triton_ir.py): beside the objects, never a key's folder (two characters)."""
        return self.root / "triton-ir"

    def get(self, key: str) -> bytes | None:
        """The cached object, or None."""
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            return None

    def __contains__(self, key: str) -> bool:
        return self.path(key).is_file()

    def put(self, key: str, blob: bytes) -> Path:
        """Store `blob` under `key` atomically (temporary file in the same folder, then rename)."""
        path = self.path(key)
        atomic_write(path, blob)
        return path
