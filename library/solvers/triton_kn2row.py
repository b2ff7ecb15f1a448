"""ConvTritonImplicitGemm{,Tf32,Tf32x3}Kn2Row{Fwd,Bwd} and ConvBlasKn2Row{,Tf32}{Fwd,Bwd}: 2-D
layers of 1-8 output channels from many as kn2row, one 1x1 GEMM over every filter tap and a
sum of shifted taps (the algebra: kernels/conv_triton_kn2row_spec.py).

A latent or image input's backward data (a UNet's conv_in: 4 channels of dx from 320 of dy at
3x3) and a few-filter output's forward read their input once per tap in the direct and
implicit-GEMM kernels; in FP32 at IEEE accuracy those took 4.6-5.5x IEEE cuDNN's GPU time in
NCHW and 1.7-1.8x channels-last (bench/results/fewk_h200-035369f/bwd.json). Here the input is
read once, by a GEMM of R*S*KO columns:
1. a lead-in writes the layer's filters as the GEMM's [J][reduction] filters into the
   workspace with the flip kernel (kernels/conv_triton_flip.py, the few-filter backward data's
   object: no object of its own);
2. the main launch is the GEMM as a 1x1 forward problem (`gemm_problem`) on the implicit
   GEMM's objects of that math (its parameters are this solver's: the inner solver's unsplit
   ones), reading the layer's input (x, or dy) and writing Z into the workspace;
   the library solvers make it one call of the GEMM library instead (solvers/blas_1x1.py:
   offered where the library is);
3. a follow-up sums each output element's taps of Z into y (dx) (kernels/conv_triton_tapsum.py,
   two objects a type: the layouts).
Any stride, padding and dilation; FP32 (Z and the sums FP32); Z at most `MAX_Z_BYTES`, or no
larger than the GEMM's input. The library addresses that input with 64-bit offsets, so its
form takes an input past 2**31 elements too (ESRGAN's 64 -> 3 output layer at 2048x2048 from
batch 8 on, whose Z and output stay within 32 bits). The implicit-GEMM forms are offered to
find and tuning, which time them beside the rest, and claim nothing: on one H100
(bench/results/kn2row_h100/) the library form took 0.25-0.96 of the three-product form's GPU
time (geometric means per case and batch group), and it claims first place where it was
faster than the rest (`blas_kn2row_first`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .._record import replace
from ..config import triton_solvers_enabled
from ..problem import ConvProblem
from ..target import Target, spec_for
from ._conv import ALGO_PREFIX, DIRECTION_SUFFIX, WORKSPACE_ALIGN, ConvView, conv_view
from .base import CompileJob, Launch, Params, Solver, WorkspaceParts
from .blas_1x1 import ConvBlasGemm1x1, gemm_call, library_offered
from .triton_common import (
    kernel_arg,
    kernels_spec,
    moved,
    scratch_args,
    spec_compile_job,
    spec_sizes,
    spec_strides,
    target_kind,
)

__all__ = ["ConvBlasKn2Row", "ConvTritonKn2Row", "KN2ROW_BLAS_SOLVERS", "KN2ROW_SOLVERS",
           "blas_kn2row_first",
           "gemm_problem", "kn2row_spec"]

SPEC = "conv_triton_kn2row_spec"
TAP_FILE = "conv_triton_tapsum.py"
_LAYOUTS = ("NCHW", "NHWC")


def kn2row_spec() -> Any:
    """`kernels/conv_triton_kn2row_spec.py`: stdlib-only data of the transformation."""
    return kernels_spec(SPEC)


@lru_cache(maxsize=4096)
def _view(problem: ConvProblem) -> tuple[ConvView, dict[str, int],
                                         dict[str, tuple[int, int, int, int]], bool]:
    """(view, sizes, strides, channels-last) of the layer."""
    view = conv_view(problem)
    return view, spec_sizes(view), spec_strides(view), problem.in_layout == "NHWC"


def _solved(problem: ConvProblem) -> str:
    """The kernels' direction of the layer ("F" or "B")."""
    return _view(problem)[0].direction


