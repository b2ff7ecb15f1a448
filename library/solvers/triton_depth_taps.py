"""ConvTritonImplicitGemm{,Tf32,Tf32x3}DepthTapsBwd: FP32 backward data of 3-D layers of several
depth taps, a 2-D launch per depth slice and tap, summed by the split reduce.

At depth stride 1 (dilation 1), slice d of dx is the sum over the filter's depth taps t of a
2-D backward data: dy's slice d + pad - t (where it exists) on the filters' slice t. Slice d of
an NCDHW tensor is an NCHW tensor of N images whose image stride is C*D*H*W and channel stride
D*H*W, d planes into it; slice d of an NDHWC one an NHWC tensor whose image stride is D*H*W*C;
tap t of the filters (K, C, T, R, S) is a KCRS tensor of filter stride C*T*R*S and channel
stride T*R*S, t*R*S elements in, and of (K, T, R, S, C) a KRSC one of filter stride T*R*S*C,
t*R*S*C elements in (solvers/triton_planes.py reads one depth tap's layers the same way). The
2-D implicit GEMM (`inner`, backward data, unsplit) computes each (slice, tap) into its own
part of the workspace (FP32, the slice's packed 2-D layout), and the split reduce
(`conv2d_bwd_weight_reduce`, the same object every split launch of the implicit GEMM uses)
sums a slice's parts into dx at its strides: a slice no tap reaches is written zero.

Parameters and objects are the inner solver's on one slice (N images), unsplit; the objects
that assume aligned pointers and strides where every (slice, tap)'s offsets and strides keep
them, else those that assume nothing (`_aligned`). FP32 alone (the parts are the kernel's
output type).

They claim the stems (at most triton_slices.FP32_STEM_CHANNELS channels) where one (slice,
tap)'s launch fills the GPU (triton_planes.STEM_WAVES, the planes solvers' rule) and the inner
solver ranks first on the 2-D layer of N*D images, and give way to the few-channel 3-D solvers
where those claim (YIELDS_TO). On the H100 (bench/results/depth_taps_h100/depth_taps.json,
against IEEE cuDNN) R3D-18's 3x7x7 stem took, in NCDHW and NDHWC, 1.10 and 1.71 of cuDNN's GPU
time at batch 32 and 1.63 and 2.30 at batch 8, where the three-product 3-D implicit GEMM took
6.39 and 13.22, 6.31 and 12.99; at batch 1 (98 blocks a launch on 132 SMs) 8.78 and 11.01
against 5.35 and 11.37. On 3D U-Net's first layer (one channel, 3x3x3 at stride 1) the
few-channel 3-D solvers took 0.90-1.40 where these took 7.73-15.32.
tests/unit/test_triton_depth_taps.py recomputes the figures. Other problems are offered to find
and tuning.
"""

from __future__ import annotations

import math
from functools import lru_cache

from .._record import replace
from ..errors import ProblemError
from ..problem import TYPE_BYTES, ConvProblem
from ..target import Target
from .base import CompileJob, InnerSolver, Launch, Params, Solver
from .triton_common import moved, problem_view, reduce_step, spec_module
from .triton_planes import STEM_WAVES
from .triton_slices import FP32_STEM_CHANNELS, inner_ranks_first

__all__ = ["DEPTH_TAPS_SOLVERS", "ConvTritonDepthTaps", "depth_taps_first",
           "depth_taps_problem"]

_LAYOUT_2D = {"NCDHW": "NCHW", "NDHWC": "NHWC"}
_SPLIT = 4  # SPLIT_K's place in the implicit GEMM's parameters
_ALIGN = 16  # bytes the aligned objects assume of every pointer

Step = tuple[CompileJob, Launch]


