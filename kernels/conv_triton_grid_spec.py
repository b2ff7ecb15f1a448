"""The Triton implicit-GEMM kernels' launch sizes, as plain data: grids and GEMM sizes, when and
how far a reduction splits (SPLIT_K), its workspace and the reduce launch's arguments, and
which kernel and packed tile a problem takes (`kernel_for`, `packed`, `packed_tile`).

Standard library only, so the runtime reads it without Triton; `conv_triton_spec` re-exports
every name here.
"""

from __future__ import annotations

from collections.abc import Mapping

from .conv_triton_kernels_spec import KERNELS, OUTPUT_OF, REDUCE_BLOCK, TARGET_KINDS, cdiv


def grid(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> tuple[int, int, int]:
    """Launch grid (x, y, z) of a kernel. `sizes`: N C H W K P Q R S G stride_h stride_w
    (C, K per group), `config`: the constexprs (BLOCK_M, BLOCK_N, SPLIT_K). x counts the
    BLOCK_M x BLOCK_N tiles of the kernel's GEMM (`gemm_dims`)."""
    z = sizes
    if kernel == "conv2d_bwd_weight_reduce":
        return cdiv(z["G"] * z["K"] * z["C"] * z["R"] * z["S"], REDUCE_BLOCK), 1, 1
    if kernel == "transpose_021":
        return cdiv(z["S"], config["BLOCK_S"]), cdiv(z["R"], config["BLOCK_R"]), z["B"]
    split = int(config.get("SPLIT_K", 1))
    if KERNELS[kernel].get("packed"):
        gb = packed_groups(kernel, z, config)
        if kernel == "conv2d_bwd_weight_packed":
            return cdiv(z["G"], gb), z["R"] * z["S"], split
        m = gemm_dims(kernel, z)[0]
        return cdiv(m, config["BLOCK_M"]) * cdiv(z["G"], gb), 1, \
            (z["stride_h"] * z["stride_w"] if kernel == "conv2d_bwd_data_packed" else 1)
    m, n, _ = gemm_dims(kernel, z)
    tiles = cdiv(m, config.get("BLOCK_M", 0)) * cdiv(n, config.get("BLOCK_N", 0))
    if kernel == "conv2d_fwd":
        return tiles, z["G"], split
    if kernel == "conv2d_fwd_smallc":
        return tiles, z["G"], 1
    if kernel == "conv2d_bwd_data":
        return tiles, z["G"], z["stride_h"] * z["stride_w"] * split
    if kernel == "conv2d_bwd_data_smallc":
        return tiles, z["G"], 1
    if kernel == "conv2d_bwd_weight":
        return tiles, z["G"] * z["R"] * z["S"], split
    return tiles, z["G"] * z["R"], split  # conv2d_bwd_weight_smallc (gemm_dims rejected the rest)


def packed_groups(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> int:
    """GB, the groups one tile of a packed kernel holds: BLOCK_N // K (forward), BLOCK_N // C
    (backward data), min(BLOCK_M // K, BLOCK_N // C) (backward weights); at least 1."""
    z, bm, bn = sizes, int(config["BLOCK_M"]), int(config["BLOCK_N"])
    gb = bn // max(1, z["K"]) if kernel == "conv2d_fwd_packed" else \
        bn // max(1, z["C"]) if kernel == "conv2d_bwd_data_packed" else \
        min(bm // max(1, z["K"]), bn // max(1, z["C"]))
    return max(1, gb)


def gemm_dims(kernel: str, sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(M, N, inner) of a kernel's implicit GEMM: the rows and columns its programs tile by
    BLOCK_M x BLOCK_N, and the length of the loop it steps by BLOCK_K (per filter tap; per
    filter row over (s, c) in the few-channel forward; backward weights' N per filter row too);
    backward data per stride phase, or all phases at once for few channels."""
    z = sizes
    if kernel == "conv2d_fwd":
        return z["N"] * z["P"] * z["Q"], z["K"], z["C"]
    if kernel == "conv2d_fwd_smallc":
        return z["N"] * z["P"] * z["Q"], z["K"], z["S"] * z["C"]
    if kernel == "conv2d_bwd_data":
        m = z["N"] * cdiv(z["H"], z["stride_h"]) * cdiv(z["W"], z["stride_w"])
        return m, z["C"], z["K"]
    if kernel == "conv2d_bwd_data_smallc":
        m = z["N"] * cdiv(z["H"], z["stride_h"]) * cdiv(z["W"], z["stride_w"])
        return m, z["stride_h"] * z["stride_w"] * z["C"], z["K"]
    if kernel == "conv2d_bwd_weight":
        return z["K"], z["C"], z["N"] * z["P"] * z["Q"]
    if kernel == "conv2d_bwd_weight_smallc":
        return z["K"], z["S"] * z["C"], z["N"] * z["P"] * z["Q"]
    # Packed: the useful GEMM of one group (tile_efficiency counts its blocks' share).
    if kernel == "conv2d_fwd_packed":
        return z["N"] * z["P"] * z["Q"], z["K"], z["C"]
    if kernel == "conv2d_bwd_data_packed":
        m = z["N"] * cdiv(z["H"], z["stride_h"]) * cdiv(z["W"], z["stride_w"])
        return m, z["C"], z["K"]
    if kernel == "conv2d_bwd_weight_packed":
        return z["K"], z["C"], z["N"] * z["P"] * z["Q"]
    raise KeyError(kernel)


def tile_efficiency(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The fraction of the launched tile work that is real: how much of each BLOCK_M x BLOCK_N
    tile and each BLOCK_K step falls inside the problem (a cost-model input)."""
    if KERNELS[kernel].get("packed"):  # GB diagonal blocks of a GB x GB block tile
        return 1.0 / packed_groups(kernel, sizes, config)
    out = 1.0
    for dim, block in zip(gemm_dims(kernel, sizes),
                          (config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]), strict=True):
        dim = max(int(dim), 1)
        out *= dim / (cdiv(dim, int(block)) * int(block))
    return out


def split_applies(kernel: str, sizes: Mapping[str, int]) -> bool:
    """Whether SPLIT_K > 1 may be used. Backward data: only where every stride phase receives
    at least one filter tap (stride 1, or stride <= the dilated filter's extent with dilation
    1); its split variant was measured wrong for 1x1 stride-2 problems, where three of the four
    phases have none, and is not used there."""
    if kernel not in OUTPUT_OF:
        return False
    if kernel != "conv2d_bwd_data":
        return True
    z = sizes
    return all(
        all(any((ph + pad - r * dil) % st == 0 for r in range(taps)) for ph in range(st))
        for st, pad, dil, taps in ((z["stride_h"], z["pad_h"], z["dil_h"], z["R"]),
                                   (z["stride_w"], z["pad_w"], z["dil_w"], z["S"])))


def reduce_args(kernel: str, args: Mapping[str, int], channels_last: bool = False
                ) -> dict[str, int]:
    """The i32 arguments of conv2d_bwd_weight_reduce (TOTAL C R S swk swc swr sws) that finish a
    SPLIT_K > 1 launch of `kernel`, from the CONV_ARGS values of the output's tensor (`args`).
    `channels_last`: the launch's object is a CHANNELS_LAST one, whose forward and backward
    data partials are in the output's channels-last memory order ((n, p, q, k), (n, h, w, c));
    the reduce then walks them in that order, so its stores are contiguous too.
    Backward weights' partials, in every layout, are laid so that a program's tile is stored
    contiguously: conv2d_bwd_weight's and conv2d_bwd_weight_packed's (r, s, g*k, c),
    conv2d_bwd_weight_smallc's (r, g*k, s, c) (its tile's columns are (s, c)). Its grid is
    (cdiv(TOTAL, REDUCE_BLOCK), 1, 1)."""
    a = args
    out = OUTPUT_OF[kernel]
    if out == "y" and channels_last:
        dims, strides = (a["N"], a["P"], a["Q"], a["G"] * a["K"]), ("syn", "syh", "syw", "syk")
    elif out == "y":
        dims, strides = (a["N"], a["G"] * a["K"], a["P"], a["Q"]), ("syn", "syk", "syh", "syw")
    elif out == "x" and channels_last:
        dims, strides = (a["N"], a["H"], a["W"], a["G"] * a["C"]), ("sxn", "sxh", "sxw", "sxc")
    elif out == "x":
        dims, strides = (a["N"], a["G"] * a["C"], a["H"], a["W"]), ("sxn", "sxc", "sxh", "sxw")
    elif kernel in ("conv2d_bwd_weight", "conv2d_bwd_weight_packed"):  # (r, s, g*k, c)
        dims, strides = (a["R"], a["S"], a["G"] * a["K"], a["C"]), ("swr", "sws", "swk", "swc")
    elif kernel == "conv2d_bwd_weight_smallc":  # (r, g*k, s, c)
        dims, strides = (a["R"], a["G"] * a["K"], a["S"], a["C"]), ("swr", "swk", "sws", "swc")
    else:
        raise KeyError(f"reduce_args: {kernel} writes no partials the reduce knows")
    res = {"TOTAL": dims[0] * dims[1] * dims[2] * dims[3], "C": dims[1], "R": dims[2],
           "S": dims[3]}
    res.update(zip(("swk", "swc", "swr", "sws"), (int(a[k]) for k in strides), strict=True))
    return res


#: Kernels whose reduction a launch may cut in SPLIT_K parts by default (`split_for`): backward
#: weights, whose output (K x C x R x S) has few tiles and whose reduction (every pixel) is long;
#: forward and backward data where their output tiles leave most of the GPU idle (small images,
#: small batches).
SPLIT_BY_DEFAULT = ("conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_weight",
                    "conv2d_bwd_weight_smallc", "conv2d_bwd_weight_packed")

#: The few-channel backward weights' rule: 16 waves, up to 256 parts of at least 16 steps.
#: Its launch is a few programs per filter row (a stem's 64 filters in 3 rows: 3 programs
#: unsplit), each stepping BLOCK_K pixels at a time through N*P*Q; fitted over the zoo's 26
#: few-channel layers at batch 32 on the H200 in each layout (bench/split_sweep.py --fit on
#: bench/results/split_sweep_smallc_h200.json), its picks took 0.83x cuDNN's GPU time in NCHW
#: against 1.18x at the two-wave rule (best per row 0.79x), 1.78x against 2.36x in NHWC.
_SMALLC_W = "conv2d_bwd_weight_smallc"
#: The fewest BLOCK_K steps each part of a split keeps, per kernel (others: 8).
_MIN_SPLIT_STEPS = {"conv2d_fwd": 4, "conv2d_bwd_data": 4, _SMALLC_W: 16}
#: The largest default split, per kernel (others: 64): forward and backward data reductions
#: (taps x channels) are short, so a package ships their splits up to 16 only. Backward
#: weights up to 256: a layer of few tiles (filters x channels) and many pixels ran its
#: two-wave split of 64 programs or fewer at 1.86x the time of 128-256 in NCHW (FP16, batch
#: 32, 39 zoo layers on the H200: bench/results/alternatives_split_w_h200.json; U-Net's
#: 1x1 64 -> 2 output layer 12.3x cuDNN's GPU time -> 3.3x); where a fitted rule splits
#: (conv_triton_tuned_spec.wrw_split) its fit's largest split stays the most.
MAX_SPLIT = {"conv2d_fwd": 16, "conv2d_bwd_data": 16, "conv2d_bwd_weight": 256, _SMALLC_W: 256}
#: The waves of programs a default split may fill, per kernel (others: 2). The packed backward
#: weights at twice the two-wave split took less time on 79 of the 104 layer cases of
#: bench/results/grouped_packed_h100.json (its 64x64x64 tile, H100).
SPLIT_WAVES = {"conv2d_bwd_weight_packed": 4, _SMALLC_W: 16}


def reduction_steps(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> int:
    """BLOCK_K steps of one program's reduction: taps x channel blocks (forward; few channels:
    filter rows x blocks of a row's (s, c)), taps of the fullest stride phase x filter blocks
    (backward data), pixel blocks (backward weights)."""
    z = sizes
    bk = int(config["BLOCK_K"])
    if kernel == "conv2d_fwd":
        return z["R"] * z["S"] * cdiv(z["C"], bk)
    if kernel == "conv2d_fwd_smallc":  # a filter row at a time over (s, c) flattened
        return z["R"] * cdiv(z["S"] * z["C"], bk)
    if kernel == "conv2d_bwd_data":
        return cdiv(z["R"], z["stride_h"]) * cdiv(z["S"], z["stride_w"]) * cdiv(z["K"], bk)
    return cdiv(z["N"] * z["P"] * z["Q"], bk)


def filling_split(programs: int, steps: int, sms: int, least: int, most: int, waves: int = 2
                  ) -> int:
    """The split of a reduction of `steps` steps over a launch of `programs` programs that
    fills a GPU of `sms` multiprocessors: doubled from 1 while the launch stays within `waves`
    waves and each part keeps at least `least` steps, at most `most`. The families' split_for
    rules share it."""
    split = 1
    while split < most and programs * split * 2 <= waves * sms and \
            steps // (split * 2) >= least:
        split *= 2
    return split


def split_for(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int], sms: int,
              waves: int | None = None, least: int | None = None, most: int | None = None
              ) -> int:
    """The SPLIT_K that fills a GPU of `sms` multiprocessors (CUs): doubled from 1 while the
    launch stays within two waves of programs (`waves`) and each part keeps at least 8 BLOCK_K
    steps of its reduction (4 for forward and backward data; `least`), at most the kernel's
    MAX_SPLIT (`most`); 1 for kernels not in SPLIT_BY_DEFAULT or problems `split_applies`
    rejects."""
    if kernel not in SPLIT_BY_DEFAULT or not split_applies(kernel, sizes):
        return 1
    gx, gy, gz = grid(kernel, sizes, {**config, "SPLIT_K": 1})
    tiles = gx * gy * gz
    steps = reduction_steps(kernel, sizes, config)
    return filling_split(tiles, steps, sms,
                         least if least is not None else _MIN_SPLIT_STEPS.get(kernel, 8),
                         most if most is not None else MAX_SPLIT.get(kernel, 64),
                         waves if waves is not None else SPLIT_WAVES.get(kernel, 2))


def workspace_bytes(kernel: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> int:
    """FP32 workspace a launch needs (SPLIT_K > 1: the partial sums), else 0."""
    split = int(config.get("SPLIT_K", 1))
    if split == 1 or kernel not in OUTPUT_OF:
        return 0
    z = sizes
    g = z["G"]
    elems = {"y": z["N"] * g * z["K"] * z["P"] * z["Q"], "x": z["N"] * g * z["C"] * z["H"] * z["W"],
             "w": g * z["K"] * z["C"] * z["R"] * z["S"]}[OUTPUT_OF[kernel]]
    return split * elems * 4


#: Grouped problems with fewer channels and fewer filters a group than this take the packed
#: kernels (several groups to a tile).
PACKED_BELOW = 16


def packed(sizes: Mapping[str, int]) -> bool:
    """Whether a problem takes the packed kernels: two or more groups, each of fewer than
    PACKED_BELOW channels and filters, not depthwise (one of each: the depthwise family's, and
    a packed tile would be all but one of its blocks zeros)."""
    if sizes.get("G", 1) < 2:
        return False
    c, k = sizes["C"], sizes["K"]
    return c < PACKED_BELOW and k < PACKED_BELOW and (c, k) != (1, 1)


def kernel_for(direction: str, sizes: Mapping[str, int]) -> str:
    """The main kernel of a direction for a problem: grouped problems of few channels and
    filters a group take the packed kernels (`packed`); otherwise few input channels (C < 16)
    take their own in forward and backward weights, and in backward data with a stride
    (dilation 1)."""
    if packed(sizes):
        return {"F": "conv2d_fwd_packed", "B": "conv2d_bwd_data_packed",
                "W": "conv2d_bwd_weight_packed"}[direction]
    if direction == "F":
        return "conv2d_fwd_smallc" if sizes["C"] < 16 else "conv2d_fwd"
    if direction == "W":
        return "conv2d_bwd_weight_smallc" if sizes["C"] < 16 else "conv2d_bwd_weight"
    if direction == "B" and sizes["C"] < 16 and sizes["stride_h"] * sizes["stride_w"] > 1 \
            and sizes["dil_h"] == sizes["dil_w"] == 1:
        return "conv2d_bwd_data_smallc"
    return {"B": "conv2d_bwd_data"}[direction]


def _packed_tile(m: int, n: int, k: int, group_m: int) -> dict[str, int]:
    return {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": group_m, "SPLIT_K": 1,
            "num_warps": 4, "num_stages": 3}


#: The packed kernels' tile per direction and layout (NHWC: channels last): the tile of
#: bench/grouped_packed.py's candidates with the least geomean time against cuDNN over the
#: zoo's grouped layers of 4 and 8 channels a group at batch 32 on the H100, FP16 and BF16
#: (bench/results/grouped_packed_h100.json). Three stages where the kind allows them
#: (`packed_tile`): two cost 6-9% in channels-last forward and backward weights there.
PACKED_TILES: dict[tuple[str, bool], dict[str, int]] = {
    ("F", True): _packed_tile(128, 32, 32, 8), ("F", False): _packed_tile(128, 16, 16, 8),
    ("B", True): _packed_tile(128, 32, 32, 8), ("B", False): _packed_tile(128, 16, 16, 8),
    ("W", True): _packed_tile(64, 64, 64, 1), ("W", False): _packed_tile(64, 64, 64, 1),
}


#: Per target kind, what of a packed tile changes there, per direction: RDNA's wave32 objects of
#: the tiles above spilled 75-201 VGPRs to scratch (gfx1100: the channels-last forward and
#: backward data on 4 warps, backward weights at 64x64x64); 8 warps, and backward weights at
#: 64x32x32, spill none (tests/integration/test_conv_triton_compile.py checks every object).
PACKED_KIND_TILES: dict[str, dict[str, dict[str, int]]] = {
    "rdna": {"F": {"num_warps": 8}, "B": {"num_warps": 8},
             "W": {"BLOCK_N": 32, "BLOCK_K": 32}},
}


def packed_tile(kind: str, kernel: str, channels_last: bool) -> dict[str, int]:
    """A packed kernel's tile on a target kind (PACKED_TILES, with the kind's PACKED_KIND_TILES
    changes), at the most stages the kind allows up to the tile's."""
    direction = KERNELS[kernel]["direction"]
    tile = {**PACKED_TILES[(direction, channels_last)],
            **PACKED_KIND_TILES.get(kind, {}).get(direction, {})}
    tile["num_stages"] = min(tile["num_stages"], max(TARGET_KINDS[kind]["num_stages"]))
    return tile
