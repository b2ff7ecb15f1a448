"""What a launch of the Winograd backward-weights kernels (kernels/conv_triton_winograd.py)
needs, as plain data.

Standard library only (and `conv_triton_spec`, which is too), so the runtime reads it without
Triton. One call runs four launches, in order, all on FP32 parts of one workspace
(`workspace`): the data transform (x -> V), the gradient transform (dy -> U), the GEMM (U, V
-> M, its reduction over tiles cut in SPLIT_K parts) and the output transform (M -> dw). Sizes
are those of `conv_triton_spec` (C and K per group, G groups); strides are in elements, in
(n, c, h, w) / (k, c, r, s) / (n, k, h, w) order, so NCHW, NHWC and any other strides are the
same objects.

The GEMM's tunables are the implicit GEMM's (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K,
num_warps, num_stages), legal where `conv_triton_spec.is_legal` holds for a splitting kernel
on the kind. Its objects assume 16-byte aligned workspace parts and TP a multiple of 16
(GEMM_ALIGN16; TP is always a multiple of TILE_ROUND, and the parts start on PART_ALIGN bytes),
which a workspace whose base is not 16-byte aligned breaks: such a call takes the variant
compiled without them. The other three kernels assume nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import cdiv, is_legal, typed_signature

#: Target kinds the solvers apply on: measured on the H100 alone.
KINDS = ("sm90",)
#: TP, the tile count the workspace holds, is N*TH*TW rounded up to this (a multiple of every
#: legal BLOCK_K, so the GEMM's reduction needs no mask).
TILE_ROUND = 64
PART_ALIGN = 256  # bytes: where each workspace part starts
POSITIONS = 16  # the 4x4 transform domain
TRANSFORM_BLOCK_T = 64  # tiles per transform program
TRANSFORM_BLOCK_C = 32  # channels (filters) per transform program
TRANSFORM_WARPS = 4
OUT_BLOCK = 256
OUT_WARPS = 4
GRID_YZ_MAX = 65535

_TRANSFORM = (("BLOCK_T", "constexpr"), ("BLOCK_C", "constexpr"))
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "winograd_wrw_data": (
        ("x_ptr", "ptr"), ("v_ptr", "ptr_fp32"), ("N", "i32"), ("C", "i32"), ("H", "i32"),
        ("W", "i32"), ("TH", "i32"), ("TW", "i32"), ("TP", "i32"), ("pad_h", "i32"),
        ("pad_w", "i32"), ("sxn", "i32"), ("sxc", "i32"), ("sxh", "i32"), ("sxw", "i32"),
        *_TRANSFORM),
    "winograd_wrw_grad": (
        ("y_ptr", "ptr"), ("u_ptr", "ptr_fp32"), ("N", "i32"), ("K", "i32"), ("P", "i32"),
        ("Q", "i32"), ("TH", "i32"), ("TW", "i32"), ("TP", "i32"), ("syn", "i32"),
        ("syk", "i32"), ("syh", "i32"), ("syw", "i32"), *_TRANSFORM),
    "winograd_wrw_gemm": (
        ("u_ptr", "ptr_fp32"), ("v_ptr", "ptr_fp32"), ("m_ptr", "ptr_fp32"), ("K", "i32"),
        ("C", "i32"), ("G", "i32"), ("TP", "i32"),
        ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("BLOCK_K", "constexpr"),
        ("GROUP_M", "constexpr"), ("SPLIT_K", "constexpr"), ("PRECISION", "constexpr")),
    "winograd_wrw_out": (
        ("m_ptr", "ptr_fp32"), ("w_ptr", "ptr"), ("GKC", "i32"), ("C", "i32"),
        ("swk", "i32"), ("swc", "i32"), ("swr", "i32"), ("sws", "i32"),
        ("SPLIT_K", "constexpr"), ("BLOCK", "constexpr")),
}
#: The order of one call's launches; the GEMM is the main one (its object is the solver's job).
LEAD_INS = ("winograd_wrw_data", "winograd_wrw_grad")
MAIN = "winograd_wrw_gemm"
FOLLOW_UP = "winograd_wrw_out"
#: Which workspace part each pointer addresses (the others are the caller's tensors).
SLOTS = {"v_ptr": "ws_v", "u_ptr": "ws_u", "m_ptr": "ws_m"}
#: The caller's tensor of each other pointer: x, dy (the conv's y) and dw (its w).
TENSORS = {"x_ptr": "x", "y_ptr": "y", "w_ptr": "w"}
GEMM_ALIGN16 = ("u_ptr", "v_ptr", "m_ptr", "TP")

#: The GEMM's tile by per-group size: 128x128 where K*C reaches BIG_GEMM, else 64x64. Tuning
#: on the H100 (dbs/sm9084 run 21) chose one of these two in 13 of its 16 PerfDb entries.
BIG_GEMM = 256 * 256
BIG_TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8,
            "num_stages": 3}
SMALL_TILE = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4,
              "num_stages": 4}
TILES = (BIG_TILE, SMALL_TILE)
#: The splits a package ships each tile with (what `split_for` may choose, up to this).
MAX_SPLIT = 16
MIN_SPLIT_STEPS = 8  # BLOCK_K steps each part of a split keeps
LARGEST_SPLIT = 64  # the legal space's largest SPLIT_K (conv_triton_spec.TARGET_KINDS)


def applies(sizes: Mapping[str, int]) -> bool:
    """Whether the kernels compute a problem: 3x3 filters, stride 1, dilation 1, the grid's
    y limit, and every workspace part and tensor within 32-bit offsets."""
    z = sizes
    if (z["R"], z["S"], z["stride_h"], z["stride_w"], z["dil_h"], z["dil_w"]) != \
            (3, 3, 1, 1, 1, 1):
        return False
    if min(z["N"], z["C"], z["K"], z["G"], z["P"], z["Q"]) < 1 or \
            z["G"] * POSITIONS > GRID_YZ_MAX:
        return False
    _, _, tp = tiles(z)
    g = z["G"]
    parts = (POSITIONS * g * max(z["C"], z["K"]) * tp,  # U, V
             LARGEST_SPLIT * POSITIONS * g * z["K"] * z["C"],  # M at the largest legal split
             z["N"] * g * z["C"] * z["H"] * z["W"], z["N"] * g * z["K"] * z["P"] * z["Q"])
    return max(parts) < 2**31


def tiles(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(TH, TW, TP): 2x2 tiles of dy per column and row, and the tile count rounded up."""
    th, tw = cdiv(sizes["P"], 2), cdiv(sizes["Q"], 2)
    return th, tw, cdiv(sizes["N"] * th * tw, TILE_ROUND) * TILE_ROUND