@lru_cache(maxsize=4096)
def depth_taps_problem(problem: ConvProblem) -> ConvProblem | None:
    """The 2-D backward data of one depth slice and tap (N images) of an FP32 3-D convolution
    (not transposed, one layout) of two or more depth taps at depth stride and dilation 1;
    None for any other problem."""
    p = problem
    if len(p.in_spatial) != 3 or p.mode != "conv" or p.key_direction != "B" or \
            p.in_type != "FP32" or not p.in_layout == p.wei_layout == p.out_layout or \
            p.in_layout not in _LAYOUT_2D or p.filter[0] < 2 or p.stride[0] != 1 or \
            p.dilation[0] != 1:
        return None
    layout = _LAYOUT_2D[p.in_layout]
    return replace(p, in_spatial=p.in_spatial[1:], filter=p.filter[1:], pad=p.pad[1:],
                   stride=p.stride[1:], dilation=p.dilation[1:], in_layout=layout,
                   wei_layout=layout, out_layout=layout, trans_output_pad=())


def _one(problem: ConvProblem) -> ConvProblem:
    q = depth_taps_problem(problem)
    assert q is not None, problem.key()
    return q


def _taps(problem: ConvProblem, depth: int) -> list[int]:
    """The filter's depth taps that reach dx's slice `depth` (dy's slice depth + pad - t
    exists)."""
    out_d = problem.out_spatial[0]
    return [t for t in range(problem.filter[0]) if 0 <= depth + problem.pad[0] - t < out_d]


def _part_bytes(problem: ConvProblem) -> int:
    """One (slice, tap)'s part of the workspace: the slice's dx in FP32. The parts follow
    each other unpadded: the reduce reads part i at i times the slice's elements (a part
    rounded up to WORKSPACE_ALIGN left the reduce reading the padding: NaN in dx on the GPU
    grid wherever a slice was not a multiple of 256 bytes)."""
    p = problem
    return p.n * p.c * p.in_spatial[1] * p.in_spatial[2] * 4


def _rewrites(problem: ConvProblem, depth: int, tap: int) -> dict[str, tuple[str, int, dict[
        str, int]]]:
    """Per activation or weights tensor (the caller's name): (pointer name, byte offset,
    {stride argument: value}) at dx's slice `depth` (the reduce's), dy's slice `depth + pad -
    tap` and the filters' tap `tap`, in the implicit GEMM's argument names."""
    p = problem
    depth_in, h, w = p.in_spatial
    depth_out, ph, pw = p.out_spatial
    taps, r, s = p.filter
    elem = TYPE_BYTES[p.in_type]
    planar = p.in_layout == "NCDHW"
    plane_x, plane_y, plane_w = h * w, ph * pw, r * s
    per_group = p.c // p.groups  # the filters' channels
    if planar:
        x = {"sxn": p.c * depth_in * plane_x, "sxc": depth_in * plane_x}
        y = {"syn": p.k * depth_out * plane_y, "syk": depth_out * plane_y}
        wei = {"swk": per_group * taps * plane_w, "swc": taps * plane_w}
        offsets = (depth * plane_x, (depth + p.pad[0] - tap) * plane_y, tap * plane_w)
    else:
        x = {"sxn": depth_in * plane_x * p.c}
        y = {"syn": depth_out * plane_y * p.k}
        wei = {"swk": taps * plane_w * per_group}
        offsets = (depth * plane_x * p.c, (depth + p.pad[0] - tap) * plane_y * p.k,
                   tap * plane_w * per_group)
    return {"dx": ("dx", offsets[0] * elem, x), "dy": ("dy", offsets[1] * elem, y),
            "w": ("w", offsets[2] * elem, wei)}


def _kind(name: str, offset: int) -> str:
    return f"ptr:{name}@{offset}" if offset else f"ptr:{name}"


def _tap_launch(problem: ConvProblem, main: Launch, depth: int, tap: int, part: int) -> Launch:
    """The inner solver's launch (on one slice) as (slice `depth`, tap `tap`): dy's slice and
    the filters' tap at their 3-D strides, dx into the workspace's part `part` (the slice's
    packed 2-D layout, as the launch has it)."""
    moves = _rewrites(problem, depth, tap)
    _, y_at, y = moves["dy"]
    _, w_at, wei = moves["w"]
    return moved(main, names={"x_ptr": f"ptr:ws_p{part}", "y_ptr": _kind("dy", y_at),
                              "w_ptr": _kind("w", w_at)}, values={**y, **wei})


