"""ConvTritonImplicitGemm{,Tf32,Tf32x3,Padded}Slices{Fwd,Bwd,Wrw}: 3-D layers that are 2-D
layers, on the 2-D implicit GEMM's objects.

A filter of one depth tap at depth stride 1 without depth padding (X3D's and CSN's 1x1x1
layers and their 1x1x1 downsamples at stride (1, 2, 2), the 1x3x3 spatial convolutions of
(2+1)-D and SlowFast networks) computes each output depth slice from the input slice at the
same depth. In NDHWC the input is then N*D images of H x W x C, exactly NHWC, the output N*D
images of P x Q x K, and the filters (K, 1, R, S, C/G) are KRSC: the same bytes as a 2-D
problem. A filter of one tap in height and width at stride 1 without padding there (a
(2+1)-D network's 3x1x1 temporal layer) reads each pixel's column of depths alone: in either
layout the input is N images of D x (H*W) (`sliced_problem`). The 3-D families
(solvers/triton_3d.py and its relaid solvers) run such a layer as a 3-D implicit GEMM whose
aligned objects need channel counts that are multiples of 16, the rest through
channel-padded copies; on the H200 X3D-S's 1x1x1 layers of 24-216 channels took 2-6x cuDNN's
GPU time there (bench/results/zoo_h200-x3d-fa47541). The 2-D implicit GEMM's objects need
multiples of 8, and its tile rules, split rules and tuned tiles are the 2-D zoo's. These
solvers run a 2-D solver (`inner`: the implicit GEMM in each math, and its padded solvers for
channel counts that miss 8; the FP32-unit families of solvers/triton_fma*.py, for the video
stems of 1-4 channels) on the 2-D problem: parameters, objects, workspace, lead-ins and
follow-ups, the ranking's model are the inner solver's there; nothing is compiled or shipped
for them.

In 16-bit types, on layers over their depth slices, they claim first place where their inner
solver ranks first on the 2-D problem among the 2-D families (`ranks_first`: not where it would
go to the GEMM library, through the other layout, or to a depthwise or grouped family), but
in NOT_FIRST's directions; the 3-D families give way to them there (the registry's
YIELDS_TO). A 1x1x1 layer at stride 1 is one call of the GEMM library in either form
(solvers/blas_1x1.py takes 3-D problems as they are), to which the 3-D families give way as
the 2-D ones do. Temporal layers claim the same way in channels-last backward data and
weights alone (TEMPORAL_FIRST, measured there). In FP32 they claim the same way on the video
stems over their depth slices (FP32_STEM_CHANNELS, measured there); other FP32 problems are
offered to find and tuning, which time them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from .._record import replace
from ..problem import ConvProblem
from ..target import Target
from ._conv import conv_view
from .base import CompileJob, InnerSolver, Launch, Params, Solver

__all__ = ["ConvTritonSlices", "FIRST_TYPES", "FP32_STEM_CHANNELS", "NOT_FIRST", "SLICES_SOLVERS",
           "TEMPORAL_FIRST", "inner_ranks_first", "sliced_problem", "slices_first",
           "use_precedence"]

_LAYOUT_2D = {"NDHWC": "NHWC", "NCDHW": "NCHW"}
#: Inner families whose slices solvers do not claim first place in these directions, where
#: the 3-D families measured faster: backward weights of channel counts that miss 8, where the
#: 3-D padded several-taps solver (ConvTriton3dPaddedTapsWrw: the three taps along s a
#: program) took 1.09 of cuDNN's GPU time over R(2+1)D-18's six such 1x3x3 layers and the
#: padded slices 1.38 (H100, FP16, batch 32: bench/results/slices_h100-e86d143/alt.json; the
#: zoo's layers alone, X3D-S and R3D-18 held out). tests/unit/test_triton_slices.py
#: recomputes the figures.
NOT_FIRST: dict[str, tuple[str, ...]] = {"ConvTritonImplicitGemmPadded": ("W",)}
#: The element types in which they claim first place: the 16-bit ones, measured in FP16 (BF16
#: runs the same objects); FP32 problems but the stems below are offered to find and tuning
#: and ranked on the model's estimate (the FP32 3-D routes' rules stand:
#: solvers/triton_3d_relaid.py).
FIRST_TYPES = ("FP16", "BF16")
#: In FP32 they claim the video stems, layers of at most FP32_STEM_CHANNELS input channels over
#: their depth slices, where the inner solver ranks first on the 2-D problem (IEEE and
#: three-product sums; the TF32 math's were not timed). Over R(2+1)D-18's
#: and X3D-S's stems in NDHWC (H200, batch 32: bench/results/fewk_h200-035369f/video_f.json,
#: video_w.json, bwd.json) the slices took, of IEEE cuDNN's GPU time, forward 0.76 and 0.92
#: (the few-channel FP32 kernel's) where the few-channel 3-D kernel took 1.63 and 2.94,
#: backward weights 0.59 (the three-product implicit GEMM's; R(2+1)D-18's 45 filters) and 0.26
#: (the few-channel FP32 kernel's) where it took 1.80 and 0.40, backward data 3.34 and 1.41
#: (the implicit GEMM's) where the three-product 3-D kernel took 6.64 and 2.89. Other FP32
#: layers and temporal ones are offered to find and tuning, which time them.
#: tests/unit/test_bench_fewk_h200.py recomputes the figures.
FP32_STEM_CHANNELS = 4
#: The directions in which they claim temporal layers (D x (H*W) images), channels-last alone:
#: over R(2+1)D-18's eleven 3x1x1 layers (FP16, batch 32, H100: bench/results/
#: fewk_h100-6a76905/temporal.json) the best slices solver against the best 3-D one took, in
#: NDHWC, backward data 1.92 against 2.20 of cuDNN on the four whose channels are multiples
#: of 16 and 0.99 against 1.25 on the seven padded ones, backward weights 1.81 against 2.12
#: (aligned; padded 0.99 against 1.00, where NOT_FIRST keeps the padded one out); forward
#: 1.41 against 1.47 and 0.83 against 0.78 (mixed: no claim); in NCDHW the 3-D solvers
#: through NDHWC were faster in every direction (0.89-1.15 against 1.38-2.47).
TEMPORAL_FIRST = ("B", "W")
#: The registry's `ranks_first` (solvers/__init__.py hands it over: this module cannot import
#: the registry, which imports it).
_PRECEDENCE: list[Callable[[Solver, ConvProblem, Target], bool]] = []


def use_precedence(ranks_first: Callable[[Solver, ConvProblem, Target], bool]) -> None:
    """Set the registry's precedence the claims ask on the 2-D problem."""
    _PRECEDENCE[:] = [ranks_first]


