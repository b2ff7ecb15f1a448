"""ConvTritonFmaFewKWrw and ConvTritonFmaFewCWrw: backward weights of 2-D layers of 1-8
filters or of 1-4 input channels on the FP32 units (kernels/conv_triton_fewk_wrw.py, launch
data in kernels/conv_triton_fewk_wrw_spec.py and kernels/conv_triton_fewc_wrw_spec.py).

dw of such a layer is at most 8 x C*R*S sums over every output position. The implicit GEMM
pads its 1-8 rows to a matrix-core block and, in FP32 at IEEE accuracy, runs each product as
three TF32 ones: 16.9-18.9x IEEE cuDNN's GPU time channels-last on the H100 (the UNet's and
the VAE decoder's conv_out: bench/results/fewk_h100-6a76905/zoo_fp32_bw.json). Here a
program owns a filter tap and a block of channels for every filter and one part of the
positions; its sums are FP32 fused multiply-adds (IEEE FP32 whatever the math mode). The
positions are split to fill the GPU (`spec.split_for`); the parts' FP32 partials go to the
workspace and the implicit GEMM's reduce kernel adds them into dw in a fixed order (a
follow-up), so the result does not change from run to run.

An image stem's dw (1-4 channels, 16-96 filters) is the same waste on the other side: 27-147
columns. The few-channel solver's programs own a block of filters and of the C*R*S columns
(every tap, x gathered at each column's tap) and read each dy tile once for all of them.

One group, 1-8 filters (any channels) or 1-4 channels (any filters), FP32. A package ships
per target each filter block's usual tile in both forms (CHANNELS_LAST 1 for channel strides
of 1, 0 for any), none assuming alignment, and the reduce objects. The miss ranking puts
them first where their spec's `claims` says (sm90, channels-last; few filters: filters of
more than one tap; few channels: of at most 16 taps), ahead of the implicit GEMM and its
Via, padded and batch-chunk solvers and the few-channel kernels (the registry's FIRST_CLAIMS /
YIELDS_TO).
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
    reduce_jobs,
    reduce_step,
    spec_compile_job,
    spec_kind,
    spec_launch,
    spec_sizes,
    spec_view,
    target_kind,
)

__all__ = ["ConvTritonFmaFewCWrw", "ConvTritonFmaFewKWrw", "FMA_WRW_SOLVERS",
           "fewc_wrw_first", "fewk_wrw_first", "fewk_wrw_spec"]

KERNEL_FILE = "conv_triton_fewk_wrw.py"
SPEC = "conv_triton_fewk_wrw_spec"
FEWC_SPEC = "conv_triton_fewc_wrw_spec"


def fewk_wrw_spec() -> Any:
    """`kernels/conv_triton_fewk_wrw_spec.py`: stdlib-only launch data of the kernel."""
    return kernels_spec(SPEC)


_view = spec_view


@lru_cache(maxsize=256)
def _job(spec_name: str, data_type: str, config: tuple[tuple[str, int], ...], cl: bool,
         target: Target) -> CompileJob:
    spec = kernels_spec(spec_name)
    values = dict(config)
    sig, constexprs = spec.signature(data_type, values, cl)
    return spec_compile_job(KERNEL_FILE, spec, spec.KERNEL["W"], sig, constexprs, values,
                            target, False)


def _config(params: Params) -> dict[str, int]:
    return config_of(tuple(params), "FmaWrw")


class ConvTritonFmaFewKWrw(Solver):
    """The few-filter backward weights on the FP32 units (a subclass with its own NAME and
    SPEC_NAME is the few-channel one)."""

    NAME = "ConvTritonFmaFewKWrw"
    SPEC_NAME = SPEC
    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE

    def spec(self) -> Any:
        return kernels_spec(self.SPEC_NAME)

    def __init__(self) -> None:
        self.direction = "W"
        self.directions = frozenset({"W"})
        self.name = self.NAME
        self.algorithm_names = {"W": "miopenConvolutionBwdWeightsAlgoDirect"}

    def _kind(self, target: Target) -> str | None:
        """The spec's kind on targets with matrix cores (those Triton compiles for: gfx900
        and gfx906 have none, and their portable kernels serve); else None."""
        if not spec_for(target.arch).matrix:
            return None
        return spec_kind(target, self.SPEC_NAME)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.direction != "W" or p.mode != "conv" or len(p.in_spatial) != 2:
            return False
        if not p.in_type == p.wei_type == p.out_type or \
                p.in_type not in self.spec().TYPES:
            return False
        if self._kind(target) is None:
            return False
        _, sizes, strides = _view(p)
        return bool(self.spec().applies(sizes, strides))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the spec's `claims` says (sm90, channels-last, more than one tap)."""
        kind = self._kind(target)
        _, sizes, strides = _view(problem)
        return kind is not None and bool(self.spec().claims(kind, sizes, strides))

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        """Every legal tile of the problem's filter block (the usual one first), each at its
        filling split and at twice that (at most the spec's most)."""
        kind = self._kind(target)
        if kind is None:
            return []
        spec = self.spec()
        _, sizes, strides = _view(problem)
        usual = spec.tile_for(kind, sizes, bool(spec.channels_last(strides)))
        space = spec.legal_space(kind, spec.filter_block(sizes["K"]))
        out: dict[Params, None] = {}
        for tile in sorted(space, key=lambda t: t != usual):
            split = spec.split_for(sizes, tile, target.cu)
            for parts in (split, min(2 * split, spec.SPLIT_RULE["most"])):
                out.setdefault(params_of({**tile, "SPLIT_K": parts}))
        return list(out)

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        """Legal, a filter block the spec `holds` the problem in, partials within 32 bits."""
        kind = target_kind(target.arch)
        spec = self.spec()
        if kind not in spec.KINDS or not spec_for(target.arch).matrix:
            return False
        try:
            config = _config(tuple(int(v) for v in params))
        except (TypeError, ValueError, ProblemError):
            return False
        if not spec.legal(kind, config):
            return False
        sizes = _view(problem)[1]
        return bool(spec.holds(sizes, config)) and \
            bool(spec.partials_fit(sizes, config["SPLIT_K"]))

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The usual tile of the problem's filter block at the split that fills the GPU."""
        spec = self.spec()
        kind = self._kind(target) or target_kind(target.arch) or ""
        _, sizes, strides = _view(problem)
        tile = spec.tile_for(kind, sizes, bool(spec.channels_last(strides)))
        return params_of({**tile, "SPLIT_K": spec.split_for(sizes, tile, target.cu)})

    def filling_params(self, problem: ConvProblem, params: Params, target: Target) -> Params:
        """`params` at the split that fills `target` at their tile (surveys of tiles)."""
        config = _config(tuple(params))
        split = self.spec().split_for(_view(problem)[1], config, target.cu)
        return params_of({**config, "SPLIT_K": split})

    def defaults_rule(self, problem: ConvProblem, target: Target) -> bool:
        """The split is shaped to fill the GPU, which the ranking's model cannot weigh."""
        return True

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return [self.default_params(problem, target)] if self._kind(target) else []

    # ------------------------------------------------------------------ kernels
    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The shape-agnostic job of the tile (the split is the grid's, not the object's),
        channels-last where every channel stride is 1."""
        _, _, strides = _view(problem)
        config = {**_config(tuple(params)), "SPLIT_K": 1}
        cl = bool(self.spec().channels_last(strides))
        return _job(self.SPEC_NAME, problem.in_type, tuple(sorted(config.items())), cl, target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """Every usual tile of each form, per type, and the reduce objects."""
        kind = self._kind(target)
        if kind is None:
            return []
        spec = self.spec()
        jobs = [_job(self.SPEC_NAME, t, tuple(sorted(tile.items())), cl, target)
                for t in spec.TYPES for cl in (True, False) for tile in spec.tiles(kind, cl)]
        for data_type in spec.TYPES:
            jobs += reduce_jobs(data_type, target)
        return jobs

    # ------------------------------------------------------------------ launches
    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return int(self.spec().workspace_bytes(_view(problem)[1], _config(tuple(params))))

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        view, sizes, strides = _view(problem)
        return spec_launch(self.spec(), "W", view, sizes, strides,
                           self.launch_geometry(problem, params),
                           self.workspace_for(problem, params))

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Several parts: the reduce kernel adds the partials ([part][K][C][R][S]) into dw."""
        split = _config(tuple(params))["SPLIT_K"]
        if split <= 1:
            return ()
        view, sizes, strides = _view(problem)
        w = strides["w"]
        values = {"TOTAL": sizes["K"] * sizes["C"] * sizes["R"] * sizes["S"], "C": sizes["C"],
                  "R": sizes["R"], "S": sizes["S"], "swk": w[0], "swc": w[1], "swr": w[2],
                  "sws": w[3]}
        return (reduce_step(problem.in_type, split, target, view.wei_tensor, values),)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        config = _config(tuple(params))
        grid = self.spec().grid(_view(problem)[1], config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def efficiency(self, view: ConvView, params: Params) -> float:
        return float(self.spec().efficiency(spec_sizes(view), _config(tuple(params))))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return 5.0 + macs(problem) / (1e6 * 8.0)


class ConvTritonFmaFewCWrw(ConvTritonFmaFewKWrw):
    """The few-channel backward weights (image stems) on the FP32 units."""

    NAME = "ConvTritonFmaFewCWrw"
    SPEC_NAME = FEWC_SPEC


def fewk_wrw_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the few-filter solver applies and claims the problem (FIRST_CLAIMS)."""
    return family_claims(FMA_WRW_SOLVERS, ConvTritonFmaFewKWrw, problem, target)


def fewc_wrw_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the few-channel solver applies and claims the problem (FIRST_CLAIMS)."""
    return family_claims(FMA_WRW_SOLVERS, ConvTritonFmaFewCWrw, problem, target)


def _solvers() -> list[Solver]:
    from .triton_common import has_kernels_spec

    return [cls() for cls in (ConvTritonFmaFewKWrw, ConvTritonFmaFewCWrw)
            if has_kernels_spec(cls.SPEC_NAME)]


FMA_WRW_SOLVERS: list[Solver] = _solvers()
