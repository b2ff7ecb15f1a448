"""Triton IR shared between targets: a job's TTIR made once per class of targets that make the
same one, and every other target of the class compiled from it.

A Triton compile starts in Python: the code generator walks the kernel's AST and runs Triton's
semantic layer on every operation, and the TTIR passes run on what it prints; then the
backend's stages (TTGIR, LLVM IR, PTX or AMDGCN, the binary). The builder compiles the same
jobs for many targets, and for Triton 3.6 the TTIR depends on the target only through:
- the backend (cuda or hip: its code-generation helpers, its libdevice);
- on NVIDIA, whether the capability is 80 or more (the FP8 conversions it generates) and
  whether it is below 90 (the TTIR passes then lower tensor descriptors to pointers);
- the parsed options the code generator reads: the dot precisions (allowed, default), the
  overflow checks and `debug`; and, only where a kernel names FP8 types or the vendor
  modules of `triton.language.extra` (`cuda`: `num_warps`; `hip`: the real-time counter,
  `arch`), the FP8 type lists, the FP8 accumulation default, `num_warps` and `arch`.
A job's TTIR is stored under a key of those and Triton's own hash of the source, signature,
constexprs and assumptions (`ASTSource.hash`), and a later compile with the same key starts
from it (`triton.compile` of a `.ttir` file runs the stages after TTIR). Whether a kernel
names the FP8 types or those modules is read from the text of every file it depends on
(`kernel_sources.source_files`) and from its signature: where it does, the key holds every
parsed option, as the options then shape the TTIR. The objects are the same bytes as those
compiled from the source (tests/integration/test_triton_ir.py). With any other Triton version
nothing is shared: what decides the TTIR was read from 3.6.

Entries are written whole (`atomic_write`), so a reader sees a whole entry or none; one that
Triton cannot read is compiled from the source again and replaced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._fsutil import atomic_write
from .._lazy_re import lazy

__all__ = ["IR_VERSIONS", "compile_through_ir_cache", "ir_key", "target_dependent"]

IR_VERSIONS = ("3.6.0",)  # the Triton versions whose TTIR inputs are the key's
_FORMAT = "miopenkernels-triton-ir-2"
_MAX_BYTES = 64 << 20  # larger than any kernel's TTIR: an entry past it is not one


# The parsed options Triton 3.6's code generator and language read for every kernel; the
# rest of what they read (FP8 type lists and accumulation, `num_warps`, `arch`) only for
# kernels whose text matches _TARGET_WORDS.
_READ_OPTIONS = frozenset({"allowed_dot_input_precisions", "default_dot_input_precision",
                           "sanitize_overflow", "debug"})
_TARGET_WORDS = lazy(r"fp8|float8|\bextra\s*\.\s*(?:cuda|hip)|\bextra\s+import\s+(?:cuda|hip)")


def target_dependent(texts: Iterable[str]) -> bool:
    """Whether kernel text in `texts` (its sources, its signature) names something whose TTIR
    may depend on any parsed option: FP8 types, `triton.language.extra.cuda` or `.hip`."""
    return any(_TARGET_WORDS.search(text) for text in texts)


def ir_key(src: Any, target: Any, options: dict[str, Any], extra: str = "",
           every_option: bool = True) -> str | None:
    """The key of the TTIR `triton.compile(src, target, options)` makes, or None where this
    Triton version or backend shares none. `extra`: anything else the caller's compile sets;
    `every_option`: key on every parsed option (`target_dependent` kernels), not only those
    the code generator reads of every kernel."""
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
                    if every_option or name in _READ_OPTIONS)
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
                             cache: Path, tmp: Path, every_option: bool = True) -> Any:
    """`triton.compile(src, target, options)`, from the TTIR in `cache` where another target
    of the same key left it; else from the source, leaving its TTIR there. `every_option`:
    as for `ir_key`."""
    import triton

    key = ir_key(src, target, options, extra, every_option)
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
