"""ConvDirect{Fwd,Bwd,Wrw}: the reference solver, for every problem (kernels/conv_direct.hip).

Forward and backward data run one thread per output element; backward weights one block per
weight element reducing over batch and positions. Not tunable; slow but always right.
"""

from __future__ import annotations

from ._conv import ConvKernelSolver, ConvView, ceil_div
from .base import Params

__all__ = ["ConvDirect"]

_BLOCK = 256
# Backward weights walks weight elements with a grid-stride loop; more blocks than this only
# queue up (and HIP caps a grid at 2^32 work-items).
_MAX_WRW_BLOCKS = 1 << 16


class ConvDirect(ConvKernelSolver):
    """Direct convolution: any groups, stride, dilation, padding, 2D or 3D, any layout."""

    family = "ConvDirect"
    algo_kind = "Direct"
    kernel_file = "conv_direct.hip"
    symbol = "mk_conv_direct"
    speed = 0.15

    def param_options(self, params: Params) -> tuple[str, ...]:
        return (f"-DMK_BLOCK={_BLOCK}",)

    def grid_block(
        self, view: ConvView, params: Params
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        f = view.field
        if view.direction == "F":
            blocks = ceil_div(f("n") * f("k") * f("out_d") * f("out_h") * f("out_w"), _BLOCK)
            return (blocks, 1, 1), (_BLOCK, 1, 1), 0
        if view.direction == "B":
            blocks = ceil_div(f("n") * f("c") * f("in_d") * f("in_h") * f("in_w"), _BLOCK)
            return (blocks, 1, 1), (_BLOCK, 1, 1), 0
        weights = f("k") * (f("c") // f("g")) * view.taps
        return (min(weights, _MAX_WRW_BLOCKS), 1, 1), (_BLOCK, 1, 1), 0
