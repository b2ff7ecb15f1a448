"""ConvTritonDepthwise{Fwd,Bwd,Wrw}: depthwise convolutions (groups = channels, a channel
multiplier of 1) as their own memory-bound Triton family (kernels/conv_triton_depthwise.py).

A depthwise layer has R*S multiply-adds per output element, so the implicit GEMM (one channel
a group: GEMMs of width 1) and the portable kernels looping over groups waste most of a GPU on
it. Here each program owns pixels x channels of one image and walks the taps; loads are
vectors along channels in NHWC and coalesced along pixels in NCHW. Backward weights sum a
whole filter row per program (its width class is part of the object) and cut the N * P * Q
reduction into SPLIT_K parts (program axis 2, beside channel blocks and filter rows), so even
a layer with few channels fills the GPU; the parts' FP32 partials go to the workspace and the
implicit GEMM's reduce kernel sums them into dw in a fixed order (a follow-up), so the result
does not change from run to run.

Filters up to 7x7, strides 1-2, any padding and dilation; FP16, BF16 and FP32 on every kind
of the spec's KINDS (the kinds with matrix cores the other Triton families take: the portable
kernels stay the fallback elsewhere). Parameters are the implicit GEMM's seven (BLOCK_K,
GROUP_M and num_stages 1). Every object is shape-agnostic; a package ships each direction's
usual tile per type and layout (channels-last ones with and without the alignment assumption,
3x3 ones also assuming pairs of channels; backward weights per width class) and the
reduce kernel at every split (`dynamic_jobs`). The miss ranking puts these solvers first on
every problem they take (the registry's FIRST_CLAIMS / YIELDS_TO).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target, spec_for
from ._conv import ALGO_PREFIX, DIRECTION_SUFFIX, ConvView, conv_view
from .base import CompileJob, Launch, Params, Solver
from .triton_common import (
    PARAM_NAMES,
    config_of,
    kernels_spec,
    params_of,
    reduce_jobs,
    reduce_step,
    spec_compile_job,
    spec_kind,
    spec_launch,
    spec_sizes,
    spec_strides,
    target_kind,
)

__all__ = ["ConvTritonDepthwise", "DEPTHWISE_SOLVERS", "depthwise_first", "depthwise_spec",
           "first_of"]

KERNEL_FILE = "conv_triton_depthwise.py"
_SPEC = "conv_triton_depthwise_spec"


def depthwise_spec() -> Any:
    """`kernels/conv_triton_depthwise_spec.py`: stdlib-only launch data of the kernels."""
    return kernels_spec(_SPEC)


@lru_cache(maxsize=4096)
def _view(problem: ConvProblem) -> tuple[ConvView, dict[str, int],
                                         dict[str, tuple[int, ...]], bool]:
    view = conv_view(problem)
    strides: dict[str, tuple[int, ...]] = dict(spec_strides(view))
    return view, spec_sizes(view), strides, bool(depthwise_spec().channels_last(strides))


@lru_cache(maxsize=1024)
def _job(spec_name: str, direction: str, data_type: str, config: tuple[tuple[str, int], ...],
         last: bool, divisor: int, width: int, target: Target) -> CompileJob:
    """One object: `divisor` is what its ALIGN16 arguments are assumed multiples of (its
    pointers 16-byte aligned), 0 for none."""
    spec = kernels_spec(spec_name)
    values = dict(config)
    kernel = spec.KERNEL[direction]
    sig, constexprs = spec.signature(direction, data_type, values, last, width)
    return spec_compile_job(KERNEL_FILE, spec, kernel, sig, constexprs, values, target,
                            divisor > 0, divisor or 16)


def _config(params: Params) -> dict[str, int]:
    return config_of(params, "depthwise")


class ConvTritonDepthwise(Solver):
    """One direction of the depthwise family (a subclass with its own `spec_name` and `family`
    is another family of direct kernels in the same file: the grouped one)."""

    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE
    spec_name = _SPEC
    family = "Depthwise"
    dims = 2  # the problems' spatial axes

    def __init__(self, direction: str) -> None:
        self.direction = direction
        self.directions = frozenset({direction})
        self.name = f"ConvTriton{self.family}{DIRECTION_SUFFIX[direction]}"
        self.algorithm_names = {direction: f"miopenConvolution{ALGO_PREFIX[direction]}AlgoDirect"}
        self.rank_first = True

    def spec(self) -> Any:
        """The family's stdlib-only launch data (kernels/<spec_name>.py)."""
        return kernels_spec(self.spec_name)

    def _view(self, problem: ConvProblem) -> tuple[ConvView, dict[str, int],
                                                   dict[str, tuple[int, ...]], bool]:
        """(view, the spec's sizes, strides of x, w, y, channels-last) of a problem (a
        family of other dimensions has its own)."""
        return _view(problem)

    # ------------------------------------------------------------------ applicability
    def _kind(self, target: Target) -> str | None:
        if not spec_for(target.arch).matrix:
            return None
        return spec_kind(target, self.spec_name)

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or p.mode != "conv" or \
                len(p.in_spatial) != self.dims:
            return False
        if not p.in_type == p.wei_type == p.out_type or p.in_type not in self.spec().TYPES:
            return False
        if p.groups < 2 or self._kind(target) is None:
            return False
        _, sizes, strides, _ = self._view(p)
        return bool(self.spec().applies(sizes, strides))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Every problem the family takes (measured against the portable and group-looping
        kernels at 4-90x cuDNN's time on depthwise layers: bench/results/zoo_picks_sm90-132)."""
        return True

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        if self._kind(target) is None:
            return []
        return [params_of(c) for c in self.spec().legal_space(self.direction)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        # The target alone (not MIOPENKERNELS_TRITON), as the other Triton families.
        if not spec_for(target.arch).matrix or len(params) != len(PARAM_NAMES) or \
                target_kind(target.arch) not in self.spec().KINDS:
            return False
        try:
            config = _config(tuple(int(v) for v in params))
        except (TypeError, ValueError, ProblemError):
            return False
        if not self.spec().legal(self.direction, config):
            return False
        if config["SPLIT_K"] == 1:
            return True
        try:
            _, sizes, _, _ = self._view(problem)
        except ProblemError:
            return False
        return bool(self.spec().partials_fit(sizes, config["SPLIT_K"]))

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The layout's usual tile, or the family's tile for large launches where it has one
        (the spec's `tile_for`); backward weights split to fill the CUs."""
        spec = self.spec()
        _, sizes, _, last = self._view(problem)
        tile = spec.tile_for(self.direction, last, sizes, target.cu, self._kind(target)) \
            if hasattr(spec, "tile_for") else spec.usual_tile(self.direction, last)
        if self.direction == "W":
            tile["SPLIT_K"] = spec.split_for(sizes, tile, target.cu, last)
        return params_of(tile)

    def defaults_rule(self, problem: ConvProblem, target: Target) -> bool:
        """Backward weights' split is shaped to fill the GPU, and a large launch's tile was
        measured against the others (the spec's `tile_for`); the ranking's model cannot weigh
        either against other sets."""
        if self.direction == "W":
            return True
        spec = self.spec()
        if not hasattr(spec, "tile_for"):
            return False
        _, sizes, _, last = self._view(problem)
        tile = spec.tile_for(self.direction, last, sizes, target.cu, self._kind(target))
        usual = spec.usual_tile(self.direction, last)
        return bool((tile["BLOCK_M"], tile["BLOCK_N"]) != (usual["BLOCK_M"], usual["BLOCK_N"]))

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """The other layout's usual tile, and backward weights at half and twice the default
        split."""
        spec = self.spec()
        _, sizes, _, last = self._view(problem)
        out: list[Params] = []
        for tile in (spec.usual_tile(self.direction, last),
                     spec.usual_tile(self.direction, not last)):
            splits = [1]
            if self.direction == "W":
                split = spec.split_for(sizes, tile, target.cu, last)
                most = spec.SPLIT_RULES[last]["most"]
                splits = [split, max(1, split // 2), min(most, split * 2)]
            for s in splits:
                params = params_of({**tile, "SPLIT_K": s})
                if params not in out:
                    out.append(params)
        return out

    # ------------------------------------------------------------------ kernels
    def _levels(self, data_type: str, last: bool, width: int) -> tuple[int, ...]:
        """The alignment divisors of the objects a package ships for a type, layout and shape
        class, the strongest first (0: none; the spec's `alignment_levels`)."""
        spec = self.spec()
        if not spec.ALIGN16[spec.KERNEL[self.direction]]:
            return (0,)
        return tuple(spec.alignment_levels(data_type, last, width,
                                           spec.pair_classes(self.direction, last)))

    def _divisor(self, problem: ConvProblem) -> int:
        """The alignment divisor of the object the problem takes (0: none)."""
        _, sizes, strides, last = self._view(problem)
        spec = self.spec()
        levels = self._levels(problem.in_type, last, self._width(problem))
        return int(spec.alignment(spec.ALIGN16[spec.KERNEL[self.direction]],
                                  spec.arg_values(self.direction, sizes, strides), levels)) \
            if levels != (0,) else 0

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The (shape-agnostic) job of the problem's layout, with the strongest alignment
        assumption the problem meets."""
        return self._job(problem, params, self._divisor(problem), target)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        return self._job(problem, params, 0, target)

    def _job(self, problem: ConvProblem, params: Params, divisor: int, target: Target
             ) -> CompileJob:
        # The split is the grid's third axis, not part of the object: one serves every split.
        config = {**_config(tuple(params)), "SPLIT_K": 1}
        last = self._view(problem)[3]
        return _job(self.spec_name, self.direction, problem.in_type,
                    tuple(sorted(config.items())), last, divisor, self._width(problem), target)

    def _width(self, problem: ConvProblem) -> int:
        """The shape class the object is compiled for (the spec's `shape_class`: backward
        weights' filter width class, forward's and backward data's unrolled filter, backward
        data's phased objects)."""
        _, sizes, _, last = self._view(problem)
        return int(self.spec().shape_class(self.direction, sizes, last))

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """Per type and layout the usual tile (channels-last: with and without alignment) at
        each of the spec's shape classes of the layout (backward weights' filter width
        classes, the unrolled filters, channels-last backward data's phased ones), and the
        reduce kernel at every split."""
        if self._kind(target) is None:
            return []
        spec = self.spec()
        jobs: list[CompileJob] = []
        for data_type in spec.TYPES:
            for last in (True, False):
                for width in spec.shape_classes(self.direction, last):
                    tiles = spec.tiles_of(self.direction, last, self._kind(target)) \
                        if hasattr(spec, "tiles_of") else \
                        [spec.usual_tile(self.direction, last)]
                    for tile in tiles:
                        config = tuple(sorted(tile.items()))
                        jobs += [_job(self.spec_name, self.direction, data_type, config, last,
                                      d, width, target)
                                 for d in self._levels(data_type, last, width)]
            if self.direction == "W":
                jobs += reduce_jobs(data_type, target)  # every split: these objects
        return jobs

    # ------------------------------------------------------------------ launches
    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return int(self.spec().workspace_bytes(self.direction, self._view(problem)[1],
                                               _config(tuple(params))))

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        view, sizes, strides, _ = self._view(problem)
        return spec_launch(self.spec(), self.direction, view, sizes, strides,
                           self.launch_geometry(problem, params),
                           self.workspace_for(problem, params))

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Backward weights split in parts: the reduce kernel sums the partials into dw."""
        split = _config(tuple(params))["SPLIT_K"]
        if self.direction != "W" or split <= 1:
            return ()
        view, sizes, strides, _ = self._view(problem)
        w = strides["w"]
        # The partials are [part][lane][R * S], a lane (k, c) at k * C + c (C = 1 depthwise).
        values = {"TOTAL": self.spec().lanes("W", sizes) * sizes["R"] * sizes["S"],
                  "C": sizes["C"], "R": sizes["R"], "S": sizes["S"], "swk": w[0], "swc": w[1],
                  "swr": w[2], "sws": w[3]}
        return (reduce_step(problem.in_type, split, target, view.wei_tensor, values),)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        config = _config(tuple(params))
        if self.direction != "W":
            config["SPLIT_K"] = 1
        grid = self.spec().grid(self.direction, self._view(problem)[1], config,
                                self._width(problem))
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def efficiency(self, view: ConvView, params: Params) -> float:
        return float(self.spec().efficiency(self.direction, self._sizes(view),
                                            _config(tuple(params))))

    def _sizes(self, view: ConvView) -> dict[str, int]:
        return spec_sizes(view)

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        """Memory-bound: about the bytes moved (the other solvers' ranks are in MACs)."""
        size = 2 if problem.in_type in ("FP16", "BF16") else 4
        elements = 1
        for d in problem.in_shape:
            elements *= d
        return 1.0 + 2.0 * size * elements / 1e9


def first_of(solvers: list[Solver], problem: ConvProblem, target: Target) -> bool:
    """Whether the solver of `solvers` for the problem's direction applies and claims first
    place (a family's entry in the registry's FIRST_CLAIMS)."""
    solver = next((s for s in solvers if problem.key_direction in s.directions), None)
    return solver is not None and solver.is_applicable(problem, target) and \
        solver.claims_first(problem, target)


def depthwise_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the depthwise solver of the problem's direction applies (it then ranks first,
    ahead of the implicit GEMM and its Via solvers)."""
    return first_of(DEPTHWISE_SOLVERS, problem, target)


DEPTHWISE_SOLVERS: list[Solver] = [ConvTritonDepthwise(d) for d in ("F", "B", "W")]
