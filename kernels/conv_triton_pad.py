"""The channel-padding copy of the padded implicit GEMM solvers (solvers/triton_padded.py).

An implicit GEMM object that assumes its channel counts and strides multiples of 8 (16-bit
channels-last; `conv_triton_spec.align_divisor`) loads 16-byte vectors; a layer of 819, 255 or
36 filters, or 45 or 460 input channels, meets no such assumption and takes the generic object,
which loads one element at a time. The padded solvers copy each tensor whose channel count is
not a multiple of 8 into the workspace with its channels rounded up (the new ones zero), run
the aligned object on the padded problem, and copy the output's real channels back.

- `pad_rows`: dst[r, c] = src[r * SRC_STRIDE + c] for r < ROWS and c < COLS, 0 elsewhere, over
  r < DST_ROWS and c < DST_COLS, the destination's rows DST_STRIDE apart. A channels-last
  tensor is [rows][channels]: padding copies it with wider rows (COLS -> DST_COLS), and KRSC
  weights padded in filters too get zero rows after the real ones (ROWS -> DST_ROWS);
  unpadding reads the padded rows (SRC_STRIDE) and writes the real columns alone.

Importing this module needs Triton but no GPU; launch data is in `conv_triton_pad_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def pad_rows(
    src_ptr, dst_ptr, ROWS, COLS, SRC_STRIDE, DST_ROWS, DST_COLS, DST_STRIDE,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """One BLOCK_R x BLOCK_C tile of the destination (program axes 0: rows, 1: columns)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    inside = (rows < ROWS)[:, None] & (cols < COLS)[None, :]
    t = tl.load(src_ptr + rows[:, None] * SRC_STRIDE + cols[None, :], mask=inside, other=0.0)
    out = (rows < DST_ROWS)[:, None] & (cols < DST_COLS)[None, :]
    tl.store(dst_ptr + rows[:, None] * DST_STRIDE + cols[None, :], t, mask=out)


#: The tuple arguments of this file's kernels (none).
TUPLE_ARGS: dict[str, tuple[str, ...]] = {}

#: The jit functions by name.
JIT = {"pad_rows": pad_rows}
