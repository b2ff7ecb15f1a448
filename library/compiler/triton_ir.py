"""Triton IR shared between targets: a job's code-generator module made once for every target
whose code generator makes the same one, and every other target compiled from it.

A Triton compile starts in Python: the code generator walks the kernel's AST and runs Triton's
semantic layer on every operation; its module (the IR before any pass, `asm["source"]`) then
goes through the backend's stages (its TTIR passes, TTGIR, LLVM IR, PTX or AMDGCN, the binary).
The builder compiles the same jobs for many targets, and for Triton 3.6 that module depends
on the target only through:
- the parsed options the code generator reads of every kernel: the overflow checks and
  `debug`;
- a dot (`tl.dot`): the dot precisions (allowed, default) and the backend's smallest dot (an
  assertion): these are read where the module then holds a `tt.dot`, and nowhere else;
- where a kernel names FP8 types, Triton's vendor modules (`triton.language.extra.cuda`,
  `.hip`, `libdevice`), its target queries or descriptor atomics: the backend's conversions
  and libdevice, the FP8 type lists and accumulation default, `num_warps` and `arch`.
A job's key (`ir_key`) is Triton's hash of the source, signature, constexprs and assumptions
(`ASTSource.hash`) with the overflow and debug options, or, for a kernel of the last kind, with
the backend and every parsed option. Whether a module holds a dot is known once it is made: an
entry names the backend and dot precisions (`dot_stage`) of the compile that made it where its
module has a dot, and a target whose dot stage differs compiles from the entry under the key
with its own dot stage added (`dot_key`), made from the source the first time. So a kernel
without a dot is made once for every target, CUDA and HIP alike, and one with a dot once per
backend and dot precisions. Whether a kernel is of the last kind is read from the text of
every file it depends on (`kernel_sources.source_files`) and its signature. The objects are
the same bytes as those compiled from the source (tests/integration/test_triton_ir.py); with
any other Triton version nothing is shared: what decides the module was read from 3.6.

Entries are written whole (`atomic_write`), so a reader sees a whole entry or none; one that
Triton cannot read, or without this format's first line, is compiled from the source again and
replaced.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from .._fsutil import atomic_write
from .._lazy_re import lazy

__all__ = ["IR_VERSIONS", "compile_through_ir_cache", "dot_key", "dot_stage", "has_dot",
           "ir_key", "module_text", "share_key", "target_dependent"]

IR_VERSIONS = ("3.6.0",)  # the Triton versions whose code-generator inputs are the key's
_FORMAT = "miopenkernels-triton-ir-3"
_MAX_BYTES = 64 << 20  # larger than any kernel's module: an entry past it is not one

# The parsed options Triton 3.6's code generator and language read of every kernel; the dot
# reads two more (and the backend's smallest dot); the rest of what they read (FP8 type lists
# and accumulation, `num_warps`, `arch`, the backend's helpers) only for kernels whose text
# matches _TARGET_WORDS.
_READ_OPTIONS = ("sanitize_overflow", "debug")
_DOT_OPTIONS = ("allowed_dot_input_precisions", "default_dot_input_precision")
_TARGET_WORDS = lazy(r"fp8|float8|\bextra\s*\.\s*(?:cuda|hip)|\bextra\s+import\s+(?:cuda|hip)"
                     r"|libdevice|target_info|descriptor_atomic")
_DOT_OP = lazy(r"\btt\.dot")  # tt.dot and tt.dot_scaled


def target_dependent(texts: Iterable[str]) -> bool:
    """Whether kernel text in `texts` (its sources, its signature) names something whose
    module may depend on the backend or any parsed option: FP8 types, Triton's vendor modules
    or libdevice, its target queries, descriptor atomics."""
    return any(_TARGET_WORDS.search(text) for text in texts)


def has_dot(module: str) -> bool:
    """Whether a code-generator module's text holds a dot (whose making read `dot_stage`)."""
    return _DOT_OP.search(module) is not None


def _shares(target: Any) -> bool:
    """Whether this Triton version and the target's backend share modules."""
    import triton

    return triton.__version__ in IR_VERSIONS and target.backend in ("cuda", "hip")


def _parsed(target: Any, options: dict[str, Any]) -> Any:
    from triton.compiler.compiler import make_backend

    return make_backend(target).parse_options(dict(options))


def ir_key(src: Any, target: Any, options: dict[str, Any], extra: str = "",
           every_option: bool = True) -> str | None:
    """The key of the module `triton.compile(src, target, options)` makes, or None where this
    Triton version or backend shares none. `extra`: anything else the caller's compile sets;
    `every_option`: key on the backend and every parsed option (`target_dependent` kernels),
    not only on those the code generator reads of every kernel."""
    if not _shares(target):
        return None
    return _key(src, target, _parsed(target, options), extra, every_option)


