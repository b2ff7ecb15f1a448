"""What a launch of the few-filter backward weights kernel (kernels/conv_triton_fewk_wrw.py)
needs, as plain data.

Standard library only (and the other specs), so the runtime reads it without Triton. Sizes
are those of `conv_triton_spec`; strides in elements in (n, c, h, w) / (k, c, r, s) /
(n, k, h, w) order. The kernel takes 2-D backward weights problems of one group and at most
MAX_FILTERS filters, any channels, any strides (CHANNELS_LAST 1 objects: channel strides 1).

Tunables are the implicit GEMM's seven: BLOCK_M the output positions a step, BLOCK_N the
filter block (every filter: at least K), BLOCK_K the channels a program, num_warps,
num_stages; GROUP_M 1; SPLIT_K the parts of the N*P*Q positions (the grid's second axis, a
run-time value: one object serves every split). No object assumes alignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The forward's filter blocks and limits, and its legal space's per-lane bounds: the same.
from .conv_triton_fewk_spec import (
    AMD_KINDS,
    AMD_SUMS_PER_LANE,
    FILTER_BLOCKS,
    KINDS,
    MAX_FILTERS,
    STAGES,
    SUMS_PER_LANE,
    WARPS,
    filter_block,
    sums_per_lane,
)
from .conv_triton_fma_spec import DIRECT_ARGS, offsets_fit
from .conv_triton_fma_spec import arg_values as arg_values
from .conv_triton_fma_spec import channels_last as channels_last
from .conv_triton_grid_spec import filling_split
from .conv_triton_spec import cdiv, typed_signature

__all__ = ["AMD_KINDS", "AMD_SUMS_PER_LANE", "FILTER_BLOCKS", "KINDS", "MAX_FILTERS", "STAGES",
           "SUMS_PER_LANE", "WARPS", "arg_values", "channels_last", "filter_block",
           "sums_per_lane"]

#: Where the miss ranking puts it first (FIRST_KINDS; `claims`); it applies on the forward's
#: KINDS (every kind the Triton families compile for).
FIRST_KINDS = ("sm90",)
#: FP32, as the few-filter forward (on 16-bit inputs the matrix cores' implicit GEMM pads the
#: filters at a third of the cost; the forward kernel in 16-bit was slower than it).
TYPES = ("FP32",)

KERNEL = {"W": "conv2d_wrw_fma_fewk"}
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "conv2d_wrw_fma_fewk": (*DIRECT_ARGS[:3], ("ws_ptr", "ptr_fp32"), *DIRECT_ARGS[3:],
                            ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"),
                            ("BLOCK_K", "constexpr"), ("CHANNELS_LAST", "constexpr")),
}
#: Kernels that run no matrix instruction by design (the code-object check asks none of them).
NO_MATRIX_KERNELS = frozenset(KERNEL.values())
#: The tensor each pointer is: x, dw (w), dy (y) and the partials' workspace.
TENSORS: dict[str, dict[str, str]] = {
    "W": {"x_ptr": "x", "w_ptr": "w", "y_ptr": "y", "ws_ptr": "ws"}}
#: i32 arguments an aligned object would assume multiples of 16: none (no aligned objects).
ALIGN16: dict[str, tuple[str, ...]] = {"conv2d_wrw_fma_fewk": ()}

#: The legal space (tuning and surveys): a tile's FP32 sums, BLOCK_M * BLOCK_N * BLOCK_K, at
#: most SUMS_PER_LANE a lane of its warps (AMD kinds: AMD_SUMS_PER_LANE), as the forward's.
BLOCK_M = (16, 32, 64, 128, 256)
BLOCK_K = (8, 16, 32, 64, 128)
#: The usual tile of each filter block, per form, on the NVIDIA kinds: of the fifteen tiles of
#: bench/gpu_fewk.sh's `wrw_tiles` step, the block's of least GPU time in all over the zoo's
#: layers of 1-8 filters in the block and form (H200, FP32, batch 32: bench/results/
#: fewk_h200-035369f/wrw_tiles.json; tests/unit/test_bench_fewk_h200.py recomputes the
#: choice). Channels-last: 64 positions over 32 channels for 1-2 filters, 32 over 64 for 3-4,
#: 16 over 64 for 5-8; planar layers take more positions over fewer channels (128 over 32,
#: 128 over 16, 64 over 16).
_TILE = {"GROUP_M": 1, "SPLIT_K": 1, "num_warps": 4, "num_stages": 1}
TILES: tuple[dict[str, int], ...] = (
    {**_TILE, "BLOCK_M": 64, "BLOCK_N": 2, "BLOCK_K": 32},
    {**_TILE, "BLOCK_M": 32, "BLOCK_N": 4, "BLOCK_K": 64},
    {**_TILE, "BLOCK_M": 16, "BLOCK_N": 8, "BLOCK_K": 64},
)
PLANAR_TILES: tuple[dict[str, int], ...] = (
    {**_TILE, "BLOCK_M": 128, "BLOCK_N": 2, "BLOCK_K": 32},
    {**_TILE, "BLOCK_M": 128, "BLOCK_N": 4, "BLOCK_K": 16},
    {**_TILE, "BLOCK_M": 64, "BLOCK_N": 8, "BLOCK_K": 16},
)
#: The AMD kinds' usual tiles, both forms, on eight warps: 64 sums a lane, the x tile's
#: channels as wide as the filters leave room for (chosen from the kernel's shape; no AMD GPU
#: timed them).
AMD_TILES: tuple[dict[str, int], ...] = (
    {**_TILE, "BLOCK_M": 64, "BLOCK_N": 2, "BLOCK_K": 64, "num_warps": 8},
    {**_TILE, "BLOCK_M": 64, "BLOCK_N": 4, "BLOCK_K": 32, "num_warps": 8},
    {**_TILE, "BLOCK_M": 32, "BLOCK_N": 8, "BLOCK_K": 32, "num_warps": 8},
)
#: The split of the positions (`split_for`): doubled from 1 while the launch stays within
#: WAVES programs an SM and each part keeps at least LEAST steps of BLOCK_M positions, at most
#: MOST parts (its FP32 partials, MOST * 8 * C*R*S * 4 bytes, stay a few MB for the zoo's
#: layers: 9.4 MB for 8 filters over 512 channels at 3x3).
SPLIT_RULE = {"waves": 8, "least": 16, "most": 64}


def tiles(kind: str, cl: bool) -> tuple[dict[str, int], ...]:
    """The kind's usual tiles of one form (`cl`: channels-last), one a filter block."""
    if kind in AMD_KINDS:
        return AMD_TILES
    return TILES if cl else PLANAR_TILES


