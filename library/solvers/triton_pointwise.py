"""ConvTritonPointwise{Fwd,Bwd,Wrw}: 1x1 and 1x1x1 convolutions of channels-last tensors with
few channels on one side, as GEMMs over one matrix of rows (kernels/conv_triton_pointwise.py,
launch data in kernels/conv_triton_pointwise_spec.py).

A channels-last activation of a pointwise layer is one matrix (a row per position of every
image, 2-D and 3-D alike), and so is a channel-planar one of one position an image (a squeeze-
and-excitation layer's, which takes its channels-last case's claim). With at most the spec's
NARROW channels on one side (an image or mask head, a latent, 3D U-Net's 64 -> 3) the layer
streams its wide side; the GEMM library's tiles and the implicit GEMMs' are mostly padding
there. Forward and backward data run one kernel (`pointwise_rows`); backward weights splits the
rows into parts whose FP32 partials the implicit GEMM's reduce kernel sums into dw (a follow-
up). FP16, BF16 and FP32 (the FP32 units, IEEE sums), one group, on the spec's KINDS. A package
ships the usual tiles of every type, each generic and aligned on the wide side it serves
(16-byte vectors there; the generic object for other strides or unaligned pointers). The miss
ranking puts a direction first where the spec's FIRST lists its case (measured), ahead of the
GEMM library's call and the few-filter and 3-D families.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target
from ._conv import ALGO_PREFIX, DIRECTION_SUFFIX, ConvView, conv_view, macs
from .base import CompileJob, Launch, Params, Solver
from .triton_common import (
    PARAM_NAMES,
    config_of,
    kernels_spec,
    params_of,
    reduce_jobs,
    reduce_step,
    spec_compile_job,
    spec_kernel_args,
    spec_kind,
    spec_sizes_3d,
    spec_strides_3d,
    target_kind,
)

__all__ = ["ConvTritonPointwise", "POINTWISE_SOLVERS", "pointwise_first", "pointwise_spec"]

KERNEL_FILE = "conv_triton_pointwise.py"
SPEC = "conv_triton_pointwise_spec"


def pointwise_spec() -> Any:
    """`kernels/conv_triton_pointwise_spec.py`: stdlib-only launch data of the kernels."""
    return kernels_spec(SPEC)


@lru_cache(maxsize=1024)
def _view(problem: ConvProblem) -> tuple[ConvView, dict[str, int], dict[str, tuple[int, ...]]]:
    """(view, sizes, strides) in the 3-D families' terms (a 2-D problem of depth 1), kept per
    problem: read them, never change them."""
    view = conv_view(problem)
    return view, spec_sizes_3d(view), spec_strides_3d(view)


@lru_cache(maxsize=256)
def _job(direction: str, data_type: str, config: tuple[tuple[str, int], ...], target: Target,
         side: int | None = None) -> CompileJob:
    """One object; `side` (0 or 1) the wide side it assumes aligned (the spec's
    ALIGNED_ARGS), None for the generic one."""
    spec = pointwise_spec()
    values = dict(config)
    kernel = spec.KERNEL[direction]
    sig, constexprs = spec.signature(direction, data_type, values)
    names = () if side is None else spec.ALIGNED_ARGS[(kernel, side)]
    return spec_compile_job(KERNEL_FILE, spec, kernel, sig, constexprs, values, target,
                            side is not None, spec.align_divisor(data_type), names)


def _config(params: Params) -> dict[str, int]:
    return config_of(params, "pointwise GEMM")


class ConvTritonPointwise(Solver):
    """One direction of the pointwise row GEMMs."""

    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE

    def __init__(self, direction: str) -> None:
        self.direction = direction
        self.directions = frozenset({direction})
        self.name = f"ConvTritonPointwise{DIRECTION_SUFFIX[direction]}"
        self.algorithm_names = {direction: f"miopenConvolution{ALGO_PREFIX[direction]}AlgoGEMM"}

    # ------------------------------------------------------------------ applicability
    def _kind(self, target: Target) -> str | None:
        return spec_kind(target, SPEC)

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or p.mode != "conv":
            return False
        if not p.in_type == p.wei_type == p.out_type or p.in_type not in pointwise_spec().TYPES:
            return False
        if self._kind(target) is None:
            return False
        _, sizes, strides = _view(p)
        return bool(pointwise_spec().applies(sizes, strides))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Where the spec's FIRST lists the problem's case for the target's arch, within its
        narrow side and rows (`spec.claims`)."""
        return bool(pointwise_spec().claims(target.arch, _case(problem), _view(problem)[1]))

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        if self._kind(target) is None:
            return []
        return [params_of(c) for c in pointwise_spec().legal_space(self.direction)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        kind = target_kind(target.arch)
        if kind not in pointwise_spec().KINDS or len(params) != len(PARAM_NAMES):
            return False
        try:
            config = _config(tuple(int(v) for v in params))
        except (TypeError, ValueError, ProblemError):
            return False
        return bool(pointwise_spec().legal(self.direction, config))

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The spec's usual tile for the problem's narrow side; backward weights split to
        fill the GPU."""
        spec = pointwise_spec()
        sizes = _view(problem)[1]
        tile = spec.usual_tile(self.direction, sizes, problem.in_type)
        if self.direction == "W":
            tile["SPLIT_K"] = spec.split_for(sizes, tile, target.cu)
        return params_of(tile)

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        return [self.default_params(problem, target)] if self._kind(target) else []

    # ------------------------------------------------------------------ kernels
    def _side(self, problem: ConvProblem) -> int | None:
        """The wide side the problem's arguments align (the spec's `meets_aligned`), else
        None."""
        spec = pointwise_spec()
        _, sizes, strides = _view(problem)
        args = spec.arg_values(self.direction, sizes, strides)
        if not spec.meets_aligned(self.direction, sizes, args, problem.in_type):
            return None
        return int(spec.side(self.direction, sizes))

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The shape-agnostic job of the tile (backward weights: the split object), aligned on
        the wide side where the problem's arguments allow."""
        config = _config(tuple(params))
        return _job(self.direction, problem.in_type, tuple(sorted(config.items())), target,
                    self._side(problem))

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        config = _config(tuple(params))
        return _job(self.direction, problem.in_type, tuple(sorted(config.items())), target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The usual tiles of each type, each generic and aligned on the wide side it serves
        (backward weights with the reduce kernels)."""
        if self._kind(target) is None:
            return []
        spec = pointwise_spec()
        jobs: list[CompileJob] = []
        for data_type in spec.TYPES:
            for side, tile in enumerate(spec.TILES[(self.direction, data_type == "FP32")]):
                config = tuple(sorted(tile.items()))
                jobs += [_job(self.direction, data_type, config, target),
                         _job(self.direction, data_type, config, target, side)]
            if self.direction == "W":
                jobs += reduce_jobs(data_type, target)
        return jobs

    # ------------------------------------------------------------------ launches
    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return int(pointwise_spec().workspace_bytes(self.direction, _view(problem)[1],
                                                    _config(tuple(params))))

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        spec = pointwise_spec()
        view, sizes, strides = _view(problem)
        grid, block = self.launch_geometry(problem, params)
        return Launch(spec.KERNEL[self.direction], grid, block,
                      spec_kernel_args(spec, self.direction, view, sizes, strides),
                      workspace_bytes=self.workspace_for(problem, params), needs_meta=True)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Backward weights: the reduce kernel sums the parts' partials into dw."""
        if self.direction != "W":
            return ()
        view, sizes, strides = _view(problem)
        w = strides["w"]
        values = {"TOTAL": sizes["K"] * sizes["C"], "C": sizes["C"], "R": 1, "S": 1,
                  "swk": w[0], "swc": w[1], "swr": w[3], "sws": w[4]}
        split = _config(tuple(params))["SPLIT_K"]
        return (reduce_step(problem.in_type, split, target, view.wei_tensor, values),)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        config = _config(tuple(params))
        grid = pointwise_spec().grid(self.direction, _view(problem)[1], config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def efficiency(self, view: ConvView, params: Params) -> float:
        return float(pointwise_spec().efficiency(self.direction, spec_sizes_3d(view),
                                                 _config(tuple(params))))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return 5.0 + macs(problem) / (1e6 * 25.0)


_CHANNELS_LAST = {"NCHW": "NHWC", "NCDHW": "NDHWC"}


def _case(problem: ConvProblem) -> str:
    """`<type>-<direction>-<layout>` of a problem (its input's layout); a channel-planar one
    of one position an image is its channels-last case, the same matrix of rows."""
    layout = problem.in_layout
    if math.prod(problem.in_spatial) == 1:
        layout = _CHANNELS_LAST.get(layout, layout)
    return f"{problem.in_type}-{problem.key_direction}-{layout}"


def pointwise_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the pointwise solver of the problem's direction applies and ranks first."""
    solver = _BY_DIRECTION.get(problem.key_direction)
    return solver is not None and solver.is_applicable(problem, target) and \
        solver.claims_first(problem, target)


_ALL = [ConvTritonPointwise(d) for d in ("F", "B", "W")]
POINTWISE_SOLVERS: list[Solver] = list(_ALL)
_BY_DIRECTION = {s.direction: s for s in _ALL}
