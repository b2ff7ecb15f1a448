"""What a launch of the depthwise kernels (kernels/conv_triton_depthwise.py) needs, as plain data.

Standard library only (and `conv_triton_spec`), so the runtime reads it without Triton. Sizes
are those of `conv_triton_spec` (C and K per group, both 1 here; G the channels), strides in
elements in (n, c, h, w) / (k, c, r, s) / (n, k, h, w) order, whatever the layout.

The kernels take depthwise problems: groups = input channels = output channels (a channel
multiplier of 1), filters up to MAX_FILTER x MAX_FILTER, strides up to MAX_STRIDE, any padding
and dilation. Every object is shape-agnostic; one serves every such problem of its direction,
type and layout (CHANNELS_LAST: both activations have a unit channel stride) at its tile.

Tunables are the implicit GEMM's seven, in PerfDb order: BLOCK_M (pixels per program; in
backward weights, output positions per step of the reduction), BLOCK_N (channels per
program), SPLIT_K (backward weights alone: parts of the N * P * Q reduction, each a program
column; the reduce kernel sums their partials), num_warps; BLOCK_K, GROUP_M and num_stages
have no use here and are 1. An "aligned" channels-last object assumes 16-byte aligned pointers
and every ALIGN16 argument a multiple of the elements of 16 bytes (`align_divisor`,
`meets_align16`): its channel loads are then 16-byte vectors. A channels-last object of
PAIR_FILTERS also ships assuming multiples of PAIR_DIVISOR (pairs of channels: 4-byte loads in
16-bit types, 8-byte in FP32); other problems take the variant compiled without (`alignment`
names a problem's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import ELEMENT_BYTES, cdiv, filling_split, typed_signature

#: Target kinds (conv_triton_spec.target_kind) the solvers apply on: every kind the other
#: Triton families know. The kernels use no matrix instruction, so nothing is kind-specific.
KINDS = ("sm80", "sm90", "sm100", "sm120", "cdna", "cdna4", "rdna")
TYPES = ("FP16", "BF16", "FP32")
MAX_FILTER = 7
MAX_STRIDE = 2
GRID_YZ_MAX = 65535

KERNEL = {"F": "depthwise_conv", "B": "depthwise_conv", "W": "depthwise_conv_wrw"}
#: Memory-bound: none of the kernels runs a matrix instruction (conv_triton_spec's note).
NO_MATRIX_KERNELS = frozenset(KERNEL.values())
_TILE = (("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("CHANNELS_LAST", "constexpr"))
_GEOMETRY = (("stride_h", "i32"), ("stride_w", "i32"), ("pad_h", "i32"), ("pad_w", "i32"),
             ("dil_h", "i32"), ("dil_w", "i32"))
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "depthwise_conv": (
        ("src_ptr", "ptr"), ("w_ptr", "ptr"), ("dst_ptr", "ptr"), ("C", "i32"), ("SH", "i32"),
        ("SW", "i32"), ("DH", "i32"), ("DW", "i32"), ("R", "i32"), ("S", "i32"), *_GEOMETRY,
        ("ssn", "i32"), ("ssc", "i32"), ("ssh", "i32"), ("ssw", "i32"), ("sdn", "i32"),
        ("sdc", "i32"), ("sdh", "i32"), ("sdw", "i32"), ("swc", "i32"), ("swr", "i32"),
        ("sws", "i32"), *_TILE, ("BACKWARD", "constexpr"), ("TAPS_R", "constexpr"),
        ("TAPS_S", "constexpr"), ("PHASES", "constexpr")),
    "depthwise_conv_wrw": (
        ("x_ptr", "ptr"), ("y_ptr", "ptr"), ("w_ptr", "ptr"), ("ws_ptr", "ptr_fp32"),
        ("N", "i32"), ("C", "i32"), ("H", "i32"), ("W", "i32"), ("P", "i32"), ("Q", "i32"),
        ("S", "i32"), *_GEOMETRY, ("sxn", "i32"), ("sxc", "i32"), ("sxh", "i32"),
        ("sxw", "i32"), ("syn", "i32"), ("syc", "i32"), ("syh", "i32"), ("syw", "i32"),
        ("swc", "i32"), ("swr", "i32"), ("sws", "i32"), ("TAPS", "i32"),
        ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("BLOCK_S", "constexpr"),
        ("CHANNELS_LAST", "constexpr")),
}
#: Backward weights sum a whole filter row at once: BLOCK_S, the row's width class (the
#: smallest of these at least S), is part of the object, so a package ships one per class.
WIDTH_CLASSES = (4, 8)
#: Forward and backward-data filters whose objects are compiled for them (TAPS_R x TAPS_S): up
#: to 25 taps unrolled, a program issues every tap's load at once (backward data in run-time
#: loops waited on one tap's load at a time: 1.49 -> 1.08 of cuDNN in NCHW and 2.93 -> 2.52 in
#: NHWC on the zoo's sampled depthwise layers, bench/results/zoo_compare_dw-b-f2b3b54.json);
#: in forward the best tile took 0.73-1.01x cuDNN's
#: GPU time at batch 1 against 1.02-1.66x with the taps in run-time loops
#: (bench/depthwise_tiles.py, H100, 34 layers of four networks: 3x3 and 5x5). 7x7 unrolls a
#: row's seven taps and loops over the rows (conv_triton_depthwise.UNROLL_MAX_TAPS): all 49
#: at once took 2.9-3.4 s of compile an object against 0.4-0.5 s (bench/compile_cost.py) and
#: spilled on wave32 targets; no 7x7 layer has been timed yet. Other filters take the object
#: whose R and S are arguments.
UNROLLED_FILTERS = ((3, 3), (5, 5), (7, 7))
#: Channels-last backward data at stride 2 and dilation 1 of these filters takes objects whose
#: programs own one stride phase's pixels (`conv_triton_depthwise.depthwise_bwd_phased`;
#: shape class PHASED + R * 10 + S): only the quarter of the taps that reach a phase is
#: issued, at a fixed offset into dy, where the raster-order objects issue every tap with a
#: mask off the stride's lattice and a division per pixel (25 loads a pixel at 5x5 for 6.25
#: that count). On the H200 the zoo's depthwise backward data NHWC took 2.09x cuDNN over its
#: sampled layers, and the 5x5 stride-2 ones of MobileNet-v3 and MnasNet 6.45x
#: (bench/results/zoo_h200-dw-fb-b29a063.md, zoo_h200-dw-b-f2b3b54.md). In sm90 SASS a
#: program at the same tile runs 0.51 (3x3) and 0.40 (5x5) of the instructions, 0.44 and 0.36
#: of the loads (bench/results/depthwise_phased_sass-sm90.json); on the H200 the FP16 stride-2
#: layers took 0.57x cuDNN against 3.07x before (with the 8x32 tile since; the stride-1 ones
#: 2.39 -> 1.08: zoo_h200-dw-b-fa47541 against zoo_h200-dw-b-f2b3b54). Channel-planar
#: layouts keep the raster objects (a phase's stores would be every other element of dx's
#: rows).
PHASED_FILTERS = UNROLLED_FILTERS
PHASED = 200
#: Channels-last objects of these filters also ship assuming the ALIGN16 arguments multiples
#: of PAIR_DIVISOR (`pair_classes`), for layers whose channels are even but not a multiple of
#: what `align_divisor` asks (ShuffleNet-v2's 58 and 116, X3D's 54 and 108 in 16-bit types;
#: 58 and 54 in FP32): their channel loads are then pairs (4 or 8 bytes) where the unaligned
#: object loads elements one at a time. In sm90 SASS a 58-channel FP16 forward 3x3 program
#: takes 808 instructions, 45 loads and 80 registers against 1,344, 81 and 159; backward data
#: 1,264 against 2,048; backward weights 10 loads against 20; in FP32 forward 704
#: instructions and 45 loads against 1,248 and 81 (bench/results/depthwise_align_sass-sm90
#: .json). On the H200 ShuffleNet's 58 and 116 channels took 0.53-0.67 of the unaligned
#: objects' GPU time in 16-bit types, X3D's 54 and 108 0.67-0.74 per case
#: (bench/results/depthwise_align_h200-fa47541.json). 3x3 alone: the zoo's depthwise layers of
#: such channels are all 3x3.
PAIR_FILTERS = ((3, 3),)
PAIR_DIVISOR = 2
#: The tensor (x, w, y of the convolution, or the workspace) each pointer is, per direction.
TENSORS: dict[str, dict[str, str]] = {
    "F": {"src_ptr": "x", "w_ptr": "w", "dst_ptr": "y"},
    "B": {"src_ptr": "y", "w_ptr": "w", "dst_ptr": "x"},
    "W": {"x_ptr": "x", "y_ptr": "y", "w_ptr": "w", "ws_ptr": "ws"},
}
#: i32 arguments a channels-last aligned object assumes multiples of 16, per kernel: the
#: channels and the activations' pixel and image strides (the weights are read a channel at
#: a time R * S apart, so no vector assumption holds there).
ALIGN16: dict[str, tuple[str, ...]] = {
    "depthwise_conv": ("C", "ssn", "ssh", "ssw", "sdn", "sdh", "sdw"),
    "depthwise_conv_wrw": ("C", "sxn", "sxh", "sxw", "syn", "syh", "syw"),
}

#: The usual tile (BLOCK_M, BLOCK_N, num_warps) by direction and layout (channels-last or
#: not): channels-last tiles are wide along the contiguous channels, the others along pixels.
#: Forward: the unrolled tile with the lowest geomean against cuDNN over batches 1 and 32 of
#: bench/depthwise_tiles.py (H100; NHWC 8x16 1.23x in FP16 and 1.25x in FP32, the earlier
#: 16x64 1.49-3.35x; NCHW 64x2 0.98x and 0.81x, the earlier 128x8 1.24-2.05x). Channels-last
#: backward data: 8x32 on one warp, the best of seven tiles over the zoo's depthwise layers at
#: batch 32 (1.12x cuDNN's GPU time against 2.03x for the earlier 16x64 on four warps,
#: bench/results/tile_survey_dw_b_nhwc_h200.json) and at batches 1 and 8 (0.92x and 0.95x
#: against 1.15x and 1.59x, dw_small_batch_b_h200.json). Backward weights NCHW: 128 output
#: positions a step by 4 channels, the best of seven tiles over the zoo's depthwise layers at
#: batch 32 on the H200 at the split the earlier 64x8 took (1.28x cuDNN's GPU time against
#: 1.72x, faster on all 66 layers: bench/results/tile_survey_dw_w_nchw_h200.json; SPLIT_RULES
#: gives that split at this tile); channels-last, 16x32 stayed the best of seven
#: (tile_survey_dw_w_nhwc_h200.json). The others chosen from the kernels' shape (128-thread
#: programs, 8-16 elements a thread, a warp's loads along the contiguous axis).
TILES: dict[tuple[str, bool], dict[str, int]] = {
    ("F", True): {"BLOCK_M": 8, "BLOCK_N": 16, "num_warps": 1},
    ("F", False): {"BLOCK_M": 64, "BLOCK_N": 2, "num_warps": 1},
    ("B", True): {"BLOCK_M": 8, "BLOCK_N": 32, "num_warps": 1},
    ("B", False): {"BLOCK_M": 128, "BLOCK_N": 8, "num_warps": 4},
    ("W", True): {"BLOCK_M": 16, "BLOCK_N": 32, "num_warps": 4},
    ("W", False): {"BLOCK_M": 128, "BLOCK_N": 4, "num_warps": 4},
}
#: Channels-last forward launches that have at least LARGE_PROGRAMS_PER_SM programs an SM at
#: this tile take it instead of the usual one (`tile_for`): over the zoo's depthwise layers at
#: batch 32 on the H200 it took 0.73 of the usual tile's GPU time, 1.13x cuDNN's against
#: 1.55x, the best of eight tiles on 50 of the 66 layers
#: (bench/results/tile_survey_dw_f_nhwc_h200.json); at batches 1 and 8, where most launches
#: are a few programs an SM, the rule took 0.58x and 0.87x cuDNN's time, the usual tile alone
#: 0.60x and 1.08x, this one alone 0.64x and 0.87x (dw_small_batch_f_h200.json).
LARGE_TILES: dict[tuple[str, bool], dict[str, int]] = {
    ("F", True): {"BLOCK_M": 8, "BLOCK_N": 32, "num_warps": 1},
}
LARGE_PROGRAMS_PER_SM = 8
#: The legal space: tiles of at most MAX_ELEMENTS elements and at least one a thread
#: (backward weights: BLOCK_M x BLOCK_S x BLOCK_N, counted at the largest width class).
BLOCKS_M = (8, 16, 32, 64, 128, 256)
BLOCKS_N = (2, 4, 8, 16, 32, 64, 128)
WARPS = (1, 2, 4, 8)
MAX_ELEMENTS = 8192
SPLITS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: Backward weights' default split per layout (`split_for`; keyed by CHANNELS_LAST): doubled
#: from 1 while the launch stays within `waves` waves of programs and each part keeps `least`
#: BLOCK_M steps, at most `most` parts. Channels-last: fitted over the zoo's depthwise layers
#: at batch 32 on the H200 (bench/depthwise_wrw_split.py --fit), its picks 1.88x cuDNN's GPU
#: time against 3.09x for the NCHW rule on the 39 fitted rows, 1.49x against 2.22x on the 12
#: held-out ones (bench/results/dw_wrw_split_h200.json): a program sums one filter row over
#: BLOCK_N channels, so a layer of a few hundred channels is a few dozen programs until its
#: N * P * Q reduction is cut fine. NCHW: the same sweep found no rule better than two waves
#: and 8 steps at the 64x8 tile; at the 128x4 tile (twice the columns, half the steps) these
#: values give the same splits.
SPLIT_RULES: dict[bool, dict[str, int]] = {
    False: {"waves": 4, "most": 64, "least": 4},
    True: {"waves": 32, "most": 512, "least": 4},
}
MAX_SPLIT = max(r["most"] for r in SPLIT_RULES.values())  # the largest default split


def lanes(direction: str, sizes: Mapping[str, int]) -> int:
    """The lanes a direction's programs split into blocks of BLOCK_N: the destination's
    channels (forward G * K, backward data G * C) or, in backward weights, the weights'
    (filter, channel) pairs G * K * C; G for a depthwise problem in every direction."""
    z = sizes
    per_group = {"F": z["K"], "B": z["C"], "W": z["K"] * z["C"]}[direction]
    return int(z["G"]) * int(per_group)


def channels_last(strides: Mapping[str, tuple[int, int, int, int]]) -> bool:
    """Both activations have a unit channel stride (NHWC)."""
    return strides["x"][1] == 1 and strides["y"][1] == 1


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]]
            ) -> bool:
    """Depthwise (one input and one output channel a group, two or more groups) within the
    direct kernels' geometry (`fits`)."""
    if (sizes["C"], sizes["K"]) != (1, 1) or sizes["G"] < 2:
        return False
    return fits(sizes, strides)


