"""What a launch of the 3-D depthwise kernels (`depthwise_conv3d`, `depthwise_conv3d_wrw` in
kernels/conv_triton_depthwise.py) needs, as plain data.

Standard library only, so the runtime reads it without Triton. The kernels take 3-D depthwise
problems (groups = input channels = output channels: the channel-separated convolutions of
X3D, CSN and MoViNet), filters up to MAX_FILTER on every axis, strides up to MAX_STRIDE, any
padding and dilation. Sizes are the 3-D ones (`Z`, `P`, `Q` the output's depth, height and
width, `D`, `H`, `W` the input's, `T`, `R`, `S` the filter's; C and K per group, both 1),
strides in elements in (n, c, d, h, w) / (k, c, t, r, s) / (n, k, d, h, w) order.

The programs are the 2-D depthwise kernels' with a depth axis: forward and backward data own
pixels x channels of one destination depth slice and walk the depth taps at run time around
the unrolled 2-D ones (a 3x3 filter plane, UNROLLED_FILTERS; other planes at run time);
backward weights own a filter row (t, r) and cut the N * Z * P * Q reduction into SPLIT_K
parts whose FP32 partials the implicit GEMM's reduce kernel sums. Tiles, the legal space,
the split rule and the alignment assumption are the 2-D family's
(conv_triton_depthwise_spec), none of them measured on a 3-D layer yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_depthwise_spec import (  # noqa: F401  (the family's launch data: re-exported)
    GRID_YZ_MAX,
    KINDS,
    MAX_FILTER,
    MAX_STRIDE,
    PAIR_DIVISOR,
    PAIR_FILTERS,
    PHASED,
    PHASED_FILTERS,
    SPLIT_RULES,
    SPLITS,
    TENSORS,
    TILES,
    TYPES,
    WIDTH_CLASSES,
    align_divisor,
    alignment,
    alignment_levels,
    kind_tile,
    legal,
    legal_space,
    usual_tile,
    width_class,
)
from .conv_triton_spec import cdiv, filling_split, typed_signature

KERNEL = {"F": "depthwise_conv3d", "B": "depthwise_conv3d", "W": "depthwise_conv3d_wrw"}
#: Memory-bound: neither kernel runs a matrix instruction.
NO_MATRIX_KERNELS = frozenset(KERNEL.values())
_AXES = ("d", "h", "w")
_GEOMETRY = tuple((f"{name}_{a}", "i32") for name in ("stride", "pad", "dil") for a in _AXES)
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "depthwise_conv3d": (
        ("src_ptr", "ptr"), ("w_ptr", "ptr"), ("dst_ptr", "ptr"), ("C", "i32"), ("SD", "i32"),
        ("SH", "i32"), ("SW", "i32"), ("DD", "i32"), ("DH", "i32"), ("DW", "i32"),
        ("T", "i32"), ("R", "i32"), ("S", "i32"), *_GEOMETRY,
        *((f"ss{a}", "i32") for a in "ncdhw"), *((f"sd{a}", "i32") for a in "ncdhw"),
        ("swc", "i32"), ("swt", "i32"), ("swr", "i32"), ("sws", "i32"),
        ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("CHANNELS_LAST", "constexpr"),
        ("BACKWARD", "constexpr"), ("TAPS_R", "constexpr"), ("TAPS_S", "constexpr"),
        ("PHASES", "constexpr")),
    "depthwise_conv3d_wrw": (
        ("x_ptr", "ptr"), ("y_ptr", "ptr"), ("w_ptr", "ptr"), ("ws_ptr", "ptr_fp32"),
        ("N", "i32"), ("C", "i32"), ("D", "i32"), ("H", "i32"), ("W", "i32"), ("Z", "i32"),
        ("P", "i32"), ("Q", "i32"), ("R", "i32"), ("S", "i32"), *_GEOMETRY,
        *((f"sx{a}", "i32") for a in "ncdhw"), *((f"sy{a}", "i32") for a in "ncdhw"),
        ("swc", "i32"), ("swt", "i32"), ("swr", "i32"), ("sws", "i32"), ("TAPS", "i32"),
        ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("BLOCK_S", "constexpr"),
        ("CHANNELS_LAST", "constexpr")),
}
#: i32 arguments an aligned channels-last object assumes multiples of `align_divisor`: the
#: channels and the activations' image, depth, row and pixel strides.
ALIGN16: dict[str, tuple[str, ...]] = {
    "depthwise_conv3d": ("C", *(f"s{t}{a}" for t in "sd" for a in "ndhw")),
    "depthwise_conv3d_wrw": ("C", *(f"s{t}{a}" for t in "xy" for a in "ndhw")),
}
#: The filter planes whose forward and backward-data objects unroll their taps (TAPS_R x
#: TAPS_S; the depth taps stay a run-time loop): X3D's and CSN's 3x3x3 (and 1x3x3); other
#: planes (MoViNet's 5x5, a temporal 5x1x1) take R and S at run time. A package ships 54
#: objects a matrix-core target (3 types; NDHWC with and without alignment and NCDHW; the
#: unrolled plane and the run-time one, backward weights' two width classes); a class more
#: would be 18.
UNROLLED_FILTERS = ((3, 3),)
#: Channels-last backward data at plane stride 2 and plane dilation 1 of these planes takes
#: objects whose programs own one stride phase of a destination slice (shape class PHASED +
#: R * 10 + S; the 2-D family's phased taps, `conv_triton_depthwise._phase_taps`, under each
#: depth tap): X3D's 3x3x3 layers at stride (1, 2, 2). In sm90 SASS a depth tap's body
#: runs 0.54 of the raster object's instructions on 54 and 108 channels (20 loads against
#: 45) and 0.62 on 216 and 432 (8 against 18; bench/results/depthwise_phased_sass_3d-sm90
#: .json). Not timed against the raster objects; with them X3D-S's depthwise backward data
#: NDHWC took 0.23x cuDNN (bench/results/zoo_h200-dw-b-fa47541.md, FP16, batch 32).
PHASED_PLANES = tuple(f for f in UNROLLED_FILTERS if f in PHASED_FILTERS)


def lanes(direction: str, sizes: Mapping[str, int]) -> int:
    """The channels a program's BLOCK_N splits: G in every direction (depthwise)."""
    return int(sizes["G"])


