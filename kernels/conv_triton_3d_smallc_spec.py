"""What a launch of the few-channel 3-D kernels (kernels/conv_triton_3d_smallc.py) needs, as
plain data.

Standard library only (and the 3-D and 2-D specs), so the runtime reads it without Triton.
The kernels take the 3-D kernels' argument list (`conv_triton_3d_spec.BASE_ARGS`: sizes, geometry
and strides as three tuple arguments) and the implicit GEMM's seven tunables; SPLIT_K is
backward weights' alone and is the grid's third axis, not part of the object. Problems of at
most MAX_C input channels a group (a volume's 1, a video's 3), every direction: backward data
in two launches, the taps' products (KERNEL["B"]) into the workspace ([N][G][T*R*S*C][Z*P*Q],
FP32: `workspace_bytes`, at most WS_LIMIT; the solvers cut larger batches into chunks) and
their gather into dx (GATHER, one object per type, GATHER_CONFIG), where the products are
no more than dy's filters a position (`products_pay`).
A package ships per type and direction the generic object (CHANNELS_LAST=0, any strides, no
alignment), forward also the channels-last one for 16-bit NDHWC (measured through the runtime
on the H200: bench/results/README.md), and aligned objects of both packed layouts
(`layout_of`: CHANNELS_LAST 1 channels-last, 2 channel-planar, each knowing its unit stride)
that assume 16-byte aligned pointers and ALIGNED_ARGS multiples of `align_divisor` elements
(`meets_aligned`): Triton's JIT, which knows both of a launch, ran the kernels at a third to
two thirds of the generic objects' time (bench/results/smallc_specialise_h200.json).

Tiles (TILES) are one per precision and direction, fitted to each target kind's legal space
(`usual_tile`): forward 128 positions by 64 filters by 32 reduction columns (a 3x3x3 filter
on one channel is 27 columns: one block); backward weights 64 filters by 32 columns (t, r, s,
c) by 64 positions a step (128 positions took 2-4x the time on the H200), split to fill the
GPU (`split_for`: the positions of 3D U-Net's first layer at batch 32 are 67M, which one
tile's program would walk alone). Forward has a narrow variant, NARROW_N filters wide, for
problems of at most that many filters (`narrow_tile`): NDHWC holds the filters contiguous,
and a 64-wide tile over 32 of them left half of every store's lanes masked (3D U-Net's first
layer: 25.6 -> 15.8 ms NDHWC, 13.3 -> 11.6 NCDHW; the 45- and 64-filter video stems took
1.8-2x longer on it); on sm90 it also takes NARROW_M positions a program. Backward data's first
step takes 128 positions by 32 columns j by 32 filters a step (3D U-Net's 27 columns: one
block)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_3d_spec import BASE_ARGS as _ARGS_3D
from .conv_triton_3d_spec import (
    KINDS,
    SIZES,
    TENSORS,
    TUPLES,
    applies,
    arg_values,
    at_most,
    channels_last,
    tile_efficiency,
)
from .conv_triton_3d_spec import legal as _legal_3d
from .conv_triton_3d_spec import legal_space as _legal_space_3d
from .conv_triton_spec import (
    TARGET_KINDS,
    accumulators_per_lane,
    cdiv,
    filling_split,
    shared_bytes,
    typed_signature,
)

__all__ = ["ARGS", "ALIGNED_ARGS", "ALIGNED_LAYOUTS", "GATHER", "GATHER_CONFIG",
           "KERNEL", "KINDS", "MAX_C", "MAX_COLUMNS", "NARROW_M", "NARROW_M_KINDS", "NARROW_N",
           "SIZES", "TENSORS", "TILES", "TUPLES", "TYPES", "WS_LIMIT", "align_divisor",
           "ONE_BLOCK", "applies", "arg_values", "channels_last", "few_channels", "first_2d",
           "gather_grid",
           "gather_signature", "grid", "layout_of", "legal", "legal_space", "meets_aligned",
           "narrow_of", "narrow_tile", "products_bytes", "products_pay", "reduce_values",
           "signature", "split_for", "usual_tile", "workspace_bytes"]

TYPES = ("FP16", "BF16", "FP32")
KERNEL = {"F": "conv3d_fwd_smallc", "B": "conv3d_bwd_data_smallc_taps",
          "W": "conv3d_bwd_weight_smallc"}
#: Backward data's second kernel: the taps' products gathered into dx.
GATHER = "conv3d_bwd_data_smallc_gather"
#: One argument list, the 3-D kernels'; no argument is assumed a multiple of anything.
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    k: _ARGS_3D for k in (*KERNEL.values(), GATHER)}
#: The i32 arguments an aligned object assumes multiples of `align_divisor`, by its layout
#: (CHANNELS_LAST): channels-last y's strides (K the innermost; x's are multiples of its few
#: channels), channel-planar the row lengths and x's and y's strides but the unit ones.
ALIGNED_ARGS: dict[int, tuple[str, ...]] = {
    1: ("K", "syn", "syd", "syh", "syw"),
    2: ("W", "Q", "sxn", "sxc", "sxd", "sxh", "syn", "syk", "syd", "syh")}
#: The layouts a direction ships aligned objects of: backward weights' channel-planar one ran
#: as the generic one (bench/results/smallc_runtime_aligned_h200.json).
ALIGNED_LAYOUTS: dict[str, tuple[int, ...]] = {"F": (1, 2), "B": (1, 2), "W": (1,)}
#: The gather's one object a type: BLOCK_M elements of dx a program (the other tunables are
#: the argument list's, unused), the generic layout (its loads are ws's, its stores dx's).
GATHER_CONFIG = {"BLOCK_M": 512, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "SPLIT_K": 1,
                 "num_warps": 4, "num_stages": 1}
#: The most workspace backward data's products take at once (bytes): larger batches run a
#: chunk of images at a time.
WS_LIMIT = 256 << 20
#: The most input channels a group the kernels take (measured on 1 and 3).
MAX_C = 4
#: The most reduction columns T*R*S*C a group: the kernels split a column index into its
#: channel and taps by a multiply and a shift (`_quotient`), exact below this many.
MAX_COLUMNS = 1024
#: The usual tile (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) per precision and
#: direction, both layouts.
TILES: dict[tuple[str, str], tuple[int, int, int, int, int]] = {
    **{(t, "F"): (128, 64, 32, 4, 2) for t in ("FP16", "BF16")},
    **{(t, "W"): (64, 32, 64, 4, 2) for t in ("FP16", "BF16")},
    **{(t, "B"): (128, 32, 32, 4, 2) for t in ("FP16", "BF16")},
    ("FP32", "F"): (64, 64, 32, 4, 2), ("FP32", "W"): (64, 32, 32, 4, 2),
    ("FP32", "B"): (64, 32, 32, 4, 2)}
#: Forward's narrow tile's width along the filters (BLOCK_N), for problems of at most that
#: many.
NARROW_N = 32
#: Forward's narrow tile's positions a program (BLOCK_M, where the kind's accumulators and
#: shared memory allow): on the H100 256 took 0.67-0.80 of the 128-position tile's time in
#: FP16 and BF16 and 0.49-0.78 of the 64-position tile's in FP32, on every such layer and
#: layout measured (3D U-Net's first layer, X3D-S's stem, a 2-D 3x3 stem of 32 filters;
#: bench/results/smallc_quotient_h100-13861c6). The usual tile's 45 and 64 filters do not
#: gain: 256 positions took 1.09-2.06x the time on the video stems in NDHWC.
NARROW_M = 256
#: The kinds whose narrow tile takes NARROW_M positions (measured there); elsewhere it keeps
#: the usual tile's.
NARROW_M_KINDS = ("sm90",)
#: Backward weights' splits: enough parts that a 1-channel volume's one tile fills the GPU;
#: the partials ([parts][G*K][T*R*S*C], FP32) kept under MAX_PARTIAL_BYTES.
SPLITS = tuple(2**i for i in range(11))
MAX_PARTIAL_BYTES = 64 << 20
MIN_PART_STEPS = 16
WAVES = 8


def few_channels(sizes: Mapping[str, int]) -> bool:
    """Whether a problem has at most MAX_C input channels a group and at most MAX_COLUMNS
    reduction columns."""
    return 1 <= int(sizes["C"]) <= MAX_C and _columns("F", sizes) <= MAX_COLUMNS


#: A position's reduction columns (taps x channels) that one block of the usual tiles holds
#: (forward's BLOCK_K, backward weights' BLOCK_N: 32).
ONE_BLOCK = 32


def first_2d(direction: str, sizes: Mapping[str, int], channels_last: bool,
             alone: bool = False, aligned_2d: bool = False) -> bool:
    """Whether the kernels go ahead of the 2-D implicit GEMM on a 2-D problem (a depth of
    one) of few channels, more than one tap, one group. Measured on the H200 over the zoo's
    2-D few-channel layers, FP16, batch 32 (bench/results/alternatives_smallc2d_h200.json):
    backward data at stride 1, where the 2-D kernels' tile spans C of 16 columns: 0.34-0.48
    of cuDNN's GPU time in NCHW (2.8-3.6 before), 0.60-0.94 in NHWC (1.2-1.8); at stride 2
    the 2-D kernels' phase-folded step, or in NHWC the path through NCHW, is as fast or
    faster; `alone` (a 16-bit channels-last problem that no other layout's path takes: BF16
    on sm90 until VIA_NCHW_FEW_C listed its backward data, estimated faster still through
    NCHW) at stride 2 these kernels took 0.33-1.10 of cuDNN's time against the 2-D
    kernels' 0.56-2.01 on the four layers (bench/results/alternatives_smallc2d_bf16_h200.json;
    at stride 4 both lose to the NCHW path where there is one; FP32 was mixed). Backward
    weights channels-last,
    1.4-4.9 -> 0.4-3.1 (DCGAN's 64x64 layers 0.64 -> 0.71); channel-planar where a
    position's columns fit ONE_BLOCK (3x3 on 3 channels: 0.45-1.13 -> 0.37-0.74; the 7x7
    and 4-channel stems' are slower). Forward channels-last at stride 1 within ONE_BLOCK
    (the 3x3 stems at full resolution, about 10%) where the 2-D few-channel kernel
    (conv2d_fwd_smallc) runs its generic object; not where it runs the object aligned on y's
    side (`aligned_2d`: 16-bit, filters a multiple of 8), which took 0.83-0.91 of cuDNN's GPU
    time on the four such zoo stems at its rule's tile where these kernels took 1.52-1.65
    (H100, bench/results/fewc_aligned_h100-6dc4da4); elsewhere forward is the 2-D kernel's.
    On those aligned objects (16-bit, NHWC, the same run's bw.json) the 2-D kernels also took
    backward data at stride 2 (0.21-0.70 of cuDNN on 18 stems, where these took 0.35-1.04 on
    the 7 they ran and immediate mode's choice, mostly the path through NCHW, 0.37-0.99), and
    backward weights where a position's columns pass ONE_BLOCK at a stride of at most 2
    (0.38-1.76 on 12 stems, 7x7, 6x6, 4x4 and 4-channel 3x3, where these took 0.62-2.91);
    the 3x3 three-channel stems' backward weights (27 columns: 0.41-1.61 here, 0.67-2.00
    there) and ConvNeXt's stride-4 patchify (0.55, 0.71) stay with these."""
    taps = int(sizes["R"]) * int(sizes["S"])
    if int(sizes["T"]) != 1 or taps == 1 or int(sizes["G"]) != 1 or not few_channels(sizes):
        return False
    stride_1 = int(sizes["stride_h"]) == int(sizes["stride_w"]) == 1
    one_block = taps * int(sizes["C"]) <= ONE_BLOCK
    if direction == "B":
        stride_2 = int(sizes["stride_h"]) == int(sizes["stride_w"]) == 2
        return stride_1 or (alone and channels_last and stride_2 and not aligned_2d)
    if direction == "W":
        if aligned_2d and not one_block and max(int(sizes["stride_h"]),
                                                int(sizes["stride_w"])) <= 2:
            return False
        return channels_last or one_block
    return channels_last and stride_1 and one_block and not aligned_2d


def layout_of(strides: Mapping[str, tuple[int, ...]]) -> int:
    """The CHANNELS_LAST of the objects whose unit stride a problem's tensors have: 1 where
    x, w and y have a unit channel stride (NDHWC), 2 where each has a unit innermost spatial
    stride (NCDHW), else 0."""
    if channels_last(strides):
        return 1
    return 2 if all(strides[t][-1] == 1 for t in ("x", "w", "y")) else 0


def align_divisor(dtype: str) -> int:
    """What an aligned object assumes each ALIGNED_ARGS value a multiple of: 16 bytes of the
    type (8 elements of a 16-bit type, 4 of FP32)."""
    return 4 if dtype == "FP32" else 8


def meets_aligned(direction: str, args: Mapping[str, int], layout: int, dtype: str) -> bool:
    """Whether a direction ships an aligned object of `layout` (ALIGNED_LAYOUTS) and a
    problem's i32 arguments meet its assumption (the caller checks the pointers)."""
    divisor = align_divisor(dtype)
    return layout in ALIGNED_LAYOUTS[direction] and all(int(args[a]) % divisor == 0
                                                        for a in ALIGNED_ARGS[layout])


def _columns(direction: str, sizes: Mapping[str, int]) -> int:
    """The flattened reduction (forward), row (backward weights) or column (backward data)
    extent T*R*S*C."""
    del direction
    return int(sizes["T"]) * int(sizes["R"]) * int(sizes["S"]) * int(sizes["C"])


def gemm_dims(direction: str, sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(M, N, inner) of a direction's GEMM."""
    z = sizes
    positions = z["N"] * z["Z"] * z["P"] * z["Q"]
    if direction == "F":
        return positions, z["K"], _columns(direction, z)
    if direction == "B":
        return positions, _columns(direction, z), z["K"]
    return z["K"], _columns(direction, z), positions


def grid(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
         ) -> tuple[int, int, int]:
    """(tiles, G, 1) forward and backward data's first step; (tiles, G, SPLIT_K) backward
    weights."""
    m, n, _ = gemm_dims(direction, sizes)
    tiles = cdiv(m, int(config["BLOCK_M"])) * cdiv(n, int(config["BLOCK_N"]))
    return tiles, int(sizes["G"]), int(config.get("SPLIT_K", 1)) if direction == "W" else 1


def gather_grid(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """Backward data's gather: GATHER_CONFIG's BLOCK_M elements of dx a program."""
    z = sizes
    total = z["N"] * z["G"] * z["C"] * z["D"] * z["H"] * z["W"]
    return cdiv(total, GATHER_CONFIG["BLOCK_M"]), 1, 1


def products_pay(sizes: Mapping[str, int]) -> bool:
    """Whether backward data's two steps pay: the taps' products a position (T*R*S*C) no
    more than dy's filters (K). Measured on the H200 (FP16, batch 32; bench/results/README.md):
    3D U-Net's first layer (27 products for 32 filters) 69.4 -> 8.6 ms NCDHW, 40.1 -> 15.8 ms
    NDHWC; r3d_18's stem (441 for 64) 5.2 -> 7.1 and 5.1 -> 9.2 ms; (2+1)-D's stem (147 for
    45) 2.53 -> 2.37 and 2.54 -> 3.12 ms."""
    return _columns("B", sizes) <= int(sizes["K"])


def products_bytes(sizes: Mapping[str, int]) -> int:
    """Backward data's workspace: every tap's product at every output position, FP32."""
    z = sizes
    return z["N"] * z["G"] * _columns("B", z) * z["Z"] * z["P"] * z["Q"] * 4


def legal(direction: str, config: Mapping[str, int], dtype: str, kind: str) -> bool:
    """The 3-D kernels' legal space (`conv_triton_3d_spec.legal`) with SPLIT_K of SPLITS."""
    return bool(_legal_3d(direction, config, dtype, kind, SPLITS))


def legal_space(direction: str, dtype: str, kind: str) -> list[dict[str, int]]:
    """Every legal configuration of a direction on a kind (the tuning search space)."""
    return _legal_space_3d(direction, dtype, kind, SPLITS)


def usual_tile(precision: str, direction: str, dtype: str, kind: str) -> dict[str, int]:
    """TILES' entry fitted to the kind: each value the largest legal one up to the entry's,
    BLOCK_M then halved while a lane would hold more sums than the kind's ACC_PER_LANE or
    the operands exceed its shared memory."""
    space = TARGET_KINDS[kind]
    bm, bn, bk, warps, stages = TILES[(precision, direction)]
    config = {"BLOCK_M": at_most(bm, space["BLOCK_M"]), "BLOCK_N": at_most(bn, space["BLOCK_N"]),
              "BLOCK_K": at_most(bk, space["BLOCK_K"]), "GROUP_M": 8, "SPLIT_K": 1,
              "num_warps": at_most(warps, space["num_warps"]),
              "num_stages": at_most(stages, space["num_stages"])}
    while config["BLOCK_M"] // 2 in space["BLOCK_M"] and (
            accumulators_per_lane(config, kind) > space.get("ACC_PER_LANE", 1 << 30)
            or shared_bytes(config, dtype) > space["smem"]):
        config["BLOCK_M"] //= 2
    return config


def narrow_of(config: Mapping[str, int], dtype: str, kind: str) -> dict[str, int]:
    """A tile's narrow variant: NARROW_N filters wide and, on NARROW_M_KINDS, NARROW_M
    positions (the largest legal value up to it, halved while a lane would hold more sums
    than the kind's ACC_PER_LANE or the operands exceed its shared memory)."""
    space = TARGET_KINDS[kind]
    out = {**config, "BLOCK_N": min(int(config["BLOCK_N"]), NARROW_N)}
    if kind not in NARROW_M_KINDS:
        return out
    out["BLOCK_M"] = at_most(NARROW_M, space["BLOCK_M"])
    while out["BLOCK_M"] // 2 in space["BLOCK_M"] and (
            accumulators_per_lane(out, kind) > space.get("ACC_PER_LANE", 1 << 30)
            or shared_bytes(out, dtype) > space["smem"]):
        out["BLOCK_M"] //= 2
    return out


def narrow_tile(direction: str, config: Mapping[str, int], sizes: Mapping[str, int],
                dtype: str, kind: str) -> dict[str, int]:
    """Forward's `config` narrowed where the problem has at most NARROW_N filters a group."""
    if direction == "F" and int(sizes["K"]) <= NARROW_N:
        return narrow_of(config, dtype, kind)
    return dict(config)


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int) -> int:
    """Backward weights' SPLIT_K: doubled from 1 while the launch stays within WAVES waves of
    `sms` programs, each part keeps MIN_PART_STEPS steps and the partials stay within
    MAX_PARTIAL_BYTES, up to the largest of SPLITS."""
    gx, gy, _ = grid("W", sizes, {**config, "SPLIT_K": 1})
    steps = cdiv(gemm_dims("W", sizes)[2], int(config["BLOCK_K"]))
    per_part = max(1, _partial_elements(sizes) * 4)
    most = max(1, min(SPLITS[-1], MAX_PARTIAL_BYTES // per_part))
    most = 1 << (most.bit_length() - 1)  # a power of two, as SPLITS
    return filling_split(gx * gy, steps, sms, MIN_PART_STEPS, most, WAVES)


def _partial_elements(sizes: Mapping[str, int]) -> int:
    return int(sizes["G"]) * int(sizes["K"]) * _columns("W", sizes)


def workspace_bytes(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
                    ) -> int:
    """Backward weights split in parts: an FP32 partial of dw per part; backward data: the
    taps' products (`products_bytes`)."""
    if direction == "B":
        return products_bytes(sizes)
    split = int(config.get("SPLIT_K", 1))
    if direction != "W" or split <= 1:
        return 0
    return split * _partial_elements(sizes) * 4


def reduce_values(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, ...]]
                  ) -> dict[str, int]:
    """The reduce kernel's i32 arguments (conv_triton_spec.REDUCE_ARGS) after a split launch.
    The partials are (g*k, t*R + r, s, c), contiguous along c; the reduce walks them in that
    order (T and R one axis of stride swr: `applies`' packed weights)."""
    z = sizes
    w = strides["w"]
    return {"TOTAL": _partial_elements(z), "C": z["T"] * z["R"], "R": z["S"], "S": z["C"],
            "swk": w[0], "swc": w[3], "swr": w[4], "sws": w[1]}


def efficiency(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The fraction of the launched tile work that is real."""
    return float(tile_efficiency(gemm_dims(direction, sizes), config))


def signature(direction: str, dtype: str, config: Mapping[str, int], last: int,
              precision: str, kernel: str | None = None
              ) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object for `triton.compiler.ASTSource` (of the
    direction's kernel, or `kernel`); `last` its CHANNELS_LAST (0, 1 or 2)."""
    values = {"BLOCK_M": int(config["BLOCK_M"]), "BLOCK_N": int(config["BLOCK_N"]),
              "BLOCK_K": int(config["BLOCK_K"]), "GROUP_M": int(config["GROUP_M"]),
              "CHANNELS_LAST": int(last), "PRECISION": precision}
    return typed_signature(ARGS[kernel or KERNEL[direction]], dtype, values)


def gather_signature(dtype: str, last: int = 0) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of backward data's gather object of a type and layout."""
    return signature("B", dtype, GATHER_CONFIG, last, "ieee", GATHER)
