"""Triton IR shared between targets: a job's TTIR made once per class of targets that make the
same one, and every other target of the class compiled from it.

A Triton compile starts in Python: the code generator walks the kernel's AST and runs Triton's
semantic layer on every operation, and the TTIR passes run on what it prints; then the
backend's stages (TTGIR, LLVM IR, PTX or AMDGCN, the binary). The builder compiles the same
jobs for many targets, and for Triton 3.6 the TTIR depends on the target only through:
- the backend (cuda or hip);
- its parsed options, which the code generator reads (dot precision defaults, FP8 types,
  overflow checks): all of them are in the key except `arch`, which it reads only to word a
  warning;
- on NVIDIA, whether the capability is 80 or more (the FP8 conversions it generates) and
  whether it is below 90 (the TTIR passes then lower tensor descriptors to pointers).
A job's TTIR is stored under a key of those and Triton's own hash of the source, signature,
constexprs and assumptions (`ASTSource.hash`), and a later compile with the same key starts
from it (`triton.compile` of a `.ttir` file runs the stages after TTIR). The objects are the
same bytes as those compiled from the source (tests/integration/test_triton_ir.py). With any
other Triton version nothing is shared: what decides the TTIR was read from 3.6.

Entries are written whole (`atomic_write`), so a reader sees a whole entry or none; one that
Triton cannot read is compiled from the source again and replaced.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .._fsutil import atomic_write

__all__ = ["IR_VERSIONS", "compile_through_ir_cache", "ir_key"]

IR_VERSIONS = ("3.6.0",)  # the Triton versions whose TTIR inputs are the key's
_FORMAT = "miopenkernels-triton-ir-1"
_MAX_BYTES = 64 << 20  # larger than any kernel's TTIR: an entry past it is not one


def ir_key(src: Any, target: Any, options: dict[str, Any], extra: str = "") -> str | None:
    """The key of the TTIR `triton.compile(src, target, options)` makes, or None where this
    Triton version or backend shares none. `extra`: anything else the caller's compile sets."""
    import triton
    from triton.compiler.compiler import make_backend

    if triton.__version__ not in IR_VERSIONS:
        return None
    if target.backend == "cuda":
        capability = int(target.arch)
        stage = f"cuda fp8-sm80={capability >= 80} descriptors-to-pointers={capability < 90}"
    elif target.backend == "hip":
        stage = "hip"
    else:
        return None
    parsed = make_backend(target).parse_options(dict(options))
    fields = sorted((name, repr(value)) for name, value in vars(parsed).items()
                    if name != "arch")
    text = "\n".join([_FORMAT, triton.__version__, src.hash(), stage, repr(fields), extra])
    return hashlib.sha256(text.encode()).hexdigest()


def _entry(path: Path) -> str | None:
    try:
        if path.stat().st_size > _MAX_BYTES:
            return None
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def compile_through_ir_cache(src: Any, target: Any, options: dict[str, Any], extra: str,
                             cache: Path, tmp: Path) -> Any:
    """`triton.compile(src, target, options)`, from the TTIR in `cache` where another target
    of the same key left it; else from the source, leaving its TTIR there."""
    import triton

    key = ir_key(src, target, options, extra)
    if key is None:
        return triton.compile(src, target=target, options=options)
    path = cache / key[:2] / f"{key}.ttir"
    text = _entry(path)
    if text is not None:
        ir = tmp / "kernel.ttir"
        ir.write_text(text)
        try:
            return triton.compile(str(ir), target=target, options=options)
        except Exception:  # noqa: BLE001, S110 - an entry Triton cannot read: from the source
            pass
    kernel = triton.compile(src, target=target, options=options)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, kernel.asm["ttir"])
    return kernel
