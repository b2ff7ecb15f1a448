"""2-D backward weights of few filters as direct reductions on the FP32 units.

The weight gradient of a layer of 1-8 filters (a UNet's or a VAE decoder's image or latent
output, 320 -> 4 or 128 -> 3 at 3x3) is at most 8 x C*R*S values, each a sum over every
output position. As a GEMM it is 1-8 rows wide: on matrix cores those rows are padded to a
16- or 32-wide block, and in FP32 at IEEE accuracy the three-TF32-product emulation triples
what is left (16.9-18.9x IEEE cuDNN's GPU time channels-last:
bench/results/fewk_h100-6a76905/zoo_fp32_bw.json). Here a program owns one filter tap
(r, s) and BLOCK_K channels for every filter (a block of BLOCK_N >= K; program axis 0 is
tap * channel blocks + channel block) and one part of the N*P*Q output positions (axis 1):
per BLOCK_M positions one BLOCK_M x BLOCK_K tile of x (the tap's pixels), one BLOCK_M x
BLOCK_N tile of dy, and BLOCK_M * BLOCK_N * BLOCK_K fused multiply-adds in FP32 into a sum per
(position lane, filter, channel); the lanes are added once, at the end. A launch of one part
writes dw; of several, each part's FP32 sums go to ws as [part][K][C][R][S] and the implicit
GEMM's reduce kernel (kernels/conv_triton.py, `conv2d_bwd_weight_reduce`) adds them into dw
in a fixed order.

A layer of 1-4 input channels (an image stem, 3 -> 32 at 3x3 stride 2) is the other side's
case: dw is K x C*R*S with C*R*S at most 4 x 16 for the 3x3 and 4x4 stems, 3-3.7x IEEE cuDNN's
GPU time channels-last on the few-channel kernels (the same run). There a program owns a
block of BLOCK_N filters and BLOCK_K of the C*R*S columns (every tap of every channel, a
column block at a time: program axis 0 is filter block * column blocks + column block) and
one part of the positions: per BLOCK_M positions one BLOCK_M x BLOCK_N tile of dy (read once
for all the taps of its columns) and one BLOCK_M x BLOCK_K tile of x gathered at each
column's tap, and BLOCK_M * BLOCK_N * BLOCK_K fused multiply-adds into a sum per (position
lane, filter, column).

- `conv2d_wrw_fma_fewk` (few filters) and `conv2d_wrw_fma_fewc` (few channels): strides in
  elements in (n, c, h, w) / (k, c, r, s) / (n, k, h, w) order. CHANNELS_LAST 1 (NHWC
  objects): the channel strides are 1, known to the compiler, and the tiles run channels
  fastest (vector loads along each position's channels; the few-channel kernel's columns in
  (r, s, c) order); 0: any strides, positions fastest (a warp's loads along a row of the
  image in NCHW; columns in (c, r, s) order).

Importing this module needs Triton but no GPU; launch data is in `conv_triton_fewk_wrw_spec`
and `conv_triton_fewc_wrw_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def conv2d_wrw_fma_fewk(
    x_ptr, w_ptr, y_ptr, ws_ptr, N, C, H, W, K, P, Q, R, S, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w, sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr,
):
    """dw[k, c, r, s] = sum over (n, p, q) of dy[n, k, p, q] * x[n, c, p*stride_h - pad_h +
    r*dil_h, q*stride_w - pad_w + s*dil_w], x outside the image zero; K <= BLOCK_N. y_ptr is
    dy, w_ptr dw."""
    if CHANNELS_LAST:
        sxc = 1
        swc = 1
        syk = 1
    c_blocks = tl.cdiv(C, BLOCK_K)
    tap = tl.program_id(0) // c_blocks
    c_block = tl.program_id(0) % c_blocks
    r = tap // S
    s = tap % S
    part = tl.program_id(1)
    parts = tl.num_programs(1)
    offs_c = c_block * BLOCK_K + tl.arange(0, BLOCK_K)
    c_ok = offs_c < C
    offs_n = tl.arange(0, BLOCK_N)
    n_ok = offs_n < K
    pq = P * Q
    positions = N * pq
    blocks = tl.cdiv(positions, BLOCK_M)
    per_part = tl.cdiv(blocks, parts)
    first = part * per_part
    if CHANNELS_LAST:
        # [positions, filters, channels]: channels fastest.
        acc = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_K), dtype=tl.float32)
    else:
        # [channels, filters, positions]: positions fastest.
        acc = tl.zeros((BLOCK_K, BLOCK_N, BLOCK_M), dtype=tl.float32)
    for b in range(first, tl.minimum(first + per_part, blocks)):
        offs_m = b * BLOCK_M + tl.arange(0, BLOCK_M)
        m_ok = offs_m < positions
        img = offs_m // pq
        pix = offs_m % pq
        op = pix // Q
        oq = pix % Q
        ih = op * stride_h - pad_h + r * dil_h
        iw = oq * stride_w - pad_w + s * dil_w
        ok = m_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        x_row = img * sxn + ih * sxh + iw * sxw
        y_row = img * syn + op * syh + oq * syw
        if CHANNELS_LAST:
            a = tl.load(x_ptr + x_row[:, None] + offs_c[None, :],
                        mask=ok[:, None] & c_ok[None, :], other=0.0).to(tl.float32)
            g = tl.load(y_ptr + y_row[:, None] + offs_n[None, :],
                        mask=m_ok[:, None] & n_ok[None, :], other=0.0).to(tl.float32)
            acc += g[:, :, None] * a[:, None, :]
        else:
            a = tl.load(x_ptr + x_row[None, :] + (offs_c * sxc)[:, None],
                        mask=ok[None, :] & c_ok[:, None], other=0.0).to(tl.float32)
            g = tl.load(y_ptr + y_row[None, :] + (offs_n * syk)[:, None],
                        mask=m_ok[None, :] & n_ok[:, None], other=0.0).to(tl.float32)
            acc += a[:, None, :] * g[None, :, :]
    if CHANNELS_LAST:
        total = tl.sum(acc, axis=0)  # [filters, channels]
        k_idx = offs_n[:, None]
        c_idx = offs_c[None, :]
        mask = n_ok[:, None] & c_ok[None, :]
    else:
        total = tl.sum(acc, axis=2)  # [channels, filters]
        k_idx = offs_n[None, :]
        c_idx = offs_c[:, None]
        mask = c_ok[:, None] & n_ok[None, :]
    if parts == 1:
        tl.store(w_ptr + k_idx * swk + c_idx * swc + r * swr + s * sws,
                 total.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        taps = R * S
        tl.store(ws_ptr + part * (K * C * taps) + k_idx * (C * taps) + c_idx * taps + tap,
                 total, mask=mask)


@triton.jit
def conv2d_wrw_fma_fewc(
    x_ptr, w_ptr, y_ptr, ws_ptr, N, C, H, W, K, P, Q, R, S, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w, sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    CHANNELS_LAST: tl.constexpr,
):
    """dw[k, c, r, s] as `conv2d_wrw_fma_fewk`'s, a program BLOCK_N filters x BLOCK_K of the
    C*R*S columns (program axis 0: filter block * column blocks + column block) over one part
    of the positions (axis 1). y_ptr is dy, w_ptr dw."""
    if CHANNELS_LAST:
        sxc = 1
        swc = 1
        syk = 1
    columns = C * R * S
    col_blocks = tl.cdiv(columns, BLOCK_K)
    k_block = tl.program_id(0) // col_blocks
    col_block = tl.program_id(0) % col_blocks
    part = tl.program_id(1)
    parts = tl.num_programs(1)
    offs_n = k_block * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = offs_n < K
    col = col_block * BLOCK_K + tl.arange(0, BLOCK_K)
    col_ok = col < columns
    if CHANNELS_LAST:  # (r, s, c): a position's channels side by side
        c = col % C
        r = col // C // S
        s = col // C % S
    else:  # (c, r, s)
        c = col // (R * S)
        r = col // S % R
        s = col % S
    rd = r * dil_h
    sd = s * dil_w
    col_off = c * sxc + rd * sxh + sd * sxw
    pq = P * Q
    positions = N * pq
    blocks = tl.cdiv(positions, BLOCK_M)
    per_part = tl.cdiv(blocks, parts)
    first = part * per_part
    if CHANNELS_LAST:
        acc = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_K), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_K, BLOCK_N, BLOCK_M), dtype=tl.float32)
    for b in range(first, tl.minimum(first + per_part, blocks)):
        offs_m = b * BLOCK_M + tl.arange(0, BLOCK_M)
        m_ok = offs_m < positions
        img = offs_m // pq
        pix = offs_m % pq
        op = pix // Q
        oq = pix % Q
        ih0 = op * stride_h - pad_h
        iw0 = oq * stride_w - pad_w
        x_row = img * sxn + ih0 * sxh + iw0 * sxw
        y_row = img * syn + op * syh + oq * syw
        if CHANNELS_LAST:
            ih = ih0[:, None] + rd[None, :]
            iw = iw0[:, None] + sd[None, :]
            ok = m_ok[:, None] & col_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            a = tl.load(x_ptr + x_row[:, None] + col_off[None, :], mask=ok,
                        other=0.0).to(tl.float32)
            g = tl.load(y_ptr + y_row[:, None] + offs_n[None, :],
                        mask=m_ok[:, None] & n_ok[None, :], other=0.0).to(tl.float32)
            acc += g[:, :, None] * a[:, None, :]
        else:
            ih = ih0[None, :] + rd[:, None]
            iw = iw0[None, :] + sd[:, None]
            ok = m_ok[None, :] & col_ok[:, None] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            a = tl.load(x_ptr + x_row[None, :] + col_off[:, None], mask=ok,
                        other=0.0).to(tl.float32)
            g = tl.load(y_ptr + y_row[None, :] + (offs_n * syk)[:, None],
                        mask=m_ok[None, :] & n_ok[:, None], other=0.0).to(tl.float32)
            acc += a[:, None, :] * g[None, :, :]
    if CHANNELS_LAST:
        total = tl.sum(acc, axis=0)  # [filters, columns]
        k_idx = offs_n[:, None]
        c_idx = c[None, :]
        r_idx = r[None, :]
        s_idx = s[None, :]
        mask = n_ok[:, None] & col_ok[None, :]
    else:
        total = tl.sum(acc, axis=2)  # [columns, filters]
        k_idx = offs_n[None, :]
        c_idx = c[:, None]
        r_idx = r[:, None]
        s_idx = s[:, None]
        mask = col_ok[:, None] & n_ok[None, :]
    if parts == 1:
        tl.store(w_ptr + k_idx * swk + c_idx * swc + r_idx * swr + s_idx * sws,
                 total.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(ws_ptr + part * (K * columns) + k_idx * columns + (c_idx * R + r_idx) * S
                 + s_idx, total, mask=mask)
