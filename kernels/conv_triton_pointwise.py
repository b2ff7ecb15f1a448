"""Pointwise (1x1, 1x1x1) convolutions of channels-last tensors narrow on one side, as GEMMs
over one matrix of rows.

With a 1x1 filter at stride 1 and no padding, a channels-last tensor (NHWC, NDHWC) is one
matrix: a row per position of every image (M = N * positions), a column per channel, rows
`s_m` elements apart. Forward is y (M x K) = x (M x C) w^T, backward data dx (M x C) = dy w,
backward weights dw (K x C) = dy^T x, 2-D and 3-D alike. Where one side is a few channels (an
image or mask head, 64 -> 2 or 3; a latent, 4 or 8; 3D U-Net's 64 -> 3 over 67M positions) the
GEMM library's tiles are mostly padding and the layer streams its wide side: these kernels
walk the rows BLOCK_M at a time with a column block as wide as the narrow side, so the time
is the bytes of the wide side.

- `pointwise_rows`: forward and backward data. o[m, j] = sum over i of a[m, i] * b(i, j): `a`
  is x (forward) or dy (backward data), `o` the output; b(i, j) is at i * s_bi + j * s_bj
  (forward: w[j, i]; backward data: w[i, j]). Program axis 0 walks BLOCK_M rows by BLOCK_N
  output columns, the reduction BLOCK_K a step.
- `pointwise_wrw`: backward weights. Part `program_id(1)` of the launch's (however many) sums
  its even share of the M rows, BLOCK_K a step, into a BLOCK_M x BLOCK_N tile of dw (filters
  by channels) and writes it, FP32, to ws[part][K][C]; `conv2d_bwd_weight_reduce`
  (kernels/conv_triton.py) sums the parts into dw.

Row offsets are 64-bit (3D U-Net's x at batch 32 holds 4.3G elements); row indices and every
other index are 32-bit (the spec bounds the rows). Importing this module needs Triton but no
GPU; launch data is in `conv_triton_pointwise_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .conv_triton_common import mma as _mma
from .conv_triton_common import part_range


@triton.jit
def pointwise_rows(
    a_ptr, b_ptr, o_ptr, M, KD, NO, s_am, s_bi, s_bj, s_om,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """o[m, j] = sum over i < KD of a[m, i] * b(i, j), for m < M, j < NO (a's and o's column
    strides 1)."""
    cols = tl.cdiv(NO, BLOCK_N)
    pid = tl.program_id(0)
    pid_m = pid // cols
    pid_n = pid - pid_m * cols
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    j = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    i = tl.arange(0, BLOCK_K)
    m_ok = rows < M
    j_ok = j < NO
    a_ptrs = a_ptr + (rows * s_am)[:, None] + i[None, :]
    b_ptrs = b_ptr + (i * s_bi)[:, None] + (j * s_bj)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in range(0, KD, BLOCK_K):
        i_ok = i0 + i < KD
        a = tl.load(a_ptrs, mask=m_ok[:, None] & i_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=i_ok[:, None] & j_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * s_bi
    tl.store(o_ptr + (rows * s_om)[:, None] + j[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=m_ok[:, None] & j_ok[None, :])


@triton.jit
def pointwise_wrw(
    x_ptr, y_ptr, ws_ptr, M, C, K, s_xm, s_ym,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr, PRECISION: tl.constexpr,
):
    """ws[part, k, c] = sum over this part's rows m of dy[m, k] * x[m, c] (dy's and x's column
    strides 1); tiles of filters k (BLOCK_M) by channels c (BLOCK_N) on program axis 0."""
    cols = tl.cdiv(C, BLOCK_N)
    pid = tl.program_id(0)
    pid_m = pid // cols
    pid_n = pid - pid_m * cols
    part = tl.program_id(1)
    k = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    c = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    r = tl.arange(0, BLOCK_K)
    k_ok = k < K
    c_ok = c < C
    s0, s1 = part_range(tl.cdiv(M, BLOCK_K), SPLIT_K, part, tl.num_programs(1))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(s0, s1):
        rows = (step * BLOCK_K + r).to(tl.int64)
        r_ok = rows < M
        a = tl.load(y_ptr + (rows * s_ym)[None, :] + k[:, None],
                    mask=k_ok[:, None] & r_ok[None, :], other=0.0)
        b = tl.load(x_ptr + (rows * s_xm)[:, None] + c[None, :],
                    mask=r_ok[:, None] & c_ok[None, :], other=0.0)
        acc = _mma(a, b, acc, PRECISION)
    tl.store(ws_ptr + (part * K + k)[:, None] * C + c[None, :], acc,
             mask=k_ok[:, None] & c_ok[None, :])
