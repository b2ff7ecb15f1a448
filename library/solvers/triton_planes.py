"""ConvTritonImplicitGemm{,Tf32,Tf32x3}Planes{Fwd,Bwd}, ConvTritonFma{,FewK}PlanesFwd and
ConvTritonFma{,FewK}PlanesBwd: NCDHW layers of one depth tap, a 2-D launch per depth slice.

A filter of one depth tap at depth stride 1 without depth padding (the video stems: R(2+1)D's
1x7x7 and X3D's 1x3x3 on 3 channels at stride (1, 2, 2); (2+1)-D networks' 1x3x3 spatial layers;
X3D's 1x1x1 downsamples) computes each output depth slice from the input slice at the same
depth. In NDHWC that makes the layer a 2-D one over N*D images, the same bytes
(solvers/triton_slices.py). In NCDHW it does not: an image's depth slices lie a plane apart
inside each channel. But depth slice d of an NCDHW tensor is an NCHW tensor of N images, d
planes into it, whose image stride is C*D*H*W and channel stride D*H*W (rather than C*H*W and
H*W), with rows and pixels where an NCHW tensor has them. The 2-D kernels take every stride as
an argument, so a 2-D solver's launches (`inner`: the implicit GEMM in each math, the FP32-unit
families) run on each slice in turn, their pointers a slice's bytes into the caller's tensors
("dx@offset": solvers.base.split_offset) and the image and channel strides of the activations
replaced (`_STRIDES`). The weights (K, C, 1, R, S) are the 2-D layer's KCRS bytes.

The launches are the first slice's (the inner solver's lead-ins, which may only read the
weights, then its launch and follow-ups), and then each further slice's launch and follow-ups
(`follow_ups`). Parameters, objects and workspace are the inner solver's on one slice (N images:
what each launch computes); nothing is compiled or shipped for these solvers. The miss ranking
sees the inner solver's model on the whole layer, with the slices' blocks together.

They apply in forward and backward data (backward weights sums over the slices, which separate
launches cannot), where each activation has fewer than 2**31 elements (the kernels' 32-bit
offsets at the 3-D image stride; larger layers are the batch-chunk solvers'), where each
activation's plane is a multiple of PLANE_ALIGN bytes (so that the
aligned objects' pointers stay aligned at every slice) and where every launch the inner solver
makes on a slice reads and writes the activations through `x_ptr` and `y_ptr` with their image
and channel strides as `sxn`, `sxc`, `syn`, `syk` (a split's reduce writes the output through
`w_ptr`, `swk`, `swc`; a lead-in that copies an activation is refused: such parameters are not
theirs). In FP32 (IEEE and three-product sums) they claim the video stems (STEM_WAVES) where
the inner solver ranks first on the 2-D layer of N*D images among the 2-D families (the
registry's `ranks_first`), as the slices solvers do in NDHWC; the 3-D families give way to
them (YIELDS_TO). Other problems and types are offered to find and tuning, which time them.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from .._record import replace
from ..errors import ProblemError
from ..problem import TYPE_BYTES, ConvProblem
from ..target import Target
from ._conv import kernel_tensors
from .base import CompileJob, InnerSolver, KernelArg, Launch, Params, Solver, split_offset
from .triton_common import kernel_arg
from .triton_slices import FP32_STEM_CHANNELS, inner_ranks_first

__all__ = ["FIRST_SPATIAL", "FIRST_TYPES", "PLANES_SOLVERS", "PLANE_ALIGN", "STEM_WAVES",
           "ConvTritonPlanes", "planes_first", "planes_problem"]

#: Bytes every activation plane (H*W and P*Q elements) is a multiple of: the slices' offsets
#: keep the caller's pointers as aligned as the objects assume (16-byte pointers).
PLANE_ALIGN = 16
#: The 2-D kernels' pointer arguments to the activations -> their image and channel strides
#: (a split's reduce writes its output through `w_ptr`, image and channel strides as `swk`
#: and `swc`).
_STRIDES = {"x_ptr": ("sxn", "sxc"), "y_ptr": ("syn", "syk"), "w_ptr": ("swk", "swc")}

#: They claim first place in these element types (FP32: IEEE and three-product sums) on the
#: stems (at most triton_slices.FP32_STEM_CHANNELS channels), where the inner solver ranks
#: first on the 2-D layer of N*D images and one slice's launch has STEM_WAVES waves of blocks
#: or more on the target. On the H100 at batch 32 (against IEEE cuDNN: bench/results/
#: planes_h100/planes_f.json, planes_b.json) R(2+1)D-18's stem took 1.02 (forward) and 1.07
#: (backward data) of cuDNN's GPU time where the 3-D families' best took 1.84 and 6.64, and
#: X3D-S's (held out) 1.09 and 0.72 against 2.50 and 3.96; at batch 8 (196-400 blocks a
#: slice) they won every stem; at batch 1 (25 and 50 blocks a slice on 132 SMs) R(2+1)D-18's
#: stem took 9.71 and 7.01 against the 3-D kernels' 1.91 and 4.40, X3D-S's forward 7.14
#: against 2.21 (planes_small_F.json, planes_small_B.json). Past the stems they claim
#: nothing: on R(2+1)D-18's spatial layers the relaid 3-D solvers (through NDHWC, three TF32
#: products) that the runtime picks there took FIRST_SPATIAL's figures (zoo_video_before.json
#: against zoo_video-b308c5c.json, which claimed them), and on X3D-S's 1x1x1 downsamples at
#: stride (1, 2, 2) the 3-D families won backward data (0.73-0.85 against 1.13-2.52).
#: tests/unit/test_triton_planes.py recomputes the figures.
FIRST_TYPES = ("FP32",)
STEM_WAVES = 1
#: Where the planes solvers claimed R(2+1)D-18's spatial layers (tree b308c5c), against the
#: relaid 3-D solvers the runtime picked before (ddeba35), over the problems of batch 32, 8
#: and 1 that moved from one to the other: (direction, problems, the planes' GPU-time geomean
#: against cuDNN, the relaid solvers').
FIRST_SPATIAL = (("F", 21, 1.19, 0.83), ("B", 9, 1.48, 1.21))

_SPLIT = 4  # SPLIT_K's place in the 2-D solvers' parameters

Step = tuple[CompileJob, Launch]


@lru_cache(maxsize=4096)
def planes_problem(problem: ConvProblem) -> ConvProblem | None:
    """The 2-D NCHW layer of N*D images that an NCDHW convolution (not transposed) of one
    depth tap at depth stride 1 without depth padding computes slice by slice; None for any
    other problem. Its parameters and claims are asked of the 2-D families on it."""
    p = problem
    if len(p.in_spatial) != 3 or p.mode != "conv" or \
            not p.in_layout == p.wei_layout == p.out_layout == "NCDHW" or \
            (p.filter[0], p.stride[0], p.pad[0]) != (1, 1, 0):
        return None
    d, h, w = p.in_spatial
    return replace(p, n=p.n * d, in_spatial=(h, w), filter=p.filter[1:], pad=p.pad[1:],
                   stride=p.stride[1:], dilation=p.dilation[1:], in_layout="NCHW",
                   wei_layout="NCHW", out_layout="NCHW", trans_output_pad=())


def _slice(problem: ConvProblem) -> ConvProblem:
    """One depth slice's 2-D problem: N images (what each launch computes)."""
    q = planes_problem(problem)
    assert q is not None, problem.key()
    return replace(q, n=problem.n)


