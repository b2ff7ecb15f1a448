"""What a launch of the 1x1 NCHW GEMM kernels (kernels/conv_triton_1x1.py) needs, as plain data.

Standard library only (and `conv_triton_spec`), so the runtime reads it without Triton. Sizes
are those of `conv_triton_spec` (C, K per group; G must be 1 here), strides in elements in
(n, c, h, w) / (k, c, r, s) / (n, k, h, w) order. The kernels take problems whose channel
planes are packed (w stride 1, h stride the width) and whose 1x1 weights are contiguous along
their input channels: NCHW activations and KCRS weights, or any strides between images and
channels.

Tunables are the implicit GEMM's (BLOCK_M over pixels in forward and backward data, over filters
in backward weights; BLOCK_N over output channels, or input channels in backward weights;
BLOCK_K; GROUP_M; SPLIT_K, backward weights alone, over the (image, pixel block) steps of the
reduction; num_warps; num_stages), legal where `conv_triton_spec.is_legal` holds. One object
serves every split above 1 (`conv_triton_spec.split_object`): its parts are the launch's grid.
An "aligned" object assumes 16-byte aligned pointers and every ALIGN16 argument a multiple of
16 (`meets_align16`); other problems take the variant compiled without.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import cdiv, filling_split, is_legal, split_object, typed_signature

#: Target kinds and element types the solvers apply on: measured on the H100 alone, in 16-bit
#: types (FP32's TF32 tensor cores read operands K-major only, which the pixel-contiguous
#: operands of forward and backward data are not).
KINDS = ("sm90",)
TYPES = ("FP16", "BF16")
#: The fewest output pixels per image the solvers take: below it the per-image GEMMs are too
#: short for their tiles.
MIN_PIXELS = 64
GRID_YZ_MAX = 65535

KERNEL = {"F": "conv1x1_nchw", "B": "conv1x1_nchw", "W": "conv1x1_nchw_wrw"}
_TILE = (("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("BLOCK_K", "constexpr"),
         ("GROUP_M", "constexpr"))
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "conv1x1_nchw": (
        ("a_ptr", "ptr"), ("w_ptr", "ptr"), ("o_ptr", "ptr"), ("CIN", "i32"), ("COUT", "i32"),
        ("PQ", "i32"), ("s_an", "i32"), ("s_ac", "i32"), ("s_on", "i32"), ("s_oc", "i32"),
        ("s_w", "i32"), *_TILE, ("W_BY_OUT", "constexpr")),
    "conv1x1_nchw_wrw": (
        ("x_ptr", "ptr"), ("y_ptr", "ptr"), ("w_ptr", "ptr"), ("ws_ptr", "ptr_fp32"),
        ("N", "i32"), ("C", "i32"), ("K", "i32"), ("PQ", "i32"), ("sxn", "i32"), ("sxc", "i32"),
        ("syn", "i32"), ("syk", "i32"), ("swk", "i32"), *_TILE, ("SPLIT_K", "constexpr")),
}
#: The tensor (x, w, y of the convolution, or the workspace) each pointer is, per direction.
TENSORS: dict[str, dict[str, str]] = {
    "F": {"a_ptr": "x", "w_ptr": "w", "o_ptr": "y"},
    "B": {"a_ptr": "y", "w_ptr": "w", "o_ptr": "x"},
    "W": {"x_ptr": "x", "y_ptr": "y", "w_ptr": "w", "ws_ptr": "ws"},
}
#: i32 arguments an aligned object assumes multiples of 16, per kernel.
ALIGN16: dict[str, tuple[str, ...]] = {
    "conv1x1_nchw": ("CIN", "COUT", "PQ", "s_an", "s_ac", "s_on", "s_oc", "s_w"),
    # Backward weights: the pixel side alone (its loads' vectors); the channel counts set the
    # partials' rows, stored once per part.
    "conv1x1_nchw_wrw": ("PQ", "sxn", "sxc", "syn", "syk"),
}

#: Usual tiles (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages), by direction and
#: whether the output has at least BIG_OUT channels (forward, backward data) or K*C at least
#: BIG_GEMM (backward weights). Tuning on the H100 (dbs/sm9084 run 22) chose the direction's
#: usual tile in 26 of its 60 PerfDb entries; the others hold each layer's own.
BIG_OUT = 128
BIG_GEMM = 256 * 256
_BIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8,
        "num_stages": 3}
_SMALL = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4,
          "num_stages": 4}
_SMALL_W = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4,
            "num_stages": 4}
TILES: dict[str, tuple[dict[str, int], ...]] = {"F": (_BIG, _SMALL), "B": (_BIG, _SMALL),
                                                "W": (_BIG, _SMALL_W)}
MAX_SPLIT = 256  # the largest default split of backward weights
#: The fewest BLOCK_K steps each part of a default split keeps.
MIN_SPLIT_STEPS = 8
#: The split `applies` bounds 32-bit workspace offsets by (a default split keeps within it).
OFFSET_SPLIT = 16

#: Where the miss ranking puts these solvers ahead of the implicit GEMM: from FIRST_PIXELS
#: output pixels per image (28x28), as measured on the H100 (bench/results/
#: triton_1x1_h100.json).
FIRST_PIXELS = 784
#: Backward weights rank first wherever the aligned object applies (`meets_align16`: pixels a
#: multiple of 16; MIN_PIXELS or more), its split cutting the (image, pixel block) steps to fill
#: the GPU: H200, FP16 NCHW, the zoo's 1x1 stride-1 layers at batch 32 (bench/results/
#: alternatives_1x1_wrw_split_h200.json), this solver where it claims and the implicit GEMM
#: (or its path through NHWC) elsewhere took 1.17 of cuDNN's GPU time over 208 zoo layers and
#: 1.33 over 51 held-out ones, against 1.42 and 1.67 when it claimed from FIRST_PIXELS with
#: channel counts that are multiples of 16 too.


def pixels(sizes: Mapping[str, int]) -> int:
    return int(sizes["P"]) * int(sizes["Q"])


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
            ) -> bool:
    """1x1 filters, stride 1, no padding, one group, packed channel planes and weights
    contiguous along input channels, at least MIN_PIXELS pixels per image, 32-bit offsets."""
    z = sizes
    if (z["R"], z["S"], z["stride_h"], z["stride_w"], z["pad_h"], z["pad_w"], z["G"]) != \
            (1, 1, 1, 1, 0, 0, 1):
        return False
    x, w, y = strides["x"], strides["w"], strides["y"]
    if (x[3], x[2], y[3], y[2], w[1]) != (1, z["W"], 1, z["Q"], 1):
        return False
    if pixels(z) < MIN_PIXELS or z["N"] > GRID_YZ_MAX:
        return False
    largest = max(z["N"] * z["C"] * z["H"] * z["W"], z["N"] * z["K"] * pixels(z),
                  OFFSET_SPLIT * 4 * z["K"] * z["C"])
    return largest < 2**31


def arg_values(direction: str, sizes: Mapping[str, int],
               strides: Mapping[str, tuple[int, int, int, int]]) -> dict[str, int]:
    """The i32 arguments of the direction's kernel."""
    z = sizes
    x, w, y = strides["x"], strides["w"], strides["y"]
    if direction == "F":
        return {"CIN": z["C"], "COUT": z["K"], "PQ": pixels(z), "s_an": x[0], "s_ac": x[1],
                "s_on": y[0], "s_oc": y[1], "s_w": w[0]}
    if direction == "B":
        return {"CIN": z["K"], "COUT": z["C"], "PQ": pixels(z), "s_an": y[0], "s_ac": y[1],
                "s_on": x[0], "s_oc": x[1], "s_w": w[0]}
    return {"N": z["N"], "C": z["C"], "K": z["K"], "PQ": pixels(z), "sxn": x[0], "sxc": x[1],
            "syn": y[0], "syk": y[1], "swk": w[0]}


