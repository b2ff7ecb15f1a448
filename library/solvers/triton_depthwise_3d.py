"""ConvTritonDepthwise3d{Fwd,Bwd,Wrw}: 3-D depthwise convolutions (groups = channels: the
channel-separated layers of X3D, CSN and MoViNet) on the depthwise family's direct kernels
with a depth axis (kernels/conv_triton_depthwise.py: `depthwise_conv3d`,
`depthwise_conv3d_wrw`; launch data in kernels/conv_triton_depthwise3d_spec.py).

Without them such a layer went to the portable direct kernel or the 3-D implicit GEMM at one
channel a group (GEMMs of width 1), the shapes on which the 2-D depthwise family replaced the
same alternatives at 4-90x cuDNN's time. Forward and backward data: a program owns pixels x
channels of one destination depth slice and walks the depth taps around the unrolled 2-D
ones; backward weights a filter row (t, r) over a part of the N * Z * P * Q reduction, the
implicit GEMM's reduce kernel summing the parts' FP32 partials (the weights' (t, r) rows are
one axis of T * R rows there). Everything else (tiles, parameters, split rule, ranking terms)
is the 2-D depthwise solvers'; a package ships per direction, type and layout the usual tile
(NDHWC with and without the alignment assumption) for the 3x3 plane and the run-time one
(backward weights per width class). The miss ranking puts these solvers first on every
problem they take (the registry's FIRST_CLAIMS / YIELDS_TO).
"""

from __future__ import annotations

from functools import lru_cache

from ..problem import ConvProblem
from ..target import Target
from ._conv import ConvView, conv_view
from .base import CompileJob, Launch, Params, Solver
from .triton_common import (
    config_of,
    kernels_spec,
    reduce_step,
    spec_sizes_3d,
    spec_strides_3d,
)
from .triton_depthwise import ConvTritonDepthwise, first_of

__all__ = ["ConvTritonDepthwise3d", "DEPTHWISE_3D_SOLVERS", "depthwise_3d_first"]

_SPEC = "conv_triton_depthwise3d_spec"


@lru_cache(maxsize=4096)
def _view(problem: ConvProblem) -> tuple[ConvView, dict[str, int], dict[str, tuple[int, ...]],
                                         bool]:
    view = conv_view(problem)
    strides = spec_strides_3d(view)
    return view, spec_sizes_3d(view), strides, bool(kernels_spec(_SPEC).channels_last(strides))


class ConvTritonDepthwise3d(ConvTritonDepthwise):
    """One direction of the 3-D depthwise family."""

    spec_name = _SPEC
    family = "Depthwise3d"
    dims = 3

    def _view(self, problem: ConvProblem) -> tuple[ConvView, dict[str, int],
                                                   dict[str, tuple[int, ...]], bool]:
        return _view(problem)

    def _sizes(self, view: ConvView) -> dict[str, int]:
        return spec_sizes_3d(view)

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Every problem the family takes: the alternatives are the portable direct kernel and
        the 3-D implicit GEMM at one channel a group, on which the 2-D depthwise family's
        shapes ran at 4-90x cuDNN's time (issue 28)."""
        return True

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Backward weights split in parts: the reduce kernel sums the partials into dw, the
        filter's (t, r) rows one axis of T * R rows (the spec's `applies` holds swt = R * swr)."""
        split = self._params_split(params)
        if self.direction != "W" or split <= 1:
            return ()
        view, sizes, strides, _ = _view(problem)
        w = strides["w"]
        rows = sizes["T"] * sizes["R"]
        values = {"TOTAL": sizes["G"] * rows * sizes["S"], "C": sizes["C"], "R": rows,
                  "S": sizes["S"], "swk": w[0], "swc": w[1], "swr": w[3], "sws": w[4]}
        return (reduce_step(problem.in_type, split, target, view.wei_tensor, values),)

    def _params_split(self, params: Params) -> int:
        return int(config_of(tuple(params), "depthwise")["SPLIT_K"])


def depthwise_3d_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the 3-D depthwise solver of the problem's direction applies (it then ranks
    first, ahead of the 3-D implicit GEMM and its relaid, few-channel and chunk solvers)."""
    return first_of(DEPTHWISE_3D_SOLVERS, problem, target)


DEPTHWISE_3D_SOLVERS: list[Solver] = [ConvTritonDepthwise3d(d) for d in ("F", "B", "W")]