def _reduce(problem: ConvProblem, depth: int, parts: int, target: Target) -> Step:
    """The split reduce that sums a slice's `parts` parts into dx's slice `depth`."""
    one = _one(problem)
    _, args, _, cl = problem_view(one)
    _, x_at, x = _rewrites(problem, depth, 0)["dx"]
    # The parts are dx's slice in its packed 2-D order (any backward data kernel's output).
    values = spec_module().reduce_args("conv2d_bwd_data", {**args, **x}, cl)
    job, launch = reduce_step(problem.in_type, parts, target, "dx", values)
    return job, moved(launch, names={"ws_ptr": "ptr:ws_p0", "w_ptr": _kind("dx", x_at)})


class ConvTritonDepthTaps(InnerSolver, Solver):
    """The 2-D implicit GEMM's backward data (`inner`) per depth slice and tap of a 3-D layer,
    summed by the split reduce."""

    def __init__(self, inner: Solver) -> None:
        super().__init__(inner, "DepthTaps")

    def _relaid(self, problem: ConvProblem) -> ConvProblem:
        return _one(problem)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction not in self.directions or depth_taps_problem(p) is None or \
                max(math.prod(p.in_shape), math.prod(p.out_shape), math.prod(p.wei_shape)) \
                >= 2**31 or not _taps(p, 0):
            return False
        one = _one(p)
        if not self.inner.is_applicable(one, target):
            return False
        params = self.default_params(p, target)
        return self.inner.params_valid(one, target, params) and self._unsplit(p, params, target)

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The inner solver's defaults on one slice, unsplit (a split's reduce would take the
        parts' place)."""
        params = tuple(self.inner.default_params(_one(problem), target))
        if len(params) > _SPLIT and int(params[_SPLIT]) != 1:
            params = (*params[:_SPLIT], 1, *params[_SPLIT + 1:])
        return params

    def _unsplit(self, problem: ConvProblem, params: Params, target: Target) -> bool:
        """Unsplit parameters whose launch the (slice, tap) rewrite takes."""
        if len(params) <= _SPLIT or int(params[_SPLIT]) != 1:
            return False
        one = _one(problem)
        if self.inner.lead_ins(one, params, target) or \
                self.inner.follow_ups(one, params, target):
            return False
        try:
            _tap_launch(problem, self.inner.launch(one, params, False), 0, 0, 0)
        except ProblemError:
            return False
        return True

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        return self.inner.params_valid(_one(problem), target, params) and \
            self._unsplit(problem, tuple(params), target)

    def _unsplit_sets(self, problem: ConvProblem, sets: list[Params], target: Target
                      ) -> list[Params]:
        """The unsplit ones of `sets`, where the (slice, tap) rewrite takes their launch
        (the same launch structure for every unsplit set: one asked)."""
        unsplit = [tuple(s) for s in sets if len(s) > _SPLIT and int(s[_SPLIT]) == 1]
        return unsplit if unsplit and self._unsplit(problem, unsplit[0], target) else []

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self._unsplit_sets(problem, self.inner.param_space(_one(problem), target),
                                  target)

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self._unsplit_sets(problem, self.inner.usual_params(_one(problem), target),
                                  target)

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self._unsplit_sets(problem, self.inner.seed_params(_one(problem), target),
                                  target)

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """On the stems (at most FP32_STEM_CHANNELS channels; not the TF32 math) where one
        (slice, tap)'s launch fills the target's CUs (STEM_WAVES) and the inner solver ranks
        first on the 2-D layer of N*D images."""
        if self.math == "tf32" or problem.c > FP32_STEM_CHANNELS or \
                depth_taps_problem(problem) is None:
            return False
        one = _one(problem)
        grid, _ = self.inner.launch_geometry(one, self.default_params(problem, target))
        if grid[0] * grid[1] * grid[2] < STEM_WAVES * target.cu:
            return False
        return inner_ranks_first(self.inner, replace(one, n=one.n * problem.in_spatial[0]),
                                 target)

    def ahead_of_portable(self, problem: ConvProblem, target: Target) -> bool:
        ahead = getattr(self.inner, "ahead_of_portable", None)
        return bool(ahead(_one(problem), target)) if ahead is not None else False

    # ------------------------------------------------------------------ kernels
    def _aligned(self, problem: ConvProblem, params: Params) -> bool:
        """Whether every (slice, tap)'s launch keeps the aligned object's assumptions: its
        arguments (spec.meets_align16) and every pointer's offset a multiple of 16 bytes (the
        workspace parts' too)."""
        one = _one(problem)
        _, args, kernel, cl = problem_view(one)
        spec = spec_module()
        base, deeper, later = (_rewrites(problem, d, t) for d, t in ((0, 0), (1, 0), (1, 1)))
        strides = {k: v for _, _, d in base.values() for k, v in d.items()}
        # One slice further on dx and dy, one tap further on the filters: every offset is a
        # multiple of these steps.
        steps = (deeper["dx"][1] - base["dx"][1], deeper["dy"][1] - base["dy"][1],
                 later["w"][1] - deeper["w"][1], _part_bytes(problem))  # parts: dx's copies
        return bool(spec.meets_align16({**args, **strides}, cl, problem.in_type, kernel)) and \
            all(step % _ALIGN == 0 for step in steps)

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The inner solver's shape-agnostic object on one slice: the aligned one where every
        (slice, tap) keeps its assumptions, else the one that assumes nothing."""
        one = _one(problem)
        if self._aligned(problem, params):
            return self.inner.compile_job(one, params, target, False)
        return self.unaligned_job(problem, params, target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """None: the objects are the implicit GEMM's and its reduce's, which ship them."""
        return []

    def workspace_slots(self, problem: ConvProblem, params: Params) -> dict[str, int]:
        part = _part_bytes(problem)
        return {f"ws_p{i}": i * part for i in range(problem.filter[0])}

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return _part_bytes(problem) * problem.filter[0]

    # ------------------------------------------------------------------ launches
    def _steps(self, problem: ConvProblem, params: Params, target: Target,
               job: CompileJob) -> list[Step]:
        main = self.inner.launch(_one(problem), params, False)
        steps: list[Step] = []
        for depth in range(problem.in_spatial[0]):
            taps = _taps(problem, depth)
            steps += [(job, _tap_launch(problem, main, depth, t, i)) for i, t in enumerate(taps)]
            steps.append(_reduce(problem, depth, len(taps), target))
        return steps

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """Slice 0's first tap (`is_applicable`: slice 0 has one)."""
        first = _tap_launch(problem, self.inner.launch(_one(problem), params, False), 0,
                            _taps(problem, 0)[0], 0)
        return replace(first, workspace_bytes=self.workspace_for(problem, params))

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[Step, ...]:
        """Every further (slice, tap)'s launch, and each slice's reduce after its taps."""
        job = self.compile_job(problem, params, target)
        return tuple(self._steps(problem, params, target, job)[1:])

    def unaligned_follow_ups(self, problem: ConvProblem, params: Params, target: Target
                             ) -> tuple[Step, ...]:
        job = self.unaligned_job(problem, params, target)
        return tuple(self._steps(problem, params, target, job)[1:])

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """One (slice, tap)'s launch."""
        return self.inner.launch_geometry(_one(problem), params)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        """(blocks of every (slice, tap)'s launch, threads per block, tile efficiency)."""
        one = _one(problem)
        blocks, block, eff = self.inner.ranking_geometry(one, params)  # type: ignore[attr-defined]
        launches = sum(len(_taps(problem, d)) for d in range(problem.in_spatial[0]))
        return int(blocks) * launches, int(block), float(eff)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return self.inner.heuristic_rank(_one(problem), target) * problem.filter[0]


def depth_taps_first(problem: ConvProblem, target: Target, math_mode: str = "ieee") -> bool:
    """Whether a depth-taps solver of `math_mode` applies and claims the problem (the
    registry's FIRST_CLAIMS)."""
    return depth_taps_problem(problem) is not None and any(
        s.math == math_mode and s.is_applicable(problem, target) and
        s.claims_first(problem, target) for s in DEPTH_TAPS_SOLVERS)


def _solvers() -> list[Solver]:
    from .triton_conv import TRITON_SOLVERS

    return [ConvTritonDepthTaps(s) for s in TRITON_SOLVERS
            if getattr(s, "direction", "") == "B"]


DEPTH_TAPS_SOLVERS: list[Solver] = _solvers()
