"""Max and average pooling, forward (kernels/pooling.hip), for `PoolProblem`."""

from __future__ import annotations

from ..pooling import PoolProblem
from ..solvers._conv import ceil_div
from ..solvers.base import KernelArg, Launch
from ..target import Target
from .base import BLOCK, Primitive, TensorShape

__all__ = ["Pooling", "POOL_MODES", "pool_tensors"]

# PoolProblem.mode -> kernel mode: avg leaves padding out of the divisor, avg_in counts it.
POOL_MODES = {"max": 0, "avg": 1, "avg_in": 2}


def _strides(t: TensorShape) -> tuple[int, int, int, int, int]:
    """(n, c, d, h, w) element strides; 2D tensors get d = 1."""
    d, h, w = (1, *t.spatial) if len(t.spatial) == 2 else t.spatial
    if t.channel_last:
        return d * h * w * t.c, 1, h * w * t.c, w * t.c, t.c
    return t.c * d * h * w, d * h * w, h * w, w, 1


def _three(values: tuple[int, ...], fill: int) -> tuple[int, ...]:
    return (fill, *values) if len(values) == 2 else tuple(values)


def pool_tensors(p: PoolProblem) -> tuple[TensorShape, TensorShape]:
    """x and y of a pooling problem (a 3D problem written with a 2D layout name gets the 3D one)."""
    layout = p.layout
    if len(p.in_spatial) == 3:
        layout = {"NCHW": "NCDHW", "NHWC": "NDHWC"}.get(layout, layout)
    return (TensorShape(p.n, p.c, p.in_spatial, layout, p.data_type),
            TensorShape(p.n, p.c, p.out_spatial, layout, p.data_type))


class Pooling(Primitive):
    """Forward pooling, 2D and 3D, NCHW/NHWC (and 3D forms), one thread per output."""

    name = "Pooling"
    kernel_file = "pooling.hip"
    kernel_name = "mk_pooling_fwd"

    def is_applicable(self, problem: PoolProblem, target: Target) -> bool:
        if problem.direction != "F" or not super().is_applicable(problem, target):
            return False
        return max(t.count for t in pool_tensors(problem)) < 2**31

    def launch(self, problem: PoolProblem) -> Launch:
        p = problem
        x, y = pool_tensors(p)
        values = (
            ("n", p.n), ("c", p.c),
            *zip(("in_d", "in_h", "in_w"), _three(p.in_spatial, 1), strict=True),
            *zip(("out_d", "out_h", "out_w"), _three(p.out_spatial, 1), strict=True),
            *zip(("win_d", "win_h", "win_w"), _three(p.window, 1), strict=True),
            *zip(("pad_d", "pad_h", "pad_w"), _three(p.pad, 0), strict=True),
            *zip(("str_d", "str_h", "str_w"), _three(p.stride, 1), strict=True),
            *zip(("xs_n", "xs_c", "xs_d", "xs_h", "xs_w"), _strides(x), strict=True),
            *zip(("ys_n", "ys_c", "ys_d", "ys_h", "ys_w"), _strides(y), strict=True),
            ("mode", POOL_MODES[p.mode]),
        )
        args = (
            KernelArg("p_x", "ptr:x"),
            KernelArg("p_y", "ptr:y"),
            *(KernelArg(name, "i32", int(v)) for name, v in values),
        )
        return Launch(self.kernel_name, (ceil_div(y.count, BLOCK), 1, 1), (BLOCK, 1, 1), args)
