"""What a launch of the few-channel direct forward kernel (kernels/conv_triton_fma.py) needs, as
plain data.

Standard library only (and `conv_triton_spec`), so the runtime reads it without Triton. Sizes
are those of `conv_triton_spec`; strides in elements in (n, c, h, w) / (k, c, r, s) /
(n, k, h, w) order. The kernel takes 2-D forward problems of one group and at most
MAX_CHANNELS input channels in FP32, any strides (CHANNELS_LAST 1 objects: channel strides 1).

Tunables are the implicit GEMM's seven (BLOCK_M over output positions, BLOCK_N over filters,
GROUP_M, num_warps, num_stages; BLOCK_K and SPLIT_K 1: the reduction is walked tap by tap and
channel by channel, whole in each program). No object assumes alignment: x is read a
position at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import cdiv, typed_signature

#: Target kinds the kernel applies on (every kind the Triton families compile for) and where
#: the miss ranking puts it first (FIRST_KINDS: measured there).
KINDS = ("sm80", "sm90", "sm100", "sm120", "cdna", "cdna4", "rdna")
FIRST_KINDS = ("sm90",)
TYPES = ("FP32",)
#: The most input channels a problem may have: image stems (3), RGBA and latents (4).
MAX_CHANNELS = 4

KERNEL = {"F": "conv2d_direct_fma"}
#: The pointers and i32 arguments of the direct kernels on the FP32 units (this one and the
#: few-filter kernel's, `conv_triton_fewk_spec`), in order; their constexprs follow.
DIRECT_ARGS: tuple[tuple[str, str], ...] = (
    ("x_ptr", "ptr"), ("w_ptr", "ptr"), ("y_ptr", "ptr"),
    *((name, "i32") for name in ("N", "C", "H", "W", "K", "P", "Q", "R", "S", "stride_h",
                                 "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "sxn", "sxc",
                                 "sxh", "sxw", "swk", "swc", "swr", "sws", "syn", "syk", "syh",
                                 "syw")))
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "conv2d_direct_fma": (*DIRECT_ARGS, ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"),
                          ("GROUP_M", "constexpr"), ("CHANNELS_LAST", "constexpr")),
}
#: Kernels that run no matrix instruction by design (the code-object check asks none of them).
NO_MATRIX_KERNELS = frozenset(KERNEL.values())
#: The tensor (x, w, y of the convolution) each pointer is.
TENSORS: dict[str, dict[str, str]] = {"F": {"x_ptr": "x", "w_ptr": "w", "y_ptr": "y"}}
#: i32 arguments an aligned object would assume multiples of 16: none (no aligned objects).
ALIGN16: dict[str, tuple[str, ...]] = {"conv2d_direct_fma": ()}

#: The tiles (BLOCK_M, BLOCK_N; GROUP_M 8, three stages), a filter block as wide as the stem's
#: filters up to 64: bench/fewc_fwd_2d.py's trial on the H200 (bench/results/
#: fewc_fwd_2d_fp32_h200-fa47541.json) found 128 x 16 fastest on MobileNet-v3's 16 filters,
#: 128 x 32 on MobileNet-v2's 32 and 128 x 64 on ResNet-50's 64 (of six tiles each), on four
#: warps. AMD kinds (AMD_KINDS) run 64 rows on eight warps, 16 of the tile's elements a lane:
#: at 32 a lane (128 x 64 on four wave32 warps) gfx1100's objects spilled VGPRs to scratch;
#: at 16 tests/integration/test_conv_triton_fma.py finds on gfx942 and gfx1100 no VGPR spill,
#: no scratch and at most a few SGPRs moved to VGPR lanes.
_TILE = {"BLOCK_M": 128, "BLOCK_K": 1, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 3}
TILES: tuple[dict[str, int], ...] = tuple(
    {**_TILE, "BLOCK_N": n, "num_warps": 4} for n in (16, 32, 64))
AMD_KINDS = ("cdna", "cdna4", "rdna")
AMD_TILES: tuple[dict[str, int], ...] = tuple(
    {**t, "BLOCK_M": 64, "num_warps": 8} for t in TILES)


def tiles(kind: str) -> tuple[dict[str, int], ...]:
    """The kind's tiles."""
    return AMD_TILES if kind in AMD_KINDS else TILES


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
            ) -> bool:
    """One group, 1..MAX_CHANNELS input channels, every offset within 32 bits."""
    z = sizes
    return z["G"] == 1 and 1 <= z["C"] <= MAX_CHANNELS and offsets_fit(z, strides)


