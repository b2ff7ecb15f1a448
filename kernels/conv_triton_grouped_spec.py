"""What a launch of the grouped direct kernels (`grouped_conv`, `grouped_conv_wrw` in
kernels/conv_triton_depthwise.py) needs, as plain data.

Standard library only, so the runtime reads it without Triton. The kernels take grouped
problems of a few channels and filters a group (C and K per group at most MAX_PER_GROUP, not
both 1: those are depthwise), within the direct kernels' geometry (filters up to 7x7, strides
1-2, any padding and dilation). Everything about tiles, the legal space, the grid, the
backward-weights split and its workspace is the depthwise family's (conv_triton_depthwise_spec,
whose lanes count a group's channels); this module holds what differs: the kernels, their
arguments and which problems they take. The kernels' channel loads gather a group's channels,
so no object assumes alignment (ALIGN16 is empty: one object per direction, type, layout and
width class).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_depthwise_spec import (  # noqa: F401  (the family's launch data: re-exported)
    GRID_YZ_MAX,
    KINDS,
    MAX_FILTER,
    MAX_STRIDE,
    SPLITS,
    TENSORS,
    TILES,
    WIDTH_CLASSES,
    channels_last,
    constexpr_values,
    efficiency,
    fits,
    grid,
    lanes,
    legal,
    legal_space,
    partials_fit,
    width_class,
    workspace_bytes,
)
from .conv_triton_depthwise_spec import split_for as _split_for
from .conv_triton_depthwise_spec import usual_tile as _usual_tile
from .conv_triton_spec import typed_signature

#: FP32 alone: 16-bit grouped problems of few channels a group take the implicit GEMM's packed
#: kernels (kernels/conv_triton_packed.py), several groups to a tensor-core tile; these direct
#: kernels, which waste no multiply-adds, stay the FP32 path (IEEE), and the packed tiles'
#: 2-8x redundant products would be FP32 FMAs there.
TYPES = ("FP32",)

#: The usual tiles: the depthwise family's, but in forward the tiles it had before its own
#: were measured (bench/depthwise_tiles.py times depthwise layers, not grouped ones).
GROUPED_TILES: dict[tuple[str, bool], dict[str, int]] = {
    **TILES, ("F", True): {"BLOCK_M": 16, "BLOCK_N": 64, "num_warps": 4},
    ("F", False): {"BLOCK_M": 128, "BLOCK_N": 8, "num_warps": 4}}


def usual_tile(direction: str, last: bool) -> dict[str, int]:
    """The direction's usual tile for the layout (GROUPED_TILES)."""
    return _usual_tile(direction, last, GROUPED_TILES)


#: Backward weights' default split in both layouts: the depthwise family's NCHW rule as it
#: was at that family's 64x8 tile (its channels-last one was fitted on depthwise layers alone,
#: whose programs are a filter row of one channel each; a grouped program reduces over a
#: group's channels too).
SPLIT_RULES: dict[bool, dict[str, int]] = {
    last: {"waves": 2, "most": 64, "least": 8} for last in (False, True)}
MAX_SPLIT = max(r["most"] for r in SPLIT_RULES.values())  # the largest default split


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int,
              last: bool = False) -> int:
    """Backward weights' SPLIT_K (SPLIT_RULES; the depthwise family's `split_for`)."""
    return _split_for(sizes, config, sms, last, SPLIT_RULES)


def shape_classes(direction: str, last: bool | None = None) -> tuple[int, ...]:
    """The object classes a package ships per tile: backward weights' width classes (the same
    in both layouts, `last`)."""
    return WIDTH_CLASSES if direction == "W" else (0,)


def shape_class(direction: str, sizes: Mapping[str, int], last: bool = False) -> int:
    """Backward weights' width class (BLOCK_S); 0 in the other directions (either layout)."""
    return width_class(sizes["S"]) if direction == "W" else 0

#: The most channels, and filters, a group may have. Beyond it the implicit GEMM's 16-wide
#: tiles are mostly real work (and from 16 they rank first on 16-bit problems).
MAX_PER_GROUP = 8

