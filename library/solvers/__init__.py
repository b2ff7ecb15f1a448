"""The convolution solver registry: every solver in a fixed order, looked up by name.

The order is MIOpen's habit of listing cheaper-to-try solvers first; immediate mode ranks by
`Solver.heuristic_rank`, not by this order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target
from .base import CompileJob, KernelArg, Launch, Params, Solver
from .blas_1x1 import (
    BLAS_SOLVERS,
    ConvBlasGemm1x1,
    blas_first,
    gemm_call,
    misaligned_via,
    offered,
)
from .blas_im2col import IM2COL_SOLVERS, ConvBlasIm2col
from .blas_relayout import VIA_BLAS_SOLVERS, ConvBlasGemm1x1ViaNhwc
from .direct import ConvDirect
from .gemm1x1 import Conv1x1Gemm
from .igemm import ConvImplicitGemm
from .triton_1x1 import GEMM1X1_SOLVERS, ConvTritonGemm1x1, gemm1x1_first
from .triton_3d import TRITON_3D_SOLVERS, ConvTriton3d
from .triton_3d_chunks import (
    CHUNK_3D_SOLVERS,
    ConvTriton3dChunks,
    ConvTriton3dRelaidChunks,
    relaid_chunks_first,
)
from .triton_3d_relaid import RELAID_3D_SOLVERS, ConvTriton3dRelaid, relaid_first
from .triton_3d_smallc import (
    SMALLC_3D_SOLVERS,
    ConvTriton3dSmallC,
    ConvTriton3dSmallCChunks,
    ConvTritonSmallC,
    ConvTritonSmallCChunks,
    smallc_2d_chunks_first,
    smallc_2d_first,
    smallc_chunks_first,
    smallc_first,
)
from .triton_3d_taps import (
    TAPS_3D_SOLVERS,
    ConvTriton3dRelaidTaps,
    ConvTriton3dTaps,
    relaid_taps_first,
    taps_first,
)
from .triton_chunks import CHUNK_SOLVERS, ConvTritonImplicitGemmChunks
from .triton_common import companion_jobs as _triton_companions
from .triton_conv import TRITON_SOLVERS, ConvTritonImplicitGemm
from .triton_conv_relayout import VIA_SOLVERS, ConvTritonImplicitGemmRelayout, via_layout
from .triton_depth_taps import DEPTH_TAPS_SOLVERS, ConvTritonDepthTaps, depth_taps_first
from .triton_depthwise import DEPTHWISE_SOLVERS, ConvTritonDepthwise, depthwise_first
from .triton_depthwise_3d import DEPTHWISE_3D_SOLVERS, ConvTritonDepthwise3d, depthwise_3d_first
from .triton_fma import FMA_SOLVERS, ConvTritonFma, ConvTritonFmaFewK, fewk_first, fma_first
from .triton_fma_bwd import (
    FMA_BWD_SOLVERS,
    ConvTritonFmaBwd,
    ConvTritonFmaFewKBwd,
    fewk_bwd_first,
    stem_bwd_first,
)
from .triton_fma_chunks import (
    FMA_CHUNK_SOLVERS,
    ConvTritonFmaChunksBwd,
    ConvTritonFmaFewKBwdChunks,
    ConvTritonFmaFewKChunks,
    ConvTritonFmaFewKWrwChunks,
    fma_chunks_first,
)
from .triton_fma_wrw import (
    FMA_WRW_SOLVERS,
    ConvTritonFmaFewCWrw,
    ConvTritonFmaFewKWrw,
    fewc_wrw_first,
    fewk_wrw_first,
)
from .triton_grouped import GROUPED_SOLVERS, ConvTritonGrouped, grouped_first
from .triton_kn2row import KN2ROW_BLAS_SOLVERS, KN2ROW_SOLVERS, ConvBlasKn2Row, blas_kn2row_first
from .triton_padded import PADDED_SOLVERS, ConvTritonImplicitGemmPadded, padded_first
from .triton_padded_chunks import (
    PADDED_CHUNK_SOLVERS,
    ConvTritonImplicitGemmPaddedChunks,
    padded_chunks_first,
)
from .triton_planes import PLANES_SOLVERS, ConvTritonPlanes, planes_first
from .triton_pointwise import POINTWISE_SOLVERS, ConvTritonPointwise, pointwise_first
from .triton_relayout_chunks import (
    VIA_CHUNK_SOLVERS,
    ConvTritonImplicitGemmRelayoutChunks,
    via_chunks_first,
)
from .triton_slices import SLICES_SOLVERS, ConvTritonSlices, slices_first, use_precedence
from .triton_winograd import WINOGRAD_SOLVERS, ConvTritonWinogradWrw, winograd_first
from .winograd import ConvWinograd3x3

__all__ = [
    "SOLVERS",
    "BLAS_SOLVERS",
    "VIA_BLAS_SOLVERS",
    "KN2ROW_BLAS_SOLVERS",
    "IM2COL_SOLVERS",
    "ConvBlasIm2col",
    "LIBRARY_SOLVERS",
    "library_solvers",
    "offer_library",
    "get_solver",
    "applicable_solvers",
    "ranked_solvers",
    "all_dynamic_jobs",
    "companion_jobs",
    "with_companions",
    "launch_jobs",
    "ranks_first",
    "YIELDS_TO",
    "FIRST_CLAIMS",
    "CompileJob",
    "KernelArg",
    "Launch",
    "Params",
    "Solver",
]

SOLVERS: list[Solver] = [
    *TRITON_SOLVERS,
    *VIA_SOLVERS,
    *PADDED_SOLVERS,
    *CHUNK_SOLVERS,
    *VIA_CHUNK_SOLVERS,
    *PADDED_CHUNK_SOLVERS,
    *CHUNK_3D_SOLVERS,
    *SMALLC_3D_SOLVERS,
    *WINOGRAD_SOLVERS,
    *GEMM1X1_SOLVERS,
    *POINTWISE_SOLVERS,
    *FMA_SOLVERS,
    *FMA_WRW_SOLVERS,
    *FMA_BWD_SOLVERS,
    *FMA_CHUNK_SOLVERS,
    *KN2ROW_SOLVERS,
    *DEPTHWISE_SOLVERS,
    *DEPTHWISE_3D_SOLVERS,
    *SLICES_SOLVERS,
    *PLANES_SOLVERS,
    *DEPTH_TAPS_SOLVERS,
    *RELAID_3D_SOLVERS,
    *TAPS_3D_SOLVERS,
    *TRITON_3D_SOLVERS,
    *GROUPED_SOLVERS,
    ConvWinograd3x3("F"),
    ConvWinograd3x3("B"),
    Conv1x1Gemm("F"),
    Conv1x1Gemm("B"),
    Conv1x1Gemm("W"),
    ConvImplicitGemm("F"),
    ConvImplicitGemm("B"),
    ConvImplicitGemm("W"),
    ConvDirect("F"),
    ConvDirect("B"),
    ConvDirect("W"),
]


# ------------------------------------------------------------------ precedence ("ranks first")
#: A family's claim on a problem for a solver of precision `math`: its solver standing for
#: that precision and the problem's direction applies and claims first place there
#: (`Solver.claims_first`). The Via solvers' claim is their tables' (the spec's
#: `via_other_layout`): where they list a case, the problem's own layout is the slower one.
FIRST_CLAIMS: dict[type[Solver], Callable[[ConvProblem, Target, str], bool]] = {
    ConvBlasGemm1x1: lambda p, t, math: blas_first(p, t, math) and not (
        gemm_call(p) is None and gemm1x1_first(p, t)),
    ConvTritonImplicitGemmRelayout: lambda p, t, math: via_layout(p, t, math) is not None,
    ConvTritonImplicitGemmPadded: lambda p, t, math: math == "ieee" and padded_first(p, t),
    ConvTritonWinogradWrw: winograd_first,
    ConvTritonGemm1x1: lambda p, t, math: gemm1x1_first(p, t) and not misaligned_via(p, t, math),
    ConvTritonDepthwise: lambda p, t, math: depthwise_first(p, t),
    ConvTritonDepthwise3d: lambda p, t, math: depthwise_3d_first(p, t),
    ConvTritonGrouped: lambda p, t, math: grouped_first(p, t),
    ConvTriton3dRelaid: lambda p, t, math: relaid_first(p, t, math),
    ConvTriton3dRelaidChunks: lambda p, t, math: math == "ieee" and relaid_chunks_first(p, t),
    ConvTritonImplicitGemmRelayoutChunks: via_chunks_first,
    ConvTritonImplicitGemmPaddedChunks: padded_chunks_first,
    ConvTriton3dTaps: lambda p, t, math: math == "ieee" and taps_first(p, t),
    ConvTriton3dRelaidTaps: lambda p, t, math: math == "ieee" and relaid_taps_first(p, t),
    ConvTriton3dSmallC: lambda p, t, math: math == "ieee" and smallc_first(p, t),
    ConvTriton3dSmallCChunks: lambda p, t, math: math == "ieee" and smallc_chunks_first(p, t),
    ConvTritonSmallC: lambda p, t, math: math == "ieee" and smallc_2d_first(p, t),
    ConvTritonSmallCChunks: lambda p, t, math: math == "ieee" and smallc_2d_chunks_first(p, t),
    # In FP32 an IEEE family gives way to the three-product slices solvers too (FP32 sums
    # either way; the video stems': triton_slices.FP32_STEM_CHANNELS).
    ConvTritonSlices: lambda p, t, math: slices_first(p, t, math) or (
        math == "ieee" and p.in_type == "FP32" and slices_first(p, t, "tf32x3")),
    # The planes solvers claim in FP32 alone, IEEE or three-product sums: a family of either
    # gives way to either (the FP32-unit families' claims are IEEE ones).
    ConvTritonPlanes: lambda p, t, math: math != "tf32" and (
        planes_first(p, t, "ieee") or planes_first(p, t, "tf32x3")),
    ConvTritonDepthTaps: lambda p, t, math: math != "tf32" and (
        depth_taps_first(p, t, "ieee") or depth_taps_first(p, t, "tf32x3")),
    ConvTritonFma: lambda p, t, math: math != "tf32" and fma_first(p, t),
    ConvTritonFmaFewK: lambda p, t, math: math != "tf32" and fewk_first(p, t),
    ConvTritonFmaFewKWrw: lambda p, t, math: math != "tf32" and fewk_wrw_first(p, t),
    ConvTritonFmaFewKBwd: lambda p, t, math: math != "tf32" and fewk_bwd_first(p, t),
    ConvTritonFmaBwd: lambda p, t, math: math != "tf32" and stem_bwd_first(p, t),
    ConvTritonFmaFewCWrw: lambda p, t, math: math != "tf32" and fewc_wrw_first(p, t),
    ConvTritonFmaFewKChunks: lambda p, t, math: math != "tf32" and fma_chunks_first(p, t),
    ConvTritonFmaFewKWrwChunks: lambda p, t, math: math != "tf32" and fma_chunks_first(p, t),
    ConvTritonFmaFewKBwdChunks: lambda p, t, math: math != "tf32" and fma_chunks_first(p, t),
    ConvTritonFmaChunksBwd: lambda p, t, math: math != "tf32" and fma_chunks_first(p, t),
    # kn2row's library form claims in FP32 at IEEE accuracy: IEEE and three-product families
    # give way to it.
    ConvBlasKn2Row: lambda p, t, math: math != "tf32" and blas_kn2row_first(p, t) and any(
        s.is_applicable(p, t) for s in KN2ROW_BLAS_SOLVERS if s.math == "ieee"),
    # The im2col form's solver of the same math (three-product families' is the IEEE one).
    ConvBlasIm2col: lambda p, t, math: any(
        s.math == ("tf32" if math == "tf32" else "ieee") and s.claims_first(p, t) and
        s.is_applicable(p, t) for s in IM2COL_SOLVERS),
}
#: Which families give way to which where both claim a problem (measured on the H100:
#: bench/results/README.md): the implicit GEMM to its Via and padded solvers (the padded ones
#: only take channel counts the aligned objects refuse: bench/results/README.md,
#: padded_h200), the padded ones to the Via solvers, and all to the Winograd
#: backward weights and the 1x1 GEMMs; all three to the depthwise and grouped direct families
#: on the problems they take (groups = channels, or 2-8 channels and filters a group: GEMMs
#: that narrow and their transforms waste the tensor cores there). The Triton 1x1 GEMM gives
#: way to the GEMM library's one call, and the library through channels-last copies (channel-
#: planar backward weights) to the Triton 1x1 GEMM where its aligned object applies (its claim
#: in FIRST_CLAIMS leaves those problems out): bench/results/ranking_zoo_compare-39642db.json;
#: the 1x1 GEMM's claim leaves out the forward and backward-data problems the library takes
#: through copies (blas_1x1.misaligned_via), where it gives way to the library either way.
#: The library gives way to the few-filter direct kernel (triton_fma) where that claims (its
#: claim leaves out the 1x1 layers of many positions, the library's); the backward weights and
#: backward data kernels on the FP32 units (triton_fma_wrw, triton_fma_bwd) give way to the
#: library where it claims (a filter that covers the input: DCGAN's 4x4 head, 0.41 and 0.31-0.42
#: of cuDNN on it).
#: The 3-D family (triton_3d), which claims every 3-D problem it takes, gives way to its
#: relaid solvers (triton_3d_relaid: NCDHW through NDHWC, odd channels padded) and its
#: several-taps backward weights (triton_3d_taps) where they claim one, the relaid backward
#: weights to the relaid several-taps ones; likewise its
#: batch-chunk solvers (triton_3d_chunks) to the relaid ones' chunk solvers; all of them to
#: the few-channel solvers (triton_3d_smallc) and their chunk solvers (which also take the
#: backward data problems whose products exceed one launch's workspace); every 3-D family to
#: the 3-D depthwise solvers (triton_depthwise_3d) on the problems they take. The 3-D implicit
#: GEMM, its relaid and several-taps solvers give way to the slices solvers (triton_slices: a
#: 3-D channels-last layer of one depth tap at depth stride 1 as a 2-D one over N*D images) and
#: the planes solvers (triton_planes: such a layer in NCDHW, a 2-D launch per depth slice),
#: and in backward data to the depth-taps solvers (triton_depth_taps: a 2-D launch per depth
#: slice and tap, summed by the split reduce; they give way to the few-channel 3-D solvers,
#: 1.09-1.40 of cuDNN on 3D U-Net's first layer where they took 7.86-15.32) where those claim
#: it, and to the GEMM library
#: where it claims (a 1x1x1 layer at stride 1 is the 2-D layer's call). On 2-D problems of
#: few channels or few filters the implicit GEMM and its Via solvers (the padded ones: few
#: filters) give way, in forward, backward weights and backward data at stride 1 (but under
#: the TF32 math), to the direct kernels on the FP32 units (triton_fma, triton_fma_wrw,
#: triton_fma_bwd) where they claim; the
#: implicit GEMM, its padded and Via solvers and its batch-chunk solvers
#: (triton_chunks) give way to the few-channel kernels' 2-D solvers and their chunk solvers
#: where those claim one (`conv_triton_3d_smallc_spec.first_2d`), and those, in backward data
#: at stride 1, to the few-channel backward data on the FP32 units (triton_fma_bwd: the
#: few-filter forward, 0.54 of cuDNN's forward on a 128 -> 3 layer at 512x512, where the
#: few-channel kernels took 1.22-1.41 of cuDNN's backward data on the 3-channel stems at stride
#: 1; the two compared through cuDNN, not side by side) and in backward weights to the
#: few-channel backward weights on the FP32 units (triton_fma_wrw, where it claims: 3x3 and
#: 4x4 stems channels-last, 3.0-3.7x cuDNN on the few-channel kernels); the batch-chunk solvers to
#: the Via solvers' chunk solvers (triton_relayout_chunks), which give way to the few-channel
#: ones; the batch-chunk solvers to the padded solvers' chunk solvers (triton_padded_chunks:
#: 16-bit channels-last odd channel counts) where they claim the first chunk, which give way
#: to the few-channel ones; all of them to the few-filter kernels' chunk solvers
#: (triton_fma_chunks) where those claim the first chunk. The implicit GEMM, its padded and Via
#: solvers, the few-channel kernels' 2-D solvers, the Winograd backward weights and the
#: few-channel backward weights on the FP32 units give way to the im2col form (blas_im2col)
#: where `IM2COL_FIRST` lists the case, which gives way to the few-filter forward kernels
#: (triton_fma) and kn2row's library form where those claim; in 3-D layers (cases NCDHW,
#: NDHWC) the 3-D implicit GEMM, its relaid, several-taps and few-channel solvers, the
#: depth-taps, slices and planes solvers give way to it likewise. A family not listed gives way
#: to none.
_SMALLC_2D: tuple[type[Solver], ...] = (ConvTritonSmallC, ConvTritonSmallCChunks)
_FMA: tuple[type[Solver], ...] = (ConvTritonFma, ConvTritonFmaFewK, ConvTritonFmaFewKWrw,
                                  ConvTritonFmaFewKBwd, ConvTritonFmaFewCWrw, ConvTritonFmaBwd)
_SLICES: tuple[type[Solver], ...] = (ConvTritonSlices, ConvTritonPlanes, ConvBlasGemm1x1)
_FMA_CHUNKS: tuple[type[Solver], ...] = (ConvTritonFmaFewKChunks, ConvTritonFmaFewKWrwChunks,
                                         ConvTritonFmaFewKBwdChunks, ConvTritonFmaChunksBwd)
YIELDS_TO: dict[type[Solver], tuple[type[Solver], ...]] = {
    ConvTritonImplicitGemm: (ConvTritonImplicitGemmRelayout, ConvTritonImplicitGemmPadded,
                             ConvTritonWinogradWrw, ConvTritonGemm1x1, ConvTritonDepthwise,
                             ConvTritonGrouped, ConvBlasGemm1x1, *_SMALLC_2D, *_FMA,
                             ConvBlasKn2Row, ConvBlasIm2col),
    ConvTritonImplicitGemmPadded: (ConvTritonImplicitGemmRelayout, ConvTritonWinogradWrw,
                                   ConvTritonGemm1x1, ConvTritonDepthwise, ConvTritonGrouped,
                                   ConvBlasGemm1x1, *_SMALLC_2D, ConvTritonFmaFewK,
                                   ConvTritonFmaFewKWrw, ConvTritonFmaFewKBwd,
                                   ConvTritonFmaFewCWrw, ConvTritonFmaBwd, ConvBlasKn2Row,
                                   ConvBlasIm2col),
    ConvTritonImplicitGemmRelayout: (ConvTritonWinogradWrw, ConvTritonGemm1x1,
                                     ConvTritonDepthwise, ConvTritonGrouped, ConvBlasGemm1x1,
                                     *_SMALLC_2D, *_FMA, ConvBlasKn2Row, ConvBlasIm2col),
    ConvTritonImplicitGemmChunks: (ConvTritonImplicitGemmRelayoutChunks,
                                   ConvTritonImplicitGemmPaddedChunks, *_SMALLC_2D,
                                   *_FMA_CHUNKS),
    ConvTritonImplicitGemmPaddedChunks: (*_SMALLC_2D, *_FMA_CHUNKS),
    ConvTritonImplicitGemmRelayoutChunks: (*_SMALLC_2D, *_FMA_CHUNKS),
    ConvTritonGemm1x1: (ConvBlasGemm1x1,),
    ConvBlasGemm1x1: (ConvTritonFmaFewK,),
    ConvTritonFmaFewKWrw: (ConvBlasGemm1x1, ConvBlasIm2col),
    ConvTritonFmaFewCWrw: (ConvBlasGemm1x1, ConvBlasIm2col),
    ConvTritonFmaFewKBwd: (ConvBlasGemm1x1, ConvBlasKn2Row),
    ConvTritonFmaBwd: (ConvBlasGemm1x1, ConvBlasKn2Row),
    ConvTritonFma: (ConvBlasKn2Row,),
    ConvTritonFmaFewK: (ConvBlasKn2Row,),
    ConvBlasGemm1x1ViaNhwc: (ConvTritonGemm1x1,),
    ConvTritonWinogradWrw: (ConvTritonDepthwise, ConvTritonGrouped, ConvBlasIm2col),
    ConvBlasIm2col: (ConvTritonFma, ConvTritonFmaFewK, ConvBlasKn2Row),
    ConvTriton3d: (ConvTriton3dRelaid, ConvTriton3dTaps, ConvTriton3dSmallC,
                   ConvTriton3dSmallCChunks, ConvTritonDepthwise3d, *_SLICES,
                   ConvTritonDepthTaps, ConvBlasIm2col),
    ConvTriton3dRelaid: (ConvTriton3dRelaidTaps, ConvTriton3dSmallC, ConvTriton3dSmallCChunks,
                         ConvTritonDepthwise3d, *_SLICES, ConvTritonDepthTaps, ConvBlasIm2col),
    ConvTriton3dRelaidTaps: (ConvTriton3dSmallC, ConvTriton3dSmallCChunks,
                             ConvTritonDepthwise3d, *_SLICES, ConvTritonDepthTaps,
                             ConvBlasIm2col),
    ConvTriton3dTaps: (ConvTritonDepthwise3d, *_SLICES, ConvTritonDepthTaps, ConvBlasIm2col),
    ConvTritonDepthTaps: (ConvTriton3dSmallC, ConvTriton3dSmallCChunks, ConvBlasIm2col),
    ConvTriton3dChunks: (ConvTriton3dRelaidChunks, ConvTriton3dSmallCChunks,
                         ConvTritonDepthwise3d),
    ConvTriton3dRelaidChunks: (ConvTriton3dSmallCChunks, ConvTritonDepthwise3d),
    ConvTriton3dSmallC: (ConvTritonDepthwise3d, *_SLICES, ConvBlasIm2col),
    ConvTritonSlices: (ConvBlasIm2col,),
    ConvTritonPlanes: (ConvBlasIm2col,),
    ConvTriton3dSmallCChunks: (ConvTritonDepthwise3d,),
    ConvTritonSmallC: (ConvTritonFmaFewKBwd, ConvTritonFmaFewCWrw, ConvBlasKn2Row,
                       ConvBlasIm2col),
    ConvTritonSmallCChunks: (ConvTritonFmaFewKBwd, ConvTritonFmaFewCWrw),
}

#: The pointwise row GEMMs (triton_pointwise) claim 1x1 channels-last layers narrow on one side
#: only where a run measured them against immediate mode's first choice there (their spec's
#: FIRST): every family gives way to them (an IEEE family's claim, not the TF32 math's).
FIRST_CLAIMS[ConvTritonPointwise] = lambda p, t, math: math != "tf32" and pointwise_first(p, t)
for _family in {*YIELDS_TO, *FIRST_CLAIMS} - {ConvTritonPointwise}:
    YIELDS_TO[_family] = (*YIELDS_TO.get(_family, ()), ConvTritonPointwise)


def ranks_first(solver: Solver, problem: ConvProblem, target: Target) -> bool:
    """Whether the miss ranking puts `solver`'s candidate for `problem` ahead of those of
    solvers that do not rank first: it claims the problem (`Solver.claims_first`) and no
    family it gives way to (YIELDS_TO) claims it for the same precision (FIRST_CLAIMS)."""
    return solver.claims_first(problem, target) and not any(
        FIRST_CLAIMS[family](problem, target, solver.math)
        for family in YIELDS_TO.get(type(solver), ()))


use_precedence(ranks_first)


def companion_jobs(job: CompileJob) -> tuple[CompileJob, ...]:
    """The jobs whose objects a launch of `job`'s object needs after it (`Solver.follow_ups`):
    every build, package closure and tuning set that holds `job` holds them too."""
    return _triton_companions(job)


def with_companions(jobs: Iterable[CompileJob]) -> list[CompileJob]:
    """`jobs` and their companions, without repeats, in first-seen order."""
    out: dict[CompileJob, None] = {}
    for job in jobs:
        out.setdefault(job, None)
        for companion in companion_jobs(job):
            out.setdefault(companion, None)
    return list(out)


def launch_jobs(solver: Solver, problem: ConvProblem, params: Params, target: Target
                ) -> list[CompileJob]:
    """Every object one call of `solver` on `problem` runs: the main (shape-agnostic) job,
    its companions, and the jobs of its lead-ins and follow-ups (a Via solver's transposes),
    without repeats."""
    main = solver.compile_job(problem, params, target, specialised=False)
    out: dict[CompileJob, None] = dict.fromkeys(with_companions([main]))
    for job, _ in (*solver.lead_ins(problem, params, target),
                   *solver.follow_ups(problem, params, target)):
        out.setdefault(job, None)
    return list(out)


def get_solver(name: str) -> Solver:
    """The solver called `name`; ProblemError names the known ones otherwise."""
    for solver in SOLVERS:
        if solver.name == name:
            return solver
    known = ", ".join(s.name for s in SOLVERS)
    raise ProblemError(f"unknown solver {name!r}; known solvers: {known}")


#: The GEMM-library solvers: the 1x1 calls, the channel-planar backward weights through
#: copies, kn2row's GEMM and the products over an im2col (forward, few-channel backward
#: weights).
LIBRARY_SOLVERS: list[Solver] = [*BLAS_SOLVERS, *VIA_BLAS_SOLVERS, *KN2ROW_BLAS_SOLVERS,
                                  *IM2COL_SOLVERS]


def library_solvers(backend: object) -> list[Solver]:
    """The GEMM-library solvers a runtime on `backend` offers (blas_1x1.offered); none where
    it offers none."""
    return list(LIBRARY_SOLVERS) if offered(backend) else []


def offer_library() -> list[Solver]:
    """The registry's solvers and the GEMM library's, ranked from here on in this process as
    a CUDA runtime where the library loads ranks them (they claim first place): immediate
    mode's choices on such a machine, worked out on one without a GPU (bench/zoo.py --picks
    --library, bench/ranking_zoo.py)."""
    from . import blas_1x1

    blas_1x1._offered[0] = True
    return [*SOLVERS, *LIBRARY_SOLVERS]


def applicable_solvers(problem: ConvProblem, target: Target) -> list[Solver]:
    """Solvers that can compute `problem` on `target`, in registry order."""
    return [s for s in SOLVERS if s.is_applicable(problem, target)]


def ranked_solvers(problem: ConvProblem, target: Target) -> list[Solver]:
    """Applicable solvers, best first by `heuristic_rank` (immediate mode without a FindDb)."""
    return sorted(applicable_solvers(problem, target),
                  key=lambda s: s.heuristic_rank(problem, target))


def all_dynamic_jobs(target: Target) -> list[CompileJob]:
    """Every solver's shape-agnostic jobs for `target`, without duplicates, in registry order,
    then the GEMM library's solvers' (objects of ours they launch beside the library)."""
    seen: dict[CompileJob, None] = {}
    for solver in (*SOLVERS, *LIBRARY_SOLVERS):
        for job in solver.dynamic_jobs(target):
            seen.setdefault(job, None)
    return list(seen)
