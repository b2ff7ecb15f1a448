"""What a launch of the few-channel backward weights kernel (`conv2d_wrw_fma_fewc` in
kernels/conv_triton_fewk_wrw.py) needs, as plain data.

Standard library only (and the other specs), so the runtime reads it without Triton. Sizes
are those of `conv_triton_spec`; strides in elements in (n, c, h, w) / (k, c, r, s) /
(n, k, h, w) order. The kernel takes 2-D backward weights problems of one group and at most
MAX_CHANNELS input channels, any filters, any strides (CHANNELS_LAST 1 objects: channel
strides 1).

Tunables are the implicit GEMM's seven: BLOCK_M the output positions a step, BLOCK_N the
filters a program, BLOCK_K the C*R*S columns a program, num_warps, num_stages; GROUP_M 1;
SPLIT_K the parts of the N*P*Q positions (the grid's second axis, a run-time value: one
object serves every split). No object assumes alignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The few-filter backward weights' argument list, per-lane bounds and partials: the same.
from .conv_triton_fewk_wrw_spec import (
    AMD_KINDS,
    AMD_SUMS_PER_LANE,
    KINDS,
    STAGES,
    SUMS_PER_LANE,
    WARPS,
    partials_fit,
    sums_per_lane,
    workspace_bytes,
)
from .conv_triton_fewk_wrw_spec import ARGS as _FEWK_ARGS
from .conv_triton_fewk_wrw_spec import KERNEL as _FEWK_KERNEL
from .conv_triton_fma_spec import arg_values as arg_values
from .conv_triton_fma_spec import channels_last as channels_last
from .conv_triton_fma_spec import offsets_fit
from .conv_triton_grid_spec import filling_split
from .conv_triton_spec import cdiv, typed_signature

__all__ = ["AMD_KINDS", "AMD_SUMS_PER_LANE", "KINDS", "STAGES", "SUMS_PER_LANE", "WARPS",
           "arg_values", "channels_last", "partials_fit", "sums_per_lane", "workspace_bytes"]

#: Where the miss ranking puts it first (`claims`); it applies on the same KINDS.
FIRST_KINDS = ("sm90",)
TYPES = ("FP32",)
#: The most input channels a problem may have: image stems (3), RGBA and latents (4).
MAX_CHANNELS = 4

KERNEL = {"W": "conv2d_wrw_fma_fewc"}
#: The few-filter backward weights kernel's argument list (the same file, the same arguments).
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "conv2d_wrw_fma_fewc": _FEWK_ARGS[_FEWK_KERNEL["W"]]}
NO_MATRIX_KERNELS = frozenset(KERNEL.values())
TENSORS: dict[str, dict[str, str]] = {
    "W": {"x_ptr": "x", "w_ptr": "w", "y_ptr": "y", "ws_ptr": "ws"}}
ALIGN16: dict[str, tuple[str, ...]] = {"conv2d_wrw_fma_fewc": ()}

#: Filter blocks: a problem takes the narrowest that holds its filters, past 64 several
#: blocks of 64.
FILTER_BLOCKS = (16, 32, 64)
#: The legal space: a tile's FP32 sums, BLOCK_M * BLOCK_N * BLOCK_K, at most SUMS_PER_LANE a
#: lane of its warps (AMD kinds: AMD_SUMS_PER_LANE), as the few-filter kernels'.
BLOCK_M = (4, 8, 16, 32, 64)
BLOCK_K = (8, 16, 32, 64)
#: The usual tile of each filter block: 32 columns (a 3x3 filter's 27 of 3 channels, one
#: block; a 4x4's 48 or a 7x7's 147 in two or five) and the positions the 64 sums a lane on
#: four warps leave; 64 filters over 16 columns at 8 positions (at 4 positions a step,
#: gfx1100's channel-planar object moved 198 SGPRs to VGPR lanes; AMD kinds, on eight warps,
#: take 8 columns at 16 positions: at 16 columns gfx942's moved 91, gfx1100's 24, at 8 none).
#: Planar layers on the NVIDIA kinds take 16 columns at twice the positions for 16 and 32
#: filters: of the tiles bench/gpu_fewk.sh's `stems_wrw` step times, the block's of least GPU
#: time in all over the zoo's stems of 1-4 channels in the block and form (H200, FP32, batch
#: 32: bench/results/fewk_h200-035369f/stems_wrw.json; tests/unit/test_bench_fewk_h200.py
#: recomputes the choice); channels-last, the tiles below.
_TILE = {"GROUP_M": 1, "SPLIT_K": 1, "num_warps": 4, "num_stages": 1}
TILES: tuple[dict[str, int], ...] = (
    {**_TILE, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32},
    {**_TILE, "BLOCK_M": 8, "BLOCK_N": 32, "BLOCK_K": 32},
    {**_TILE, "BLOCK_M": 8, "BLOCK_N": 64, "BLOCK_K": 16},
)
PLANAR_TILES: tuple[dict[str, int], ...] = (
    {**_TILE, "BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16},
    {**_TILE, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16},
    TILES[2],
)
#: The split of the positions (`split_for`): doubled from 1 while the launch stays within
#: WAVES programs an SM and each part keeps at least LEAST steps, at most MOST parts, and
#: while the partials stay within WORKSPACE_MOST bytes (a stem's dw is a program or a few:
#: the parts are what fills the GPU).
SPLIT_RULE = {"waves": 4, "least": 8, "most": 512}
WORKSPACE_MOST = 32 << 20


AMD_TILES: tuple[dict[str, int], ...] = (
    *({**t, "num_warps": 8} for t in TILES[:2]),
    {**_TILE, "BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 8, "num_warps": 8},
)


def tiles(kind: str, cl: bool) -> tuple[dict[str, int], ...]:
    """The kind's usual tiles of one form (`cl`: channels-last), one a filter block (AMD
    kinds on eight warps, both forms)."""
    if kind in AMD_KINDS:
        return AMD_TILES
    return TILES if cl else PLANAR_TILES


def filter_block(k: int) -> int:
    """The narrowest filter block that holds k filters (the widest past it)."""
    return next((b for b in FILTER_BLOCKS if b >= k), FILTER_BLOCKS[-1])


def holds(sizes: Mapping[str, int], config: Mapping[str, int]) -> bool:
    """Any filter block serves (several programs cover the filters)."""
    return True


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
            ) -> bool:
    """One group, 1..MAX_CHANNELS input channels, every offset within 32 bits."""
    z = sizes
    return z["G"] == 1 and 1 <= z["C"] <= MAX_CHANNELS and offsets_fit(z, strides) and \
        partials_fit(z, 1)


#: Where the kernel claims first (`claims`): stems of at most CLAIM_FILTERS filters of
#: 2..CLAIM_TAPS taps, both forms. Over the zoo's stems of 1-4 channels (H200, FP32, batch
#: 32: bench/results/fewk_h200-035369f/stems_wrw.json) the 3x3 stems of 16-32 filters took
#: 1.12-1.87 of IEEE cuDNN's GPU time channels-last and 0.98-1.87 planar (its planar tiles)
#: where the three-product implicit GEMM took 2.62-3.01 and 2.17-2.45; at 64 filters and
#: more it took 1.46-5.47 where that GEMM took 0.80-2.57. Not the 6x6 and 7x7 stems (a
#: program's columns span five blocks), not 1x1 layers (squeeze-and-excitation ones of one
#: pixel: GEMMs, the library's). tests/unit/test_bench_fewk_h200.py recomputes the figures.
CLAIM_TAPS = 16
CLAIM_FILTERS = 32


def claims(kind: str, sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
           ) -> bool:
    """Whether the kernel ranks first on a problem it applies to (above)."""
    return kind in FIRST_KINDS and sizes["K"] <= CLAIM_FILTERS and \
        1 < sizes["R"] * sizes["S"] <= CLAIM_TAPS


def tile_for(kind: str, sizes: Mapping[str, int], cl: bool) -> dict[str, int]:
    """The kind's usual tile of the problem's filter block in its form (`cl`)."""
    block = filter_block(int(sizes["K"]))
    return dict(next(t for t in tiles(kind, cl) if t["BLOCK_N"] == block))


def legal(kind: str, config: Mapping[str, int]) -> bool:
    """A configuration of the legal space (the tables above), GROUP_M 1, a split of
    1..MOST parts, at most the kind's sums a lane."""
    try:
        ok = (int(config["BLOCK_N"]) in FILTER_BLOCKS and int(config["BLOCK_M"]) in BLOCK_M
              and int(config["BLOCK_K"]) in BLOCK_K and int(config["num_warps"]) in WARPS
              and int(config["num_stages"]) in STAGES and int(config["GROUP_M"]) == 1
              and 1 <= int(config.get("SPLIT_K", 1)) <= SPLIT_RULE["most"])
    except (KeyError, TypeError, ValueError):
        return False
    limit = AMD_SUMS_PER_LANE if kind in AMD_KINDS else SUMS_PER_LANE
    return ok and kind in KINDS and sums_per_lane(config, kind) <= limit


