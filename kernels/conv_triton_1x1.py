"""1x1 stride-1 convolutions of NCHW tensors as plain GEMMs on tensor cores.

With a 1x1 filter, stride 1 and no padding, each image's channel planes are a matrix with
contiguous rows: forward is y[n] (K x PQ) = w (K x C) x[n] (C x PQ), backward data
dx[n] (C x PQ) = w^T dy[n], backward weights dw (K x C) = sum over n of dy[n] x[n]^T. The
implicit GEMM reads these operands through its pixel gather (image, row, column per element),
which hides from the compiler that pixels are contiguous; here the pixel offset is the index
itself, so operand loads are 16-byte vectors and the tensor cores stay fed.

- `conv1x1_nchw`: forward and backward data (program axis 1: the image). `a` is x (forward) or
  dy (backward data), `o` the output, CIN the reduction's channels, COUT the output's.
  W_BY_OUT says which weight stride is the unit one: 0 in forward (w[k, c]: c, the reduction,
  is contiguous), 1 in backward data (the output's channel c is).
- `conv1x1_nchw_wrw`: backward weights. The object compiled with SPLIT_K > 1 serves every
  split: the launch's parts (program axis 1, however many) cut the reduction's (image, pixel
  block) steps evenly, within images too, each writing FP32 partials to ws ([parts][K][C])
  that `conv2d_bwd_weight_reduce` (kernels/conv_triton.py) sums into dw.

Importing this module needs Triton but no GPU; launch data is in `conv_triton_1x1_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .conv_triton_common import part_range, split_range, tile_ids, tile_offsets


@triton.jit
def conv1x1_nchw(
    a_ptr, w_ptr, o_ptr, CIN, COUT, PQ, s_an, s_ac, s_on, s_oc, s_w,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, W_BY_OUT: tl.constexpr,
):
    """o[n, j, p] = sum over i of w(j, i) * a[n, i, p]: rows are pixels p, columns output
    channels j, the reduction input channels i. w(j, i) is at j * s_w + i (W_BY_OUT = 0) or
    i * s_w + j (W_BY_OUT = 1)."""
    n = tl.program_id(1)
    pix, out = tile_offsets(PQ, COUT, BLOCK_M, BLOCK_N, GROUP_M)
    red = tl.arange(0, BLOCK_K)
    pix_ok = pix < PQ
    out_ok = out < COUT
    a_ptrs = a_ptr + n * s_an + pix[:, None] + (red * s_ac)[None, :]
    if W_BY_OUT:
        w_ptrs = w_ptr + out[None, :] + (red * s_w)[:, None]
        w_step = BLOCK_K * s_w
    else:
        w_ptrs = w_ptr + (out * s_w)[None, :] + red[:, None]
        w_step = BLOCK_K
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in range(0, CIN, BLOCK_K):
        red_ok = i0 + red < CIN
        a = tl.load(a_ptrs, mask=pix_ok[:, None] & red_ok[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=red_ok[:, None] & out_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * s_ac
        w_ptrs += w_step
    tl.store(o_ptr + n * s_on + pix[:, None] + (out * s_oc)[None, :],
             acc.to(o_ptr.dtype.element_ty), mask=pix_ok[:, None] & out_ok[None, :])


@triton.jit
def conv1x1_nchw_wrw(
    x_ptr, y_ptr, w_ptr, ws_ptr, N, C, K, PQ, sxn, sxc, syn, syk, swk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
):
    """dw[k, c] = sum over images n and pixels p of dy[n, k, p] * x[n, c, p] (dw's channel
    stride 1). With SPLIT_K > 1 part `program_id(1)` of the grid's takes an even share of the
    N * cdiv(PQ, BLOCK_K) (image, pixel block) steps and writes its FP32 partial to
    ws[part][k][c]."""
    pid_m, pid_n = tile_ids(tl.program_id(0), tl.cdiv(K, BLOCK_M), tl.cdiv(C, BLOCK_N),
                            GROUP_M)
    # The split's id before the tile's aranges (not tile_offsets): the instruction order,
    # and so the object, that was measured.
    split = tl.program_id(1)
    k = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    c = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    pix = tl.arange(0, BLOCK_K)
    k_ok = k < K
    c_ok = c < C
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if SPLIT_K == 1:
        n0, n1 = split_range(N, SPLIT_K, split)
        for n in range(n0, n1):
            y_ptrs = y_ptr + n * syn + (k * syk)[:, None] + pix[None, :]
            x_ptrs = x_ptr + n * sxn + (c * sxc)[None, :] + pix[:, None]
            for p0 in range(0, PQ, BLOCK_K):
                p_ok = p0 + pix < PQ
                a = tl.load(y_ptrs, mask=k_ok[:, None] & p_ok[None, :], other=0.0)
                b = tl.load(x_ptrs, mask=p_ok[:, None] & c_ok[None, :], other=0.0)
                acc = tl.dot(a, b, acc)
                y_ptrs += BLOCK_K
                x_ptrs += BLOCK_K
    else:
        blocks = tl.cdiv(PQ, BLOCK_K)
        b0, b1 = part_range(N * blocks, SPLIT_K, split, tl.num_programs(1))
        for step in range(b0, b1):
            n = step // blocks
            p = (step - n * blocks) * BLOCK_K + pix
            p_ok = p < PQ
            a = tl.load(y_ptr + n * syn + (k * syk)[:, None] + p[None, :],
                        mask=k_ok[:, None] & p_ok[None, :], other=0.0)
            b = tl.load(x_ptr + n * sxn + (c * sxc)[None, :] + p[:, None],
                        mask=p_ok[:, None] & c_ok[None, :], other=0.0)
            acc = tl.dot(a, b, acc)
    mask = k_ok[:, None] & c_ok[None, :]
    if SPLIT_K == 1:
        tl.store(w_ptr + (k * swk)[:, None] + c[None, :], acc.to(w_ptr.dtype.element_ty),
                 mask=mask)
    else:
        tl.store(ws_ptr + (split * K + k)[:, None] * C + c[None, :], acc, mask=mask)
