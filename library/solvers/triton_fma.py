"""ConvTritonFmaFwd: few-channel 2-D forward convolutions in FP32 as direct convolutions on the
FP32 units (kernels/conv_triton_fma.py, launch data in kernels/conv_triton_fma_spec.py).

An image stem's reduction is 27-147 products of 3 or 4 channels. The implicit GEMM pads it to
its matrix-core blocks, and in FP32 at IEEE accuracy runs each product as three TF32 ones
(ConvTritonImplicitGemmTf32x3Fwd): on the H200 the stems took 1.5-1.6x IEEE cuDNN's GPU time
there, where the direct kernel, a rank-1 update of its output tile per filter tap and
channel, took 0.80 (NCHW) and 0.84 (NHWC) over the three stems the trial reached (bench/
fewc_fwd_2d.py, bench/results/fewc_fwd_2d_fp32_h200-fa47541.json). Its sums are FP32 fused
multiply-adds: IEEE FP32 results, whatever the math mode.

One group, 1-4 input channels (`spec.applies`), forward alone, FP32, any strides; the tile's
filter block as wide as the filters up to 64 (`spec.tile_for`). A package ships per target
the three tiles in both layouts' forms (CHANNELS_LAST 1 for channel strides of 1, 0 for any),
none assuming alignment. The miss ranking puts it first on the spec's FIRST_KINDS, ahead of
the implicit GEMM in every math but TF32's (the registry's FIRST_CLAIMS / YIELDS_TO).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target, spec_for
from ._conv import ConvView, conv_view, macs
from .base import CompileJob, Launch, Params, Solver
from .triton_common import (
    config_of,
    kernels_spec,
    params_of,
    spec_compile_job,
    spec_kernel_args,
    spec_kind,
    spec_sizes,
    spec_strides,
    target_kind,
)

__all__ = ["ConvTritonFma", "FMA_SOLVERS", "fma_first", "fma_spec"]

KERNEL_FILE = "conv_triton_fma.py"
SPEC = "conv_triton_fma_spec"


def fma_spec() -> Any:
    """`kernels/conv_triton_fma_spec.py`: stdlib-only launch data of the kernel."""
    return kernels_spec(SPEC)


@lru_cache(maxsize=4096)
def _view(problem: ConvProblem) -> tuple[ConvView, dict[str, int],
                                         dict[str, tuple[int, int, int, int]]]:
    view = conv_view(problem)
    return view, spec_sizes(view), spec_strides(view)


@lru_cache(maxsize=256)
def _job(data_type: str, config: tuple[tuple[str, int], ...], cl: bool, target: Target
         ) -> CompileJob:
    spec = fma_spec()
    values = dict(config)
    sig, constexprs = spec.signature(data_type, values, cl)
    return spec_compile_job(KERNEL_FILE, spec, spec.KERNEL["F"], sig, constexprs, values,
                            target, False)


class ConvTritonFma(Solver):
    """The few-channel direct forward on the FP32 units."""

    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE

    def __init__(self) -> None:
        self.direction = "F"
        self.directions = frozenset({"F"})
        self.name = "ConvTritonFmaFwd"
        self.algorithm_names = {"F": "miopenConvolutionFwdAlgoDirect"}

    def _kind(self, target: Target) -> str | None:
        """The spec's kind on targets with matrix cores (those Triton compiles for: gfx900
        and gfx906 have none, and their portable kernels serve); else None."""
        if not spec_for(target.arch).matrix:
            return None
        return spec_kind(target, SPEC)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.direction != "F" or p.mode != "conv" or len(p.in_spatial) != 2:
            return False
        if not p.in_type == p.wei_type == p.out_type or p.in_type not in fma_spec().TYPES:
            return False
        if self._kind(target) is None:
            return False
        _, sizes, strides = _view(p)
        return bool(fma_spec().applies(sizes, strides))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """On the spec's FIRST_KINDS (measured there)."""
        return self._kind(target) in fma_spec().FIRST_KINDS

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        return [params_of(t) for t in fma_spec().tiles(kind)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        kind = target_kind(target.arch)
        if kind not in fma_spec().KINDS:
            return False
        try:
            config = config_of(tuple(int(v) for v in params), self.name)
        except (TypeError, ValueError, ProblemError):
            return False
        return bool(fma_spec().legal(kind, config))

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The narrowest tile whose filter block covers the filters (`spec.tile_for`)."""
        kind = self._kind(target) or target_kind(target.arch) or ""
        return params_of(fma_spec().tile_for(kind, _view(problem)[1]))

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return self.param_space(problem, target)

    # ------------------------------------------------------------------ kernels
    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The shape-agnostic job of the tile, channels-last where every channel stride is
        1."""
        _, _, strides = _view(problem)
        config = config_of(tuple(params), self.name)
        return _job(problem.in_type, tuple(sorted(config.items())),
                    bool(fma_spec().channels_last(strides)), target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """Every tile in both forms, per type."""
        kind = self._kind(target)
        if kind is None:
            return []
        spec = fma_spec()
        return [_job(t, tuple(sorted(tile.items())), cl, target)
                for t in spec.TYPES for tile in spec.tiles(kind) for cl in (True, False)]

    # ------------------------------------------------------------------ launches
    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        spec = fma_spec()
        view, sizes, strides = _view(problem)
        config = config_of(tuple(params), self.name)
        grid = spec.grid(sizes, config)
        return Launch(spec.KERNEL["F"], (int(grid[0]), int(grid[1]), int(grid[2])),
                      (config["num_warps"] * 32, 1, 1),
                      spec_kernel_args(spec, "F", view, sizes, strides), needs_meta=True)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        config = config_of(tuple(params), self.name)
        grid = fma_spec().grid(_view(problem)[1], config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def efficiency(self, view: ConvView, params: Params) -> float:
        return float(fma_spec().efficiency(spec_sizes(view), config_of(tuple(params),
                                                                         self.name)))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return 5.0 + macs(problem) / (1e6 * 8.0)


def fma_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the solver applies and claims the problem (the registry's FIRST_CLAIMS)."""
    return any(s.is_applicable(problem, target) and s.claims_first(problem, target)
               for s in FMA_SOLVERS)


def _fma_solvers() -> list[Solver]:
    from .triton_common import has_kernels_spec

    return [ConvTritonFma()] if has_kernels_spec(SPEC) else []


FMA_SOLVERS: list[Solver] = _fma_solvers()