def channels_last(strides: Mapping[str, tuple[int, ...]]) -> bool:
    """Both activations have a unit channel stride (NDHWC)."""
    return strides["x"][1] == 1 and strides["y"][1] == 1


def _images(direction: str, sizes: Mapping[str, int]) -> int:
    """Forward and backward data: the destination's depth slices of every image (grid axis
    2)."""
    return int(sizes["N"]) * int(sizes["Z"] if direction == "F" else sizes["D"])


def partials_fit(sizes: Mapping[str, int], split: int) -> bool:
    """Backward weights' FP32 partials in `split` parts have 32-bit offsets."""
    return int(split) * int(sizes["G"]) * sizes["T"] * sizes["R"] * sizes["S"] < 2**31


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, ...]]) -> bool:
    """A 3-D depthwise problem (one input and one output channel a group, two or more groups)
    within the kernels' geometry: filters up to MAX_FILTER and strides up to MAX_STRIDE on
    every axis, dilation at least 1, padding not negative, grids within the y and z limits,
    32-bit offsets (the partials at the largest default split), and weights whose filter
    rows follow each other (swt = R * swr: the reduce kernel sums (t, r) as one row axis)."""
    z = sizes
    if (z["C"], z["K"]) != (1, 1) or z["G"] < 2:
        return False
    for a in _AXES:
        if not 1 <= z[f"stride_{a}"] <= MAX_STRIDE or z[f"dil_{a}"] < 1 or z[f"pad_{a}"] < 0:
            return False
    if not all(1 <= z[f] <= MAX_FILTER for f in ("T", "R", "S")):
        return False
    if min(z[d] for d in ("N", "D", "H", "W", "Z", "P", "Q")) < 1:
        return False
    if max(_images("F", z), _images("B", z)) > GRID_YZ_MAX or \
            cdiv(z["G"], 2) > GRID_YZ_MAX or z["T"] * z["R"] > GRID_YZ_MAX:
        return False
    w = strides["w"]
    if w[2] != z["R"] * w[3] or not partials_fit(z, max(r["most"] for r in SPLIT_RULES.values())):
        return False
    g = z["G"]
    largest = max(z["N"] * g * z["D"] * z["H"] * z["W"], z["N"] * g * z["Z"] * z["P"] * z["Q"])
    spans = [sum((d - 1) * abs(s) for d, s in zip(dims, strides[t], strict=True))
             for t, dims in (("x", (z["N"], g, z["D"], z["H"], z["W"])),
                             ("y", (z["N"], g, z["Z"], z["P"], z["Q"])),
                             ("w", (g, 1, z["T"], z["R"], z["S"])))]
    return largest < 2**31 and max(spans) < 2**31


