"""What a launch of the few-filter direct forward kernel (kernels/conv_triton_fewk.py) needs, as
plain data.

Standard library only (and `conv_triton_spec`), so the runtime reads it without Triton. Sizes
are those of `conv_triton_spec`; strides in elements in (n, c, h, w) / (k, c, r, s) /
(n, k, h, w) order. The kernel takes 2-D forward problems of one group and at most
MAX_FILTERS filters, any channels, any strides (CHANNELS_LAST 1 objects: channel strides 1).

Tunables are the implicit GEMM's seven: BLOCK_M over output positions, BLOCK_N the filter
block (every filter: at least K), BLOCK_K the channels a step, num_warps, num_stages; GROUP_M
and SPLIT_K 1 (one program a block of positions, the reduction whole in it). No object assumes
alignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The stem kernel's argument list, offset check, form test and argument values: the same.
from .conv_triton_fma_spec import DIRECT_ARGS, offsets_fit
from .conv_triton_fma_spec import arg_values as arg_values
from .conv_triton_fma_spec import channels_last as channels_last
from .conv_triton_spec import cdiv, typed_signature

#: Target kinds the kernel applies on (every kind the Triton families compile for) and where
#: the miss ranking puts it first (FIRST_KINDS: measured there).
KINDS = ("sm80", "sm90", "sm100", "sm120", "cdna", "cdna4", "rdna")
FIRST_KINDS = ("sm90",)
#: FP32 alone: on 16-bit inputs the matrix cores' implicit GEMM was faster on every layer of
#: many positions (the kernel took 1.8-8.5x cuDNN's GPU time there, FP16 and BF16, on the H100:
#: bench/results/fewk_h100-6a76905/alt.json).
TYPES = ("FP32",)
#: The most filters a problem may have: image outputs (3), latents (4, 8), masks (1, 2).
MAX_FILTERS = 8

KERNEL = {"F": "conv2d_direct_fma_fewk"}
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "conv2d_direct_fma_fewk": (*DIRECT_ARGS, ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"),
                               ("BLOCK_K", "constexpr"), ("CHANNELS_LAST", "constexpr")),
}
#: Kernels that run no matrix instruction by design (the code-object check asks none of them).
NO_MATRIX_KERNELS = frozenset(KERNEL.values())
#: The tensor (x, w, y of the convolution) each pointer is.
TENSORS: dict[str, dict[str, str]] = {"F": {"x_ptr": "x", "w_ptr": "w", "y_ptr": "y"}}
#: i32 arguments an aligned object would assume multiples of 16: none (no aligned objects).
ALIGN16: dict[str, tuple[str, ...]] = {"conv2d_direct_fma_fewk": ()}

#: Filter blocks: a problem takes the narrowest that holds its filters.
FILTER_BLOCKS = (2, 4, 8)
#: The legal space (tuning and surveys): a tile's FP32 sums, BLOCK_M * BLOCK_N * BLOCK_K, at
#: most SUMS_PER_LANE a lane of its warps (AMD kinds: AMD_SUMS_PER_LANE; a lane also holds its
#: share of the x tile and a 64-bit address per element of it: at 64 sums a lane on four wave32
#: warps, gfx1100's objects spilled 11-155 VGPRs to scratch, at 32 none).
BLOCK_M = (32, 64, 128, 256)
BLOCK_K = (8, 16, 32, 64)
WARPS = (4, 8)
STAGES = (1, 2)
SUMS_PER_LANE = 64
AMD_SUMS_PER_LANE = 32
AMD_KINDS = ("cdna", "cdna4", "rdna")
WAVE = {"cdna": 64, "cdna4": 64}
#: The usual tile of each filter block: of fifteen tiles timed on the zoo's layers of 1-8
#: filters (bench/solver_alternatives.py, FP32, H100: bench/results/fewk_h100-6a76905/
#: tiles.json), the one of least GPU time (geomean against cuDNN) channels-last over the
#: layers of that block: 256 x 2 x 16 (one layer: 0.42, where 128 x 2 x 32 took 0.55),
#: 64 x 4 x 32 (three: 0.58) and 32 x 8 x 16 (six, the held-out one among them: 0.77, where
#: 64 x 8 x 16 took 0.94), all on four warps, one stage.
_TILE = {"GROUP_M": 1, "SPLIT_K": 1, "num_warps": 4, "num_stages": 1}
TILES: tuple[dict[str, int], ...] = (
    {**_TILE, "BLOCK_M": 256, "BLOCK_N": 2, "BLOCK_K": 16},
    {**_TILE, "BLOCK_M": 64, "BLOCK_N": 4, "BLOCK_K": 32},
    {**_TILE, "BLOCK_M": 32, "BLOCK_N": 8, "BLOCK_K": 16},
)


def tiles(kind: str) -> tuple[dict[str, int], ...]:
    """The kind's usual tiles, one a filter block (AMD kinds on eight warps)."""
    if kind in AMD_KINDS:
        return tuple({**t, "num_warps": 8} for t in TILES)
    return TILES


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
            ) -> bool:
    """One group, 1..MAX_FILTERS filters, every offset within 32 bits."""
    z = sizes
    return z["G"] == 1 and 1 <= z["K"] <= MAX_FILTERS and offsets_fit(z, strides)


