"""Triton objects compiled as a package compiles its own, for the benches that time kernels
outside the runtime (kernel variants, tiles, trial kernels): sizes are run-time i32 arguments
(never specialised on their values, as Triton's launcher would), and an aligned object carries
only the divisibility assumptions named, as `miopenkernels build` writes them
(`compiler.triton.source_arguments`). One object per distinct compile, kept for the process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: sm90 (H100, H200), the device machine's target.
SM90 = ("cuda", 90, 32)
_OBJECTS: dict[tuple, Any] = {}


def compiled(fn: Any, signature: Sequence[tuple[str, str]], constexprs: Mapping[str, Any],
             assumptions: Sequence[tuple[str, int]], num_warps: int, num_stages: int,
             target: tuple = SM90) -> Any:
    """The object of `fn` (a `triton.jit` function) for `signature` (run-time arguments,
    (name, Triton type), in the kernel's order), `constexprs` and `assumptions` ((name,
    divisor) pairs), compiled for `target` (backend, arch, warp size)."""
    key = (id(fn), tuple(signature), tuple(sorted(constexprs.items())), tuple(assumptions),
           num_warps, num_stages, target)
    if key not in _OBJECTS:
        import triton
        from miopenkernels.compiler.triton import source_arguments
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        s, c, attrs = source_arguments(fn, signature, constexprs, assumptions)
        _OBJECTS[key] = triton.compile(ASTSource(fn, s, c, attrs), target=GPUTarget(*target),
                                       options={"num_warps": num_warps,
                                                "num_stages": num_stages})
    return _OBJECTS[key]
