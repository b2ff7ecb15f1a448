"""Depthwise convolutions (groups = channels, one filter per channel) as a memory-bound family.

A depthwise layer does R*S multiply-adds per output element: far too little work per byte for
a GEMM, so these kernels do no matrix products. Each program owns a tile of BLOCK_M pixels x
BLOCK_N channels of one image and walks the filter taps (R, S at run time, any size), reading
the source pixels each tap needs; sums are FP32.

- `depthwise_conv`: forward (BACKWARD = 0: source x, destination y) and backward data
  (BACKWARD = 1: source dy, destination dx; a destination pixel takes the taps whose source
  pixel lands on the stride's lattice). Program axes: destination pixel blocks, channel
  blocks, image.
- `depthwise_conv_wrw`: backward weights, dw[c, r, s] = sum over n, oh, ow of
  dy[n, c, oh, ow] * x[n, c, oh * stride_h - pad_h + r * dil_h, ...]. Program axes: channel
  blocks, filter rows, parts of the (image, pixel) reduction; a program sums the whole row
  at once (BLOCK_S, the filter width's class: a power of two at least S), so each dy element
  is read once per row, not once per tap; with one part the program writes dw,
  with more each writes its FP32 partial to ws ([parts][C][R][S]) and the implicit GEMM's
  reduce kernel (`conv2d_bwd_weight_reduce`, kernels/conv_triton.py) sums them in a fixed
  order: the result is the same on every run.

CHANNELS_LAST = 1 promises a unit channel stride in both activations (NHWC): channels are
then the contiguous axis of a tile and its loads are vectors along C. CHANNELS_LAST = 0 takes
any strides (NCHW: the pixels of a tile are consecutive, so a warp's loads along a row are
coalesced). Importing this module needs Triton but no GPU; launch data is in
`conv_triton_depthwise_spec`.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def depthwise_conv(
    src_ptr, w_ptr, dst_ptr, C, SH, SW, DH, DW, R, S, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w, ssn, ssc, ssh, ssw, sdn, sdc, sdh, sdw, swc, swr, sws,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHANNELS_LAST: tl.constexpr,
    BACKWARD: tl.constexpr,
):
    """dst[n, c, i, j] = sum over taps (r, s) of w[c, r, s] * src[n, c, u, v]: forward reads
    u = i * stride_h - pad_h + r * dil_h; backward data the u with
    u * stride_h = i + pad_h - r * dil_h (and likewise for v, j, S)."""
    n = tl.program_id(2)
    pix = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    di = pix // DW
    dj = pix % DW
    pix_ok = pix < DH * DW
    c_ok = c < C
    if CHANNELS_LAST:
        src_c = c
        dst_c = c
    else:
        src_c = c * ssc
        dst_c = c * sdc
    src = src_ptr + n * ssn + src_c[None, :]
    w_c = w_ptr + c * swc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r in range(R):
        if BACKWARD:
            t = di + pad_h - r * dil_h
            u = t // stride_h
            u_ok = (t >= 0) & (u * stride_h == t) & (u < SH)
        else:
            u = di * stride_h - pad_h + r * dil_h
            u_ok = (u >= 0) & (u < SH)
        for s in range(S):
            if BACKWARD:
                t2 = dj + pad_w - s * dil_w
                v = t2 // stride_w
                v_ok = (t2 >= 0) & (v * stride_w == t2) & (v < SW)
            else:
                v = dj * stride_w - pad_w + s * dil_w
                v_ok = (v >= 0) & (v < SW)
            ok = pix_ok & u_ok & v_ok
            a = tl.load(src + (u * ssh + v * ssw)[:, None], mask=ok[:, None] & c_ok[None, :],
                        other=0.0)
            b = tl.load(w_c + r * swr + s * sws, mask=c_ok, other=0.0)
            acc += a.to(tl.float32) * b.to(tl.float32)[None, :]
    tl.store(dst_ptr + n * sdn + (di * sdh + dj * sdw)[:, None] + dst_c[None, :],
             acc.to(dst_ptr.dtype.element_ty), mask=pix_ok[:, None] & c_ok[None, :])


@triton.jit
def depthwise_conv_wrw(
    x_ptr, y_ptr, w_ptr, ws_ptr, N, C, H, W, P, Q, S, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w, sxn, sxc, sxh, sxw, syn, syc, syh, syw, swc, swr, sws, TAPS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr,
    CHANNELS_LAST: tl.constexpr,
):
    """dw[c, r, s] for one filter row r (program axis 1) and every s < S <= BLOCK_S at once,
    over this program's part (axis 2) of the N * P * Q output positions: each dy element is
    read once per row, x as BLOCK_S neighbours of a row. With several parts the FP32 sums go
    to ws[part][c][r * S + s] (TAPS = R * S)."""
    r = tl.program_id(1)
    part = tl.program_id(2)
    parts = tl.num_programs(2)
    c = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ok = c < C
    s = tl.arange(0, BLOCK_S)
    s_ok = s < S
    if CHANNELS_LAST:
        x_c = c
        y_c = c
    else:
        x_c = c * sxc
        y_c = c * syc
    pq = P * Q
    blocks = tl.cdiv(N * pq, BLOCK_M)
    per_part = tl.cdiv(blocks, parts)
    first = part * per_part
    acc = tl.zeros((BLOCK_M, BLOCK_S, BLOCK_N), dtype=tl.float32)
    for b in range(first, tl.minimum(first + per_part, blocks)):
        idx = b * BLOCK_M + tl.arange(0, BLOCK_M)
        n = idx // pq
        pix = idx % pq
        i = pix // Q
        j = pix % Q
        u = i * stride_h - pad_h + r * dil_h
        row_ok = (idx < N * pq) & (u >= 0) & (u < H)
        v = (j * stride_w - pad_w)[:, None] + (s * dil_w)[None, :]
        tap_ok = row_ok[:, None] & s_ok[None, :] & (v >= 0) & (v < W)
        a = tl.load(x_ptr + (n * sxn + u * sxh)[:, None, None] + (v * sxw)[:, :, None]
                    + x_c[None, None, :], mask=tap_ok[:, :, None] & c_ok[None, None, :],
                    other=0.0)
        g = tl.load(y_ptr + (n * syn + i * syh + j * syw)[:, None] + y_c[None, :],
                    mask=row_ok[:, None] & c_ok[None, :], other=0.0)
        acc += a.to(tl.float32) * g.to(tl.float32)[:, None, :]
    total = tl.sum(acc, axis=0)
    mask = s_ok[:, None] & c_ok[None, :]
    if parts == 1:
        tl.store(w_ptr + (c * swc)[None, :] + r * swr + (s * sws)[:, None],
                 total.to(w_ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(ws_ptr + ((part * C + c) * TAPS)[None, :] + r * S + s[:, None], total,
                 mask=mask)
