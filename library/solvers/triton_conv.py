"""ConvTritonImplicitGemm{Fwd,Bwd,Wrw} (+ Tf32, Tf32x3): implicit GEMM on tensor cores, in Triton.

The kernels are `kernels/conv_triton.py`; how to launch them (argument list, grid, legal
tunables per target, the align16 assumption) is plain data in `kernels/conv_triton_spec.py`,
which this module reads without importing Triton: the runtime launches the precompiled objects
from the kdb with the launch metadata they carry (codeobject.LaunchMetadata).

Applicability: targets with matrix instructions (targets.toml `matrix`); 2D problems; one
element type of FP16, BF16 or FP32 (FP32 not on wmma targets); 32-bit offsets; groups as
program axis 1, or several to a tile with fewer than 16 channels and filters each (the packed
kernels, 16-bit only); else the portable solvers. Parameters (PerfDb order): BLOCK_M, BLOCK_N,
BLOCK_K, GROUP_M, SPLIT_K, num_warps, num_stages; the legal space per target: the spec.
SPLIT_K > 1 (backward weights by default; forward and backward data where their tiles alone
would leave most CUs idle) leaves FP32 partial sums in the workspace, which the reduce kernel
(`follow_ups`) adds into the output; one object serves every split.

Every object is shape-agnostic (sizes are arguments). An object may assume 16-byte aligned
pointers and multiples of 16 in the spec's ALIGN16_ARGS; a problem or call that does not meet
that runs a variant compiled without the assumption (`unaligned_job`).

FP32 is IEEE unless the Handle's math mode is TF32 (`Handle(math_mode="TF32")` or
MIOPENKERNELS_FP32_MATH=TF32): then the `...Tf32...` solvers (FP32 only, targets whose matrix
cores do TF32) apply too. Their own names keep their PerfDb records apart.

The `...Tf32x3...` solvers take FP32 problems in either math mode on the spec's TF32X3_KINDS:
three TF32 products each (Triton's "tf32x3"), FP32 accuracy on tensor cores (H100, ResNet-50:
error 1.3e-7 to 3.2e-7 in 0.35-0.80 of the IEEE kernels' time, triton_kernels_fp32x3_h100).
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..config import triton_solvers_enabled
from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target, spec_for
from ._conv import ALGO_PREFIX, DIRECTION_SUFFIX, ConvView, macs
from .base import CompileJob, Launch, Params, Solver
from .triton_common import (
    CONV_KERNEL_FILE,
    MATH_TYPE,
    MMA_PARAM,
    PARAM_NAMES,
    aligned_object,
    config_items,
    config_view,
    conv_triton_job,
    job_items,
    kernel_arg,
    legal_params,
    packed_kernel,
    problem_view,
    reduce_step,
    scratch_args,
    shape_fits,
    spec_module,
    spec_sizes,
    splits_reduction,
    target_kind,
    tf32_capable,
    tf32x3_capable,
)
from .triton_ieee_first import ieee_first
from .triton_small_grid import small_grid_config, small_grid_configs
from .triton_tile_rule import tile_rule_config, tile_rule_configs

__all__ = ["ConvTritonImplicitGemm", "TRITON_SOLVERS", "KERNEL_FILE"]

KERNEL_FILE = CONV_KERNEL_FILE

_TYPES = ("FP16", "BF16", "FP32")
# Sizes no tuned table holds: `tuned_config` then gives the case's usual winner.
_NO_SIZES = {k: 0 for k in ("N", "C", "H", "W", "K", "P", "Q", "R", "S", "G", "stride_h",
                            "stride_w", "pad_h", "pad_w", "dil_h", "dil_w")}


@lru_cache(maxsize=4096)
def _legal(params: Params, data_type: str, kind: str, kernel: str) -> bool:
    config = dict(config_items(params))
    return (config["SPLIT_K"] == 1 or splits_reduction(kernel)) and bool(
        spec_module().is_legal(config, data_type, kind, kernel))


@lru_cache(maxsize=4096)
def _choices(solver: ConvTritonImplicitGemm, problem: ConvProblem, target: Target,
             kind: str | None) -> tuple[Params, Params | None]:
    """A solver's (default_params, usual tile where it differs) for a problem, worked out once:
    the miss ranking asks for both, and whether the defaults split, for every candidate solver.
    `kind` (None while MIOPENKERNELS_TRITON turns the solvers off) is part of the key."""
    return solver._choose(problem, target, kind)


def _programs(kernel: str, sizes: dict[str, int], config: dict[str, int]) -> int:
    return int(math.prod(spec_module().grid(kernel, sizes, config)))  # its thread blocks


#: 16-bit types in which the implicit GEMM ranks ahead of the portable solvers, from this many
#: channels and filters per group: the model had put the portable kernels first on 10 of
#: ResNet-50's 1x1 NHWC backward-data problems at batch 1 (0.52-3.69x cuDNN, the implicit GEMM
#: 0.24-0.40x: bench/results/kernels_h100-ebe52e4.json).
_SIXTEEN_BIT_FIRST = {"FP16": 16, "BF16": 16}
#: Grouped problems of this many channels and filters a group or more rank the implicit GEMM
#: (the group its program axis 1) first in every type: the portable kernels loop over the
#: groups, at 10-17x cuDNN's GPU time on ResNeXt's 3x3 layers (issue 28, H100). Fewer a group
#: take the packed kernels in 16-bit types (FP32: the grouped direct family) and rank first.
_GROUPED_FIRST = 16


class ConvTritonImplicitGemm(Solver):
    """One direction of the Triton implicit GEMM in one math mode: 'ieee', 'tf32', 'tf32x3'."""

    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE

    def __init__(self, direction: str, math: str = "ieee") -> None:
        self.direction = direction
        self.math = math
        # Under the TF32 math mode its products run on tensor cores at 8x the IEEE kernels'
        # rate; the ranking's model, fitted on few TF32 timings, ranked IEEE and portable
        # kernels 2-30x slower ahead of it (bench/kernels.py on the H100, before this rule).
        # TF32x3 likewise: at FP32 accuracy it took 0.35-0.80 of the IEEE kernels' time on the
        # H100 (bench/results/triton_kernels_fp32x3_h100.json), and the model has no timings.
        self.rank_first = math in ("tf32", "tf32x3")
        infix = {"tf32": "Tf32", "tf32x3": "Tf32x3"}.get(math, "")
        self.name = f"ConvTritonImplicitGemm{infix}{DIRECTION_SUFFIX[direction]}"
        self.directions = frozenset({direction})
        self.algorithm_names = {
            direction: f"miopenConvolution{ALGO_PREFIX[direction]}AlgoImplicitGEMM"}

    # ------------------------------------------------------------------ problem mapping
    def _view(self, problem: ConvProblem) -> tuple[ConvView, dict[str, int], str, bool]:
        return problem_view(problem)  # (view, i32 arguments, kernel name, channels_last)

    def _kind(self, target: Target) -> str | None:
        """The spec's target kind; None without matrix cores, kernels or MIOPENKERNELS_TRITON."""
        if not triton_solvers_enabled():
            return None
        return target_kind(target.arch)

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """TF32 and three-product solvers claim first place (the IEEE one instead where
        `ieee_first` says), and so do all of them on 16-bit problems of 16 or more channels and
        filters per group (`_SIXTEEN_BIT_FIRST`), on grouped ones of as many in every type
        (`_GROUPED_FIRST`) and on forward problems on a small grid (solvers/triton_small_grid);
        the registry's precedence (`solvers.YIELDS_TO`) gives way where the problem goes through
        the other layout's kernels or a Winograd, 1x1 GEMM or direct solver claims it."""
        if self.math != "tf32" and ieee_first(problem, target):
            return self.math == "ieee"
        per_group = min(problem.c, problem.k) // problem.groups
        return self.rank_first or per_group >= _SIXTEEN_BIT_FIRST.get(problem.in_type, 1 << 30) \
            or (problem.groups > 1 and (per_group >= _GROUPED_FIRST or
                                        packed_kernel(self._view(problem)[2]))) \
            or small_grid_config(problem, target, self.math) is not None

    def ahead_of_portable(self, problem: ConvProblem, target: Target) -> bool:
        """On a tuned kind, after the first-ranked solvers and ahead of the rest: FP32 (IEEE)
        forward and backward data from 16 channels and filters a group (873 of 906 timed
        both ways, tune_sm9084) and 16-bit ones below (the model put the direct solver first
        at 14.5x cuDNN on 14 zoo layers, this one 1.4x on its 11: zoo_h200-sample3)."""
        if self.math != "ieee" or not spec_module().tuned_table(self._kind(target) or ""):
            return False
        fp32 = problem.in_type == "FP32" and self.direction != "W"
        return problem.in_type in _SIXTEEN_BIT_FIRST or \
            (fp32 and min(problem.c, problem.k) // problem.groups >= 16)

    # ------------------------------------------------------------------ applicability
    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or len(p.in_spatial) != 2:
            return False
        if not spec_for(target.arch).matrix or self._kind(target) is None:
            return False
        if not (p.in_type == p.wei_type == p.out_type) or p.in_type not in _TYPES or \
                not self._type_applicable(p.in_type, target):
            return False
        view, _, kernel, _ = self._view(p)
        return shape_fits(view) and not (p.in_type == "FP32" and packed_kernel(kernel))

    # ------------------------------------------------------------------ parameters
    def _check_length(self, params: Params) -> None:
        if len(params) not in (len(PARAM_NAMES), len(PARAM_NAMES) + 1):
            raise ProblemError(f"{self.name}: params {params} are not {','.join(PARAM_NAMES)}"
                               f"[,{MMA_PARAM}]")

    def _config(self, params: Params) -> dict[str, int]:
        """The constexprs of a parameter set (a fresh dict: callers may extend it)."""
        self._check_length(params)
        return dict(config_items(tuple(params)))

    def _params(self, config: dict[str, int]) -> Params:
        mma = int(config.get(MMA_PARAM, 0))
        return tuple(int(config.get(k, 1)) for k in PARAM_NAMES) + ((mma,) if mma else ())

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        view, _, kernel, _ = self._view(problem)
        split_ok = splits_reduction(kernel) and \
            spec_module().split_applies(kernel, spec_sizes(view))
        return [params for params, split in
                legal_params(kind, problem.in_type, kernel, self.math == "ieee")
                if split == 1 or split_ok]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        # The target's kind alone (not MIOPENKERNELS_TRITON): whether the solvers are on is
        # is_applicable's question; the ranking asks this per candidate.
        kind = target_kind(target.arch)
        if kind is None or len(params) not in (len(PARAM_NAMES), len(PARAM_NAMES) + 1):
            return False
        view, _, kernel, _ = self._view(problem)
        try:
            values = tuple(int(v) for v in params)
            if not _legal(values, problem.in_type, kind, kernel):
                return False
        except (TypeError, ValueError):
            return False
        if self.math == "ieee" and dict(config_items(values)).get(MMA_PARAM):
            return False  # the IEEE kernels use no matrix instruction to choose
        # A split where some stride phase has no tap is not one this kernel computes right.
        return values[PARAM_NAMES.index("SPLIT_K")] == 1 or bool(
            spec_module().split_applies(kernel, spec_sizes(view)))

    def _case(self, data_type: str, direction: str, channels_last: bool) -> str:
        """The spec's name of a tuned case: `FP16-F-NHWC`, `TF32-W-NCHW`, `FP32X3-B-NHWC`."""
        type_name = MATH_TYPE.get(self.math, data_type)
        return f"{type_name}-{direction}-{'NHWC' if channels_last else 'NCHW'}"

    def _tuned(self, kind: str, case: str, sizes: dict[str, int], kernel: str,
               data_type: str) -> dict[str, int] | None:
        """The spec's measured configuration for a case (the problem's own, else the case's
        usual winner) with SPLIT_K 1, if it is legal here; None where nothing was measured."""
        spec = spec_module()
        tuned = getattr(spec, "tuned_config", None)
        if tuned is None:
            return None
        try:
            config = tuned(kind, case, sizes, kernel)
        except (KeyError, ValueError, OSError):
            return None
        if not config:
            return None
        config = {**spec.default_config(kernel, data_type), **config, "SPLIT_K": 1}
        return config if spec.is_legal(config, data_type, kind, kernel) else None

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The configuration measured fastest for the problem's case on the target's kind
        (kernels/conv_triton_tuned_*.json): the layer's own, else the case's usual tile, split
        to fill the CUs in backward weights (`spec.split_for`) and in forward and backward data
        under half the CUs (small_batch timings: split 0.60-0.82x unsplit there); a forward on
        a small grid takes the small-grid rule's tile (solvers/triton_small_grid), another layer
        no one tuned its case's tile rule's where one covers it (solvers/triton_tile_rule)."""
        return _choices(self, problem, target, self._kind(target))[0]

    def usual_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """The case's usual tile (split where its tiles leave the GPU idle), whose objects
        every package ships, where it differs from `default_params`."""
        usual = _choices(self, problem, target, self._kind(target))[1]
        return [] if usual is None else [usual]

    def _choose(self, problem: ConvProblem, target: Target, kind: str | None
                ) -> tuple[Params, Params | None]:
        """(default_params, the usual tile where it differs) on a kind (`_choices` keeps it)."""
        view, _, kernel, cl = self._view(problem)
        if kind is None:
            return self._params(spec_module().default_config(kernel, problem.in_type)), None
        case = self._case(problem.in_type, view.direction, cl)
        sizes = spec_sizes(view)
        config = self._tuned(kind, case, sizes, kernel, problem.in_type)
        usual = self._tuned(kind, case, _NO_SIZES, kernel, problem.in_type)
        split = (self._split(kind, usual, sizes, kernel, problem.in_type, target.cu, case)
                 if splits_reduction(kernel) and usual is not None else None)
        if config is not None and split is not None and (
                spec_module().OUTPUT_OF[kernel] == "w" or (
                    split["SPLIT_K"] > 1 and (
                        _programs(kernel, sizes, config) < target.cu // 2 or (
                            self.math == "tf32x3" and not self._measured(kind, case, sizes))))):
            config = split
        # Batch 1: a narrow split tile; a small or few-channel layer no one tuned: its rule's.
        default = self._params(small_grid_config(problem, target, self.math) or tile_rule_config(
            problem, target, self.math) or config or spec_module().default_config(
            kernel, problem.in_type))
        shipped_config = split or usual
        shipped = self._params(shipped_config) if shipped_config is not None else None
        return default, (None if shipped == default else shipped)

    def _measured(self, kind: str, case: str, sizes: dict[str, int]) -> bool:
        """Whether the tuned table holds this very problem (not only the case's usual tile)."""
        return bool(spec_module().measured(kind, case, sizes))

    def defaults_rule(self, problem: ConvProblem, target: Target) -> bool:
        """Split defaults of backward data and weights (and of the three-product kernels) and
        the small-grid forward rank alone: the model ranked unsplit tiles 2-15x slower ahead
        (bench/kernels.py, H100). Other forwards go to the model: 8.0% regret geomean leaving
        one network out over the small-batch timings, 9.7% for split defaults (ranking_eval)."""
        kind = self._kind(target)
        if kind is not None and (small_grid_config(problem, target, self.math) is not None or
                                 tile_rule_config(problem, target, self.math) is not None):
            return True
        if kind is None or (self.direction == "F" and self.math != "tf32x3"):
            return False
        return _choices(self, problem, target, kind)[0][PARAM_NAMES.index("SPLIT_K")] > 1

    def _split(self, kind: str, usual: dict[str, int], sizes: dict[str, int], kernel: str,
               data_type: str, cus: int, case: str = "") -> dict[str, int] | None:
        """`usual` split to fill `cus` CUs, or the backward-weights rule's tile and split for
        `case` (`spec.wrw_split`); None where the split is not legal."""
        config = spec_module().wrw_split(kind, case, kernel, sizes, usual, cus)
        return config if spec_module().is_legal(config, data_type, kind, kernel) else None

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        """The FP32 partial sums of a SPLIT_K > 1 launch, else 0."""
        view, _, kernel, _ = self._view(problem)
        self._check_length(params)
        return int(spec_module().workspace_bytes(kernel, spec_sizes(view),
                                                 config_view(tuple(params))))

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """The configurations measured fastest on any layer of the problem's case on the
        target's kind (kernels/conv_triton_tuned_*.json): the problem's own layer first, as
        measured, then the others by how often they won. Backward weights, whose reduction is
        every pixel, take each tile with the split that fills the target's CUs for this
        problem (`spec.split_for`); the other directions unsplit."""
        kind = self._kind(target)
        spec = spec_module()
        table = spec.tuned_table(kind) if kind is not None else None
        if not table or kind is None:
            return []
        view, _, kernel, cl = self._view(problem)
        sizes = spec_sizes(view)
        by_shape = table["configs"].get(self._case(problem.in_type, view.direction, cl), {})
        split_w = splits_reduction(kernel) and spec.OUTPUT_OF.get(kernel) == "w"
        counts: dict[Params, int] = {}
        for config in by_shape.values():
            seed = {**config, "SPLIT_K": 1}
            if split_w:
                seed = self._split(kind, seed, sizes, kernel, problem.in_type, target.cu) or seed
            params = self._params(seed)
            counts[params] = counts.get(params, 0) + 1
        out = sorted(counts, key=lambda p: (-counts[p], p))
        own = by_shape.get(spec.shape_key(sizes))
        if own is not None and spec.is_legal(own, problem.in_type, kind, kernel) and (
                int(own.get("SPLIT_K", 1)) == 1 or spec.split_applies(kernel, sizes)):
            first = self._params(dict(own))
            out = [first] + [p for p in out if p != first]
        return out

    # ------------------------------------------------------------------ kernels
    def _job(self, kernel: str, data_type: str, config: dict[str, int], channels_last: bool,
             aligned: bool, target: Target) -> CompileJob:
        return conv_triton_job(self.kernel_file, self.math, kernel, data_type,
                           tuple(sorted(config.items())), channels_last, aligned, target)

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The (always shape-agnostic) job; with the align16 assumption where the problem
        meets it."""
        return self._problem_job(problem, params, aligned_object(problem), target)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        """The variant without alignment assumptions, for pointers that are not aligned."""
        return self._problem_job(problem, params, False, target)

    def _problem_job(self, problem: ConvProblem, params: Params, aligned: bool, target: Target
                     ) -> CompileJob:
        _, _, kernel, cl = self._view(problem)
        self._check_length(params)
        return conv_triton_job(self.kernel_file, self.math, kernel, problem.in_type,
                           job_items(tuple(params)), cl, aligned, target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """Every kernel's default and usual tiles per type and layout, aligned and not."""
        kind = self._kind(target)
        if kind is None or not spec_for(target.arch).matrix:
            return []
        spec = spec_module()
        kernels = [k for k, d in spec.KERNELS.items()
                   if d["direction"] == self.direction and d["args"] == "CONV_ARGS"]
        jobs: dict[CompileJob, None] = {}
        for data_type in _TYPES:
            if not self._type_applicable(data_type, target):
                continue
            for kernel in kernels:
                if data_type == "FP32" and packed_kernel(kernel):
                    continue  # 16-bit only (triton_common.packed_kernel)
                for cl in (False, True):
                    # The case's usual winner: what a problem without its own record runs
                    # (a packed kernel's alone: its default is its tile at fewer stages).
                    case = self._case(data_type, self.direction, cl)
                    usual = self._tuned(kind, case, _NO_SIZES, kernel, data_type)
                    configs = [] if usual and packed_kernel(kernel) else \
                        [spec.default_config(kernel, data_type)]
                    configs += [usual] if usual else []
                    if kernel == "conv2d_fwd":  # every tile and split of the small-grid rule
                        configs += small_grid_configs(kind, data_type, self.math, cl)
                    configs += tile_rule_configs(kind, data_type, self.math, cl, kernel)
                    if usual and splits_reduction(kernel):  # every split `_split` may choose
                        splits = [k for k in spec.TARGET_KINDS[kind]["SPLIT_K"]
                                  if k <= spec.MAX_SPLIT.get(kernel, 64)]
                        configs += [c for tile in spec.wrw_tiles(kind, case, kernel, usual)
                                    for c in ({**tile, "SPLIT_K": k} for k in splits)
                                    if spec.is_legal(c, data_type, kind, kernel)]
                    for config in configs:
                        for aligned in spec.align16_variants(kernel, cl, data_type):
                            jobs.setdefault(self._job(kernel, data_type, config, cl, aligned,
                                                      target))
        return list(jobs)

    def _type_applicable(self, data_type: str, target: Target) -> bool:
        if self.math == "tf32" and (data_type != "FP32" or not tf32_capable(target)):
            return False
        if self.math == "tf32x3" and (data_type != "FP32" or not tf32x3_capable(target)):
            return False
        # RDNA's wmma takes no FP32: no tensor-core gain over the portable kernels.
        return not (data_type == "FP32" and spec_for(target.arch).matrix == "wmma")

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """Grid and arguments; block and shared memory come from the object's metadata."""
        spec = spec_module()
        view, args, kernel, _ = self._view(problem)
        config = self._config(params)
        sizes = spec_sizes(view)
        grid = tuple(int(v) for v in spec.grid(kernel, sizes, config))
        tensors = {"x_ptr": view.in_tensor, "w_ptr": view.wei_tensor,
                   "y_ptr": view.out_tensor, "ws_ptr": "workspace"}
        kargs = []
        for name, kind in spec.arg_list(kernel):
            if kind.startswith("ptr"):
                kargs.append(kernel_arg(name, "ptr:" + tensors[name], None))
            elif kind == "i32":
                kargs.append(kernel_arg(name, "i32", args[name]))
        kargs += scratch_args()
        warps = config["num_warps"]
        return Launch(kernel, (grid[0], grid[1], grid[2]), (warps * 32, 1, 1), tuple(kargs),
                      workspace_bytes=int(spec.workspace_bytes(kernel, sizes, config)),
                      needs_meta=True)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target,
                   partials_channels_last: bool | None = None
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """With SPLIT_K > 1: the reduce kernel's job and launch, which sums the partials the
        main launch left in the workspace into the output, in the order a channels-last object
        (`partials_channels_last`; None: the problem's own object) or another one wrote them."""
        split = self._config(params)["SPLIT_K"]
        if split <= 1:
            return ()
        spec = spec_module()
        view, args, kernel, cl = self._view(problem)
        if not splits_reduction(kernel):
            raise ProblemError(f"{self.name}: kernel {kernel} has no SPLIT_K > 1 variant here")
        out_tensor = {"y": view.out_tensor, "x": view.in_tensor,
                      "w": view.wei_tensor}[spec.OUTPUT_OF[kernel]]
        return (reduce_step(problem.in_type, split, target, out_tensor,
                            spec.reduce_args(kernel, args, cl if partials_channels_last is None
                                             else partials_channels_last)),)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) without the argument list (the miss ranking asks per candidate)."""
        view, _, kernel, _ = self._view(problem)
        self._check_length(params)
        config = config_view(tuple(params))
        grid = spec_module().grid(kernel, spec_sizes(view), config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def ranking_geometry(self, problem: ConvProblem, params: Params) -> tuple[int, int, float]:
        """(blocks, threads per block, tile efficiency) in one go: `launch_geometry` and
        `efficiency` together, for the miss ranking's per-candidate features."""
        view, _, kernel, _ = self._view(problem)
        self._check_length(params)
        sizes = spec_sizes(view)
        config = config_view(tuple(params))
        return (_programs(kernel, sizes, config), config["num_warps"] * 32,
                float(spec_module().tile_efficiency(kernel, sizes, config)))

    def efficiency(self, view: ConvView, params: Params) -> float:
        """The fraction of launched tile work that is real (the miss ranking's feature)."""
        sizes, spec = spec_sizes(view), spec_module()
        self._check_length(params)
        return float(spec.tile_efficiency(spec.kernel_for(view.direction, sizes), sizes,
                                          config_view(tuple(params))))

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        # Tensor cores: nominally ~20x the portable kernels' MAC rate (IEEE FP32 4x, TF32x3 7x).
        speed = 4.0 if problem.in_type == "FP32" and self.math == "ieee" else \
            7.0 if self.math == "tf32x3" else 20.0
        return 5.0 + macs(problem) / (1e6 * speed)


TRITON_SOLVERS: list[Solver] = [ConvTritonImplicitGemm(d, m)
                                for m in ("ieee", "tf32", "tf32x3") for d in ("F", "B", "W")]
