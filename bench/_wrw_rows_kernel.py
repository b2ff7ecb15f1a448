"""A trial backward-weights kernel that bench/conv_ceiling.py (`--direction W`) times against the
shipped `conv2d_bwd_weight`; no solver runs it.

`conv2d_bwd_weight` (rows): the pixel reduction walks whole output rows. A step of BLOCK_K
pixels holds BLOCK_K // ROW_PIX rows of ROW_PIX columns (ROW_PIX a power of two at least Q, or
BLOCK_K with a row cut in chunks), so a pixel's column is a shift and a mask of its lane and its
row a scalar counter moved on by carries: no per-pixel division, no per-pixel carry, and in a
row of one chunk the input row is one scalar bound.

Measured in bench/results/conv_ceiling_w_h200.json (`rows`) beside the shipped kernel of that
time (`shipped`) and the same with dy's tile read as [pixels, K] and transposed (`dyT`, the
shipped kernel since): no faster over the ten layers, so not made a solver. It takes the
shipped kernel's arguments and ROW_PIX and writes the same partials, so
`conv2d_bwd_weight_reduce` finishes a split launch of it.
"""

from __future__ import annotations

import triton
import triton.language as tl
from miopenkernels.kernels.conv_triton import conv2d_bwd_weight_reduce  # noqa: F401
from miopenkernels.kernels.conv_triton_common import (
    channel_strides,
    load_tile,
    mma,
    part_range,
    tile_offsets,
    within,
)
from miopenkernels.kernels.conv_triton_spec import CONV_TUPLES

TUPLE_ARGS = CONV_TUPLES


@triton.jit
def conv2d_bwd_weight(
    x_ptr, w_ptr, y_ptr, ws_ptr, dims, conv, strides, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr, PRECISION: tl.constexpr, ROW_PIX: tl.constexpr,
):
    N, C, H, W, K, P, Q, R, S, G = dims
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w = conv
    sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw = channel_strides(
        strides, CHANNELS_LAST)
    gt = tl.program_id(1)
    g = gt // (R * S)
    rs = gt - g * (R * S)
    r = rs // S
    s = rs - r * S
    split = tl.program_id(2)
    offs_m, offs_n = tile_offsets(K, C, BLOCK_M, BLOCK_N, GROUP_M)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < K
    n_ok = offs_n < C
    ROWS: tl.constexpr = BLOCK_K // ROW_PIX
    lane_row = offs_k // ROW_PIX  # a shift
    lane_q = offs_k % ROW_PIX  # a mask
    chunks = tl.cdiv(Q, ROW_PIX)  # 1 where ROW_PIX >= Q
    NP = N * P
    if ROWS == 1:  # noqa: SIM108 - a constexpr branch
        total = NP * chunks
    else:
        total = tl.cdiv(NP, ROWS)
    kb0, kb1 = part_range(total, SPLIT_K, split, tl.num_programs(2))
    if ROWS == 1:
        row = kb0 // chunks
        chunk = kb0 - row * chunks
    else:
        row = kb0 * ROWS
        chunk = 0
    img = row // P
    op = row - img * P
    y_col = (g * K + offs_m) * syk
    x_col = (g * C + offs_n) * sxc
    dh = r * dil_h - pad_h
    dw = s * dil_w - pad_w
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _kb in range(kb0, kb1):
        oq = chunk * ROW_PIX + lane_q
        if ROWS == 1:
            ih = op * stride_h + dh
            j_ok = (oq < Q) & (img < N)
            y_pix = img * syn + op * syh + oq * syw
            iw = oq * stride_w + dw
            x_ok = j_ok & within(iw, W) & within(ih, H)
            x_pix = img * sxn + ih * sxh + iw * sxw
        else:
            p_l = op + lane_row
            i_l = img + p_l // P
            p_l = p_l % P
            ih = p_l * stride_h + dh
            iw = oq * stride_w + dw
            j_ok = (oq < Q) & (i_l < N)
            x_ok = j_ok & within(iw, W) & within(ih, H)
            y_pix = i_l * syn + p_l * syh + oq * syw
            x_pix = i_l * sxn + ih * sxh + iw * sxw
        a = load_tile(y_ptr, y_col, y_pix, m_ok, j_ok, not CHANNELS_LAST)
        b = tl.load(x_ptr + x_pix[:, None] + x_col[None, :],
                    mask=x_ok[:, None] & n_ok[None, :], other=0.0)
        acc = mma(a, b, acc, PRECISION)
        if ROWS == 1:
            chunk += 1
            wrap1 = chunk == chunks
            chunk = tl.where(wrap1, 0, chunk)
            op = tl.where(wrap1, op + 1, op)
        else:
            op = op + ROWS
        img = img + op // P
        op = op % P
    mask = m_ok[:, None] & n_ok[None, :]
    if SPLIT_K == 1:
        w_off = ((g * K + offs_m) * swk)[:, None] + (offs_n * swc)[None, :] + r * swr + s * sws
        tl.store(w_ptr + w_off, acc.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        RS = R * S
        ws_off = (split * (G * K) + g * K + offs_m)[:, None] * (C * RS) + (offs_n * RS)[None, :]
        tl.store(ws_ptr + ws_off + rs, acc, mask=mask)

