"""ConvBlasGemm1x1ViaNhwc{Fwd,Bwd,Wrw} (and Tf32): a channel-planar 1x1 layer on the GEMM
library through the channels-last layout.

Backward weights of a 1x1 stride-1 layer are W = Y^T X summed over every image's pixels. In
NCHW the pixels of one channel are a plane per image, so the sum runs across planes that no
single matrix of one leading dimension holds, and `blas_1x1.gemm_call` takes no such problem.
Forward and backward data are a product per image in NCHW (one strided-batched call), whose
matrices are the images' channel planes: where a plane's bytes are not a multiple of 16 (65x65
or 14x14 pixels of a 16-bit type) the library cannot read them with 16-byte loads, and that
call took 1.3-2.9x the channels-last one's time with the copies (bench/results/README.md).
These solvers transpose what the direction reads into channels-last copies in the workspace
with the Via solvers' `transpose_021` kernel (solvers/triton_conv_relayout.py: one object per
element type and tile, shipped for those solvers), make the one library call of the
channels-last twin on them, and (forward and backward data) transpose its output from the
workspace back into the caller's tensor; backward weights write the caller's weights directly
(a 1x1 filter's weights are the same bytes in both layouts). MIOpen's NHWC solvers serve NCHW
problems the same way.

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

#: Per direction of the problem (a transposed convolution's own, not its key's), the layer
#: tensors copied into the workspace before the call, and the one the call writes there and a
#: transpose copies back (None: the call writes the caller's).
_READS = {"F": ("x",), "B": ("dy",), "W": ("x", "dy")}
_WRITES = {"F": "y", "B": "dx", "W": None}


class ConvBlasGemm1x1ViaNhwc(WorkspaceParts, ConvBlasGemm1x1):
    """One direction of an NCHW (NCDHW) 1x1 layer: what it reads transposed into the
    workspace, the channels-last twin's library call, its output transposed back (forward,
    backward data)."""

    def __init__(self, math: str = "ieee", direction: str = "W") -> None:
        super().__init__(direction, math)
        suffix = self.name[-3:]
        self.name = self.name[:-3] + "ViaNhwc" + suffix

    @property
    def ranking_name(self) -> str:
        return self.name.replace("ViaNhwc", "")  # the model weighs it as the library's call

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        from .triton_common import target_kind

        p = problem
        if p.key_direction != self.direction or target.vendor != "nvidia" or \
                target_kind(target.arch) is None or p.in_layout not in ("NCHW", "NCDHW"):
            return False
        if not p.in_layout == p.wei_layout == p.out_layout:
            return False
        from .blas_1x1 import _case

        if self.direction == "W":
            if gemm_call(p) is not None:
                return False  # one call of the problem's own: the direct solver's
        elif gemm_call(p) is None or not _case(p).endswith("NCHW"):
            return False  # one pixel an image or a whole-window filter: the channels-last call
        if not p.in_type == p.wei_type == p.out_type or p.in_type not in ("FP16", "BF16", "FP32"):
            return False
        if self.math == "tf32" and p.in_type != "FP32":
            return False
        return gemm_call(channels_last_twin(p)) is not None

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Backward weights where the library ranks first through the copies (a problem of
        one call, such as one pixel an image, is the direct solver's); forward and backward
        data where the per-image call's planes are misaligned (`blas_1x1.misaligned_via`)."""
        from .blas_1x1 import blas_first, misaligned_via

        if self.direction != "W":
            return misaligned_via(problem, target, self.math)
        return gemm_call(problem) is None and blas_first(problem, target, self.math)

    # ------------------------------------------------------------------ workspace
    def _copied(self, problem: ConvProblem) -> tuple[str, ...]:
        """The layer tensors that have a copy in the workspace: those read, then the output
        where the call writes it there."""
        out = _WRITES[problem.direction]
        return _READS[problem.direction] + ((out,) if out else ())

    def _shapes(self, problem: ConvProblem) -> dict[str, tuple[int, int, int]]:
        """Each copied tensor as the [images][channels][pixels] it is in the caller's layout."""
        logical = {"x": problem.in_shape, "dx": problem.in_shape, "y": problem.out_shape,
                   "dy": problem.out_shape}  # (N, C, spatial...) whatever the layout
        return {t: (logical[t][0], logical[t][1], math.prod(logical[t][2:]))
                for t in self._copied(problem)}

    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        from ..problem import TYPE_BYTES

        shapes, slots, total = self._shapes(problem), {}, 0
        for tensor in self._copied(problem):
            slots["ws_" + tensor] = total
            total += workspace_round(math.prod(shapes[tensor]) * TYPE_BYTES[problem.in_type])
        return slots, total

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return self._layout(problem, ())[1]

    # ------------------------------------------------------------------ launches
    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """What the direction reads, [n][channels][pixels] -> [n][pixels][channels] in the
        workspace."""
        from .triton_conv_relayout import transpose_step

        shapes = self._shapes(problem)
        return tuple(transpose_step(problem.in_type, target, tensor, "ws_" + tensor,
                                    shapes[tensor]) for tensor in _READS[problem.direction])

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Forward and backward data: the call's output, [n][pixels][channels] in the
        workspace -> the caller's [n][channels][pixels]."""
        from .triton_conv_relayout import transpose_step

        out = _WRITES[problem.direction]
        if out is None:
            return ()
        n, channels, pixels = self._shapes(problem)[out]
        return (transpose_step(problem.in_type, target, "ws_" + out, out,
                               (n, pixels, channels)),)

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

        copy = {tensor: "ws_" + tensor for tensor in self._copied(problem)}  # w: the caller's
        call = replace(call, a=copy.get(call.a, call.a), b=copy.get(call.b, call.b),
                       c=copy.get(call.c, call.c))
        return GemmLaunch(backend, blas, call.astuple(), problem.in_type, self.math)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        return super().ranking_geometry(channels_last_twin(problem), params)


VIA_BLAS_SOLVERS: list[Solver] = [ConvBlasGemm1x1ViaNhwc(m, d) for m in ("ieee", "tf32")
                                   for d in ("W", "F", "B")]