def partials_fit(sizes: Mapping[str, int], split: int) -> bool:
    """Backward weights' FP32 partials in `split` parts have 32-bit offsets."""
    return int(split) * lanes("W", sizes) * sizes["R"] * sizes["S"] < 2**31


def fits(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, int, int, int]],
         most: int = MAX_SPLIT) -> bool:
    """The geometry the direct kernels take (the depthwise and grouped families alike):
    filters up to MAX_FILTER, strides up to MAX_STRIDE, dilation at least 1, 32-bit offsets
    (the partials at the largest default split, `most`) and a grid within the y and z
    limits."""
    z = sizes
    if not (1 <= z["R"] <= MAX_FILTER and 1 <= z["S"] <= MAX_FILTER):
        return False
    if not (1 <= z["stride_h"] <= MAX_STRIDE and 1 <= z["stride_w"] <= MAX_STRIDE):
        return False
    if min(z["dil_h"], z["dil_w"]) < 1 or min(z["pad_h"], z["pad_w"]) < 0:
        return False
    if min(z["P"], z["Q"], z["H"], z["W"], z["N"]) < 1 or z["N"] > GRID_YZ_MAX:
        return False
    if cdiv(max(lanes("F", z), lanes("B", z)), min(BLOCKS_N)) > GRID_YZ_MAX:
        return False
    c, k = z["G"] * z["C"], z["G"] * z["K"]
    if not partials_fit(z, most):
        return False
    largest = max(z["N"] * c * z["H"] * z["W"], z["N"] * k * z["P"] * z["Q"])
    spans = [sum((d - 1) * abs(s) for d, s in zip(dims, strides[t], strict=True))
             for t, dims in (("x", (z["N"], c, z["H"], z["W"])),
                             ("y", (z["N"], k, z["P"], z["Q"])),
                             ("w", (k, z["C"], z["R"], z["S"])))]
    return largest < 2**31 and max(spans) < 2**31


