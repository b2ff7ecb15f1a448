"""Compile one CompileJob to the bytes of one code object: shared by the builder and the
runtime's JIT fallback.

A job names a kernel file (under the kernels directory), its compile options, its kernel symbol
and its target (see `miopenkernels.solvers.base.CompileJob`). The target's entry in targets.toml
picks the compiler: `hipcc` or `clang-19` for AMD, `nvrtc` for NVIDIA. Nothing heavy is imported
here: NVRTC loads on the first NVIDIA compile, ELF checks use `struct`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ..codeobject import CodeObjectInfo, check_code_object, inspect_code_object, split_kdb_blob
from ..errors import CompileError
from ..kernel_sources import kernel_source, kernels_dir, source_digest
from ..target import Target, spec_for
from .amd import CLANG19, HIPCC
from .nvidia import NVRTC
from .triton import TRITON

__all__ = [
    "Compiler",
    "COMPILERS",
    "compiler_for",
    "job_compiler",
    "is_triton_job",
    "compile_arch",
    "triton_arch",
    "compile_job",
    "describe_job",
    "check_code_object",
    "inspect_code_object",
    "CodeObjectInfo",
    "kernels_dir",
    "source_digest",
]


class Compiler(Protocol):
    """What the builder and the runtime need of a compiler."""

    name: str

    @property
    def vendor(self) -> str: ...

    def compile(self, source: Path, options: Any, arch: str, include_dirs: Any = (),
                what: str = "compile") -> bytes: ...

    def identity(self) -> str: ...


COMPILERS: dict[str, Compiler] = {"hipcc": HIPCC, "clang-19": CLANG19, "nvrtc": NVRTC}
# Targets whose only compiler is Triton (no C++ compiler here knows the arch): they carry
# Triton kernels only.
TRITON_ONLY = "triton"


def compiler_for(target: Target) -> Compiler:
    """The compiler targets.toml names for `target`'s arch."""
    name = spec_for(target.arch).compiler
    if name == TRITON_ONLY:
        raise CompileError(f"no C++ compiler here knows {target.arch}: targets.toml gives it "
                           "Triton kernels only")
    try:
        return COMPILERS[name]
    except KeyError:
        raise CompileError(
            f"targets.toml names compiler {name!r} for {target.arch}; known: "
            + ", ".join(COMPILERS)
        ) from None


def is_triton_job(job: Any) -> bool:
    """Whether `job` builds a Triton kernel (`kernels/*.py`) rather than HIP C++."""
    return str(job.kernel_file).endswith(".py")


def job_compiler(job: Any) -> Compiler:
    """The compiler of one job: Triton for `.py` kernels, else the target's (targets.toml)."""
    return TRITON if is_triton_job(job) else compiler_for(job.target)


def compile_arch(target: Target) -> str:
    """What the compiler is told: `gfx90a` (no target features, so one object serves both xnack
    modes) or `sm_90`."""
    return spec_for(target.arch).compile_arch


def triton_arch(target: Target) -> str:
    """The DbId Triton compiles `target`'s objects for: the compile arch's on NVIDIA (`sm80`
    for sm86 and sm89, whose GPUs run sm80 cubins), the target's own on AMD."""
    arch = compile_arch(target)
    return "sm" + arch[3:] if arch.startswith("sm_") else target.arch


def describe_job(job: Any) -> str:
    """One line naming a job: `conv_direct.hip:conv_fwd for gfx90a-110 [-DK=3 ...]`."""
    opts = " ".join(job.options)
    return f"{job.kernel_file}:{job.kernel_name} for {job.target.name} [{opts}]"


def compile_job(job: Any, kernels: str | Path | None = None, *, check: bool = True,
                triton_ir: str | Path | None = None) -> bytes:
    """Compile `job` and (by default) check that the result is a code object for the job's
    arch defining the job's kernel. CompileError / CodeObjectError name the job.
    `triton_ir`: a folder where Triton jobs share their IR between targets (triton_ir.py)."""
    root = kernels_dir(kernels)
    compiler = job_compiler(job)
    what = f"{compiler.name} {describe_job(job)}"
    try:
        source = kernel_source(job.kernel_file, root)
        if compiler is TRITON:
            blob = TRITON.compile_kernel(source, job.kernel_name, tuple(job.options),
                                         triton_arch(job.target), what=what,
                                         ir_cache=Path(triton_ir) if triton_ir else None)
        else:
            blob = compiler.compile(source, tuple(job.options), compile_arch(job.target),
                                    (root,), what=what)
    except CompileError as exc:
        err = CompileError(str(exc) if what in str(exc) else f"{what}: {exc}", log=exc.log)
        err.job = job  # type: ignore[attr-defined]
        raise err from None
    if check:
        check_code_object(split_kdb_blob(blob)[0], job.target.arch, job.kernel_name,
                          what=f"code object of {what}")
    return blob
