"""What a launch of the pointwise row kernels (kernels/conv_triton_pointwise.py) needs, as plain
data.

Standard library only (and `conv_triton_spec`), so the runtime reads it without Triton. Sizes
are the 3-D families' (`N`, `C`, `K`, `G`, `D`, `H`, `W`, filter `T`, `R`, `S`, strides, pads;
a 2-D problem has depth 1), strides in elements in (n, c, d, h, w) / (k, c, t, r, s) /
(n, k, d, h, w) order. The kernels take 1x1 (1x1x1) filters at stride 1 without padding, one
group, whose x and y are channels-last with every position a row `rows_of` finds at one stride
(packed NHWC and NDHWC, or any padding after each row's channels), and at most NARROW channels
on one side (`applies`).

Tunables are the implicit GEMM's seven (PerfDb order): BLOCK_M the rows (forward and backward
data) or the filters (backward weights), BLOCK_N the output's columns (forward, backward data)
or the channels (backward weights), BLOCK_K the reduction's channels or rows a step, SPLIT_K
backward weights' parts (the object compiled at SPLIT_OBJECT serves every split: its parts
are the grid's axis 1), num_warps and num_stages; GROUP_M is 1. A package ships per type the
usual tiles (TILES: one for a narrow output or filter side, one for a narrow input side), each
generic and aligned on its wide side (ALIGNED_ARGS: that side's loads or stores 16-byte
vectors; `meets_aligned`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import SPLIT_OBJECT, cdiv, filling_split, split_object, typed_signature

#: Target kinds the solvers apply on (measured there).
KINDS = ("sm90",)
#: FP32 runs its products on the FP32 units (the "ieee" dot): the layers are memory-bound.
TYPES = ("FP16", "BF16", "FP32")
#: The most channels the narrow side may have.
NARROW = 16
#: Per arch (DbId), the cases (`<type>-<direction>-<layout>`) where the miss ranking puts the
#: direction's solver first, each with the claim it makes (`claims`): (the most channels on
#: the narrow side, the fewest rows), or (those, the most rows, 1) for a claim on layers whose
#: narrow side is read (forward's input, backward data's), within a range of rows: a claim is
#: bounded thus only where no unbounded one gains.
#: sm90: `python bench/pointwise_first.py` over the H100 runs of bench/gpu_pointwise.sh
#: (bench/results/pointwise_h100-5ea1be3/alt.json at batch 32, pointwise_h100-e75bf7f/alt.json
#: at batches 32, 8 and 1, pointwise_h100-64b308a/alt.json, FP32 forward and backward data of
#: the one-position layers at batches 16 to 256: this solver beside immediate mode's first
#: choice on the zoo's 1x1 channels-last layers of at most 16 channels on one side);
#: tests/unit/test_results_pointwise.py fits it again from the runs. FP32 forward and backward
#: data only on the squeeze-and-excitation layers' row range: the GEMM library's IEEE product
#: ran the large layers at half this kernel's time. The 3-D claims rest on one zoo layer (3D
#: U-Net's 64 -> 3 head).
FIRST: dict[str, dict[str, tuple[int, ...]]] = {
    "sm90": {
        "BF16-B-NDHWC": (3, 2097152),
        "BF16-B-NHWC": (12, 8),
        "BF16-F-NDHWC": (3, 2097152),
        "BF16-F-NHWC": (12, 32),
        "BF16-W-NDHWC": (3, 2097152),
        "BF16-W-NHWC": (8, 65536),
        "FP16-B-NDHWC": (3, 2097152),
        "FP16-B-NHWC": (2, 65536),
        "FP16-F-NDHWC": (3, 2097152),
        "FP16-F-NHWC": (8, 32768),
        "FP16-W-NDHWC": (3, 2097152),
        "FP16-W-NHWC": (2, 65536),
        "FP32-B-NHWC": (12, 32, 256, 1),
        "FP32-F-NHWC": (8, 32, 128, 1),
        "FP32-W-NDHWC": (3, 2097152),
        "FP32-W-NHWC": (16, 4096),
    },
}

KERNEL = {"F": "pointwise_rows", "B": "pointwise_rows", "W": "pointwise_wrw"}
_TILE_ARGS = (("BLOCK_M", "constexpr"), ("BLOCK_N", "constexpr"), ("BLOCK_K", "constexpr"))
ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "pointwise_rows": (
        ("a_ptr", "ptr"), ("b_ptr", "ptr"), ("o_ptr", "ptr"), ("M", "i32"), ("KD", "i32"),
        ("NO", "i32"), ("s_am", "i32"), ("s_bi", "i32"), ("s_bj", "i32"), ("s_om", "i32"),
        *_TILE_ARGS, ("PRECISION", "constexpr")),
    "pointwise_wrw": (
        ("x_ptr", "ptr"), ("y_ptr", "ptr"), ("ws_ptr", "ptr_fp32"), ("M", "i32"), ("C", "i32"),
        ("K", "i32"), ("s_xm", "i32"), ("s_ym", "i32"), *_TILE_ARGS, ("SPLIT_K", "constexpr"),
        ("PRECISION", "constexpr")),
}
#: The tensor (x, w, y of the convolution, or the workspace) each pointer is, per direction.
TENSORS: dict[str, dict[str, str]] = {
    "F": {"a_ptr": "x", "b_ptr": "w", "o_ptr": "y"},
    "B": {"a_ptr": "y", "b_ptr": "w", "o_ptr": "x"},
    "W": {"x_ptr": "x", "y_ptr": "y", "ws_ptr": "ws"},
}
#: Every object's assumptions are its side's (ALIGNED_ARGS), not the kernel's alone.
ALIGN16: dict[str, tuple[str, ...]] = {k: () for k in ARGS}

_W = {"GROUP_M": 1, "num_warps": 4, "num_stages": 3}
_W32 = {"GROUP_M": 1, "num_warps": 4, "num_stages": 2}
#: The usual tiles per direction and precision (16-bit types, FP32): [0] where the output
#: (forward, backward data) or the filters (backward weights) are the narrow side, [1] where
#: the other side is. FP32's reduction blocks are narrower: its products run on the FP32
#: units from registers (at 64 a step forward's object spilled on sm90).
TILES: dict[tuple[str, bool], tuple[dict[str, int], dict[str, int]]] = {
    ("F", False): ({**_W, "BLOCK_M": 128, "BLOCK_N": 16, "BLOCK_K": 64, "SPLIT_K": 1},
                   {**_W, "BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 16, "SPLIT_K": 1}),
    ("W", False): ({**_W, "BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "SPLIT_K": SPLIT_OBJECT},
                   {**_W, "BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 128, "SPLIT_K": SPLIT_OBJECT}),
    ("F", True): ({**_W32, "BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 16, "SPLIT_K": 1},
                  {**_W32, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 16, "SPLIT_K": 1}),
    ("W", True): ({**_W32, "BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 32, "SPLIT_K": SPLIT_OBJECT},
                  {**_W32, "BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 32, "SPLIT_K": SPLIT_OBJECT}),
}
TILES[("B", False)] = TILES[("F", False)]
TILES[("B", True)] = TILES[("F", True)]
#: What an aligned object assumes multiples of `align_divisor` (and every pointer 16-byte
#: aligned), by kernel and side: the wide side's row stride and width, so that its loads
#: (forward, backward weights) or stores (backward data) are 16-byte vectors. Side 0: the
#: output (filters) narrow, the input wide; side 1 the other way.
ALIGNED_ARGS: dict[tuple[str, int], tuple[str, ...]] = {
    ("pointwise_rows", 0): ("s_am", "KD"), ("pointwise_rows", 1): ("s_om", "NO"),
    ("pointwise_wrw", 0): ("s_xm", "C"), ("pointwise_wrw", 1): ("s_ym", "K")}
#: The legal space (tuning): blocks of these sizes, tensor-core shapes throughout.
BLOCK_M = (16, 32, 64, 128, 256)
BLOCK_N = (16, 32, 64, 128)
BLOCK_K = (16, 32, 64, 128)
WARPS = (4, 8)
STAGES = (1, 2, 3, 4)
#: Backward weights' splits: up to MAX_SPLIT parts (the grid's axis 1), each keeping at least
#: MIN_PART_STEPS steps of BLOCK_K rows, within WAVES waves of programs.
MAX_SPLIT = 1024
MIN_PART_STEPS = 8
WAVES = 4
GRID_YZ_MAX = 65535
#: The most rows (positions) a problem may have: row indices stay 32-bit past a tile's end.
MAX_ROWS = 2**30


def rows_of(sizes: Mapping[str, int], strides: tuple[int, ...]) -> int | None:
    """The row stride of a channels-last activation (n, c, d, h, w strides) whose positions,
    every image's, are rows that far apart, each holding its channels at stride 1; None for
    any other tensor. A size-1 axis's stride does not matter: a channel-planar tensor of one
    position an image (a squeeze-and-excitation layer's, NCHW) is rows too."""
    sn, sc, sd, sh, sw = (int(v) for v in strides)
    n, d, h, w = (int(sizes[a]) for a in ("N", "D", "H", "W"))
    axes = ((w, sw), (h, sh), (d, sd), (n, sn))
    row = next((stride for size, stride in axes if size > 1), sn)
    if sc != 1 or row < 1:
        return None
    expected = row
    for size, stride in axes:
        if size > 1 and stride != expected:
            return None
        expected *= size
    return row


def narrow_side(sizes: Mapping[str, int]) -> int:
    return min(int(sizes["C"]), int(sizes["K"]))


def claims(arch: str, case: str, sizes: Mapping[str, int]) -> bool:
    """Whether FIRST lists the case for the arch and the problem is within its claim: at most
    that many channels on the narrow side, at least that many rows, and for a bounded claim
    at most its most rows and the narrow side the one read (`side` 1)."""
    claim = FIRST.get(arch, {}).get(case, (0, 0))
    most, least = claim[0], claim[1]
    rows = positions(sizes)
    if narrow_side(sizes) > most or rows < least:
        return False
    if len(claim) == 2:
        return True
    direction = case.split("-")[1]
    return rows <= claim[2] and (not claim[3] or side(direction, sizes) == 1)


def applies(sizes: Mapping[str, int], strides: Mapping[str, tuple[int, ...]]) -> bool:
    """1x1 (1x1x1) filters at stride 1 without padding, one group, channels-last x and y of
    one row stride each (`rows_of`, at least the channels), at most NARROW channels on one
    side, at most MAX_ROWS rows, 32-bit strides and partial offsets."""
    z = sizes
    geometry = tuple(int(z[a]) for a in ("T", "R", "S", "stride_d", "stride_h", "stride_w",
                                         "pad_d", "pad_h", "pad_w", "G"))
    if geometry != (1,) * 6 + (0,) * 3 + (1,) or narrow_side(z) > NARROW:
        return False
    sx, sy = rows_of(z, strides["x"]), rows_of(z, strides["y"])
    if sx is None or sy is None or sx < int(z["C"]) or sy < int(z["K"]):
        return False
    return positions(z) < MAX_ROWS and max(sx, sy, *(abs(int(v)) for v in strides["w"][:2])) < \
        2**31 and MAX_SPLIT * int(z["K"]) * int(z["C"]) < 2**31


def positions(sizes: Mapping[str, int]) -> int:
    """M: the rows, every image's positions."""
    return int(sizes["N"]) * int(sizes["D"]) * int(sizes["H"]) * int(sizes["W"])


def arg_values(direction: str, sizes: Mapping[str, int],
               strides: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """The i32 arguments of the direction's kernel."""
    z = sizes
    sx, sy = rows_of(z, strides["x"]) or 0, rows_of(z, strides["y"]) or 0
    swk, swc = (int(v) for v in strides["w"][:2])
    m = positions(z)
    if direction == "F":
        return {"M": m, "KD": z["C"], "NO": z["K"], "s_am": sx, "s_bi": swc, "s_bj": swk,
                "s_om": sy}
    if direction == "B":
        return {"M": m, "KD": z["K"], "NO": z["C"], "s_am": sy, "s_bi": swk, "s_bj": swc,
                "s_om": sx}
    return {"M": m, "C": z["C"], "K": z["K"], "s_xm": sx, "s_ym": sy}


def side(direction: str, sizes: Mapping[str, int]) -> int:
    """0 where the output (forward: filters, backward data: channels) or backward weights'
    filters are the narrow side, else 1."""
    z = sizes
    narrow_out = {"F": z["K"], "B": z["C"], "W": z["K"]}[direction]
    return 0 if int(narrow_out) == narrow_side(z) else 1


def usual_tile(direction: str, sizes: Mapping[str, int], dtype: str) -> dict[str, int]:
    """TILES' entry for the problem's narrow side and the type's precision."""
    return dict(TILES[(direction, dtype == "FP32")][side(direction, sizes)])


def align_divisor(dtype: str) -> int:
    """16 bytes of the type, in elements."""
    return 4 if dtype == "FP32" else 8


def meets_aligned(direction: str, sizes: Mapping[str, int], args: Mapping[str, int],
                  dtype: str) -> bool:
    """Whether a problem's i32 arguments meet its side's aligned object (the caller checks the
    pointers)."""
    names = ALIGNED_ARGS[(KERNEL[direction], side(direction, sizes))]
    return all(int(args[a]) % align_divisor(dtype) == 0 for a in names)


def grid(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
         ) -> tuple[int, int, int]:
    z = sizes
    if direction == "W":
        tiles = cdiv(z["K"], config["BLOCK_M"]) * cdiv(z["C"], config["BLOCK_N"])
        return tiles, int(config.get("SPLIT_K", 1)), 1
    out = z["K"] if direction == "F" else z["C"]
    return cdiv(positions(z), config["BLOCK_M"]) * cdiv(out, config["BLOCK_N"]), 1, 1


def split_for(sizes: Mapping[str, int], config: Mapping[str, int], sms: int) -> int:
    """Backward weights' parts: doubled from 1 (filling_split) while the launch stays within
    WAVES waves of `sms` programs and each part keeps MIN_PART_STEPS steps, at most
    MAX_SPLIT; at least 2 (the object is the split one)."""
    tiles = grid("W", sizes, {**config, "SPLIT_K": 1})[0]
    steps = cdiv(positions(sizes), int(config["BLOCK_K"]))
    return max(2, filling_split(tiles, steps, sms, MIN_PART_STEPS, MAX_SPLIT, WAVES))


def workspace_bytes(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]
                    ) -> int:
    """Backward weights' FP32 partials ([parts][K][C])."""
    if direction != "W":
        return 0
    return int(config.get("SPLIT_K", 1)) * int(sizes["K"]) * int(sizes["C"]) * 4


def legal(direction: str, config: Mapping[str, int]) -> bool:
    """Blocks, warps and stages in the legal space; GROUP_M 1; backward weights split (2 to
    MAX_SPLIT parts, within the grid's axis 1), the others not."""
    c = config
    if (c["BLOCK_M"] not in BLOCK_M or c["BLOCK_N"] not in BLOCK_N or
            c["BLOCK_K"] not in BLOCK_K or c["num_warps"] not in WARPS or
            c["num_stages"] not in STAGES or c.get("GROUP_M", 1) != 1):
        return False
    split = int(c.get("SPLIT_K", 1))
    if direction == "W":
        return 2 <= split <= min(MAX_SPLIT, GRID_YZ_MAX)
    return split == 1


def legal_space(direction: str) -> list[dict[str, int]]:
    """Every legal tile of a direction (backward weights at the split object's SPLIT_K)."""
    split = SPLIT_OBJECT if direction == "W" else 1
    return [{"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 1, "SPLIT_K": split,
             "num_warps": w, "num_stages": s}
            for m in BLOCK_M for n in BLOCK_N for k in BLOCK_K for w in WARPS for s in STAGES]


def precision(dtype: str) -> str:
    """The dot's precision: FP32 at IEEE accuracy (the FP32 units), 16-bit types as they are."""
    return "ieee"


def signature(direction: str, dtype: str, config: Mapping[str, int]
              ) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of one object for `triton.compiler.ASTSource`."""
    values: dict[str, Any] = {k: int(config[k]) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    values["PRECISION"] = precision(dtype)
    values["SPLIT_K"] = split_object(int(config.get("SPLIT_K", 1)))
    return typed_signature(ARGS[KERNEL[direction]], dtype, values)


def efficiency(direction: str, sizes: Mapping[str, int], config: Mapping[str, int]) -> float:
    """The share of the tile's columns the narrow side fills (the rows stream)."""
    out = {"F": sizes["K"], "B": sizes["C"]}.get(direction)
    if out is None:
        k, c = int(sizes["K"]), int(sizes["C"])
        return (k / (cdiv(k, config["BLOCK_M"]) * config["BLOCK_M"])) * \
            (c / (cdiv(c, config["BLOCK_N"]) * config["BLOCK_N"]))
    out = int(out)
    return out / (cdiv(out, config["BLOCK_N"]) * config["BLOCK_N"])