def arg_values(direction: str, sizes: Mapping[str, int],
               strides: Mapping[str, tuple[int, int, int, int]]) -> dict[str, int]:
    """The i32 arguments of the direction's kernel."""
    z = sizes
    x, w, y = strides["x"], strides["w"], strides["y"]
    geometry = {k: z[k] for k in ("stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w")}
    weights = {"swc": w[0], "swr": w[2], "sws": w[3]}
    if direction == "W":
        return {"N": z["N"], "C": lanes(direction, z), "H": z["H"], "W": z["W"], "P": z["P"],
                "Q": z["Q"], "S": z["S"], **geometry, "sxn": x[0], "sxc": x[1], "sxh": x[2],
                "sxw": x[3], "syn": y[0], "syc": y[1], "syh": y[2], "syw": y[3], **weights,
                "TAPS": z["R"] * z["S"]}
    src, dst = (x, y) if direction == "F" else (y, x)
    src_hw, dst_hw = (z["H"], z["W"]), (z["P"], z["Q"])
    if direction == "B":  # dy is read, dx written
        src_hw, dst_hw = dst_hw, src_hw
    return {"C": lanes(direction, z), "SH": src_hw[0], "SW": src_hw[1], "DH": dst_hw[0],
            "DW": dst_hw[1], "R": z["R"], "S": z["S"], **geometry,
            "ssn": src[0], "ssc": src[1], "ssh": src[2], "ssw": src[3],
            "sdn": dst[0], "sdc": dst[1], "sdh": dst[2], "sdw": dst[3], **weights}