def holds(sizes: Mapping[str, int], config: Mapping[str, int]) -> bool:
    """The tile's filter block holds every filter (one program a tap's channel block)."""
    return int(config["BLOCK_N"]) >= int(sizes["K"])


def partials_fit(sizes: Mapping[str, int], split: int) -> bool:
    """The FP32 partials of `split` parts have 32-bit offsets."""
    z = sizes
    return int(split) * z["K"] * z["C"] * z["R"] * z["S"] < 2**31 - 1


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
            ) -> bool:
    """One group, 1..MAX_FILTERS filters, every offset within 32 bits (the partials' at the
    most parts too)."""
    z = sizes
    return z["G"] == 1 and 1 <= z["K"] <= MAX_FILTERS and offsets_fit(z, strides) and \
        partials_fit(z, SPLIT_RULE["most"])


def claims(kind: str, sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
           ) -> bool:
    """Whether the kernel ranks first on a problem it applies to: on FIRST_KINDS,
    channels-last, a filter of more than one tap (the three-product implicit GEMM's 16.9-18.9x
    cuDNN there; 1x1 layers are GEMMs the library and the implicit GEMM took at 0.59-1.36)."""
    return kind in FIRST_KINDS and bool(channels_last(strides)) and \
        sizes["R"] * sizes["S"] > 1


def tile_for(kind: str, sizes: Mapping[str, int], cl: bool) -> dict[str, int]:
    """The kind's usual tile of the problem's filter block in its form (`cl`)."""
    block = filter_block(int(sizes["K"]))
    return dict(next(t for t in tiles(kind, cl) if t["BLOCK_N"] == block))


def legal(kind: str, config: Mapping[str, int]) -> bool:
    """A configuration of the legal space: a filter block, BLOCK_M, BLOCK_K, warps and stages
    of the tables above, GROUP_M 1, a split of 1..MOST parts, at most the kind's sums a lane."""
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
    """Every legal tile of a filter block (the tuning search space; SPLIT_K 1, each tile's
    split is `split_for`'s)."""
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
    """(taps * channel blocks, parts, 1)."""
    z = sizes
    return (z["R"] * z["S"] * cdiv(z["C"], int(config["BLOCK_K"])),
            max(1, int(config.get("SPLIT_K", 1))), 1)


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int) -> int:
    """The parts of the positions that fill a GPU of `sms` SMs (SPLIT_RULE)."""
    z = sizes
    programs = grid(z, {**config, "SPLIT_K": 1})[0]
    steps = cdiv(z["N"] * z["P"] * z["Q"], int(config["BLOCK_M"]))
    rule = SPLIT_RULE
    return filling_split(programs, steps, sms, rule["least"], rule["most"], rule["waves"])


def workspace_bytes(sizes: Mapping[str, int], config: Mapping[str, int]) -> int:
    """A launch of several parts: an FP32 partial of dw a part."""
    split = int(config.get("SPLIT_K", 1))
    z = sizes
    return 0 if split <= 1 else split * z["K"] * z["C"] * z["R"] * z["S"] * 4


def efficiency(sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The fraction of the launched tile work that is real."""
    m, n, c = sizes["N"] * sizes["P"] * sizes["Q"], sizes["K"], sizes["C"]
    bm, bn, bk = int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config["BLOCK_K"])
    return (m / (cdiv(m, bm) * bm)) * (n / (cdiv(n, bn) * bn)) * (c / (cdiv(c, bk) * bk))


def signature(dtype: str, config: Mapping[str, int], cl: bool
              ) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object for `triton.compiler.ASTSource`."""
    values = {"BLOCK_M": config["BLOCK_M"], "BLOCK_N": config["BLOCK_N"],
              "BLOCK_K": config["BLOCK_K"], "CHANNELS_LAST": int(cl)}
    return typed_signature(ARGS[KERNEL["W"]], dtype, values)