def offsets_fit(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
                ) -> bool:
    """Whether every element offset of x, w and y and every output position index is within
    32 bits (the direct kernels' i32 arithmetic)."""
    z = sizes
    extents = []
    for t, dims in (("x", (z["N"], z["C"], z["H"], z["W"])), ("w", (z["K"], z["C"], z["R"],
                                                                      z["S"])),
                    ("y", (z["N"], z["K"], z["P"], z["Q"]))):
        extents.append(sum(abs(int(s)) * (int(d) - 1) for s, d in zip(strides[t], dims,
                                                                         strict=True)))
    return max(extents) < 2**31 - 1 and z["N"] * z["P"] * z["Q"] < 2**31 - 1


def channels_last(strides: Mapping[str, tuple[int, int, int, int]]) -> bool:
    """Whether x's, w's and y's channel strides are 1 (the CHANNELS_LAST 1 objects)."""
    return all(int(strides[t][1]) == 1 for t in ("x", "w", "y"))


def arg_values(direction: str, sizes: Mapping[str, int],
               strides: Mapping[str, tuple[int, int, int, int]]) -> dict[str, int]:
    """The kernel's i32 arguments."""
    z = sizes
    x, w, y = strides["x"], strides["w"], strides["y"]
    values = {k: int(z[k]) for k in ("N", "C", "H", "W", "K", "P", "Q", "R", "S", "stride_h",
                                     "stride_w", "pad_h", "pad_w", "dil_h", "dil_w")}
    names = {"x": ("sxn", "sxc", "sxh", "sxw"), "w": ("swk", "swc", "swr", "sws"),
             "y": ("syn", "syk", "syh", "syw")}
    for t, s in (("x", x), ("w", w), ("y", y)):
        values.update(zip(names[t], (int(v) for v in s), strict=True))
    return values


def tile_for(kind: str, sizes: Mapping[str, int]) -> dict[str, int]:
    """The kind's narrowest tile whose filter block covers the filters (the widest past 64)."""
    for tile in tiles(kind):
        if tile["BLOCK_N"] >= sizes["K"]:
            return dict(tile)
    return dict(tiles(kind)[-1])


def legal(kind: str, config: Mapping[str, int]) -> bool:
    return any(all(int(config.get(k, -1)) == v for k, v in t.items()) for t in tiles(kind))


def grid(sizes: Mapping[str, int], config: Mapping[str, int]) -> tuple[int, int, int]:
    z = sizes
    return cdiv(z["N"] * z["P"] * z["Q"], config["BLOCK_M"]) * cdiv(z["K"], config["BLOCK_N"]), \
        1, 1


def efficiency(sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The fraction of the launched tile work that is real."""
    m, n = sizes["N"] * sizes["P"] * sizes["Q"], sizes["K"]
    bm, bn = int(config["BLOCK_M"]), int(config["BLOCK_N"])
    return (m / (cdiv(m, bm) * bm)) * (n / (cdiv(n, bn) * bn))


def signature(dtype: str, config: Mapping[str, int], cl: bool
              ) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object for `triton.compiler.ASTSource`."""
    values = {"BLOCK_M": config["BLOCK_M"], "BLOCK_N": config["BLOCK_N"],
              "GROUP_M": config["GROUP_M"], "CHANNELS_LAST": int(cl)}
    return typed_signature(ARGS[KERNEL["F"]], dtype, values)