def _planes(problem: ConvProblem) -> dict[str, tuple[int, int]]:
    """The caller's activations (by the launches' names) -> (channels, plane elements)."""
    p = problem
    names = kernel_tensors(p)
    return {names["x"]: (p.c, p.in_spatial[1] * p.in_spatial[2]),
            names["y"]: (p.k, p.out_spatial[1] * p.out_spatial[2])}


def _aligned_planes(problem: ConvProblem) -> bool:
    elem = TYPE_BYTES[problem.in_type]
    return all(plane * elem % PLANE_ALIGN == 0 for _, plane in _planes(problem).values())


def _offsets_fit(problem: ConvProblem) -> bool:
    """Whether the kernels' 32-bit offsets reach every element at the slices' strides: each
    activation below 2**31 elements as a whole (a slice's image stride is the 3-D image's)."""
    return max(math.prod(problem.in_shape), math.prod(problem.out_shape)) < 2**31


def _activation(arg: KernelArg, planes: dict[str, tuple[int, int]]) -> bool:
    return arg.is_pointer and arg.whole in planes


def _at_slice(problem: ConvProblem, launch: Launch, depth: int) -> Launch:
    """`launch` (made on one slice's 2-D problem) on depth slice `depth` of the caller's
    NCDHW tensors; ProblemError where it reads or writes an activation otherwise than through
    `_STRIDES`' pointers and strides as a packed NCHW tensor."""
    planes = _planes(problem)
    slices = problem.in_spatial[0]
    elem = TYPE_BYTES[problem.in_type]
    moved: dict[str, str] = {}
    strides: dict[str, tuple[int, int]] = {}
    for arg in launch.args:
        if not _activation(arg, planes):
            continue
        names = _STRIDES.get(arg.name)
        if names is None:
            raise ProblemError(f"{launch.kernel_name} reads {arg.whole} through {arg.name}")
        tensor, offset = split_offset(arg.tensor)
        channels, plane = planes[tensor]
        offset += depth * plane * elem
        moved[arg.name] = f"ptr:{tensor}@{offset}" if offset else f"ptr:{tensor}"
        strides[names[0]] = (channels * plane, channels * plane * slices)
        strides[names[1]] = (plane, plane * slices)
    values = {a.name: a.value for a in launch.args}
    for name, (packed, _) in strides.items():
        if values.get(name) != packed:
            raise ProblemError(f"{launch.kernel_name}: {name} is {values.get(name)}, not the "
                               f"packed slice's {packed}")
    args = tuple(kernel_arg(a.name, moved[a.name], None) if a.name in moved else
                 kernel_arg(a.name, a.kind, strides[a.name][1]) if a.name in strides else a
                 for a in launch.args)
    return replace(launch, args=args, zero_first=launch.zero_first if depth == 0 else ())


