"""Checks of code objects and of whole kernel databases.

The per-object check (AMDGPU ELF or cubin, right arch, kernel symbol) lives in the library
(`miopenkernels.codeobject`) so that the runtime can check a blob before loading it;
this module re-exports it and adds `verify_kdb`, which `miopenkernels kdb verify` runs: every
row's md5 and bzip2 stream, and that its code object is for the `-mcpu=` its args name and for
the arch of the file's basename.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from miopenkernels.codeobject import (
    CodeObjectInfo,
    check_code_object,
    inspect_code_object,
)
from miopenkernels.errors import CodeObjectError, IntegrityError, TargetError
from miopenkernels.target import Target

__all__ = ["check_code_object", "inspect_code_object", "CodeObjectInfo", "EntryCheck",
           "verify_kdb", "check_kdb_target", "arch_of_args"]

_MCPU_RE = re.compile(r"(?:^|\s)-mcpu=(\S+)\s*$")


def arch_of_args(kernel_args: str) -> str | None:
    """The arch a kdb row's args end with (` -mcpu=gfx90a` -> 'gfx90a'), features dropped."""
    m = _MCPU_RE.search(kernel_args)
    return m.group(1).split(":", 1)[0] if m else None


def _arch_of_file(path: Path) -> str | None:
    stem = path.name.split(".", 1)[0]
    try:
        return Target.from_basename(stem).arch
    except TargetError:
        return None


@dataclass(frozen=True)
class EntryCheck:
    """The verdict on one kdb row: `error` is empty when the row is sound."""

    kernel_name: str
    kernel_args: str
    size: int
    arch: str
    kernels: tuple[str, ...]
    error: str = ""
    error_kind: str = ""  # 'hash' | 'code object' | ''

    @property
    def ok(self) -> bool:
        return not self.error

    def to_dict(self) -> dict[str, Any]:
        return {"kernel_name": self.kernel_name, "kernel_args": self.kernel_args,
                "size": self.size, "arch": self.arch, "kernels": list(self.kernels),
                "ok": self.ok, "error": self.error, "error_kind": self.error_kind}


def verify_kdb(path: str | Path) -> list[EntryCheck]:
    """Check every row of the kdb at `path`; one EntryCheck per row, in (name, args) order."""
    from miopenkernels.db.kerneldb import KernelDb

    path = Path(path)
    file_arch = _arch_of_file(path)
    out = []
    with KernelDb(path) as db:
        for entry in db.entries():
            name, args = entry.kernel_name, entry.kernel_args
            what = f"entry {name!r} (args {args!r})"
            try:
                blob = db.load(name, args)
            except IntegrityError as exc:
                out.append(EntryCheck(name, args, entry.size, "", (), str(exc), "hash"))
                continue
            assert blob is not None
            want = arch_of_args(args)
            try:
                info = inspect_code_object(blob, what)
                if want is None:
                    raise CodeObjectError(f"{what}: args do not end with -mcpu=<arch>")
                if info.arch != want:
                    raise CodeObjectError(f"{what}: code object is for {info.arch}, args say "
                                          f"-mcpu={want}")
                if file_arch and info.arch != file_arch:
                    raise CodeObjectError(f"{what}: code object is for {info.arch}, but "
                                          f"{path.name} is a {file_arch} database")
                if not info.kernels:
                    raise CodeObjectError(f"{what}: code object defines no kernel")
            except CodeObjectError as exc:
                out.append(EntryCheck(name, args, len(blob), want or "", (), str(exc),
                                      "code object"))
                continue
            out.append(EntryCheck(name, args, len(blob), info.arch, info.kernels))
    return out


def check_kdb_target(path: str | Path, target: Target) -> int:
    """Raise CodeObjectError unless every row of the kdb at `path` holds a code object for
    `target`'s arch (what the packager checks before shipping a kdb); the number of rows."""
    from miopenkernels.db.kerneldb import KernelDb

    path = Path(path)
    rows = 0
    with KernelDb(path) as db:
        for entry in db.entries():
            blob = db.load(entry.kernel_name, entry.kernel_args)
            assert blob is not None
            check_code_object(blob, target.arch,
                              what=f"{path.name} entry {entry.kernel_name!r} "
                                   f"(args {entry.kernel_args!r})")
            rows += 1
    return rows
