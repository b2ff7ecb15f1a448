"""Conv1x1Gemm{Fwd,Bwd,Wrw}: 1x1 filters without padding as a plain GEMM (kernels/conv_1x1.hip).

Any stride, 2D or 3D, groups; the same tunable tiles as the implicit GEMM but no filter-tap or
padding arithmetic in the operand gathers.
"""

from __future__ import annotations

from ..problem import ConvProblem
from ._conv import ConvView
from .igemm import GemmTiles

__all__ = ["Conv1x1Gemm"]


class Conv1x1Gemm(GemmTiles):
    """GEMM for 1x1 convolutions with zero padding."""

    family = "Conv1x1Gemm"
    algo_kind = "GEMM"
    kernel_file = "conv_1x1.hip"
    symbol = "mk_conv_1x1"
    speed = 1.4

    def shape_applicable(self, problem: ConvProblem, view: ConvView) -> bool:
        return all(f == 1 for f in problem.filter) and not any(problem.pad)