def _round(nbytes: int) -> int:
    return cdiv(nbytes, PART_ALIGN) * PART_ALIGN


def workspace(sizes: Mapping[str, int], split: int) -> tuple[dict[str, int], int]:
    """({part: byte offset}, total bytes): U ([16][G*K][TP]), V ([16][G*C][TP]) and M
    ([SPLIT_K][16][G*K][C]), FP32, each from a PART_ALIGN boundary."""
    z = sizes
    _, _, tp = tiles(z)
    g = z["G"]
    u = _round(POSITIONS * g * z["K"] * tp * 4)
    v = _round(POSITIONS * g * z["C"] * tp * 4)
    m = _round(int(split) * POSITIONS * g * z["K"] * z["C"] * 4)
    return {"ws_u": 0, "ws_v": u, "ws_m": u + v}, u + v + m


def grid(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]
         ) -> tuple[int, int, int]:
    """Launch grid of one of the four kernels (`config`: the GEMM's tunables)."""
    z = sizes
    _, _, tp = tiles(z)
    g = z["G"]
    if kernel == "winograd_wrw_data":
        return cdiv(tp, TRANSFORM_BLOCK_T), cdiv(g * z["C"], TRANSFORM_BLOCK_C), 1
    if kernel == "winograd_wrw_grad":
        return cdiv(tp, TRANSFORM_BLOCK_T), cdiv(g * z["K"], TRANSFORM_BLOCK_C), 1
    if kernel == "winograd_wrw_gemm":
        blocks = cdiv(z["K"], config["BLOCK_M"]) * cdiv(z["C"], config["BLOCK_N"])
        return blocks, POSITIONS * g, int(config.get("SPLIT_K", 1))
    if kernel == "winograd_wrw_out":
        return cdiv(g * z["K"] * z["C"], OUT_BLOCK), 1, 1
    raise KeyError(kernel)


def warps(kernel: str, config: Mapping[str, int]) -> int:
    """Warps per program of a kernel."""
    if kernel == MAIN:
        return int(config["num_warps"])
    return OUT_WARPS if kernel == FOLLOW_UP else TRANSFORM_WARPS