@lru_cache(maxsize=2048)
def _launchable(solver: ConvTritonPlanes, problem: ConvProblem, params: Params,
                target: Target) -> bool:
    """Whether the inner solver's launches at `params` run slice by slice: its lead-ins leave
    the activations alone, and its launch and follow-ups meet `_at_slice`."""
    one = _slice(problem)
    inner = solver.inner
    planes = _planes(problem)
    try:
        if any(_activation(a, planes) for _, step in inner.lead_ins(one, params, target)
               for a in step.args):
            return False
        _at_slice(problem, inner.launch(one, params, False), 1)
        for _, step in inner.follow_ups(one, params, target):
            _at_slice(problem, step, 1)
    except ProblemError:
        return False
    return True


class ConvTritonPlanes(InnerSolver, Solver):
    """A 2-D solver (`inner`) on each depth slice of an NCDHW layer of one depth tap."""

    def __init__(self, inner: Solver) -> None:
        super().__init__(inner, "Planes")

    def _relaid(self, problem: ConvProblem) -> ConvProblem:
        return _slice(problem)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        if problem.key_direction not in self.directions or self.direction not in ("F", "B") \
                or planes_problem(problem) is None or not _aligned_planes(problem) or \
                not _offsets_fit(problem):
            return False
        one = _slice(problem)
        if not self.inner.is_applicable(one, target):
            return False
        return _launchable(self, problem, tuple(self.inner.default_params(one, target)), target)

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        return self.inner.params_valid(_slice(problem), target, params) and \
            _launchable(self, problem, tuple(params), target)

    def _launchable_sets(self, problem: ConvProblem, sets: list[Params], target: Target
                         ) -> list[Params]:
        """`sets` whose launches run slice by slice. The launches' pointers and strides
        differ between an inner solver's sets by their split alone (a split adds the
        reduce), so one set of each split is asked (a grid's worth of sets, each building
        its launches, took most of the GPU grid's collection)."""
        verdict: dict[int, bool] = {}
        out = []
        for params in sets:
            split = int(params[_SPLIT]) if len(params) > _SPLIT else 1
            if split not in verdict:
                verdict[split] = _launchable(self, problem, tuple(params), target)
            if verdict[split]:
                out.append(tuple(params))
        return out

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self._launchable_sets(
            problem, self.inner.param_space(_slice(problem), target), target)

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self._launchable_sets(
            problem, self.inner.usual_params(_slice(problem), target), target)

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self._launchable_sets(
            problem, self.inner.seed_params(_slice(problem), target), target)

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """In FIRST_TYPES (not the TF32 math), on the stems (at most FP32_STEM_CHANNELS
        channels) where one slice's launch fills the target's CUs (STEM_WAVES) and the inner
        solver ranks first on the 2-D layer of N*D images."""
        q = planes_problem(problem)
        if q is None or problem.in_type not in FIRST_TYPES or self.math == "tf32" or \
                problem.c > FP32_STEM_CHANNELS:
            return False
        one = _slice(problem)
        grid, _ = self.inner.launch_geometry(one, self.inner.default_params(one, target))
        if grid[0] * grid[1] * grid[2] < STEM_WAVES * target.cu:
            return False
        return inner_ranks_first(self.inner, q, target)

    def ahead_of_portable(self, problem: ConvProblem, target: Target) -> bool:
        ahead = getattr(self.inner, "ahead_of_portable", None)
        return bool(ahead(_slice(problem), target)) if ahead is not None else False

    # ------------------------------------------------------------------ kernels
    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The inner solver's shape-agnostic object on one slice (every slice's)."""
        return self.inner.compile_job(_slice(problem), params, target, False)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """None: the objects are the inner solver's, which ships them."""
        return []

    def workspace_slots(self, problem: ConvProblem, params: Params) -> dict[str, int]:
        return self.inner.workspace_slots(_slice(problem), params)

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return self.inner.workspace_for(_slice(problem), params)

    # ------------------------------------------------------------------ launches
    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """The inner solver's launch on the first depth slice."""
        return _at_slice(problem, self.inner.launch(_slice(problem), params, False), 0)

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[Step, ...]:
        """The inner solver's (the weights' copies: once, every slice reads them)."""
        return self.inner.lead_ins(_slice(problem), params, target)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[Step, ...]:
        """The first slice's follow-ups, then every further slice's launch and follow-ups."""
        return self._slices(problem, params, target, False)

    def unaligned_follow_ups(self, problem: ConvProblem, params: Params, target: Target
                             ) -> tuple[Step, ...]:
        """`follow_ups` on the objects that assume nothing (the caller's pointers missed the
        alignment the first slice's object assumes)."""
        return self._slices(problem, params, target, True)

    def _slices(self, problem: ConvProblem, params: Params, target: Target,
                unaligned: bool) -> tuple[Step, ...]:
        one = _slice(problem)
        inner = self.inner
        after = inner.unaligned_follow_ups if unaligned else inner.follow_ups
        job = self.unaligned_job(problem, params, target) if unaligned else \
            self.compile_job(problem, params, target)
        main = inner.launch(one, params, False)
        finish = after(one, params, target)
        steps = [(j, _at_slice(problem, s, 0)) for j, s in finish]
        for depth in range(1, problem.in_spatial[0]):
            steps.append((job, _at_slice(problem, main, depth)))
            steps += [(j, _at_slice(problem, s, depth)) for j, s in finish]
        return tuple(steps)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """One slice's launch."""
        return self.inner.launch_geometry(_slice(problem), params)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        """(blocks of every slice's launch, threads per block, tile efficiency) for the miss
        ranking's features: the launches run one after another over the whole layer."""
        one = _slice(problem)
        own: Any = getattr(self.inner, "ranking_geometry", None)
        if own is not None:
            blocks, block, eff = own(one, params)
        else:
            from ._conv import conv_view

            grid, dims = self.inner.launch_geometry(one, params)
            blocks, block = grid[0] * grid[1] * grid[2], dims[0] * dims[1] * dims[2]
            efficiency: Any = getattr(self.inner, "efficiency", None)
            eff = float(efficiency(conv_view(one), params)) if callable(efficiency) else 1.0
        return int(blocks) * problem.in_spatial[0], int(block), float(eff)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        q = planes_problem(problem)
        assert q is not None, problem.key()
        return self.inner.heuristic_rank(q, target)


def planes_first(problem: ConvProblem, target: Target, math: str = "ieee") -> bool:
    """Whether a planes solver of `math` applies and claims the problem (the registry's
    FIRST_CLAIMS)."""
    return planes_problem(problem) is not None and any(
        s.math == math and s.is_applicable(problem, target) and s.claims_first(problem, target)
        for s in PLANES_SOLVERS)


def _planes_solvers() -> list[Solver]:
    from .triton_conv import TRITON_SOLVERS
    from .triton_fma import FMA_SOLVERS
    from .triton_fma_bwd import FMA_BWD_SOLVERS

    return [ConvTritonPlanes(s) for s in (*TRITON_SOLVERS, *FMA_SOLVERS, *FMA_BWD_SOLVERS)
            if getattr(s, "direction", "") in ("F", "B")]


PLANES_SOLVERS: list[Solver] = _planes_solvers()
