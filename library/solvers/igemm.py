"""ConvImplicitGemm{Fwd,Bwd,Wrw}: tiled implicit GEMM with tunable tiles (kernels/conv_igemm.hip).

Parameters (PerfDb order): tile_m, tile_n, tile_k, micro_m, micro_n. A block computes a
tile_m x tile_n tile of the per-group GEMM with (tile_m/micro_m) x (tile_n/micro_n) threads,
stepping tile_k along the reduction through shared memory.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

from ..errors import ProblemError
from ..problem import ConvProblem
from ..target import Target
from ._conv import ConvKernelSolver, ConvView, ceil_div, conv_view, gemm_sizes
from .base import Params

__all__ = ["ConvImplicitGemm", "GemmTiles", "LARGE_TILE", "SMALL_TILE"]

LARGE_TILE: Params = (64, 64, 8, 4, 4)
SMALL_TILE: Params = (32, 32, 8, 2, 2)
_TILES = (16, 32, 64, 128)
_TILE_K = (4, 8, 16)
_MICRO = (1, 2, 4, 8)
_THREADS = (64, 128, 256)
_MAX_SHARED = 16384  # bytes of the two float tiles: leaves room for two blocks per CU on any GPU
_MAX_ACC = 32  # accumulators per thread (registers)


def _legal(p: Params) -> bool:
    tm, tn, tk, rm, rn = p
    if tm % rm or tn % rn:
        return False
    threads = (tm // rm) * (tn // rn)
    return (
        threads in _THREADS and rm * rn <= _MAX_ACC and 4 * tk * (tm + tn) <= _MAX_SHARED
    )


@lru_cache(maxsize=1)
def _all_params() -> tuple[Params, ...]:
    """Every legal tile set (made on first use: a first call never asks for the whole space)."""
    return tuple(p for p in product(_TILES, _TILES, _TILE_K, _MICRO, _MICRO) if _legal(p))


class GemmTiles(ConvKernelSolver):
    """Shared behaviour of the GEMM-tile solvers (implicit GEMM and 1x1)."""

    tunable = True

    def param_space(self, problem: ConvProblem, target: Target) -> list[Params]:
        # Tiles far larger than the GEMM only burn idle threads: keep those no larger than the
        # next power of two of each side (but always the shipped ones).
        m, n, _ = gemm_sizes(conv_view(problem))
        keep = [
            p for p in _all_params()
            if (p[0] <= max(16, _pow2(m)) and p[1] <= max(16, _pow2(n)))
            or p in (LARGE_TILE, SMALL_TILE)
        ]
        return keep

    def params_valid(self, problem: ConvProblem, target: Target, params: Params) -> bool:
        return len(params) == 5 and _legal(params)

    def default_params(self, problem: ConvProblem, target: Target) -> Params:
        m, n, _ = gemm_sizes(conv_view(problem))
        return LARGE_TILE if m >= 64 and n >= 64 else SMALL_TILE

    def shipped_params(self) -> list[Params]:
        return [LARGE_TILE, SMALL_TILE]

    def param_options(self, params: Params) -> tuple[str, ...]:
        if len(params) != 5 or not _legal(params):
            raise ProblemError(f"{self.name}: illegal tile parameters {params}")
        names = ("MK_TM", "MK_TN", "MK_TK", "MK_RM", "MK_RN")
        return tuple(f"-D{k}={v}" for k, v in zip(names, params, strict=True))

    def grid_block(
        self, view: ConvView, params: Params
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        tm, tn, _, rm, rn = params
        m, n, _ = gemm_sizes(view)
        grid = (ceil_div(n, tn), ceil_div(m, tm), view.field("g"))
        return grid, ((tm // rm) * (tn // rn), 1, 1), 0

    def efficiency(self, view: ConvView, params: Params) -> float:
        tm, tn = params[0], params[1]
        m, n, _ = gemm_sizes(view)
        # The fraction of each tile that is real work.
        return (m / (ceil_div(m, tm) * tm)) * (n / (ceil_div(n, tn) * tn))


class ConvImplicitGemm(GemmTiles):
    """Implicit GEMM for every problem (any filter, stride, dilation, padding, groups, 2D/3D)."""

    family = "ConvImplicitGemm"
    algo_kind = "ImplicitGEMM"
    kernel_file = "conv_igemm.hip"
    symbol = "mk_conv_igemm"
    speed = 1.0


def _pow2(v: int) -> int:
    out = 1
    while out < v:
        out *= 2
    return out