def arg_values(direction: str, sizes: Mapping[str, int],
               strides: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """The i32 arguments of the direction's kernel."""
    z = sizes
    x, w, y = strides["x"], strides["w"], strides["y"]
    geometry = {f"{n}_{a}": z[f"{n}_{a}"] for n in ("stride", "pad", "dil") for a in _AXES}
    weights = {"swc": w[0], "swt": w[2], "swr": w[3], "sws": w[4]}
    if direction == "W":
        return {"N": z["N"], "C": lanes(direction, z), "D": z["D"], "H": z["H"], "W": z["W"],
                "Z": z["Z"], "P": z["P"], "Q": z["Q"], "R": z["R"], "S": z["S"], **geometry,
                **{f"sx{a}": x[i] for i, a in enumerate("ncdhw")},
                **{f"sy{a}": y[i] for i, a in enumerate("ncdhw")}, **weights,
                "TAPS": z["T"] * z["R"] * z["S"]}
    src, dst = (x, y) if direction == "F" else (y, x)
    src_dhw, dst_dhw = (z["D"], z["H"], z["W"]), (z["Z"], z["P"], z["Q"])
    if direction == "B":  # dy is read, dx written
        src_dhw, dst_dhw = dst_dhw, src_dhw
    return {"C": lanes(direction, z), "SD": src_dhw[0], "SH": src_dhw[1], "SW": src_dhw[2],
            "DD": dst_dhw[0], "DH": dst_dhw[1], "DW": dst_dhw[2], "T": z["T"], "R": z["R"],
            "S": z["S"], **geometry, **{f"ss{a}": src[i] for i, a in enumerate("ncdhw")},
            **{f"sd{a}": dst[i] for i, a in enumerate("ncdhw")}, **weights}


def meets_align16(direction: str, args: Mapping[str, int], dtype: str | None = None) -> bool:
    """Whether a problem's arguments meet an aligned object's assumption (`align_divisor` of
    its type); the caller checks the pointers."""
    divisor = align_divisor(dtype)
    return all(int(args[a]) % divisor == 0 for a in ALIGN16[KERNEL[direction]])


def grid(direction: str, sizes: Mapping[str, int], config: Mapping[str, int],
         width: int = 0) -> tuple[int, int, int]:
    """Forward and backward data: (destination pixel blocks of a slice, channel blocks,
    images x destination depth); backward weights: (channel blocks, filter rows T * R,
    parts). A phased object (`width` from PHASED): (the largest phase's pixel blocks,
    channel blocks, images x destination depth x 4 phases)."""
    z = sizes
    blocks_c = cdiv(lanes(direction, z), config["BLOCK_N"])
    if direction == "W":
        return blocks_c, z["T"] * z["R"], int(config.get("SPLIT_K", 1))
    if direction == "B" and width >= PHASED:
        return (cdiv(cdiv(z["H"], 2) * cdiv(z["W"], 2), config["BLOCK_M"]), blocks_c,
                _images(direction, z) * 4)
    pixels = z["P"] * z["Q"] if direction == "F" else z["H"] * z["W"]
    return cdiv(pixels, config["BLOCK_M"]), blocks_c, _images(direction, z)


def shape_classes(direction: str, last: bool | None = None) -> tuple[int, ...]:
    """The object classes a package ships per tile (`shape_class`) of a layout (`last`:
    channels-last; None, both)."""
    if direction == "W":
        return WIDTH_CLASSES
    phased_ = tuple(PHASED + r * 10 + s for r, s in PHASED_PLANES) \
        if direction == "B" and last is not False else ()
    return (0, *(r * 10 + s for r, s in UNROLLED_FILTERS), *phased_)


def phased(sizes: Mapping[str, int], last: bool) -> bool:
    """Whether a backward-data problem takes the phased objects (PHASED_PLANES)."""
    z = sizes
    return bool(last) and (z["stride_h"], z["stride_w"], z["dil_h"], z["dil_w"]) == \
        (2, 2, 1, 1) and (z["R"], z["S"]) in PHASED_PLANES and \
        _images("B", z) * 4 <= GRID_YZ_MAX


def pair_classes(direction: str, last: bool) -> tuple[int, ...]:
    """The shape classes whose channels-last objects also ship pair-aligned (the 2-D
    spec's PAIR_FILTERS, as planes): forward's and backward data's unrolled planes among
    them, backward weights' width classes of their widths."""
    if not last:
        return ()
    if direction == "W":
        return tuple(sorted({width_class(s) for _, s in PAIR_FILTERS}))
    phased_ = [PHASED + r * 10 + s for r, s in PAIR_FILTERS if (r, s) in PHASED_PLANES] \
        if direction == "B" else []
    return (*(r * 10 + s for r, s in PAIR_FILTERS if (r, s) in UNROLLED_FILTERS), *phased_)


def shape_class(direction: str, sizes: Mapping[str, int], last: bool = False) -> int:
    """Backward weights' width class (BLOCK_S); forward's and backward data's filter plane
    R * 10 + S where UNROLLED_FILTERS holds it, else 0 (R and S at run time), plus PHASED
    where backward data is `phased` (`last`: the problem is channels-last)."""
    if direction == "W":
        return width_class(sizes["S"])
    if direction == "B" and phased(sizes, last):
        return PHASED + int(sizes["R"]) * 10 + int(sizes["S"])
    if (sizes["R"], sizes["S"]) in UNROLLED_FILTERS:
        return int(sizes["R"]) * 10 + int(sizes["S"])
    return 0


def signature(direction: str, dtype: str, config: Mapping[str, int], last: bool,
              width: int = 0) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object for `triton.compiler.ASTSource`; `width` is its
    `shape_class`."""
    return typed_signature(ARGS[KERNEL[direction]], dtype,
                           constexpr_values(direction, config, last, width))


def constexpr_values(direction: str, config: Mapping[str, int], last: bool, width: int
                     ) -> dict[str, int]:
    """Every constexpr the kernels may take (a kernel's ARGS pick theirs)."""
    taps = width % PHASED if direction in ("F", "B") else 0
    return {"BLOCK_M": int(config["BLOCK_M"]), "BLOCK_N": int(config["BLOCK_N"]),
            "BLOCK_S": int(width) if direction == "W" else 0, "CHANNELS_LAST": int(last),
            "BACKWARD": int(direction == "B"), "TAPS_R": taps // 10, "TAPS_S": taps % 10,
            "PHASES": 2 if direction == "B" and width >= PHASED else 0}


def tile_for(direction: str, last: bool, sizes: Mapping[str, int], sms: int,
             kind: str | None = None) -> dict[str, int]:
    """A problem's tile on a target kind: the 2-D family's usual tile (`kind_tile`); its
    large channels-last forward tile, measured on 2-D layers alone, is not shipped here."""
    return kind_tile(direction, usual_tile(direction, last), kind)


def tiles_of(direction: str, last: bool, kind: str | None = None) -> list[dict[str, int]]:
    """Every tile `tile_for` may give on a kind (the package ships each)."""
    return [tile_for(direction, last, {}, 0, kind)]


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int,
              last: bool = False) -> int:
    """Backward weights' SPLIT_K by the 2-D family's rule for the layout (SPLIT_RULES) over
    the N * Z * P * Q reduction."""
    programs = grid("W", sizes, {**config, "SPLIT_K": 1})
    steps = cdiv(sizes["N"] * sizes["Z"] * sizes["P"] * sizes["Q"], config["BLOCK_M"])
    rule = SPLIT_RULES[bool(last)]
    return filling_split(programs[0] * programs[1], steps, sms, rule["least"], rule["most"],
                         rule["waves"])


def workspace_bytes(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
                    ) -> int:
    """Backward weights split in parts: an FP32 partial of dw per part."""
    split = int(config.get("SPLIT_K", 1))
    if direction != "W" or split <= 1:
        return 0
    return split * int(sizes["G"]) * sizes["T"] * sizes["R"] * sizes["S"] * 4


def efficiency(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The fraction of the launched tile elements that are real (pixels x channels)."""
    z = sizes
    pixels = z["N"] * z["Z"] * z["P"] * z["Q"] if direction == "W" else \
        (z["P"] * z["Q"] if direction == "F" else z["H"] * z["W"])
    out = 1.0
    for dim, block in ((pixels, config["BLOCK_M"]), (lanes(direction, z), config["BLOCK_N"])):
        dim = max(int(dim), 1)
        out *= dim / (cdiv(dim, int(block)) * int(block))
    return out