def arg_values(kernel: str, sizes: Mapping[str, int],
               strides: Mapping[str, tuple[int, int, int, int]]) -> dict[str, int]:
    """The i32 arguments of a kernel from the sizes and the element strides of x (n, c, h, w),
    w (k, c, r, s) and y (n, k, h, w)."""
    z = sizes
    g = z["G"]
    th, tw, tp = tiles(z)
    values = {"N": z["N"], "H": z["H"], "W": z["W"], "P": z["P"], "Q": z["Q"], "TH": th,
              "TW": tw, "TP": tp, "pad_h": z["pad_h"], "pad_w": z["pad_w"], "G": g,
              "GKC": g * z["K"] * z["C"]}
    # The transforms see every channel and filter; the GEMM and the output per group.
    values["C"] = g * z["C"] if kernel == "winograd_wrw_data" else z["C"]
    values["K"] = g * z["K"] if kernel == "winograd_wrw_grad" else z["K"]
    for t, names in (("x", ("sxn", "sxc", "sxh", "sxw")), ("w", ("swk", "swc", "swr", "sws")),
                     ("y", ("syn", "syk", "syh", "syw"))):
        values.update(zip(names, (int(v) for v in strides[t]), strict=True))
    return {name: int(values[name]) for name, kind in ARGS[kernel] if kind == "i32"}


def signature(kernel: str, dtype: str, config: Mapping[str, int], precision: str
              ) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object for `triton.compiler.ASTSource`."""
    values: dict[str, Any] = {
        "BLOCK_T": TRANSFORM_BLOCK_T, "BLOCK_C": TRANSFORM_BLOCK_C, "BLOCK": OUT_BLOCK,
        "PRECISION": precision, "SPLIT_K": int(config.get("SPLIT_K", 1)),
        **{k: config.get(k) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}}
    return typed_signature(ARGS[kernel], dtype, values)


def legal(config: Mapping[str, int], kind: str) -> bool:
    """Whether a GEMM configuration is legal on a kind (the implicit GEMM's rules for FP32,
    splits included); no MMA choice."""
    return not config.get("MMA") and bool(is_legal(config, "FP32", kind, "conv2d_bwd_weight"))


def usual_tile(sizes: Mapping[str, int]) -> dict[str, int]:
    """The GEMM tile without a measured record: BIG_TILE for large K x C, else SMALL_TILE."""
    return dict(BIG_TILE if sizes["K"] * sizes["C"] >= BIG_GEMM else SMALL_TILE)


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int) -> int:
    """SPLIT_K doubled from 1 while the GEMM stays within one wave of `sms` programs and each
    part keeps MIN_SPLIT_STEPS BLOCK_K steps, up to MAX_SPLIT."""
    gx, gy, _ = grid(MAIN, sizes, {**config, "SPLIT_K": 1})
    steps = tiles(sizes)[2] // int(config["BLOCK_K"])
    split = 1
    while split < MAX_SPLIT and gx * gy * split * 2 <= sms and \
            steps // (split * 2) >= MIN_SPLIT_STEPS:
        split *= 2
    return split


#: Where the miss ranking puts these solvers ahead of the implicit GEMM of the same precision
#: (bench/results/winograd_wrw_h100.json: the 3x3 stride-1 ResNet-50 layers at batch 1, 32
#: and 64 on the H100). Three products: from FIRST_MIN_WORK multiply-adds per transform
#: position (2x2 tiles of dy x C x K per group) and FIRST_MIN_CHANNELS channels and filters per
#: group; every layer at batch 32 and 64 (1e8 to 3e8 of them) took 0.33-0.73 of the implicit
#: GEMM's time, every one at batch 1 (3e6 to 4e6) 1.05-1.78x, where four launches cost more
#: than the work. TF32 also at most FIRST_TF32_PIXELS output pixels per image: at batch 32 and
#: 64, 0.48-0.77 at 14x14 and 7x7, 0.69-1.19 at 28x28, 1.2-1.9x at 56x56.
FIRST_MIN_WORK = 2**24
FIRST_MIN_CHANNELS = 32
FIRST_TF32_PIXELS = 196


def ranks_first(precision: str, sizes: Mapping[str, int]) -> bool:
    """Whether a problem's Winograd solver of `precision` ('tf32' or 'tf32x3') ranks first."""
    z = sizes
    th, tw, _ = tiles(z)
    if min(z["C"], z["K"]) < FIRST_MIN_CHANNELS or \
            z["N"] * th * tw * z["C"] * z["K"] < FIRST_MIN_WORK:
        return False
    return precision != "tf32" or z["P"] * z["Q"] <= FIRST_TF32_PIXELS
