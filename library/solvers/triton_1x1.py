"""ConvTritonGemm1x1{Fwd,Bwd,Wrw}: 1x1 stride-1 NCHW convolutions as plain GEMMs on tensor
cores (kernels/conv_triton_1x1.py).

The implicit GEMM serves these problems through its pixel gather; here each image's channel
planes are a matrix with contiguous rows, so the loads are vectors and the GEMM runs at the
tensor cores' pace (MIOpen's GemmFwd1x1_0_1 and GemmBwd1x1_stride1 take the same view, through
rocBLAS). 16-bit types, one group, packed channel planes and KCRS weights, on the kinds of the
spec's KINDS (measured on the H100 alone). Parameters are the implicit GEMM's seven; SPLIT_K
cuts backward weights' (image, pixel block) steps in parts whose FP32 partials the implicit
GEMM's reduce kernel sums into dw (a follow-up). Every object is shape-agnostic, and one serves
every split; a package ships the usual tiles (backward weights unsplit and split) with and
without the alignment assumption (`dynamic_jobs`). The miss ranking puts these solvers first
from the spec's FIRST_PIXELS, ahead of the Via solvers too.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target
from ._conv import ALGO_PREFIX, DIRECTION_SUFFIX, ConvView, macs
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
    spec_module,
    spec_sizes,
    spec_view,
    target_kind,
)
from .triton_small_grid import small_grid_config

__all__ = ["ConvTritonGemm1x1", "GEMM1X1_SOLVERS", "gemm1x1_first", "gemm1x1_spec"]

KERNEL_FILE = "conv_triton_1x1.py"
def gemm1x1_spec() -> Any:
    """`kernels/conv_triton_1x1_spec.py`: stdlib-only launch data of the kernels."""
    return kernels_spec("conv_triton_1x1_spec")


_view = spec_view


@lru_cache(maxsize=1024)
def _job(direction: str, data_type: str, config: tuple[tuple[str, int], ...], aligned: bool,
         target: Target) -> CompileJob:
    spec = gemm1x1_spec()
    values = dict(config)
    kernel = spec.KERNEL[direction]
    sig, constexprs = spec.signature(direction, data_type, values)
    return spec_compile_job(KERNEL_FILE, spec, kernel, sig, constexprs, values, target, aligned)


def _config(params: Params) -> dict[str, int]:
    return config_of(params, "1x1 GEMM")


_params = params_of


class ConvTritonGemm1x1(Solver):
    """One direction of the 1x1 NCHW GEMM."""

    tunable = True
    language = "triton"
    kernel_file = KERNEL_FILE

    def __init__(self, direction: str) -> None:
        self.direction = direction
        self.directions = frozenset({direction})
        self.name = f"ConvTritonGemm1x1{DIRECTION_SUFFIX[direction]}"
        self.algorithm_names = {direction: f"miopenConvolution{ALGO_PREFIX[direction]}AlgoGEMM"}
        self.rank_first = True

    # ------------------------------------------------------------------ applicability
    def _kind(self, target: Target) -> str | None:
        return spec_kind(target, "conv_triton_1x1_spec")

    def is_applicable(self, problem: ConvProblem, target: Target) -> bool:
        p = problem
        if p.key_direction != self.direction or p.mode != "conv" or len(p.in_spatial) != 2:
            return False
        if not p.in_type == p.wei_type == p.out_type or p.in_type not in gemm1x1_spec().TYPES:
            return False
        if self._kind(target) is None:
            return False
        _, sizes, strides = _view(p)
        return bool(gemm1x1_spec().applies(sizes, strides))

    def claims_first(self, problem: ConvProblem, target: Target) -> bool:
        """From the spec's FIRST_PIXELS (measured on the H100; backward weights at any size),
        except on a small grid, where the implicit GEMM's narrow split tile goes first
        (solvers/triton_small_grid.py), and in backward weights where the aligned object does
        not apply (the spec's comment)."""
        if not gemm1x1_spec().ranks_first(self.direction, _view(problem)[1]) or \
                small_grid_config(problem, target, "ieee") is not None:
            return False
        return self.direction != "W" or self._aligned(problem)

    # ------------------------------------------------------------------ parameters
    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        kind = self._kind(target)
        if kind is None:
            return []
        spec = gemm1x1_spec()
        kernel = "conv2d_bwd_weight" if self.direction == "W" else spec.KERNEL[self.direction]
        space = spec_module().legal_space(kind, problem.in_type, kernel)
        return [_params(c) for c in space
                if spec.legal(self.direction, c, problem.in_type, kind)]

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        kind = target_kind(target.arch)
        if kind not in gemm1x1_spec().KINDS or len(params) != len(PARAM_NAMES):
            return False
        try:
            config = _config(tuple(int(v) for v in params))
        except (TypeError, ValueError, ProblemError):
            return False
        spec = gemm1x1_spec()
        if self.direction == "W" and not spec.partials_fit(_view(problem)[1], config["SPLIT_K"]):
            return False  # a split whose partials' offsets would pass 32 bits
        return bool(spec.legal(self.direction, config, problem.in_type, kind))

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        """The spec's usual tile for the problem; backward weights split to fill the CUs."""
        spec = gemm1x1_spec()
        sizes = _view(problem)[1]
        tile = spec.usual_tile(self.direction, sizes)
        split = spec.split_for(sizes, tile, target.cu) if self.direction == "W" else 1
        return _params({**tile, "SPLIT_K": split})

    def seed_params(self, problem: ConvProblem, target: Target) -> list[Params]:
        """Both usual tiles (backward weights at the split that fills the CUs and half, twice
        that)."""
        spec = gemm1x1_spec()
        sizes = _view(problem)[1]
        out: list[Params] = []
        for tile in spec.TILES[self.direction]:
            splits = [1]
            if self.direction == "W":
                split = spec.split_for(sizes, tile, target.cu)
                splits = [split, max(1, split // 2), min(spec.MAX_SPLIT, split * 2)]
            for s in splits:
                params = _params({**tile, "SPLIT_K": s})
                if params not in out:
                    out.append(params)
        return out

    # ------------------------------------------------------------------ kernels
    def _aligned(self, problem: ConvProblem) -> bool:
        _, sizes, strides = _view(problem)
        spec = gemm1x1_spec()
        return bool(spec.meets_align16(self.direction,
                                       spec.arg_values(self.direction, sizes, strides)))

    def compile_job(self, problem: ConvProblem, params: Params, target: Target,
                    specialised: bool = False) -> CompileJob:
        """The (shape-agnostic) job, with the alignment assumption where the problem meets
        it."""
        return self._job(problem, params, self._aligned(problem), target)

    def unaligned_job(self, problem: ConvProblem, params: Params, target: Target
                      ) -> CompileJob:
        return self._job(problem, params, False, target)

    def _job(self, problem: ConvProblem, params: Params, aligned: bool, target: Target
             ) -> CompileJob:
        config = _config(tuple(params))
        return _job(self.direction, problem.in_type, tuple(sorted(config.items())), aligned,
                    target)

    def dynamic_jobs(self, target: Target) -> list[CompileJob]:
        """The usual tiles of each type (backward weights unsplit and the object that serves
        every split, with the reduce kernels), with and without alignment."""
        if self._kind(target) is None:
            return []
        spec = gemm1x1_spec()
        splits = [1, spec_module().SPLIT_OBJECT] if self.direction == "W" else [1]
        jobs: list[CompileJob] = []
        for data_type in spec.TYPES:
            for tile in spec.TILES[self.direction]:
                for s in splits:
                    config = tuple(sorted({**tile, "SPLIT_K": s}.items()))
                    jobs += [_job(self.direction, data_type, config, a, target)
                             for a in (True, False)]
            jobs += reduce_jobs(data_type, target) if any(s > 1 for s in splits) else []
        return jobs

    # ------------------------------------------------------------------ launches
    def workspace_for(self, problem: ConvProblem, params: Params) -> int:
        return int(gemm1x1_spec().workspace_bytes(self.direction, _view(problem)[1],
                                                  _config(tuple(params))))

    def launch(self, problem: ConvProblem, params: Params, specialised: bool = False
               ) -> Launch:
        spec = gemm1x1_spec()
        view, sizes, strides = _view(problem)
        config = _config(tuple(params))
        args = spec_kernel_args(spec, self.direction, view, sizes, strides)
        grid = spec.grid(self.direction, sizes, config)
        return Launch(spec.KERNEL[self.direction], (int(grid[0]), int(grid[1]), int(grid[2])),
                      (config["num_warps"] * 32, 1, 1), args,
                      workspace_bytes=self.workspace_for(problem, params), needs_meta=True)

    def follow_ups(self, problem: ConvProblem, params: Params, target: Target
                   ) -> tuple[tuple[CompileJob, Launch], ...]:
        """Backward weights split over images: the reduce kernel sums the partials into dw."""
        split = _config(tuple(params))["SPLIT_K"]
        if self.direction != "W" or split <= 1:
            return ()
        view, sizes, strides = _view(problem)
        w = strides["w"]
        values = {"TOTAL": sizes["K"] * sizes["C"], "C": sizes["C"], "R": 1, "S": 1,
                  "swk": w[0], "swc": w[1], "swr": w[2], "sws": w[3]}
        return (reduce_step(problem.in_type, split, target, view.wei_tensor, values),)

    def launch_geometry(self, problem: ConvProblem, params: Params
                        ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        config = _config(tuple(params))
        grid = gemm1x1_spec().grid(self.direction, _view(problem)[1], config)
        return (int(grid[0]), int(grid[1]), int(grid[2])), (config["num_warps"] * 32, 1, 1)

    def efficiency(self, view: ConvView, params: Params) -> float:
        config = _config(tuple(params))
        dims = gemm1x1_spec().gemm_dims(self.direction, spec_sizes(view))
        out = 1.0
        for dim, block in zip(dims, (config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]),
                              strict=True):
            dim = max(int(dim), 1)
            out *= dim / (-(-dim // int(block)) * int(block))
        return out

    def heuristic_rank(self, problem: ConvProblem, target: Target) -> float:
        return 5.0 + macs(problem) / (1e6 * 25.0)


def gemm1x1_first(problem: ConvProblem, target: Target) -> bool:
    """Whether the 1x1 GEMM solver of the problem's direction applies and ranks first (the Via
    solvers then do not)."""
    solver = _BY_DIRECTION.get(problem.key_direction)
    return solver is not None and solver.is_applicable(problem, target) and \
        solver.claims_first(problem, target)


_ALL = [ConvTritonGemm1x1(d) for d in ("F", "B", "W")]
GEMM1X1_SOLVERS: list[Solver] = list(_ALL)
_BY_DIRECTION = {s.direction: s for s in _ALL}
