"""What a launch of the channel-padding copy (kernels/conv_triton_pad.py) needs, as plain data.

Standard library only (and `conv_triton_spec`), so the runtime reads it without Triton. The
copy takes a [ROWS][COLS] matrix with rows SRC_STRIDE apart into a [DST_ROWS][DST_COLS] one with
rows DST_STRIDE apart, zero where the source has no element. One object per element type and
tile (`TILES`): a narrow tile for rows of at most 16 columns, a wide one otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conv_triton_spec import cdiv, typed_signature

#: Target kinds the padded solvers apply on: every kind of the implicit GEMM. They rank first
#: only on FIRST_KINDS, where they were measured (bench/results/README.md).
KINDS = ("sm80", "sm90", "sm100", "sm120", "cdna", "cdna4", "rdna")
FIRST_KINDS = ("sm90",)
#: The fewest output pixels (batch x output height x width) of a problem the padded solvers rank
#: first on: below it the copies' two launches cost more than the vector loads save. On the
#: H200 over the zoo's odd-channel layers (bench/results/padded_h200.json), FP16 NHWC at batch
#: 32, the padded solvers took 0.34-2.25x the time of what served the problem before at 32
#: output pixels (squeeze-and-excitation layers: 3-40 us), and 0.02-1.15x from 2,016 pixels up.
MIN_PIXELS = 1024
#: Below MIN_PIXELS they rank first where the reduction behind each output element is at least
#: this long (forward: C*R*S; backward data: K*R*S; backward weights never): the generic
#: object's serial element loads then cost more than the copies. Over the same layers at 32
#: output pixels, the padded forward took 0.55-0.89x the time of what served it before at 240
#: or more (5 layers) and 0.99-2.19x below (15); backward data 0.34-0.96x on all 14 (26-672);
#: backward weights 0.65-2.25x (bench/results/padded_h200.json).
SMALL_FIRST_REDUCTION = {"F": 240, "B": 1}
#: Element types: those whose channels-last implicit GEMM objects assume multiples of 8.
TYPES = ("FP16", "BF16")
#: The channel multiple a padded tensor takes (a 16-byte vector of a 16-bit type).
MULTIPLE = 8
KERNEL = "pad_rows"
#: Kernels that run no matrix instruction (a copy): builder/codeobject.py does not ask for one.
NO_MATRIX_KERNELS = frozenset({KERNEL})
ARGS: tuple[tuple[str, str], ...] = (
    ("src_ptr", "ptr"), ("dst_ptr", "ptr"), ("ROWS", "i32"), ("COLS", "i32"),
    ("SRC_STRIDE", "i32"), ("DST_ROWS", "i32"), ("DST_COLS", "i32"), ("DST_STRIDE", "i32"),
    ("BLOCK_R", "constexpr"), ("BLOCK_C", "constexpr"),
)
#: (BLOCK_R, BLOCK_C): narrow (rows of up to 16 channels) and wide.
TILES: tuple[tuple[int, int], ...] = ((256, 16), (32, 128))
WARPS = 4
GRID_YZ_MAX = 65535


def padded(channels: int) -> int:
    """A channel count rounded up to MULTIPLE."""
    return cdiv(int(channels), MULTIPLE) * MULTIPLE


def tile(columns: int) -> tuple[int, int]:
    """The tile of a copy whose destination rows hold `columns` elements."""
    return TILES[0] if columns <= TILES[0][1] else TILES[1]


def grid(dst_rows: int, dst_cols: int) -> tuple[int, int, int]:
    block_r, block_c = tile(dst_cols)
    return cdiv(dst_rows, block_r), cdiv(dst_cols, block_c), 1


def fits(rows: int, cols: int, src_stride: int, dst_rows: int, dst_cols: int,
         dst_stride: int) -> bool:
    """Whether one launch copies it: 32-bit offsets on both sides, the grid within its
    limits."""
    if not (rows > 0 and 0 < cols <= src_stride and dst_rows > 0 and
            0 < dst_cols <= dst_stride):
        return False
    gx, gy, _ = grid(dst_rows, dst_cols)
    return dst_rows * dst_stride < 2**31 and rows * src_stride < 2**31 and gx < 2**31 and \
        gy <= GRID_YZ_MAX


def signature(data_type: str, tile_rc: tuple[int, int]) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of the copy's object of one element type and tile."""
    values: Mapping[str, Any] = {"BLOCK_R": tile_rc[0], "BLOCK_C": tile_rc[1]}
    return typed_signature(ARGS, data_type, values)