def inner_ranks_first(inner: Solver, problem: ConvProblem, target: Target) -> bool:
    """Whether the registry ranks a 2-D solver first on a 2-D problem (False before the
    registry has set its precedence)."""
    return bool(_PRECEDENCE and _PRECEDENCE[0](inner, problem, target))


@lru_cache(maxsize=4096)
def sliced_problem(problem: ConvProblem) -> ConvProblem | None:
    """The 2-D problem that `problem` is, or None where it is not one. A 3-D convolution (not
    transposed), every tensor of one layout, is a 2-D one
    - over its depth slices where its filter has one depth tap, at depth stride 1 and no depth
      padding, in NDHWC: N*D images of H x W (the output's depth is the input's);
    - over (depth, pixel) planes where its filter has one tap in height and width, at stride 1
      and no padding there, in either layout: N images of D x (H*W), a filter of T x 1 (a
      temporal layer; in NCDHW a channel's plane is its D*H*W elements, in NDHWC a pixel's
      channels are contiguous either way).
    A 1x1x1 layer at stride 1 in NDHWC is both; it is taken as the first."""
    p = problem
    if len(p.in_spatial) != 3 or p.mode != "conv" or \
            not p.in_layout == p.wei_layout == p.out_layout or p.in_layout not in _LAYOUT_2D:
        return None
    layout = _LAYOUT_2D[p.in_layout]
    d, h, w = p.in_spatial
    if _one_depth_tap(p):
        return replace(p, n=p.n * d, in_spatial=(h, w), filter=p.filter[1:], pad=p.pad[1:],
                       stride=p.stride[1:], dilation=p.dilation[1:], in_layout=layout,
                       wei_layout=layout, out_layout=layout, trans_output_pad=())
    if p.filter[1:] == (1, 1) and p.stride[1:] == (1, 1) and p.pad[1:] == (0, 0):
        return replace(p, in_spatial=(d, h * w), filter=(p.filter[0], 1),
                       pad=(p.pad[0], 0), stride=(p.stride[0], 1),
                       dilation=(p.dilation[0], 1), in_layout=layout, wei_layout=layout,
                       out_layout=layout, trans_output_pad=())
    return None


def _one_depth_tap(p: ConvProblem) -> bool:
    """One depth tap at depth stride 1 without depth padding, in NDHWC: the depth-slice form."""
    return p.filter[0] == 1 and p.stride[0] == 1 and p.pad[0] == 0 and p.in_layout == "NDHWC"


