"""Direct convolutions on the FP32 units for 2-D forward layers narrow on one side: few input
channels (ConvTritonFmaFwd: kernels/conv_triton_fma.py, launch data in
kernels/conv_triton_fma_spec.py) or few filters (ConvTritonFmaFewKFwd:
kernels/conv_triton_fewk.py, kernels/conv_triton_fewk_spec.py).

An image stem's reduction is 27-147 products of 3 or 4 channels. The implicit GEMM pads it to
its matrix-core blocks, and in FP32 at IEEE accuracy runs each product as three TF32 ones
(ConvTritonImplicitGemmTf32x3Fwd): on the H200 the stems took 1.5-1.6x IEEE cuDNN's GPU time
there, where the direct kernel, a rank-1 update of its output tile per filter tap and
channel, took 0.80 (NCHW) and 0.84 (NHWC) over the three stems the trial reached (bench/
fewc_fwd_2d.py, bench/results/fewc_fwd_2d_fp32_h200-fa47541.json). Its sums are FP32 fused
multiply-adds: IEEE FP32 results, whatever the math mode. A layer of 1-8 filters (an image or
latent output) is the same waste on the other side of the GEMM: its 1-8 columns padded to a
16-wide block; the few-filter kernel walks each position's channels a block at a time for
every filter at once.

Stems: one group, 1-4 input channels (`spec.applies`), FP32, any strides; the tile's filter
block as wide as the filters up to 64 (`spec.tile_for`). Few filters: one group, 1-8 filters,
any channels, FP32, FP16 and BF16 (FP32 sums). A package ships per target each family's usual
tiles in both layouts' forms (CHANNELS_LAST 1 for channel strides of 1, 0 for any), none
assuming alignment. The miss ranking puts a family first on its spec's FIRST_KINDS, ahead of
the implicit GEMM in every math but TF32's (the registry's FIRST_CLAIMS / YIELDS_TO).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target, spec_for
from ._conv import ConvView, macs
from .base import CompileJob, Launch, Params, Solver, family_claims
from .triton_common import (
    config_of,
    kernels_spec,
    params_of,
    spec_compile_job,
    spec_kernel_args,
    spec_kind,
    spec_sizes,
    spec_view,
    target_kind,
)

__all__ = ["ConvTritonFma", "ConvTritonFmaFewK", "FMA_SOLVERS", "fewk_first", "fewk_spec",
           "fma_first", "fma_spec"]

KERNEL_FILE = "conv_triton_fma.py"
SPEC = "conv_triton_fma_spec"
FEWK_KERNEL_FILE = "conv_triton_fewk.py"
FEWK_SPEC = "conv_triton_fewk_spec"


def fma_spec() -> Any:
    """`kernels/conv_triton_fma_spec.py`: stdlib-only launch data of the stem kernel."""
    return kernels_spec(SPEC)


def fewk_spec() -> Any:
    """`kernels/conv_triton_fewk_spec.py`: stdlib-only launch data of the few-filter kernel."""
    return kernels_spec(FEWK_SPEC)


_view = spec_view


@lru_cache(maxsize=256)
def _job(kernel_file: str, spec_name: str, data_type: str,
         config: tuple[tuple[str, int], ...], cl: bool, target: Target) -> CompileJob:
    spec = kernels_spec(spec_name)
    values = dict(config)
    sig, constexprs = spec.signature(data_type, values, cl)
    return spec_compile_job(kernel_file, spec, spec.KERNEL["F"], sig, constexprs, values,
                            target, False)


class _DirectFma(Solver):
    """A direct forward on the FP32 units of one kernel file and its spec (KERNEL_FILE,
    SPEC_NAME); the spec's TYPES, KINDS, FIRST_KINDS, applies, tiles, tile_for, legal, grid,
    efficiency and signature."""

    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE
    SPEC_NAME = SPEC
    NAME = ""

    def __init__(self) -> None:
        self.direction = "F"
        self.directions = frozenset({"F"})
        self.name = self.NAME
        self.algorithm_names = {"F": "miopenConvolutionFwdAlgoDirect"}

    def spec(self) -> Any:
        return kernels_spec(self.SPEC_NAME)

    def _kind(self, target: Target) -> str | None:
        """The spec's kind on targets with matrix cores (those Triton compiles for: gfx900
        and gfx906 have none, and their portable kernels serve); else None."""
        if not spec_for(target.arch).matrix:
            return None
        return spec_kind(target, self.SPEC_NAME)

    def _job(self, data_type: str, config: dict[str, int], cl: bool, target: Target
             ) -> CompileJob:
        return _job(self.kernel_file, self.SPEC_NAME, data_type, tuple(sorted(config.items())),
                    cl, target)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.direction != "F" or p.mode != "conv" or len(p.in_spatial) != 2:
            return False
        if not p.in_type == p.wei_type == p.out_type or p.in_type not in self.spec().TYPES:
            return False
        if self._kind(target) is None:
            return False
        _, sizes, strides = _view(p)
        return bool(self.spec().applies(sizes, strides))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """On the spec's FIRST_KINDS (measured there)."""
        return self._kind(target) in self.spec().FIRST_KINDS

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        return [params_of(t) for t in self.spec().tiles(kind)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        kind = target_kind(target.arch)
        if kind not in self.spec().KINDS:
            return False
        try:
            config = config_of(tuple(int(v) for v in params), self.name)
        except (TypeError, ValueError, ProblemError):
            return False
        return bool(self.spec().legal(kind, config))

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The spec's usual tile for the problem (`spec.tile_for`)."""
        kind = self._kind(target) or target_kind(target.arch) or ""
        return params_of(self.spec().tile_for(kind, _view(problem)[1]))

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        return [] if kind is None else [params_of(t) for t in self.spec().tiles(kind)]

    # ------------------------------------------------------------------ kernels
    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The shape-agnostic job of the tile, channels-last where every channel stride is
        1."""
        _, _, strides = _view(problem)
        config = config_of(tuple(params), self.name)
        return self._job(problem.in_type, config, bool(self.spec().channels_last(strides)),
                         target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """Every usual tile in both forms, per type."""
        kind = self._kind(target)
        if kind is None:
            return []
        spec = self.spec()
        return [self._job(t, dict(tile), cl, target)
                for t in spec.TYPES for tile in spec.tiles(kind) for cl in (True, False)]

    # ------------------------------------------------------------------ launches
    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        spec = self.spec()
        view, sizes, strides = _view(problem)
        config = config_of(tuple(params), self.name)
        grid = spec.grid(sizes, config)
        return Launch(spec.KERNEL["F"], (int(grid[0]), int(grid[1]), int(grid[2])),
                      (config["num_warps"] * 32, 1, 1),
                      spec_kernel_args(spec, "F", view, sizes, strides), needs_meta=True)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        config = config_of(tuple(params), self.name)
        grid = self.spec().grid(_view(problem)[1], config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def efficiency(self, view: ConvView, params: Params) -> float:
        return float(self.spec().efficiency(spec_sizes(view), config_of(tuple(params),
                                                                         self.name)))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return 5.0 + macs(problem) / (1e6 * 8.0)


class ConvTritonFma(_DirectFma):
    """The few-channel direct forward (image stems) on the FP32 units."""

    NAME = "ConvTritonFmaFwd"


class ConvTritonFmaFewK(_DirectFma):
    """The few-filter direct forward (image and latent outputs) on the FP32 units: every
    filter a program, the channels a block at a time. Its legal space (`spec.legal_space` of
    the problem's filter block) is what tuning searches; a package ships the usual tiles."""

    NAME = "ConvTritonFmaFewKFwd"
    kernel_file = FEWK_KERNEL_FILE
    SPEC_NAME = FEWK_SPEC

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """On the spec's FIRST_KINDS, channels-last, where its programs fill the GPU or their
        reduction is short, and not the GEMM library's 1x1 layers of many positions
        (`spec.claims`)."""
        kind = self._kind(target)
        _, sizes, strides = _view(problem)
        return kind is not None and bool(self.spec().claims(kind, sizes, strides, target.cu))

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        block = self.spec().filter_block(_view(problem)[1]["K"])
        return [params_of(c) for c in self.spec().legal_space(kind, block)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        """Legal, and a filter block that holds the problem's filters."""
        if not super().params_valid(problem, target, params):
            return False
        return int(params[1]) >= _view(problem)[1]["K"]


def fma_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the stem solver applies and claims the problem (the registry's FIRST_CLAIMS)."""
    return family_claims(FMA_SOLVERS, ConvTritonFma, problem, target)


def fewk_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the few-filter solver applies and claims the problem (FIRST_CLAIMS)."""
    return family_claims(FMA_SOLVERS, ConvTritonFmaFewK, problem, target)


def _fma_solvers() -> list[Solver]:
    from .triton_common import has_kernels_spec

    return [cls() for cls in (ConvTritonFma, ConvTritonFmaFewK)
            if has_kernels_spec(cls.SPEC_NAME)]


FMA_SOLVERS: list[Solver] = _fma_solvers()