def legal_space(kind: str, block: int) -> list[dict[str, int]]:
    """Every legal tile of a filter block (the tuning search space; SPLIT_K 1)."""
    out = []
    for bm in BLOCK_M:
        for bk in BLOCK_K:
            for nw in WARPS:
                for ns in STAGES:
                    c = {"BLOCK_M": bm, "BLOCK_N": block, "BLOCK_K": bk, "GROUP_M": 1,
                         "SPLIT_K": 1, "num_warps": nw, "num_stages": ns}
                    if legal(kind, c):
                        out.append(c)
    return out


def grid(sizes: Mapping[str, int], config: Mapping[str, int]) -> tuple[int, int, int]:
    """(filter blocks * column blocks, parts, 1)."""
    z = sizes
    return (cdiv(z["K"], int(config["BLOCK_N"])) *
            cdiv(z["C"] * z["R"] * z["S"], int(config["BLOCK_K"])),
            max(1, int(config.get("SPLIT_K", 1))), 1)


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int) -> int:
    """The parts of the positions that fill a GPU of `sms` SMs (SPLIT_RULE), within
    WORKSPACE_MOST bytes of partials."""
    z = sizes
    programs = grid(z, {**config, "SPLIT_K": 1})[0]
    steps = cdiv(z["N"] * z["P"] * z["Q"], int(config["BLOCK_M"]))
    rule = SPLIT_RULE
    split = filling_split(programs, steps, sms, rule["least"], rule["most"], rule["waves"])
    while split > 1 and workspace_bytes(z, {"SPLIT_K": split}) > WORKSPACE_MOST:
        split //= 2
    return split


def efficiency(sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The fraction of the launched tile work that is real."""
    m, n, c = sizes["N"] * sizes["P"] * sizes["Q"], sizes["K"], \
        sizes["C"] * sizes["R"] * sizes["S"]
    bm, bn, bk = int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config["BLOCK_K"])
    return (m / (cdiv(m, bm) * bm)) * (n / (cdiv(n, bn) * bn)) * (c / (cdiv(c, bk) * bk))


def signature(dtype: str, config: Mapping[str, int], cl: bool
              ) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object for `triton.compiler.ASTSource`."""
    values = {"BLOCK_M": config["BLOCK_M"], "BLOCK_N": config["BLOCK_N"],
              "BLOCK_K": config["BLOCK_K"], "CHANNELS_LAST": int(cl)}
    return typed_signature(ARGS[KERNEL["W"]], dtype, values)
