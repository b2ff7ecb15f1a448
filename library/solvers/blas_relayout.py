"""ConvBlasGemm1x1ViaNhwcWrw (and Tf32): backward weights of a channel-planar 1x1 layer on the
GEMM library, through the channels-last layout.

Backward weights of a 1x1 stride-1 layer are W = Y^T X summed over every image's pixels. In
NCHW the pixels of one channel are a plane per image, so the sum runs across planes that no
single matrix of one leading dimension holds, and `blas_1x1.gemm_call` takes no such problem.
This solver transposes x and dy into channels-last copies in its workspace with the Via
solvers' `transpose_021` kernel (solvers/triton_conv_relayout.py: one object per element type
and tile, shipped for those solvers), then makes the one library call of the channels-last
twin on the copies, writing the caller's weights directly (a 1x1 filter's weights are the
same bytes in both layouts). MIOpen's NHWC solvers serve NCHW problems the same way.

The call's scratch is the library's own pool (backends/cublas.py), never this workspace.
"""

from __future__ import annotations

import math
from typing import Any

from ..problem import ConvProblem
from ..target import Target
from ._conv import channels_last_twin, workspace_round
from .base import CompileJob, Launch, Params, Solver, WorkspaceParts
from .blas_1x1 import ConvBlasGemm1x1, gemm_call

__all__ = ["ConvBlasGemm1x1ViaNhwc", "VIA_BLAS_SOLVERS"]

#: The tensors copied, by the GEMM operand they become, and the layer tensor each comes from.
_COPIES = (("ws_x", "x"), ("ws_dy", "dy"))


class ConvBlasGemm1x1ViaNhwc(WorkspaceParts, ConvBlasGemm1x1):
    """Backward weights of an NCHW (NCDHW) 1x1 layer: x and dy transposed into the
    workspace, then the channels-last twin's library call."""

    def __init__(self, math: str = "ieee") -> None:
        super().__init__("W", math)
        self.name = self.name.replace("Wrw", "ViaNhwcWrw")

    @property
    def ranking_name(self) -> str:
        return self.name.replace("ViaNhwc", "")  # the model weighs it as the library's call

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        from .triton_common import target_kind

        p = problem
        if p.key_direction != "W" or target.vendor != "nvidia" or \
                target_kind(target.arch) is None or p.in_layout not in ("NCHW", "NCDHW"):
            return False
        if not p.in_layout == p.wei_layout == p.out_layout or gemm_call(p) is not None:
            return False
        if not p.in_type == p.wei_type == p.out_type or p.in_type not in ("FP16", "BF16", "FP32"):
            return False
        if self.math == "tf32" and p.in_type != "FP32":
            return False
        return gemm_call(channels_last_twin(p)) is not None

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the library ranks first through the copies (a problem of one call, such as
        one pixel an image, is the direct solver's)."""
        from .blas_1x1 import blas_first

        return gemm_call(problem) is None and blas_first(problem, target, self.math)

    # ------------------------------------------------------------------ workspace
    def _shapes(self, problem: ConvProblem) -> dict[str, tuple[int, int, int]]:
        """Each copied tensor as the [images][channels][pixels] it is in the caller's layout."""
        pixels = math.prod(problem.in_spatial)
        return {"x": (problem.n, problem.c, pixels), "dy": (problem.n, problem.k, pixels)}

    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        from ..problem import TYPE_BYTES

        shapes, slots, total = self._shapes(problem), {}, 0
        for slot, tensor in _COPIES:
            slots[slot] = total
            total += workspace_round(math.prod(shapes[tensor]) * TYPE_BYTES[problem.in_type])
        return slots, total

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return self._layout(problem, ())[1]

    # ------------------------------------------------------------------ launches
    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """x and dy, [n][channels][pixels] -> [n][pixels][channels] in the workspace."""
        from .triton_conv_relayout import transpose_step

        shapes = self._shapes(problem)
        return tuple(transpose_step(problem.in_type, target, tensor, slot, shapes[tensor])
                     for slot, tensor in _COPIES)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        return []  # the transposes are the Via solvers' objects (their dynamic jobs)

    def library_launch(self, backend: Any, problem: ConvProblem) -> Any:
        """The channels-last twin's call, reading the copies (`ws_x`, `ws_dy`)."""
        from ..backends.cublas import GemmLaunch, load
        from ..errors import BackendError

        blas = load()
        call = gemm_call(channels_last_twin(problem))
        if blas is None or call is None:
            raise BackendError(f"{self.name} needs cuBLAS (pip install 'miopenkernels[blas]') "
                               f"and an NCHW 1x1 stride-1 problem; {problem.key()} has "
                               f"{'no cuBLAS' if blas is None else 'another shape'}")
        from .._record import replace

        copy = {tensor: slot for slot, tensor in _COPIES}  # dw stays the caller's
        call = replace(call, a=copy.get(call.a, call.a), b=copy.get(call.b, call.b),
                       c=copy.get(call.c, call.c))
        return GemmLaunch(backend, blas, call.astuple(), problem.in_type, self.math)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        return super().ranking_geometry(channels_last_twin(problem), params)


VIA_BLAS_SOLVERS: list[Solver] = [ConvBlasGemm1x1ViaNhwc(m) for m in ("ieee", "tf32")]