def _key(src: Any, target: Any, parsed: Any, extra: str, every_option: bool) -> str:
    """`ir_key` from the parsed options."""
    import triton

    names = sorted(vars(parsed)) if every_option else _READ_OPTIONS
    stage = target.backend if every_option else "any backend"
    fields = [(name, repr(getattr(parsed, name))) for name in names]
    text = "\n".join([_FORMAT, triton.__version__, src.hash(), stage, repr(fields), extra])
    return hashlib.sha256(text.encode()).hexdigest()


def dot_stage(target: Any, options: dict[str, Any]) -> str:
    """What a dot's making reads of the target: the backend (its smallest dot) and the dot
    precisions."""
    return _dot_stage(target, _parsed(target, options))


def _dot_stage(target: Any, parsed: Any) -> str:
    return repr([target.backend, *(repr(getattr(parsed, n)) for n in _DOT_OPTIONS)])


def dot_key(key: str, stage: str) -> str:
    """The key of a module with a dot made at `stage` (`dot_stage`) whose job's key is `key`."""
    return hashlib.sha256(f"{key}\n{stage}".encode()).hexdigest()


def share_key(key: str, stage: str, module: str) -> str:
    """The key under which targets share a job's module: its `ir_key` where the module has no
    dot, else its `dot_key` at the target's dot stage."""
    return dot_key(key, stage) if has_dot(module) else key


def module_text(src: Any, target: Any, options: dict[str, Any]) -> str:
    """The code generator's module of `src` for `target` (what an entry holds), no pass run."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend

    backend = make_backend(target)
    parsed = backend.parse_options(dict(options))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = src.make_ir(target, parsed, backend.get_codegen_implementation(parsed),
                         backend.get_module_map(), context)
    return str(module)


def _path(cache_dir: Path, key: str) -> Path:
    return cache_dir / key[:2] / f"{key}.ttir"


def _entry(path: Path) -> tuple[str, str] | None:
    """(dot stage or "", module text) of an entry, None where there is no readable one."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            return None
        head, _, body = path.read_text().partition("\n")
    except (OSError, UnicodeDecodeError):
        return None
    prefix = f"// {_FORMAT} dot="
    return (head[len(prefix):], body) if head.startswith(prefix) else None


def _write(path: Path, stage: str, module: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, f"// {_FORMAT} dot={stage if has_dot(module) else ''}\n{module}")


@cache
def _from_file(base: type) -> type:
    """`base` (ASTSource) whose code-generator module is parsed from the file `ir_path`."""
    from triton._C.libtriton import ir

    class FromFile(base):  # type: ignore[misc, valid-type]
        ir_path = ""

        def make_ir(self, target: Any, options: Any, codegen_fns: Any, module_map: Any,
                    context: Any) -> Any:
            module = ir.parse_mlir_module(self.ir_path, context)
            module.context = context
            return module

    return FromFile


def _compile_from(src: Any, module: str, target: Any, options: dict[str, Any], tmp: Path
                  ) -> Any:
    """`triton.compile` of `src` with `module` as its code generator's, every stage run."""
    import triton

    path = tmp / "kernel.source"
    path.write_text(module)
    parsed = copy.copy(src)
    parsed.__class__ = _from_file(type(src))  # type: ignore[arg-type]
    parsed.ir_path = str(path)
    return triton.compile(parsed, target=target, options=options)


def compile_through_ir_cache(src: Any, target: Any, options: dict[str, Any], extra: str,
                             cache_dir: Path, tmp: Path, every_option: bool = True) -> Any:
    """`triton.compile(src, target, options)`, from the module in `cache_dir` where another
    target that makes the same one left it; else from the source, leaving its module there.
    `every_option`: as for `ir_key`."""
    import triton

    if not _shares(target):
        return triton.compile(src, target=target, options=options)
    parsed = _parsed(target, options)  # once: the key and the dot stage read it
    key, stage = _key(src, target, parsed, extra, every_option), _dot_stage(target, parsed)
    path = _path(cache_dir, key)
    entry = _entry(path)
    if entry is not None and entry[0] not in ("", stage):  # a dot made at another stage
        path = _path(cache_dir, dot_key(key, stage))
        entry = _entry(path)
    if entry is not None and entry[0] in ("", stage):
        try:
            return _compile_from(src, entry[1], target, options, tmp)
        except Exception:  # noqa: BLE001, S110 - an entry Triton cannot read: from the source
            pass
    kernel = triton.compile(src, target=target, options=options)
    _write(path, stage, kernel.asm["source"])
    return kernel