def meets_align16(direction: str, args: Mapping[str, int]) -> bool:
    return all(int(args[a]) % 16 == 0 for a in ALIGN16[KERNEL[direction]])


def grid(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
         ) -> tuple[int, int, int]:
    z = sizes
    if direction == "W":
        tiles = cdiv(z["K"], config["BLOCK_M"]) * cdiv(z["C"], config["BLOCK_N"])
        return tiles, int(config.get("SPLIT_K", 1)), 1
    out = z["K"] if direction == "F" else z["C"]
    return cdiv(pixels(z), config["BLOCK_M"]) * cdiv(out, config["BLOCK_N"]), z["N"], 1


def gemm_dims(direction: str, sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(M, N, reduction) of one program's GEMM: per image in forward and backward data."""
    z = sizes
    if direction == "F":
        return pixels(z), z["K"], z["C"]
    if direction == "B":
        return pixels(z), z["C"], z["K"]
    return z["K"], z["C"], z["N"] * pixels(z)


def signature(direction: str, dtype: str, config: Mapping[str, int]
              ) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object for `triton.compiler.ASTSource`."""
    values: dict[str, Any] = {
        **{k: config.get(k) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")},
        "SPLIT_K": split_object(int(config.get("SPLIT_K", 1))),
        "W_BY_OUT": int(direction == "B")}
    return typed_signature(ARGS[KERNEL[direction]], dtype, values)


def legal(direction: str, config: Mapping[str, int], dtype: str, kind: str) -> bool:
    """The implicit GEMM's rules on the kind; SPLIT_K above 1 in backward weights alone."""
    if config.get("MMA"):
        return False
    kernel = "conv2d_bwd_weight" if direction == "W" else KERNEL[direction]
    return bool(is_legal(config, dtype, kind, kernel))


def usual_tile(direction: str, sizes: Mapping[str, int]) -> dict[str, int]:
    z = sizes
    big = z["K"] * z["C"] >= BIG_GEMM if direction == "W" else \
        (z["K"] if direction == "F" else z["C"]) >= BIG_OUT
    return dict(TILES[direction][0 if big else 1])


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int) -> int:
    """Backward weights' SPLIT_K: doubled from 1 while the launch stays within two waves of
    `sms` programs and each part keeps MIN_SPLIT_STEPS (image, pixel block) steps, up to
    MAX_SPLIT and to the split whose workspace offsets stay 32-bit."""
    tiles = grid("W", sizes, {**config, "SPLIT_K": 1})[0]
    steps = sizes["N"] * cdiv(pixels(sizes), int(config["BLOCK_K"]))
    most = min(MAX_SPLIT, max(1, (2**31 - 1) // max(1, 4 * sizes["K"] * sizes["C"])))
    return filling_split(tiles, steps, sms, MIN_SPLIT_STEPS, most)


def partials_fit(sizes: Mapping[str, int], split: int) -> bool:
    """Backward weights' FP32 partials in `split` parts have 32-bit offsets."""
    return int(split) * sizes["K"] * sizes["C"] < 2**31


def workspace_bytes(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
                    ) -> int:
    split = int(config.get("SPLIT_K", 1))
    return split * sizes["K"] * sizes["C"] * 4 if direction == "W" and split > 1 else 0


def ranks_first(direction: str, sizes: Mapping[str, int]) -> bool:
    """Whether the direction's solver may claim first by size (backward weights: wherever it
    applies; the claim also needs the aligned object)."""
    return direction == "W" or pixels(sizes) >= FIRST_PIXELS