def align_divisor(dtype: str | None) -> int:
    """What an aligned (channels-last) object assumes each ALIGN16 argument a multiple of: the
    elements of 16 bytes, 8 for a 16-bit type and 4 for FP32, whose channel loads are then
    16-byte vectors (the zoo's depthwise layers of 24, 40, 72, 120, 200 or 232 channels are
    multiples of 8, not 16). FP32 objects assumed 16 before: at 64 channels their sm90 SASS is
    the same instructions assuming 4, and a 72-channel layer's forward 3x3 object loads 27
    times a program where the unaligned one loads 81 (bench/results/depthwise_align_sass-sm90
    .json); on the H200 the FP32 NHWC layers that now meet it took 0.47-0.56 of the unaligned
    objects' GPU time per direction (depthwise_align_h200-fa47541.json, with the pairs). None:
    16."""
    size = ELEMENT_BYTES.get(dtype) if dtype is not None else None
    return {2: 8, 4: 4}.get(size or 0, 16)


def meets_align16(direction: str, args: Mapping[str, int], dtype: str | None = None) -> bool:
    """Whether a problem's arguments meet an aligned object's assumption (`align_divisor` of
    its type); the caller checks the pointers."""
    divisor = align_divisor(dtype)
    return all(int(args[a]) % divisor == 0 for a in ALIGN16[KERNEL[direction]])


