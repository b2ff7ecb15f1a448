"""ConvTritonWinograd{Tf32,Tf32x3}Wrw: backward weights of 3x3 stride-1 filters by Winograd
F(3x3, 2x2) on tensor cores (kernels/conv_triton_winograd.py).

The implicit GEMM's backward weights gathers a shifted copy of x for each of the nine taps;
here each 2x2 tile of dy and the 4x4 patch of x under it are transformed once (two lead-in
launches into the workspace), the 16 positions of the transform domain are 16 dense GEMMs over
the tiles (the main launch, its reduction split in SPLIT_K parts), and an output transform
sums the parts into dw in the caller's layout (a follow-up). The multiplications fall 2.25x
and the GEMMs read their operands contiguously. MIOpen's ConvWinograd3x3MultipassWrW<3-2>
computes the same transform with its own kernels.

FP32 problems only: `Tf32x3` (three TF32 products per product, FP32 accuracy) in either math
mode, `Tf32` under the TF32 math mode, on the kinds of the spec's KINDS (measured on the H100
alone). Parameters are the implicit GEMM's seven (PerfDb order BLOCK_M, BLOCK_N, BLOCK_K,
GROUP_M, SPLIT_K, num_warps, num_stages), for the GEMM. Every object is shape-agnostic; a
package ships the transforms, the output kernel at every split it may run, and the GEMM's two
usual tiles at those splits (`dynamic_jobs`).

In the miss ranking these solvers go first where the spec's `ranks_first` says (from its
measurements), ahead of the implicit GEMM of the same math and of its Via solvers, which then
no longer rank first (the registry's YIELDS_TO).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target
from ._conv import ConvView, conv_view, macs
from .base import CompileJob, Launch, Params, Solver
from .triton_common import (
    PARAM_NAMES,
    config_of,
    kernel_arg,
    kernels_spec,
    params_of,
    scratch_args,
    spec_kind,
    spec_module,
    spec_sizes,
    spec_strides,
    target_kind,
    tf32_capable,
    tf32x3_capable,
    triton_compile_job,
)

__all__ = ["ConvTritonWinogradWrw", "WINOGRAD_SOLVERS", "winograd_first", "winograd_spec"]

KERNEL_FILE = "conv_triton_winograd.py"
_MATHS = ("tf32", "tf32x3")

def winograd_spec() -> Any:
    """`kernels/conv_triton_winograd_spec.py`: stdlib-only launch data of the kernels."""
    return kernels_spec("conv_triton_winograd_spec")


@lru_cache(maxsize=4096)
def _problem_sizes(problem: ConvProblem) -> tuple[ConvView, dict[str, int]]:
    view = conv_view(problem)
    return view, spec_sizes(view)


@lru_cache(maxsize=1024)
def _job(kernel: str, data_type: str, config: tuple[tuple[str, int], ...], precision: str,
         aligned: bool, target: Target) -> CompileJob:
    """The compile job of one of the four kernels (`config`: the GEMM's tunables, or SPLIT_K
    alone for the output kernel)."""
    spec = winograd_spec()
    values = dict(config)
    sig, constexprs = spec.signature(kernel, data_type, values, precision)
    return triton_compile_job(KERNEL_FILE, kernel, sig, constexprs, spec.warps(kernel, values),
                              values.get("num_stages", 1) if kernel == spec.MAIN else 1,
                              target, spec.GEMM_ALIGN16 if aligned else ())


def _config(params: Params) -> dict[str, int]:
    return config_of(params, "Winograd backward weights")


_params = params_of


class ConvTritonWinogradWrw(Solver):
    """Winograd F(3x3, 2x2) backward weights in one math mode ('tf32' or 'tf32x3')."""

    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE

    def __init__(self, math: str) -> None:
        if math not in _MATHS:
            raise ValueError(f"Winograd backward weights run in {_MATHS}, not {math!r}")
        self.math = math
        self.rank_first = True
        self.name = f"ConvTritonWinograd{'Tf32' if math == 'tf32' else 'Tf32x3'}Wrw"
        self.direction = "W"
        self.directions = frozenset({"W"})
        self.algorithm_names = {"W": "miopenConvolutionBwdWeightsAlgoWinograd"}

    # ------------------------------------------------------------------ applicability
    def _kind(self, target: Target) -> str | None:
        return spec_kind(target, "conv_triton_winograd_spec")

    def _capable(self, target: Target) -> bool:
        return tf32_capable(target) if self.math == "tf32" else tf32x3_capable(target)

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != "W" or p.mode != "conv" or len(p.in_spatial) != 2:
            return False
        if not p.in_type == p.wei_type == p.out_type == "FP32":
            return False
        if self._kind(target) is None or not self._capable(target):
            return False
        return bool(winograd_spec().applies(_problem_sizes(p)[1]))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """Ahead of the implicit GEMM where the spec's FIRST rule holds for the problem."""
        return bool(winograd_spec().ranks_first(self.math, _problem_sizes(problem)[1]))

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        space = spec_module().legal_space(kind, "FP32", "conv2d_bwd_weight")
        return [_params(c) for c in space if winograd_spec().legal(c, kind)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        kind = target_kind(target.arch)
        if kind not in winograd_spec().KINDS or len(params) != len(PARAM_NAMES):
            return False
        try:
            return bool(winograd_spec().legal(_config(tuple(int(v) for v in params)), kind))
        except (TypeError, ValueError, ProblemError):
            return False

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The spec's usual tile for the problem's size, split to fill the target's CUs."""
        spec = winograd_spec()
        sizes = _problem_sizes(problem)[1]
        tile = spec.usual_tile(sizes)
        return _params({**tile, "SPLIT_K": spec.split_for(sizes, tile, target.cu)})

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """Both usual tiles at the split that fills the CUs, half and twice that."""
        spec = winograd_spec()
        sizes = _problem_sizes(problem)[1]
        kind = self._kind(target)
        out: list[Params] = []
        for tile in spec.TILES:
            split = spec.split_for(sizes, tile, target.cu)
            for s in (split, split // 2, split * 2):
                config = {**tile, "SPLIT_K": s}
                params = _params(config)
                if s >= 1 and kind is not None and spec.legal(config, kind) and \
                        params not in out:
                    out.append(params)
        return out

    # ------------------------------------------------------------------ kernels
    def _gemm_job(self, params: Params, aligned: bool, target: Target) -> CompileJob:
        config = _config(tuple(params))
        return _job(winograd_spec().MAIN, "FP32", tuple(sorted(config.items())), self.math,
                    aligned, target)

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The GEMM's job (shape-agnostic), assuming aligned workspace parts."""
        return self._gemm_job(params, True, target)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        """The GEMM without alignment assumptions, for a workspace that is not aligned."""
        return self._gemm_job(params, False, target)

    def _transform_job(self, kernel: str, target: Target) -> CompileJob:
        return _job(kernel, "FP32", (), "ieee", False, target)

    def _out_job(self, split: int, target: Target) -> CompileJob:
        return _job(winograd_spec().FOLLOW_UP, "FP32", (("SPLIT_K", int(split)),), "ieee",
                    False, target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The transforms, the output kernel at every split up to MAX_SPLIT, and the GEMM's
        usual tiles at those splits, with and without alignment: any problem the solver
        takes runs without a compile."""
        kind = self._kind(target)
        if kind is None or not self._capable(target):
            return []
        spec = winograd_spec()
        splits = [s for s in (1, 2, 4, 8, 16, 32, 64) if s <= spec.MAX_SPLIT]
        jobs = [self._transform_job(k, target) for k in spec.LEAD_INS]
        jobs += [self._out_job(s, target) for s in splits]
        for tile in spec.TILES:
            for s in splits:
                params = _params({**tile, "SPLIT_K": s})
                jobs += [self._gemm_job(params, True, target),
                         self._gemm_job(params, False, target)]
        return jobs

    # ------------------------------------------------------------------ workspace
    def workspace_slots(self, problem: ConvProblem, params: Params) -> dict[str, int]:
        return dict(self._workspace(problem, params)[0])

    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return self._workspace(problem, params)[1]

    def _workspace(self, problem: ConvProblem, params: Params) -> tuple[dict[str, int], int]:
        split = _config(tuple(params))["SPLIT_K"]
        slots, total = winograd_spec().workspace(_problem_sizes(problem)[1], split)
        return dict(slots), int(total)

    # ------------------------------------------------------------------ launches
    def _launch(self, problem: ConvProblem, kernel: str, config: dict[str, int],
                workspace: int = 0) -> Launch:
        spec = winograd_spec()
        view, sizes = _problem_sizes(problem)
        names = {"x": view.in_tensor, "w": view.wei_tensor, "y": view.out_tensor}
        values = spec.arg_values(kernel, sizes, spec_strides(view))
        args = []
        for name, kind in spec.ARGS[kernel]:
            if name in spec.SLOTS:
                args.append(kernel_arg(name, "ptr:" + spec.SLOTS[name], None))
            elif kind.startswith("ptr"):
                args.append(kernel_arg(name, "ptr:" + names[spec.TENSORS[name]], None))
            elif kind == "i32":
                args.append(kernel_arg(name, "i32", values[name]))
        args += scratch_args()
        grid = tuple(int(v) for v in spec.grid(kernel, sizes, config))
        return Launch(kernel, (grid[0], grid[1], grid[2]), (spec.warps(kernel, config) * 32, 1, 1),
                      tuple(args), workspace_bytes=workspace, needs_meta=True)

    def lead_ins(self, problem: ConvProblem, params: Params, target: Target
                 ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The data and gradient transforms into the workspace."""
        config = _config(tuple(params))
        return tuple((self._transform_job(k, target), self._launch(problem, k, config))
                     for k in winograd_spec().LEAD_INS)

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        """The GEMM over the transformed operands."""
        config = _config(tuple(params))
        return self._launch(problem, winograd_spec().MAIN, config,
                            self.workspace_for(problem, params))

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """The output transform: the GEMM's parts summed, into dw."""
        config = _config(tuple(params))
        kernel = winograd_spec().FOLLOW_UP
        return ((self._out_job(config["SPLIT_K"], target),
                 self._launch(problem, kernel, config)),)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        config = _config(tuple(params))
        spec = winograd_spec()
        grid = spec.grid(spec.MAIN, _problem_sizes(problem)[1], config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def efficiency(self, view: ConvView, params: Params) -> float:
        """The share of the GEMM's tiles and steps that is real work."""
        config = _config(tuple(params))
        sizes = spec_sizes(view)
        out = 1.0
        for dim, block in ((sizes["K"], config["BLOCK_M"]), (sizes["C"], config["BLOCK_N"])):
            out *= dim / (-(-dim // block) * block)
        return out

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        # The implicit GEMM's estimate of the same math with 2.25x fewer products.
        speed = (20.0 if self.math == "tf32" else 7.0) * 2.25
        return 5.0 + macs(problem) / (1e6 * speed)


def winograd_first(problem: ConvProblem, target: Target, math: str) -> bool:
    """Whether the Winograd solver of the precision an implicit-GEMM solver of `math` stands
    for (TF32 for 'tf32', three products for 'ieee' and 'tf32x3') applies to `problem` and
    ranks first there: that solver then does not."""
    solver = _BY_MATH.get("tf32" if math == "tf32" else "tf32x3")
    return solver is not None and solver.is_applicable(problem, target) and \
        solver.claims_first(problem, target)


WINOGRAD_SOLVERS: list[Solver] = [ConvTritonWinogradWrw(m) for m in _MATHS]
_BY_MATH = {s.math: s for s in WINOGRAD_SOLVERS}
