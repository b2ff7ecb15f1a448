"""ConvTritonGrouped{Fwd,Bwd,Wrw}: grouped convolutions of a few channels and filters a group
(2-8: ResNeXt-50 32x4d's 4, RegNet's 8, a depthwise layer's channel multiplier) as direct
kernels, the depthwise family's shape (kernels/conv_triton_depthwise.py: `grouped_conv`,
`grouped_conv_wrw`; launch data in kernels/conv_triton_grouped_spec.py).

There the implicit GEMM's tiles of 16 or more channels by 16 or more filters a group would be
mostly padding, and the portable kernels loop over the groups. Here a program owns pixels x
destination channels of one image, as in the depthwise kernels, and each destination channel
sums its group's source channels inside every tap; backward weights has a lane per weight
(filter, channel) and splits its N * P * Q reduction into parts like the depthwise one (the
implicit GEMM's reduce kernel sums the parts). Groups of 16 or more channels and filters take
the implicit GEMM (groups as its program axis 1), which ranks first there.

Everything but the kernels and which problems they take is the depthwise solvers' (the same
tiles, parameters, split rule and ranking terms); a package ships per direction, type and
layout one object (backward weights per width class), none with alignment assumptions: the
channel loads gather. The miss ranking puts these solvers first on every problem they take
(the registry's FIRST_CLAIMS / YIELDS_TO).
"""

from __future__ import annotations

from ..problem import ConvProblem
from ..target import Target
from .base import Solver
from .triton_depthwise import ConvTritonDepthwise, first_of

__all__ = ["ConvTritonGrouped", "GROUPED_SOLVERS", "grouped_first"]


class ConvTritonGrouped(ConvTritonDepthwise):
    """One direction of the grouped direct family."""

    spec_name = "conv_triton_grouped_spec"
    family = "Grouped"

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Every problem the family takes: the alternatives are the implicit GEMM at a
        quarter or less of its tile used and the portable kernels looping over groups (issue
        28: 10-17x cuDNN's time on ResNeXt's grouped 3x3 layers)."""
        return True


def grouped_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the grouped solver of the problem's direction applies (it then ranks first,
    ahead of the implicit GEMM, its Via solvers and the Winograd backward weights)."""
    return first_of(GROUPED_SOLVERS, problem, target)


GROUPED_SOLVERS: list[Solver] = [ConvTritonGrouped(d) for d in ("F", "B", "W")]
