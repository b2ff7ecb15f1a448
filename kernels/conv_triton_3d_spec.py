"""What a launch of the 3-D kernels (kernels/conv_triton_3d.py) needs, as plain data.

Standard library only (and `conv_triton_spec`), so the runtime reads it without Triton. Sizes
are named as the 2-D spec's with a third axis: D, Z, T (input, output and filter depth, as
CUTLASS names them), stride_d, pad_d, dil_d; C and K per group, G the groups. Strides are in
elements in (n, c, d, h, w) / (k, c, t, r, s) / (n, k, d, h, w) order, whatever the layout;
CHANNELS_LAST (NDHWC: x, w and y with a unit channel stride) lets loads along channels be
vectors.

The three kernels take one argument list (ARGS), its i32 arguments as three tuple parameters
(TUPLES: sizes, geometry, strides). Tunables are the implicit GEMM's seven, in
PerfDb order; SPLIT_K is the grid's third axis (the reduce kernel is the 2-D family's):
backward weights' always, one object serving every split; forward's and backward data's on
a small grid (`conv_triton_3d_split_spec.small_split`), on their split object (SPLIT 1,
every split above one; `split_object`). Each object is shape-agnostic; an "aligned"
channels-last object assumes 16-byte aligned pointers and every ALIGN16 argument a multiple
of 16.

Tiles: one per (precision, direction), TILES, started from the 2-D family's usual NHWC tiles on
the H100 (kernels/conv_triton_tuned_sm90.json) and fitted to each target kind's legal space
(`usual_tile`); not yet measured on 3-D layers. A package ships per precision and direction the
generic object (CHANNELS_LAST=0: NCDHW, and NDHWC problems or pointers that miss the alignment
assumption) and the aligned channels-last one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import (
    TARGET_KINDS,
    accumulators_per_lane,
    cdiv,
    filling_split,
    is_legal,
    shared_bytes,
    typed_signature,
)

#: Target kinds (conv_triton_spec.target_kind) the kernels apply on: every matrix-core kind.
KINDS = ("sm80", "sm90", "sm100", "sm120", "cdna", "cdna4", "rdna")
TYPES = ("FP16", "BF16", "FP32")
GRID_YZ_MAX = 65535

KERNEL = {"F": "conv3d_fwd", "B": "conv3d_bwd_data", "W": "conv3d_bwd_weight"}
#: The i32 arguments in three groups: sizes, geometry and the strides of x, w and y. Each
#: group is one tuple argument of the kernels (the 2-D family's convention,
#: `conv_triton_spec.CONV_TUPLES`); launches, kdb options and this module name the members.
_STRIDES = {"x": ("sxn", "sxc", "sxd", "sxh", "sxw"), "w": ("swk", "swc", "swt", "swr", "sws"),
            "y": ("syn", "syk", "syd", "syh", "syw")}
TUPLES: dict[str, tuple[str, ...]] = {
    "dims": ("N", "C", "D", "H", "W", "K", "Z", "P", "Q", "T", "R", "S", "G"),
    "conv": ("stride_d", "stride_h", "stride_w", "pad_d", "pad_h", "pad_w", "dil_d", "dil_h",
             "dil_w"),
    "strides": tuple(n for names in _STRIDES.values() for n in names),
}
#: The sizes, as the solvers name them, in argument order.
SIZES = (*TUPLES["dims"], *TUPLES["conv"])
#: The argument list the three kernels share (and the few-channel 3-D kernels take).
BASE_ARGS: tuple[tuple[str, str], ...] = (
    ("x_ptr", "ptr"), ("w_ptr", "ptr"), ("y_ptr", "ptr"), ("ws_ptr", "ptr_fp32"),
    *((n, "i32") for names in TUPLES.values() for n in names),
    ("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("BLOCK_K", "constexpr"),
    ("GROUP_M", "constexpr"), ("CHANNELS_LAST", "constexpr"), ("PRECISION", "constexpr"),
)
#: One argument list for the three kernels (pointers always x, w, y, ws); forward and
#: backward data add SPLIT (their split object: `split_object`).
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    k: BASE_ARGS + ((("SPLIT", "constexpr"),) if d != "W" else ()) for d, k in KERNEL.items()}
_POINTERS = {"x_ptr": "x", "w_ptr": "w", "y_ptr": "y", "ws_ptr": "ws"}
TENSORS: dict[str, dict[str, str]] = {d: _POINTERS for d in KERNEL}
#: i32 arguments a channels-last aligned object assumes multiples of 16: the channel counts
#: and every stride but the unit channel strides.
_ALIGNED = ("C", "K", "sxn", "sxd", "sxh", "sxw", "swk", "swt", "swr", "sws", "syn", "syd",
            "syh", "syw")
ALIGN16: dict[str, tuple[str, ...]] = {k: _ALIGNED for k in KERNEL.values()}

#: The usual tile (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) per precision (FP16,
#: BF16, FP32, TF32, FP32X3) and direction, for both layouts: the 2-D family's usual NHWC
#: tiles on the H100 (GROUP_M 8; its MMA choice and backward weights' split left out, TF32's
#: mma.sync tiles at one stage), cut where an sm90 object spilled (ptxas stack frames of
#: 24-488 bytes at 255 registers: 16-bit backward data 128x256 and backward weights at
#: BLOCK_K 64, FP32 forward at 4 warps, FP32X3 backward weights 128x64). One tile for both
#: layouts, so that the generic object (CHANNELS_LAST=0, any strides) of an NCDHW problem
#: also serves the NDHWC problems that miss the alignment assumption: two objects per
#: precision and direction.
_WIDE16 = {"F": (128, 128, 64, 8, 3), "B": (128, 128, 64, 8, 3), "W": (64, 64, 32, 4, 4)}
TILES: dict[tuple[str, str], tuple[int, int, int, int, int]] = {
    **{(t, d): tile for t in ("FP16", "BF16") for d, tile in _WIDE16.items()},
    ("FP32", "F"): (64, 128, 32, 8, 2), ("FP32", "B"): (64, 64, 32, 4, 2),
    ("FP32", "W"): (64, 64, 32, 4, 2),
    ("TF32", "F"): (128, 128, 32, 8, 3), ("TF32", "B"): (64, 128, 32, 4, 1),
    ("TF32", "W"): (64, 64, 32, 4, 1),
    ("FP32X3", "F"): (128, 128, 32, 8, 3), ("FP32X3", "B"): (64, 64, 32, 4, 1),
    ("FP32X3", "W"): (64, 64, 32, 4, 1),
}
#: The wide tiles of FP16 backward data and weights, and where they replace TILES' (WIDE_RULE:
#: the fewest channels C, in backward weights also filters K, per group, and input positions
#: N*D*H*W), on the aligned channels-last objects. On the H200 over the zoo's 3-D layers in
#: NDHWC at batch 32 of the networks the fits may see (r2plus1d_18, unet3d;
#: bench/results/tiles_3d_{B,W}_h200.json), against TILES' on the layers whose channel counts
#: take the aligned object: backward data 256x128 took 0.68-0.81 of the time on the 15 of 20
#: the rule picks (geomean 0.75), backward weights 128x128 on 8 warps 0.58-1.25 on 11 of 21
#: (0.77; on every layer up to 3.38, where 64 channels half fill the tile). Backward weights
#: keep the split the usual tile's rule gives (as measured); forward keeps TILES' (each of four
#: other tiles was slower over the run: 1.09-1.53).
WIDE_TILES: dict[str, tuple[int, int, int, int, int]] = {
    "B": (256, 128, 64, 8, 3), "W": (128, 128, 32, 8, 3)}
WIDE_RULE: dict[str, tuple[int, int]] = {"B": (64, 65536), "W": (128, 65536)}
WIDE_KINDS = ("sm90",)  # measured there, in FP16 on the aligned channels-last objects
WIDE_TYPES = ("FP16",)
#: Backward weights' taps per program (the kernel's TAPS along TAP_AXIS: 2 the filter's s, 0
#: its t): every tap along the filter's last axis of extent 2-3 (s; t where the filter is
#: Tx1x1) in one program, so that each dy tile loaded serves them all (`taps`); the grid's
#: axis 1 shrinks by TAPS, the split and the tile stay the rule's. On the H200 over the zoo's
#: 3-D layers in NDHWC at batch 32 on ConvTriton3dWrw (r2plus1d_18, unet3d, and held out
#: r3d_18; bench/results/taps_3d_W_h200.json, the kernel alone): 0.58-1.06 of one tap's
#: time, geomean 0.78 over 25 layers. On channels-last problems of TAPS_TYPES on TAPS_KINDS,
#: both their objects (the invoker's fallback for misaligned pointers launches the same grid
#: on the generic one); one object per group of TAP_GROUPS beside each such tile's.
TAP_GROUPS = ((3, 2), (2, 2), (3, 0))
TAPS_KINDS = ("sm90",)
TAPS_TYPES = ("FP16", "BF16")
#: The precision name of a solver's math mode in TILES ("ieee": the element type's own).
PRECISION_NAME = {"tf32": "TF32", "tf32x3": "FP32X3"}

#: The relaid solvers (solvers/triton_3d_relaid.py): NCDHW problems through the NDHWC
#: kernels with transposes, and NDHWC problems of channel counts that miss the aligned objects'
#: multiple of 16 through a channel-padded copy. They rank first on RELAID_KINDS (measured
#: there): the padded ones from RELAID_MIN_POSITIONS output positions (the 2-D padded solvers'
#: MIN_PIXELS), the NCDHW ones where the layer does at least VIA_MIN_MACS (per direction)
#: multiply-adds per element the copies write. On the H200 over the zoo's 45-46 distinct 3-D
#: layers at batch 32, FP16 (bench/results/alternatives_3d_relaid_h200.json), the Via solver's
#: time over the NCDHW kernel's: forward 1.58-3.46 at 13-51 (1x1x1 layers at stride 2), 0.17-0.88
#: from 59 on; backward data 1.03-1.11 at 77-102, 0.13-0.92 from 133 on; backward weights
#: 1.13-1.67 at 13-51, 0.41-0.84 from 59 on. Padded against the NDHWC kernel's generic object:
#: faster on all 15 odd-channel layers in every direction (geomean 0.25, 0.21, 0.18).
RELAID_KINDS = ("sm90",)
RELAID_MIN_POSITIONS = 1024
VIA_MIN_MACS = {"F": 55, "B": 120, "W": 55}
#: The directions whose FP32 NCDHW problems go through NDHWC on the three-TF32-product kernels
#: (the relaid Via solvers of that math), channel counts that meet PAD_MULTIPLE alone (no
#: padding), on RELAID_KINDS where VIA_MIN_MACS says. No run timed the route; on the H200 the
#: three-product kernel took 2.5-4x longer on an NCDHW layer than on its NDHWC twin, and that
#: time plus the copies at the cost per byte FP16's 3-D Via layers measured (bench/
#: via_estimate.py --dims 3; results via_estimate_3d_fp32_{f,b}_h200) is 0.29-0.60 of the
#: NCDHW kernel's in forward (8 layers) and 0.34-0.68 in backward data (6), 0.70 at most at
#: the copies' 90% point. Backward weights in NCDHW already took 0.4-0.96 of cuDNN's time.
RELAID_TF32X3 = ("F", "B")
#: Of those, the directions whose channel counts may need padding (both at least PAD_MULTIPLE:
#: few-channel stems are left out), NCDHW through NDHWC and NDHWC in place (the Padded
#: solvers; their FP32 copies' objects ship beside them). Forward, on an estimate
#: (bench/padded_estimate.py: the padded problem's multiply-adds at the three-product kernel's
#: throughput on the aligned NDHWC layers of a similar size, plus the copies;
#: padded_estimate_3d_fp32_{f,b}_h200 and _f_ndhwc_h200): 0.20-0.41 of the NCDHW kernel's time
#: on R(2+1)D's four such layers (0.26-0.53 pessimistic), 0.16-0.34 of the generic NDHWC
#: object's (0.20-0.44); backward data in NCDHW 0.61-1.91, where the NCDHW kernel ran these
#: layers faster than the aligned object runs its own.
RELAID_TF32X3_PADDED = ("F",)
#: The channel multiple of a padded copy: the aligned objects assume C and K multiples of 16.
PAD_MULTIPLE = 16

SPLITS = (1, 2, 4, 8, 16, 32, 64)
MAX_SPLIT = 64
#: Backward weights' default split keeps at least this many BLOCK_K steps in each part and
#: fills at most WAVES waves of programs: the 2-D family's fitted rule for its usual 64x64 tile
#: (kernels/conv_triton_tuned_sm90.json `wrw_rule`, bench/results/split_fit_h200.json). Two
#: waves, the rule before, left the 3-D stems' 147 tap programs unsplit, each looping over
#: 1.6M output positions (21-130x cuDNN on the H200: zoo_h200-nhwc-57b2c95).
MIN_PART_STEPS = 16
WAVES = 16
#: Forward and backward data split their reduction on a small grid: the rule and its constants
#: are `conv_triton_3d_split_spec`'s.
#: The narrow block: 16-bit problems of at most this many input channels C (an image or
#: video stem's 3, or 16 padded) run a tile this wide along C instead of the usual 64-128
#: (`narrow_tile`; NARROW_BLOCK: forward's reduction block, backward data's and backward
#: weights' columns), so that the block is not mostly zeros. A package ships these objects
#: beside the usual ones (16-bit types, both layouts).
NARROW = 16
NARROW_TYPES = ("FP16", "BF16")
NARROW_BLOCK = {"F": "BLOCK_K", "B": "BLOCK_N", "W": "BLOCK_N"}


def channels_last(strides: Mapping[str, tuple[int, ...]]) -> bool:
    """x, w and y have a unit channel stride (NDHWC)."""
    return strides["x"][1] == 1 and strides["w"][1] == 1 and strides["y"][1] == 1


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, ...]]) -> bool:
    """32-bit offsets (every tensor and backward weights' largest workspace), a grid within
    the y and z limits, and weights whose depth stride is R times their row stride (packed,
    either layout: the split's reduce kernel walks T and R as one axis)."""
    z = sizes
    if min(z[k] for k in ("N", "C", "K", "G", "D", "H", "W", "Z", "P", "Q", "T", "R", "S",
                          "stride_d", "stride_h", "stride_w", "dil_d", "dil_h", "dil_w")) < 1:
        return False
    if min(z["pad_d"], z["pad_h"], z["pad_w"]) < 0:
        return False
    taps = z["T"] * z["R"] * z["S"]
    if z["G"] * taps > GRID_YZ_MAX or z["stride_d"] * z["stride_h"] * z["stride_w"] > \
            GRID_YZ_MAX or max(z["G"], MAX_SPLIT) > GRID_YZ_MAX:
        return False
    if strides["w"][2] != z["R"] * strides["w"][3]:
        return False
    g = z["G"]
    largest = max(z["N"] * g * z["C"] * z["D"] * z["H"] * z["W"],
                  z["N"] * g * z["K"] * z["Z"] * z["P"] * z["Q"],
                  MAX_SPLIT * g * z["K"] * z["C"] * taps)
    dims = {"x": (z["N"], g * z["C"], z["D"], z["H"], z["W"]),
            "w": (g * z["K"], z["C"], z["T"], z["R"], z["S"]),
            "y": (z["N"], g * z["K"], z["Z"], z["P"], z["Q"])}
    spans = [sum((d - 1) * abs(s) for d, s in zip(dims[t], strides[t], strict=True))
             for t in dims]
    return largest < 2**31 and max(spans) < 2**31


def arg_values(direction: str, sizes: Mapping[str, int],
               strides: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """The i32 arguments of the direction's kernel (the same list in every direction)."""
    del direction
    out = {name: int(sizes[name]) for name in SIZES}
    for t, names in _STRIDES.items():
        out.update(zip(names, (int(v) for v in strides[t]), strict=True))
    return out


def meets_align16(args: Mapping[str, int]) -> bool:
    return all(int(args[a]) % 16 == 0 for a in _ALIGNED)


def gemm_dims(direction: str, sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """(M, N, inner) of a direction's GEMM: rows and columns tiled by BLOCK_M x BLOCK_N, and
    the loop stepped by BLOCK_K (per tap; backward data per stride phase)."""
    z = sizes
    if direction == "F":
        return z["N"] * z["Z"] * z["P"] * z["Q"], z["K"], z["C"]
    if direction == "B":
        rows = z["N"] * cdiv(z["D"], z["stride_d"]) * cdiv(z["H"], z["stride_h"]) * \
            cdiv(z["W"], z["stride_w"])
        return rows, z["C"], z["K"]
    return z["K"], z["C"], z["N"] * z["Z"] * z["P"] * z["Q"]


def lone_phase(sizes: Mapping[str, int]) -> bool:
    """Whether backward data of a stride above 1 has every tap on stride phase 0 (a tap t
    lands on phase (t*dil - pad) mod stride: an unpadded 1x1x1 filter, or padding and
    dilation multiples of the stride), so that every other phase of dx is zero."""
    z = sizes
    if z["stride_d"] * z["stride_h"] * z["stride_w"] == 1:
        return False
    return all(z[f"pad_{a}"] % z[f"stride_{a}"] == 0 and
               (z[f] == 1 or z[f"dil_{a}"] % z[f"stride_{a}"] == 0)
               for a, f in (("d", "T"), ("h", "R"), ("w", "S")))


def grid(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
         ) -> tuple[int, int, int]:
    """(tiles, G, SPLIT_K) forward, (tiles, G, stride phases x SPLIT_K) backward data
    (phase-major), phase 0 alone where `config` says ONE_PHASE (`lone_phase`: the caller clears
    dx first; never split); (tiles, G*T*R*S/TAPS, SPLIT_K) backward weights (`config`'s TAPS, 1
    where it has none)."""
    z = sizes
    m, n, _ = gemm_dims(direction, z)
    tiles = cdiv(m, int(config["BLOCK_M"])) * cdiv(n, int(config["BLOCK_N"]))
    split = int(config.get("SPLIT_K", 1))
    if direction == "F":
        return tiles, z["G"], split
    if direction == "B":
        phases = 1 if config.get("ONE_PHASE") else z["stride_d"] * z["stride_h"] * z["stride_w"]
        return tiles, z["G"], phases * split
    rows = z["G"] * z["T"] * z["R"] * z["S"] // int(config.get("TAPS", 1))
    return tiles, rows, int(config.get("SPLIT_K", 1))


def legal(direction: str, config: Mapping[str, int], dtype: str, kind: str,
          splits: tuple[int, ...] = SPLITS) -> bool:
    """The 2-D family's legal space of the kind (shared memory included) without its MMA
    choice; SPLIT_K of `splits` in every direction (tuning searches it in backward weights
    alone: `legal_space`; forward and backward data split by
    `conv_triton_3d_split_spec.small_split`). Backward weights
    store their FP32 sums along the tile's columns (contiguous in C), which converts the
    accumulator through shared memory: its BLOCK_M x BLOCK_N x 4 bytes must fit the kind's
    (sm90's 256x256 tile asked 262,144 bytes of 232,448 at launch)."""
    split = config.get("SPLIT_K")
    if split not in splits or "MMA" in config:
        return False
    if direction == "W" and not accumulator_fits(config, kind):
        return False
    return bool(is_legal({**config, "SPLIT_K": 1}, dtype, kind))


def accumulator_fits(config: Mapping[str, int], kind: str) -> bool:
    """Whether a tile's FP32 accumulator fits the kind's shared memory (`legal`)."""
    return int(config["BLOCK_M"]) * int(config["BLOCK_N"]) * 4 <= int(TARGET_KINDS[kind]["smem"])


def legal_space(direction: str, dtype: str, kind: str, splits: tuple[int, ...] = SPLITS
                ) -> list[dict[str, int]]:
    """Every legal configuration of a direction on a kind (the tuning search space), SPLIT_K
    of `splits` in backward weights."""
    space = TARGET_KINDS[kind]
    tried = splits if direction == "W" else (1,)
    out = []
    for bm in space["BLOCK_M"]:
        for bn in space["BLOCK_N"]:
            for bk in space["BLOCK_K"]:
                for warps in space["num_warps"]:
                    for stages in space["num_stages"]:
                        for group in space["GROUP_M"]:
                            for split in tried:
                                config = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                          "GROUP_M": group, "SPLIT_K": split,
                                          "num_warps": warps, "num_stages": stages}
                                if legal(direction, config, dtype, kind, splits):
                                    out.append(config)
    return out


def at_most(value: int, choices: tuple[int, ...]) -> int:
    """The largest of `choices` up to `value` (the least where none is)."""
    return max((c for c in choices if c <= value), default=min(choices))


def usual_tile(precision: str, direction: str, dtype: str, kind: str) -> dict[str, int]:
    """TILES' entry fitted to the kind: each value the largest legal one up to the entry's,
    then, while a lane would hold more sums than the kind's ACC_PER_LANE, and then while the
    operand tiles exceed the kind's shared memory, the larger of BLOCK_M and BLOCK_N halved
    (down to 64), then stages dropped."""
    space = TARGET_KINDS[kind]
    bm, bn, bk, warps, stages = TILES[(precision, direction)]
    config = {"BLOCK_M": at_most(bm, space["BLOCK_M"]), "BLOCK_N": at_most(bn, space["BLOCK_N"]),
              "BLOCK_K": at_most(bk, space["BLOCK_K"]), "GROUP_M": 8, "SPLIT_K": 1,
              "num_warps": at_most(warps, space["num_warps"]),
              "num_stages": at_most(stages, space["num_stages"])}
    while "ACC_PER_LANE" in space and max(config["BLOCK_M"], config["BLOCK_N"]) > 64 and (
            accumulators_per_lane(config, kind) > space["ACC_PER_LANE"]):
        wide = "BLOCK_M" if config["BLOCK_M"] >= config["BLOCK_N"] else "BLOCK_N"
        config[wide] //= 2
    while shared_bytes(config, dtype) > space["smem"]:
        wide = "BLOCK_M" if config["BLOCK_M"] >= config["BLOCK_N"] else "BLOCK_N"
        if config[wide] > 64 and config[wide] // 2 in space[wide]:
            config[wide] //= 2
        elif config["num_stages"] > min(space["num_stages"]):
            config["num_stages"] = at_most(config["num_stages"] - 1, space["num_stages"])
        else:
            config["BLOCK_K"] = at_most(config["BLOCK_K"] // 2, space["BLOCK_K"])
    return config


def wide_of(direction: str, config: Mapping[str, int]) -> dict[str, int]:
    """WIDE_TILES' tile of a 16-bit direction in place of `config`'s (its GROUP_M and SPLIT_K
    kept); `config` where the direction has none."""
    if direction not in WIDE_TILES:
        return dict(config)
    bm, bn, bk, warps, stages = WIDE_TILES[direction]
    return {**config, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": warps,
            "num_stages": stages}


def wide_applies(direction: str, dtype: str, sizes: Mapping[str, int], kind: str) -> bool:
    """Whether WIDE_RULE gives a problem of WIDE_TYPES the direction's wide tile on a kind of
    WIDE_KINDS (the solver asks it of problems that take the aligned channels-last object,
    where the tiles were measured)."""
    if dtype not in WIDE_TYPES or direction not in WIDE_RULE or kind not in WIDE_KINDS:
        return False
    least, positions = WIDE_RULE[direction]
    channels = min(sizes["C"], sizes["K"]) if direction == "W" else sizes["C"]
    return channels >= least and \
        sizes["N"] * sizes["D"] * sizes["H"] * sizes["W"] >= positions


def taps(direction: str, sizes: Mapping[str, int]) -> tuple[int, int]:
    """(TAPS, TAP_AXIS) of a problem: a group of TAP_GROUPS in backward weights (the filter's
    s axis where it has 2-3 taps, else its t axis where the filter is 3x1x1); (1, 2), one
    tap a program, otherwise. The solver asks it of problems TAPS_KINDS and TAPS_TYPES
    cover."""
    if direction == "W":
        t, r, s = int(sizes["T"]), int(sizes["R"]), int(sizes["S"])
        group = (s, 2) if s > 1 else (t, 0) if r == 1 else (1, 2)
        if group in TAP_GROUPS:
            return group
    return (1, 2)


def taps_fit(config: Mapping[str, int], dtype: str, kind: str, count: int) -> bool:
    """Whether a backward-weights tile's operands in flight fit the kind's shared memory with
    `count` x tiles a step (one dy tile and TAPS x tiles, each stage)."""
    wide = {**config, "BLOCK_N": int(config["BLOCK_N"]) * int(count)}
    return bool(shared_bytes(wide, dtype) <= TARGET_KINDS[kind]["smem"])


def narrow_tile(direction: str, config: Mapping[str, int], dtype: str,
                sizes: Mapping[str, int]) -> dict[str, int]:
    """`config` with its block along C (NARROW_BLOCK) cut to NARROW where C is at most that
    (16-bit types); other problems keep `config`."""
    out = dict(config)
    if dtype in NARROW_TYPES and int(sizes["C"]) <= NARROW:
        out = narrow_of(direction, out)
    return out


def narrow_of(direction: str, config: Mapping[str, int]) -> dict[str, int]:
    """The narrow variant of a usual tile (the object a package ships beside it)."""
    block = NARROW_BLOCK[direction]
    return {**config, block: min(int(config[block]), NARROW)}


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int) -> int:
    """Backward weights' SPLIT_K: doubled from 1 while the launch stays within WAVES waves of
    `sms` programs and each part keeps MIN_PART_STEPS steps, up to MAX_SPLIT."""
    gx, gy, _ = grid("W", sizes, {**config, "SPLIT_K": 1})
    steps = cdiv(gemm_dims("W", sizes)[2], int(config["BLOCK_K"]))
    return filling_split(gx * gy, steps, sms, MIN_PART_STEPS, MAX_SPLIT, WAVES)


def out_elements(direction: str, sizes: Mapping[str, int]) -> int:
    """Elements of forward's y or backward data's dx."""
    z = sizes
    if direction == "F":
        return z["N"] * z["G"] * z["K"] * z["Z"] * z["P"] * z["Q"]
    return z["N"] * z["G"] * z["C"] * z["D"] * z["H"] * z["W"]


def workspace_bytes(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
                    ) -> int:
    """A split launch's FP32 partials: of dw per part (backward weights), of y or dx per
    part (forward, backward data)."""
    split = int(config.get("SPLIT_K", 1))
    if split <= 1:
        return 0
    z = sizes
    if direction == "W":
        return split * z["G"] * z["K"] * z["C"] * z["T"] * z["R"] * z["S"] * 4
    return split * out_elements(direction, z) * 4


def reduce_values(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, ...]]
                  ) -> dict[str, int]:
    """The reduce kernel's i32 arguments (conv_triton_spec.REDUCE_ARGS) after a split
    backward-weights launch. The partials are (t*R + r, s, g*k, c), contiguous along c (the
    kernel's vector stores), and the reduce walks them in that order, its stores contiguous in
    NDHWC: T and R one axis of stride swr (applies' packed weights)."""
    z = sizes
    w = strides["w"]
    return {"TOTAL": z["G"] * z["K"] * z["C"] * z["T"] * z["R"] * z["S"], "C": z["S"],
            "R": z["G"] * z["K"], "S": z["C"], "swk": w[3], "swc": w[4], "swr": w[0],
            "sws": w[1]}


def efficiency(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The fraction of the launched tile work that is real."""
    return tile_efficiency(gemm_dims(direction, sizes), config)


def tile_efficiency(dims: tuple[int, int, int], config: Mapping[str, int]) -> float:
    """The fraction of the tile work over a GEMM of `dims` (M, N, inner) that is real."""
    out = 1.0
    for dim, block in zip(dims,
                          (config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]),
                          strict=True):
        dim = max(int(dim), 1)
        out *= dim / (cdiv(dim, int(block)) * int(block))
    return out


def split_object(direction: str, split: int) -> int:
    """The SPLIT constexpr of the forward or backward-data object a launch of `split` parts
    runs: 0 unsplit, 1 for every split above one (backward weights: no such constexpr, 0)."""
    return int(direction != "W" and split > 1)


def signature(direction: str, dtype: str, config: Mapping[str, int], last: bool,
              precision: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object for `triton.compiler.ASTSource` (`config`'s
    TAPS and TAP_AXIS where it groups taps; forward's and backward data's SPLIT from its
    SPLIT_K)."""
    values = {"BLOCK_M": int(config["BLOCK_M"]), "BLOCK_N": int(config["BLOCK_N"]),
              "BLOCK_K": int(config["BLOCK_K"]), "GROUP_M": int(config["GROUP_M"]),
              "CHANNELS_LAST": int(last), "PRECISION": precision,
              "SPLIT": split_object(direction, int(config.get("SPLIT_K", 1)))}
    sig, constexprs = typed_signature(ARGS[KERNEL[direction]], dtype, values)
    if int(config.get("TAPS", 1)) > 1:  # backward weights' tap group (one tap: the defaults)
        for name in ("TAPS", "TAP_AXIS"):
            sig[name] = "constexpr"
            constexprs[name] = int(config[name])
    return sig, constexprs