KERNEL = {"F": "grouped_conv", "B": "grouped_conv", "W": "grouped_conv_wrw"}
#: Memory-bound: no matrix instructions (conv_triton_spec's note).
NO_MATRIX_KERNELS = frozenset(KERNEL.values())
_GEOMETRY = (("stride_h", "i32"), ("stride_w", "i32"), ("pad_h", "i32"), ("pad_w", "i32"),
             ("dil_h", "i32"), ("dil_w", "i32"))
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "grouped_conv": (
        ("src_ptr", "ptr"), ("w_ptr", "ptr"), ("dst_ptr", "ptr"), ("C", "i32"), ("SPG", "i32"),
        ("DPG", "i32"), ("SH", "i32"), ("SW", "i32"), ("DH", "i32"), ("DW", "i32"),
        ("R", "i32"), ("S", "i32"), *_GEOMETRY, ("ssn", "i32"), ("ssc", "i32"),
        ("ssh", "i32"), ("ssw", "i32"), ("sdn", "i32"), ("sdc", "i32"), ("sdh", "i32"),
        ("sdw", "i32"), ("swg", "i32"), ("swd", "i32"), ("swj", "i32"), ("swr", "i32"),
        ("sws", "i32"), ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"),
        ("CHANNELS_LAST", "constexpr"), ("BACKWARD", "constexpr")),
    "grouped_conv_wrw": (
        ("x_ptr", "ptr"), ("y_ptr", "ptr"), ("w_ptr", "ptr"), ("ws_ptr", "ptr_fp32"),
        ("N", "i32"), ("C", "i32"), ("CPG", "i32"), ("KPG", "i32"), ("H", "i32"),
        ("W", "i32"), ("P", "i32"), ("Q", "i32"), ("S", "i32"), *_GEOMETRY, ("sxn", "i32"),
        ("sxc", "i32"), ("sxh", "i32"), ("sxw", "i32"), ("syn", "i32"), ("syc", "i32"),
        ("syh", "i32"), ("syw", "i32"), ("swk", "i32"), ("swc", "i32"), ("swr", "i32"),
        ("sws", "i32"), ("TAPS", "i32"), ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"),
        ("BLOCK_S", "constexpr"), ("CHANNELS_LAST", "constexpr")),
}
ALIGN16: dict[str, tuple[str, ...]] = {"grouped_conv": (), "grouped_conv_wrw": ()}


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
            ) -> bool:
    """Two or more groups of at most MAX_PER_GROUP channels and filters each, not depthwise
    (one of each), within the direct kernels' geometry (`fits`)."""
    z = sizes
    if z["G"] < 2 or (z["C"], z["K"]) == (1, 1):
        return False
    if not (1 <= z["C"] <= MAX_PER_GROUP and 1 <= z["K"] <= MAX_PER_GROUP):
        return False
    return fits(sizes, strides, MAX_SPLIT)


def arg_values(direction: str, sizes: Mapping[str, int],
               strides: Mapping[str, tuple[int, int, int, int]]) -> dict[str, int]:
    """The i32 arguments of the direction's kernel. Forward: a destination channel is a
    filter d of group d // K, reducing over the group's C channels (weight (d, m) at
    d * swk + m * swc); backward data: a channel d of group d // C, reducing over the group's
    K filters (weight (g * K + m, d % C) at g * K * swk + (d % C) * swc + m * swk)."""
    z = sizes
    x, w, y = strides["x"], strides["w"], strides["y"]
    geometry = {k: z[k] for k in ("stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w")}
    if direction == "W":
        return {"N": z["N"], "C": lanes("W", z), "CPG": z["C"], "KPG": z["K"], "H": z["H"],
                "W": z["W"], "P": z["P"], "Q": z["Q"], "S": z["S"], **geometry,
                "sxn": x[0], "sxc": x[1], "sxh": x[2], "sxw": x[3], "syn": y[0],
                "syc": y[1], "syh": y[2], "syw": y[3], "swk": w[0], "swc": w[1], "swr": w[2],
                "sws": w[3], "TAPS": z["R"] * z["S"]}
    forward = direction == "F"
    src, dst = (x, y) if forward else (y, x)
    src_hw, dst_hw = ((z["H"], z["W"]), (z["P"], z["Q"])) if forward else \
        ((z["P"], z["Q"]), (z["H"], z["W"]))
    spg, dpg = (z["C"], z["K"]) if forward else (z["K"], z["C"])
    return {"C": lanes(direction, z), "SPG": spg, "DPG": dpg, "SH": src_hw[0],
            "SW": src_hw[1], "DH": dst_hw[0], "DW": dst_hw[1], "R": z["R"], "S": z["S"],
            **geometry, "ssn": src[0], "ssc": src[1], "ssh": src[2], "ssw": src[3],
            "sdn": dst[0], "sdc": dst[1], "sdh": dst[2], "sdw": dst[3],
            "swg": z["K"] * w[0], "swd": w[0] if forward else w[1],
            "swj": w[1] if forward else w[0], "swr": w[2], "sws": w[3]}


def meets_align16(direction: str, args: Mapping[str, int], dtype: str | None = None
                  ) -> bool:
    """No grouped object assumes alignment (ALIGN16 is empty)."""
    return False


def signature(direction: str, dtype: str, config: Mapping[str, int], last: bool,
              width: int = 0) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object; `width` is backward weights' BLOCK_S."""
    return typed_signature(ARGS[KERNEL[direction]], dtype,
                           constexpr_values(direction, config, last, width))