def pair_classes(direction: str, last: bool) -> tuple[int, ...]:
    """The shape classes (`shape_class`) whose objects a package also ships assuming
    multiples of PAIR_DIVISOR: channels-last forward's and backward data's PAIR_FILTERS (raster
    and phased), backward weights' width classes of their widths."""
    if not last:
        return ()
    if direction == "W":
        return tuple(sorted({width_class(s) for _, s in PAIR_FILTERS}))
    unrolled = [r * 10 + s for r, s in PAIR_FILTERS if (r, s) in UNROLLED_FILTERS]
    phased_ = [PHASED + r * 10 + s for r, s in PAIR_FILTERS if (r, s) in PHASED_FILTERS] \
        if direction == "B" else []
    return (*unrolled, *phased_)


def alignment_levels(dtype: str, last: bool, width: int, classes: tuple[int, ...]
                     ) -> tuple[int, ...]:
    """The divisors (0: none) of the objects a package ships for one type, layout and shape
    class `width`, given the family's `pair_classes` of the layout: channels-last ones
    aligned, pair-aligned where the class pairs, and unaligned."""
    if not last:
        return (0,)
    aligned = align_divisor(dtype)
    pair = (PAIR_DIVISOR,) if width in classes and aligned > PAIR_DIVISOR else ()
    return (aligned, *pair, 0)