@lru_cache(maxsize=4096)
def gemm_problem(problem: ConvProblem) -> ConvProblem:
    """The GEMM as a forward 1x1 problem (`conv_triton_kn2row_spec.gemm_sizes`) in the layer's
    layout and type: its x is the layer's input (x, or dy), its filters and output (Z) the
    workspace's."""
    g = kn2row_spec().gemm_sizes(_solved(problem), _view(problem)[1])
    layout = problem.in_layout
    return ConvProblem(n=g["N"], c=g["C"], k=g["K"], in_spatial=(g["H"], g["W"]),
                       filter=(1, 1), pad=(0, 0), stride=(1, 1), dilation=(1, 1), groups=1,
                       direction="F", in_layout=layout, wei_layout=layout, out_layout=layout,
                       in_type=problem.in_type, wei_type=problem.in_type,
                       out_type=problem.in_type)


def _renames(problem: ConvProblem) -> dict[str, str]:
    """The GEMM problem's tensors as this solver's launches name them."""
    view = _view(problem)[0]
    source = view.in_tensor if _solved(problem) == "F" else view.out_tensor
    return {"x": source, "w": "ws_w", "y": "ws_z"}


class _Kn2Row(WorkspaceParts):
    """What the GEMM's two forms share: applicability, the workspace's parts, the lead-in (the
    filters) and the follow-up (the tap sum). Mixed in ahead of their Solver base."""

    name: str

    def _layer_applies(self, problem: ConvProblem, direction: str,
                       wide_input: bool = False) -> bool:
        """The layer's test (`conv_triton_kn2row_spec.applies`); `wide_input`: the GEMM reads
        its input with 64-bit offsets (the library's)."""
        p = problem
        if p.key_direction != direction or p.mode != "conv" or len(p.in_spatial) != 2:
            return False
        if not p.in_type == p.wei_type == p.out_type or \
                p.in_type not in kn2row_spec().TYPES:
            return False
        if p.in_layout != p.out_layout or p.in_layout not in _LAYOUTS:
            return False
        return bool(kn2row_spec().applies(_solved(p), _view(p)[1], wide_input))

    def _layout(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        """The GEMM's filters, then Z (`conv_triton_kn2row_spec.workspace_parts`)."""
        slots, total = kn2row_spec().workspace_parts(_solved(problem), _view(problem)[1],
                                                     WORKSPACE_ALIGN)
        return dict(slots), int(total)

    def workspace_bytes(self, problem: ConvProblem) -> int:
        return self._layout(problem, ())[1]

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The layer's filters as the GEMM's, flipped taps first (`gemm_filter_values`)."""
        from .triton_fma_bwd import _flip_job, fewk_bwd_spec

        flip = fewk_bwd_spec()
        view, sizes, strides, _ = _view(problem)
        values = kn2row_spec().gemm_filter_values(_solved(problem), sizes, strides["w"])
        args = [kernel_arg("src_ptr", "ptr:" + view.wei_tensor, None),
                kernel_arg("dst_ptr", "ptr:ws_w", None)]
        args += [kernel_arg(name, "i32", int(values[name])) for name, kind in
                 flip.ARGS[flip.FLIP] if kind == "i32"]
        grid = flip.flip_grid(sizes)
        launch = Launch(flip.FLIP, (int(grid[0]), 1, 1), (flip.FLIP_WARPS * 32, 1, 1),
                        (*args, *scratch_args()), needs_meta=True)
        return ((_flip_job(problem.in_type, target), launch),)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The tap sum of Z into the layer's output."""
        spec = kn2row_spec()
        view, sizes, strides, cl = _view(problem)
        direction = _solved(problem)
        values = spec.tap_values(direction, sizes, strides, cl)
        out = view.out_tensor if direction == "F" else view.in_tensor
        args = [kernel_arg("z_ptr", "ptr:ws_z", None), kernel_arg("y_ptr", "ptr:" + out, None)]
        args += [kernel_arg(name, "i32", int(values[name])) for name, kind in
                 spec.ARGS[spec.TAP_SUM] if kind == "i32"]
        grid = spec.tap_grid(direction, sizes)
        launch = Launch(spec.TAP_SUM, (int(grid[0]), 1, 1), (spec.TAP_WARPS * 32, 1, 1),
                        (*args, *scratch_args()), needs_meta=True)
        return ((tap_job(problem.in_type, cl, target), launch),)


@lru_cache(maxsize=64)
def tap_job(data_type: str, channels_last: bool, target: Target) -> CompileJob:
    """The tap sum's object of a type and layout."""
    spec = kn2row_spec()
    sig, constexprs = spec.tap_signature(data_type, channels_last)
    return spec_compile_job(TAP_FILE, spec, spec.TAP_SUM, sig, constexprs,
                            {"num_warps": spec.TAP_WARPS, "num_stages": 1}, target, False)


class ConvTritonKn2Row(_Kn2Row, Solver):
    """kn2row with the GEMM on the implicit GEMM's objects of one math (`inner`, its forward
    solver) for one direction of the layer (F or B)."""

    tunable = True
    language = "triton"

    def __init__(self, inner: Solver, direction: str) -> None:
        self.inner = inner
        self.math = inner.math
        self.direction = direction
        self.directions = frozenset({direction})
        self.kernel_file = inner.kernel_file
        self.rank_first = False
        infix = {"tf32": "Tf32", "tf32x3": "Tf32x3"}.get(self.math, "")
        self.name = f"ConvTritonImplicitGemm{infix}Kn2Row{DIRECTION_SUFFIX[direction]}"
        self.algorithm_names = {
            direction: f"miopenConvolution{ALGO_PREFIX[direction]}AlgoImplicitGEMM"}

    def _kind(self, target: Target) -> str | None:
        if not triton_solvers_enabled() or not spec_for(target.arch).matrix:
            return None
        return target_kind(target.arch)

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        if self._kind(target) is None or not self._layer_applies(problem, self.direction):
            return False
        return self.inner.is_applicable(gemm_problem(problem), target)

    # ------------------------------------------------------------------ parameters
    def _plain(self, problem: ConvProblem, params: Params, target: Target) -> bool:
        """An inner parameter set of one launch without workspace (no split reduction)."""
        q = gemm_problem(problem)
        return self.inner.workspace_for(q, params) == 0 and \
            not self.inner.follow_ups(q, params, target) and \
            not self.inner.lead_ins(q, params, target)

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        q = gemm_problem(problem)
        return [p for p in self.inner.param_space(q, target) if self._plain(problem, p, target)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        return self.inner.params_valid(gemm_problem(problem), target, params) and \
            self._plain(problem, tuple(params), target)

    def _unsplit(self, params: Params) -> Params:
        values = list(params)
        values[4] = 1  # SPLIT_K
        return tuple(values)

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The inner solver's default on the GEMM problem, unsplit."""
        q = gemm_problem(problem)
        for params in (self.inner.default_params(q, target),
                       *self.inner.usual_params(q, target)):
            for candidate in (tuple(params), self._unsplit(tuple(params))):
                if self.params_valid(problem, target, candidate):
                    return candidate
        space = self.param_space(problem, target)
        return space[0] if space else tuple(self.inner.default_params(q, target))

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return [self.default_params(problem, target)] if self._kind(target) else []

    # ------------------------------------------------------------------ kernels
    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        return self.inner.compile_job(gemm_problem(problem), params, target, specialised)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        q = gemm_problem(problem)
        job = self.inner.unaligned_job(q, params, target)
        return job if job is not None else self.inner.compile_job(q, params, target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The tap sum's objects (both layouts, each type) and the flip's (the few-filter
        backward data ships the same); the GEMM's are the implicit GEMM's."""
        from .triton_fma_bwd import _flip_job

        if self._kind(target) is None:
            return []
        types = kn2row_spec().TYPES
        return [*(tap_job(t, cl, target) for t in types for cl in (True, False)),
                *(_flip_job(t, target) for t in types)]

    # ------------------------------------------------------------------ launches
    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """The GEMM: the inner solver's launch on the GEMM problem, reading the layer's input
        and writing Z (workspace 0 of its own: this solver's parts)."""
        launch = self.inner.launch(gemm_problem(problem), params, specialised)
        kinds = {"ptr:" + k: "ptr:" + v for k, v in _renames(problem).items()}
        return replace(moved(launch, kinds), workspace_bytes=self.workspace_bytes(problem))

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return self.inner.launch_geometry(gemm_problem(problem), params)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        """(blocks, threads per block, tile efficiency) of the GEMM's launch, for the miss
        ranking's features."""
        q = gemm_problem(problem)
        grid, dims = self.inner.launch_geometry(q, params)
        efficiency: Any = getattr(self.inner, "efficiency", None)
        eff = float(efficiency(conv_view(q), params)) if callable(efficiency) else 1.0
        return grid[0] * grid[1] * grid[2], dims[0] * dims[1] * dims[2], eff

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return self.inner.heuristic_rank(gemm_problem(problem), target) + 1.0


class ConvBlasKn2Row(_Kn2Row, ConvBlasGemm1x1):
    """kn2row with the GEMM one call of the GEMM library, at one FP32 math, for one direction
    of the layer."""

    def __init__(self, direction: str, math: str = "ieee") -> None:
        super().__init__(direction, math)
        infix = "Tf32" if math == "tf32" else ""
        self.name = f"ConvBlasKn2Row{infix}{DIRECTION_SUFFIX[direction]}"

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        if target.vendor != "nvidia" or target_kind(target.arch) is None or \
                not self._layer_applies(problem, self.direction, wide_input=True):
            return False
        return gemm_call(gemm_problem(problem)) is not None

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        return blas_kn2row_first(problem, target, self.math)

    def library_launch(self, backend: Any, problem: ConvProblem) -> Any:
        """The GEMM problem's call, reading the layer's input and the workspace's filters,
        writing Z."""
        from ..backends.cublas import GemmLaunch, load
        from ..errors import BackendError

        blas = load()
        call = gemm_call(gemm_problem(problem))
        if blas is None or call is None:
            raise BackendError(f"{self.name} needs cuBLAS (pip install 'miopenkernels[blas]'); "
                               f"{problem.key()} has {'no cuBLAS' if blas is None else 'none'}")
        names = _renames(problem)
        call = replace(call, a=names.get(call.a, call.a), b=names.get(call.b, call.b),
                       c=names.get(call.c, call.c))
        return GemmLaunch(backend, blas, call.astuple(), problem.in_type, self.math)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        return super().ranking_geometry(gemm_problem(problem), params)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return super().heuristic_rank(problem, target) + 1.0


#: The archs whose GPU timings set the library form's claim (`blas_kn2row_first`).
BLAS_FIRST_ARCHS = frozenset({"sm90"})


def blas_kn2row_first(problem: ConvProblem, target: Target, math_mode: str = "ieee") -> bool:
    """Whether kn2row's library form claims first place where the library is offered: IEEE
    FP32 on BLAS_FIRST_ARCHS, every forward layer it takes, and backward data at stride 1 or,
    channels-last, at a stride that does not divide the filter; never a layer that is one call
    of the library itself (a filter over the whole input: DCGAN's head). Measured on one H100
    over the zoo's and the held-out networks' layers of 1-8 output channels at batches 32, 8
    and 1 (bench/results/kn2row_h100/), as GPU time over IEEE cuDNN's, against the best of the
    other solvers timed beside it: forward 0.12-0.34 (geomean 0.22) against 0.51-1.86 (0.76);
    backward data at stride 1 0.38-1.14 (0.62) against 1.02-4.88 (1.73); at a stride,
    channels-last, 0.51-1.36 (0.79) against 0.49-1.46 (0.83; up to 1.20x the implicit GEMM's
    time on 3x3 stems at batches 8 and 1, 0.64x on SqueezeNet's), but where the stride divides the
    filter (ConvNeXt's 4x4 patches, YOLOv5's 6x6 stem, DCGAN's 4x4) 0.84 against 0.72, and
    channel-planar 1.19 against 0.77 (the implicit GEMM's stride phases)."""
    p = problem
    if not library_offered() or math_mode != "ieee" or target.arch not in BLAS_FIRST_ARCHS or \
            gemm_call(p) is not None:
        return False  # (a filter over the whole input: the layer is one call itself)
    if p.key_direction == "F" or all(s == 1 for s in p.stride):
        return True
    return p.in_layout == "NHWC" and any(f % s for f, s in zip(p.filter, p.stride, strict=True))


def _solvers() -> list[Solver]:
    from .triton_common import has_kernels_spec
    from .triton_conv import TRITON_SOLVERS

    if not has_kernels_spec(SPEC) or not has_kernels_spec("conv_triton_fewk_bwd_spec"):
        return []
    inners = [s for s in TRITON_SOLVERS if s.directions == frozenset({"F"})]
    return [ConvTritonKn2Row(inner, d) for inner in inners for d in ("F", "B")]


KN2ROW_SOLVERS: list[Solver] = _solvers()
KN2ROW_BLAS_SOLVERS: list[Solver] = [ConvBlasKn2Row(d, m) for m in ("ieee", "tf32")
                                     for d in ("F", "B")]
