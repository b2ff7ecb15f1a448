"""ConvTriton3d{Fwd,Bwd,Wrw} (+ Tf32, Tf32x3): 3-D convolutions (NCDHW, NDHWC) as implicit
GEMM over the three filter axes on tensor cores (kernels/conv_triton_3d.py).

Without them a 3-D layer ran on the portable kernels at 5-210x cuDNN's GPU time on the H100
(issue 28). FP16, BF16 and FP32 on every matrix-core kind of the spec's KINDS (FP32 not on
wmma targets, whose matrix cores take none); FP32 is IEEE unless the math mode is TF32, which
adds the `...Tf32...` solvers, and the `...Tf32x3...` ones take FP32 in either mode on the
2-D spec's TF32X3_KINDS: the same math modes, names and accuracy as the 2-D implicit GEMM.
Groups are program axis 1; stride, padding and dilation any; transposed problems through the
plain convolution's opposite direction (`conv_view`).

Parameters are the implicit GEMM's seven. Backward weights cut their reduction (every output
position) in SPLIT_K parts on the grid's third axis (`spec.split_for`: two waves of the
target's CUs), the parts' FP32 partials in the workspace summed into dw by the 2-D family's
reduce kernel as a follow-up; the split is not part of the object. Forward and backward data
split the same way where their unsplit launch would leave most of the GPU idle
(`conv_triton_3d_split_spec.small_split`: a deep layer at batch 1), their partials summed
into y or dx; there the defaults rank alone, as backward weights' do. One tile per precision and
direction (`spec.usual_tile`) serves both layouts, so a package ships per precision and
direction two objects: the generic one (any strides: NCDHW, and NDHWC problems or pointers that
miss the alignment assumption) and the aligned channels-last one, and the reduce kernel at
every split (`dynamic_jobs`). They claim first place on every problem they take (ahead of the
portable solvers, the only others for 3-D problems).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target, spec_for
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
    spec_kind,
    spec_launch,
    spec_sizes_3d,
    spec_strides_3d,
    target_kind,
    tf32_capable,
    tf32x3_capable,
)

__all__ = ["ConvTriton3d", "TRITON_3D_SOLVERS", "spec_3d"]

KERNEL_FILE = "conv_triton_3d.py"
_SPEC = "conv_triton_3d_spec"
_SPLIT = PARAM_NAMES.index("SPLIT_K")

Strides = dict[str, tuple[int, ...]]


def spec_3d() -> Any:
    """`kernels/conv_triton_3d_spec.py`: stdlib-only launch data of the kernels."""
    return kernels_spec(_SPEC)


def split_3d() -> Any:
    """`kernels/conv_triton_3d_split_spec.py`: the small-grid split rule and the reduce's
    walk of the output."""
    return kernels_spec("conv_triton_3d_split_spec")


@lru_cache(maxsize=4096)
def _view(problem: ConvProblem) -> tuple[ConvView, dict[str, int], Strides, bool]:
    """(view, the spec's sizes, strides of x, w, y, channels-last) of a 3-D problem."""
    view = conv_view(problem)
    strides = spec_strides_3d(view)
    return view, spec_sizes_3d(view), strides, bool(spec_3d().channels_last(strides))


@lru_cache(maxsize=1024)
def _job(direction: str, data_type: str, math: str, config: tuple[tuple[str, int], ...],
         last: bool, aligned: bool, target: Target) -> CompileJob:
    spec = spec_3d()
    values = dict(config)
    sig, constexprs = spec.signature(direction, data_type, values, last, math)
    return spec_compile_job(KERNEL_FILE, spec, spec.KERNEL[direction], sig, constexprs,
                            values, target, aligned)


class ConvTriton3d(Solver):
    """One direction of the 3-D implicit GEMM, in one FP32 math mode ('ieee', 'tf32',
    'tf32x3')."""

    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE
    dims = 3  # the problems' spatial axes

    def __init__(self, direction: str, math: str = "ieee") -> None:
        self.direction = direction
        self.directions = frozenset({direction})
        self.math = math
        infix = {"tf32": "Tf32", "tf32x3": "Tf32x3"}.get(math, "")
        self.name = f"ConvTriton3d{infix}{DIRECTION_SUFFIX[direction]}"
        self.algorithm_names = {
            direction: f"miopenConvolution{ALGO_PREFIX[direction]}AlgoImplicitGEMM"}
        self.rank_first = True

    # ------------------------------------------------------------------ applicability
    def _kind(self, target: Target) -> str | None:
        if not spec_for(target.arch).matrix:
            return None
        return spec_kind(target, _SPEC)

    def _type_applicable(self, data_type: str, target: Target) -> bool:
        if data_type not in spec_3d().TYPES:
            return False
        if self.math == "tf32":
            return data_type == "FP32" and tf32_capable(target)
        if self.math == "tf32x3":
            return data_type == "FP32" and tf32x3_capable(target)
        return not (data_type == "FP32" and spec_for(target.arch).matrix == "wmma")

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or len(p.in_spatial) != self.dims:
            return False
        if not p.in_type == p.wei_type == p.out_type or self._kind(target) is None:
            return False
        if not self._type_applicable(p.in_type, target):
            return False
        _, sizes, strides, _ = _view(p)
        return bool(spec_3d().applies(sizes, strides))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Every problem the family takes: the portable kernels, the only others for 3-D
        problems, measured 5-210x cuDNN's GPU time on them (issue 28). Except an FP32
        forward or backward data on a small grid (its own defaults or the three-TF32-product
        solver's split), in IEEE math on a target with the three-product kernels: there the
        FP32 units' products took 1.08-1.70x the three-product kernel's GPU time (H100,
        bench/results/split3d_h100/rule_2steps), and the ranking's model, fitted on unsplit
        launches, put them ahead, also unsplit where only the three-product kernel's wider
        tile splits (bench/results/split3d_h100/picks_*.json)."""
        if self.math != "ieee" or problem.in_type != "FP32" or not tf32x3_capable(target) or \
                conv_view(problem).direction == "W":
            return True
        three = _THREE_PRODUCTS[self.direction]
        small = self.default_params(problem, target)[_SPLIT] > 1 or (
            three.is_applicable(problem, target) and
            three.default_params(problem, target)[_SPLIT] > 1)
        return not small

    # ------------------------------------------------------------------ parameters
    def _config(self, params: Params) -> dict[str, int]:
        return config_of(tuple(params), self.name)

    def _precision(self, data_type: str) -> str:
        return str(spec_3d().PRECISION_NAME.get(self.math, data_type))

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        """The kind's legal space (splits in backward weights alone) and, where forward or
        backward data split on a small grid, the split defaults."""
        kind = self._kind(target)
        if kind is None:
            return []
        space = [params_of(c) for c in
                 spec_3d().legal_space(conv_view(problem).direction, problem.in_type, kind)]
        default = tuple(self.default_params(problem, target))
        if default[_SPLIT] > 1 and default not in space:
            space.append(default)
        return space

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        # The target alone (not MIOPENKERNELS_TRITON), as the other Triton families.
        kind = target_kind(target.arch)
        if not spec_for(target.arch).matrix or kind not in spec_3d().KINDS:
            return False
        try:
            config = self._config(tuple(int(v) for v in params))
        except (TypeError, ValueError, ProblemError):
            return False
        view, sizes, strides, _ = _view(problem)
        if config["SPLIT_K"] > 1 and view.direction != "W" and (
                split_3d().out_reduce_values(view.direction, sizes, strides) is None or
                spec_3d().workspace_bytes(view.direction, sizes, config) // 4 >= 2**31 or
                spec_3d().grid(view.direction, sizes, config)[2] > spec_3d().GRID_YZ_MAX):
            return False  # the reduce cannot walk the output, 32-bit partial offsets, grid z
        return bool(spec_3d().legal(view.direction, config, problem.in_type, kind))

    def _usual(self, problem: ConvProblem, kind: str) -> dict[str, int]:
        return dict(spec_3d().usual_tile(self._precision(problem.in_type),
                                         conv_view(problem).direction, problem.in_type, kind))

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The precision's usual tile for the direction and layout, fitted to the target's
        kind, narrowed along a dimension of 16 channels or fewer (`spec.narrow_tile`);
        backward weights split to fill the target's CUs (`spec.split_for`); FP16 backward
        data and weights of many channels and positions that take the aligned object on the
        wide tile (`spec.wide_of`, `spec.wide_applies`)."""
        kind = target_kind(target.arch)
        if kind is None or kind not in spec_3d().KINDS:
            kind = "sm90"
        view, sizes, strides, _ = _view(problem)
        tile = self._usual(problem, kind)
        narrow = spec_3d().narrow_tile(view.direction, tile, problem.in_type, sizes)
        if self.math == "ieee" and spec_3d().legal(view.direction, narrow, problem.in_type, kind):
            tile = narrow
        if view.direction == "W":
            tile["SPLIT_K"] = spec_3d().split_for(sizes, tile, target.cu)
        if self.math == "ieee" and self._aligned(problem) and \
                spec_3d().wide_applies(view.direction, problem.in_type, sizes, kind):
            wide = spec_3d().wide_of(view.direction, tile)
            if spec_3d().legal(view.direction, wide, problem.in_type, kind):
                tile = wide  # the split stays the usual tile's, as measured
        if view.direction != "W":
            tile["SPLIT_K"] = split_3d().small_split(view.direction, sizes, strides, tile,
                                                     target.cu, kind)
        return params_of(tile)

    def defaults_rule(self, problem: ConvProblem, target: Target) -> bool:
        """Backward weights' split is shaped to fill the GPU, as forward's and backward
        data's on a small grid; the ranking's model cannot weigh it against other sets."""
        return conv_view(problem).direction == "W" or \
            self.default_params(problem, target)[_SPLIT] > 1

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """Backward weights at half and twice the default split."""
        default = self.default_params(problem, target)
        if conv_view(problem).direction != "W":
            return []
        split = default[_SPLIT]
        out: list[Params] = []
        for s in (max(1, split // 2), min(spec_3d().MAX_SPLIT, split * 2)):
            params = default[:_SPLIT] + (s,) + default[_SPLIT + 1:]
            if params != default and params not in out:
                out.append(params)
        return out

    # ------------------------------------------------------------------ kernels
    def _aligned(self, problem: ConvProblem) -> bool:
        _, sizes, strides, last = _view(problem)
        spec = spec_3d()
        return last and bool(spec.meets_align16(spec.arg_values("F", sizes, strides)))

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The (shape-agnostic) job: the aligned channels-last object where the problem meets
        the alignment assumption, else the generic one (any strides)."""
        return self._job(problem, params, self._aligned(problem), target)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        return self._job(problem, params, False, target)

    def _job(self, problem: ConvProblem, params: Params, aligned: bool, target: Target
             ) -> CompileJob:
        # The split is the grid's third axis: one object serves every split above one
        # (forward and backward data: their SPLIT object; backward weights: the only one).
        split = self._config(tuple(params))["SPLIT_K"]
        config = {**self._config(tuple(params)),
                  "SPLIT_K": 1 + spec_3d().split_object(self.direction, split),
                  **self._tap_group(problem)}
        return _job(conv_view(problem).direction, problem.in_type, self.math,
                    tuple(sorted(config.items())), aligned or self.generic_channels_last,
                    aligned, target)

    #: Whether the object that assumes no alignment is a channels-last one (CHANNELS_LAST=1);
    #: here the generic one serves NCDHW and misaligned NDHWC problems alike.
    generic_channels_last = False

    def _tap_group(self, problem: ConvProblem) -> dict[str, int]:
        """The backward-weights kernel's TAPS and TAP_AXIS for a problem (its object's and
        grid's); none here: one tap a program (solvers/triton_3d_taps.py groups them)."""
        return {}

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """Per type the usual tile's generic and aligned channels-last objects (16-bit: also
        its narrow variant's; FP16 on WIDE_KINDS its wide one's), on SMALL_SPLIT_KINDS
        forward's and backward data's usual tile also as split objects (a small grid's
        split; the narrow and wide tiles take problems of many positions, never a small
        grid), and the reduce kernel (every split). A transposed problem's key direction is
        its plain convolution's (`conv_view`), so the solver's kernel is its direction's
        either way."""
        kind = self._kind(target)
        if kind is None:
            return []
        spec = spec_3d()
        jobs: list[CompileJob] = []
        split = self.direction != "W" and kind in split_3d().SMALL_SPLIT_KINDS
        for data_type in spec.TYPES:
            if not self._type_applicable(data_type, target):
                continue
            tiles = self._tiles(data_type, kind)
            configs = [*tiles, *([{**tiles[0], "SPLIT_K": 2}] if split else [])]
            jobs += [_job(self.direction, data_type, self.math, tuple(sorted(t.items())), last,
                          last, target) for t in configs for last in (False, True)]
            jobs += reduce_jobs(data_type, target)  # every split: these objects
        return jobs

    def _tiles(self, data_type: str, kind: str) -> list[dict[str, int]]:
        """The tiles a package ships for a type: the usual one, and for 16-bit types in IEEE
        math its narrow variant and (FP16 on WIDE_KINDS) its wide one."""
        spec = spec_3d()
        tile = spec.usual_tile(self._precision(data_type), self.direction, data_type, kind)
        tiles = [tile]
        if self.math == "ieee" and data_type in spec.NARROW_TYPES:
            wide = spec.wide_of(self.direction, tile) if kind in spec.WIDE_KINDS and \
                data_type in spec.WIDE_TYPES else tile
            for other in (spec.narrow_of(self.direction, tile), wide):
                if other not in tiles and spec.legal(self.direction, other, data_type, kind):
                    tiles.append(other)
        return tiles

    # ------------------------------------------------------------------ launches
    def _spec(self) -> Any:
        """The launch data of the solver's kernels (a subclass of other kernels names its
        own spec module here)."""
        return spec_3d()

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        view, sizes, _, _ = _view(problem)
        return int(self._spec().workspace_bytes(view.direction, sizes,
                                                self._config(tuple(params))))

    #: Whether backward data whose taps all land on stride phase 0 (`spec.lone_phase`: the
    #: 1x1x1 stride-2 downsamples) launches that phase alone and has the runtime clear dx
    #: first (`Launch.zero_first`), not a program per phase writing zeros; a solver whose
    #: kernel writes a copy of dx (the relaid ones) or that has kernels of its own does not.
    clears_phases = True

    def _one_phase(self, problem: ConvProblem, params: Params) -> bool:
        """Backward data on phase 0 alone (`clears_phases`), unsplit (a split launch's parts
        each write every position of their partial)."""
        view, sizes, _, _ = _view(problem)
        return self.clears_phases and view.direction == "B" and \
            self._config(tuple(params))["SPLIT_K"] == 1 and bool(spec_3d().lone_phase(sizes))

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        from .._record import replace

        view, sizes, strides, _ = _view(problem)
        launch = spec_launch(self._spec(), view.direction, view, sizes, strides,
                             self.launch_geometry(problem, params),
                             self.workspace_for(problem, params))
        if self._one_phase(problem, params):  # the layer's output: dx, or a transposed y
            launch = replace(launch, zero_first=("dx" if problem.direction == "B" else "y",))
        return launch

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """A launch split in parts: the reduce kernel sums the partials into dw (backward
        weights), y (forward) or dx (backward data)."""
        split = self._config(tuple(params))["SPLIT_K"]
        view, sizes, strides, _ = _view(problem)
        if split <= 1:
            return ()
        if view.direction == "W":
            return (reduce_step(problem.in_type, split, target, view.wei_tensor,
                                self._spec().reduce_values(sizes, strides)),)
        values = split_3d().out_reduce_values(view.direction, sizes, strides)
        if values is None:
            raise ProblemError(f"{self.name}: no split of {problem.key()}: its output's "
                               "strides do not let the reduce walk it")
        out = view.out_tensor if view.direction == "F" else view.in_tensor
        return (reduce_step(problem.in_type, split, target, out, values),)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        config = {**self._config(tuple(params)), **self._tap_group(problem),
                  "ONE_PHASE": int(self._one_phase(problem, params))}
        view, sizes, _, _ = _view(problem)
        grid = self._spec().grid(view.direction, sizes, config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def efficiency(self, view: ConvView, params: Params) -> float:
        sizes = spec_sizes_3d(view)
        return float(self._spec().efficiency(view.direction, sizes,
                                             self._config(tuple(params))))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        # The 2-D implicit GEMM's nominal rates: tensor cores ~20x the portable kernels' MAC
        # rate (FP32 IEEE ~4x, three TF32 products ~7x).
        speed = 4.0 if problem.in_type == "FP32" and self.math == "ieee" else \
            7.0 if self.math == "tf32x3" else 20.0
        return 5.0 + macs(problem) / (1e6 * speed)


TRITON_3D_SOLVERS: list[Solver] = [ConvTriton3d(d, m) for m in ("ieee", "tf32", "tf32x3")
                                   for d in ("F", "B", "W")]
#: The three-TF32-product solver of each direction (whose small grid the IEEE FP32 one asks).
_THREE_PRODUCTS = {d: ConvTriton3d(d, "tf32x3") for d in ("F", "B", "W")}