def alignment(names: tuple[str, ...], args: Mapping[str, int], levels: tuple[int, ...]
              ) -> int:
    """The divisor of the object a problem takes (0: none): the largest of `levels` that
    every argument of `names` is a multiple of; the caller checks the pointers."""
    return next((d for d in levels if d and all(int(args[a]) % d == 0 for a in names)), 0)


def grid(direction: str, sizes: Mapping[str, int], config: Mapping[str, int],
         width: int = 0) -> tuple[int, int, int]:
    """Forward and backward data: (destination pixel blocks, channel blocks, images);
    backward weights: (channel blocks, filter rows, parts). A phased object (`width`, its
    shape class, from PHASED): (the largest phase's pixel blocks, channel blocks,
    images x 4 phases)."""
    z = sizes
    blocks_c = cdiv(lanes(direction, z), config["BLOCK_N"])
    if direction == "W":
        return blocks_c, z["R"], int(config.get("SPLIT_K", 1))
    if direction == "B" and width >= PHASED:
        return cdiv(cdiv(z["H"], 2) * cdiv(z["W"], 2), config["BLOCK_M"]), blocks_c, z["N"] * 4
    pixels = z["P"] * z["Q"] if direction == "F" else z["H"] * z["W"]
    return cdiv(pixels, config["BLOCK_M"]), blocks_c, z["N"]


def width_class(s: int) -> int:
    """Backward weights' BLOCK_S for filters `s` wide."""
    return next(w for w in WIDTH_CLASSES if w >= s)


def shape_classes(direction: str, last: bool | None = None) -> tuple[int, ...]:
    """The object classes a package ships per tile (`shape_class`) of a layout (`last`:
    channels-last; None, both)."""
    if direction == "W":
        return WIDTH_CLASSES
    if direction in ("F", "B"):
        phased = tuple(PHASED + r * 10 + s for r, s in PHASED_FILTERS) \
            if direction == "B" and last is not False else ()
        return (0, *(r * 10 + s for r, s in UNROLLED_FILTERS), *phased)
    return (0,)