def _depth_slices(problem: ConvProblem) -> bool:
    """Whether `sliced_problem` takes the problem over its depth slices (N*D images)."""
    return sliced_problem(problem) is not None and _one_depth_tap(problem)


class ConvTritonSlices(InnerSolver, Solver):
    """A 2-D solver (`inner`) on the 2-D problem a 3-D one is (`sliced_problem`)."""

    def __init__(self, inner: Solver) -> None:
        super().__init__(inner, "Slices")

    def _relaid(self, problem: ConvProblem) -> ConvProblem:
        q = sliced_problem(problem)
        assert q is not None, problem.key()
        return q

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        if problem.key_direction not in self.directions:
            return False
        q = sliced_problem(problem)
        return q is not None and self.inner.is_applicable(q, target)

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the inner solver ranks first on the sliced problem among the 2-D families,
        but for the directions of NOT_FIRST's inner families; in FIRST_TYPES; on layers over
        their depth slices, and on temporal layers channels-last in TEMPORAL_FIRST's
        directions; in FP32 (IEEE sums: not the TF32 math's), on stems (FP32_STEM_CHANNELS)
        over their depth slices."""
        if self.direction in NOT_FIRST.get(type(self.inner).__name__, ()) or \
                sliced_problem(problem) is None:
            return False
        if problem.in_type == "FP32":
            if self.math == "tf32" or problem.c > FP32_STEM_CHANNELS or \
                    not _depth_slices(problem):
                return False
        elif problem.in_type not in FIRST_TYPES:
            return False
        if not _depth_slices(problem) and (self.direction not in TEMPORAL_FIRST or
                                           problem.in_layout != "NDHWC"):
            return False
        return inner_ranks_first(self.inner, self._relaid(problem), target)

    def ahead_of_portable(self, problem: ConvProblem, target: Target) -> bool:
        ahead = getattr(self.inner, "ahead_of_portable", None)
        return bool(ahead(self._relaid(problem), target)) if ahead is not None else False

    # ------------------------------------------------------------------ kernels
    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """None: the objects are the inner solver's, which ships them."""
        return []

    def workspace_slots(self, problem: ConvProblem, params: Params) -> dict[str, int]:
        return self.inner.workspace_slots(self._relaid(problem), params)

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return self.inner.workspace_for(self._relaid(problem), params)

    # ------------------------------------------------------------------ launches
    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """The inner solver's launch on the sliced problem: the same tensors, read as its
        images."""
        return self.inner.launch(self._relaid(problem), params, specialised)

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        return self.inner.lead_ins(self._relaid(problem), params, target)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        return self.inner.follow_ups(self._relaid(problem), params, target)

    def unaligned_follow_ups(self, problem: ConvProblem, params: Params, target: Target
                             ) -> tuple[tuple[CompileJob, Launch], ...]:
        return self.inner.unaligned_follow_ups(self._relaid(problem), params, target)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return self.inner.launch_geometry(self._relaid(problem), params)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        """(blocks, threads per block, tile efficiency) of the inner solver's launch on the
        sliced problem, for the miss ranking's features."""
        q = self._relaid(problem)
        own: Any = getattr(self.inner, "ranking_geometry", None)
        if own is not None:
            blocks, block, eff = own(q, params)
            return int(blocks), int(block), float(eff)
        grid, dims = self.inner.launch_geometry(q, params)
        efficiency: Any = getattr(self.inner, "efficiency", None)
        eff = float(efficiency(conv_view(q), params)) if callable(efficiency) else 1.0
        return grid[0] * grid[1] * grid[2], dims[0] * dims[1] * dims[2], eff

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return self.inner.heuristic_rank(self._relaid(problem), target)


def slices_first(problem: ConvProblem, target: Target, math: str = "ieee") -> bool:
    """Whether a slices solver of `math` applies and claims the problem (the registry's
    FIRST_CLAIMS)."""
    return sliced_problem(problem) is not None and any(
        s.math == math and s.is_applicable(problem, target) and s.claims_first(problem, target)
        for s in SLICES_SOLVERS)


def _slices_solvers() -> list[Solver]:
    from .triton_conv import TRITON_SOLVERS
    from .triton_fma import FMA_SOLVERS
    from .triton_fma_bwd import FMA_BWD_SOLVERS
    from .triton_fma_wrw import FMA_WRW_SOLVERS
    from .triton_padded import PADDED_SOLVERS

    return [ConvTritonSlices(s) for s in (*TRITON_SOLVERS, *PADDED_SOLVERS, *FMA_SOLVERS,
                                          *FMA_BWD_SOLVERS, *FMA_WRW_SOLVERS)]


SLICES_SOLVERS: list[Solver] = _slices_solvers()
