"""Where the IEEE kernel of the Triton implicit GEMM ranks ahead of its three-TF32-product
kernel on FP32 problems (the three-product solvers otherwise claim first place on FP32).

Measured through the Via solvers: an NCHW problem that the spec's VIA_NHWC sends to the IEEE
NHWC kernels runs, inside its transposes, the very object and parameters its NHWC twin takes
there, so where that route beat the three-product kernel on the NHWC twin, the IEEE kernel
alone does too.
"""

from __future__ import annotations

from functools import lru_cache

from ..problem import ConvProblem
from ..target import Target
from .triton_common import aligned_object, problem_view, spec_module, spec_sizes, target_kind

__all__ = ["ieee_first", "IEEE_FIRST"]

#: Per target kind, the FP32 channels-last cases (`<direction>`) where the IEEE kernel ranks
#: first, ahead of the three-TF32-product one, on the problems whose channel-planar twin the
#: spec's VIA_NHWC sends to these very kernels (`via_other_layout`) and that take the aligned
#: object (`ieee_first`). sm90 backward weights: over the zoo's layers timed in both layouts
#: in one H200 run (bench/results/zoo_h200-fp32-bw-every8-ef1efe1.json.gz, batch 32, GPU
#: time), the NCHW problem through the transposes and this IEEE kernel took 0.25-0.73 of the
#: three-product kernel's time on the NHWC problem (17 of 17 layers, geomean 0.46; the same
#: object and parameters as the NHWC problem takes here, without the transposes).
#: tests/unit/test_triton_ieee_first.py recomputes this.
IEEE_FIRST: dict[str, frozenset[str]] = {"sm90": frozenset({"W"})}


@lru_cache(maxsize=4096)
def ieee_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the IEEE kernel ranks ahead of the three-product one on an FP32 NHWC problem of
    one group (`IEEE_FIRST`): its NCHW twin goes through these kernels and it takes the
    aligned object."""
    p = problem
    kind = target_kind(target.arch)
    if p.in_type != "FP32" or p.in_layout != "NHWC" or len(p.in_spatial) != 2 or \
            p.groups != 1 or p.key_direction not in IEEE_FIRST.get(kind or "", frozenset()):
        return False
    sizes = spec_sizes(problem_view(p)[0])
    return bool(spec_module().via_other_layout(str(kind), "NCHW", f"FP32-{p.key_direction}",
                                               sizes)) and aligned_object(p)