def phased(sizes: Mapping[str, int], last: bool) -> bool:
    """Whether a backward-data problem takes the phased objects (PHASED_FILTERS)."""
    z = sizes
    return bool(last) and (z["stride_h"], z["stride_w"], z["dil_h"], z["dil_w"]) == \
        (2, 2, 1, 1) and (z["R"], z["S"]) in PHASED_FILTERS and z["N"] * 4 <= GRID_YZ_MAX


def shape_class(direction: str, sizes: Mapping[str, int], last: bool = False) -> int:
    """The part of a problem's shape its object is compiled for: backward weights' width
    class (BLOCK_S); forward's and backward data's filter R * 10 + S where UNROLLED_FILTERS
    holds it, else 0 (R and S at run time), plus PHASED where backward data is `phased`
    (`last`: the problem is channels-last)."""
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
    `shape_class` (backward weights' BLOCK_S; forward's and backward data's unrolled
    filter)."""
    return typed_signature(ARGS[KERNEL[direction]], dtype,
                           constexpr_values(direction, config, last, width))


def constexpr_values(direction: str, config: Mapping[str, int], last: bool, width: int
                     ) -> dict[str, int]:
    """Every constexpr a direct kernel may take (a kernel's ARGS pick theirs)."""
    taps = width % PHASED if direction in ("F", "B") else 0
    return {"BLOCK_M": int(config["BLOCK_M"]), "BLOCK_N": int(config["BLOCK_N"]),
            "BLOCK_S": int(width) if direction == "W" else 0, "CHANNELS_LAST": int(last),
            "BACKWARD": int(direction == "B"), "TAPS_R": taps // 10, "TAPS_S": taps % 10,
            "PHASES": 2 if direction == "B" and width >= PHASED else 0}


def legal(direction: str, config: Mapping[str, int]) -> bool:
    """Tile sizes from BLOCKS_M x BLOCKS_N within MAX_ELEMENTS and at least one element a
    thread; the unused tunables 1; SPLIT_K above 1 in backward weights alone."""
    m, n, warps = config.get("BLOCK_M"), config.get("BLOCK_N"), config.get("num_warps")
    if m not in BLOCKS_M or n not in BLOCKS_N or warps not in WARPS:
        return False
    if (config.get("BLOCK_K"), config.get("GROUP_M"), config.get("num_stages")) != (1, 1, 1):
        return False
    split = config.get("SPLIT_K")
    if split not in SPLITS or (split != 1 and direction != "W"):
        return False
    elements = int(m) * int(n) * (WIDTH_CLASSES[-1] if direction == "W" else 1)
    return 32 * int(warps) <= elements <= MAX_ELEMENTS


def legal_space(direction: str) -> list[dict[str, int]]:
    """Every legal configuration of a direction (the tuning search space)."""
    splits = SPLITS if direction == "W" else (1,)
    out = []
    for m in BLOCKS_M:
        for n in BLOCKS_N:
            for warps in WARPS:
                for split in splits:
                    config = {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": 1, "GROUP_M": 1,
                              "SPLIT_K": split, "num_warps": warps, "num_stages": 1}
                    if legal(direction, config):
                        out.append(config)
    return out


def usual_tile(direction: str, last: bool,
               tiles: Mapping[tuple[str, bool], Mapping[str, int]] = TILES) -> dict[str, int]:
    """The direction's usual tile for the layout (of `tiles`: the grouped family has its own),
    with the unused tunables at 1."""
    return {"BLOCK_K": 1, "GROUP_M": 1, "SPLIT_K": 1, "num_stages": 1,
            **tiles[(direction, last)]}


#: Target kinds of 32-lane waves whose forward and backward-data tiles keep at most
#: WAVE32_LANE_ELEMENTS elements a lane, more warps where a tile has more: RDNA's one-warp 8x32
#: objects (8 a lane) spilled 73-78 VGPRs at 5x5 and 529-530 at 7x7 (up to 1,388 bytes of
#: scratch) and the NCHW backward data's 128x8 on four warps 148-155 at 5x5; 8x16 on one
#: warp (4 a lane) spilled none (bench/results/amd_resources_depthwise_tiles-before.json);
#: with the warps this gives, no depthwise object spills on any AMD arch
#: (amd_resources_depthwise_tiles.json).
WAVE32_KINDS = frozenset({"rdna"})
WAVE32_LANE_ELEMENTS = 4


def kind_tile(direction: str, tile: Mapping[str, int], kind: str | None) -> dict[str, int]:
    """`tile` on a target kind: on WAVE32_KINDS a forward or backward-data tile takes the warps
    that keep WAVE32_LANE_ELEMENTS elements a lane (never fewer than it has)."""
    out = dict(tile)
    if kind in WAVE32_KINDS and direction in ("F", "B"):
        lanes_needed = int(out["BLOCK_M"]) * int(out["BLOCK_N"]) // WAVE32_LANE_ELEMENTS
        out["num_warps"] = max(int(out["num_warps"]), min(max(WARPS), lanes_needed // 32))
    return out


def tile_for(direction: str, last: bool, sizes: Mapping[str, int], sms: int,
             kind: str | None = None) -> dict[str, int]:
    """A problem's tile on a target kind (`kind_tile`): LARGE_TILES' where the direction and
    layout have one and its launch is at least LARGE_PROGRAMS_PER_SM programs an SM of `sms`,
    else the usual tile."""
    usual = usual_tile(direction, last)
    large = LARGE_TILES.get((direction, last))
    if large is not None:
        config = {**usual, **large}
        gx, gy, gz = grid(direction, sizes, config)
        if gx * gy * gz >= LARGE_PROGRAMS_PER_SM * sms:
            return kind_tile(direction, config, kind)
    return kind_tile(direction, usual, kind)


def tiles_of(direction: str, last: bool, kind: str | None = None) -> list[dict[str, int]]:
    """Every tile `tile_for` may give on a kind (the package ships each)."""
    usual = usual_tile(direction, last)
    large = LARGE_TILES.get((direction, last))
    tiles = [usual] + ([{**usual, **large}] if large is not None else [])
    return [kind_tile(direction, t, kind) for t in tiles]


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int,
              last: bool = False,
              rules: Mapping[bool, Mapping[str, int]] = SPLIT_RULES) -> int:
    """Backward weights' SPLIT_K on a GPU of `sms` SMs by the layout's rule (`rules`, keyed
    by channels-last; SPLIT_RULES): a layer with few channels is a few programs per filter
    row without it."""
    programs = grid("W", sizes, {**config, "SPLIT_K": 1})
    columns = programs[0] * programs[1]
    steps = cdiv(sizes["N"] * sizes["P"] * sizes["Q"], config["BLOCK_M"])
    rule = rules[bool(last)]
    return filling_split(columns, steps, sms, rule["least"], rule["most"], rule["waves"])


def workspace_bytes(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
                    ) -> int:
    """Backward weights split in parts: an FP32 partial of dw per part."""
    split = int(config.get("SPLIT_K", 1))
    if direction != "W" or split <= 1:
        return 0
    return split * lanes("W", sizes) * sizes["R"] * sizes["S"] * 4


def efficiency(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The fraction of the launched tile elements that are real (pixels x channels)."""
    z = sizes
    pixels = z["N"] * z["P"] * z["Q"] if direction == "W" else \
        (z["P"] * z["Q"] if direction == "F" else z["H"] * z["W"])
    out = 1.0
    for dim, block in ((pixels, config["BLOCK_M"]), (lanes(direction, z), config["BLOCK_N"])):
        dim = max(int(dim), 1)
        out *= dim / (cdiv(dim, int(block)) * int(block))
    return out