#: Where the kernel claims first (`claims`), channels-last (the form whose tiles run channels
#: fastest; the other took 1.5-2.3x cuDNN on layers of many positions): its programs fill the
#: GPU, or a program's reduction is short (C*R*S at most SHORT_REDUCTION: one program over 32
#: positions with 8,192 products each took 6x cuDNN); and not a 1x1 layer at stride 1 of more
#: than LIBRARY_ROWS positions, which the GEMM library takes as one call (0.41 and 0.55 of
#: cuDNN against the kernel's 0.56 and 1.62 over 2M and 131k positions; on the 1-position
#: squeeze-and-excitation layers the kernel 0.67-0.82 against the library's 0.83-1.52).
SHORT_REDUCTION = 1024
LIBRARY_ROWS = 1024


def claims(kind: str, sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]],
           cus: int) -> bool:
    """Whether the kernel ranks first on a problem it applies to (above)."""
    z = sizes
    if kind not in FIRST_KINDS or not channels_last(strides):
        return False
    rows = z["N"] * z["P"] * z["Q"]
    one_by_one = (z["R"], z["S"], z["stride_h"], z["stride_w"], z["pad_h"], z["pad_w"]) == \
        (1, 1, 1, 1, 0, 0)
    if one_by_one and rows > LIBRARY_ROWS:
        return False
    fills = grid(z, tile_for(kind, z))[0] >= cus
    return fills or z["C"] * z["R"] * z["S"] <= SHORT_REDUCTION


def filter_block(k: int) -> int:
    """The narrowest filter block that holds k filters."""
    return next((b for b in FILTER_BLOCKS if b >= k), FILTER_BLOCKS[-1])


def tile_for(kind: str, sizes: Mapping[str, int]) -> dict[str, int]:
    """The kind's usual tile of the problem's filter block."""
    block = filter_block(int(sizes["K"]))
    return dict(next(t for t in tiles(kind) if t["BLOCK_N"] == block))


def sums_per_lane(config: Mapping[str, int], kind: str) -> int:
    lanes = int(config["num_warps"]) * WAVE.get(kind, 32)
    return cdiv(int(config["BLOCK_M"]) * int(config["BLOCK_N"]) * int(config["BLOCK_K"]),
                lanes)


def legal(kind: str, config: Mapping[str, int]) -> bool:
    """A configuration of the legal space: a filter block, BLOCK_M, BLOCK_K, warps and stages
    of the tables above, GROUP_M and SPLIT_K 1, at most the kind's sums a lane."""
    try:
        ok = (int(config["BLOCK_N"]) in FILTER_BLOCKS and int(config["BLOCK_M"]) in BLOCK_M
              and int(config["BLOCK_K"]) in BLOCK_K and int(config["num_warps"]) in WARPS
              and int(config["num_stages"]) in STAGES and int(config["GROUP_M"]) == 1
              and int(config.get("SPLIT_K", 1)) == 1)
    except (KeyError, TypeError, ValueError):
        return False
    limit = AMD_SUMS_PER_LANE if kind in AMD_KINDS else SUMS_PER_LANE
    return ok and kind in KINDS and sums_per_lane(config, kind) <= limit


def legal_space(kind: str, block: int) -> list[dict[str, int]]:
    """Every legal configuration of a filter block (the tuning search space)."""
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
    return cdiv(sizes["N"] * sizes["P"] * sizes["Q"], config["BLOCK_M"]), 1, 1


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
    return typed_signature(ARGS[KERNEL["F"]], dtype, values)
