"""ConvWinograd3x3{Fwd,Bwd}: Winograd F(2x2, 3x3), stride 1 (kernels/conv_winograd.hip).

Backward data reuses the forward algorithm on dy with the filter rotated and its channel axes
exchanged, which needs padding at most 2. Backward weights has no Winograd kernel here.
"""

from __future__ import annotations

from ..problem import ConvProblem
from ._conv import ConvKernelSolver, ConvView, ceil_div
from .base import Params

__all__ = ["ConvWinograd3x3", "WINOGRAD_BLOCK"]

WINOGRAD_BLOCK = 128  # threads per block (MK_WB); one 2x2 output tile each
_CHANNEL_CHUNK = 32  # transformed filters kept in shared memory at once (MK_WCH)


class ConvWinograd3x3(ConvKernelSolver):
    """Winograd F(2,3) for 2D 3x3 filters, stride 1, dilation 1, any groups and layout."""

    family = "ConvWinograd3x3"
    algo_kind = "Winograd"
    kernel_file = "conv_winograd.hip"
    symbol = "mk_conv_winograd"
    speed = 1.8

    def __init__(self, direction: str) -> None:
        if direction not in ("F", "B"):
            raise ValueError("Winograd solvers exist for forward and backward data only")
        super().__init__(direction)

    def shape_applicable(self, problem: ConvProblem, view: ConvView) -> bool:
        if problem.spatial_dim != 2 or tuple(problem.filter) != (3, 3):
            return False
        if any(s != 1 for s in problem.stride) or any(d != 1 for d in problem.dilation):
            return False
        return self.direction == "F" or all(p <= 2 for p in problem.pad)

    def param_options(self, params: Params) -> tuple[str, ...]:
        return (f"-DMK_WB={WINOGRAD_BLOCK}", f"-DMK_WCH={_CHANNEL_CHUNK}")

    def grid_block(
        self, view: ConvView, params: Params
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        f = view.field
        if view.direction == "F":
            dst_h, dst_w, dst_c = f("out_h"), f("out_w"), f("k")
        else:
            dst_h, dst_w, dst_c = f("in_h"), f("in_w"), f("c")
        tiles = f("n") * ceil_div(dst_h, 2) * ceil_div(dst_w, 2)
        return (ceil_div(tiles, WINOGRAD_BLOCK), dst_c, 1), (WINOGRAD_BLOCK, 1, 1), 0

    def efficiency(self, view: ConvView, params: Params) -> float:
        # Few channels leave the per-block filter transform unamortised.
        cin = view.field("c") // view.field("g") if view.direction == "F" else \
            view.field("k") // view.field("g")
        return min(1.0, cin / 16.0)
