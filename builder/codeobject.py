"""Checks of code objects and of whole kernel databases.

The per-object check (AMDGPU ELF or cubin, right arch, kernel symbol) lives in the library
(`miopenkernels.codeobject`) so that the runtime can check a blob before loading it;
this module re-exports it and adds `verify_kdb`, which `miopenkernels kdb verify` runs: every
row's md5 and bzip2 stream, and that its code object is for the `-mcpu=` its args name and for
the arch of the file's basename.

A Triton row (`<file>.py.o`) must also carry launch metadata (codeobject.split_kdb_blob) for a
kernel the object defines, compiled under exactly the assumptions its args name (`--assume=`),
and, on AMD, its disassembly (llvm-objdump-19) must hold the arch's matrix instructions
(targets.toml `matrix`: v_mfma on CDNA, v_wmma on RDNA 3/4, for FP16/BF16 objects there, since
RDNA's wmma takes no FP32). Where llvm-objdump-19 is missing or does not know the arch (gfx950:
LLVM 19 predates it) that one check is skipped and the row's `note` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from miopenkernels.codeobject import (
    CodeObjectInfo,
    assumed_divisors,
    check_code_object,
    inspect_code_object,
    runs_on,
    split_kdb_blob,
)
from miopenkernels.errors import CodeObjectError, IntegrityError, TargetError
from miopenkernels.solvers.triton_common import no_matrix_kernels
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
    note: str = ""  # a check that could not run here, and why

    @property
    def ok(self) -> bool:
        return not self.error

    def to_dict(self) -> dict[str, Any]:
        return {"kernel_name": self.kernel_name, "kernel_args": self.kernel_args,
                "size": self.size, "arch": self.arch, "kernels": list(self.kernels),
                "ok": self.ok, "error": self.error, "error_kind": self.error_kind,
                "note": self.note}


def verify_kdb(path: str | Path) -> list[EntryCheck]:
    """Check every row of the kdb at `path`; one EntryCheck per row, in (name, args) order."""
    from miopenkernels.db.kerneldb import KernelDb, unpack_blob

    path = Path(path)
    file_arch = _arch_of_file(path)
    out = []
    with KernelDb(path) as db:
        # Each row read once, in one pass over the table (never a lookup per row through an
        # index that a damaged file may not agree with).
        for entry, stored in db.stored():
            name, args = entry.kernel_name, entry.kernel_args
            what = f"entry {name!r} (args {args!r})"
            try:
                blob = unpack_blob(stored, entry.uncompressed_size, entry.kernel_hash,
                                   f"{path}: kernel {name!r} (args {args!r})")
            except IntegrityError as exc:
                out.append(EntryCheck(name, args, entry.size, "", (), str(exc), "hash"))
                continue
            want = arch_of_args(args)
            note = ""
            try:
                blob, meta = split_kdb_blob(blob, what)
                info = inspect_code_object(blob, what)
                if want is None:
                    raise CodeObjectError(f"{what}: args do not end with -mcpu=<arch>")
                if not runs_on(info.arch, want):
                    raise CodeObjectError(f"{what}: code object is for {info.arch}, args say "
                                          f"-mcpu={want}")
                if file_arch and not runs_on(info.arch, file_arch):
                    raise CodeObjectError(f"{what}: code object is for {info.arch}, but "
                                          f"{path.name} is a {file_arch} database")
                if not info.kernels:
                    raise CodeObjectError(f"{what}: code object defines no kernel")
                if name.endswith(".py.o"):
                    note = _check_triton_row(blob, meta, info, args, what)
            except CodeObjectError as exc:
                out.append(EntryCheck(name, args, len(blob), want or "", (), str(exc),
                                      "code object"))
                continue
            out.append(EntryCheck(name, args, len(blob), info.arch, info.kernels, note=note))
    return out


_ASSUME_RE = re.compile(r"(?:^|\s)--assume=(\S*)")
# The first argument's type is the element type (an FP32 object on RDNA uses no wmma).
_FP32_SIG_RE = re.compile(r"(?:^|\s)--signature=[^:,\s]+:\*fp32\b")
_MATRIX_MNEMONIC = {"mfma": "v_mfma", "wmma": "v_wmma"}


def _check_triton_row(blob: bytes, meta: Any, info: CodeObjectInfo, args: str,
                      what: str) -> str:
    """Launch metadata and matrix instructions of a Triton row; returns a note (a check that
    could not run) or raises CodeObjectError."""
    if meta is None:
        raise CodeObjectError(f"{what}: Triton object without launch metadata")
    if meta.kernel not in info.kernels:
        raise CodeObjectError(f"{what}: launch metadata names {meta.kernel}, the object "
                              f"defines {', '.join(info.kernels)}")
    if not meta.threads_per_block:
        raise CodeObjectError(f"{what}: launch metadata gives no threads per block")
    m = _ASSUME_RE.search(args)
    named = {item.rpartition(":")[0]: int(item.rpartition(":")[2])
             for item in (m.group(1).split(",") if m else []) if item}
    if assumed_divisors(meta) != named:
        raise CodeObjectError(f"{what}: object compiled under assumptions "
                              f"{sorted(meta.assumptions)}, its args name {named or 'none'}")
    if info.vendor != "amd" or meta.kernel in no_matrix_kernels():
        return ""
    from miopenkernels.target import spec_for

    matrix = spec_for(info.arch).matrix
    mnemonic = _MATRIX_MNEMONIC.get(matrix)
    if mnemonic is None or (matrix == "wmma" and _FP32_SIG_RE.search(args)):
        return ""
    text, why = _disassemble(blob, info.arch)
    if text is None:
        return f"matrix instructions not checked: {why}"
    if mnemonic not in text:
        raise CodeObjectError(f"{what}: {info.arch} object holds no {mnemonic} instruction "
                              "(its matrix cores are unused)")
    return ""


def _disassemble(blob: bytes, arch: str) -> tuple[str | None, str]:
    """(llvm-objdump-19's disassembly, '') or (None, why not)."""
    import tempfile

    from miopenkernels._proc import run_tool
    from miopenkernels.errors import CompileError

    with tempfile.TemporaryDirectory(prefix="mk-dis-") as tmp:
        path = Path(tmp) / "object.co"
        path.write_bytes(blob)
        try:
            proc = run_tool(["llvm-objdump-19", "-d", f"--mcpu={arch}", str(path)],
                            what=f"llvm-objdump-19 -d ({arch})", error=CompileError,
                            timeout=120)
        except CompileError as exc:
            first = (exc.log or str(exc)).strip().splitlines()
            why = next((ln for ln in first if "not" in ln.lower()), str(exc))
            return None, f"llvm-objdump-19 cannot disassemble {arch} ({why[:160]})"
    return proc.stdout, ""


def check_kdb_target(path: str | Path, target: Target) -> int:
    """Raise CodeObjectError unless every row of the kdb at `path` holds a code object for
    `target`'s arch (what the packager checks before shipping a kdb); the number of rows."""
    from miopenkernels.db.kerneldb import KernelDb, unpack_blob

    path = Path(path)
    rows = 0
    with KernelDb(path) as db:
        for entry, stored in db.stored():
            blob = unpack_blob(stored, entry.uncompressed_size, entry.kernel_hash,
                               f"{path}: kernel {entry.kernel_name!r} "
                               f"(args {entry.kernel_args!r})")
            check_code_object(blob, target.arch,
                              what=f"{path.name} entry {entry.kernel_name!r} "
                                   f"(args {entry.kernel_args!r})")
            rows += 1
    return rows
